//! The fake kubelet: plays the life of every pod bound (`spec.nodeName`) to a simulated node.
//!
//! A kube-runtime controller watches bound pods (`spec.nodeName!=`) and keeps those on its
//! nodes; its reconcile is idempotent and derives every timer from what the pod's status
//! already records, so an agent that restarts picks up where it left off:
//!
//! 1. First sight: `Pending` with `startTime` (the kubelet's "accepted"), containers waiting
//!    in `ContainerCreating`, `hostIP` the node's address.
//!    With `sim.kubetrain.io/admission-reject: <reason>` the pods of the job's first attempt
//!    are instead `Failed` with that reason at once, as a kubelet admission rejection is.
//! 2. `startTime` + start delay (`sim.kubetrain.io/start-seconds`, default 1 s): `Running`,
//!    containers running and ready from `startedAt`, `Ready=True`, a fake pod IP unique among
//!    bound pods in 10.244.0.0/16. With `sim.kubetrain.io/image-pull-error: <message>` the
//!    containers wait in `ImagePullBackOff` with that message instead, for ever.
//! 3. A GPU reservation pod (label `kubetrain.io/gpu-reservation: "true"`), once running,
//!    gets the `kubetrain.io/reserved-device` annotation its container
//!    (`kubetrain-operator reserve-gpu`) writes on a real node, since the operator ungates the
//!    GPU's share pods only when it is there: the device a device plugin would have
//!    allocated, the lowest-index GPU of the node that no other reservation pod on it still
//!    holding resources reports, by the UUID the node's simulated NVML reads
//!    (`GPU-<node>-<index>` on a node without topology). Written on the pod itself.
//! 4. With `sim.kubetrain.io/run-seconds`, at `startedAt` + run time: `Succeeded` (exit 0),
//!    `Failed` with `sim.kubetrain.io/exit-code` (reason `Error`), or, with
//!    `sim.kubetrain.io/oom-killed: "true"`, `Failed` with reason `OOMKilled`, exit 137.
//!    Without it the pod runs until deleted. Every container behaves the same;
//!    `restartPolicy` is not simulated (a terminated container is never restarted).
//! 5. While running, a `kubetrain.io/checkpoint-requested` annotation (RFC 3339 time of the
//!    request) is answered with `kubetrain.io/checkpoint-done` (current time) once
//!    `sim.kubetrain.io/checkpoint-delay-seconds` (default 2 s; `never`: no answer) have passed
//!    since the request. A later request (newer than the last answer) is answered again.
//! 6. Graceful deletion: a running pod's containers are stopped (terminated, exit 143) at
//!    deletion request + min(`deletionGracePeriodSeconds`, the agent's cap, default 2 s), and
//!    the pod is then deleted with grace period 0; pods not running are removed at once.
//!
//! Status goes through `pods/status` as a merge patch carrying `metadata.resourceVersion`, so
//! a write based on a stale view fails with a conflict and is retried from the fresh pod; the
//! reserved device goes to the pod itself the same way.
//! Pods on a faulted node are frozen; pods on a node that is gone are left to podgc.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{RoundMode, SignedDuration, Timestamp, TimestampRound, Unit};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::Mutex;

use super::cluster::SimNode;
use super::faults::Faults;
use super::{Agent, Error};
use kubetrain::api::NodeTopology;
use kubetrain::api::annotations::{
    ATTEMPT_ANNOTATION, CHECKPOINT_DONE, CHECKPOINT_REQUESTED, RESERVATION_LABEL,
    RESERVED_DEVICE_ANNOTATION, sim,
};
use kubetrain::controller::gang::holds_resources;

/// Exit code of a container stopped by pod deletion (128 + SIGTERM).
pub const SIGTERM_EXIT_CODE: i32 = 143;
/// Exit code of an OOM-killed container (128 + SIGKILL).
pub const OOM_EXIT_CODE: i32 = 137;
/// How often pods on a faulted node are looked at again.
const FAULT_RECHECK: Duration = Duration::from_secs(2);
/// When a pod whose last write the cache does not show yet is looked at again (its watch
/// event normally comes first).
const STALE_RECHECK: Duration = Duration::from_secs(1);
/// Size of the fake pod network 10.244.0.0/16, minus its network and broadcast addresses.
const POD_IPS: u32 = 65534;
/// When a reservation pod that found every GPU of its node taken is looked at again.
const NO_DEVICE_RECHECK: Duration = Duration::from_secs(2);

