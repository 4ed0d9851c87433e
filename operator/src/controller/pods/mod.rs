//! The pods and the headless Service of an admitted gang.
//!
//! kubetrain decides where each replica runs; how the pod gets there is [`Binding`]: by
//! default it is created pinned to that node by required node affinity (merged with the
//! template's) and kube-scheduler (`default-scheduler`, the only `schedulerName` a template
//! may name) binds it after its own checks; `direct` sets `spec.nodeName` itself. Pods are
//! named `<job>-<task>-<index>` with that hostname under a headless Service named after the
//! job, so `MASTER_ADDR` is a stable DNS name; a job of one replica talks only to itself,
//! so it gets `localhost` and no Service (a Service and its Endpoints and EndpointSlice are
//! about 3.4 of the 19 API writes of a one-pod job, see docs/benchmarks-control-plane.md).
//! The chosen node and GPU indices go in the `kubetrain.io/node` and `kubetrain.io/gpus`
//! annotations; how the GPUs reach the container is [`GpuBinding`].
//!
//! This module writes the pod protocol (`api::annotations`); `controller::gang` reads it.
//! The gang's Service and disruption budget are built in `service`, the patches that mark
//! a running pod in `patches`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource, EnvVar, EnvVarSource,
    NodeSelectorRequirement, NodeSelectorTerm, ObjectFieldSelector, Pod, PodSchedulingGate,
    PodSpec, PodTemplateSpec, Volume, VolumeMount,
};
use kube::{Resource, ResourceExt};

mod patches;
mod service;

pub use patches::{bonus_patch, checkpoint_request_patch};
pub use service::{disruption_budget, headless_service, master_port, needs_rendezvous};

use super::resources::GPU_RESOURCE;
use crate::api::TrainingJob;
use crate::api::annotations::{
    ATTEMPT_ANNOTATION, BONUS_ANNOTATION, CHECKPOINT_REQUESTED, GANG_SIZE_ANNOTATION,
    GPU_ASSIGNMENT_ANNOTATION, GPU_SHARE_ANNOTATION, GPUS_ANNOTATION, INDEX_LABEL, JOB_LABEL,
    NODE_ANNOTATION, RANK_ANNOTATION, RESERVATION_GATE, TASK_LABEL, TEMPLATE_DIGEST_ANNOTATION,
    VISIBLE_DEVICES_ANNOTATION,
};
use crate::api::trainingjob::GpuAssignment;
use crate::sched::ReplicaPlacement;

/// Where the checkpoint request appears inside every container.
pub const CHECKPOINT_DIR: &str = "/etc/kubetrain";

/// How the scheduler's GPU choice reaches the container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum GpuBinding {
    /// The way the cluster hands GPUs out, node by node: where the node advertises
    /// `nvidia.com/gpu` (a device plugin runs there), `device-plugin`; elsewhere
    /// `visible-devices`. A device plugin cannot split a GPU: shares go by
    /// `NVIDIA_VISIBLE_DEVICES`, on a plugin's node with the GPU held from the plugin by a
    /// reservation pod ([`GpuPath::Reserved`]).
    #[default]
    Auto,
    /// HiveD-style: `nvidia.com/gpu` requests are removed and `NVIDIA_VISIBLE_DEVICES` is set
    /// from the `kubetrain.io/gpus` annotation through the downward API, so the container gets
    /// exactly the GPUs the topology-aware placement chose. Needs the NVIDIA container runtime
    /// (it honours `NVIDIA_VISIBLE_DEVICES`) and no device plugin competing for the GPUs.
    VisibleDevices,
    /// `nvidia.com/gpu` requests are kept for the NVIDIA device plugin, which picks the GPU
    /// indices itself; kubetrain still chooses the node and counts GPUs, and the annotation is
    /// informative only. Use when the device plugin must stay in charge.
    DevicePlugin,
}

