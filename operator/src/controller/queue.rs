//! The Queue reconciler: status (what `kubectl get queues` shows: the numbers of the queue's
//! subtree, its own jobs and those of the queues under it), `AboveLimit` when it holds more
//! than its `maxShare` allows, and a finalizer that keeps a queue with unfinished jobs from
//! disappearing under them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::Event as Finalizer;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use tracing::{debug, instrument};

use super::conditions;
use super::context::{Context, SchedulerState};
use super::error::{self, Error, Reconciler};
use super::finalizing;
use super::status;
use super::usage::QueueUsage;
use super::validate::effective_queue;
use super::writer::Writer;
use crate::api::reasons::{QueueConditionType as Type, QueueReason as Reason};
use crate::api::{GpuAmount, Queue, QueueStatus, StopPolicy, VirtualCluster};

pub const FINALIZER: &str = "kubetrain.io/queue-jobs";

#[instrument(skip_all, fields(queue = %queue.name_any()))]
pub async fn reconcile(queue: Arc<Queue>, ctx: Arc<Context>) -> Result<Action, Error> {
    // The reconcile's one reading of the clock: every condition it sets changes at `t`.
    let t = Time(Timestamp::now());
    let api: Api<Queue> = Api::all(ctx.writer.client.clone());
    finalizing::reconcile(&api, FINALIZER, queue, |event| async {
        match event {
            Finalizer::Apply(q) => apply(&q, &ctx, &t).await,
            Finalizer::Cleanup(q) => cleanup(&q, &ctx, &t).await,
        }
    })
    .await
}

/// The queue's unfinished jobs, named in `spec.queue` or through a VirtualCluster's
/// `defaultQueue` (`validate::effective_queue`): how many were admitted (they hold or are
/// about to hold GPUs, [`Context::holds_gpus`]) and how many wait. Counted from the job cache, not from the last
/// cycle's usage (`usage::QueueUsage`): letting the finalizer go cannot be undone, and the
/// cache is the newer of the two.
fn unfinished_jobs(queue: &Queue, ctx: &Context) -> (i32, i32) {
    let name = queue.name_any();
    let maps = ctx.caches.ref_maps();
    let refs = maps.refs();
    let (mut admitted, mut waiting) = (0, 0);
    for j in ctx.caches.stores.jobs.state() {
        let phase = j.status.as_ref().map(|s| s.phase).unwrap_or_default();
        if phase.is_finished() || !effective_queue(&j, &refs).is_ok_and(|q| q == name) {
            continue;
        }
        if ctx.holds_gpus(&j) {
            admitted += 1;
        } else {
            waiting += 1;
        }
    }
    (admitted, waiting)
}

/// A queue that stops admitting (`Ready=False`: a missing VirtualCluster or parent, a
/// deletion) or holds more than its `maxShare` says so in an Event too, as a VirtualCluster
/// does (`virtualcluster::WATCHED`).
const WATCHED: [(&str, &str); 3] = [
    (Type::Ready.as_str(), "False"),
    (Type::Terminating.as_str(), "True"),
    (Type::AboveLimit.as_str(), "True"),
];

/// A deletion under way, the queue's or its VirtualCluster's, or the scheduler's own
/// overshoot of `maxShare` while victims leave: news, not trouble.
fn expected(c: &Condition) -> bool {
    matches!(
        (Type::from_name(&c.type_), Reason::from_name(&c.reason)),
        (Some(Type::Terminating), _)
            | (
                _,
                Some(
                    Reason::Terminating
                        | Reason::VirtualClusterTerminating
                        | Reason::Held
                        | Reason::HeldAndDraining
                )
            )
            | (Some(Type::AboveLimit), Some(Reason::JobsLeaving))
    )
}

async fn write_status(queue: &Queue, writer: &Writer, status: QueueStatus) -> Result<(), Error> {
    if queue.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<Queue> = Api::all(writer.client.clone());
    status::apply(&api, &queue.name_any(), &status).await?;
    let old = queue.status.as_ref().map_or(&[][..], |s| &s.conditions[..]);
    status::announce(writer, queue, old, &status.conditions, &WATCHED, expected).await;
    Ok(())
}

fn computed_status(queue: &Queue, scheduler: &SchedulerState, t: &Time) -> QueueStatus {
    let name = queue.name_any();
    let u = scheduler
        .state()
        .usage
        .queues
        .get(&name)
        .cloned()
        .unwrap_or_default();
    status_of(queue, &u, t)
}

