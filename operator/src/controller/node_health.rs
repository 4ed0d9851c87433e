//! The one judge of a node's state: whether it takes new work, is being drained, was lost,
//! and which of its GPUs the node labeler reports unhealthy. The snapshot
//! (`snapshot::node_model`) and the TrainingJob lifecycle's [`World`](super::lifecycle::World)
//! (through [`NodeState`], built by `trainingjob::observe`) both ask [`NodeHealth::of`].

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Node, Taint};
use kube::ResourceExt;

use crate::api::TOPOLOGY_ANNOTATION;
use crate::api::topology::{NodeTopology, TOPOLOGY_VERSION};

/// Taints the node lifecycle controller sets (`node.kubernetes.io/`: not ready, unreachable,
/// pressure, cordoned): they make a node unschedulable for new work ([`NodeHealth::schedulable`])
/// rather than being matched against tolerations (`placement_rules::node_taints` leaves them
/// out), since kubetrain's pods do not outlive such a node.
pub fn lifecycle_taint(key: &str) -> bool {
    key.starts_with("node.kubernetes.io/")
}

/// What the node's object says about its health.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeHealth {
    /// The Ready condition is True.
    pub ready: bool,
    /// `spec.unschedulable` (`kubectl cordon`, the first step of `kubectl drain`).
    pub cordoned: bool,
    /// A node-lifecycle taint with effect NoSchedule or NoExecute.
    pub lifecycle_tainted: bool,
    /// The node lifecycle controller gave up on the node (`not-ready`, `unreachable`, ... with
    /// effect NoExecute): its kubelet cannot be trusted to act.
    pub lost: bool,
    /// The published topology, when present and of a version we read.
    pub topology: Option<NodeTopology>,
    /// Indices of the GPUs the topology reports unhealthy.
    pub unhealthy_gpus: BTreeSet<u32>,
}

impl NodeHealth {
    /// Judges the node from its object alone.
    pub fn of(node: &Node) -> Self {
        let spec = node.spec.as_ref();
        let taints: &[Taint] = spec.and_then(|s| s.taints.as_deref()).unwrap_or_default();
        let lifecycle = |effects: &[&str]| {
            taints
                .iter()
                .any(|t| lifecycle_taint(&t.key) && effects.contains(&&*t.effect))
        };
        let topology = node_topology(node);
        NodeHealth {
            ready: node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
            cordoned: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            lifecycle_tainted: lifecycle(&["NoSchedule", "NoExecute"]),
            lost: lifecycle(&["NoExecute"]),
            unhealthy_gpus: topology
                .iter()
                .flat_map(|t| t.gpus.iter().filter(|g| !g.healthy).map(|g| g.index))
                .collect(),
            topology,
        }
    }

    /// Whether the node takes new work: not cordoned, Ready, and without the node-lifecycle
    /// taints. Other taints, such as `nvidia.com/gpu:NoSchedule` on managed GPU pools, are
    /// matched against each pod template's tolerations by the core (`sched::constraints`).
    pub fn schedulable(&self) -> bool {
        !self.cordoned && !self.lifecycle_tainted && self.ready
    }

    /// Cordoned but Ready and not lost: the jobs on it can still save a checkpoint before
    /// they leave.
    pub fn draining(&self) -> bool {
        self.cordoned && !self.lost && self.ready
    }

    /// The node as the lifecycle weighs the pods on it.
    pub fn state(&self) -> NodeState {
        if self.lost {
            NodeState::Lost
        } else if !self.ready {
            NodeState::NotReady
        } else {
            NodeState::Up {
                unhealthy_gpus: self.unhealthy_gpus.clone(),
            }
        }
    }
}

/// A node under one of a job's pods, as the lifecycle sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeState {
    /// Up, with the indices of the GPUs the node labeler reports unhealthy.
    Up { unhealthy_gpus: BTreeSet<u32> },
    /// Tainted by the node lifecycle controller (`node.kubernetes.io/not-ready`,
    /// `unreachable`, ... with effect NoExecute): its kubelet cannot be trusted to act.
    Lost,
    /// Its Ready condition is not True (a kubelet that stopped reporting, or reports a
    /// problem) and no NoExecute taint says the node lifecycle controller gave up on it: the
    /// pods may still run (a kubelet cut off from the API server runs them on). The
    /// controller holds its taints back in a zone where most nodes are not ready, as after a
    /// partition of the control plane from the nodes; kubetrain follows it, so the gang is
    /// not stopped (see [`Lost`](NodeState::Lost)), only marked.
    NotReady,
    /// Not in the cache.
    Gone,
}

