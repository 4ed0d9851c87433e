//! The TrainingJob reconciler: the thin shell around the job's lifecycle
//! (docs/architecture.md, "One TrainingJob").
//!
//! It reads the job, its pods (from the shared cache) and the [`World`] around them (validity,
//! the scheduler's last word on why it waits, the nodes under the pods), asks
//! [`lifecycle::next`] for the next status and the effects, writes the whole status with
//! server-side apply, and carries the effects out: the job's deletion after its TTL,
//! checkpoint requests and pod deletions, then Events; a job that finished lets go of its
//! disruption budget and headless Service.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use tracing::{debug, info, instrument};

use super::context::Context;
use super::duration_history;
use super::error::{self, Error, Reconciler};
use super::gang::Gang;
use super::job_key::JobKey;
use super::lifecycle::{self, PodDeletion, World};
use super::node_health::NodeState;
use super::pods::checkpoint_request_patch;
use super::reservations;
use super::status;
use super::validate::{Invalid, effective_priority, effective_queue, validate};
use super::writer::Writer;
use crate::api::{Queue, TrainingJob, VirtualCluster};

/// What the lifecycle needs from the Context: the job's validity, queue and priority in
/// effect, the scheduler's word on it, the nodes its pods are bound or placed on (each one
/// lookup in the node cache's index, judged by `node_health`), settings.
fn observe(ctx: &Context, job: &TrainingJob, key: &JobKey, gang: &Gang) -> World {
    let maps = ctx.caches.ref_maps();
    let refs = maps.refs();
    let (wait, estimated_start, admission_in_flight, scheduling) = {
        let state = ctx.scheduler.state();
        let published = state.waiting.get(key);
        (
            published.map(|p| (p.reason.clone(), p.position)),
            published.and_then(|p| p.estimate),
            state.inflight.contains_key(key),
            state.scheduling,
        )
    };
    let nodes: BTreeMap<String, NodeState> = gang
        .nodes()
        .into_iter()
        .map(|name| {
            let node = ctx.caches.stores.nodes.get(&ObjectRef::<Node>::new(name));
            (name.to_string(), NodeState::of(node.as_deref()))
        })
        .collect();
    // A share's GPU reservation, waited for or run on: its name is fixed per GPU.
    let reserved_in = &ctx.settings.pods.reservation.namespace;
    let reservations = gang
        .present()
        .filter_map(|m| {
            let gpu = reservations::held_through(&m.pod)?;
            let pod = ctx
                .caches
                .stores
                .pods
                .get(&ObjectRef::<Pod>::new(&gpu.pod_name()).within(reserved_in))?;
            Some((m.name.clone(), pod))
        })
        .collect();
    World {
        queue: effective_queue(job, &refs).ok(),
        priority: effective_priority(job, &refs).ok(),
        validity: validate(job, &refs).map(|_| ()),
        wait,
        estimated_start,
        admission_in_flight,
        scheduling,
        nodes,
        reservations,
        prediction: duration_history::needs_prediction(job)
            .then(|| duration_history::prediction_for(job, ctx.scheduler.durations().predictor())),
        settings: lifecycle::Settings {
            max_infrastructure_retries: ctx.settings.max_infrastructure_retries,
            incomplete_gang_timeout: ctx.settings.incomplete_gang_timeout,
            unschedulable_timeout: ctx.settings.unschedulable_timeout,
            start_timeout: ctx.settings.start_timeout,
        },
    }
}

/// Whether the Queue or VirtualCluster that `invalid` calls unknown exists on the API server
/// all the same, or a VirtualCluster that may own a job naming no queue does: the cache is
/// behind ([`Context::exists_on_server`], [`Context::virtual_clusters_behind`]; 0.41
/// `UnknownVirtualCluster` Warnings per job in one quick Setup C run before this check).
async fn reference_behind(ctx: &Context, invalid: &Invalid) -> bool {
    match invalid {
        Invalid::UnknownQueue(name) => ctx.writer.exists_on_server::<Queue>(name).await,
        Invalid::UnknownVirtualCluster { vc, .. } => {
            ctx.writer.exists_on_server::<VirtualCluster>(vc).await
        }
        Invalid::NoQueue { .. } => ctx.virtual_clusters_behind().await,
        _ => false,
    }
}

