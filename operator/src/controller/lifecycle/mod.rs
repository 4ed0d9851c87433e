//! The TrainingJob's lifecycle (docs/architecture.md, "One TrainingJob"): a pure state
//! machine, with no client and no shared state.
//!
//! [`next`] takes the job, its [`Gang`] of pods, the [`World`] the reconciler observed around
//! it (validity, the scheduler's word on why it waits, the nodes under its pods, settings) and
//! the time, and returns the job's next status and the [`Effects`] the reconciler carries out:
//! Events, pod deletions, checkpoint requests, the job's own deletion after its TTL, and when
//! to look again. One function per phase; `stories.rs` tells each transition as a story.
//!
//! Every step is idempotent: a re-run after a crash at any point reaches the same state without
//! counting twice, because each counter moves together with the phase that records it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerState, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::conditions;
pub use super::gang::Gang;
use super::gang::Member;
pub use super::node_health::NodeState;
use super::pods::expected_pod_names;
use super::reservations;
use super::validate::Invalid;
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::trainingjob::{
    PodFailurePolicyAction, PreemptionOutcome, PreemptionRecord, RefusedNode,
};
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::sched::WaitReason;

#[cfg(test)]
mod peer_stories;
#[cfg(test)]
mod peer_stories_fifth;
#[cfg(test)]
mod peer_stories_fourth;
#[cfg(test)]
mod peer_stories_more;
#[cfg(test)]
mod peer_stories_seventh;
#[cfg(test)]
mod peer_stories_sixth;
#[cfg(test)]
mod peer_stories_third;
mod policy;
#[cfg(test)]
mod stories;

/// The operator's settings the lifecycle obeys.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many infrastructure failures are retried without counting.
    pub max_infrastructure_retries: i32,
    /// How long a gang may stay incomplete with no admission in progress.
    pub incomplete_gang_timeout: Duration,
    /// How long the cluster's scheduler may keep a pod `Unschedulable` before the admission is
    /// rolled back.
    pub unschedulable_timeout: Duration,
    /// How long an admitted gang may take until every replica runs (`None`: for ever); then
    /// it stops and retries, counted (an image that cannot be pulled holds GPUs otherwise).
    pub start_timeout: Option<Duration>,
}

/// What the reconciler observed around the job: everything the lifecycle needs besides the job
/// and its pods.
#[derive(Debug, Clone)]
pub struct World {
    /// The queue in effect (`None` when it cannot be resolved).
    pub queue: Option<String>,
    /// The priority in effect.
    pub priority: Option<i32>,
    /// What the schema cannot check: references and templates.
    pub validity: Result<(), Invalid>,
    /// The scheduler's last word on why the job waits, and its place in its queue.
    pub wait: Option<(WaitReason, Option<u32>)>,
    /// The scheduler is creating the job's pods right now.
    pub admission_in_flight: bool,
    /// A scheduling cycle is under way: it, or the next one, admits a job that waits for
    /// its first cycle or says why it waits.
    pub scheduling: bool,
    /// The nodes named by the job's pods (bound or chosen, [`Gang::nodes`]), each judged by
    /// `node_health`; a node not here is gone.
    pub nodes: BTreeMap<String, NodeState>,
    /// By pod name: the GPU reservation a share pod of the job waits for behind its gate,
    /// or runs on (`reservations`), as the cache shows the pod of that GPU's fixed name.
    /// Its scheduler's refusal is a waiting share's; its loss stops a running one.
    pub reservations: BTreeMap<String, Arc<Pod>>,
    pub settings: Settings,
}

impl World {
    fn node(&self, name: &str) -> &NodeState {
        self.nodes.get(name).unwrap_or(&NodeState::Gone)
    }
}

/// An Event to record on the job.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub type_: EventType,
    pub reason: &'static str,
    /// The action, when not the reason: numbered for Events that must stay apart from earlier
    /// ones of their reason (each retry, each preemption).
    pub action: Option<String>,
    pub note: String,
}

/// A pod the reconciler deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodDeletion {
    pub pod: String,
    /// With no grace: the pod's graceful deletion is overdue on a lost node.
    pub force: bool,
}

/// Which of the gang's present pods the state machine stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Stop {
    #[default]
    None,
    /// Those still holding resources. A finished job keeps its finished pods, and with them
    /// their logs, until it is deleted (`kubectl logs` on the replica that failed it).
    Live,
    /// Every one: the gang goes back to its queue and its next attempt reuses the names.
    All,
}

/// What the reconciler carries out besides writing the status: the TTL deletion of the job
/// (started before the status write), then checkpoint requests and pod deletions, then Events; it
/// looks again after `requeue` (60 s when `None`).
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub events: Vec<Event>,
    /// Delete the job: its `ttlSecondsAfterFinished` has passed.
    pub delete_job: bool,
    /// Pods to put the checkpoint request on (a suspended running job: no scheduler preemption
    /// asks for it).
    pub checkpoint_requests: Vec<String>,
    pub pod_deletions: Vec<PodDeletion>,
    pub requeue: Option<Duration>,
    /// Which present pods the state machine deletes.
    stop: Stop,
    request_checkpoint: bool,
}

impl Effects {
    fn event(&mut self, t: EventType, reason: EventReason, note: impl Into<String>) {
        self.event_named(t, reason.as_str(), note);
    }
    /// An event whose reason is named elsewhere (a validation reason).
    fn event_named(&mut self, t: EventType, reason: &'static str, note: impl Into<String>) {
        self.events.push(Event {
            type_: t,
            reason,
            action: None,
            note: note.into(),
        });
    }
    /// An event that must stay apart from earlier ones of its reason (each retry, each
    /// preemption): numbered by its occurrence.
    fn event_nth(&mut self, t: EventType, reason: EventReason, n: i32, note: impl Into<String>) {
        let reason = reason.as_str();
        self.events.push(Event {
            type_: t,
            reason,
            action: Some(format!("{reason}{n}")),
            note: note.into(),
        });
    }
    fn requeue(&mut self, d: Duration) {
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }
}

/// The job's next status and what to do about it.
pub fn next(
    job: &TrainingJob,
    gang: &Gang,
    world: &World,
    now: &Time,
) -> (TrainingJobStatus, Effects) {
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut fx = Effects::default();
    let present: Vec<&Member> = gang.present().collect();
    let s = Step {
        job,
        gang,
        world,
        t: now,
        generation: job.metadata.generation,
        present: &present,
    };
    s.step(&mut status, &mut fx);
    s.admission_ended(&mut status);
    if let Some(wait) = first_write_deferred(job, gang, world, &status, now) {
        // Nothing is written and nothing recorded: the next reconcile, when the scheduler
        // has spoken, enters the queue again and says the rest with it.
        return (
            old,
            Effects {
                requeue: Some(wait),
                ..Effects::default()
            },
        );
    }
    status.observed_generation = job.metadata.generation;
    // Every condition was judged against this generation, those that did not change too:
    // a condition left at an older one reads as not yet looked at (the API conventions),
    // and tools that wait on conditions wait on (a spec edit of a running job left
    // `Admitted` and `Running` behind for as long as it ran).
    for c in &mut status.conditions {
        c.observed_generation = job.metadata.generation;
    }
    status.nodes = placement_nodes(&status);
    status.reason = phase_reason(&status).map(|reason| {
        // A starting gang's stuck replica: the kubelet's own word, as `kubectl get pods`
        // shows it (`ImagePullBackOff`), in the same write as the condition that names it.
        if reason == Reason::ReplicaNotStarting.as_str()
            && let Some((_, why, _)) = stalled_replica(&present)
        {
            return why.to_string();
        }
        reason
    });
    if status.gpus.is_none() || old.phase != status.phase {
        status.gpus = Some(requested_gpus(job));
    }
    if fx.request_checkpoint {
        fx.checkpoint_requests = gang.to_ask_checkpoint().map(|m| m.name.clone()).collect();
    }
    fx.pod_deletions = pod_deletions(gang, world, now, fx.stop);
    (status, fx)
}

/// The nodes of the job's placement, each once, in rank order.
fn placement_nodes(status: &TrainingJobStatus) -> Option<String> {
    let mut nodes: Vec<&str> = Vec::new();
    for p in &status.placement {
        if !nodes.contains(&p.node.as_str()) {
            nodes.push(&p.node);
        }
    }
    (!nodes.is_empty()).then(|| nodes.join(","))
}

/// Why the job is in its phase, for the `REASON` column: the reason of the condition that
/// explains it. A spec gone invalid comes first (the job cannot be admitted again until it
/// is fixed, even while it runs on). Every phase short of done says something, as users
/// read the column to see what a job waits for: a starting gang `Starting` (or why a
/// replica does not start), a suspended job `Suspended`; a job running or done as asked has
/// none. Taken from conditions written in the same status, so it never costs a write of its
/// own.
fn phase_reason(status: &TrainingJobStatus) -> Option<String> {
    let reason_of = |type_: ConditionType, when: &str| {
        conditions::get(&status.conditions, type_)
            .filter(|c| c.status == when && !c.reason.is_empty())
            .map(|c| c.reason.clone())
    };
    if !status.phase.is_finished()
        && let Some(invalid) = reason_of(ConditionType::Valid, "False")
    {
        return Some(invalid);
    }
    match status.phase {
        Phase::Pending | Phase::Queued => reason_of(ConditionType::Admitted, "False"),
        Phase::Starting | Phase::Retrying => reason_of(ConditionType::Running, "False"),
        Phase::Preempting => reason_of(ConditionType::Preempting, "True"),
        Phase::Failed => reason_of(ConditionType::Failed, "True"),
        Phase::Suspended => Some(Reason::Suspended.to_string()),
        Phase::Running | Phase::Succeeded => None,
    }
}

