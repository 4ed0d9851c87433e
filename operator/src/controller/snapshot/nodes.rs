//! The nodes of the snapshot, and what holds their GPUs besides the jobs in it: other
//! workloads' pods, the pods of jobs that take no part (`Orphans`) and the operator's GPU
//! reservations on their way out.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use kube::ResourceExt;

use super::World;
use crate::api::annotations::{JOB_LABEL, PRODUCT_LABEL, RACK_LABEL};
use crate::controller::gang::{Gang, GangKey, holds_resources};
use crate::controller::node_health::NodeHealth;
use crate::controller::reservations;
use crate::controller::resources::{GPU_RESOURCE, PodDemand, cpu_milli, read_pod_demand, whole};
use crate::sched;

/// The node as the core reads it, with what others hold on it.
pub(super) fn node_model(
    node: &Node,
    foreign: sched::Resources,
    held: Vec<sched::Held>,
) -> sched::Node {
    let alloc = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    let get = |k: &str| alloc.and_then(|a| a.get(k));
    let health = NodeHealth::of(node);
    let topo = health.topology.as_ref();
    // The device plugin's count where one runs; without one (`NVIDIA_VISIBLE_DEVICES`
    // binding), the GPUs the node labeler found.
    let mut gpus = match get(GPU_RESOURCE) {
        Some(q) => whole(q).unwrap_or(0) as u32,
        None => topo.as_ref().map_or(0, |t| t.gpus.len() as u32),
    };
    let mut unhealthy: Vec<sched::GpuIndex> = health
        .unhealthy_gpus
        .iter()
        .copied()
        .map(sched::GpuIndex)
        .collect();
    let mut groups = Vec::new();
    let mut rack = node.labels().get(RACK_LABEL).cloned();
    if let Some(t) = topo {
        groups = t
            .groups
            .iter()
            .map(|g| sched::GpuGroup {
                gpus: g.gpus.iter().copied().map(sched::GpuIndex).collect(),
                nvlink: g.nvlink,
                numa_node: g.numa_node,
            })
            .collect();
        if t.rack.is_some() {
            rack = t.rack.clone();
        }
    }
    let mut topology = sched::Topology { groups };
    if !topology.groups.is_empty() {
        let known: u32 = topology.groups.iter().map(|g| g.gpus.len() as u32).sum();
        let found = topo.map_or(gpus, |t| t.gpus.len() as u32);
        if known != gpus && found != gpus {
            if found > gpus && (found - gpus) as usize <= unhealthy.len() {
                // The device plugin hides unhealthy GPUs from allocatable, as NVIDIA's does:
                // the node keeps its topology, the unhealthy ones marked. Counted off
                // allocatable as well, they were subtracted twice (and the groups lost).
                gpus = found;
            } else {
                // The annotation and allocatable disagree in a way the unhealthy GPUs do not
                // explain: the default topology, with allocatable's count and no index
                // marked, so nothing is subtracted twice.
                topology = sched::Topology::default();
                unhealthy.clear();
            }
        }
    }
    sched::Node {
        name: node.name_any(),
        flavor: sched::Flavor::new(
            node.labels()
                .get(PRODUCT_LABEL)
                .cloned()
                .unwrap_or_default(),
        ),
        allocatable: sched::Resources {
            cpu_milli: get("cpu").and_then(|q| cpu_milli(q).ok()).unwrap_or(0),
            memory_bytes: get("memory").and_then(|q| whole(q).ok()).unwrap_or(0),
            gpus,
        },
        rack,
        topology,
        unhealthy_gpus: unhealthy,
        schedulable: health.schedulable(),
        draining: health.draining(),
        foreign,
        held,
        labels: crate::controller::placement_rules::node_labels(node),
        taints: crate::controller::placement_rules::node_taints(node),
    }
}

/// What a pod present on a node holds, as far as its quantities can be read: one that
/// cannot is counted as 0, with a warning, and the rest is held (its GPUs when only its
/// memory is unreadable), so that no GPU a pod holds is handed out again.
fn held_demand(pod: &Pod, spec: &PodSpec) -> PodDemand {
    let reading = read_pod_demand(spec);
    for u in &reading.unreadable {
        tracing::warn!(
            pod = %format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any()),
            "unreadable quantity counted as 0, the rest of the pod held: {u}"
        );
    }
    reading.demand
}

