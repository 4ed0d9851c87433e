//! The scheduling loop: one task that runs a cycle on every cache change (debounced) and on a
//! periodic resync. A cycle reads as three steps, as Kueue numbers its own:
//!
//! 1. **Observe** (`observe`): let go of the admissions and checkpoint requests the caches
//!    now show, then read the caches, the waits and usage last published, and the time, once.
//! 2. **Plan** ([`cycle_plan::plan`], pure): the snapshot, [`sched::schedule`]'s decisions,
//!    the usage, the reservations, the waits to publish, and the API calls that follow.
//! 3. **Carry out** (`record`, `carry_out`): the state and metrics, then the calls:
//!    admission creates the gang's pods bound to their nodes; preemption marks the victims'
//!    pods with a checkpoint request.
//!
//! Everything else — phases, conditions, deleting pods after a checkpoint — is the
//! TrainingJob reconciler's, which reads the same caches.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use tracing::{Instrument, debug, error, info, info_span, warn};

use super::caches::{Caches, RefMaps};
use super::context::{Context, SchedulerState, Settings};
use super::cycle_plan::{self, CyclePlan};
use super::duration_history;
use super::gang::Gang;
use super::job_key::{JobKey, owned_by};
use super::metrics::{QueueLabels, ReasonLabels};
use super::pods::{
    PodSettings, bonus_patch, checkpoint_request_patch, disruption_budget, gang_pods,
    headless_service,
};
use super::snapshot::{Asked, Inflight, World};
use super::usage::Usage;
use super::waiting::Published;
use super::writer::Writer;
use crate::api::TrainingJob;
use crate::api::annotations::{PREEMPTED_FOR, PREEMPTION_REASON};
use crate::api::reasons::EventReason;
use crate::sched;

#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    #[error("job {0} is no longer in the cache")]
    Gone(String),
    #[error("building pods: {0}")]
    Pods(#[from] super::pods::PodError),
    /// The object itself is wrong (422 Invalid, 400 BadRequest): the same spec would be
    /// refused again, so the job is held until it changes ([`Context::refuse`]).
    #[error("the API server refused {object}: {message}")]
    Refused { object: String, message: String },
    /// An object of the gang's name (a pod, the Service, the budget) that another
    /// controller owns: left by a deleted job of the same name, which garbage collection may
    /// still be removing. The operator neither adopts nor deletes it.
    #[error(
        "{0} already exists and is not this job's (an earlier job of the same name left it?); \
         delete it to let the job start"
    )]
    Occupied(String),
    /// A pod of the gang's name that an earlier job of the same name left is still being
    /// deleted (the job was deleted and re-created at once): no one needs to act, the next
    /// cycle tries again once it is gone.
    #[error("pod {0} of an earlier job of the same name is still terminating")]
    PredecessorLeaving(String),
    /// Anything else (5xx, a conflict, a timeout, a quota): the next cycle tries again.
    #[error("creating {object}: {}", api_message(.source))]
    Kube {
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// What the API server said (its `message`), rather than kube's dump of the whole Status.
fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        e => e.to_string(),
    }
}

/// The failure to create `object`: refused when the API server says the object itself is
/// wrong, which no retry fixes.
fn create_error(object: String, e: kube::Error) -> AdmitError {
    match &e {
        kube::Error::Api(s) if matches!(s.code, 400 | 422) => AdmitError::Refused {
            object,
            message: s.message.clone(),
        },
        _ => AdmitError::Kube { object, source: e },
    }
}

/// The Warning Event's note for a failed admission.
fn admission_failed_note(e: &AdmitError) -> String {
    match e {
        AdmitError::Refused { .. } => format!(
            "Could not create the job's pods: {e}. The job is not scheduled until its spec \
             changes (Valid=False, InvalidTemplate)."
        ),
        _ => format!("Could not create the job's pods: {e}. It stays queued and is retried."),
    }
}

/// Gangs created, or victims asked to checkpoint, at the same time by one cycle.
const ADMISSION_CONCURRENCY: usize = 32;

