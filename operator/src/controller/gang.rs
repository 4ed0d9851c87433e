//! The pod protocol, read: a job's pods as one [`Gang`], each pod's labels and annotations
//! parsed once into a [`Member`].
//!
//! `pods::gang_pods` writes the protocol when the scheduler admits a gang (placement, rank,
//! attempt, bonus flag, gang size); the scheduler and the reconciler add the checkpoint
//! request, the job (or its sidecar) the acknowledgement. Everything that reads it — the
//! snapshot (`snapshot::job_model`, `Orphans::held`), the lifecycle (`lifecycle::next`) and
//! the scheduler (which pods to ask to checkpoint, which to re-mark after a promotion, which
//! in-flight admission the cache shows) — asks the view here, so each fact is read one way.
//! The pod's status is read here too, into facts the lifecycle judges: how a pod failed
//! ([`Member::failure`]), when it finished, why it does not start, whether the cluster's
//! scheduler keeps it unbound ([`unschedulable`]).
//!
//! Which pods count, once:
//! - *active*: the pod still holds its node's resources (not Succeeded or Failed), being
//!   deleted or not;
//! - *present*: not being deleted (any phase);
//! - *live*: both: what the scheduler may still mark.
//!
//! Reading never fails: a malformed value reads as absent (a placement missing a part as no
//! placement, a checkpoint request with an unreadable time as a request of unknown time).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerState, Pod, PodStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;

use super::job_key::JobKey;
use crate::api::annotations::{
    ATTEMPT_ANNOTATION, BONUS_ANNOTATION, CHECKPOINT_DONE, CHECKPOINT_REQUESTED,
    GANG_SIZE_ANNOTATION, GPU_ASSIGNMENT_ANNOTATION, GPU_SHARE_ANNOTATION, GPUS_ANNOTATION,
    INDEX_LABEL, NODE_ANNOTATION, PREEMPTED_FOR, PREEMPTION_REASON, RANK_ANNOTATION, TASK_LABEL,
    TEMPLATE_DIGEST_ANNOTATION,
};
use crate::api::reasons::PreemptionCause;
use crate::api::trainingjob::{GpuAssignment, ReplicaPlacement as RecordedPlacement};
use crate::sched::{GpuIndex, MilliGpu, ReplicaPlacement};

/// Whether a pod still holds its node's resources: it has not finished (Succeeded or Failed).
/// A pod being deleted holds them until its containers stop.
pub fn holds_resources(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded") | Some("Failed"))
}

/// The checkpoint request on a pod (`kubetrain.io/checkpoint-requested`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRequest {
    /// When it was asked; `None` when the value is no RFC 3339 time (still a request).
    pub at: Option<Timestamp>,
    /// Why (`kubetrain.io/preemption-reason`: `Reclaim`, `Priority`, `Drain`, ...), when the
    /// scheduler asked; a suspension's request carries none, and a name this operator does
    /// not know (a newer one's) reads as none.
    pub reason: Option<PreemptionCause>,
    /// The job a `Reclaim` or `Priority` preemption makes room for
    /// (`kubetrain.io/preempted-for`).
    pub preempted_for: Option<String>,
}