impl NodeState {
    /// The state of the node the cache has (or not).
    pub fn of(node: Option<&Node>) -> Self {
        node.map_or(NodeState::Gone, |n| NodeHealth::of(n).state())
    }
}

/// The node's published topology, when present and of a version we read.
pub fn node_topology(node: &Node) -> Option<NodeTopology> {
    let raw = node.annotations().get(TOPOLOGY_ANNOTATION)?;
    let t: NodeTopology = serde_json::from_str(raw).ok()?;
    (t.version == TOPOLOGY_VERSION).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::topology::GpuInfo;
    use serde_json::json;

    fn node(spec: serde_json::Value, ready: &str, annotations: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n", "annotations": annotations},
            "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": ready}]}
        }))
        .expect("node")
    }

    fn taint(key: &str, effect: &str) -> serde_json::Value {
        json!({"taints": [{"key": key, "effect": effect}]})
    }

    #[test]
    fn one_judge_for_the_snapshot_and_the_lifecycle() {
        let healthy = NodeHealth::of(&node(json!({}), "True", json!({})));
        assert!(healthy.schedulable() && !healthy.draining());
        assert_eq!(
            healthy.state(),
            NodeState::Up {
                unhealthy_gpus: BTreeSet::new()
            }
        );

        let cordoned = NodeHealth::of(&node(json!({"unschedulable": true}), "True", json!({})));
        assert!(!cordoned.schedulable() && cordoned.draining());

        let not_ready = NodeHealth::of(&node(json!({}), "False", json!({})));
        assert!(!not_ready.schedulable() && !not_ready.lost);
        assert_eq!(not_ready.state(), NodeState::NotReady);
        let unknown = NodeHealth::of(&node(json!({}), "Unknown", json!({})));
        assert_eq!(unknown.state(), NodeState::NotReady, "not tainted yet");

        // Pressure: no new work, but the kubelet still acts.
        let pressure = NodeHealth::of(&node(
            taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
            "True",
            json!({}),
        ));
        assert!(!pressure.schedulable() && !pressure.lost);

        // Unreachable: lost, so a cordon on it is no drain the jobs can checkpoint through.
        let mut spec = taint("node.kubernetes.io/unreachable", "NoExecute");
        spec["unschedulable"] = json!(true);
        let lost = NodeHealth::of(&node(spec, "True", json!({})));
        assert!(lost.lost && !lost.draining() && !lost.schedulable());
        assert_eq!(lost.state(), NodeState::Lost);

        // Another taint is the tolerations' business, not health.
        let gpu_pool = NodeHealth::of(&node(
            taint("nvidia.com/gpu", "NoSchedule"),
            "True",
            json!({}),
        ));
        assert!(gpu_pool.schedulable());

        assert_eq!(NodeState::of(None), NodeState::Gone);
    }

    #[test]
    fn unhealthy_gpus_come_from_the_topology() {
        let topo = NodeTopology {
            version: TOPOLOGY_VERSION,
            gpus: (0..4)
                .map(|i| GpuInfo {
                    index: i,
                    healthy: i != 2,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let annotated = |raw: String| {
            NodeHealth::of(&node(json!({}), "True", json!({TOPOLOGY_ANNOTATION: raw})))
        };
        let h = annotated(serde_json::to_string(&topo).expect("json"));
        assert_eq!(h.unhealthy_gpus, BTreeSet::from([2]));
        assert_eq!(
            h.state(),
            NodeState::Up {
                unhealthy_gpus: BTreeSet::from([2])
            }
        );
        // Unreadable or of another version: no topology, nothing known unhealthy.
        assert_eq!(annotated("{not json".into()).topology, None);
        let newer = NodeTopology {
            version: TOPOLOGY_VERSION + 1,
            ..topo
        };
        let h = annotated(serde_json::to_string(&newer).expect("json"));
        assert!(h.topology.is_none() && h.unhealthy_gpus.is_empty());
    }
}