struct PodCtx {
    agent: Arc<Agent>,
    pods: Store<Pod>,
    /// First sight of checkpoint requests whose value is not a timestamp: (uid, value) → when.
    requests_seen: Mutex<HashMap<(String, String), Timestamp>>,
    /// Sub-second times of what this agent did, by pod uid: the API keeps whole seconds only.
    /// After a restart the (truncated) times from the pod's status are used instead.
    times: Mutex<HashMap<String, PodTimes>>,
    /// By pod uid: the resourceVersion this agent's last status write was based on. While the
    /// cache still shows that version, the write has not come back through the watch, and
    /// acting on the stale copy again would only fail with a conflict.
    written_from: Mutex<HashMap<String, String>>,
    /// By pod uid: the device this agent wrote on a reservation pod, which the cache may not
    /// show yet. Held while a device is picked and written, so that two reservations on one
    /// node never get the same device (a kubelet allocates devices one pod at a time).
    devices: Mutex<HashMap<String, String>>,
}

#[derive(Clone, Copy, Default)]
struct PodTimes {
    accepted: Option<Timestamp>,
    running: Option<Timestamp>,
    deletion_seen: Option<Timestamp>,
}

impl PodCtx {
    async fn times(&self, pod: &Pod) -> PodTimes {
        let uid = pod.uid().unwrap_or_default();
        self.times
            .lock()
            .await
            .get(&uid)
            .copied()
            .unwrap_or_default()
    }

    async fn record(&self, pod: &Pod, f: impl FnOnce(&mut PodTimes)) {
        let uid = pod.uid().unwrap_or_default();
        f(self.times.lock().await.entry(uid).or_default());
    }

    /// Whether the last status write to the pod was based on the version at hand.
    async fn already_written(&self, pod: &Pod) -> bool {
        let uid = pod.uid().unwrap_or_default();
        let rv = pod.resource_version();
        self.written_from.lock().await.get(&uid) == rv.as_ref()
    }

    async fn forget(&self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        self.times.lock().await.remove(&uid);
        self.written_from.lock().await.remove(&uid);
        self.devices.lock().await.remove(&uid);
        self.requests_seen
            .lock()
            .await
            .retain(|(u, _), _| *u != uid);
    }
}

/// Runs the fake kubelet until the task is aborted.
pub(crate) async fn run(agent: Arc<Agent>) {
    let api: Api<Pod> = Api::all(agent.client.clone());
    let bound = agent.options.pods_at_once(agent.nodes.len());
    let concurrency = u16::try_from(bound).unwrap_or(u16::MAX);
    let controller = Controller::new(api, watcher::Config::default().fields("spec.nodeName!="))
        .with_config(controller::Config::default().concurrency(concurrency));
    let ctx = Arc::new(PodCtx {
        agent,
        pods: controller.store(),
        requests_seen: Mutex::default(),
        times: Mutex::default(),
        written_from: Mutex::default(),
        devices: Mutex::default(),
    });
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!("pod controller: {e}");
            }
        })
        .await;
}

fn error_policy(pod: Arc<Pod>, error: &Error, _ctx: Arc<PodCtx>) -> Action {
    match error {
        Error::Kube(kube::Error::Api(e)) if e.code == 409 => {
            Action::requeue(Duration::from_millis(200))
        }
        _ => {
            tracing::warn!(pod = %pod.name_any(), namespace = ?pod.namespace(), "{error}");
            Action::requeue(Duration::from_secs(2))
        }
    }
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.annotations().get(key).map(String::as_str)
}