/// Runs cycles until the process stops.
pub async fn run(ctx: Arc<Context>) {
    let mut last_work = Duration::ZERO;
    loop {
        tokio::select! {
            _ = ctx.signals.wake.notified() => {}
            _ = tokio::time::sleep(ctx.settings.resync) => {}
        }
        // Let a burst of changes (a gang's pods, many applied jobs) land before looking, and
        // leave the rest of the operator at least as long as the last cycle's own work took:
        // every pod and job change wakes the loop, and in a large cluster (a cycle over
        // 10,000 jobs takes most of a second) cycles would otherwise run back to back on a
        // core the reconcilers and the API server's other clients need.
        tokio::time::sleep(ctx.settings.debounce.max(last_work)).await;
        last_work = cycle(&ctx).instrument(info_span!("cycle")).await;
    }
}

/// One scheduling cycle; returns how long its own work took (the observation, the snapshot,
/// the core and the usage, without the API calls that carry the decisions out).
pub async fn cycle(ctx: &Arc<Context>) -> Duration {
    let started = Instant::now();
    ctx.scheduler.state().scheduling = true;
    // The cycle's one reading of the clock: the plan decides at this time, and the
    // admissions and requests in flight are dated by it.
    let now = Timestamp::now().as_second();
    // 1. Observe: the scheduler's memory and the caches, read once.
    let observed = observe(&ctx.caches, &ctx.scheduler, now);
    // 2. Plan: the snapshot, the core's decisions and all that follows from them without
    //    the API (`cycle_plan`). Its work (20 ms to most of a second at 10,000 jobs) runs on
    //    a blocking thread: on a runtime worker it would hold up the watches, the
    //    reconcilers and the lease renewal that share it.
    let planned = tokio::task::spawn_blocking({
        let (ctx, span) = (ctx.clone(), tracing::Span::current());
        move || {
            let _cycle = span.enter();
            let shapes = |snap: &sched::Snapshot| workload_shapes(&ctx, snap, &observed.jobs);
            cycle_plan::plan(&observed.inputs(&ctx.settings, &shapes))
        }
    })
    .await;
    let mut plan = match planned {
        Ok(plan) => plan,
        Err(e) => {
            // A fault of the core's, not of any one object: nothing is carried out, and the
            // next cycle (on the next change or resync) tries again.
            error!(error = %e, "scheduling cycle failed; nothing was changed");
            ctx.scheduler.state().scheduling = false;
            return started.elapsed();
        }
    };
    let work = started.elapsed();
    ctx.metrics.cycle_seconds.observe(work.as_secs_f64());
    // 3. Carry out: the plan's numbers and waits, then its API calls.
    record(ctx, &mut plan, started);
    carry_out(ctx, plan, now).await;
    ctx.scheduler.state().scheduling = false;
    work
}

/// What one cycle reads: the scheduler's memory (the admissions and checkpoint requests still
/// in flight, the waits and usage last published) and the caches.
struct Observed {
    now: i64,
    inflight: BTreeMap<JobKey, Inflight>,
    asked: BTreeMap<JobKey, Asked>,
    published: BTreeMap<JobKey, Published>,
    usage: Usage,
    nodes: Vec<Arc<Node>>,
    pods: Vec<Arc<Pod>>,
    jobs: Vec<Arc<TrainingJob>>,
    maps: Arc<RefMaps>,
    /// Predicted run times of the jobs first seen (`duration_history`).
    predictions: BTreeMap<JobKey, i64>,
}

impl Observed {
    fn inputs<'a>(
        &'a self,
        settings: &'a Settings,
        shapes: &'a dyn Fn(&sched::Snapshot) -> Vec<sched::WorkloadShape>,
    ) -> cycle_plan::Inputs<'a> {
        cycle_plan::Inputs {
            world: World {
                now: self.now,
                nodes: &self.nodes,
                pods: &self.pods,
                jobs: &self.jobs,
                refs: self.maps.refs(),
                inflight: &self.inflight,
                asked: &self.asked,
                reservation_namespace: &settings.pods.reservation.namespace,
                predictions: &self.predictions,
            },
            options: &settings.sched,
            published: &self.published,
            usage: &self.usage,
            shapes,
        }
    }
}