/// One pod of a job, its protocol read.
#[derive(Debug, Clone)]
pub struct Member {
    pub pod: Arc<Pod>,
    pub name: String,
    /// The pod's phase (`Pending`, `Running`, `Succeeded`, `Failed`).
    pub phase: Option<String>,
    /// Still holds its node's resources ([`holds_resources`]).
    pub active: bool,
    /// When its deletion was asked for and it may be gone (its deletion timestamp): the pod is
    /// leaving.
    pub deleting_at: Option<Timestamp>,
    pub created_at: Option<Timestamp>,
    /// The node it is bound to (`spec.nodeName`).
    pub bound_node: Option<String>,
    /// The node kubetrain chose (`kubetrain.io/node`), where it is pinned until bound.
    pub chosen_node: Option<String>,
    /// Where the replica runs: task and index (labels), rank, node (bound, else chosen), GPUs
    /// and share. `None` when a part is missing or malformed.
    pub placement: Option<ReplicaPlacement>,
    /// Who picks the GPU indices (`kubetrain.io/gpu-assignment`).
    pub gpus_assigned_by: Option<GpuAssignment>,
    /// Runs on borrowed capacity (`kubetrain.io/bonus` is `true`).
    pub bonus: bool,
    /// The admission of the job that created it (`kubetrain.io/attempt`).
    pub attempt: Option<i32>,
    /// The gang's size when it was created (`kubetrain.io/gang-size`).
    pub gang_size: Option<usize>,
    /// The digest of the task template it was made from (`kubetrain.io/template-digest`);
    /// `None` on pods an operator without it created.
    pub template_digest: Option<String>,
    pub checkpoint_request: Option<CheckpointRequest>,
    /// When the job acknowledged a checkpoint (`kubetrain.io/checkpoint-done`, a readable time).
    pub checkpoint_done: Option<Timestamp>,
}

impl Member {
    /// Reads the pod's protocol.
    pub fn read(pod: Arc<Pod>) -> Self {
        let ann = pod.annotations();
        let get = |key: &str| ann.get(key).map(String::as_str);
        let time = |key: &str| get(key).and_then(|s| s.trim().parse::<Timestamp>().ok());
        let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
        let bound_node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let chosen_node = get(NODE_ANNOTATION).map(str::to_string);
        Member {
            name: pod.name_any(),
            active: holds_resources(&pod),
            phase,
            deleting_at: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            created_at: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            placement: placement(&pod, bound_node.as_ref().or(chosen_node.as_ref())),
            gpus_assigned_by: get(GPU_ASSIGNMENT_ANNOTATION).and_then(GpuAssignment::parse),
            bonus: get(BONUS_ANNOTATION).is_some_and(|b| b.trim() == "true"),
            attempt: get(ATTEMPT_ANNOTATION).and_then(|a| a.trim().parse().ok()),
            gang_size: get(GANG_SIZE_ANNOTATION).and_then(|a| a.trim().parse().ok()),
            template_digest: get(TEMPLATE_DIGEST_ANNOTATION).map(str::to_string),
            checkpoint_request: get(CHECKPOINT_REQUESTED).map(|_| CheckpointRequest {
                at: time(CHECKPOINT_REQUESTED),
                reason: get(PREEMPTION_REASON).and_then(PreemptionCause::from_name),
                preempted_for: get(PREEMPTED_FOR).map(str::to_string),
            }),
            checkpoint_done: time(CHECKPOINT_DONE),
            bound_node,
            chosen_node,
            pod,
        }
    }

    /// Not being deleted.
    pub fn present(&self) -> bool {
        self.deleting_at.is_none()
    }

    /// Present and holding its resources: a pod the scheduler may still mark.
    pub fn live(&self) -> bool {
        self.active && self.present()
    }

    pub fn succeeded(&self) -> bool {
        self.phase.as_deref() == Some("Succeeded")
    }

    /// The node named by the pod: where it is bound, else where kubetrain pinned it.
    pub fn node(&self) -> Option<&str> {
        self.bound_node.as_deref().or(self.chosen_node.as_deref())
    }

    /// The placement as the job's status records it.
    pub fn recorded_placement(&self) -> Option<RecordedPlacement> {
        let p = self.placement.as_ref()?;
        Some(RecordedPlacement {
            task: p.task.clone(),
            index: p.index as i32,
            rank: p.rank as i32,
            node: p.node.clone(),
            gpus: p.gpus.iter().map(|g| g.0 as i32).collect(),
            gpu_share: p.share.map(|s| s.0 as i32),
            gpus_assigned_by: self.gpus_assigned_by,
        })
    }
}