/// A duration in seconds from an annotation (fractions allowed); `None` when absent or invalid.
fn seconds(pod: &Pod, key: &str) -> Option<SignedDuration> {
    let value = annotation(pod, key)?;
    match value.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Some(SignedDuration::from_secs_f64(s)),
        _ => {
            tracing::warn!(pod = %pod.name_any(), "ignoring {key}: {value:?} is not a number of seconds");
            None
        }
    }
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// `t + d`, saturating at the ends of time.
fn add(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(if d.is_negative() {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// Requeue at `due` (at once when past).
fn at(due: Timestamp, now: Timestamp) -> Action {
    let wait = due.duration_since(now);
    let wait = if wait.is_negative() {
        Duration::ZERO
    } else {
        wait.unsigned_abs()
    };
    Action::requeue(wait + Duration::from_millis(20))
}

async fn reconcile(pod: Arc<Pod>, ctx: Arc<PodCtx>) -> Result<Action, Error> {
    let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
        return Ok(Action::await_change());
    };
    let Some(sim_node) = ctx.agent.nodes.get(node_name) else {
        return Ok(Action::await_change());
    };
    let Some(node) = ctx.agent.node_store.get(&ObjectRef::new(node_name)) else {
        return Ok(Action::await_change());
    };
    if Faults::of(&node).node.is_some() {
        return Ok(Action::requeue(FAULT_RECHECK));
    }
    if ctx.already_written(&pod).await {
        // A timer fired before the watch brought back this agent's last write (a busy API
        // server lags by seconds): that write's event reconciles the pod again. Writing from
        // the stale copy failed with a conflict and was retried every 200 ms, several status
        // patches per pod at 1,000 nodes.
        return Ok(Action::requeue(STALE_RECHECK));
    }
    let api: Api<Pod> = Api::namespaced(
        ctx.agent.client.clone(),
        &pod.namespace().unwrap_or_default(),
    );
    let now = Timestamp::now();
    let status = pod.status.clone().unwrap_or_default();
    let terminal = matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"));
    if pod.metadata.deletion_timestamp.is_some() {
        return terminate(&api, &pod, &ctx, now).await;
    }
    if terminal {
        ctx.forget(&pod).await;
        return Ok(Action::await_change());
    }
    let times = ctx.times(&pod).await;
    let Some(start_time) = status
        .start_time
        .as_ref()
        .map(|t| times.accepted.unwrap_or(t.0))
    else {
        if let Some(reason) = admission_rejection(&pod) {
            write_status(&api, &pod, &ctx, rejected(&pod, &reason, now)).await?;
            ctx.forget(&pod).await;
            tracing::debug!(pod = %pod.name_any(), node = %node_name, %reason, "rejected at admission");
            return Ok(Action::await_change());
        }
        write_status(&api, &pod, &ctx, accepted(&pod, sim_node, now)).await?;
        ctx.record(&pod, |t| t.accepted = Some(now)).await;
        tracing::debug!(pod = %pod.name_any(), node = %node_name, "accepted");
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let Some(started_at) = running_since(&status).map(|t| times.running.unwrap_or(t)) else {
        let delay =
            seconds(&pod, sim::START_SECONDS).unwrap_or(signed(ctx.agent.options.start_delay));
        let due = add(start_time, delay);
        if now < due {
            return Ok(at(due, now));
        }
        if let Some(error) = annotation(&pod, sim::IMAGE_PULL_ERROR) {
            if !pull_failing(&status) {
                write_status(&api, &pod, &ctx, pull_failed(&pod, error)).await?;
                tracing::debug!(pod = %pod.name_any(), node = %node_name, "image pull fails");
            }
            return Ok(Action::await_change());
        }
        let ip = status
            .pod_ip
            .clone()
            .unwrap_or_else(|| allocate_ip(&ctx.pods));
        write_status(&api, &pod, &ctx, running(&pod, ip, now)).await?;
        ctx.record(&pod, |t| t.running = Some(now)).await;
        tracing::debug!(pod = %pod.name_any(), node = %node_name, "running");
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    if is_reservation(&pod) && annotation(&pod, RESERVED_DEVICE_ANNOTATION).is_none() {
        return reserve_device(&api, &pod, &ctx, sim_node).await;
    }
    let mut next = checkpoint(&api, &pod, &ctx, now).await?;
    if let Some(run) = seconds(&pod, sim::RUN_SECONDS) {
        let due = add(started_at, run);
        if now >= due {
            let (phase, finished) = finished(&pod, now);
            write_status(&api, &pod, &ctx, finished).await?;
            ctx.forget(&pod).await;
            tracing::debug!(pod = %pod.name_any(), node = %node_name, phase, "finished");
            return Ok(Action::await_change());
        }
        next = Some(next.map_or(due, |n| n.min(due)));
    }
    Ok(next.map_or_else(Action::await_change, |due| at(due, now)))
}

/// When the pod's containers started running (the earliest), if they are running.
fn running_since(status: &PodStatus) -> Option<Timestamp> {
    status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| {
            c.state
                .as_ref()?
                .running
                .as_ref()?
                .started_at
                .as_ref()
                .map(|t| t.0)
        })
        .min()
}

async fn write_status(
    api: &Api<Pod>,
    pod: &Pod,
    ctx: &PodCtx,
    status: PodStatus,
) -> Result<(), Error> {
    let rv = pod.resource_version();
    let body = json!({ "metadata": { "resourceVersion": rv }, "status": status });
    api.patch_status(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(body),
    )
    .await?;
    if let (Some(uid), Some(rv)) = (pod.uid(), rv) {
        ctx.written_from.lock().await.insert(uid, rv);
    }
    Ok(())
}

/// Sets condition `type_` (keeping its transition time when the status does not change).
fn set_condition(
    status: &mut PodStatus,
    type_: &str,
    value: bool,
    reason: Option<&str>,
    now: Timestamp,
) {
    let value = if value { "True" } else { "False" };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let since = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == value)
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    conditions.retain(|c| c.type_ != type_);
    conditions.push(PodCondition {
        type_: type_.into(),
        status: value.into(),
        reason: reason.map(Into::into),
        last_transition_time: Some(since),
        ..Default::default()
    });
}

fn container_status(
    pod: &Pod,
    name: &str,
    image: Option<&String>,
    state: ContainerState,
    ready: bool,
) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        image: image.cloned().unwrap_or_default(),
        image_id: if ready || state.terminated.is_some() {
            format!("sim://{}", image.map_or("", |s| s))
        } else {
            String::new()
        },
        container_id: state
            .waiting
            .is_none()
            .then(|| format!("sim://{}-{name}", pod.uid().unwrap_or_default())),
        ready,
        started: Some(ready),
        restart_count: 0,
        state: Some(state),
        ..Default::default()
    }
}