/// How long a new job's first status write waits for the scheduler's first word on it.
pub const FIRST_WORD_GRACE: Duration = Duration::from_secs(10);

/// A new job's first status write waits for the scheduler. The scheduler takes a valid job
/// that has no status yet as queued (`snapshot::job_model`), so within a cycle it either
/// admits it (its pods appear, and one write records `Queued` and `Running` together) or says
/// why it waits (and one write records `Queued` with that reason and the job's place). A
/// write before that would only say "waiting for the next scheduling cycle", superseded a
/// moment later: one status apply per job, the most costly write the operator makes, that no
/// user reads. Returns when to look again when the write waits: only for a job never written
/// (no status), valid and not suspended (it would enter `Queued`), with no pods, and no word
/// from the scheduler yet, and only while its pods are being created, a scheduling cycle is
/// under way (a long one, creating many gangs, did not see the jobs created meanwhile: the
/// next one does), or the job is younger than [`FIRST_WORD_GRACE`] (the next cycle is at
/// most the debounce and a resync away). Past that (a scheduler that says nothing) the job is
/// written as before: `Queued`, waiting for the next scheduling cycle. Whatever wakes the
/// write (the pods, the scheduler's word) triggers a reconcile; the returned time is a
/// safety net.
fn first_write_deferred(
    job: &TrainingJob,
    gang: &Gang,
    world: &World,
    status: &TrainingJobStatus,
    now: &Time,
) -> Option<Duration> {
    if job.status.is_some()
        || status.phase != Phase::Queued
        || !gang.is_empty()
        || world.wait.is_some()
    {
        return None;
    }
    if world.admission_in_flight || world.scheduling {
        return Some(FIRST_WORD_GRACE);
    }
    let created = job.metadata.creation_timestamp.as_ref()?;
    let age = now.0.duration_since(created.0);
    let grace = SignedDuration::try_from(FIRST_WORD_GRACE).ok()?;
    (age < grace).then(|| {
        let left = (grace - age).as_secs().max(1);
        Duration::from_secs(u64::try_from(left).unwrap_or(1))
    })
}

/// Sets the Admitted condition for the job's standing (`status.bonus`) and placement;
/// returns its message.
fn admitted(
    status: &mut TrainingJobStatus,
    gang_size: usize,
    generation: Option<i64>,
    t: &Time,
) -> String {
    let nodes: BTreeSet<&str> = status.placement.iter().map(|p| p.node.as_str()).collect();
    let msg = format!(
        "Admitted: {gang_size} replica(s) on {} node(s){}.",
        nodes.len(),
        if status.bonus {
            "; it runs on borrowed (bonus) GPUs and may be preempted with a checkpoint \
             request when their owner needs them"
        } else {
            ""
        },
    );
    conditions::set(
        &mut status.conditions,
        ConditionType::Admitted,
        true,
        if status.bonus {
            Reason::AdmittedAsBonus
        } else {
            Reason::AdmittedWithinGuarantee
        },
        msg.clone(),
        generation,
        t,
    );
    msg
}

/// Whether the lifecycle has told a preempted gang's pods to stop (the acknowledgement came,
/// the pods exited, or the grace period ended): from then on its preemption is not withdrawn.
pub fn stop_decided(status: &TrainingJobStatus) -> bool {
    status.phase == Phase::Preempting
        && status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Preempting.as_str()
                && c.status == "True"
                && [
                    Reason::CheckpointSaved,
                    Reason::PodsExited,
                    Reason::CheckpointLost,
                    Reason::NotStarted,
                ]
                .iter()
                .any(|r| c.reason == r.as_str())
        })
}

/// The pods to delete: the present ones the state machine stops (`stop`). In
/// every phase, a pod whose graceful deletion is overdue on a node that is lost (NotReady,
/// unreachable or gone) is deleted with no grace: no kubelet will ever confirm it, and until it
/// is gone its name, GPUs and rank are blocked, so the gang could never restart. The pod's own
/// grace period has passed by then, as it would have for a healthy kubelet.
fn pod_deletions(gang: &Gang, world: &World, now: &Time, stop: Stop) -> Vec<PodDeletion> {
    gang.members()
        .iter()
        .filter_map(|m| {
            let force = match m.deleting_at {
                None if stop == Stop::All || (stop == Stop::Live && m.live()) => false,
                None => return None,
                Some(at) if at <= now.0 && on_lost_node(world, m) => true,
                Some(_) => return None,
            };
            Some(PodDeletion {
                pod: m.name.clone(),
                force,
            })
        })
        .collect()
}

fn on_lost_node(world: &World, m: &Member) -> bool {
    node_down(world, m).is_some()
}

/// The pod's node, when it is gone or not ready, as a failure message says it.
fn node_down(world: &World, m: &Member) -> Option<String> {
    let node = m.bound_node.as_deref()?;
    match world.node(node) {
        NodeState::Gone => Some(format!("node {node} is gone")),
        NodeState::Lost => Some(format!("node {node} is not ready")),
        NodeState::Up { .. } => None,
    }
}

/// The GPUs the job asks for, in total. Summed in milli-GPUs and divided once, so three
/// shares of 0.3 read 0.9, not 0.8999999999999999.
pub fn requested_gpus(job: &TrainingJob) -> f64 {
    let milli: u64 = job
        .spec
        .tasks
        .iter()
        .map(|t| {
            let per = match t.gpu_share {
                Some(s) => u64::try_from(s).unwrap_or(0),
                None => t
                    .pod_template()
                    .ok()
                    .and_then(|tpl| tpl.spec)
                    .and_then(|s| super::resources::pod_demand(&s).ok())
                    .map_or(0, |d| d.gpus * 1000),
            };
            per * u64::try_from(t.replicas()).unwrap_or(0)
        })
        .sum();
    milli as f64 / 1000.0
}

/// Why a running gang stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// The user's fault: counts as a retry.
    Replica { pod: String, reason: String },
    /// The platform's fault (node lost, GPU unhealthy, pod removed): retried without counting.
    Infrastructure { pod: String, reason: String },
    /// A `FailJob` rule of the job's `podFailurePolicy` matched: failed for good.
    Fatal { pod: String, reason: String },
    /// An `Ignore` rule matched: retried without counting, within the same budget as the
    /// platform's failures.
    Ignored { pod: String, reason: String },
}

