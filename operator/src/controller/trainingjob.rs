//! The TrainingJob reconciler: the job's state machine (docs/architecture.md, "One TrainingJob").
//!
//! It reads the job, its pods (from the shared cache) and the scheduler's last word on
//! why it waits, decides the next phase, writes the whole status with server-side apply,
//! records an Event for every transition, and deletes pods when a gang must stop (failure,
//! preemption after the checkpoint, success of the deciding tasks). Every step is idempotent:
//! a re-run after a crash at any point reaches the same state without counting twice,
//! because each counter moves together with the phase that records it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use tracing::{info, instrument, warn};

use super::conditions;
use super::context::Context;
use super::pods::{BONUS_ANNOTATION, expected_pod_names, placement_of};
use super::snapshot::{is_active, job_key, node_topology};
use super::status;
use super::validate::{effective_priority, effective_queue, validate};
use crate::api::annotations::{
    CHECKPOINT_DONE, CHECKPOINT_REQUESTED, GPU_ASSIGNMENT_ANNOTATION, NODE_ANNOTATION,
    PREEMPTION_REASON,
};
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::trainingjob::{
    GpuAssignment, PreemptionOutcome, PreemptionRecord, RefusedNode, ReplicaPlacement,
};
use crate::api::{Phase, TrainingJob, TrainingJobStatus};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
}

/// Why a running gang stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// The user's fault: counts as a retry.
    Replica { pod: String, reason: String },
    /// The platform's fault (node lost, GPU unhealthy, pod removed): retried without counting.
    Infrastructure { pod: String, reason: String },
}

fn now() -> Time {
    Time(Timestamp::now())
}

fn parse_time(s: &str) -> Option<Timestamp> {
    s.parse().ok()
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
fn pod_failure(pod: &Pod) -> Option<Failure> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let name = pod.name_any();
    let reason = status.reason.clone().unwrap_or_default();
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
    let terminated = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref().and_then(|s| s.terminated.as_ref()))
        .find(|t| t.exit_code != 0);
    let why = match terminated {
        Some(t) if t.reason.as_deref() == Some("OOMKilled") => "OOMKilled".to_string(),
        Some(t) => format!("exit code {}", t.exit_code),
        None if !reason.is_empty() => reason,
        None => "failed".to_string(),
    };
    Some(Failure::Replica {
        pod: name,
        reason: why,
    })
}

enum NodeState {
    Up(Arc<Node>),
    /// Tainted by the node lifecycle controller (`node.kubernetes.io/not-ready`,
    /// `unreachable`, ... with effect NoExecute): its kubelet cannot be trusted to act.
    Lost,
    Gone,
}

fn node_state(ctx: &Context, name: &str) -> NodeState {
    // One lookup in the cache's index, not a scan of every node.
    let key = kube::runtime::reflector::ObjectRef::<Node>::new(name);
    let Some(node) = ctx.stores.nodes.get(&key) else {
        return NodeState::Gone;
    };
    if super::snapshot::node_lost(&node) {
        NodeState::Lost
    } else {
        NodeState::Up(node)
    }
}

/// The first GPU under the pod that the node labeler reports unhealthy.
fn unhealthy_gpu(ctx: &Context, pod: &Pod) -> Option<(u32, String)> {
    let p = placement_of(pod)?;
    let NodeState::Up(node) = node_state(ctx, &p.node) else {
        return None;
    };
    let topo = node_topology(&node)?;
    let bad: BTreeSet<u32> = topo
        .gpus
        .iter()
        .filter(|g| !g.healthy)
        .map(|g| g.index)
        .collect();
    p.gpus
        .iter()
        .find(|g| bad.contains(&g.0))
        .map(|g| (g.0, p.node.clone()))
}

/// A replica that failed on a GPU the labeler reports unhealthy failed because of the GPU
/// (an XID error kills the process): not the job's fault.
fn blame_sick_gpu(ctx: &Context, pod: &Pod, f: Failure) -> Failure {
    match (&f, unhealthy_gpu(ctx, pod)) {
        (Failure::Replica { pod: name, reason }, Some((gpu, node))) => Failure::Infrastructure {
            pod: name.clone(),
            reason: format!("{reason}, on GPU {gpu} of node {node}, which turned unhealthy"),
        },
        _ => f,
    }
}