fn containers(pod: &Pod) -> impl Iterator<Item = (&String, Option<&String>)> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| (&c.name, c.image.as_ref()))
}

fn init_containers(pod: &Pod) -> impl Iterator<Item = (&String, Option<&String>)> {
    pod.spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .map(|c| (&c.name, c.image.as_ref()))
}

/// The reason the kubelet refuses the pod at admission, if the test asked for one: only for
/// the job's first attempt, so that the operator's retry is admitted.
fn admission_rejection(pod: &Pod) -> Option<String> {
    let reason = annotation(pod, sim::ADMISSION_REJECT)?.trim().to_string();
    let first = annotation(pod, ATTEMPT_ANNOTATION).is_none_or(|a| a.trim() == "0");
    (first && !reason.is_empty()).then_some(reason)
}

/// Rejected at admission, as the kubelet writes it: `Failed` with the admission reason, no
/// container ever created.
fn rejected(pod: &Pod, reason: &str, now: Timestamp) -> PodStatus {
    let mut s = pod.status.clone().unwrap_or_default();
    s.phase = Some("Failed".into());
    s.reason = Some(reason.into());
    s.message = Some(format!(
        "Pod was rejected: the node refused the pod at admission ({reason})"
    ));
    s.start_time = Some(Time(now));
    s
}

/// First sight: Pending, accepted at `now`, containers being created.
fn accepted(pod: &Pod, node: &SimNode, now: Timestamp) -> PodStatus {
    let mut s = pod.status.clone().unwrap_or_default();
    s.phase = Some("Pending".into());
    s.host_ip = Some(node.address.clone());
    s.start_time = Some(Time(now));
    let has_init = init_containers(pod).next().is_some();
    set_condition(&mut s, "PodScheduled", true, None, now);
    set_condition(
        &mut s,
        "Initialized",
        !has_init,
        has_init.then_some("ContainersNotInitialized"),
        now,
    );
    set_condition(
        &mut s,
        "ContainersReady",
        false,
        Some("ContainersNotReady"),
        now,
    );
    set_condition(&mut s, "Ready", false, Some("ContainersNotReady"), now);
    let waiting = |reason: &str| ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    s.init_container_statuses = has_init.then(|| {
        init_containers(pod)
            .map(|(n, i)| container_status(pod, n, i, waiting("PodInitializing"), false))
            .collect()
    });
    s.container_statuses = Some(
        containers(pod)
            .map(|(n, i)| container_status(pod, n, i, waiting("ContainerCreating"), false))
            .collect(),
    );
    s
}

const PULL_BACKOFF: &str = "ImagePullBackOff";

/// Containers waiting on an image that cannot be pulled, as a kubelet reports it between
/// its attempts.
fn pull_failed(pod: &Pod, error: &str) -> PodStatus {
    let mut s = pod.status.clone().unwrap_or_default();
    let waiting = |image: Option<&String>| ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(PULL_BACKOFF.into()),
            message: Some(format!(
                "Back-off pulling image \"{}\": {error}",
                image.map_or("", |i| i.as_str())
            )),
        }),
        ..Default::default()
    };
    s.container_statuses = Some(
        containers(pod)
            .map(|(n, i)| container_status(pod, n, i, waiting(i), false))
            .collect(),
    );
    s
}

