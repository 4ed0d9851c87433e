//! The TrainingJob's lifecycle (docs/architecture.md, "One TrainingJob"): a pure state
//! machine, with no client and no shared state.
//!
//! [`next`] takes the job, its [`Gang`] of pods, the [`World`] the reconciler observed around
//! it (validity, the scheduler's word on why it waits, the nodes under its pods, settings) and
//! the time, and returns the job's next status and the [`Effects`] the reconciler carries out:
//! Events, pod deletions, checkpoint requests, the job's own deletion after its TTL, and when
//! to look again. One function per phase, dispatched by `Step::step`, each in the file of its
//! phase: `validity.rs` (validity, entering the queue, suspension), `queued.rs` (and the
//! `Admitted` condition), `running.rs` (`Starting` and `Running`), `failure.rs` (how a failure
//! is judged, retried or final; `Retrying`), `placed_again.rs` (a gang stopped and placed again
//! through no fault of its own), `preempting.rs` and `finished.rs`. What a pod's status says
//! (how it failed, when it finished, why it does not start) is read in `gang.rs`, with the rest
//! of the pod. `stories/` tells each transition as a story, grouped by concern.
//!
//! Every step is idempotent: a re-run after a crash at any point reaches the same state without
//! counting twice, because each counter moves together with the phase that records it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use kube::runtime::events::EventType;

use super::conditions;
use super::duration_history::settle;
pub use super::gang::Gang;
use super::gang::Member;
pub use super::node_health::NodeState;
use super::validate::Invalid;
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::trainingjob::Prediction;
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::sched::WaitReason;
pub use failure::backoff;
pub use preempting::stop_decided;
use running::stalled_replica;

mod failure;
mod finished;
mod placed_again;
mod policy;
mod preempting;
mod queued;
mod running;
#[cfg(test)]
mod stories;
mod validity;

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
    /// When the scheduler estimates the waiting job starts (seconds); None when it cannot.
    pub estimated_start: Option<i64>,
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
    /// The history's prediction of the job's run time now (`duration_history`): what
    /// `status.prediction` says of a job first seen. `None`: not looked up; the status keeps
    /// what it has.
    pub prediction: Option<Prediction>,
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
        // Not given up on: the pods may run on (`Step::mark_unready_nodes`).
        NodeState::NotReady | NodeState::Up { .. } => None,
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
        // Only a job waiting in its queue has a place there and a wait; `queued` sets them.
        status.queue_position = None;
        status.estimated_start_time = None;
        status.waiting = None;

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
        // The run time the scheduler assumes: the spec's, else the one made when the job was
        // first seen (the same the cycle gave the core until this write).
        status.prediction = settle(
            status.prediction.take(),
            self.job.spec.predicted_duration_seconds,
            self.world.prediction.as_ref(),
        );
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
}