/// The status from the last cycle's numbers `u` (the queue's subtree), every condition but
/// `Ready` and `Terminating`.
fn status_of(queue: &Queue, u: &QueueUsage, t: &Time) -> QueueStatus {
    let mut status = queue.status.clone().unwrap_or_default();
    status.pending = u.pending;
    status.admitted = u.admitted;
    status.running = u.running;
    status.gpus_in_use = GpuAmount::from_milli(u.milli_gpus);
    status.bonus_gpus = GpuAmount::from_milli(u.bonus_milli_gpus);
    // Rounded to the minute so the status is not rewritten every cycle.
    status.oldest_pending_seconds = u.oldest_pending_seconds.map(|s| s / 60 * 60);
    status.oldest_pending_since = u
        .oldest_pending_since
        .and_then(|s| k8s_openapi::jiff::Timestamp::from_second(s).ok())
        .map(Time);
    status.observed_generation = queue.metadata.generation;
    above_limit(queue, &mut status, u, t);
    status
}

/// `AboveLimit`, as a VirtualCluster has it for `spec.limit`: a `maxShare` lowered below
/// what the queue's subtree holds (or a VirtualCluster limit or a cluster that shrank under
/// it) cuts nothing back, and new jobs wait with `QueueMaxShare`; without this condition
/// only a waiting job said so, and the queue stayed Ready with nothing to tell. While the
/// GPUs above the maximum are those of jobs already leaving (the victims a limit needed,
/// checkpointing), it is True with reason `JobsLeaving`: nobody lowered anything, and the
/// excess is going. No condition at `maxShare: 100`.
fn above_limit(queue: &Queue, status: &mut QueueStatus, u: &QueueUsage, t: &Time) {
    let Some(max) = u.max_milli_gpus.map(GpuAmount::from_milli) else {
        conditions::remove(&mut status.conditions, Type::AboveLimit);
        return;
    };
    let share = queue.spec.max_share;
    let held = GpuAmount::from_milli(u.milli_gpus);
    let leaving = GpuAmount::from_milli(u.leaving_milli_gpus);
    let (above, reason, message) = if held.milli() <= max.milli() {
        (
            false,
            Reason::WithinLimit,
            format!("Holds {held} of its maximum of {max} GPUs (maxShare {share} %)."),
        )
    } else if held.milli().saturating_sub(leaving.milli()) <= max.milli() {
        (
            true,
            Reason::JobsLeaving,
            format!(
                "Holds {held} GPUs, above its maximum of {max} (maxShare {share} %), while jobs \
                 holding {leaving} GPUs checkpoint and leave; it is back within it once they \
                 are gone. New jobs wait (QueueMaxShare) meanwhile."
            ),
        )
    } else {
        (
            true,
            Reason::LimitLowered,
            format!(
                "Holds {held} GPUs, above its maximum of {max} (maxShare {share} % of its \
                 VirtualCluster's limit, or of the cluster's GPUs without one): running jobs \
                 are not cut back; new jobs of this queue and the queues under it wait \
                 (QueueMaxShare) until it is below the maximum."
            ),
        )
    };
    conditions::set(
        &mut status.conditions,
        Type::AboveLimit,
        above,
        reason,
        message,
        queue.metadata.generation,
        t,
    );
}