/// Whether the pod already says its image cannot be pulled.
fn pull_failing(status: &PodStatus) -> bool {
    status.container_statuses.iter().flatten().any(|c| {
        c.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_deref())
            == Some(PULL_BACKOFF)
    })
}

/// Containers started at `now`, pod Running and Ready with IP `ip`.
fn running(pod: &Pod, ip: String, now: Timestamp) -> PodStatus {
    let mut s = pod.status.clone().unwrap_or_default();
    s.phase = Some("Running".into());
    s.pod_ip = Some(ip.clone());
    s.pod_ips = Some(vec![PodIP { ip }]);
    for (t, v) in [
        ("PodScheduled", true),
        ("Initialized", true),
        ("ContainersReady", true),
        ("Ready", true),
    ] {
        set_condition(&mut s, t, v, None, now);
    }
    let has_init = init_containers(pod).next().is_some();
    s.init_container_statuses = has_init.then(|| {
        init_containers(pod)
            .map(|(n, i)| {
                let done = terminated(0, "Completed", Some(now), now);
                container_status(pod, n, i, done, false)
            })
            .collect()
    });
    let run = ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(Time(now)),
        }),
        ..Default::default()
    };
    s.container_statuses = Some(
        containers(pod)
            .map(|(n, i)| container_status(pod, n, i, run.clone(), true))
            .collect(),
    );
    s
}

fn terminated(
    exit_code: i32,
    reason: &str,
    started: Option<Timestamp>,
    now: Timestamp,
) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code,
            reason: Some(reason.into()),
            started_at: started.map(Time),
            finished_at: Some(Time(now)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Every container stopped with `exit_code`; phase as given (`None`: unchanged).
fn stopped(
    pod: &Pod,
    phase: Option<&str>,
    exit_code: i32,
    reason: &str,
    message: Option<String>,
    now: Timestamp,
) -> PodStatus {
    let mut s = pod.status.clone().unwrap_or_default();
    if let Some(phase) = phase {
        s.phase = Some(phase.into());
    }
    let started = running_since(&s);
    for t in ["ContainersReady", "Ready"] {
        set_condition(&mut s, t, false, Some("PodCompleted"), now);
    }
    s.container_statuses = Some(
        containers(pod)
            .map(|(n, i)| {
                let mut state = terminated(exit_code, reason, started, now);
                if let Some(t) = state.terminated.as_mut() {
                    t.message = message.clone();
                }
                container_status(pod, n, i, state, false)
            })
            .collect(),
    );
    s
}

/// The end of the run as the pod's annotations direct: (phase, status).
fn finished(pod: &Pod, now: Timestamp) -> (&'static str, PodStatus) {
    let oom = annotation(pod, sim::OOM).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let code = annotation(pod, sim::EXIT_CODE)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .unwrap_or(0);
    let (phase, code, reason) = match (oom, code) {
        (true, _) => ("Failed", OOM_EXIT_CODE, "OOMKilled"),
        (false, 0) => ("Succeeded", 0, "Completed"),
        (false, code) => ("Failed", code, "Error"),
    };
    (phase, stopped(pod, Some(phase), code, reason, None, now))
}

/// Answers a pending checkpoint request when its delay has passed; returns when to look
/// again if it is not due yet.
async fn checkpoint(
    api: &Api<Pod>,
    pod: &Pod,
    ctx: &PodCtx,
    now: Timestamp,
) -> Result<Option<Timestamp>, Error> {
    let Some(request) = annotation(pod, CHECKPOINT_REQUESTED) else {
        return Ok(None);
    };
    let requested_at = request.trim().parse::<Timestamp>().ok();
    if let Some(done) = annotation(pod, CHECKPOINT_DONE) {
        let answered = match (done.trim().parse::<Timestamp>().ok(), requested_at) {
            (Some(done), Some(requested)) => done >= requested,
            _ => true,
        };
        if answered {
            return Ok(None);
        }
    }
    let delay = match annotation(pod, sim::CHECKPOINT_DELAY) {
        Some(v) if v.trim().eq_ignore_ascii_case("never") => return Ok(None),
        _ => seconds(pod, sim::CHECKPOINT_DELAY)
            .unwrap_or(signed(ctx.agent.options.checkpoint_delay)),
    };
    let base = match requested_at {
        Some(t) => t,
        None => {
            let key = (pod.uid().unwrap_or_default(), request.to_string());
            *ctx.requests_seen.lock().await.entry(key).or_insert(now)
        }
    };
    let due = add(base, delay);
    if now < due {
        tracing::debug!(pod = %pod.name_any(), %due, "checkpoint requested");
        return Ok(Some(due));
    }
    // Whole seconds, unless that would make the answer older than the request.
    let stamp = now
        .round(
            TimestampRound::new()
                .smallest(Unit::Second)
                .mode(RoundMode::Trunc),
        )
        .unwrap_or(now);
    let stamp = if requested_at.is_some_and(|r| stamp < r) {
        now
    } else {
        stamp
    };
    let patch = json!({ "metadata": { "annotations": { CHECKPOINT_DONE: stamp.to_string() } } });
    api.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    tracing::debug!(pod = %pod.name_any(), "checkpoint acknowledged");
    Ok(None)
}

fn is_reservation(pod: &Pod) -> bool {
    pod.labels().get(RESERVATION_LABEL).map(String::as_str) == Some("true")
}

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// The devices a device plugin on node `node` hands out, lowest index first: the UUIDs of
/// the GPUs its simulated NVML reads (the ones the simulated labeler publishes), or
/// `GPU-<node>-<index>` without end on a node without topology (the agent does not check a
/// pod's requests against its node, so a reservation bound there runs as any pod does).
fn node_devices<'a>(
    node: &'a str,
    topology: Option<&'a NodeTopology>,
) -> Box<dyn Iterator<Item = String> + 'a> {
    match topology {
        Some(t) => {
            let mut gpus: Vec<_> = t.gpus.iter().map(|g| (g.index, g.uuid.clone())).collect();
            gpus.sort();
            Box::new(gpus.into_iter().map(|(_, uuid)| uuid))
        }
        None => Box::new((0u32..).map(move |i| format!("GPU-{node}-{i}"))),
    }
}