/// How a pod that finished badly ended, as its status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodFailure {
    /// Kubernetes or the node ended it (a disruption, the node lost or shut down, the
    /// kubelet's refusal at admission or its eviction): not the job's doing.
    Infrastructure(String),
    /// It failed on its own: an exit code, `OOMKilled`, or the pod's own reason and message.
    Replica(String),
}

/// Since when, if known, and why the cluster's scheduler keeps a pod unbound (its
/// `PodScheduled` condition `False`, reason `Unschedulable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable {
    pub since: Option<Timestamp>,
    pub message: String,
}

/// What the pod's status says: how it failed, when it finished, why it does not run yet.
impl Member {
    /// How the pod failed, if it finished badly.
    pub fn failure(&self) -> Option<PodFailure> {
        if self.active || self.succeeded() {
            return None;
        }
        let status = self.pod.status.as_ref()?;
        let reason = status.reason.clone().unwrap_or_default();
        // Kubernetes marks a pod it stops for reasons of its own (the pod garbage collector on a
        // deleted node, the taint manager, the kubelet under node pressure, an eviction) with
        // `DisruptionTarget=True` before it fails: not the job's fault.
        if let Some(c) = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
        {
            let why = c.reason.as_deref().unwrap_or("DisruptionTarget");
            return Some(PodFailure::Infrastructure(match c.message.as_deref() {
                Some(msg) if !msg.is_empty() => format!("pod disrupted ({why}): {msg}"),
                _ => format!("pod disrupted ({why})"),
            }));
        }
        if is_infrastructure_reason(&reason) {
            let detail = status.message.as_deref().unwrap_or_default();
            return Some(PodFailure::Infrastructure(if detail.is_empty() {
                format!("pod {reason}")
            } else {
                format!("pod {reason}: {detail}")
            }));
        }
        // An init container that failed stops the pod before its containers start.
        let terminated = container_states(status)
            .filter_map(|s| s.terminated.as_ref())
            .find(|t| t.exit_code != 0);
        let detail = status.message.as_deref().unwrap_or_default();
        let why = match terminated {
            Some(t) if t.reason.as_deref() == Some("OOMKilled") => "OOMKilled".to_string(),
            Some(t) => format!("exit code {}", t.exit_code),
            // No container says how it ended: the pod's own reason and message do.
            None if !reason.is_empty() && !detail.is_empty() => format!("{reason}: {detail}"),
            None if !reason.is_empty() => reason,
            None if !detail.is_empty() => detail.to_string(),
            None => "failed".to_string(),
        };
        Some(PodFailure::Replica(why))
    }

    /// When the pod finished, if its status says, as the Kubernetes Job controller reads it
    /// (`getFinishedTime`): its last container to finish, init containers (sidecars) included;
    /// else when it stopped being ready; else when it was deleted.
    pub fn finished_at(&self) -> Option<Timestamp> {
        let status = self.pod.status.as_ref()?;
        self.containers_finished_at()
            .or_else(|| {
                status
                    .conditions
                    .iter()
                    .flatten()
                    .find(|c| c.type_ == "Ready" && c.status == "False")?
                    .last_transition_time
                    .as_ref()
                    .map(|t| t.0)
            })
            .or_else(|| self.deletion_asked())
    }

    /// When the last of the pod's init containers and containers that terminated finished.
    fn containers_finished_at(&self) -> Option<Timestamp> {
        container_states(self.pod.status.as_ref()?)
            .filter_map(|s| s.terminated.as_ref()?.finished_at.as_ref())
            .map(|t| t.0)
            .max()
    }

    /// When the pod's deletion was asked for: its deletion timestamp, which is the end of its
    /// grace period, less that period (as the Job controller's `getFinishedTime` takes it).
    fn deletion_asked(&self) -> Option<Timestamp> {
        let due = self.pod.metadata.deletion_timestamp.as_ref()?;
        let grace = self.pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        Some(due.0 - SignedDuration::from_secs(grace.max(0)))
    }