async fn apply(queue: &Queue, ctx: &Context, t: &Time) -> Result<Action, Error> {
    if !ctx.scheduler.state().usage.computed {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let mut status = computed_status(queue, &ctx.scheduler, t);
    let vc = &queue.spec.virtual_cluster;
    let cached = ctx.caches.stores.vcs.get(&ObjectRef::new(vc));
    if cached.is_none() && ctx.writer.exists_on_server::<VirtualCluster>(vc).await {
        // Applied together with the queue, its watch event not here yet: nothing to report;
        // the next look, a second later, finds it in the cache.
        debug!(virtual_cluster = %vc, "the VirtualCluster is not in the cache yet; retrying");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let (ok, reason, msg) = match cached {
        Some(v) if v.metadata.deletion_timestamp.is_some() => (
            false,
            Reason::VirtualClusterTerminating,
            format!(
                "VirtualCluster {vc} is being deleted: this queue admits no new jobs while its \
                 running jobs finish."
            ),
        ),
        Some(_) => {
            match super::validate::queue_parent_problem(queue, &ctx.caches.ref_maps().queues) {
                Some(problem) => (
                    false,
                    Reason::InvalidParent,
                    format!("The queue admits no jobs: {problem}. Fix spec.parent."),
                ),
                None => match held_by(queue, &ctx.caches.ref_maps().queues) {
                    Some((holder, policy)) => held(&queue.name_any(), &holder, policy),
                    None => (
                        true,
                        Reason::Ready,
                        format!("Admitting jobs into VirtualCluster {vc}."),
                    ),
                },
            }
        }
        None => (
            false,
            Reason::UnknownVirtualCluster,
            format!("VirtualCluster {vc} does not exist; jobs of this queue wait."),
        ),
    };
    conditions::set(
        &mut status.conditions,
        Type::Ready,
        ok,
        reason,
        msg,
        queue.metadata.generation,
        t,
    );
    conditions::remove(&mut status.conditions, Type::Terminating);
    write_status(queue, &ctx.writer, status).await?;
    Ok(Action::requeue(Duration::from_secs(5)))
}

/// The queue that holds `queue` (`spec.stopPolicy`), and its policy: the strongest of the
/// queue's own and those of the queues above it, the nearest of them on a tie, as the
/// scheduler applies it (`sched::StopPolicy`'s order). `None` when nothing holds it. A
/// parent chain with a cycle or a missing queue ends where it breaks (`InvalidParent` says
/// so first).
fn held_by(queue: &Queue, queues: &BTreeMap<String, Arc<Queue>>) -> Option<(String, StopPolicy)> {
    let mut best: Option<(String, StopPolicy)> = None;
    let mut seen = vec![queue.name_any()];
    let mut cur = Some(queue);
    while let Some(q) = cur {
        let p = q.spec.stop_policy;
        if p > best.as_ref().map_or(StopPolicy::None, |(_, b)| *b) {
            best = Some((q.name_any(), p));
        }
        cur = match &q.spec.parent {
            Some(parent) if !seen.contains(parent) => {
                seen.push(parent.clone());
                queues.get(parent).map(AsRef::as_ref)
            }
            _ => None,
        };
    }
    best
}

/// `Ready=False` for a queue held by `holder` (itself or a queue above it).
fn held(name: &str, holder: &str, policy: StopPolicy) -> (bool, Reason, String) {
    let by = if holder == name {
        String::new()
    } else {
        format!(" (queue {holder} above it is held)")
    };
    match policy {
        StopPolicy::HoldAndDrain => (
            false,
            Reason::HeldAndDraining,
            format!(
                "Held by stopPolicy HoldAndDrain{by}: the queue admits no new jobs and its                  running jobs checkpoint and come back to wait; set stopPolicy to None to                  resume."
            ),
        ),
        StopPolicy::Hold | StopPolicy::None => (
            false,
            Reason::Held,
            format!(
                "Held by stopPolicy Hold{by}: the queue admits no new jobs while its admitted                  jobs run on; set stopPolicy to None to resume."
            ),
        ),
    }
}

/// A deleted queue admits nothing new (the core's `QueueTerminating`) and goes once its
/// admitted jobs are done, as Kueue's ClusterQueue does. Its waiting jobs stay: they are
/// `UnknownQueue` once it is gone and start again if a queue of that name comes back.
/// Waiting for them too would hold the queue in `Terminating` until someone deletes them.
async fn cleanup(queue: &Queue, ctx: &Context, t: &Time) -> Result<Action, Error> {
    let (admitted, waiting) = unfinished_jobs(queue, ctx);
    if admitted == 0 {
        return Ok(Action::await_change());
    }
    let mut status = computed_status(queue, &ctx.scheduler, t);
    let msg = format!(
        "Deletion waits for {admitted} admitted job(s) of this queue to finish or be deleted; \
         its {waiting} waiting job(s) are not admitted and stay when it goes."
    );
    conditions::set(
        &mut status.conditions,
        Type::Terminating,
        true,
        Reason::JobsRemain,
        msg,
        queue.metadata.generation,
        t,
    );
    // `Ready` said "Admitting jobs": no longer true.
    conditions::set(
        &mut status.conditions,
        Type::Ready,
        false,
        Reason::Terminating,
        "The queue is being deleted: it admits no new jobs.",
        queue.metadata.generation,
        t,
    );
    write_status(queue, &ctx.writer, status).await?;
    Err(Error::QueueNotEmpty {
        queue: queue.name_any(),
        jobs: admitted,
    })
}

/// A queue whose deletion waits for its jobs is not failing: it looks again soon, and
/// nothing is counted.
pub fn error_policy(queue: Arc<Queue>, err: &Error, ctx: Arc<Context>) -> Action {
    match err {
        Error::QueueNotEmpty { .. } => Action::requeue(Duration::from_secs(5)),
        _ => error::retry(Reconciler::Queue, queue.as_ref(), err, &ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `maxShare` lowered under what the queue's subtree holds says so on the queue (an
    /// acceptance run: it stayed Ready with no condition, only a waiting job told), names
    /// the numbers, and clears once the queue is back under it; above it only by jobs
    /// already leaving, it says that instead. No condition at `maxShare: 100`.
    #[test]
    fn a_max_share_below_what_the_queue_holds_is_a_condition() {
        let mut queue: Queue = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "alpha-root"},
            "spec": {"virtualCluster": "alpha", "maxShare": 10}
        }))
        .expect("queue");
        let t = Time(Timestamp::UNIX_EPOCH);
        let mut u = QueueUsage {
            running: 2,
            milli_gpus: 4_000,
            max_milli_gpus: Some(3_200),
            ..Default::default()
        };
        let condition = |status: &QueueStatus| {
            let c = conditions::get(&status.conditions, Type::AboveLimit).expect("condition");
            (c.status.clone(), c.reason.clone(), c.message.clone())
        };
        let status = status_of(&queue, &u, &t);
        assert_eq!(
            (status.running, status.gpus_in_use),
            (2, GpuAmount::whole(4))
        );
        let (s, r, m) = condition(&status);
        assert_eq!((s.as_str(), r.as_str()), ("True", "LimitLowered"));
        assert!(
            m.contains("Holds 4 GPUs, above its maximum of 3.2 (maxShare 10 %"),
            "{m}"
        );
        queue.status = Some(status);
        u.leaving_milli_gpus = 2_000;
        let status = status_of(&queue, &u, &t);
        let (s, r, m) = condition(&status);
        assert_eq!((s.as_str(), r.as_str()), ("True", "JobsLeaving"));
        assert!(m.contains("while jobs holding 2 GPUs checkpoint"), "{m}");
        queue.status = Some(status);
        u.milli_gpus = 2_000;
        u.leaving_milli_gpus = 0;
        let status = status_of(&queue, &u, &t);
        let (s, r, m) = condition(&status);
        assert_eq!((s.as_str(), r.as_str()), ("False", "WithinLimit"));
        assert!(m.contains("Holds 2 of its maximum of 3.2 GPUs"), "{m}");
        queue.status = Some(status);
        u.max_milli_gpus = None;
        let status = status_of(&queue, &u, &t);
        assert!(conditions::get(&status.conditions, Type::AboveLimit).is_none());
    }
}