/// Backoff before retry `n` (1-based): initial × 2^(n-1), at most max.
pub fn backoff(initial: i32, max: i32, n: i32) -> Duration {
    let initial = u64::try_from(initial.max(0)).unwrap_or(0);
    let max = u64::try_from(max.max(0)).unwrap_or(0);
    let shift = u32::try_from((n - 1).clamp(0, 30)).unwrap_or(30);
    Duration::from_secs(initial.saturating_mul(1u64 << shift).min(max))
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

/// Classifies a finished-badly pod.
fn pod_failure(m: &Member) -> Option<Failure> {
    if m.active || m.succeeded() {
        return None;
    }
    let status = m.pod.status.as_ref()?;
    let name = m.name.clone();
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
        return Some(Failure::Infrastructure {
            pod: name,
            reason: match c.message.as_deref() {
                Some(msg) if !msg.is_empty() => format!("pod disrupted ({why}): {msg}"),
                _ => format!("pod disrupted ({why})"),
            },
        });
    }
    if is_infrastructure_reason(&reason) {
        let detail = status.message.as_deref().unwrap_or_default();
        return Some(Failure::Infrastructure {
            pod: name,
            reason: if detail.is_empty() {
                format!("pod {reason}")
            } else {
                format!("pod {reason}: {detail}")
            },
        });
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
    Some(Failure::Replica {
        pod: name,
        reason: why,
    })
}

/// The first GPU under the pod that the node labeler reports unhealthy.
fn unhealthy_gpu(world: &World, m: &Member) -> Option<(u32, String)> {
    let p = m.placement.as_ref()?;
    let NodeState::Up { unhealthy_gpus } = world.node(&p.node) else {
        return None;
    };
    p.gpus
        .iter()
        .find(|g| unhealthy_gpus.contains(&g.0))
        .map(|g| (g.0, p.node.clone()))
}

/// A pod whose containers ended after its deletion was asked for (its deletion timestamp less
/// its grace period): the deletion stopped it. Only the containers' own `finishedAt` tells;
/// without it the failure stays the job's, as a pod that failed before its deletion.
fn stopped_by_deletion(m: &Member) -> bool {
    let Some(asked) = deletion_asked(m) else {
        return false;
    };
    containers_finished_at(m).is_some_and(|f| f >= asked)
}

/// A replica that failed on a GPU the labeler reports unhealthy failed because of the GPU
/// (an XID error kills the process), and one that failed on a node that is gone or not ready
/// went down with it: not the job's fault.
fn blame_infrastructure(world: &World, m: &Member, f: Failure) -> Failure {
    let Failure::Replica { pod: name, reason } = &f else {
        return f;
    };
    if let Some((gpu, node)) = unhealthy_gpu(world, m) {
        return Failure::Infrastructure {
            pod: name.clone(),
            reason: format!("{reason}, on GPU {gpu} of node {node}, which turned unhealthy"),
        };
    }
    match node_down(world, m) {
        Some(down) => Failure::Infrastructure {
            pod: name.clone(),
            reason: format!("{reason}; {down}"),
        },
        None => f,
    }
}

/// An infrastructure problem under a running pod: its node gone or NotReady. (A GPU turned
/// unhealthy under a running pod is a preemption with a checkpoint, decided by the core.)
fn infrastructure_failure(world: &World, gang: &Gang) -> Option<Failure> {
    gang.active().find_map(|m| {
        node_down(world, m)
            .or_else(|| reservation_lost(world, m))
            .map(|reason| Failure::Infrastructure {
                pod: m.name.clone(),
                reason,
            })
    })
}

/// A share released onto its GPU's reserved device whose reservation is gone, going or
/// replaced (kube-scheduler preempted it for another pod, or it was deleted by hand): the
/// device plugin may hand that GPU to another pod, so the share stops and runs again on a
/// GPU held anew, as a replica on a lost node does.
fn reservation_lost(world: &World, m: &Member) -> Option<String> {
    let why = reservations::lost(&m.pod, world.reservations.get(&m.name).map(|r| r.as_ref()))?;
    Some(format!(
        "{why}: the GPU it runs on is no longer held from the device plugin"
    ))
}

/// A pod the cluster's scheduler has not bound for longer than `deadline` (its
/// `PodScheduled` condition `False`, reason `Unschedulable`): the node kubetrain chose does not
/// take it after all (another pod took the room, a volume cannot be attached there, a device
/// plugin or DRA check failed). Returns the pod, the node it was pinned to, and the
/// scheduler's message.
///
/// A share pod waiting behind its reservation gate is not the scheduler's to bind yet; its
/// GPU's reservation pod is, and that one's refusal is the share's (`reservations`).
fn scheduler_refusal(
    pods: &[&Member],
    reservations: &BTreeMap<String, Arc<Pod>>,
    now: Timestamp,
    deadline: Duration,
) -> Option<(String, String, String)> {
    let deadline = SignedDuration::try_from(deadline).ok()?;
    pods.iter().find_map(|m| {
        if m.bound_node.is_some() {
            return None;
        }
        let waits = reservations::waits_for(&m.pod).is_some();
        let (since, message) = match reservations.get(&m.name).filter(|_| waits) {
            Some(r) => {
                let (since, message) = unschedulable(r)?;
                let why = format!(
                    "its GPU's reservation, pod {}/{}, cannot be bound: {message}",
                    r.namespace().unwrap_or_default(),
                    r.name_any()
                );
                (since, why)
            }
            None => unschedulable(&m.pod)?,
        };
        if now.duration_since(since.unwrap_or(now)) < deadline {
            return None;
        }
        Some((
            m.name.clone(),
            m.chosen_node.clone().unwrap_or_default(),
            message,
        ))
    })
}

/// Since when, if known, and why the scheduler keeps the pod unbound (its `PodScheduled`
/// condition `False`, reason `Unschedulable`).
fn unschedulable(pod: &Pod) -> Option<(Option<Timestamp>, String)> {
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
    Some((
        c.last_transition_time.as_ref().map(|t| t.0),
        c.message.clone().unwrap_or_default(),
    ))
}

/// How long a job stopped for a drain stays out of its queue after its pods are gone: two
/// of `kubectl drain`'s 5 s eviction retries.
const DRAIN_SETTLE_SECONDS: i64 = 10;

/// How long a replica has been done before `status.succeededReplicas` records it. The
/// replicas of a gang finish within seconds of each other and the job succeeds in one write;
/// recording each as it finished cost 1.6 status applies per gang of 8 (Setup C). A finished
/// pod is removed minutes after its node idles, not seconds.
const RECORD_SUCCESS_AFTER_SECONDS: i64 = 30;

/// When the pod finished, if its status says, as the Kubernetes Job controller reads it
/// (`getFinishedTime`): its last container to finish, init containers (sidecars) included;
/// else when it stopped being ready; else when it was deleted.
fn finished_at(m: &Member) -> Option<Timestamp> {
    let status = m.pod.status.as_ref()?;
    containers_finished_at(m)
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
        .or_else(|| deletion_asked(m))
}

/// When the last of the pod's init containers and containers that terminated finished.
fn containers_finished_at(m: &Member) -> Option<Timestamp> {
    container_states(m.pod.status.as_ref()?)
        .filter_map(|s| s.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max()
}

/// When the pod's deletion was asked for: its deletion timestamp, which is the end of its
/// grace period, less that period (as the Job controller's `getFinishedTime` takes it).
fn deletion_asked(m: &Member) -> Option<Timestamp> {
    let due = m.pod.metadata.deletion_timestamp.as_ref()?;
    let grace = m.pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    Some(due.0 - SignedDuration::from_secs(grace.max(0)))
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

/// A replica of a starting gang whose pod reports a problem instead of progress: the first
/// pod, in rank order, not running whose (init) container waits for another reason than
/// being created (`ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`, ...).
/// Returns the pod, the kubelet's reason and its message.
fn stalled_replica<'a>(present: &[&'a Member]) -> Option<(&'a Member, &'a str, &'a str)> {
    present
        .iter()
        .filter(|m| !matches!(m.phase.as_deref(), Some("Running" | "Succeeded")))
        .find_map(|m| {
            waiting(m)
                .find(|(reason, _)| !reason.is_empty() && !STARTING_REASONS.contains(reason))
                .map(|(reason, message)| (*m, reason, message))
        })
}

/// The (reason, message) of each of a pod's (init) containers that waits and says why.
fn waiting(m: &Member) -> impl Iterator<Item = (&str, &str)> {
    m.pod
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

/// Why a replica's pod is not running yet, from its containers' waiting states
/// (`ImagePullBackOff: Back-off pulling image "x"`), if they say.
fn not_running_because(m: &Member) -> Option<String> {
    waiting(m).next().map(|(reason, msg)| {
        if msg.is_empty() {
            reason.to_string()
        } else {
            format!("{reason}: {msg}")
        }
    })
}

/// `status.lastPreemption.reason` of a stop caused by `spec.suspend`.
const SUSPEND: &str = "Suspend";

/// How long a node the scheduler refused stays out of a job's placement.
const REFUSED_NODE_TTL: i64 = 600;

/// How long a job whose pods' claims are not ready waits before it is placed again.
const VOLUME_WAIT: i64 = 60;

/// Whether kube-scheduler's message says the pod's claims are missing or unbound, which no
/// node can mend (its VolumeBinding plugin's pre-filter, before any node is looked at).
fn volumes_not_ready(message: &str) -> bool {
    message.contains("unbound immediate PersistentVolumeClaims")
        || (message.contains("persistentvolumeclaim")
            && (message.contains("not found") || message.contains("is being deleted")))
}

/// The job's queue as `status.queue` has it, for messages.
fn queue_name(status: &TrainingJobStatus) -> String {
    status.queue.clone().unwrap_or_default()
}

/// Whether the rest of the step runs.
enum Flow {
    Continue,
    Done,
}

/// One reconcile's view of the job: what every phase function reads.
struct Step<'a> {
    job: &'a TrainingJob,
    gang: &'a Gang,
    world: &'a World,
    t: &'a Time,
    generation: Option<i64>,
    /// The pods not being deleted ([`Gang::present`]).
    present: &'a [&'a Member],
}