    /// A pod whose containers ended after its deletion was asked for (its deletion timestamp
    /// less its grace period): the deletion stopped it. Only the containers' own `finishedAt`
    /// tells; without it the failure stays the job's, as a pod that failed before its deletion.
    pub fn stopped_by_deletion(&self) -> bool {
        let Some(asked) = self.deletion_asked() else {
            return false;
        };
        self.containers_finished_at().is_some_and(|f| f >= asked)
    }

    /// A pod not running whose (init) container waits for another reason than being created
    /// (`ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`, ...): it reports a
    /// problem instead of progress. Returns the kubelet's reason and its message.
    pub fn start_problem(&self) -> Option<(&str, &str)> {
        if matches!(self.phase.as_deref(), Some("Running" | "Succeeded")) {
            return None;
        }
        self.waiting()
            .find(|(reason, _)| !reason.is_empty() && !STARTING_REASONS.contains(reason))
    }

    /// Why the pod is not running yet, from its containers' waiting states
    /// (`ImagePullBackOff: Back-off pulling image "x"`), if they say.
    pub fn not_running_because(&self) -> Option<String> {
        self.waiting().next().map(|(reason, msg)| {
            if msg.is_empty() {
                reason.to_string()
            } else {
                format!("{reason}: {msg}")
            }
        })
    }

    /// The (reason, message) of each of the pod's (init) containers that waits and says why.
    fn waiting(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pod
            .status
            .as_ref()
            .into_iter()
            .flat_map(container_states)
            .filter_map(|s| s.waiting.as_ref())
            .filter_map(|w| {
                Some((
                    w.reason.as_deref()?,
                    w.message.as_deref().unwrap_or_default(),
                ))
            })
    }
}

/// Why the cluster's scheduler keeps the pod unbound, if it does.
pub fn unschedulable(pod: &Pod) -> Option<Unschedulable> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?;
    if c.status != "False" || c.reason.as_deref() != Some("Unschedulable") {
        return None;
    }
    Some(Unschedulable {
        since: c.last_transition_time.as_ref().map(|t| t.0),
        message: c.message.clone().unwrap_or_default(),
    })
}

/// Whether kube-scheduler's message says the pod's claims are missing or unbound, which no
/// node can mend (its VolumeBinding plugin's pre-filter, before any node is looked at).
pub fn volumes_not_ready(message: &str) -> bool {
    message.contains("unbound immediate PersistentVolumeClaims")
        || (message.contains("persistentvolumeclaim")
            && (message.contains("not found") || message.contains("is being deleted")))
}

/// Pod-level reasons that say the node, not the job, ended the pod: the node was lost or shut
/// down, the kubelet refused the pod at admission (its resources, affinity, taints or a
/// device plugin's allocation disagreed with the scheduling decision: `OutOf<resource>`,
/// `NodeAffinity`, `UnexpectedAdmissionError`, ...), or evicted it (node pressure, a critical
/// pod's preemption). None of these is the job's fault, so none counts against `maxRetries`.
fn is_infrastructure_reason(reason: &str) -> bool {
    reason.starts_with("OutOf")
        || matches!(
            reason,
            "NodeLost"
                | "Shutdown"
                | "NodeShutdown"
                | "Terminated"
                | "Evicted"
                | "Preempting"
                | "UnexpectedAdmissionError"
                | "NodeAffinity"
                | "NodeName"
                | "NodePorts"
                | "Taint"
                | "InvalidNodeInfo"
                | "PodOSNotSupported"
                | "PodOSSelectorNodeLabelDoesNotMatch"
        )
}

/// The states of a pod's init containers, then of its containers.
fn container_states(status: &PodStatus) -> impl Iterator<Item = &ContainerState> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref())
}