/// Step 1: lets go of the admissions and checkpoint requests the caches now show (or that
/// no longer matter), then reads the caches.
fn observe(caches: &Caches, scheduler: &SchedulerState, now: i64) -> Observed {
    let (inflight, asked, published, usage) = {
        let mut state = scheduler.state();
        // An admission stops being in flight once the cache shows every pod of it, in any
        // phase (a pod the kubelet refused at admission is Failed at once, and must not
        // keep its GPUs reserved), or once the job has moved on to another attempt or gone.
        state.inflight.retain(|job, f| {
            let Some(current) = caches.stores.jobs.get(&job.object_ref()) else {
                return false;
            };
            let seen = Gang::new(caches.job_pods(&current)).of_attempt(f.attempt);
            seen < f.placement.len() && job_attempt(&current) == f.attempt && now - f.at < 120
        });
        // A checkpoint request stops being in flight once the cache shows it on the job's
        // pods, or once they are leaving, the job moved on to another attempt or is gone.
        state.asked.retain(|job, a| {
            let Some(current) = caches.stores.jobs.get(&job.object_ref()) else {
                return false;
            };
            let gang = Gang::new(caches.job_pods(&current));
            gang.scheduler_request().is_none()
                && !gang.leaving()
                && job_attempt(&current) == a.attempt
                && now - a.at < 120
        });
        // The waits and usage only the cycle writes: the last cycle's.
        (
            state.inflight.clone(),
            state.asked.clone(),
            state.waiting.clone(),
            state.usage.clone(),
        )
    };
    // The caches are read after the admissions in flight were let go: one let go because the
    // cache showed its pods is then in this view too. Read before, a pod arriving in between
    // left the job with neither its pods nor its admission, and it was admitted again.
    let jobs = caches.stores.jobs.state();
    let predictions = predict(scheduler, &jobs, now);
    Observed {
        now,
        inflight,
        asked,
        published,
        usage,
        nodes: caches.stores.nodes.state(),
        pods: caches.stores.pods.state(),
        jobs,
        maps: caches.ref_maps(),
        predictions,
    }
}

/// Records the runs that finished since the last cycle in the history of run times, and
/// predicts the run time of each job it sees for the first time: not finished, no status
/// prediction yet, none in its spec. Its reconciler writes the same prediction in its status
/// (`lifecycle`, `duration_history::settle`); until then this cycle's carries it.
fn predict(
    scheduler: &SchedulerState,
    jobs: &[Arc<TrainingJob>],
    now: i64,
) -> BTreeMap<JobKey, i64> {
    let mut durations = scheduler.durations();
    let recorded = durations.record_finished(jobs, now);
    if recorded > 0 {
        debug!(
            recorded,
            identities = durations.predictor().len(),
            "run times recorded"
        );
    }
    jobs.iter()
        .filter(|j| j.spec.predicted_duration_seconds.is_none())
        .filter(|j| {
            j.status
                .as_ref()
                .is_none_or(|s| s.prediction.is_none() && !s.phase.is_finished())
        })
        .filter_map(|j| {
            let p = durations
                .predictor()
                .predict(&duration_history::identity_of(j))?;
            Some((JobKey::of(j), p.seconds))
        })
        .collect()
}

/// Step 3, first part: the plan's numbers in the metrics, its waits and usage moved into the
/// scheduler's state; the jobs whose published wait changed are reconciled, rather than
/// every waiting job polled.
fn record(ctx: &Context, plan: &mut CyclePlan, started: Instant) {
    for (phase, n) in &plan.by_phase {
        ctx.metrics
            .jobs
            .get_or_create(&super::metrics::PhaseLabels {
                phase: phase.clone(),
            })
            .set(*n);
    }
    debug!(
        nodes = plan.nodes,
        jobs = plan.jobs,
        admitted = plan.admissions.len(),
        preempted = plan.preemptions,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "cycle"
    );
    {
        let mut state = ctx.scheduler.state();
        state.waiting = std::mem::take(&mut plan.waiting);
        if plan.usage_changed {
            ctx.signals
                .usage_changed
                .send_modify(|v| *v = v.wrapping_add(1));
        }
        state.usage = std::mem::take(&mut plan.usage);
    }
    for job in &plan.reconcile {
        ctx.signals.job_triggers.request(job.object_ref());
    }
}