/// An infrastructure problem under a running pod: its node gone or NotReady. (A GPU turned
/// unhealthy under a running pod is a preemption with a checkpoint, decided by the core.)
fn infrastructure_failure(ctx: &Context, pods: &[Arc<Pod>]) -> Option<Failure> {
    for pod in pods.iter().filter(|p| is_active(p)) {
        let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        match node_state(ctx, &node_name) {
            NodeState::Gone => {
                return Some(Failure::Infrastructure {
                    pod: pod.name_any(),
                    reason: format!("node {node_name} is gone"),
                });
            }
            NodeState::Lost => {
                return Some(Failure::Infrastructure {
                    pod: pod.name_any(),
                    reason: format!("node {node_name} is not ready"),
                });
            }
            NodeState::Up(_) => {}
        }
    }
    None
}

/// A pod the cluster's scheduler has not bound for longer than `deadline` (its
/// `PodScheduled` condition `False`, reason `Unschedulable`): the node kubetrain chose does not
/// take it after all (another pod took the room, a volume cannot be attached there, a device
/// plugin or DRA check failed). Returns the pod, the node it was pinned to, and the
/// scheduler's message.
fn scheduler_refusal(
    pods: &[&Arc<Pod>],
    now: Timestamp,
    deadline: Duration,
) -> Option<(String, String, String)> {
    pods.iter().find_map(|pod| {
        if pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
            return None;
        }
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
        let since = c.last_transition_time.as_ref().map_or(now, |t| t.0);
        if now.duration_since(since) < SignedDuration::try_from(deadline).ok()? {
            return None;
        }
        Some((
            pod.name_any(),
            pod.annotations()
                .get(NODE_ANNOTATION)
                .cloned()
                .unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        ))
    })
}

/// How long a job stopped for a drain stays out of its queue after its pods are gone: two
/// of `kubectl drain`'s 5 s eviction retries.
const DRAIN_SETTLE_SECONDS: i64 = 10;

/// How long a node the scheduler refused stays out of a job's placement.
const REFUSED_NODE_TTL: i64 = 600;

/// The scheduler would not bind the gang where kubetrain placed it: roll the whole admission
/// back and re-plan without that node. Not a retry and not the job's fault.
fn roll_back(
    status: &mut TrainingJobStatus,
    fx: &mut Effects,
    t: &Time,
    generation: Option<i64>,
    (pod, node, message): (String, String, String),
) {
    fx.delete_pods = true;
    status.phase = Phase::Retrying;
    status.retry_at = Some(t.clone());
    status
        .refused_nodes
        .retain(|r| r.node != node && r.until.0 > t.0);
    status.refused_nodes.push(RefusedNode {
        node: node.clone(),
        until: Time(t.0 + SignedDuration::from_secs(REFUSED_NODE_TTL)),
        message: message.clone(),
    });
    let msg = format!(
        "The scheduler did not bind pod {pod} to node {node}: {message}. The admission is \
         rolled back and the job placed again without that node for {} min; this is not a retry.",
        REFUSED_NODE_TTL / 60
    );
    conditions::set(
        &mut status.conditions,
        ConditionType::Running,
        false,
        Reason::SchedulerRejected,
        msg.clone(),
        generation,
        t,
    );
    status.message = Some(msg.clone());
    fx.event(EventType::Warning, EventReason::SchedulerRejected, msg);
}