/// Waiting reasons of a container on its way to running, as opposed to one that is stuck.
const STARTING_REASONS: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// The placement recorded on a pod, its node already decided (bound, else chosen).
fn placement(pod: &Pod, node: Option<&String>) -> Option<ReplicaPlacement> {
    let labels = pod.metadata.labels.as_ref()?;
    let ann = pod.metadata.annotations.as_ref()?;
    Some(ReplicaPlacement {
        task: labels.get(TASK_LABEL)?.clone(),
        index: labels.get(INDEX_LABEL)?.trim().parse().ok()?,
        rank: ann
            .get(RANK_ANNOTATION)
            .and_then(|r| r.trim().parse().ok())
            .unwrap_or(0),
        node: node?.clone(),
        gpus: ann
            .get(GPUS_ANNOTATION)?
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map(GpuIndex))
            .collect::<Result<_, _>>()
            .ok()?,
        share: ann
            .get(GPU_SHARE_ANNOTATION)
            .and_then(|s| s.trim().parse().ok())
            .map(MilliGpu),
    })
}

/// The job a pod is labelled with and the UID of its controller, if any.
pub type GangKey = (JobKey, Option<String>);

/// A job's pods, as the pod cache has them (active, finished and leaving alike), read once.
#[derive(Debug, Clone, Default)]
pub struct Gang {
    members: Vec<Member>,
}

impl Gang {
    pub fn new(pods: impl IntoIterator<Item = Arc<Pod>>) -> Self {
        Gang {
            members: pods.into_iter().map(Member::read).collect(),
        }
    }

    /// The pods of kubetrain jobs (`kubetrain.io/job`) by job and the UID of their
    /// controller, in any phase: a job's gang is the one of its own UID, not pods of its
    /// name that another (deleted) job left ([`owned_by`](super::job_key::owned_by)).
    pub fn by_job(pods: &[Arc<Pod>]) -> BTreeMap<GangKey, Gang> {
        let mut out: BTreeMap<GangKey, Gang> = BTreeMap::new();
        for p in pods {
            if let Some(key) = JobKey::of_pod(p) {
                let uid = super::job_key::controller_uid(p.as_ref()).map(str::to_string);
                out.entry((key, uid))
                    .or_default()
                    .members
                    .push(Member::read(p.clone()));
            }
        }
        out
    }