/// Step 3: the plan's API calls, in this order: gangs created, requests withdrawn, victims
/// asked, beneficiaries told, bonus marks changed, reservations.
async fn carry_out(ctx: &Arc<Context>, plan: CyclePlan, now: i64) {
    // The core's placements never overlap, so gangs are created concurrently; each waits
    // only on its own API calls.
    futures::stream::iter(&plan.admissions)
        .for_each_concurrent(ADMISSION_CONCURRENCY, |(job, admission)| async move {
            if let Err(e) = admit(ctx, job, admission, now).await {
                admission_failed(ctx, job, e).await;
            }
        })
        .await;
    // Withdrawals first: a victim cancelled and preempted again in one cycle keeps its
    // request (the core drops such a cancellation), so the two never cross.
    for (job, cancellation) in &plan.withdrawals {
        super::withdrawal::withdraw(&ctx.caches, &ctx.writer, job, cancellation).await;
    }
    // Every victim is asked at once: a victim's grace period runs from its own request, and
    // the beneficiary waits for the last of them.
    futures::stream::iter(&plan.asks)
        .for_each_concurrent(ADMISSION_CONCURRENCY, |ask| async move {
            for preemption in &ask.preemptions {
                request_checkpoint(ctx, &ask.victim, preemption).await;
            }
        })
        .await;
    for (job, note) in plan.making_room {
        event_in_background(ctx, &job, EventReason::MakingRoom, note);
    }
    for (job, bonus) in &plan.marks {
        mark_bonus(&ctx.caches, &ctx.writer, job, *bonus).await;
    }
    // Shares on device-plugin nodes: their GPUs' reservations, and the shares whose
    // reservation reported its device.
    super::reservation_writes::carry_out(ctx, plan.reservations).await;
}

/// A failed admission: a Warning Event, and the job held when the API server refused it.
async fn admission_failed(ctx: &Arc<Context>, job: &Arc<TrainingJob>, e: AdmitError) {
    if let AdmitError::PredecessorLeaving(_) = e {
        // Nothing for anyone to do: a Warning here asked users to delete a pod that was
        // already going.
        debug!(job = %JobKey::of(job), reason = %e, "admission waits");
        return;
    }
    warn!(job = %JobKey::of(job), error = %e, "admission failed");
    if let AdmitError::Refused { object, message } = &e {
        ctx.refuse(job, object.clone(), message.clone());
    }
    ctx.writer
        .event(
            job.as_ref(),
            EventType::Warning,
            EventReason::AdmissionFailed.as_str(),
            admission_failed_note(&e),
        )
        .await;
}

/// The workload's shapes for the fragmentation score: the supplied ones, else the history
/// after recording this snapshot's arrivals (empty while learning is off: the core learns
/// the mix from the snapshot).
fn workload_shapes(
    ctx: &Context,
    snap: &sched::Snapshot,
    jobs: &[Arc<TrainingJob>],
) -> Vec<sched::WorkloadShape> {
    let settings = &ctx.settings.workload;
    if !settings.supplied.is_empty() {
        return settings.supplied.clone();
    }
    if !settings.learns() {
        return Vec::new();
    }
    let mut history = ctx.scheduler.history();
    let arrived = super::workload::learn(&mut history, snap, jobs);
    if arrived > 0 {
        debug!(arrived, kept = history.len(), "workload history");
    }
    ctx.metrics
        .workload_history_arrivals
        .set(history.len() as i64);
    history.shapes()
}

/// Creates the gang: the headless Service, then every pod, bound to its node. On a failure
/// the pods already created are deleted, so no job is ever half-started.
/// Which admission of the job comes next: every earlier one ended in a retry, a preemption
/// or an infrastructure retry.
fn job_attempt(job: &TrainingJob) -> i32 {
    let status = job.status.clone().unwrap_or_default();
    status.retries + status.preemptions + status.infrastructure_retries
}

/// `now`: the cycle's time, the admission's date in flight and the end of the job's wait.
async fn admit(
    ctx: &Arc<Context>,
    job: &Arc<TrainingJob>,
    admission: &sched::Admission,
    now: i64,
) -> Result<(), AdmitError> {
    let key = JobKey::of(job);
    let ns = job
        .namespace()
        .ok_or_else(|| AdmitError::Gone(key.to_string()))?;
    let attempt = job_attempt(job);
    let uid = job.uid().unwrap_or_default();
    let pods = gang_of(
        &ctx.caches,
        &ctx.settings.pods,
        job,
        admission,
        attempt,
        &ns,
        &uid,
    )?;
    ctx.scheduler.state().inflight.insert(
        key.clone(),
        Inflight {
            placement: admission.placement.clone(),
            bonus: admission.bonus,
            at: now,
            attempt,
        },
    );
    if let Err(err) = create_gang(&ctx.writer, &ctx.settings.pods, job, pods, &ns, &uid).await {
        ctx.scheduler.state().inflight.remove(&key);
        return Err(err);
    }
    record_admission(ctx, job, &key, admission, now);
    Ok(())
}

