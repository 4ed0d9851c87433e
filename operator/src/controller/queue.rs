//! The Queue reconciler: status (what `kubectl get queues` shows) and a finalizer that keeps
//! a queue with unfinished jobs from disappearing under them.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::Event as Finalizer;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use tracing::{debug, instrument};

use super::conditions;
use super::context::Context;
use super::error::{self, Error, Reconciler};
use super::finalizing;
use super::status;
use super::validate::effective_queue;
use crate::api::{GpuAmount, Queue, QueueStatus, VirtualCluster};

pub const FINALIZER: &str = "kubetrain.io/queue-jobs";

#[instrument(skip_all, fields(queue = %queue.name_any()))]
pub async fn reconcile(queue: Arc<Queue>, ctx: Arc<Context>) -> Result<Action, Error> {
    let api: Api<Queue> = Api::all(ctx.client.clone());
    finalizing::reconcile(&api, FINALIZER, queue, |event| async {
        match event {
            Finalizer::Apply(q) => apply(&q, &ctx).await,
            Finalizer::Cleanup(q) => cleanup(&q, &ctx).await,
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
    let maps = ctx.ref_maps();
    let refs = maps.refs();
    let (mut admitted, mut waiting) = (0, 0);
    for j in ctx.stores.jobs.state() {
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
/// deletion) says so in an Event too, as a VirtualCluster does (`virtualcluster::WATCHED`).
const WATCHED: [(&str, &str); 2] = [("Ready", "False"), ("Terminating", "True")];

/// A deletion under way, the queue's or its VirtualCluster's: news, not trouble.
fn deleting(c: &Condition) -> bool {
    c.type_ == "Terminating"
        || matches!(
            c.reason.as_str(),
            "Terminating" | "VirtualClusterTerminating"
        )
}

async fn write_status(queue: &Queue, ctx: &Context, status: QueueStatus) -> Result<(), Error> {
    if queue.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<Queue> = Api::all(ctx.client.clone());
    status::apply(&api, &queue.name_any(), &status).await?;
    let old = queue.status.as_ref().map_or(&[][..], |s| &s.conditions[..]);
    status::announce(ctx, queue, old, &status.conditions, &WATCHED, deleting).await;
    Ok(())
}

fn computed_status(queue: &Queue, ctx: &Context) -> QueueStatus {
    let name = queue.name_any();
    let state = ctx.state();
    let u = state.usage.queues.get(&name).cloned().unwrap_or_default();
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
        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time);
    status.observed_generation = queue.metadata.generation;
    status
}

async fn apply(queue: &Queue, ctx: &Context) -> Result<Action, Error> {
    if !ctx.state().usage.computed {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let mut status = computed_status(queue, ctx);
    let t =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let vc = &queue.spec.virtual_cluster;
    let cached = ctx.stores.vcs.get(&ObjectRef::new(vc));
    if cached.is_none() && ctx.exists_on_server::<VirtualCluster>(vc).await {
        // Applied together with the queue, its watch event not here yet: nothing to report;
        // the next look, a second later, finds it in the cache.
        debug!(virtual_cluster = %vc, "the VirtualCluster is not in the cache yet; retrying");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let (ok, reason, msg) = match cached {
        Some(v) if v.metadata.deletion_timestamp.is_some() => (
            false,
            "VirtualClusterTerminating",
            format!(
                "VirtualCluster {vc} is being deleted: this queue admits no new jobs while its \
                 running jobs finish."
            ),
        ),
        Some(_) => match super::validate::queue_parent_problem(queue, &ctx.ref_maps().queues) {
            Some(problem) => (
                false,
                "InvalidParent",
                format!("The queue admits no jobs: {problem}. Fix spec.parent."),
            ),
            None => (
                true,
                "Ready",
                format!("Admitting jobs into VirtualCluster {vc}."),
            ),
        },
        None => (
            false,
            "UnknownVirtualCluster",
            format!("VirtualCluster {vc} does not exist; jobs of this queue wait."),
        ),
    };
    conditions::set(
        &mut status.conditions,
        "Ready",
        ok,
        reason,
        msg,
        queue.metadata.generation,
        &t,
    );
    conditions::remove(&mut status.conditions, "Terminating");
    write_status(queue, ctx, status).await?;
    Ok(Action::requeue(Duration::from_secs(5)))
}

/// A deleted queue admits nothing new (the core's `QueueTerminating`) and goes once its
/// admitted jobs are done, as Kueue's ClusterQueue does. Its waiting jobs stay: they are
/// `UnknownQueue` once it is gone and start again if a queue of that name comes back.
/// Waiting for them too would hold the queue in `Terminating` until someone deletes them.
async fn cleanup(queue: &Queue, ctx: &Context) -> Result<Action, Error> {
    let (admitted, waiting) = unfinished_jobs(queue, ctx);
    if admitted == 0 {
        return Ok(Action::await_change());
    }
    let mut status = computed_status(queue, ctx);
    let t =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let msg = format!(
        "Deletion waits for {admitted} admitted job(s) of this queue to finish or be deleted; \
         its {waiting} waiting job(s) are not admitted and stay when it goes."
    );
    conditions::set(
        &mut status.conditions,
        "Terminating",
        true,
        "JobsRemain",
        msg,
        queue.metadata.generation,
        &t,
    );
    // `Ready` said "Admitting jobs": no longer true.
    conditions::set(
        &mut status.conditions,
        "Ready",
        false,
        "Terminating",
        "The queue is being deleted: it admits no new jobs.",
        queue.metadata.generation,
        &t,
    );
    write_status(queue, ctx, status).await?;
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