    /// Every pod, leaving ones included.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// No pod at all, not even a leaving one.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The pods that still hold their node's resources, leaving ones included.
    pub fn active(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.active)
    }

    /// The pods not being deleted, in any phase.
    pub fn present(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.present())
    }

    /// The pods present and holding resources.
    pub fn live(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.live())
    }

    /// A pod that still holds resources is being deleted: we cannot tell which GPUs come free
    /// when.
    pub fn leaving(&self) -> bool {
        self.active().any(|m| !m.present())
    }

    /// Where the pods that hold resources are, in rank order.
    pub fn placement(&self) -> Vec<ReplicaPlacement> {
        let mut out: Vec<ReplicaPlacement> =
            self.active().filter_map(|m| m.placement.clone()).collect();
        out.sort_by_key(|p| p.rank);
        out
    }

    /// Where the present pods were placed, in rank order, as the job's status records it.
    pub fn recorded_placement(&self) -> Vec<RecordedPlacement> {
        let mut out: Vec<RecordedPlacement> = self
            .present()
            .filter_map(Member::recorded_placement)
            .collect();
        out.sort_by_key(|p| p.rank);
        out
    }

    /// The gang runs on borrowed capacity: a pod that holds resources says so.
    pub fn bonus(&self) -> bool {
        self.active().any(|m| m.bonus)
    }

    /// A present pod carries the checkpoint request.
    pub fn checkpoint_requested(&self) -> bool {
        self.present().any(|m| m.checkpoint_request.is_some())
    }

    /// The earliest readable time of a present pod's checkpoint request.
    pub fn checkpoint_requested_at(&self) -> Option<Timestamp> {
        self.present()
            .filter_map(|m| m.checkpoint_request.as_ref()?.at)
            .min()
    }

    /// Why the gang is asked to checkpoint (the first present pod that says).
    pub fn preemption_reason(&self) -> Option<PreemptionCause> {
        self.present()
            .find_map(|m| m.checkpoint_request.as_ref()?.reason)
    }

    /// The scheduler's request on the gang: the first active pod's that carries one.
    pub fn scheduler_request(&self) -> Option<&CheckpointRequest> {
        self.active().find_map(|m| m.checkpoint_request.as_ref())
    }

    /// An active pod acknowledged a checkpoint.
    pub fn acknowledged(&self) -> bool {
        self.active().any(|m| m.checkpoint_done.is_some())
    }

    /// The latest checkpoint a present pod acknowledged.
    pub fn checkpoint_done_at(&self) -> Option<Timestamp> {
        self.present().filter_map(|m| m.checkpoint_done).max()
    }

    /// The live pods not yet asked to checkpoint: where a request goes.
    pub fn to_ask_checkpoint(&self) -> impl Iterator<Item = &Member> {
        self.live().filter(|m| m.checkpoint_request.is_none())
    }

    /// The live pods whose bonus flag is not `bonus`: where a promotion's or a demotion's
    /// mark goes.
    pub fn to_mark_bonus(&self, bonus: bool) -> impl Iterator<Item = &Member> {
        self.live().filter(move |m| m.bonus != bonus)
    }

    /// How many pods (in any phase) the admission `attempt` created.
    pub fn of_attempt(&self, attempt: i32) -> usize {
        self.members
            .iter()
            .filter(|m| m.attempt == Some(attempt))
            .count()
    }

    /// The earliest creation of a pod that holds resources.
    pub fn first_created(&self) -> Option<Timestamp> {
        self.active().filter_map(|m| m.created_at).min()
    }

    /// The latest creation of a present pod.
    pub fn last_created(&self) -> Option<Timestamp> {
        self.present().filter_map(|m| m.created_at).max()
    }

    /// The present pod of that name.
    pub fn present_named(&self, name: &str) -> Option<&Member> {
        self.present().find(|m| m.name == name)
    }

    /// The first of `expected` (pod names) with no present pod.
    pub fn first_missing<'a>(&self, expected: &'a [String]) -> Option<&'a String> {
        expected.iter().find(|n| self.present_named(n).is_none())
    }

    /// Every node the pods name, bound or chosen.
    pub fn nodes(&self) -> std::collections::BTreeSet<&str> {
        self.members
            .iter()
            .flat_map(|m| [m.bound_node.as_deref(), m.chosen_node.as_deref()])
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    use crate::api::annotations::JOB_LABEL;

    fn pod(annotations: serde_json::Value, extra: serde_json::Value) -> Arc<Pod> {
        let mut v = json!({
            "metadata": {
                "name": "llm-worker-0", "namespace": "team",
                "labels": {JOB_LABEL: "llm", TASK_LABEL: "worker", INDEX_LABEL: "0"},
                "annotations": annotations,
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        });
        merge(&mut v, extra);
        Arc::new(serde_json::from_value(v).expect("pod"))
    }

    fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
        match (into, from) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    #[test]
    fn reads_the_placement() {
        let m = Member::read(pod(
            json!({GPUS_ANNOTATION: "2, 3", RANK_ANNOTATION: "5", GPU_SHARE_ANNOTATION: "500",
                   NODE_ANNOTATION: "chosen", GPU_ASSIGNMENT_ANNOTATION: "device-plugin"}),
            json!({}),
        ));
        let p = m.placement.clone().expect("placement");
        assert_eq!(
            (p.task.as_str(), p.index, p.rank, p.node.as_str()),
            ("worker", 0, 5, "chosen")
        );
        assert_eq!(p.gpus, vec![GpuIndex(2), GpuIndex(3)]);
        assert_eq!(p.share, Some(MilliGpu(500)));
        assert_eq!(m.gpus_assigned_by, Some(GpuAssignment::DevicePlugin));
        let recorded = m.recorded_placement().expect("recorded");
        assert_eq!(recorded.gpus, vec![2, 3]);
        assert_eq!(recorded.gpu_share, Some(500));
        // Once bound, where it is bound.
        let bound = Member::read(pod(
            json!({GPUS_ANNOTATION: "0", NODE_ANNOTATION: "chosen"}),
            json!({"spec": {"nodeName": "bound"}}),
        ));
        assert_eq!(bound.placement.as_ref().expect("placement").node, "bound");
        assert_eq!(bound.node(), Some("bound"));
        assert_eq!(bound.chosen_node.as_deref(), Some("chosen"));
        // No GPUs annotation, or no node at all: no placement. A CPU-only replica has "".
        assert!(
            Member::read(pod(json!({NODE_ANNOTATION: "n"}), json!({})))
                .placement
                .is_none()
        );
        assert!(
            Member::read(pod(json!({GPUS_ANNOTATION: "0"}), json!({})))
                .placement
                .is_none()
        );
        let cpu = Member::read(pod(
            json!({GPUS_ANNOTATION: "", NODE_ANNOTATION: "n"}),
            json!({}),
        ));
        assert_eq!(cpu.placement.expect("placement").gpus, vec![]);
    }

    #[test]
    fn reads_the_flags_and_the_checkpoint_protocol() {
        let m = Member::read(pod(
            json!({BONUS_ANNOTATION: "true", ATTEMPT_ANNOTATION: "3",
                   CHECKPOINT_REQUESTED: "2026-01-01T00:01:00Z", PREEMPTION_REASON: "Drain",
                   CHECKPOINT_DONE: "2026-01-01T00:01:05Z"}),
            json!({}),
        ));
        assert!(m.bonus);
        assert_eq!(m.attempt, Some(3));
        assert_eq!(
            m.checkpoint_request,
            Some(CheckpointRequest {
                at: Some(ts("2026-01-01T00:01:00Z")),
                reason: Some(PreemptionCause::Drain),
                preempted_for: None,
            })
        );
        assert_eq!(m.checkpoint_done, Some(ts("2026-01-01T00:01:05Z")));
        let plain = Member::read(pod(json!({BONUS_ANNOTATION: "false"}), json!({})));
        assert!(!plain.bonus);
        assert_eq!(plain.attempt, None);
        assert_eq!(plain.checkpoint_request, None);
        assert_eq!(plain.checkpoint_done, None);
    }

    /// A malformed value reads as absent, except a checkpoint request, which is still a
    /// request (of unknown time): the job was asked.
    #[test]
    fn malformed_values_read_as_absent() {
        let m = Member::read(pod(
            json!({GPUS_ANNOTATION: "0,x", RANK_ANNOTATION: "first", GPU_SHARE_ANNOTATION: "half",
                   NODE_ANNOTATION: "n", BONUS_ANNOTATION: "yes", ATTEMPT_ANNOTATION: "2.5",
                   CHECKPOINT_REQUESTED: "soon", CHECKPOINT_DONE: "", GPU_ASSIGNMENT_ANNOTATION: "me"}),
            json!({"metadata": {"labels": {INDEX_LABEL: "-1"}}}),
        ));
        assert_eq!(m.placement, None);
        assert!(!m.bonus);
        assert_eq!(m.attempt, None);
        assert_eq!(m.gpus_assigned_by, None);
        assert_eq!(
            m.checkpoint_request,
            Some(CheckpointRequest {
                at: None,
                reason: None,
                preempted_for: None,
            })
        );
        assert_eq!(m.checkpoint_done, None);
        // A bad rank or share alone keeps the placement (rank 0, whole GPUs), as before.
        let m = Member::read(pod(
            json!({GPUS_ANNOTATION: "1", RANK_ANNOTATION: "first", GPU_SHARE_ANNOTATION: "half",
                   NODE_ANNOTATION: "n"}),
            json!({}),
        ));
        let p = m.placement.expect("placement");
        assert_eq!((p.rank, p.share), (0, None));
    }

    #[test]
    fn which_pods_count() {
        let running = pod(json!({BONUS_ANNOTATION: "true"}), json!({}));
        let mut leaving = (*pod(
            json!({}),
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:09Z"}}),
        ))
        .clone();
        leaving.metadata.name = Some("llm-worker-1".into());
        let done = pod(
            json!({BONUS_ANNOTATION: "true", CHECKPOINT_REQUESTED: "2026-01-01T00:00:05Z"}),
            json!({"metadata": {"name": "llm-worker-2"}, "status": {"phase": "Succeeded"}}),
        );
        let gang = Gang::new([running, Arc::new(leaving), done]);
        let names = |it: Vec<&Member>| it.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(gang.active().collect()),
            ["llm-worker-0", "llm-worker-1"]
        );
        assert_eq!(
            names(gang.present().collect()),
            ["llm-worker-0", "llm-worker-2"]
        );
        assert_eq!(names(gang.live().collect()), ["llm-worker-0"]);
        assert!(gang.leaving());
        assert!(gang.bonus());
        // A finished present pod still says the gang was asked to checkpoint; only live pods
        // are asked.
        assert!(gang.checkpoint_requested());
        assert_eq!(
            gang.checkpoint_requested_at(),
            Some(ts("2026-01-01T00:00:05Z"))
        );
        assert_eq!(names(gang.to_ask_checkpoint().collect()), ["llm-worker-0"]);
        assert_eq!(names(gang.to_mark_bonus(false).collect()), ["llm-worker-0"]);
        assert_eq!(gang.to_mark_bonus(true).count(), 0);
        assert_eq!(
            gang.first_missing(&["llm-worker-0".into(), "llm-worker-1".into()]),
            Some(&"llm-worker-1".to_string())
        );
    }

    #[test]
    fn groups_pods_by_job() {
        let mine = pod(json!({}), json!({}));
        let other_ns = pod(json!({}), json!({"metadata": {"namespace": "else"}}));
        let foreign: Arc<Pod> = Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "x", "namespace": "team"}}))
                .expect("pod"),
        );
        // Left by an earlier job of the name: its own gang, not the job's.
        let earlier = pod(
            json!({}),
            json!({"metadata": {"name": "llm-worker-1", "ownerReferences": [
                {"apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob", "name": "llm",
                 "uid": "earlier", "controller": true}]}}),
        );
        let by_job = Gang::by_job(&[mine, other_ns, foreign, earlier]);
        assert_eq!(
            by_job
                .iter()
                .map(|((job, uid), gang)| format!("{job} {uid:?} {}", gang.members().len()))
                .collect::<Vec<_>>(),
            [
                "else/llm None 1",
                "team/llm None 1",
                "team/llm Some(\"earlier\") 1"
            ]
        );
    }

    proptest! {
        /// Whatever the annotations and labels hold, reading never panics.
        #[test]
        fn reading_never_panics(
            values in proptest::collection::vec(".{0,12}", 12),
            phase in proptest::option::of("[A-Za-z]{0,10}"),
        ) {
            let keys = [GPUS_ANNOTATION, RANK_ANNOTATION, GPU_SHARE_ANNOTATION, NODE_ANNOTATION,
                BONUS_ANNOTATION, ATTEMPT_ANNOTATION, CHECKPOINT_REQUESTED, PREEMPTION_REASON,
                CHECKPOINT_DONE, GPU_ASSIGNMENT_ANNOTATION];
            let annotations: serde_json::Map<String, serde_json::Value> = keys
                .iter()
                .zip(&values)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            let p = pod(
                serde_json::Value::Object(annotations),
                json!({"metadata": {"labels": {TASK_LABEL: values[10], INDEX_LABEL: values[11]}},
                       "status": {"phase": phase}}),
            );
            let gang = Gang::new([p]);
            let _ = (gang.placement(), gang.recorded_placement(), gang.bonus(),
                gang.checkpoint_requested_at(), gang.checkpoint_done_at(), gang.of_attempt(0),
                gang.nodes(), gang.preemption_reason());
        }
    }
}