/// Who binds an admitted gang's pods to the nodes kubetrain chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Binding {
    /// The pod is created with a required node affinity on `metadata.name` (merged into the
    /// template's own terms) and no `spec.nodeName`; the cluster's scheduler binds it after
    /// its own checks: volume binding (`WaitForFirstConsumer` claims), device-plugin and DRA
    /// fit, taints, pod limits. A pod it cannot bind rolls the admission back.
    #[default]
    Scheduler,
    /// `spec.nodeName` is set at creation: the shortest path, skipping every scheduler check
    /// (the kubelet's admission still runs), and a `WaitForFirstConsumer` claim never binds.
    Direct,
}

/// Settings for pods.
#[derive(Clone, Debug)]
pub struct PodSettings {
    pub binding: Binding,
    /// With [`Binding::Scheduler`], the kube-scheduler profile that binds the gang's pods
    /// (`--scheduler-name`, set on every such pod); None: the template's, which can only be
    /// `default-scheduler` or unset.
    pub scheduler_name: Option<String>,
    pub gpu_binding: GpuBinding,
    /// Port of the rank-0 replica for `MASTER_PORT`, unless the job names one
    /// ([`master_port`]).
    pub master_port: i32,
    /// Reservation pods for shares on device-plugin nodes ([`GpuPath::Reserved`]).
    pub reservation: ReservationSettings,
}

impl Default for PodSettings {
    fn default() -> Self {
        PodSettings {
            binding: Binding::default(),
            scheduler_name: None,
            gpu_binding: GpuBinding::default(),
            master_port: 23456,
            reservation: ReservationSettings::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("task {0} of the placement is not in the job")]
    UnknownTask(String),
    #[error("the job has no namespace")]
    NoNamespace,
    #[error("the placement is empty")]
    EmptyPlacement,
    #[error("task {task}: invalid pod template: {error}")]
    Template { task: String, error: String },
}

/// Name of a replica's pod (also its hostname).
pub fn pod_name(job: &str, task: &str, index: u32) -> String {
    format!("{job}-{task}-{index}")
}

fn owner(
    job: &TrainingJob,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    job.controller_owner_ref(&())
}

fn env(name: &str, value: impl ToString) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.to_string()),
        value_from: None,
    }
}

fn env_from_annotation(name: &str, annotation: &str) -> EnvVar {
    env_from_field(name, &format!("metadata.annotations['{annotation}']"))
}

/// A variable from the pod's own fields through the downward API (`metadata.name`, ...).
pub(crate) fn env_from_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                api_version: None,
            }),
            ..Default::default()
        }),
    }
}

/// Ranks as the placement gives them, plus the node rank and local rank derived from it:
/// nodes numbered in order of their lowest rank, local ranks in rank order within a node.
fn node_and_local_ranks(placement: &[ReplicaPlacement]) -> Vec<(u32, u32)> {
    let mut by_rank: Vec<usize> = (0..placement.len()).collect();
    by_rank.sort_by_key(|&i| placement[i].rank);
    let mut nodes: Vec<&str> = Vec::new();
    let mut local: BTreeMap<&str, u32> = BTreeMap::new();
    let mut out = vec![(0, 0); placement.len()];
    for i in by_rank {
        let node = placement[i].node.as_str();
        let node_rank = match nodes.iter().position(|n| *n == node) {
            Some(p) => p,
            None => {
                nodes.push(node);
                nodes.len() - 1
            }
        };
        let l = local.entry(node).or_insert(0);
        out[i] = (node_rank as u32, *l);
        *l += 1;
    }
    out
}