/// The gang's pods for this admission, or why they cannot be created: a pod of the gang's
/// name that the cache shows as another's fails the admission before anything is created,
/// rather than create the rest of the gang and undo it every cycle.
fn gang_of(
    caches: &Caches,
    settings: &PodSettings,
    job: &TrainingJob,
    admission: &sched::Admission,
    attempt: i32,
    ns: &str,
    uid: &str,
) -> Result<Vec<Pod>, AdmitError> {
    // A node advertising `nvidia.com/gpu` runs a device plugin (for `--gpu-binding auto`).
    let advertises_gpus = |node: &str| {
        caches
            .stores
            .nodes
            .get(&ObjectRef::new(node))
            .and_then(|n| n.status.clone())
            .and_then(|s| s.allocatable)
            .is_some_and(|a| a.contains_key(super::resources::GPU_RESOURCE))
    };
    let pods = gang_pods(
        job,
        &admission.placement,
        admission.bonus,
        attempt,
        settings,
        &advertises_gpus,
    )?;
    if let Some(taken) = pods.iter().find_map(|p| {
        caches
            .stores
            .pods
            .get(&ObjectRef::new(&p.name_any()).within(ns))
            .filter(|present| !owned_by(present.as_ref(), uid))
    }) {
        return Err(taken_by_another(taken.as_ref()));
    }
    Ok(pods)
}

/// Creates the gang: its Service and pods together, then its disruption budget. A failure
/// of any of them deletes the pods created, so the gang is created whole or not at all.
async fn create_gang(
    writer: &Writer,
    settings: &PodSettings,
    job: &TrainingJob,
    pods: Vec<Pod>,
    ns: &str,
    uid: &str,
) -> Result<(), AdmitError> {
    // The Service and the pods go out together: neither waits for the other (pods need no
    // Service to be created, only to resolve names once running), then the budget.
    let services: Api<Service> = Api::namespaced(writer.client.clone(), ns);
    let service = headless_service(job, settings);
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(writer.client.clone(), ns);
    let budget = disruption_budget(job);
    let create_service = async {
        match &service {
            Some(service) => create_owned(&services, service, uid, "Service", create_error).await,
            None => Ok(()),
        }
    };
    let api: Api<Pod> = Api::namespaced(writer.client.clone(), ns);
    let create_pods = futures::stream::iter(pods)
        .map(|pod| create_pod(&api, pod, uid))
        .buffer_unordered(16)
        .collect::<Vec<Result<String, AdmitError>>>();
    let (service, mut results) = futures::join!(create_service, create_pods);
    let mut failed = match service {
        Err(e) => Some(e),
        Ok(()) => results
            .iter()
            .position(Result::is_err)
            .and_then(|i| results.swap_remove(i).err()),
    };
    // The budget keeps `kubectl drain` from evicting the gang outright; kubetrain stops it
    // with a checkpoint instead (PreemptionReason::Drain). It is owned by the job. It goes
    // out after the pods: the disruption controller syncs a new budget at once, and one
    // created beside its pods found none in a responsive cluster (a `NoPods` Event and one
    // more status write per job).
    if failed.is_none()
        && let Err(e) = create_owned(
            &budgets,
            &budget,
            uid,
            "PodDisruptionBudget",
            // Built by the operator from the job's name alone: never the job's fault.
            |object, source| AdmitError::Kube { object, source },
        )
        .await
    {
        failed = Some(e);
    }
    if let Some(err) = failed {
        for name in results.iter().filter_map(|r| r.as_ref().ok()) {
            let _ = api.delete(name, &DeleteParams::background()).await;
        }
        return Err(err);
    }
    Ok(())
}