/// The device a device plugin would allocate to reservation pod `pod`: the first of
/// `devices` (lowest index first) that no other reservation pod on the same node reports
/// while it still holds its resources (neither Succeeded nor Failed). A pod reports its
/// device by its annotation or, while the cache does not show that yet, in `written` (uid →
/// device this agent wrote). `None` when every device is taken.
fn reservation_device<'a>(
    pod: &Pod,
    devices: impl IntoIterator<Item = String>,
    pods: impl IntoIterator<Item = &'a Pod>,
    written: &HashMap<String, String>,
) -> Option<String> {
    let node = node_name(pod)?;
    let same_pod = |other: &Pod| match (pod.uid(), other.uid()) {
        (Some(a), Some(b)) => a == b,
        _ => pod.namespace() == other.namespace() && pod.name_any() == other.name_any(),
    };
    let taken: HashSet<String> = pods
        .into_iter()
        .filter(|p| is_reservation(p) && node_name(p) == Some(node) && !same_pod(p))
        .filter(|p| holds_resources(p))
        .filter_map(|p| {
            annotation(p, RESERVED_DEVICE_ANNOTATION)
                .map(|d| d.trim().to_string())
                .or_else(|| written.get(&p.uid()?).cloned())
        })
        .collect();
    devices.into_iter().find(|d| !taken.contains(d))
}

/// Plays the reservation's container: writes the device it got on its pod.
async fn reserve_device(
    api: &Api<Pod>,
    pod: &Pod,
    ctx: &PodCtx,
    node: &SimNode,
) -> Result<Action, Error> {
    let mut written = ctx.devices.lock().await;
    let pods = ctx.pods.state();
    let devices = node_devices(&node.name, node.topology.as_ref());
    let Some(device) = reservation_device(pod, devices, pods.iter().map(|p| &**p), &written) else {
        tracing::warn!(pod = %pod.name_any(), node = %node.name, "reservation: every GPU of the node is taken");
        return Ok(Action::requeue(NO_DEVICE_RECHECK));
    };
    let rv = pod.resource_version();
    let body = json!({ "metadata": {
        "resourceVersion": rv,
        "annotations": { RESERVED_DEVICE_ANNOTATION: device },
    } });
    api.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(body),
    )
    .await?;
    if let Some(uid) = pod.uid() {
        written.insert(uid.clone(), device.clone());
        if let Some(rv) = rv {
            ctx.written_from.lock().await.insert(uid, rv);
        }
    }
    tracing::debug!(pod = %pod.name_any(), node = %node.name, %device, "reservation reports its device");
    Ok(Action::requeue(Duration::from_secs(1)))
}