/// The pods of a gang, one per placed replica, in placement order. `advertises_gpus` tells
/// whether a node advertises `nvidia.com/gpu` (for [`GpuBinding::Auto`]).
pub fn gang_pods(
    job: &TrainingJob,
    placement: &[ReplicaPlacement],
    bonus: bool,
    attempt: i32,
    settings: &PodSettings,
    advertises_gpus: &dyn Fn(&str) -> bool,
) -> Result<Vec<Pod>, PodError> {
    let ns = job.namespace().ok_or(PodError::NoNamespace)?;
    let name = job.name_any();
    let digests = template_digests(job);
    let master = placement
        .iter()
        .min_by_key(|p| p.rank)
        .ok_or(PodError::EmptyPlacement)?;
    let master_addr = if needs_rendezvous(job) {
        format!(
            "{}.{name}.{ns}.svc",
            pod_name(&name, &master.task, master.index)
        )
    } else {
        "localhost".to_string()
    };
    let ranks = node_and_local_ranks(placement);
    let world = placement.len();
    let port = master_port(job, settings);
    placement
        .iter()
        .zip(ranks)
        .map(|(p, (node_rank, local_rank))| {
            let task = job
                .spec
                .tasks
                .iter()
                .find(|t| t.name == p.task)
                .ok_or_else(|| PodError::UnknownTask(p.task.clone()))?;
            let common_env = vec![
                env("MASTER_ADDR", &master_addr),
                env("MASTER_PORT", port),
                env("WORLD_SIZE", world),
                env("RANK", p.rank),
                env("NODE_RANK", node_rank),
                env("LOCAL_RANK", local_rank),
                env("KUBETRAIN_JOB", &name),
                env("KUBETRAIN_TASK", &p.task),
                env("KUBETRAIN_REPLICA_INDEX", p.index),
                env(
                    "KUBETRAIN_CHECKPOINT_FILE",
                    format!("{CHECKPOINT_DIR}/checkpoint-requested"),
                ),
                env_from_annotation("KUBETRAIN_GPUS", GPUS_ANNOTATION),
            ];
            let template = task.pod_template().map_err(|e| PodError::Template {
                task: task.name.clone(),
                error: e.to_string(),
            })?;
            let path = GpuPath::of(p, settings.gpu_binding, advertises_gpus);
            let mut pod = replica_pod(
                job, &template, p, bonus, attempt, world, common_env, settings, path,
            );
            pod.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(
                    TEMPLATE_DIGEST_ANNOTATION.into(),
                    digests[task.name.as_str()].clone(),
                );
            Ok(pod)
        })
        .collect()
}

/// A digest of a task's pod template as the job's spec holds it: FNV-1a over its JSON, whose
/// object keys serde_json writes sorted, so the same template gives the same digest in every
/// build of the operator (std's hasher promises that only within one).
pub fn template_digest(template: &serde_json::Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in template.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// [`template_digest`] of each task's template, by task name: computed once per gang, not
/// once per replica.
pub fn template_digests(job: &TrainingJob) -> BTreeMap<&str, String> {
    job.spec
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), template_digest(&t.template)))
        .collect()
}

/// How one replica's GPUs reach its container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuPath {
    /// The `nvidia.com/gpu` requests stay; the node's device plugin picks the devices.
    DevicePlugin,
    /// The requests go; `NVIDIA_VISIBLE_DEVICES` carries kubetrain's GPU indices.
    VisibleDevices,
    /// A share on a node whose device plugin hands out GPUs: the share's GPU is held from
    /// the plugin by a reservation pod (`controller::reservations`), and the pod waits behind
    /// [`RESERVATION_GATE`] until the operator copies the reserved device into
    /// [`VISIBLE_DEVICES_ANNOTATION`], which becomes its `NVIDIA_VISIBLE_DEVICES`. Without the
    /// reservation the plugin would hand the same GPU to a whole-GPU pod.
    Reserved,
}

impl GpuPath {
    /// The path of replica `p` under `binding`; `advertises_gpus` tells whether a node runs a
    /// device plugin (for [`GpuBinding::Auto`]).
    pub fn of(
        p: &ReplicaPlacement,
        binding: GpuBinding,
        advertises_gpus: &dyn Fn(&str) -> bool,
    ) -> GpuPath {
        let plugin = match binding {
            GpuBinding::VisibleDevices => false,
            GpuBinding::DevicePlugin => true,
            GpuBinding::Auto => advertises_gpus(&p.node),
        };
        match (plugin, p.share.is_some()) {
            (false, _) => GpuPath::VisibleDevices,
            (true, false) => GpuPath::DevicePlugin,
            (true, true) => GpuPath::Reserved,
        }
    }