impl Step<'_> {
    /// The state machine: updates `status` and `fx` from the job, its pods and the world.
    fn step(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        // Only a job waiting in its queue has a place there; `queued` sets it.
        status.queue_position = None;

        // The queue and priority in effect, published for `kubectl get tj` (even when the job
        // is invalid for another reason). A finished job keeps those it ran with; one that
        // finished before status had them gets them once.
        // A running job whose queue or priority no longer resolves (its PriorityClass was
        // deleted) keeps those it was admitted with: the scheduler charges it by them.
        let holds_gpus = status.phase.holds_gpus();
        if !status.phase.is_finished() || status.queue.is_none() {
            status.queue = self
                .world
                .queue
                .clone()
                .or_else(|| status.queue.take().filter(|_| holds_gpus));
        }
        if !status.phase.is_finished() || status.priority.is_none() {
            status.priority = self
                .world
                .priority
                .or_else(|| status.priority.filter(|_| holds_gpus));
        }

        if status.phase.is_finished() {
            return self.finished(status, fx);
        }
        if let Flow::Done = self.validity(status, fx) {
            return;
        }
        self.enter_queue(status, fx);
        if let Flow::Done = self.suspension(status, fx) {
            return;
        }
        match status.phase {
            Phase::Queued => self.queued(status, fx),
            Phase::Starting | Phase::Running => self.running(status, fx),
            Phase::Preempting => self.preempting(status, fx),
            Phase::Retrying => self.retrying(status, fx),
            Phase::Pending | Phase::Suspended | Phase::Succeeded | Phase::Failed => {}
        }
    }

    /// Succeeded or Failed: stop what still runs; delete the job once its TTL has passed.
    fn finished(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if self.gang.active().next().is_some() {
            fx.stop = Stop::Live;
        }
        if let (Some(ttl), Some(done)) = (
            self.job.spec.ttl_seconds_after_finished,
            status.finished_at.as_ref(),
        ) {
            let expires = done.0 + SignedDuration::from_secs(i64::from(ttl));
            if self.t.0 >= expires {
                fx.event(
                    EventType::Normal,
                    EventReason::Expired,
                    format!("Deleted {ttl} s after it finished (ttlSecondsAfterFinished)."),
                );
                fx.delete_job = true;
            } else {
                fx.requeue(Duration::from_secs(
                    (expires.as_second() - self.t.0.as_second()).max(1) as u64,
                ));
            }
        }
    }

    /// Validity: what the schema cannot check. An invalid job that holds nothing waits in
    /// Pending; a running one keeps running (its spec change does not touch the pods).
    fn validity(&self, status: &mut TrainingJobStatus, fx: &mut Effects) -> Flow {
        let (t, generation) = (self.t, self.generation);
        match &self.world.validity {
            Err(invalid) => {
                let changed = conditions::set(
                    &mut status.conditions,
                    ConditionType::Valid,
                    false,
                    invalid.reason(),
                    invalid.to_string(),
                    generation,
                    t,
                );
                if changed {
                    // A job whose pods run on is not waiting: it stays charged where it was
                    // admitted, and only its next admission needs the fix.
                    let then = if self.present.is_empty() {
                        "The job waits until a change fixes it."
                    } else {
                        "The job runs on where it was admitted; it is admitted again (after a \
                         retry, a preemption or a suspension) only once a change fixes it."
                    };
                    fx.event_named(
                        EventType::Warning,
                        invalid.reason(),
                        format!("{invalid}. {then}"),
                    );
                }
                if self.present.is_empty() && matches!(status.phase, Phase::Pending | Phase::Queued)
                {
                    status.phase = Phase::Pending;
                    status.message = Some(invalid.to_string());
                    // Why it is not admitted is now this, not the wait it had in its queue.
                    if conditions::get(&status.conditions, ConditionType::Admitted).is_some() {
                        conditions::set(
                            &mut status.conditions,
                            ConditionType::Admitted,
                            false,
                            invalid.reason(),
                            invalid.to_string(),
                            generation,
                            t,
                        );
                    }
                }
                fx.requeue(Duration::from_secs(15));
                if self.present.is_empty() {
                    return Flow::Done;
                }
            }
            Ok(()) => {
                // Only a job that was invalid is "valid again": a new job's first `Valid=True`
                // is no news.
                let was_invalid = conditions::get(&status.conditions, ConditionType::Valid)
                    .is_some_and(|c| c.status == "False");
                conditions::set(
                    &mut status.conditions,
                    ConditionType::Valid,
                    true,
                    Reason::Valid,
                    "The job's references and templates are valid.",
                    generation,
                    t,
                );
                if was_invalid {
                    fx.event(
                        EventType::Normal,
                        EventReason::Valid,
                        "The job is valid again.",
                    );
                }
            }
        }
        Flow::Continue
    }

    /// Pending → Queued. The scheduler may admit a valid job before its first status write
    /// (its pods are here): it went through the queue all the same, and its `Admitted` Event,
    /// posted at admission, already names the queue. A `Queued` Event then would only repeat
    /// it, after it (`kubectl describe` listed `Admitted` before `Queued`), so it is posted
    /// only for a job that enters its queue to wait.
    fn enter_queue(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if status.phase == Phase::Pending
            && (conditions::is_true(&status.conditions, ConditionType::Valid)
                || !self.present.is_empty())
        {
            status.phase = Phase::Queued;
            if status.queued_at.is_none() {
                // A job valid from its creation has been in the queue since then: the
                // scheduler orders it by its creation until this write, and its first write
                // may wait for the scheduler (`first_write_deferred`).
                let created = self.job.metadata.creation_timestamp.as_ref();
                status.queued_at = Some(match created {
                    Some(c) if self.job.status.is_none() => c.clone(),
                    _ => self.t.clone(),
                });
            }
            status.message = Some(format!("Waiting in queue {}.", queue_name(status)));
            // A job created suspended goes on to Suspended in this same step: its Event
            // says that, not that it waits in line.
            if self.present.is_empty() && !self.job.spec.suspend {
                fx.event(
                    EventType::Normal,
                    EventReason::Queued,
                    format!("Entered queue {}.", queue_name(status)),
                );
            }
        }
    }

    /// Success: every replica of every deciding task (`requiredForCompletion`) succeeded:
    /// its pod did, or it is recorded as done (`status.succeededReplicas`).
    fn deciding_succeeded(&self, done: &[String]) -> bool {
        let job = self.job;
        let mut deciding = job
            .spec
            .tasks
            .iter()
            .filter(|task| task.required_for_completion())
            .flat_map(|task| {
                (0..task.replicas().max(1) as u32)
                    .map(|i| super::pods::pod_name(&job.name_any(), &task.name, i))
            })
            .peekable();
        deciding.peek().is_some()
            && deciding.all(|n| {
                done.contains(&n) || self.gang.present_named(&n).is_some_and(Member::succeeded)
            })
    }

    /// Suspension: stop the gang (checkpoint first, as for a preemption), keep the job
    /// queued. Resumption: back to Queued. A running job whose work is done when it is
    /// suspended succeeds instead (`running`): there is nothing left to checkpoint, and its
    /// finished pods keep their logs (as a Job's completion goes before its suspension).
    fn suspension(&self, status: &mut TrainingJobStatus, fx: &mut Effects) -> Flow {
        // What happened before the suspension was seen goes first: a job done succeeds, a
        // replica failed counts (or the job would run again, its failure forgotten).
        if self.job.spec.suspend
            && matches!(status.phase, Phase::Starting | Phase::Running)
            && (self.deciding_succeeded(&status.succeeded_replicas)
                || self.present.iter().any(|m| pod_failure(m).is_some()))
        {
            return Flow::Continue;
        }
        if self.job.spec.suspend && !matches!(status.phase, Phase::Preempting) {
            if self.present.is_empty() {
                if status.phase != Phase::Suspended {
                    status.phase = Phase::Suspended;
                    status.placement.clear();
                    // A backoff or drain settle in progress ends here: resumed, the job
                    // starts a new wait, and a stale time would cut a later drain's settle.
                    status.retry_at = None;
                    status.message = Some("Suspended: spec.suspend is true.".into());
                    fx.event(
                        EventType::Normal,
                        EventReason::Suspended,
                        "Suspended; set spec.suspend to false to queue it again.",
                    );
                }
                return Flow::Done;
            }
            status.phase = Phase::Preempting;
            conditions::set(
                &mut status.conditions,
                ConditionType::Preempting,
                true,
                Reason::Suspended,
                "Asked to checkpoint because the job was suspended.",
                self.generation,
                self.t,
            );
            // `stop_preempted` words the message only when it sets the condition itself
            let grace = self.job.spec.checkpoint.grace_period_seconds.max(0);
            status.message = Some(format!("Suspending: asked to checkpoint within {grace} s."));
            fx.stop = Stop::None;
        }
        if status.phase == Phase::Suspended && !self.job.spec.suspend {
            status.phase = Phase::Queued;
            status.message = Some(format!("Resumed; waiting in queue {}.", queue_name(status)));
            fx.event(
                EventType::Normal,
                EventReason::Resumed,
                "spec.suspend is false: back in the queue.",
            );
        }
        Flow::Continue
    }

    /// Queued: publish why the job waits; once the scheduler has created the whole gang,
    /// Running. A gang left half-created is torn down.
    fn queued(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (t, generation) = (self.t, self.generation);
        let present = self.present;
        if present.is_empty() {
            if !self.gang.is_empty() {
                // Old pods still terminating: the scheduler counts them; wait.
                fx.requeue(Duration::from_secs(1));
                return;
            }
            if self.world.admission_in_flight {
                // Admitted, its pods being created: their arrival writes the admission.
                // Rewriting the wait that ended ("waiting for the next cycle") now would be
                // a status write superseded a moment later.
                status.queue_position = self.job.status.as_ref().and_then(|s| s.queue_position);
                fx.requeue(Duration::from_secs(1));
                return;
            }
            let wait = self.world.wait.clone();
            status.queue_position = wait
                .as_ref()
                .and_then(|(_, p)| *p)
                .map(|p| i32::try_from(p).unwrap_or(i32::MAX));
            // A wait no cycle ends (the job or the cluster must change) is a Warning, once,
            // as an invalid spec is: `kubectl get events --field-selector type=Warning` and
            // alerts on them see it, not only a job that waits long.
            let hopeless = wait
                .as_ref()
                .map(|(r, _)| r.code())
                .filter(|c| c.is_stuck())
                .filter(|c| {
                    conditions::get(&status.conditions, ConditionType::Admitted)
                        .is_none_or(|a| a.reason != c.as_str())
                });
            let (code, msg) = match wait {
                Some((r, _)) => (r.code().to_string(), r.to_string()),
                None => (
                    Reason::Waiting.as_str().to_string(),
                    format!(
                        "Waiting in queue {} for the next scheduling cycle.",
                        queue_name(status)
                    ),
                ),
            };
            conditions::set(
                &mut status.conditions,
                ConditionType::Admitted,
                false,
                &code,
                msg.clone(),
                generation,
                t,
            );
            if let Some(code) = hopeless {
                fx.event_named(EventType::Warning, code.as_str(), msg.clone());
            }
            status.message = Some(msg);
            // The scheduler asks for a reconcile whenever the reason it waits changes;
            // this is only a safety net.
            fx.requeue(Duration::from_secs(30));
            return;
        }
        if self.gang.checkpoint_requested() {
            status.phase = Phase::Preempting;
            return self.preempting(status, fx);
        }
        let expected = expected_pod_names(self.job);
        let gang_size = expected.len();
        if self.gang.first_missing(&expected).is_some() {
            let newest = self.gang.last_created();
            let age = newest.map_or(0, |n| t.0.as_second() - n.as_second());
            if self.world.admission_in_flight
                || age < self.world.settings.incomplete_gang_timeout.as_secs() as i64
            {
                fx.requeue(Duration::from_secs(1));
                return;
            }
            // A gang left half-created (the operator stopped mid-admission): tear it
            // down and queue again; never run part of a gang.
            fx.stop = Stop::All;
            status.infrastructure_retries += 1;
            fx.event(
                EventType::Warning,
                EventReason::IncompleteGang,
                format!(
                    "Found {} of {gang_size} pods with no admission in progress; removed them \
                     and queued the job again.",
                    present.len()
                ),
            );
            return;
        }
        status.phase = Phase::Starting;
        status.admitted_at = Some(t.clone());
        status.started_at = None;
        status.retry_at = None;
        status.succeeded_replicas.clear();
        status.bonus = self.gang.bonus();
        status.placement = self.gang.recorded_placement();
        let msg = admitted(status, gang_size, generation, t);
        // In the same write as the admission: a retry's `ReplicaFailed` (or a preemption's
        // `Preempted`) would otherwise read as this run's.
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::Starting,
            format!("Waiting for the {gang_size} replica(s) to start."),
            generation,
            t,
        );
        status.message = Some(msg);
        fx.requeue(Duration::from_secs(2));
    }

    /// Starting and Running: to Preempting when asked to checkpoint, to Succeeded when the
    /// deciding tasks succeeded, to Retrying (or Failed) when a replica or its node failed or
    /// the cluster's scheduler refused a pod; from Starting to Running, recording the start,
    /// once every replica runs.
    fn running(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        let present = self.present;
        let was_bonus = status.bonus;
        status.bonus = self.gang.bonus();
        if status.bonus != was_bonus {
            // Promoted into its team's guarantee or demoted out of it: the Admitted condition
            // says which (it stays True, so its transition time stays), and an Event says
            // when: whether a job may be reclaimed is what an admin asks of it.
            admitted(status, expected_pod_names(job).len(), generation, t);
            let (reason, note) = if status.bonus {
                (
                    EventReason::Demoted,
                    "Now on borrowed (bonus) GPUs: its team's guarantee no longer covers it (the \
                     guarantee was lowered, or a job of higher priority took it); it may be \
                     preempted with a checkpoint request when their owner needs them.",
                )
            } else {
                (
                    EventReason::Promoted,
                    "Now within its team's guarantee: it is no longer reclaimed for another \
                     team.",
                )
            };
            fx.event(EventType::Normal, reason, note.to_string());
        }
        if self.gang.checkpoint_requested() {
            // A replica that failed before the request failed on its own: the scheduler
            // asked from a cache that did not show it yet. The crash is the job's, counted,
            // not hidden as a preemption.
            if let Some(f) = self.failed_before_request() {
                return self.fail(status, fx, f);
            }
            status.phase = Phase::Preempting;
            return self.preempting(status, fx);
        }
        let expected = expected_pod_names(job);
        let gang_size = expected.len();
        // Finished pods someone is deleting (`kubectl delete pod`, the pod garbage collector)
        // still say how their replica ended, as a Job controller counts them: a failure is
        // the job's, a success is done (recorded at once, its pod is going).
        let finished_leaving: Vec<&Member> = self
            .gang
            .members()
            .iter()
            .filter(|m| !m.present() && matches!(m.phase.as_deref(), Some("Succeeded" | "Failed")))
            .collect();
        // The replicas done: those recorded, and those whose pods say so. A replica is
        // recorded once it has been done a while (`RECORD_SUCCESS_AFTER_SECONDS`).
        let mut done = status.succeeded_replicas.clone();
        for m in present
            .iter()
            .chain(&finished_leaving)
            .filter(|m| m.succeeded())
        {
            if !done.contains(&m.name) {
                done.push(m.name.clone());
            }
            let settled = !m.present()
                || finished_at(m).is_none_or(|f| {
                    t.0 >= f + SignedDuration::from_secs(RECORD_SUCCESS_AFTER_SECONDS)
                });
            if settled && !status.succeeded_replicas.contains(&m.name) {
                status.succeeded_replicas.push(m.name.clone());
                status.succeeded_replicas.sort();
            }
        }
        if self.deciding_succeeded(&done) {
            status.phase = Phase::Succeeded;
            status.finished_at = Some(t.clone());
            status.message = Some("All replicas succeeded.".into());
            conditions::set(
                &mut status.conditions,
                ConditionType::Succeeded,
                true,
                Reason::Succeeded,
                "All replicas succeeded.",
                generation,
                t,
            );
            conditions::set(
                &mut status.conditions,
                ConditionType::Running,
                false,
                Reason::Succeeded,
                "The job finished.",
                generation,
                t,
            );
            fx.event(
                EventType::Normal,
                EventReason::Succeeded,
                "All replicas succeeded.",
            );
            fx.stop = Stop::Live;
            return;
        }
        // A replica recorded as done is not missing when its finished pod is removed.
        let awaited: Vec<String> = expected
            .iter()
            .filter(|n| !done.contains(n))
            .cloned()
            .collect();
        let missing = self.gang.first_missing(&awaited);
        // Pods of another shape of the job: its tasks changed after they were created (the
        // CRD refuses that while the job runs, so only an admission racing the change gets
        // here). Not the job's fault; the next attempt runs the new shape.
        let reshaped = present
            .iter()
            .find(|m| !expected.contains(&m.name) || m.gang_size.is_some_and(|g| g != gang_size))
            .map(|m| Failure::Infrastructure {
                pod: m.name.clone(),
                reason: format!(
                    "the job's tasks changed after its pods were created ({gang_size} \
                     replica(s) now)"
                ),
            });
        // With a `podFailurePolicy`, a replica whose pod is being deleted but still runs is
        // judged once it has terminated, as the Job controller does: its rules may look at
        // how it ended (a `DisruptionTarget` condition, an exit code). Without one, a pod on
        // its way out is a replica lost, at once.
        let terminating = missing.filter(|n| {
            self.job.spec.pod_failure_policy.is_some()
                && self
                    .gang
                    .members()
                    .iter()
                    .any(|m| m.name == **n && !m.present() && m.active)
        });
        // Every replica that failed is judged: a `FailJob` rule's match decides over the
        // others, whichever pod is listed first (as the Job controller's `getFailJobMessage`).
        let failed: Vec<Failure> = present
            .iter()
            .chain(&finished_leaving)
            .filter_map(|m| self.failure_of(m))
            .collect();
        let failure = reshaped
            .or_else(|| {
                let fatal = failed.iter().find(|f| matches!(f, Failure::Fatal { .. }));
                fatal.or(failed.first()).cloned()
            })
            .or_else(|| {
                missing
                    .filter(|_| terminating.is_none())
                    .map(|m| Failure::Infrastructure {
                        pod: m.clone(),
                        reason: "the pod was removed".into(),
                    })
            })
            .or_else(|| infrastructure_failure(self.world, self.gang));
        if let Some(f) = failure {
            return self.fail(status, fx, f);
        }
        if terminating.is_some() {
            fx.requeue(Duration::from_secs(2));
        }
        if let Some(refusal) = scheduler_refusal(
            present,
            &self.world.reservations,
            t.0,
            self.world.settings.unschedulable_timeout,
        ) {
            return self.roll_back(status, fx, refusal);
        }
        // A gang that has not started has nothing to lose: a fixed template (an image name,
        // say) applies now rather than after the start timeout has cost a retry.
        if status.started_at.is_none()
            && let Some((pod, task)) = self.made_from_an_old_template()
        {
            return self.restart_with_new_template(status, fx, pod, task);
        }
        // What the replicas did before the deadline was seen goes first (above): a success
        // is one, a failure is retried as any other.
        let deadline = self.deadline(status);
        if let Some((limit, due)) = deadline
            && t.0 >= due
        {
            let ran = limit + (t.0.as_second() - due.as_second());
            let msg = format!(
                "Stopped {ran} s after its admission, past spec.activeDeadlineSeconds \
                 ({limit} s); not retried."
            );
            return self.fail_for_good(status, fx, Reason::DeadlineExceeded, msg);
        }
        // A replica recorded as done has run, even once its pod is gone.
        let all_running = expected.iter().all(|n| {
            done.contains(n)
                || self
                    .gang
                    .present_named(n)
                    .and_then(|m| m.phase.as_deref())
                    .is_some_and(|ph| ph == "Running" || ph == "Succeeded")
        });
        if !all_running
            && status.started_at.is_none()
            && let (Some(limit), Some(admitted)) = (
                self.world.settings.start_timeout,
                status.admitted_at.as_ref(),
            )
            && t.0.as_second() - admitted.0.as_second() >= limit.as_secs() as i64
            && let Some(m) = present
                .iter()
                .find(|m| !matches!(m.phase.as_deref(), Some("Running" | "Succeeded")))
        {
            let waiting = not_running_because(m);
            let reason = format!(
                "not running {} s after admission{}",
                limit.as_secs(),
                waiting.map_or(String::new(), |w| format!(" ({w})"))
            );
            // A gang that never started (an image that cannot be pulled, say) goes to the back
            // of its queue, as Kueue requeues a workload evicted by its PodsReady timeout: it
            // should not hold the head of the line again. A failure after it ran keeps the
            // job's place, as a preemption does.
            status.queued_at = Some(t.clone());
            return self.fail(
                status,
                fx,
                Failure::Replica {
                    pod: m.name.clone(),
                    reason,
                },
            );
        }
        if !all_running && status.started_at.is_none() {
            self.starting(status, gang_size);
        }
        if all_running && status.started_at.is_none() {
            status.phase = Phase::Running;
            status.started_at = Some(t.clone());
            let msg = format!("All {gang_size} replica(s) are running.");
            conditions::set(
                &mut status.conditions,
                ConditionType::Running,
                true,
                Reason::AllReplicasRunning,
                msg.clone(),
                generation,
                t,
            );
            status.message = Some(msg.clone());
            fx.event(EventType::Normal, EventReason::Running, msg);
        }
        fx.requeue(Duration::from_secs(if all_running { 30 } else { 2 }));
        if let Some((_, due)) = deadline {
            fx.requeue(Duration::from_secs(
                (due.as_second() - t.0.as_second()).max(1) as u64,
            ));
        }
    }

    /// Starting: `Running=False` (and the status message) says which replica holds the start
    /// when its pod reports a problem (reason `ReplicaNotStarting`), and goes back to
    /// `Starting` when none does. A gang that starts as it should keeps the condition of its
    /// admission: no write.
    fn starting(&self, status: &mut TrainingJobStatus, gang_size: usize) {
        let was_stalled = conditions::get(&status.conditions, ConditionType::Running)
            .is_some_and(|c| c.reason == Reason::ReplicaNotStarting.as_str());
        let (reason, msg) = match stalled_replica(self.present) {
            Some((m, why, detail)) => {
                let timeout = self
                    .world
                    .settings
                    .start_timeout
                    .map_or_else(String::new, |limit| {
                        format!(
                            " The gang is stopped and retried if it does not all run within {} \
                             s of its admission.",
                            limit.as_secs()
                        )
                    });
                let detail = detail.trim().trim_end_matches('.');
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                };
                (
                    Reason::ReplicaNotStarting,
                    format!("Replica {} is not running: {why}{detail}.{timeout}", m.name),
                )
            }
            None => (
                Reason::Starting,
                format!("Waiting for the {gang_size} replica(s) to start."),
            ),
        };
        if was_stalled || reason == Reason::ReplicaNotStarting {
            status.message = Some(msg.clone());
        }
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            reason,
            msg,
            self.generation,
            self.t,
        );
    }

    /// The job's `activeDeadlineSeconds` and when it falls: counted from the current
    /// admission, so a job back from its queue (a retry, a preemption, a suspension) has the
    /// whole time again, and time spent waiting never counts.
    fn deadline(&self, status: &TrainingJobStatus) -> Option<(i64, Timestamp)> {
        let limit = self.job.spec.active_deadline_seconds?;
        let admitted = status.admitted_at.as_ref()?;
        // A deadline beyond the last representable time is none.
        let due = admitted
            .0
            .checked_add(SignedDuration::from_secs(limit))
            .ok()?;
        Some((limit, due))
    }

    /// The first replica whose pod failed before the gang was asked to checkpoint, as the
    /// failure it is.
    fn failed_before_request(&self) -> Option<Failure> {
        let asked = self.gang.checkpoint_requested_at()?;
        self.present.iter().find_map(|m| {
            let f = self.failure_of(m)?;
            (finished_at(m)? < asked).then_some(f)
        })
    }

    /// A failed pod's failure: as the first rule of the job's `podFailurePolicy` that
    /// matches it says, else as kubetrain judges it (its node or GPU blamed where they
    /// failed). A rule decides over kubetrain's judgement: the user knows the exit codes.
    fn failure_of(&self, m: &Member) -> Option<Failure> {
        let f = pod_failure(m)?;
        let rule = self
            .job
            .spec
            .pod_failure_policy
            .as_ref()
            .zip(m.pod.status.as_ref())
            .and_then(|(p, s)| policy::first_match(p, s));
        let Some(rule) = rule else {
            return Some(match blame_infrastructure(self.world, m, f) {
                // Its containers ended once its deletion was asked for (SIGTERM): whoever
                // deleted it stopped it, not the job (with a policy it is judged only then).
                Failure::Replica { pod, reason } if stopped_by_deletion(m) => {
                    Failure::Infrastructure {
                        pod,
                        reason: format!("{reason} once its pod was being deleted"),
                    }
                }
                other => other,
            });
        };
        let (pod, reason) = (m.name.clone(), rule.describe());
        Some(match rule.action {
            PodFailurePolicyAction::FailJob => Failure::Fatal { pod, reason },
            PodFailurePolicyAction::Ignore => Failure::Ignored { pod, reason },
            PodFailurePolicyAction::Count => Failure::Replica { pod, reason },
        })
    }

    /// A running gang stopped: retry (counted or not) or fail for good.
    fn fail(&self, status: &mut TrainingJobStatus, fx: &mut Effects, f: Failure) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        fx.stop = Stop::All;
        let (pod, reason, uncounted) = match f {
            Failure::Replica { pod, reason } => (pod, reason, None),
            Failure::Infrastructure { pod, reason } => (
                pod,
                reason,
                Some((
                    Reason::InfrastructureFailure,
                    EventReason::InfrastructureFailure,
                )),
            ),
            Failure::Ignored { pod, reason } => (
                pod,
                reason,
                Some((Reason::FailureIgnored, EventReason::FailureIgnored)),
            ),
            Failure::Fatal { pod, reason } => {
                let msg = format!("Replica {pod} failed: {reason}; not retried.");
                return self.fail_for_good(status, fx, Reason::PodFailurePolicy, msg);
            }
        };
        let budget = self.world.settings.max_infrastructure_retries;
        if let Some((code, event)) = uncounted
            && status.infrastructure_retries < budget
        {
            status.infrastructure_retries += 1;
            status.phase = Phase::Retrying;
            status.retry_at = Some(t.clone());
            let msg = if code == Reason::FailureIgnored {
                format!("Replica {pod} failed: {reason}. Restarting without counting a retry.")
            } else {
                format!(
                    "Replica {pod} stopped: {reason}. Not the job's fault: restarting without \
                     counting a retry."
                )
            };
            conditions::set(
                &mut status.conditions,
                ConditionType::Running,
                false,
                code,
                msg.clone(),
                generation,
                t,
            );
            status.message = Some(msg.clone());
            fx.event_nth(
                EventType::Warning,
                event,
                status.infrastructure_retries,
                msg,
            );
            return;
        }
        // A failure that would not count, past the budget of those, counts: say so.
        let reason = match uncounted {
            Some(_) => format!(
                "{reason} (judged as the job's own failure: its {budget} restarts that do not \
                 count are used up)"
            ),
            None => reason,
        };
        if status.retries < job.spec.max_retries {
            status.retries += 1;
            let wait = backoff(
                job.spec.backoff.initial_seconds,
                job.spec.backoff.max_seconds,
                status.retries,
            );
            // The backoff runs from when the replica failed (its containers' finishedAt), not
            // from when the operator saw it (after a restart, say), and never into the past.
            let failed_at = self
                .gang
                .members()
                .iter()
                .find(|m| m.name == pod)
                .and_then(finished_at)
                .filter(|f| *f < t.0)
                .unwrap_or(t.0);
            let due = (failed_at + SignedDuration::from_secs(wait.as_secs() as i64)).max(t.0);
            let left = due.as_second() - t.0.as_second();
            status.phase = Phase::Retrying;
            status.retry_at = Some(Time(due));
            let msg = format!(
                "Replica {pod} failed: {reason}. Retry {} of {} in {left} s.",
                status.retries, job.spec.max_retries,
            );
            conditions::set(
                &mut status.conditions,
                ConditionType::Running,
                false,
                Reason::ReplicaFailed,
                msg.clone(),
                generation,
                t,
            );
            status.message = Some(msg.clone());
            fx.event_nth(
                EventType::Warning,
                EventReason::ReplicaFailed,
                status.retries,
                msg,
            );
            fx.requeue(wait.max(Duration::from_secs(1)));
        } else {
            let msg = format!(
                "Replica {pod} failed: {reason}. No retries left ({} of {} used).",
                status.retries, job.spec.max_retries
            );
            self.fail_for_good(status, fx, Reason::RetriesExhausted, msg);
        }
    }

    /// A job that holds no admission (back in its queue, suspended, waiting out a backoff,
    /// finished) never says `Admitted=True`: whatever way it left its admission, the same
    /// write says `Admitted=False` with why it stopped (its `Running=False` reason and
    /// message), and `queued` words the wait itself once the scheduler has spoken. A
    /// finished job holds no quota, and a condition saying otherwise misleads whoever counts
    /// admitted jobs (Kueue's finished Workloads keep `QuotaReserved=True`, which its
    /// maintainers call confusing, kubernetes-sigs/kueue#7480).
    /// Nor does it say it runs on borrowed GPUs (`status.bonus`, the BONUS column): it runs
    /// on none (an acceptance run read `Failed ... BONUS true`).
    fn admission_ended(&self, status: &mut TrainingJobStatus) {
        if !matches!(
            status.phase,
            Phase::Queued | Phase::Retrying | Phase::Suspended | Phase::Succeeded | Phase::Failed
        ) {
            return;
        }
        status.bonus = false;
        if !conditions::is_true(&status.conditions, ConditionType::Admitted) {
            return;
        }
        let (reason, msg) = conditions::get(&status.conditions, ConditionType::Running)
            .filter(|c| c.status == "False")
            .map_or_else(
                || {
                    (
                        Reason::Waiting.as_str().to_string(),
                        status.message.clone().unwrap_or_default(),
                    )
                },
                |c| (c.reason.clone(), c.message.clone()),
            );
        conditions::set(
            &mut status.conditions,
            ConditionType::Admitted,
            false,
            &reason,
            msg,
            self.generation,
            self.t,
        );
    }

    /// Failed, for good: no retries left (`RetriesExhausted`), a `FailJob` rule matched
    /// (`PodFailurePolicy`), both after a replica failed; or past the job's deadline
    /// (`DeadlineExceeded`, which is also why it stopped running).
    fn fail_for_good(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        reason: Reason,
        msg: String,
    ) {
        let (t, generation) = (self.t, self.generation);
        status.phase = Phase::Failed;
        status.finished_at = Some(t.clone());
        status.retry_at = None;
        conditions::set(
            &mut status.conditions,
            ConditionType::Failed,
            true,
            reason,
            msg.clone(),
            generation,
            t,
        );
        let stopped = match reason {
            Reason::RetriesExhausted => Reason::ReplicaFailed,
            other => other,
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            stopped,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event(EventType::Warning, EventReason::Failed, msg);
        // Nothing runs again: the replicas still running stop, the one that failed
        // stays for its logs.
        fx.stop = Stop::Live;
    }

    /// The scheduler would not bind the gang where kubetrain placed it: roll the whole
    /// admission back and re-plan without that node. Not a retry and not the job's fault.
    fn roll_back(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        (pod, node, message): (String, String, String),
    ) {
        let t = self.t;
        status
            .refused_nodes
            .retain(|r| r.node != node && r.until.0 > t.0);
        let msg = if volumes_not_ready(&message) {
            // No node would do until the claim binds: refusing nodes one by one would say
            // each was at fault. The job waits a while instead, its GPUs free meanwhile.
            status.retry_at = Some(Time(t.0 + SignedDuration::from_secs(VOLUME_WAIT)));
            format!(
                "The scheduler did not bind pod {pod}: {message}. Its volumes are not ready on \
                 any node (a PersistentVolumeClaim that does not exist or is not bound): the \
                 admission is rolled back and the job placed again in {VOLUME_WAIT} s; this is \
                 not a retry."
            )
        } else {
            status.retry_at = Some(t.clone());
            status.refused_nodes.push(RefusedNode {
                node: node.clone(),
                until: Time(t.0 + SignedDuration::from_secs(REFUSED_NODE_TTL)),
                message: message.clone(),
            });
            format!(
                "The scheduler did not bind pod {pod} to node {node}: {message}. The admission \
                 is rolled back and the job placed again without that node for {} min; this is \
                 not a retry.",
                REFUSED_NODE_TTL / 60
            )
        };
        self.stop_uncounted(
            status,
            fx,
            (Reason::SchedulerRejected, EventReason::SchedulerRejected),
            EventType::Warning,
            msg,
        );
    }

    /// Stops the gang for a cause that is not the job's and sends it back to its queue through
    /// `Retrying` (at `status.retryAt`, which the caller sets), counting no retry: the
    /// `Running=False` reason, the message and an Event say why.
    fn stop_uncounted(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        (reason, event): (Reason, EventReason),
        kind: EventType,
        msg: String,
    ) {
        fx.stop = Stop::All;
        status.phase = Phase::Retrying;
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            reason,
            msg.clone(),
            self.generation,
            self.t,
        );
        status.message = Some(msg.clone());
        fx.event(kind, event, msg);
    }

    /// A present pod made from another template than its task's now, and the task: its
    /// digest (`kubetrain.io/template-digest`) differs from the spec's. Pods without the
    /// annotation never differ.
    fn made_from_an_old_template(&self) -> Option<(String, String)> {
        if self.present.iter().all(|m| m.template_digest.is_none()) {
            return None;
        }
        // Each task's digest once, not once per replica: a gang may have thousands.
        let digests = super::pods::template_digests(self.job);
        self.present.iter().find_map(|m| {
            let digest = m.template_digest.as_deref()?;
            let task = &m.placement.as_ref()?.task;
            (digests.get(task.as_str())? != digest).then(|| (m.name.clone(), task.clone()))
        })
    }

    /// Stops a gang that has not started because its template changed, and places it again
    /// at once, in its place in the queue; no retry is counted.
    fn restart_with_new_template(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        pod: String,
        task: String,
    ) {
        status.retry_at = Some(self.t.clone());
        let msg = format!(
            "The pod template of task {task} changed before every replica ran (pod {pod} was \
             made from the old one): the gang is stopped and placed again with the new \
             template; this is not a retry."
        );
        self.stop_uncounted(
            status,
            fx,
            (Reason::TemplateChanged, EventReason::TemplateChanged),
            EventType::Normal,
            msg,
        );
    }

    /// Retrying: stop what is left of the gang, wait out the backoff, back to Queued.
    fn retrying(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let t = self.t;
        if !self.present.is_empty() {
            fx.stop = Stop::All;
        }
        if !self.gang.is_empty() {
            fx.requeue(Duration::from_secs(1));
            return;
        }
        // `maxRetries` may change while the job waits: lowered below the retries already
        // used, the job does not run again (Volcano's restarting state does the same).
        if status.retries > self.job.spec.max_retries {
            let msg = format!(
                "No retries left: {} used, and maxRetries is now {}.",
                status.retries, self.job.spec.max_retries
            );
            self.fail_for_good(status, fx, Reason::RetriesExhausted, msg);
            return;
        }
        let due = status.retry_at.as_ref().is_none_or(|r| t.0 >= r.0);
        if due {
            // kube-scheduler refusing the chosen node is not the job's failure: it is placed
            // again, and counts no retry.
            let why = conditions::get(&status.conditions, ConditionType::Running)
                .map(|c| c.reason.as_str())
                .unwrap_or_default();
            let rejected = why == Reason::SchedulerRejected.as_str();
            let changed = why == Reason::TemplateChanged.as_str();
            status.phase = Phase::Queued;
            status.retry_at = None;
            status.placement.clear();
            status.started_at = None;
            let (message, note) = if changed {
                (
                    format!(
                        "Back in queue {} to start again with the changed template (no retry \
                         counted).",
                        queue_name(status)
                    ),
                    "Back in the queue to start again with the changed template.",
                )
            } else if rejected {
                (
                    format!(
                        "Back in queue {} to be placed on another node: kube-scheduler refused \
                         the one chosen (no retry counted).",
                        queue_name(status)
                    ),
                    "Back in the queue to be placed again after kube-scheduler refused a node.",
                )
            } else {
                (
                    format!(
                        "Back in queue {} after a failure (retry {} of {}).",
                        queue_name(status),
                        status.retries,
                        self.job.spec.max_retries
                    ),
                    "Backoff over: back in the queue.",
                )
            };
            status.message = Some(message);
            fx.event(EventType::Normal, EventReason::Requeued, note);
        } else if let Some(r) = &status.retry_at {
            fx.requeue(Duration::from_secs(
                (r.0.as_second() - t.0.as_second()).max(1) as u64,
            ));
        }
    }

    /// Preempting: wait for the checkpoint acknowledgement, the pods' own exit, or the grace
    /// period; then delete the pods; once they are gone, back to Queued keeping the job's
    /// place (or Suspended).
    fn preempting(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        // A suspension is a preemption nobody else asks for: request the checkpoint here.
        if self.job.spec.suspend && self.gang.to_ask_checkpoint().next().is_some() {
            fx.request_checkpoint = true;
        }
        if self.present.is_empty() {
            if !self.gang.is_empty() && !self.job.spec.suspend {
                // Pods still terminating hold their GPUs: the job is back in its queue (and
                // the preemption counted) once they are gone, as `Requeued` says. A
                // suspension is told at once, as the Job controller does; `queued` waits for
                // the pods if the job is resumed before they are gone.
                fx.requeue(Duration::from_secs(1));
                return;
            }
            self.requeue_preempted(status, fx);
        } else if !self.job.spec.suspend && !self.gang.checkpoint_requested() {
            self.preemption_withdrawn(status, fx);
        } else {
            self.stop_preempted(status, fx);
        }
    }

    /// Preempting with its pods present and no request on them: the scheduler withdrew it
    /// (the job it made room for no longer waits). Unless the pods were already told to stop,
    /// the job runs on, back to Running with its placement and counters as they were.
    fn preemption_withdrawn(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if stop_decided(status) {
            fx.stop = Stop::All;
            fx.requeue(Duration::from_secs(1));
            return;
        }
        status.phase = if status.started_at.is_some() {
            Phase::Running
        } else {
            Phase::Starting
        };
        let msg = "The checkpoint request was withdrawn: the job it made room for no longer \
                   waits. The job runs on.";
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            false,
            Reason::PreemptionCancelled,
            msg,
            self.generation,
            self.t,
        );
        status.message = Some(msg.into());
        fx.requeue(Duration::from_secs(2));
    }

    /// Preempting with its pods gone: back to Queued (or Suspended), after a drain's settle.
    fn requeue_preempted(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        // After a drain, the new run's pods take the old names; `kubectl drain` retries its
        // eviction by name every 5 s, so it must see the old pod gone before a new one of
        // that name appears, or it evicts the new one (or waits on its budget) instead.
        let drained = status
            .last_preemption
            .as_ref()
            .is_some_and(|r| r.reason.as_deref() == Some("Drain"));
        if drained && !job.spec.suspend {
            let settled = status
                .retry_at
                .get_or_insert_with(|| Time(t.0 + SignedDuration::from_secs(DRAIN_SETTLE_SECONDS)))
                .0;
            if t.0 < settled {
                fx.requeue(Duration::from_secs(
                    (settled.as_second() - t.0.as_second()).max(1) as u64,
                ));
                return;
            }
            status.retry_at = None;
        }
        status.phase = if job.spec.suspend {
            Phase::Suspended
        } else {
            Phase::Queued
        };
        // A stop the owner's suspension caused is no preemption, even when the owner resumed
        // the job before it was done.
        let suspension = job.spec.suspend
            || status
                .last_preemption
                .as_ref()
                .is_some_and(|r| r.reason.as_deref() == Some(SUSPEND));
        if !suspension {
            status.preemptions += 1;
        }
        status.placement.clear();
        status.bonus = false;
        status.started_at = None;
        status.admitted_at = None;
        let lost = status
            .last_preemption
            .as_ref()
            .filter(|r| r.outcome == PreemptionOutcome::CheckpointLost);
        let outcome = status.last_preemption.as_ref().map(|r| r.outcome);
        let msg = match (job.spec.suspend, lost) {
            _ if suspension && !job.spec.suspend => format!(
                "Resumed while it stopped for its suspension; back in queue {}, keeping its \
                 place in line.",
                queue_name(status)
            ),
            // Nothing was saved where nothing had run: say how it ended.
            (true, None) if outcome == Some(PreemptionOutcome::NotStarted) => {
                "Suspended before every replica ran: nothing to checkpoint.".to_string()
            }
            (true, None) if outcome == Some(PreemptionOutcome::PodsExited) => {
                "Suspended: its replicas exited on their own.".to_string()
            }
            (true, None) => "Suspended after its checkpoint.".to_string(),
            (true, Some(r)) => format!(
                "Suspended without a checkpoint (about {} GPU-seconds of work lost).",
                r.lost_gpu_seconds
            ),
            (false, None) => format!(
                "Preempted and back in queue {}, keeping its place in line.",
                queue_name(status)
            ),
            (false, Some(r)) => format!(
                "Preempted without a checkpoint (about {} GPU-seconds of work lost) and back in \
                 queue {}, keeping its place in line.",
                r.lost_gpu_seconds,
                queue_name(status)
            ),
        };
        let kind = if lost.is_some() {
            EventType::Warning
        } else {
            EventType::Normal
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            false,
            Reason::Requeued,
            msg.clone(),
            generation,
            t,
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::Preempted,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        let event = if job.spec.suspend {
            EventReason::Suspended
        } else if suspension {
            EventReason::Resumed
        } else {
            EventReason::Requeued
        };
        fx.event_nth(kind, event, status.preemptions, msg);
    }

    /// Preempting with its pods present: once the checkpoint is acknowledged, the pods exited
    /// or the grace period is over, stop the pods and record how the preemption ended.
    fn stop_preempted(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        let present = self.present;
        let requested = self.gang.checkpoint_requested_at().unwrap_or(t.0);
        let ack = self.gang.checkpoint_done_at();
        let exited = present.iter().all(|m| m.succeeded());
        let grace = i64::from(job.spec.checkpoint.grace_period_seconds.max(0));
        let deadline = requested + SignedDuration::from_secs(grace);
        // Once the pods are told to stop, the condition says how the preemption ended.
        let stopping = status
            .last_preemption
            .as_ref()
            .is_some_and(|r| r.at.0 >= requested);
        // A suspension keeps its own reason, as the condition table documents.
        let (reason, asked) = if job.spec.suspend {
            (
                Reason::Suspended,
                "Asked to checkpoint because the job was suspended",
            )
        } else {
            (Reason::CheckpointRequested, "Asked to checkpoint")
        };
        let newly = !stopping
            && conditions::set(
                &mut status.conditions,
                ConditionType::Preempting,
                true,
                reason,
                format!("{asked}; the pods are deleted after the acknowledgement or {grace} s."),
                generation,
                t,
            );
        if newly {
            status.message = Some(format!("Preempting: asked to checkpoint within {grace} s."));
        }
        if let Some(a) = ack {
            status.last_checkpoint_time = Some(Time(a));
        }
        // A gang not yet started (a replica still pulling its image, say) has done no work
        // and cannot acknowledge: waiting out the grace period would only hold its GPUs.
        let not_started = status.started_at.is_none();
        if !(ack.is_some() || exited || not_started || t.0 >= deadline) {
            let left = (deadline.as_second() - t.0.as_second()).clamp(1, 2) as u64;
            fx.requeue(Duration::from_secs(left));
            return;
        }
        fx.stop = Stop::All;
        let (outcome, why) = if ack.is_some() {
            (
                PreemptionOutcome::CheckpointSaved,
                "checkpoint acknowledged",
            )
        } else if exited {
            (
                PreemptionOutcome::PodsExited,
                "the pods exited on their own",
            )
        } else if not_started {
            (
                PreemptionOutcome::NotStarted,
                "the gang had not started, nothing to save",
            )
        } else {
            (
                PreemptionOutcome::CheckpointLost,
                "grace period over without acknowledgement",
            )
        };
        if status.message.as_deref().is_none_or(|m| !m.contains(why)) {
            status.message = Some(format!("Preempting: {why}; stopping the pods."));
        }
        // Recorded once, when the pods are first told to stop.
        if !stopping {
            let lost_gpu_seconds = if outcome == PreemptionOutcome::CheckpointLost {
                let since = status
                    .last_checkpoint_time
                    .as_ref()
                    .or(status.started_at.as_ref())
                    .or(status.admitted_at.as_ref())
                    .map_or(requested, |s| s.0);
                let seconds = (t.0.as_second() - since.as_second()).max(0) as f64;
                (seconds * status.gpus.unwrap_or(0.0)).round() as i64
            } else {
                0
            };
            // The pods name the scheduler's reason; the lifecycle's own request for a
            // suspension names none (the owner may have resumed the job since).
            let reason = match self.gang.preemption_reason() {
                Some(r) if !job.spec.suspend => r.to_string(),
                _ => SUSPEND.to_string(),
            };
            let reason = Some(reason);
            status.last_preemption = Some(PreemptionRecord {
                outcome,
                at: t.clone(),
                lost_gpu_seconds,
                reason,
            });
            let (reason, event) = match outcome {
                PreemptionOutcome::CheckpointSaved => {
                    (Reason::CheckpointSaved, EventReason::CheckpointSaved)
                }
                PreemptionOutcome::PodsExited => (Reason::PodsExited, EventReason::PodsExited),
                PreemptionOutcome::CheckpointLost => {
                    (Reason::CheckpointLost, EventReason::CheckpointLost)
                }
                PreemptionOutcome::NotStarted => (Reason::NotStarted, EventReason::NotStarted),
            };
            let msg = match outcome {
                PreemptionOutcome::CheckpointLost => format!(
                    "No checkpoint acknowledged within the {grace} s grace period: stopping the \
                     pods; about {lost_gpu_seconds} GPU-seconds of work since the last \
                     checkpoint are lost."
                ),
                _ => format!("Preempting: {why}; stopping the pods."),
            };
            conditions::set(
                &mut status.conditions,
                ConditionType::Preempting,
                true,
                reason,
                msg.clone(),
                generation,
                t,
            );
            let kind = if outcome == PreemptionOutcome::CheckpointLost {
                EventType::Warning
            } else {
                EventType::Normal
            };
            fx.event_nth(kind, event, status.preemptions + 1, msg);
        }
        fx.requeue(Duration::from_secs(1));
    }
}