/// What the reconcile decided besides the status.
#[derive(Default)]
struct Effects {
    /// Type, reason, action (when not the reason) and note of each Event.
    events: Vec<(EventType, &'static str, Option<String>, String)>,
    delete_pods: bool,
    /// Put the checkpoint request on the pods that lack it (a suspended running job: no
    /// scheduler preemption asks for it).
    request_checkpoint: bool,
    requeue: Option<Duration>,
}

impl Effects {
    fn event(&mut self, t: EventType, reason: EventReason, note: impl Into<String>) {
        self.event_named(t, reason.as_str(), note);
    }
    /// An event whose reason is named elsewhere (a validation reason).
    fn event_named(&mut self, t: EventType, reason: &'static str, note: impl Into<String>) {
        self.events.push((t, reason, None, note.into()));
    }
    /// An event that must stay apart from earlier ones of its reason (each retry, each
    /// preemption): numbered by its occurrence.
    fn event_nth(&mut self, t: EventType, reason: EventReason, n: i32, note: impl Into<String>) {
        let reason = reason.as_str();
        self.events
            .push((t, reason, Some(format!("{reason}{n}")), note.into()));
    }
    fn requeue(&mut self, d: Duration) {
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }
}

#[instrument(skip_all, fields(job = %job_key(&job)))]
pub async fn reconcile(job: Arc<TrainingJob>, ctx: Arc<Context>) -> Result<Action, Error> {
    if job.metadata.deletion_timestamp.is_some() {
        // Owner references take the pods and the Service; the scheduler sees the GPUs free.
        ctx.wake.notify_one();
        return Ok(Action::await_change());
    }
    // Our last status write was computed from this very version: the cache has not shown
    // the write yet, and a reconcile now would redo it from stale data (a second write, and
    // times such as admittedAt taken anew). The write's watch event triggers the next one.
    let key = job_key(&job);
    if job.metadata.resource_version.is_some()
        && ctx.status_written_from(&key) == job.metadata.resource_version
    {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let pods = ctx.job_pods(&job);
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut fx = Effects::default();
    let t = now();
    step(&ctx, &job, &pods, &mut status, &mut fx, &t);
    status.observed_generation = job.metadata.generation;
    if status.gpus.is_none() || old.phase != status.phase {
        status.gpus = Some(requested_gpus(&job));
    }

    if status != old {
        let api: Api<TrainingJob> =
            Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
        let written = status::apply(&api, &job.name_any(), &status).await?;
        if written.metadata.resource_version != job.metadata.resource_version {
            ctx.record_status_write(key, job.metadata.resource_version.clone());
        }
        if old.phase != status.phase {
            info!(from = %old.phase, to = %status.phase, "phase");
            ctx.wake.notify_one();
        }
    }
    for (t, reason, action, note) in fx.events {
        let action = action.unwrap_or_else(|| reason.to_string());
        ctx.event_with_action(job.as_ref(), t, reason, action, note)
            .await;
    }
    if fx.request_checkpoint {
        request_checkpoint(&ctx, &job, &pods, &t).await?;
    }
    delete_pods(&ctx, &job, &pods, &t, fx.delete_pods).await?;
    Ok(match fx.requeue {
        Some(d) => Action::requeue(d),
        None => Action::requeue(Duration::from_secs(60)),
    })
}

fn requested_gpus(job: &TrainingJob) -> f64 {
    job.spec
        .tasks
        .iter()
        .map(|t| {
            let per = match t.gpu_share {
                Some(s) => f64::from(s) / 1000.0,
                None => t
                    .pod_template()
                    .ok()
                    .and_then(|tpl| tpl.spec)
                    .and_then(|s| super::resources::pod_demand(&s).ok())
                    .map_or(0.0, |d| d.gpus as f64),
            };
            per * f64::from(t.replicas())
        })
        .sum()
}

/// Deletes the job's pods gracefully when the state machine asks (`all`). In every phase, a
/// pod whose graceful deletion is overdue on a node that is lost (NotReady, unreachable or
/// gone) is deleted with no grace: no kubelet will ever confirm it, and until it is gone its
/// name, GPUs and rank are blocked, so the gang could never restart. The pod's own grace
/// period has passed by then, as it would have for a healthy kubelet.
async fn delete_pods(
    ctx: &Context,
    job: &TrainingJob,
    pods: &[Arc<Pod>],
    now: &Time,
    all: bool,
) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    for p in pods {
        let params = match &p.metadata.deletion_timestamp {
            None if all => DeleteParams::background(),
            None => continue,
            Some(at) if at.0 <= now.0 && on_lost_node(ctx, p) => {
                info!(pod = %p.name_any(), "force-deleting a pod stuck on a lost node");
                DeleteParams::background().grace_period(0)
            }
            Some(_) => continue,
        };
        match api.delete(&p.name_any(), &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Asks the job's running pods to checkpoint, as a preemption does: the request annotation
/// (with the time of the request) on each pod that does not have it yet.
async fn request_checkpoint(
    ctx: &Context,
    job: &TrainingJob,
    pods: &[Arc<Pod>],
    now: &Time,
) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let stamp = now.0.to_string();
    for p in pods.iter().filter(|p| {
        p.metadata.deletion_timestamp.is_none()
            && !p.annotations().contains_key(CHECKPOINT_REQUESTED)
    }) {
        let patch = serde_json::json!({"metadata": {"annotations": {CHECKPOINT_REQUESTED: stamp}}});
        match api
            .patch(
                &p.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn on_lost_node(ctx: &Context, pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !matches!(node_state(ctx, n), NodeState::Up(_)))
}

/// The state machine: updates `status` and `fx` from the job and its pods.
/// The job's queue as `status.queue` has it, for messages.
fn queue_name(status: &TrainingJobStatus) -> String {
    status.queue.clone().unwrap_or_default()
}

fn step(
    ctx: &Context,
    job: &TrainingJob,
    pods: &[Arc<Pod>],
    status: &mut TrainingJobStatus,
    fx: &mut Effects,
    t: &Time,
) {
    let generation = job.metadata.generation;
    let key = job_key(job);
    // Only a job waiting in its queue has a place there; the Queued branch below sets it.
    status.queue_position = None;
    let active: Vec<&Arc<Pod>> = pods.iter().filter(|p| is_active(p)).collect();
    let present: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();

    // The queue and priority in effect, published for `kubectl get tj` (even when the job
    // is invalid for another reason). A finished job keeps those it ran with; one that
    // finished before status had them gets them once.
    let maps = ctx.ref_maps();
    let refs = maps.refs();
    if !status.phase.is_finished() || status.queue.is_none() {
        status.queue = effective_queue(job, &refs).ok();
    }
    if !status.phase.is_finished() || status.priority.is_none() {
        status.priority = effective_priority(job, &refs).ok();
    }

    if status.phase.is_finished() {
        if !active.is_empty() {
            fx.delete_pods = true;
        }
        if let (Some(ttl), Some(done)) = (
            job.spec.ttl_seconds_after_finished,
            status.finished_at.as_ref(),
        ) {
            let expires = done.0 + SignedDuration::from_secs(i64::from(ttl));
            if t.0 >= expires {
                fx.event(
                    EventType::Normal,
                    EventReason::Expired,
                    format!("Deleted {ttl} s after it finished (ttlSecondsAfterFinished)."),
                );
                let api: Api<TrainingJob> =
                    Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
                let name = job.name_any();
                tokio::spawn(async move {
                    let _ = api.delete(&name, &DeleteParams::background()).await;
                });
            } else {
                fx.requeue(Duration::from_secs(
                    (expires.as_second() - t.0.as_second()).max(1) as u64,
                ));
            }
        }
        return;
    }

    // Validity: what the schema cannot check. An invalid job that holds nothing waits in
    // Pending; a running one keeps running (its spec change does not touch the pods).
    match validate(job, &refs) {
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
                fx.event_named(
                    EventType::Warning,
                    invalid.reason(),
                    format!("{invalid}. The job waits until a change fixes it."),
                );
            }
            if present.is_empty() && matches!(status.phase, Phase::Pending | Phase::Queued) {
                status.phase = Phase::Pending;
                status.message = Some(invalid.to_string());
            }
            fx.requeue(Duration::from_secs(15));
            if present.is_empty() {
                return;
            }
        }
        Ok(_) => {
            if conditions::set(
                &mut status.conditions,
                ConditionType::Valid,
                true,
                Reason::Valid,
                "The job's references and templates are valid.",
                generation,
                t,
            ) && status.phase != Phase::Pending
            {
                fx.event(
                    EventType::Normal,
                    EventReason::Valid,
                    "The job is valid again.",
                );
            }
        }
    }

    // The scheduler may admit a valid job before its first status write (its pods are here):
    // it went through the queue all the same.
    if status.phase == Phase::Pending
        && (conditions::is_true(&status.conditions, ConditionType::Valid) || !present.is_empty())
    {
        status.phase = Phase::Queued;
        if status.queued_at.is_none() {
            status.queued_at = Some(t.clone());
        }
        status.message = Some(format!("Waiting in queue {}.", queue_name(status)));
        fx.event(
            EventType::Normal,
            EventReason::Queued,
            format!("Entered queue {}.", queue_name(status)),
        );
    }

    // Suspension: stop the gang (checkpoint first, as for a preemption), keep the job queued.
    if job.spec.suspend && !matches!(status.phase, Phase::Preempting) {
        if present.is_empty() {
            if status.phase != Phase::Suspended {
                status.phase = Phase::Suspended;
                status.placement.clear();
                status.message = Some("Suspended: spec.suspend is true.".into());
                fx.event(
                    EventType::Normal,
                    EventReason::Suspended,
                    "Suspended; set spec.suspend to false to queue it again.",
                );
            }
            return;
        }
        status.phase = Phase::Preempting;
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            true,
            Reason::Suspended,
            "Asked to checkpoint because the job was suspended.",
            generation,
            t,
        );
        fx.delete_pods = false;
    }
    if status.phase == Phase::Suspended && !job.spec.suspend {
        status.phase = Phase::Queued;
        status.message = Some(format!("Resumed; waiting in queue {}.", queue_name(status)));
        fx.event(
            EventType::Normal,
            EventReason::Resumed,
            "spec.suspend is false: back in the queue.",
        );
    }

    let expected = expected_pod_names(job);
    let gang_size = expected.len();
    let by_name: BTreeMap<String, &Arc<Pod>> = present.iter().map(|p| (p.name_any(), *p)).collect();
    let checkpoint_requested = present
        .iter()
        .any(|p| p.annotations().contains_key(CHECKPOINT_REQUESTED));

    match status.phase {
        Phase::Queued => {
            if present.is_empty() {
                if !pods.is_empty() {
                    // Old pods still terminating: the scheduler counts them; wait.
                    fx.requeue(Duration::from_secs(1));
                    return;
                }
                let wait = ctx.state().waiting.get(&key).cloned();
                status.queue_position = wait
                    .as_ref()
                    .and_then(|(_, p)| *p)
                    .map(|p| i32::try_from(p).unwrap_or(i32::MAX));
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
                status.message = Some(msg);
                // The scheduler asks for a reconcile whenever the reason it waits changes;
                // this is only a safety net.
                fx.requeue(Duration::from_secs(30));
                return;
            }
            if checkpoint_requested {
                status.phase = Phase::Preempting;
                return step_preempting(job, &present, status, fx, t, generation);
            }
            let complete = expected.iter().all(|n| by_name.contains_key(n));
            if !complete {
                let in_flight = ctx.state().inflight.contains_key(&key);
                let newest = present
                    .iter()
                    .filter_map(|p| p.metadata.creation_timestamp.as_ref())
                    .map(|c| c.0)
                    .max();
                let age = newest.map_or(0, |n| t.0.as_second() - n.as_second());
                if in_flight || age < ctx.settings.incomplete_gang_timeout.as_secs() as i64 {
                    fx.requeue(Duration::from_secs(1));
                    return;
                }
                // A gang left half-created (the operator stopped mid-admission): tear it
                // down and queue again; never run part of a gang.
                fx.delete_pods = true;
                status.infrastructure_retries += 1;
                fx.event(EventType::Warning, EventReason::IncompleteGang, format!("Found {} of {gang_size} pods with no admission in progress; removed them and queued the job again.", present.len()));
                return;
            }
            status.phase = Phase::Running;
            status.admitted_at = Some(t.clone());
            status.started_at = None;
            status.bonus = present.iter().any(|p| {
                p.annotations()
                    .get(BONUS_ANNOTATION)
                    .is_some_and(|b| b == "true")
            });
            status.placement = placements(&present);
            let nodes: BTreeSet<&str> = status.placement.iter().map(|p| p.node.as_str()).collect();
            let msg = format!(
                "Admitted{}: {gang_size} replica(s) on {} node(s).",
                if status.bonus {
                    " on borrowed (bonus) GPUs; it may be preempted with a checkpoint request when their owner needs them"
                } else {
                    ""
                },
                nodes.len()
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
            status.message = Some(msg);
            fx.requeue(Duration::from_secs(2));
        }
        Phase::Running => {
            status.bonus = present.iter().any(|p| {
                p.annotations()
                    .get(BONUS_ANNOTATION)
                    .is_some_and(|b| b == "true")
            });
            if checkpoint_requested {
                status.phase = Phase::Preempting;
                return step_preempting(job, &present, status, fx, t, generation);
            }
            // Success: every replica of every deciding task succeeded.
            let deciding: Vec<String> = job
                .spec
                .tasks
                .iter()
                .filter(|task| task.required_for_completion())
                .flat_map(|task| {
                    (0..task.replicas().max(1) as u32)
                        .map(|i| super::pods::pod_name(&job.name_any(), &task.name, i))
                        .collect::<Vec<_>>()
                })
                .collect();
            let succeeded = |n: &String| {
                by_name
                    .get(n)
                    .and_then(|p| p.status.as_ref())
                    .and_then(|s| s.phase.as_deref())
                    == Some("Succeeded")
            };
            if !deciding.is_empty() && deciding.iter().all(succeeded) {
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
                fx.delete_pods = active
                    .iter()
                    .any(|p| p.metadata.deletion_timestamp.is_none());
                return;
            }
            let missing = expected.iter().find(|n| !by_name.contains_key(*n));
            let failure = present
                .iter()
                .find_map(|p| pod_failure(p).map(|f| blame_sick_gpu(ctx, p, f)))
                .or_else(|| {
                    missing.map(|m| Failure::Infrastructure {
                        pod: m.clone(),
                        reason: "the pod was removed".into(),
                    })
                })
                .or_else(|| infrastructure_failure(ctx, pods));
            if let Some(f) = failure {
                return fail(ctx, job, status, fx, t, generation, f);
            }
            if let Some(refusal) =
                scheduler_refusal(&present, t.0, ctx.settings.unschedulable_timeout)
            {
                return roll_back(status, fx, t, generation, refusal);
            }
            let all_running = expected.iter().all(|n| {
                by_name
                    .get(n)
                    .and_then(|p| p.status.as_ref())
                    .and_then(|s| s.phase.as_deref())
                    .is_some_and(|ph| ph == "Running" || ph == "Succeeded")
            });
            if all_running && status.started_at.is_none() {
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
        }
        Phase::Preempting => step_preempting(job, &present, status, fx, t, generation),
        Phase::Retrying => {
            if !present.is_empty() {
                fx.delete_pods = true;
            }
            if !pods.is_empty() {
                fx.requeue(Duration::from_secs(1));
                return;
            }
            let due = status.retry_at.as_ref().is_none_or(|r| t.0 >= r.0);
            if due {
                status.phase = Phase::Queued;
                status.retry_at = None;
                status.placement.clear();
                status.started_at = None;
                status.message = Some(format!(
                    "Back in queue {} after a failure (retry {} of {}).",
                    queue_name(status),
                    status.retries,
                    job.spec.max_retries
                ));
                fx.event(
                    EventType::Normal,
                    EventReason::Requeued,
                    "Backoff over: back in the queue.",
                );
            } else if let Some(r) = &status.retry_at {
                fx.requeue(Duration::from_secs(
                    (r.0.as_second() - t.0.as_second()).max(1) as u64,
                ));
            }
        }
        Phase::Pending | Phase::Suspended | Phase::Succeeded | Phase::Failed => {}
    }
}

fn placements(pods: &[&Arc<Pod>]) -> Vec<ReplicaPlacement> {
    let mut out: Vec<ReplicaPlacement> = pods
        .iter()
        .filter_map(|pod| Some((placement_of(pod)?, pod)))
        .map(|(p, pod)| ReplicaPlacement {
            task: p.task,
            index: p.index as i32,
            rank: p.rank as i32,
            node: p.node,
            gpus: p.gpus.iter().map(|g| g.0 as i32).collect(),
            gpu_share: p.share.map(|s| s.0 as i32),
            gpus_assigned_by: pod
                .annotations()
                .get(GPU_ASSIGNMENT_ANNOTATION)
                .and_then(|a| GpuAssignment::parse(a)),
        })
        .collect();
    out.sort_by_key(|p| p.rank);
    out
}

/// A running gang stopped: retry (counted or not) or fail for good.
fn fail(
    ctx: &Context,
    job: &TrainingJob,
    status: &mut TrainingJobStatus,
    fx: &mut Effects,
    t: &Time,
    generation: Option<i64>,
    f: Failure,
) {
    fx.delete_pods = true;
    let (pod, reason, infra) = match f {
        Failure::Replica { pod, reason } => (pod, reason, false),
        Failure::Infrastructure { pod, reason } => (pod, reason, true),
    };
    if infra && status.infrastructure_retries < ctx.settings.max_infrastructure_retries {
        status.infrastructure_retries += 1;
        status.phase = Phase::Retrying;
        status.retry_at = Some(t.clone());
        let msg = format!(
            "Replica {pod} stopped: {reason}. Not the job's fault: restarting without counting a retry."
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::InfrastructureFailure,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event_nth(
            EventType::Warning,
            EventReason::InfrastructureFailure,
            status.infrastructure_retries,
            msg,
        );
        return;
    }
    if status.retries < job.spec.max_retries {
        status.retries += 1;
        let wait = backoff(
            job.spec.backoff.initial_seconds,
            job.spec.backoff.max_seconds,
            status.retries,
        );
        status.phase = Phase::Retrying;
        status.retry_at = Some(Time(t.0 + SignedDuration::from_secs(wait.as_secs() as i64)));
        let msg = format!(
            "Replica {pod} failed: {reason}. Retry {} of {} in {} s.",
            status.retries,
            job.spec.max_retries,
            wait.as_secs()
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
        status.phase = Phase::Failed;
        status.finished_at = Some(t.clone());
        let msg = format!(
            "Replica {pod} failed: {reason}. No retries left ({} of {} used).",
            status.retries, job.spec.max_retries
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Failed,
            true,
            Reason::RetriesExhausted,
            msg.clone(),
            generation,
            t,
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
        fx.event(EventType::Warning, EventReason::Failed, msg);
    }
}

/// Preempting: wait for the checkpoint acknowledgement, the pods' own exit, or the grace
/// period; then delete the pods; once they are gone, back to Queued keeping the job's place.
fn step_preempting(
    job: &TrainingJob,
    present: &[&Arc<Pod>],
    status: &mut TrainingJobStatus,
    fx: &mut Effects,
    t: &Time,
    generation: Option<i64>,
) {
    // A suspension is a preemption nobody else asks for: request the checkpoint here.
    if job.spec.suspend
        && present
            .iter()
            .any(|p| !p.annotations().contains_key(CHECKPOINT_REQUESTED))
    {
        fx.request_checkpoint = true;
    }
    if present.is_empty() {
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
        status.preemptions += if job.spec.suspend { 0 } else { 1 };
        status.placement.clear();
        status.bonus = false;
        status.started_at = None;
        status.admitted_at = None;
        let lost = status
            .last_preemption
            .as_ref()
            .filter(|r| r.outcome == PreemptionOutcome::CheckpointLost);
        let msg = match (job.spec.suspend, lost) {
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
        fx.event_nth(
            if lost.is_some() {
                EventType::Warning
            } else {
                EventType::Normal
            },
            if job.spec.suspend {
                EventReason::Suspended
            } else {
                EventReason::Requeued
            },
            status.preemptions,
            msg,
        );
        return;
    }
    let requested = present
        .iter()
        .filter_map(|p| {
            p.annotations()
                .get(CHECKPOINT_REQUESTED)
                .and_then(|s| parse_time(s))
        })
        .min()
        .unwrap_or(t.0);
    let ack = present
        .iter()
        .filter_map(|p| {
            p.annotations()
                .get(CHECKPOINT_DONE)
                .and_then(|s| parse_time(s))
        })
        .max();
    let exited = present
        .iter()
        .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"));
    let grace = i64::from(job.spec.checkpoint.grace_period_seconds.max(0));
    let deadline = requested + SignedDuration::from_secs(grace);
    // Once the pods are told to stop, the condition says how the preemption ended.
    let stopping = status
        .last_preemption
        .as_ref()
        .is_some_and(|r| r.at.0 >= requested);
    let newly = !stopping
        && conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            true,
            Reason::CheckpointRequested,
            format!(
                "Asked to checkpoint; the pods are deleted after the acknowledgement or {grace} s."
            ),
            generation,
            t,
        );
    if newly {
        status.message = Some(format!("Preempting: asked to checkpoint within {grace} s."));
    }
    if let Some(a) = ack {
        status.last_checkpoint_time = Some(Time(a));
    }
    if ack.is_some() || exited || t.0 >= deadline {
        fx.delete_pods = true;
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
            let reason = if job.spec.suspend {
                Some("Suspend".to_string())
            } else {
                present
                    .iter()
                    .find_map(|p| p.annotations().get(PREEMPTION_REASON).cloned())
            };
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
    } else {
        let left = (deadline.as_second() - t.0.as_second()).clamp(1, 2) as u64;
        fx.requeue(Duration::from_secs(left));
    }
}

/// On errors: count, log, retry soon.
pub fn error_policy(job: Arc<TrainingJob>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_errors.inc();
    warn!(job = %job_key(&job), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_max() {
        assert_eq!(backoff(10, 600, 1), Duration::from_secs(10));
        assert_eq!(backoff(10, 600, 2), Duration::from_secs(20));
        assert_eq!(backoff(10, 600, 4), Duration::from_secs(80));
        assert_eq!(backoff(10, 600, 10), Duration::from_secs(600));
        assert_eq!(backoff(0, 600, 3), Duration::ZERO);
        assert_eq!(backoff(10, 600, 1000), Duration::from_secs(600));
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("pod")
    }

    #[test]
    fn failures_are_classified() {
        let oom = pod(
            serde_json::json!({"metadata": {"name": "a"}, "status": {"phase": "Failed", "containerStatuses": [
                {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
            ]}}),
        );
        assert_eq!(
            pod_failure(&oom),
            Some(Failure::Replica {
                pod: "a".into(),
                reason: "OOMKilled".into()
            })
        );
        let exit = pod(
            serde_json::json!({"metadata": {"name": "b"}, "status": {"phase": "Failed", "containerStatuses": [
                {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 3}}}
            ]}}),
        );
        assert_eq!(
            pod_failure(&exit),
            Some(Failure::Replica {
                pod: "b".into(),
                reason: "exit code 3".into()
            })
        );
        let lost = pod(
            serde_json::json!({"metadata": {"name": "c"}, "status": {"phase": "Failed", "reason": "NodeLost"}}),
        );
        assert!(matches!(
            pod_failure(&lost),
            Some(Failure::Infrastructure { .. })
        ));
        // Refused or evicted by the kubelet: the node's doing, not the job's.
        for reason in [
            "Evicted",
            "OutOfnvidia.com/gpu",
            "NodeAffinity",
            "UnexpectedAdmissionError",
        ] {
            let refused = pod(serde_json::json!({"metadata": {"name": "d"}, "status": {
                "phase": "Failed", "reason": reason, "message": "Pod was rejected"}}));
            assert!(
                matches!(pod_failure(&refused), Some(Failure::Infrastructure { ref reason, .. }) if reason.contains("Pod was rejected")),
                "{reason}"
            );
        }
        let app_error = pod(serde_json::json!({"metadata": {"name": "f"}, "status": {
            "phase": "Failed", "reason": "DeadlineExceeded"}}));
        assert!(matches!(
            pod_failure(&app_error),
            Some(Failure::Replica { .. })
        ));
        let running =
            pod(serde_json::json!({"metadata": {"name": "e"}, "status": {"phase": "Running"}}));
        assert_eq!(pod_failure(&running), None);
    }
}