    /// Who picks the devices the container sees.
    fn assigned_by(self) -> GpuAssignment {
        match self {
            GpuPath::VisibleDevices => GpuAssignment::Kubetrain,
            GpuPath::DevicePlugin | GpuPath::Reserved => GpuAssignment::DevicePlugin,
        }
    }

    /// The pod annotation `NVIDIA_VISIBLE_DEVICES` is read from, when kubetrain sets it.
    fn visible_devices_from(self) -> Option<&'static str> {
        match self {
            GpuPath::DevicePlugin => None,
            GpuPath::VisibleDevices => Some(GPUS_ANNOTATION),
            GpuPath::Reserved => Some(VISIBLE_DEVICES_ANNOTATION),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn replica_pod(
    job: &TrainingJob,
    template: &PodTemplateSpec,
    p: &ReplicaPlacement,
    bonus: bool,
    attempt: i32,
    world: usize,
    common_env: Vec<EnvVar>,
    settings: &PodSettings,
    path: GpuPath,
) -> Pod {
    let name = job.name_any();
    let mut meta = template.metadata.clone().unwrap_or_default();
    let pod_name = pod_name(&name, &p.task, p.index);
    meta.name = Some(pod_name.clone());
    meta.namespace = job.namespace();
    meta.generate_name = None;
    meta.owner_references = owner(job).map(|o| vec![o]);
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(JOB_LABEL.into(), name.clone());
    labels.insert(TASK_LABEL.into(), p.task.clone());
    labels.insert(INDEX_LABEL.into(), p.index.to_string());
    let ann = meta.annotations.get_or_insert_with(BTreeMap::new);
    let gpus = p
        .gpus
        .iter()
        .map(|g| g.0.to_string())
        .collect::<Vec<_>>()
        .join(",");
    ann.insert(GPUS_ANNOTATION.into(), gpus);
    ann.insert(RANK_ANNOTATION.into(), p.rank.to_string());
    ann.insert(BONUS_ANNOTATION.into(), bonus.to_string());
    ann.insert(ATTEMPT_ANNOTATION.into(), attempt.to_string());
    ann.insert(GANG_SIZE_ANNOTATION.into(), world.to_string());
    if let Some(share) = p.share {
        ann.insert(GPU_SHARE_ANNOTATION.into(), share.0.to_string());
    }
    if !p.gpus.is_empty() {
        ann.insert(
            GPU_ASSIGNMENT_ANNOTATION.into(),
            path.assigned_by().as_str().into(),
        );
    }

    ann.insert(NODE_ANNOTATION.into(), p.node.clone());

    let mut spec: PodSpec = template.spec.clone().unwrap_or_default();
    bind_to(&mut spec, &p.node, path, settings);
    spec.hostname = Some(pod_name.clone());
    spec.subdomain = Some(name.clone());
    // The gang restarts as a whole (retries are counted per job), never one pod in place.
    spec.restart_policy = Some("Never".into());
    let volume = "kubetrain-checkpoint";
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: volume.into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "checkpoint-requested".into(),
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{CHECKPOINT_REQUESTED}']"),
                    api_version: None,
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    let uses_gpu = !p.gpus.is_empty();
    for c in &mut spec.containers {
        prepare_container(
            c,
            &common_env,
            volume,
            uses_gpu,
            p.share.is_some(),
            path.visible_devices_from(),
        );
    }
    Pod {
        metadata: meta,
        spec: Some(spec),
        status: None,
    }
}

/// How the pod reaches `node`: pinned for kube-scheduler (behind the reservation gate for a
/// share on a reserved GPU, which the API server refuses beside `spec.nodeName`), or bound
/// directly; whoever schedules it is the profile the operator was told to use.
fn bind_to(spec: &mut PodSpec, node: &str, path: GpuPath, settings: &PodSettings) {
    if path == GpuPath::Reserved {
        // The API server refuses a gate beside `spec.nodeName`, so such a pod is pinned and
        // bound by the scheduler in either binding mode.
        pin_to_node(spec, node);
        spec.scheduling_gates
            .get_or_insert_with(Vec::new)
            .push(PodSchedulingGate {
                name: RESERVATION_GATE.into(),
            });
    } else if settings.binding == Binding::Direct {
        spec.node_name = Some(node.to_string());
    } else {
        pin_to_node(spec, node);
    }
    if spec.node_name.is_none()
        && let Some(name) = &settings.scheduler_name
    {
        spec.scheduler_name = Some(name.clone());
    }
}

/// Adds `metadata.name In [node]` to every required node-affinity term of the template (or
/// makes it the only term), so the scheduler can bind the pod to that node and no other,
/// while the template's own terms still hold.
pub(crate) fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let pin = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "In".into(),
        values: Some(vec![node.to_string()]),
    };
    let required = spec
        .affinity
        .get_or_insert_with(Default::default)
        .node_affinity
        .get_or_insert_with(Default::default)
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(Default::default);
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields
            .get_or_insert_with(Vec::new)
            .push(pin.clone());
    }
}