#[instrument(skip_all, fields(job = %JobKey::of(&job)))]
pub async fn reconcile(job: Arc<TrainingJob>, ctx: Arc<Context>) -> Result<Action, Error> {
    if job.metadata.deletion_timestamp.is_some() {
        // Owner references take the pods and the Service; the scheduler sees the GPUs free.
        ctx.signals.wake.notify_one();
        return Ok(Action::await_change());
    }
    // Our last status write was computed from this very version: the cache has not shown
    // the write yet, and a reconcile now would redo it from stale data (a second write, and
    // times such as admittedAt taken anew). The write's watch event triggers the next one.
    let key = JobKey::of(&job);
    if job.metadata.resource_version.is_some()
        && ctx.writer.status_written_from(&key) == job.metadata.resource_version
    {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let gang = Gang::new(ctx.caches.job_pods(&job));
    let world = observe(&ctx, &job, &key, &gang);
    if let Err(invalid) = &world.validity
        && reference_behind(&ctx, invalid).await
    {
        debug!(
            reason = invalid.reason(),
            "a reference is not in the cache yet; retrying"
        );
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let old = job.status.clone().unwrap_or_default();
    // The reconcile's one reading of the clock, after the observation: the lifecycle
    // decides at `t` (its transitions, deadlines and timeouts).
    let t = Time(Timestamp::now());
    let (status, fx) = lifecycle::next(&job, &gang, &world, &t);
    if fx.delete_job {
        let api: Api<TrainingJob> = Api::namespaced(
            ctx.writer.client.clone(),
            &job.namespace().unwrap_or_default(),
        );
        let name = job.name_any();
        tokio::spawn(async move {
            let _ = api.delete(&name, &DeleteParams::background()).await;
        });
    }

    if status != old {
        let api: Api<TrainingJob> = Api::namespaced(
            ctx.writer.client.clone(),
            &job.namespace().unwrap_or_default(),
        );
        let written = match status::apply(&api, &job.name_any(), &status).await {
            Ok(written) => written,
            // Deleted since the cache showed it (a job carries no finalizer): nothing is
            // left to write, and the deletion's watch event ends its reconciles. An ordinary
            // `kubectl delete tj` logged a WARN with the whole 404 (an acceptance run).
            Err(kube::Error::Api(e)) if e.code == 404 => {
                debug!("deleted meanwhile: no status to write");
                return Ok(Action::await_change());
            }
            Err(e) => return Err(e.into()),
        };
        if written.metadata.resource_version != job.metadata.resource_version {
            ctx.writer
                .record_status_write(key, job.metadata.resource_version.clone());
        }
        if old.phase != status.phase {
            info!(from = %old.phase, to = %status.phase, "phase");
            ctx.signals.wake.notify_one();
            if status.phase.is_finished() {
                release_gang_objects(&ctx.writer, &job);
            }
        }
    }
    // The pods first, the Events after: a preempted gang's GPUs wait for its pods' deletion,
    // not for the record of it. The Events go out even when a pod write failed (the status
    // that produced them is written, so the retry does not produce them again).
    let acted = match request_checkpoint(&ctx.writer, &job, &fx.checkpoint_requests, &t).await {
        Ok(()) => stop_pods(&ctx.writer, &job, &fx.pod_deletions).await,
        Err(e) => Err(e),
    };
    for e in fx.events {
        let action = e.action.unwrap_or_else(|| e.reason.to_string());
        ctx.writer
            .event_with_action(job.as_ref(), e.type_, e.reason, action, e.note)
            .await;
    }
    acted?;
    Ok(match fx.requeue {
        Some(d) => Action::requeue(d),
        None => Action::requeue(Duration::from_secs(60)),
    })
}

/// A finished job's disruption budget and headless Service guard and name pods that no
/// longer run: they go when it finishes rather than with the job (its owner references), so
/// finished jobs kept for their status do not pile them up. Kubernetes' disruption and
/// endpoints controllers match every pod change against every budget and Service of its
/// namespace, so thousands of stale ones cost the control plane on each pod change. Best
/// effort: one left behind still goes with the job.
fn release_gang_objects(writer: &Writer, job: &TrainingJob) {
    let ns = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(writer.client.clone(), &ns);
    let services: Api<Service> = Api::namespaced(writer.client.clone(), &ns);
    let has_service = super::pods::needs_rendezvous(job);
    tokio::spawn(async move {
        let params = DeleteParams::background();
        if let Err(e) = budgets.delete(&name, &params).await {
            debug!(job = %name, error = %e, "disruption budget not deleted");
        }
        if has_service && let Err(e) = services.delete(&name, &params).await {
            debug!(job = %name, error = %e, "Service not deleted");
        }
    });
}

/// Stops the pods the lifecycle names, the gang's disruption budget first.
///
/// The lifecycle deletes pods only to stop the gang (it goes back to its queue, or is
/// finished), and a budget whose pods are all gone makes the disruption controller post a
/// `NoPods` Event ("No matching pods found") on every sync: one per stopped gang, noise in
/// the job's namespace. The budget goes before the pods, so that controller sees it gone
/// before it sees the pods go; admission creates it again after the next attempt's pods.
async fn stop_pods(
    writer: &Writer,
    job: &TrainingJob,
    deletions: &[PodDeletion],
) -> Result<(), Error> {
    if deletions.is_empty() {
        return Ok(());
    }
    let budgets: Api<PodDisruptionBudget> =
        Api::namespaced(writer.client.clone(), &job.namespace().unwrap_or_default());
    match budgets
        .delete(&job.name_any(), &DeleteParams::background())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    delete_pods(writer, job, deletions).await
}

/// Deletes the pods the lifecycle names: gracefully, or with no grace when forced.
async fn delete_pods(
    writer: &Writer,
    job: &TrainingJob,
    deletions: &[PodDeletion],
) -> Result<(), Error> {
    let api: Api<Pod> =
        Api::namespaced(writer.client.clone(), &job.namespace().unwrap_or_default());
    for d in deletions {
        let params = if d.force {
            info!(pod = %d.pod, "force-deleting a pod stuck on a lost node");
            DeleteParams::background().grace_period(0)
        } else {
            DeleteParams::background()
        };
        match api.delete(&d.pod, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Asks the named pods to checkpoint, as a preemption does: the request annotation, with the
/// time of the request.
async fn request_checkpoint(
    writer: &Writer,
    job: &TrainingJob,
    pods: &[String],
    now: &Time,
) -> Result<(), Error> {
    let api: Api<Pod> =
        Api::namespaced(writer.client.clone(), &job.namespace().unwrap_or_default());
    let stamp = now.0.to_string();
    for name in pods {
        let patch = checkpoint_request_patch(&stamp, None, None);
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// On errors: count, log, retry after the job's backoff.
pub fn error_policy(job: Arc<TrainingJob>, err: &Error, ctx: Arc<Context>) -> Action {
    error::retry(Reconciler::TrainingJob, job.as_ref(), err, &ctx)
}