/// What the pods of no job (other workloads') hold, per node, by count. A GPU reservation is
/// left out: it is counted as its shares are.
pub(super) fn foreign(
    world: &World<'_>,
    node_names: &BTreeSet<String>,
) -> BTreeMap<String, sched::Resources> {
    let mut foreign: BTreeMap<String, sched::Resources> = BTreeMap::new();
    for p in world.pods {
        if p.labels().contains_key(JOB_LABEL) || !holds_resources(p) {
            continue;
        }
        // A GPU reservation holding a GPU that shares use is counted as those shares are.
        // One whose shares are gone is on its way out (this cycle's plan deletes it), and is
        // held below as a terminating pod, on its GPU; counted as another's pod here, it had
        // the job a reclaim made room for wait, and the victim admitted again meanwhile (an
        // acceptance run).
        if p.namespace().as_deref() == Some(world.reservation_namespace)
            && reservations::read_reservation(p).is_some()
        {
            continue;
        }
        let Some(spec) = p.spec.as_ref() else {
            continue;
        };
        let Some(node) = spec.node_name.as_ref().filter(|n| node_names.contains(*n)) else {
            continue;
        };
        let d = held_demand(p, spec);
        let f = foreign.entry(node.clone()).or_default();
        f.cpu_milli += d.cpu_milli;
        f.memory_bytes += d.memory_bytes;
        f.gpus += d.gpus as u32;
    }
    foreign
}

/// GPU reservations whose shares are gone hold their GPU as a terminating pod does, until
/// they are gone.
pub(super) fn add_outgoing_reservations(
    world: &World<'_>,
    node_names: &BTreeSet<String>,
    held: &mut BTreeMap<String, Vec<sched::Held>>,
) {
    for (pod, r) in reservations::outgoing(world.pods, world.reservation_namespace) {
        if !node_names.contains(&r.gpu.node) {
            continue;
        }
        let demand = pod
            .spec
            .as_ref()
            .map(|s| held_demand(pod, s))
            .unwrap_or_default();
        held.entry(r.gpu.node.clone())
            .or_default()
            .push(sched::Held {
                gpus: vec![sched::GpuIndex(r.gpu.gpu)],
                share: None,
                cpu_milli: demand.cpu_milli,
                memory_bytes: demand.memory_bytes,
                leaving: Some(format!("{}/{}", world.reservation_namespace, r.name)),
            });
    }
}

/// How long past its deletion timestamp (the end of its grace period) a pod of no job still
/// counts as leaving. One that outlives it is stuck (its node unreachable, a finalizer): its
/// GPUs are held as any other's, so that jobs needing room find it elsewhere instead of
/// waiting on a pod that may never go.
const STUCK_AFTER_SECS: i64 = 30;

/// The pods of jobs that take no part in this snapshot: the job deleted while its pods
/// terminate, the job invalid, gone from the cache, or another job of the name that left
/// them. A GPU is free only when no pod holds it. The pods of a job in the snapshot are
/// charged through it.
pub(super) struct Orphans<'a> {
    /// Jobs of the snapshot that hold resources.
    pub(super) charged: &'a BTreeSet<&'a GangKey>,
    /// Jobs present and not being deleted: their pods stay.
    pub(super) keeping: &'a BTreeSet<GangKey>,
    pub(super) now: i64,
}