fn prepare_container(
    c: &mut Container,
    common_env: &[EnvVar],
    volume: &str,
    uses_gpu: bool,
    shared: bool,
    visible_devices_from: Option<&str>,
) {
    let env = c.env.get_or_insert_with(Vec::new);
    env.retain(|e| !common_env.iter().any(|x| x.name == e.name));
    env.extend(common_env.iter().cloned());
    if shared {
        env.push(env_from_annotation(
            "KUBETRAIN_GPU_SHARE",
            GPU_SHARE_ANNOTATION,
        ));
    }
    if let Some(annotation) = visible_devices_from {
        if let Some(r) = c.resources.as_mut() {
            r.limits.as_mut().map(|l| l.remove(GPU_RESOURCE));
            r.requests.as_mut().map(|l| l.remove(GPU_RESOURCE));
        }
        env.retain(|e| e.name != "NVIDIA_VISIBLE_DEVICES");
        if uses_gpu {
            env.push(env_from_annotation("NVIDIA_VISIBLE_DEVICES", annotation));
        } else {
            // Without this the NVIDIA runtime may expose every GPU to a CPU-only container.
            env.push(self::env("NVIDIA_VISIBLE_DEVICES", "void"));
        }
    }
    c.volume_mounts
        .get_or_insert_with(Vec::new)
        .push(VolumeMount {
            name: volume.into(),
            mount_path: CHECKPOINT_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
}

/// The job's pod names, for every replica of every task.
pub fn expected_pod_names(job: &TrainingJob) -> Vec<String> {
    let name = job.name_any();
    job.spec
        .tasks
        .iter()
        .flat_map(|t| {
            (0..t.replicas().max(0) as u32)
                .map(|i| pod_name(&name, &t.name, i))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Where reservation pods go and what they run.
#[derive(Clone, Debug)]
pub struct ReservationSettings {
    /// Their namespace (the operator's own).
    pub namespace: String,
    /// Their image: the operator's, whose binary has the `reserve-gpu` command.
    pub image: String,
    /// Their ServiceAccount, allowed to patch pods in `namespace` (to report the device).
    pub service_account: String,
    /// Their PriorityClass, if any: high, so that kube-scheduler does not preempt a
    /// reservation for another pod while shares use its GPU (the installs ship one).
    pub priority_class: Option<String>,
}

impl Default for ReservationSettings {
    fn default() -> Self {
        ReservationSettings {
            namespace: "kubetrain-system".into(),
            image: concat!("ghcr.io/kubetrain/operator:", env!("CARGO_PKG_VERSION")).into(),
            service_account: "kubetrain-gpu-reservation".into(),
            priority_class: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::gang::Member;
    use crate::sched::GpuIndex;

    /// What the reader of the protocol finds on the pod.
    pub(super) fn read(pod: &Pod) -> Member {
        Member::read(std::sync::Arc::new(pod.clone()))
    }

    pub(super) fn placement_of(pod: &Pod) -> Option<ReplicaPlacement> {
        read(pod).placement
    }

    pub(super) fn job() -> TrainingJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": "llm", "namespace": "team", "uid": "u-1"},
            "spec": {"queue": "q", "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 2}}, "env": [{"name": "RANK", "value": "99"}]}
            ]}}}]}
        }))
        .expect("valid job")
    }

    pub(super) fn placed(index: u32, rank: u32, node: &str, gpus: &[u32]) -> ReplicaPlacement {
        ReplicaPlacement {
            task: "worker".into(),
            index,
            rank,
            node: node.into(),
            gpus: gpus.iter().copied().map(GpuIndex).collect(),
            share: None,
        }
    }

    pub(super) fn env_of(c: &Container) -> BTreeMap<&str, Option<String>> {
        c.env
            .iter()
            .flatten()
            .map(|e| (e.name.as_str(), e.value.clone()))
            .collect()
    }

    #[test]
    fn gang_pods_carry_placement_ranks_and_env() {
        let placement = vec![placed(0, 1, "n2", &[2, 3]), placed(1, 0, "n1", &[0, 1])];
        let direct = PodSettings {
            binding: Binding::Direct,
            ..Default::default()
        };
        let pods = gang_pods(&job(), &placement, true, 3, &direct, &|_| false).expect("pods");
        assert_eq!(pods.len(), 2);
        let p0 = &pods[0];
        assert_eq!(p0.metadata.name.as_deref(), Some("llm-worker-0"));
        assert_eq!(
            p0.annotations().get(TEMPLATE_DIGEST_ANNOTATION),
            Some(&template_digest(&job().spec.tasks[0].template)),
            "the pod says which template it was made from"
        );
        let spec = p0.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("n2"));
        assert_eq!(spec.subdomain.as_deref(), Some("llm"));
        let c = &spec.containers[0];
        let env = env_of(c);
        assert_eq!(
            env["RANK"].as_deref(),
            Some("1"),
            "user's RANK is replaced by the placement's"
        );
        assert_eq!(env["NODE_RANK"].as_deref(), Some("1"));
        assert_eq!(env["WORLD_SIZE"].as_deref(), Some("2"));
        assert_eq!(
            env["MASTER_ADDR"].as_deref(),
            Some("llm-worker-1.llm.team.svc")
        );
        assert!(env.contains_key("NVIDIA_VISIBLE_DEVICES"));
        let limits = c
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .expect("limits");
        assert!(
            !limits.contains_key(GPU_RESOURCE),
            "visible-devices binding strips GPU requests"
        );
        assert_eq!(placement_of(p0), Some(placement[0].clone()));
        // What was written reads back: bonus, attempt, no checkpoint request yet.
        let m = read(p0);
        assert!(m.bonus);
        assert_eq!(m.attempt, Some(3));
        assert!(m.checkpoint_request.is_none());
        assert_eq!(m.chosen_node.as_deref(), Some("n2"));
        assert_eq!(p0.metadata.owner_references.as_ref().map(Vec::len), Some(1));
    }

    /// Replicas find rank 0 through the job's headless Service; a job of one replica has
    /// nobody to find, so it gets `localhost` and no Service (nor its Endpoints).
    /// The digest is the same in every build (a pod made by the last release's operator is
    /// not taken for a changed template) and changes with any field.
    #[test]
    fn the_template_digest_is_stable_and_tells_templates_apart() {
        let t = serde_json::json!({"spec": {"containers": [{"name": "c", "image": "x"}]}});
        // FNV-1a of {"spec":{"containers":[{"image":"x","name":"c"}]}}, keys sorted.
        assert_eq!(template_digest(&t), "2e1c99292190319f");
        let mut u = t.clone();
        u["spec"]["containers"][0]["image"] = "y".into();
        assert_ne!(template_digest(&t), template_digest(&u));
    }

    /// By default the pod is pinned by required node affinity and left to the scheduler;
    /// the template's own required terms are kept, each narrowed to the chosen node.
    #[test]
    fn a_scheduler_profile_binds_every_pod_the_scheduler_binds() {
        let placement = vec![placed(0, 0, "n2", &[0, 1]), placed(1, 1, "n2", &[2, 3])];
        let named = PodSettings {
            scheduler_name: Some("gpu-scheduler".into()),
            ..PodSettings::default()
        };
        let pods = gang_pods(&job(), &placement, false, 0, &named, &|_| false).expect("pods");
        for pod in &pods {
            let spec = pod.spec.as_ref().expect("spec");
            assert_eq!(spec.scheduler_name.as_deref(), Some("gpu-scheduler"));
        }
        // Unset: the template's (none here); direct binding: nobody schedules the pod.
        let pods = gang_pods(
            &job(),
            &placement,
            false,
            0,
            &PodSettings::default(),
            &|_| false,
        )
        .expect("pods");
        assert_eq!(pods[0].spec.as_ref().expect("spec").scheduler_name, None);
        let direct = PodSettings {
            binding: Binding::Direct,
            ..named
        };
        let pods = gang_pods(&job(), &placement, false, 0, &direct, &|_| false).expect("pods");
        assert_eq!(pods[0].spec.as_ref().expect("spec").scheduler_name, None);
    }

    #[test]
    fn scheduler_binding_pins_by_affinity_and_keeps_the_templates_terms() {
        let mut j = job();
        j.spec.tasks[0].template["spec"]["affinity"] = serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}});
        let placement = vec![placed(0, 0, "n2", &[0, 1]), placed(1, 1, "n2", &[2, 3])];
        let pods = gang_pods(&j, &placement, false, 0, &PodSettings::default(), &|_| {
            false
        })
        .expect("pods");
        let spec = pods[0].spec.as_ref().expect("spec");
        assert_eq!(spec.node_name, None);
        let terms = &spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .expect("required affinity")
            .node_selector_terms;
        assert_eq!(terms.len(), 2);
        for t in terms {
            assert_eq!(t.match_expressions.as_ref().map(Vec::len), Some(1));
            let pin = &t.match_fields.as_ref().expect("pinned")[0];
            assert_eq!(
                (
                    pin.key.as_str(),
                    pin.operator.as_str(),
                    pin.values.as_deref()
                ),
                ("metadata.name", "In", Some(&["n2".to_string()][..]))
            );
        }
        // Counted on the chosen node before it is bound.
        assert_eq!(placement_of(&pods[0]), Some(placement[0].clone()));
        let plain = gang_pods(
            &job(),
            &placement,
            false,
            0,
            &PodSettings::default(),
            &|_| false,
        )
        .expect("pods");
        let terms = &plain[0]
            .spec
            .as_ref()
            .unwrap()
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].match_expressions, None);
    }

    /// By default each node decides: where it advertises `nvidia.com/gpu` the device plugin
    /// assigns the GPUs (requests kept), elsewhere kubetrain's choice goes by
    /// `NVIDIA_VISIBLE_DEVICES`; the pod says which.
    #[test]
    fn auto_binding_follows_what_each_node_advertises() {
        let placement = vec![
            placed(0, 0, "plugin", &[0, 1]),
            placed(1, 1, "bare", &[0, 1]),
        ];
        let pods = gang_pods(
            &job(),
            &placement,
            false,
            0,
            &PodSettings::default(),
            &|n| n == "plugin",
        )
        .expect("pods");
        let gpu_limit = |p: &Pod| {
            p.spec.as_ref().unwrap().containers[0]
                .resources
                .as_ref()
                .and_then(|r| r.limits.as_ref())
                .is_some_and(|l| l.contains_key(GPU_RESOURCE))
        };
        let by = |p: &Pod| read(p).gpus_assigned_by.map(GpuAssignment::as_str);
        assert!(gpu_limit(&pods[0]));
        assert_eq!(by(&pods[0]), Some("device-plugin"));
        assert!(
            !env_of(&pods[0].spec.as_ref().unwrap().containers[0])
                .contains_key("NVIDIA_VISIBLE_DEVICES")
        );
        assert!(!gpu_limit(&pods[1]));
        assert_eq!(by(&pods[1]), Some("kubetrain"));
        assert!(
            env_of(&pods[1].spec.as_ref().unwrap().containers[0])
                .contains_key("NVIDIA_VISIBLE_DEVICES")
        );
    }

    /// A share on a node whose device plugin hands out GPUs waits behind the reservation
    /// gate, pinned for the scheduler even with direct binding, and takes the reserved
    /// device as `NVIDIA_VISIBLE_DEVICES`; on a node without a plugin it goes by kubetrain's
    /// index at once. The gate's reader (`reservations`) finds it.
    #[test]
    fn a_share_on_a_device_plugin_node_waits_for_its_reservation() {
        let share = |node: &str| ReplicaPlacement {
            share: Some(crate::sched::MilliGpu(500)),
            ..placed(0, 0, node, &[3])
        };
        let direct = PodSettings {
            binding: Binding::Direct,
            ..Default::default()
        };
        let env_source = |p: &Pod| {
            p.spec.as_ref().unwrap().containers[0]
                .env
                .iter()
                .flatten()
                .find(|e| e.name == "NVIDIA_VISIBLE_DEVICES")
                .and_then(|e| e.value_from.as_ref())
                .and_then(|v| v.field_ref.as_ref())
                .map(|f| f.field_path.clone())
        };
        let gates = |p: &Pod| {
            p.spec
                .as_ref()
                .unwrap()
                .scheduling_gates
                .iter()
                .flatten()
                .map(|g| g.name.clone())
                .collect::<Vec<_>>()
        };
        let mut one = job();
        one.spec.tasks[0].replicas = Some(1);
        let pods = gang_pods(&one, &[share("plugin")], false, 0, &direct, &|n| {
            n == "plugin"
        })
        .expect("pods");
        let pod = &pods[0];
        assert_eq!(gates(pod), vec![RESERVATION_GATE.to_string()]);
        let spec = pod.spec.as_ref().unwrap();
        assert!(
            spec.node_name.is_none(),
            "a gated pod cannot carry nodeName"
        );
        assert!(spec.affinity.is_some());
        assert!(
            !spec.containers[0]
                .resources
                .as_ref()
                .and_then(|r| r.limits.as_ref())
                .is_some_and(|l| l.contains_key(GPU_RESOURCE))
        );
        assert_eq!(
            env_source(pod).as_deref(),
            Some("metadata.annotations['kubetrain.io/visible-devices']")
        );
        assert_eq!(
            read(pod).gpus_assigned_by,
            Some(GpuAssignment::DevicePlugin)
        );
        assert!(super::super::reservations::waits_for(pod).is_some());

        let pods = gang_pods(&one, &[share("bare")], false, 0, &direct, &|n| {
            n == "plugin"
        })
        .expect("pods");
        assert!(gates(&pods[0]).is_empty());
        assert_eq!(
            pods[0].spec.as_ref().unwrap().node_name.as_deref(),
            Some("bare")
        );
        assert_eq!(
            env_source(&pods[0]).as_deref(),
            Some("metadata.annotations['kubetrain.io/gpus']")
        );
        assert_eq!(
            read(&pods[0]).gpus_assigned_by,
            Some(GpuAssignment::Kubetrain)
        );
    }

    #[test]
    fn device_plugin_binding_keeps_gpu_requests() {
        let settings = PodSettings {
            gpu_binding: GpuBinding::DevicePlugin,
            ..Default::default()
        };
        let pods = gang_pods(
            &job(),
            &[placed(0, 0, "n1", &[0, 1]), placed(1, 1, "n1", &[2, 3])],
            false,
            0,
            &settings,
            &|_| false,
        )
        .expect("pods");
        let c = &pods[1].spec.as_ref().expect("spec").containers[0];
        assert!(
            c.resources
                .as_ref()
                .and_then(|r| r.limits.as_ref())
                .expect("limits")
                .contains_key(GPU_RESOURCE)
        );
        let env = env_of(c);
        assert_eq!(env["LOCAL_RANK"].as_deref(), Some("1"));
        assert_eq!(env["NODE_RANK"].as_deref(), Some("0"));
    }

    #[test]
    fn expected_names_cover_every_replica() {
        assert_eq!(
            expected_pod_names(&job()),
            vec!["llm-worker-0", "llm-worker-1"]
        );
    }
}