/// What an admission leaves besides its objects: the queue's metrics, a log line, the
/// `Admitted` Event, and a wake-up for the next cycle.
fn record_admission(
    ctx: &Arc<Context>,
    job: &Arc<TrainingJob>,
    key: &JobKey,
    admission: &sched::Admission,
    now: i64,
) {
    let queue =
        super::validate::effective_queue(job, &ctx.caches.ref_maps().refs()).unwrap_or_default();
    ctx.metrics
        .admissions
        .get_or_create(&QueueLabels {
            queue: queue.clone(),
        })
        .inc();
    if let Some(since) = super::usage::waiting_since(job) {
        let delay = (now - since).max(0) as f64;
        ctx.metrics
            .queueing_delay
            .get_or_create(&QueueLabels {
                queue: queue.clone(),
            })
            .observe(delay);
    }
    let nodes: std::collections::BTreeSet<&str> = admission
        .placement
        .iter()
        .map(|p| p.node.as_str())
        .collect();
    info!(job = %key, replicas = admission.placement.len(), nodes = nodes.len(), bonus = admission.bonus, "admitted");
    let note = format!(
        "Admitted from queue {queue}{}: {} replica(s) on {} node(s) ({}).",
        if admission.bonus {
            " on borrowed (bonus) GPUs"
        } else {
            ""
        },
        admission.placement.len(),
        nodes.len(),
        nodes.iter().copied().collect::<Vec<_>>().join(", ")
    );
    // in the background: the next gang's pods need not wait for it
    event_in_background(ctx, job, EventReason::Admitted, note);
    ctx.signals.wake.notify_one();
}

/// Creates the job's Service or budget (`what`). One of its name that exists already (409)
/// is the job's when its controller is the job (an earlier try of this admission); it is
/// adopted when it has no controller and is not being deleted (a job deleted with
/// `--cascade=orphan` left it: it selects the pods by the job's name, as this job's would,
/// and owned it goes with this job). One another controller owns is another job's, most
/// often a job of the same name deleted a moment ago whose garbage collection will remove
/// it: taken as it was, it would vanish under the running job, so the admission fails
/// ([`AdmitError::Occupied`]) and the next cycle tries again. `failed` names a failed
/// create.
async fn create_owned<K>(
    api: &Api<K>,
    obj: &K,
    uid: &str,
    what: &str,
    failed: fn(String, kube::Error) -> AdmitError,
) -> Result<(), AdmitError>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let name = obj.name_any();
    let object = format!("{what} {name}");
    let Some(found) = create_or_existing(api, obj, &object, failed).await? else {
        return Ok(());
    };
    let deleting = found.meta().deletion_timestamp.is_some();
    match super::job_key::controller_uid(&found) {
        Some(owner) if owner == uid && !deleting => Ok(()),
        None if !deleting => {
            let mut owners = found.meta().owner_references.clone().unwrap_or_default();
            owners.extend(obj.meta().owner_references.iter().flatten().cloned());
            // The resourceVersion makes the adoption fail rather than overwrite a change
            // made since the read.
            let patch = serde_json::json!({"metadata": {
                "ownerReferences": owners,
                "resourceVersion": found.meta().resource_version,
            }});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
                .map_err(|e| AdmitError::Kube { object, source: e })
        }
        _ => Err(AdmitError::Occupied(object)),
    }
}

/// Creates one pod of the gang; returns its name. A pod of the name that exists already (409)
/// is the job's own when its controller is the job (an earlier try of this admission);
/// otherwise it is another's, and is neither adopted nor touched.
async fn create_pod(api: &Api<Pod>, pod: Pod, uid: &str) -> Result<String, AdmitError> {
    let name = pod.name_any();
    let object = format!("pod {name}");
    match create_or_existing(api, &pod, &object, create_error).await? {
        Some(p) if !owned_by(&p, uid) => Err(taken_by_another(&p)),
        _ => Ok(name),
    }
}

/// Why a pod of the gang's name that another controller owns keeps the gang from starting:
/// one still terminating needs nobody (the next cycle tries again), one that stays does.
fn taken_by_another(pod: &Pod) -> AdmitError {
    let name = pod.name_any();
    if pod.metadata.deletion_timestamp.is_some() {
        AdmitError::PredecessorLeaving(name)
    } else {
        AdmitError::Occupied(format!("pod {name}"))
    }
}

/// Creates `obj` (`object` names it in errors; `failed` names a failed create): None once
/// created, or the object of its name that exists already (409), read back for its owner.
async fn create_or_existing<K>(
    api: &Api<K>,
    obj: &K,
    object: &str,
    failed: fn(String, kube::Error) -> AdmitError,
) -> Result<Option<K>, AdmitError>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let exists = match api.create(&PostParams::default(), obj).await {
        Ok(_) => return Ok(None),
        Err(kube::Error::Api(e)) if e.code == 409 => kube::Error::Api(e),
        Err(e) => return Err(failed(object.to_string(), e)),
    };
    let kube_error = |source| AdmitError::Kube {
        object: object.to_string(),
        source,
    };
    match api.get_opt(&obj.name_any()).await {
        Ok(Some(found)) => Ok(Some(found)),
        // Gone again in between: the next cycle tries again.
        Ok(None) => Err(kube_error(exists)),
        Err(e) => Err(kube_error(e)),
    }
}