impl Orphans<'_> {
    /// What the orphans hold, per node.
    pub(super) fn held(
        &self,
        gangs: &BTreeMap<GangKey, Gang>,
        node_names: &BTreeSet<String>,
        foreign: &mut BTreeMap<String, sched::Resources>,
    ) -> BTreeMap<String, Vec<sched::Held>> {
        let mut out: BTreeMap<String, Vec<sched::Held>> = BTreeMap::new();
        for (key, gang) in gangs {
            if self.charged.contains(key) {
                continue;
            }
            for m in gang.active() {
                let Some(spec) = m.pod.spec.as_ref() else {
                    continue;
                };
                let Some(node) = m.bound_node.as_ref().filter(|n| node_names.contains(*n)) else {
                    continue;
                };
                let demand = held_demand(&m.pod, spec);
                match &m.placement {
                    Some(pl) => out.entry(node.clone()).or_default().push(sched::Held {
                        gpus: pl.gpus.clone(),
                        share: pl.share,
                        cpu_milli: demand.cpu_milli,
                        memory_bytes: demand.memory_bytes,
                        leaving: self.leaving(key, m).then(|| key.0.to_string()),
                    }),
                    // Which GPUs is unknown (no placement annotation): held by count, as a
                    // foreign pod's are.
                    None => {
                        let f = foreign.entry(node.clone()).or_default();
                        f.cpu_milli += demand.cpu_milli;
                        f.memory_bytes += demand.memory_bytes;
                        f.gpus += demand.gpus as u32;
                    }
                }
            }
        }
        out
    }

    /// Whether the pod is on its way out: being deleted (and not stuck at it), or owned by
    /// a job that is gone or being deleted, which the garbage collector deletes next. A pod
    /// with no owner (left by `kubectl delete --cascade=orphan`) stays.
    fn leaving(&self, key: &GangKey, m: &crate::controller::gang::Member) -> bool {
        match m.deleting_at {
            Some(at) => self.now <= at.as_second() + STUCK_AFTER_SECS,
            None => key.1.is_some() && !self.keeping.contains(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;

    use super::*;
    use crate::api::TOPOLOGY_ANNOTATION;
    use crate::api::topology::NodeTopology;

    /// Without a device plugin (no `nvidia.com/gpu` in allocatable, the
    /// `NVIDIA_VISIBLE_DEVICES` setup) the GPUs are those the labeler published; where the
    /// plugin advertises the resource, its count wins, even 0.
    #[test]
    fn gpus_come_from_the_device_plugin_or_else_the_labeler() {
        let topo = serde_json::to_string(&NodeTopology {
            version: crate::api::topology::TOPOLOGY_VERSION,
            gpus: (0..4)
                .map(|i| crate::api::topology::GpuInfo {
                    index: i,
                    healthy: true,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .expect("json");
        let node = |alloc: serde_json::Value| -> Node {
            serde_json::from_value(json!({
                "metadata": {"name": "n0", "annotations": {TOPOLOGY_ANNOTATION: topo}},
                "status": {"allocatable": alloc}
            }))
            .expect("node")
        };
        let bare = node_model(&node(json!({"cpu": "8"})), Default::default(), vec![]);
        assert_eq!(bare.allocatable.gpus, 4);
        let plugin = node_model(
            &node(json!({"cpu": "8", "nvidia.com/gpu": "0"})),
            Default::default(),
            vec![],
        );
        assert_eq!(plugin.allocatable.gpus, 0);
    }

    /// NVIDIA's device plugin hides an unhealthy GPU from allocatable while the labeler
    /// marks it: the node keeps its 8 GPUs and NVLink groups with the one marked, not 7
    /// with the index also marked (found in an admin's run: 6 free GPUs reported of 7, and
    /// a needless reclaim). A gap the unhealthy GPUs do not explain falls back to
    /// allocatable's count alone.
    #[test]
    fn a_gpu_the_device_plugin_hides_is_counted_once() {
        let topo = |unhealthy: &[u32]| {
            serde_json::to_string(&NodeTopology {
                version: crate::api::topology::TOPOLOGY_VERSION,
                gpus: (0..8)
                    .map(|i| crate::api::topology::GpuInfo {
                        index: i,
                        healthy: !unhealthy.contains(&i),
                        ..Default::default()
                    })
                    .collect(),
                groups: [0, 4]
                    .map(|first| crate::api::topology::GpuGroup {
                        gpus: (first..first + 4).collect(),
                        nvlink: true,
                        ..Default::default()
                    })
                    .to_vec(),
                ..Default::default()
            })
            .expect("json")
        };
        let model = |unhealthy: &[u32], allocatable: &str| {
            let n: Node = serde_json::from_value(json!({
                "metadata": {"name": "n0", "annotations": {TOPOLOGY_ANNOTATION: topo(unhealthy)}},
                "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": allocatable}}
            }))
            .expect("node");
            node_model(&n, Default::default(), vec![])
        };
        let hidden = model(&[3], "7");
        assert_eq!(hidden.allocatable.gpus, 8);
        assert_eq!(hidden.unhealthy_gpus, vec![sched::GpuIndex(3)]);
        assert_eq!(hidden.topology.groups.len(), 2);
        let unexplained = model(&[], "6");
        assert_eq!(unexplained.allocatable.gpus, 6);
        assert!(unexplained.unhealthy_gpus.is_empty());
        assert!(unexplained.topology.groups.is_empty());
    }
}