#[cfg(test)]
mod hold_tests {
    use super::*;

    fn queue(name: &str, parent: Option<&str>, stop: &str) -> Arc<Queue> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"virtualCluster": "t", "parent": parent, "stopPolicy": stop}
            }))
            .expect("queue"),
        )
    }

    /// A queue is held by the strongest `stopPolicy` of itself and the queues above it, the
    /// nearest on a tie, as the scheduler holds it; its `Ready` says which queue holds it.
    /// A cycle of parents ends the walk instead of looping.
    #[test]
    fn a_queue_is_held_by_the_strongest_policy_above_it() {
        let all = |qs: &[&Arc<Queue>]| -> BTreeMap<String, Arc<Queue>> {
            qs.iter().map(|q| (q.name_any(), Arc::clone(q))).collect()
        };
        let root = queue("root", None, "Hold");
        let mid = queue("mid", Some("root"), "None");
        let leaf = queue("leaf", Some("mid"), "None");
        let qs = all(&[&root, &mid, &leaf]);
        assert_eq!(
            held_by(&leaf, &qs),
            Some(("root".to_string(), StopPolicy::Hold))
        );
        let draining = queue("mid", Some("root"), "HoldAndDrain");
        let qs = all(&[&root, &draining, &leaf]);
        assert_eq!(
            held_by(&leaf, &qs),
            Some(("mid".to_string(), StopPolicy::HoldAndDrain))
        );
        assert_eq!(held_by(&queue("root", None, "None"), &qs), None);
        let (ok, reason, message) = held("leaf", "mid", StopPolicy::HoldAndDrain);
        assert_eq!((ok, reason), (false, Reason::HeldAndDraining));
        assert!(message.contains("queue mid above it is held"), "{message}");
        let (_, reason, message) = held("root", "root", StopPolicy::Hold);
        assert_eq!(reason, Reason::Held);
        assert!(!message.contains("above it"), "{message}");

        let a = queue("a", Some("b"), "None");
        let b = queue("b", Some("a"), "None");
        assert_eq!(held_by(&a, &all(&[&a, &b])), None);
    }

    /// The CRD's schema lists the three policies, so the API server refuses any other at
    /// `kubectl apply`, naming the field.
    #[test]
    fn the_schema_refuses_an_unknown_stop_policy() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(Queue::crd()).expect("crd");
        let field = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["stopPolicy"];
        assert_eq!(
            field["enum"],
            serde_json::json!(["None", "Hold", "HoldAndDrain"]),
            "{field}"
        );
    }
}