/// Graceful deletion: stop the containers once the (capped) grace period has passed, then
/// remove the pod.
async fn terminate(
    api: &Api<Pod>,
    pod: &Pod,
    ctx: &PodCtx,
    now: Timestamp,
) -> Result<Action, Error> {
    let grace = pod
        .metadata
        .deletion_grace_period_seconds
        .unwrap_or(0)
        .max(0);
    if grace == 0 {
        // Already being removed at once; only finalizers can hold it.
        return Ok(Action::await_change());
    }
    let status = pod.status.clone().unwrap_or_default();
    let terminal = matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"));
    if !terminal && running_since(&status).is_some() {
        let Some(deadline) = pod.metadata.deletion_timestamp.as_ref().map(|t| t.0) else {
            return Ok(Action::await_change());
        };
        let grace = SignedDuration::from_secs(grace);
        // The request time is deadline − grace, to the second; when this agent saw the
        // deletion happen, the time it saw it is more precise.
        let seen = match ctx.times(pod).await.deletion_seen {
            Some(t) => t,
            None => {
                ctx.record(pod, |t| t.deletion_seen = Some(now)).await;
                now
            }
        };
        let requested = add(deadline, -grace);
        let requested = if seen >= requested && seen < add(requested, SignedDuration::from_secs(1))
        {
            seen
        } else {
            requested
        };
        let due = add(
            requested,
            grace.min(signed(ctx.agent.options.max_termination_grace)),
        );
        if now < due {
            return Ok(at(due, now));
        }
        let message = Some("stopped by pod deletion (simulated)".to_string());
        write_status(
            api,
            pod,
            ctx,
            stopped(pod, None, SIGTERM_EXIT_CODE, "Error", message, now),
        )
        .await?;
    }
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.uid(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    ctx.forget(pod).await;
    tracing::debug!(pod = %pod.name_any(), "deleted");
    Ok(Action::await_change())
}

static NEXT_IP: AtomicU32 = AtomicU32::new(0);

/// A pod IP in 10.244.0.0/16 that no bound pod has; the sequence starts at an offset derived
/// from the process id so that two agents on one API server rarely race for an address.
fn allocate_ip(pods: &Store<Pod>) -> String {
    let used: HashSet<String> = pods
        .state()
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();
    let offset = std::process::id().wrapping_mul(4099);
    let ip = |n: u32| {
        let n = n.wrapping_add(offset) % POD_IPS + 1;
        format!("10.244.{}.{}", n >> 8, n & 0xff)
    };
    for _ in 0..POD_IPS {
        let candidate = ip(NEXT_IP.fetch_add(1, Ordering::Relaxed));
        if !used.contains(&candidate) {
            return candidate;
        }
    }
    tracing::warn!("pod network 10.244.0.0/16 exhausted; reusing an address");
    ip(NEXT_IP.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "p", "namespace": "n", "uid": "u", "annotations": annotations },
            "spec": { "nodeName": "node", "containers": [{ "name": "main", "image": "busybox" }] },
        }))
        .unwrap()
    }

    #[test]
    fn lifecycle_statuses_are_consistent() {
        let now = Timestamp::now();
        let node = super::super::cluster::ClusterSpec::single(
            "t",
            super::super::cluster::NodeGroup::gpu_nodes("a", 1, 8, "NVIDIA A100-SXM4-80GB"),
        )
        .nodes()
        .remove(0);
        let mut p = pod(json!({ sim::EXIT_CODE: "3" }));
        p.status = Some(accepted(&p, &node, now));
        assert_eq!(running_since(p.status.as_ref().unwrap()), None);
        p.status = Some(running(&p, "10.244.0.7".into(), now));
        assert_eq!(running_since(p.status.as_ref().unwrap()), Some(now));
        let (phase, s) = finished(&p, now);
        assert_eq!(phase, "Failed");
        let t = s.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!((t.exit_code, t.reason.as_deref()), (3, Some("Error")));
        let ready = s
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.status, "False");

        let oom = pod(json!({ sim::OOM: "true" }));
        let (phase, s) = finished(&oom, now);
        let t = s.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(
            (phase, t.exit_code, t.reason.as_deref()),
            ("Failed", 137, Some("OOMKilled"))
        );
        assert_eq!(finished(&pod(json!({})), now).0, "Succeeded");
    }

    /// A reservation pod on `node`, in `phase`, reporting `device` if any.
    fn reservation(uid: &str, node: &str, phase: &str, device: Option<&str>) -> Pod {
        let annotations = match device {
            Some(d) => json!({ RESERVED_DEVICE_ANNOTATION: d }),
            None => json!({}),
        };
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("r-{uid}"), "namespace": "n", "uid": uid,
                "labels": { RESERVATION_LABEL: "true" }, "annotations": annotations,
            },
            "spec": { "nodeName": node, "containers": [{ "name": "reserve", "image": "op" }] },
            "status": { "phase": phase },
        }))
        .unwrap()
    }

    fn devices(n: u32) -> Vec<String> {
        (0..n).map(|i| format!("GPU-{i}")).collect()
    }

    #[test]
    fn a_reservation_gets_the_lowest_free_device() {
        let me = reservation("me", "a", "Running", None);
        let none = HashMap::new();
        let pick = |pods: &[Pod], written: &HashMap<String, String>| {
            reservation_device(&me, devices(4), pods.iter().chain([&me]), written)
        };
        assert_eq!(pick(&[], &none).as_deref(), Some("GPU-0"));
        let others = [
            reservation("x", "a", "Running", Some("GPU-0")),
            reservation("y", "a", "Pending", Some("GPU-2")),
        ];
        assert_eq!(pick(&others, &none).as_deref(), Some("GPU-1"));
        assert_eq!(pick(&others, &none), pick(&others, &none), "deterministic");
        // What other nodes, finished pods and pods that are no reservation report is free.
        let mut plain = reservation("p", "a", "Running", Some("GPU-0"));
        plain.labels_mut().clear();
        let ignored = [
            reservation("b", "b", "Running", Some("GPU-0")),
            reservation("s", "a", "Succeeded", Some("GPU-0")),
            reservation("f", "a", "Failed", Some("GPU-0")),
            plain,
        ];
        assert_eq!(pick(&ignored, &none).as_deref(), Some("GPU-0"));
        // Its own (earlier) report does not take the device from it.
        let again = reservation("me", "a", "Running", Some("GPU-0"));
        assert_eq!(
            reservation_device(&me, devices(4), [&again], &none).as_deref(),
            Some("GPU-0")
        );
        // A device this agent wrote that the cache does not show yet is taken.
        let unseen = [reservation("z", "a", "Running", None)];
        let written = HashMap::from([("z".to_string(), "GPU-0".to_string())]);
        assert_eq!(pick(&unseen, &written).as_deref(), Some("GPU-1"));
        // Every device taken.
        let full: Vec<Pod> = (0..4)
            .map(|i| reservation(&format!("o{i}"), "a", "Running", Some(&format!("GPU-{i}"))))
            .collect();
        assert_eq!(pick(&full, &none), None);
    }

    #[test]
    fn node_devices_are_the_simulated_nvml_uuids() {
        let node = super::super::cluster::ClusterSpec::single(
            "t",
            super::super::cluster::NodeGroup::gpu_nodes("a", 1, 4, "NVIDIA A100-SXM4-80GB"),
        )
        .nodes()
        .remove(0);
        let topology = node.topology.as_ref().unwrap();
        let uuids: Vec<String> = node_devices(&node.name, Some(topology)).collect();
        let expected: Vec<String> = (0..4)
            .map(|i| {
                topology
                    .gpus
                    .iter()
                    .find(|g| g.index == i)
                    .unwrap()
                    .uuid
                    .clone()
            })
            .collect();
        assert_eq!(uuids, expected);
        assert!(uuids.iter().all(|u| u.starts_with("GPU-")));
        let bare: Vec<String> = node_devices("cpu-0", None).take(2).collect();
        assert_eq!(bare, ["GPU-cpu-0-0", "GPU-cpu-0-1"]);
        // On a node without topology the devices never run out.
        let me = reservation("me", "cpu-0", "Running", None);
        let other = reservation("o", "cpu-0", "Running", Some("GPU-cpu-0-0"));
        assert_eq!(
            reservation_device(&me, node_devices("cpu-0", None), [&other], &HashMap::new())
                .as_deref(),
            Some("GPU-cpu-0-1")
        );
    }

    #[test]
    fn allocates_distinct_ips() {
        let (store, _writer) = kube::runtime::reflector::store::<Pod>();
        let ips: HashSet<String> = (0..1000).map(|_| allocate_ip(&store)).collect();
        assert_eq!(ips.len(), 1000);
        assert!(ips.iter().all(|ip| ip.starts_with("10.244.")));
    }
}