/// Asks a victim to checkpoint: the request annotation on each of its pods (the job sees it
/// through its downward-API file). The reconciler takes it from there.
async fn request_checkpoint(ctx: &Arc<Context>, job: &Arc<TrainingJob>, p: &sched::Preemption) {
    // Dated when written, not by the cycle's clock: the victim's grace period runs from the
    // request, and admissions carried out before it may have taken seconds.
    let written = Timestamp::now();
    let stamp = written.to_string();
    // Only a preemption for a job has a beneficiary that can stop waiting (see `preemption`).
    let beneficiary = p.beneficiary.job().filter(|_| p.reason.for_a_job());
    let mut asked = 0;
    let gang = Gang::new(ctx.caches.job_pods(job));
    for m in gang.live().filter(|m| m.checkpoint_request.is_some()) {
        retarget(ctx, m, p, beneficiary).await;
    }
    let api: Api<Pod> = Api::namespaced(
        ctx.writer.client.clone(),
        &job.namespace().unwrap_or_default(),
    );
    let cause = super::preemption::cause_of(p.reason);
    let patch = checkpoint_request_patch(&stamp, Some(cause), beneficiary);
    // The gang's pods are asked together: its grace period runs from the earliest request.
    let to_ask: Vec<String> = gang.to_ask_checkpoint().map(|m| m.name.clone()).collect();
    let results: Vec<(String, Result<Pod, kube::Error>)> = futures::stream::iter(to_ask)
        .map(|name| {
            let (api, patch) = (&api, &patch);
            async move {
                let r = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await;
                (name, r)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for (pod, result) in results {
        match result {
            Ok(_) => asked += 1,
            Err(e) => warn!(pod = %pod, error = %e, "could not request a checkpoint"),
        }
    }
    if asked > 0 {
        // Until the cache shows the request, the next cycles take the job as asked.
        ctx.scheduler.state().asked.insert(
            JobKey::of(job),
            Asked {
                reason: p.reason,
                beneficiary: beneficiary.map(str::to_string),
                at: written.as_second(),
                attempt: job_attempt(job),
            },
        );
        ctx.metrics
            .preemptions
            .get_or_create(&ReasonLabels {
                reason: p.reason.to_string(),
            })
            .inc();
        info!(job = %JobKey::of(job), reason = %p.reason, beneficiary = %p.beneficiary, "preempting");
        let note = if p.reason == sched::PreemptionReason::Drain {
            format!(
                "Drain: {} is being drained; asked to checkpoint within {} s; the job then returns to its queue, keeping its place, and the drain can finish.",
                p.beneficiary, job.spec.checkpoint.grace_period_seconds
            )
        } else if p.reason == sched::PreemptionReason::UnhealthyGpu {
            format!(
                "UnhealthyGpu: {} turned unhealthy; asked to checkpoint within {} s; the job then returns to its queue, keeping its place, and runs again on healthy GPUs.",
                p.beneficiary, job.spec.checkpoint.grace_period_seconds
            )
        } else if p.reason == sched::PreemptionReason::QueueHold {
            format!(
                "QueueHold: {} is held (stopPolicy: HoldAndDrain); asked to checkpoint within {} s; the job then returns to its queue and waits until the hold is lifted.",
                p.beneficiary, job.spec.checkpoint.grace_period_seconds
            )
        } else {
            format!(
                "{} preemption for {}: asked to checkpoint within {} s; the job then returns to its queue, keeping its place.",
                p.reason, p.beneficiary, job.spec.checkpoint.grace_period_seconds
            )
        };
        // in the background: the rest of the cycle need not wait for it
        event_in_background(ctx, job, EventReason::Preempting, note);
    }
}

/// Writes a Normal Event about `job` in the background: an Event is a record, not a step of
/// what it reports, so the cycle does not wait for it.
/// An Event of one admission or preemption of the job. The recorder folds Events of one
/// object, reason and action into a series that keeps the first note; the attempt in the
/// action keeps each admission's nodes and each preemption's cause visible (a re-admission
/// read "(x2)" with the first admission's nodes, and a reclaim the note of an earlier drain).
fn event_in_background(
    ctx: &Arc<Context>,
    job: &Arc<TrainingJob>,
    reason: EventReason,
    note: String,
) {
    let (ctx, job) = (ctx.clone(), job.clone());
    let action = format!("{}{}", reason.as_str(), job_attempt(&job));
    tokio::spawn(async move {
        ctx.writer
            .event_with_action(
                job.as_ref(),
                EventType::Normal,
                reason.as_str(),
                action,
                note,
            )
            .await;
    });
}

/// A victim already asked whose earlier preemption the core cancelled and that is preempted
/// again in the same cycle: its request stands (its grace period runs on) and now names the
/// new preemption.
async fn retarget(
    ctx: &Context,
    m: &super::gang::Member,
    p: &sched::Preemption,
    beneficiary: Option<&str>,
) {
    let cause = super::preemption::cause_of(p.reason);
    let asked = m.checkpoint_request.as_ref();
    if asked.and_then(|r| r.reason) == Some(cause)
        && asked.and_then(|r| r.preempted_for.as_deref()) == beneficiary
    {
        return;
    }
    let pod = &m.pod;
    let api: Api<Pod> = Api::namespaced(
        ctx.writer.client.clone(),
        &pod.namespace().unwrap_or_default(),
    );
    let patch = serde_json::json!({"metadata": {"annotations": {
        PREEMPTION_REASON: cause.as_str(),
        PREEMPTED_FOR: beneficiary,
    }}});
    if let Err(e) = api
        .patch(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        warn!(pod = %pod.name_any(), error = %e, "could not record the new preemption");
    }
}

/// Records on the pods whether the gang runs on borrowed capacity.
async fn mark_bonus(caches: &Caches, writer: &Writer, job: &TrainingJob, bonus: bool) {
    let targets: Vec<String> = Gang::new(caches.job_pods(job))
        .to_mark_bonus(bonus)
        .map(|m| m.name.clone())
        .collect();
    let api: Api<Pod> =
        Api::namespaced(writer.client.clone(), &job.namespace().unwrap_or_default());
    let patch = bonus_patch(bonus);
    let patched = futures::stream::iter(targets)
        .map(|name| {
            let (api, patch) = (&api, &patch);
            async move {
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<Pod>>()
        .await;
    if let Err(e) = patched {
        warn!(job = %JobKey::of(job), error = %e, "could not update the bonus mark");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status {
                code,
                reason: reason.into(),
                message: message.into(),
                ..Default::default()
            }
            .boxed(),
        )
    }

    /// 422 and 400 say the object is wrong, and it would be refused again; anything else may
    /// pass on the next try.
    #[test]
    fn only_a_refusal_of_the_object_itself_holds_the_job() {
        let message = "Pod \"j-w-0\" is invalid: spec.containers[0].volumeMounts[0].name: \
                       Not found: \"data\"";
        for code in [422, 400] {
            let e = create_error("pod j-w-0".into(), api(code, "Invalid", message));
            assert!(matches!(e, AdmitError::Refused { .. }), "{code}: {e:?}");
            assert_eq!(
                e.to_string(),
                format!("the API server refused pod j-w-0: {message}")
            );
        }
        for (code, reason) in [
            (500, "InternalError"),
            (503, "ServiceUnavailable"),
            (409, "Conflict"),
            (504, "Timeout"),
            (403, "Forbidden"),
        ] {
            let e = create_error("pod j-w-0".into(), api(code, reason, "try later"));
            assert!(matches!(e, AdmitError::Kube { .. }), "{code}: {e:?}");
        }
    }

    /// The Event says what the API server said, not kube's debug dump of its Status.
    #[test]
    fn the_event_quotes_the_api_servers_message() {
        let quota = "pods \"j-w-0\" is forbidden: exceeded quota: gpus";
        let e = create_error("pod j-w-0".into(), api(403, "Forbidden", quota));
        let note = admission_failed_note(&e);
        assert_eq!(
            note,
            format!(
                "Could not create the job's pods: creating pod j-w-0: {quota}. It stays queued \
                 and is retried."
            )
        );
        let e = create_error(
            "Service j".into(),
            api(422, "Invalid", "Service \"j\" is invalid"),
        );
        let note = admission_failed_note(&e);
        assert!(
            note.contains("the API server refused Service j: Service \"j\" is invalid")
                && note.contains("until its spec changes")
                && !note.contains("Status {"),
            "{note}"
        );
    }
}
