//! The controllers: the caches and what their events trigger ([`watches`]), kube-runtime
//! reconcilers for the three kinds, the scheduling loop that drives [`crate::sched`], leader
//! election, and the metrics/health endpoints. [`run`] only wires them together.
//!
//! All state lives in the API: job status, and annotations on the pods (placement, bonus,
//! checkpoint request and acknowledgement). The in-memory state ([`context::SchedState`])
//! only bridges the moment between a write and the cache showing it, so an operator killed
//! at any instant is replaced by one that resumes from the API alone.

pub mod backoff;
pub mod caches;
pub mod conditions;
pub mod config_store;
pub mod context;
pub mod cycle_plan;
pub mod duration_history;
pub mod error;
pub mod finalizing;
pub mod gang;
pub mod http;
pub mod index;
pub mod job_key;
pub mod leader;
pub mod lifecycle;
pub mod metrics;
pub mod node_health;
pub mod placement_rules;
pub mod pods;
pub mod preemption;
#[cfg(test)]
mod pure_layer;
pub mod queue;
pub mod reservation_writes;
pub mod reservations;
pub mod resources;
pub mod scheduler;
pub mod snapshot;
pub mod status;
pub mod trainingjob;
pub mod usage;
pub mod validate;
pub mod virtualcluster;
pub mod wait_details;
pub mod waiting;
pub mod watches;
pub mod withdrawal;
pub mod workload;
pub mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use tracing::{error, info, warn};

use crate::api::{Queue, TrainingJob, VirtualCluster};
use backoff::Failures;
use config_store::ConfigStore;
use context::{Context, SchedulerState, Settings, Signals};
use duration_history::DurationHistory;
pub use error::Error;
use leader::{Elector, LeaderSettings};
use watches::JobRequests;
use workload::WorkloadSettings;

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub settings: Settings,
    pub leader: LeaderSettings,
    pub http: Option<SocketAddr>,
}

/// Runs the operator until a shutdown signal or the loss of leadership: caches and probes
/// from the start, the scheduler and the reconcilers once this replica leads.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    let (watches, job_requests) = watches::start(&client);
    let history_store = workload::store(client.clone(), &config.leader.namespace);
    let durations_store = ConfigStore::new(
        client.clone(),
        &config.leader.namespace,
        duration_history::CONFIG_MAP,
        duration_history::DATA_KEY,
    );
    let ctx = Arc::new(Context::new(
        client.clone(),
        config.settings,
        config.leader.identity.clone(),
        watches,
    ));
    let health = http::Health::new(ctx.metrics.clone());
    if let Some(addr) = config.http {
        http::spawn(addr, health.clone())
            .await
            .map_err(|source| Error::Listen { addr, source })?;
    }
    ctx.caches
        .stores
        .wait_until_ready()
        .await
        .map_err(|_| Error::CacheClosed)?;
    health.ready.store(true, Ordering::Relaxed);
    info!("caches synced");

    let elector = Elector::new(client.clone(), config.leader);
    tokio::select! {
        _ = elector.acquire() => {}
        _ = shutdown_signal() => { info!("shutting down"); return Ok(()); }
    }
    ctx.metrics.leader.set(1);
    ctx.signals.job_triggers.enable(&ctx.caches.stores.jobs);
    // Only the leader learns the workload, so only it reads and writes the history.
    if ctx.settings.workload.learns() {
        let loaded = workload::load(&history_store, ctx.settings.workload.history).await;
        *ctx.scheduler.history() = loaded;
    }
    // Only the leader records finished runs, so only it reads and writes their history.
    let predicting = crate::predict::Settings::default();
    let durations = config_store::load_or(
        &durations_store,
        |text| DurationHistory::from_json(predicting, text),
        || DurationHistory::new(predicting),
    )
    .await;
    *ctx.scheduler.durations() = durations;
    info!("scheduling and reconciling");
    // Each part of the leader's work is a task of its own: they run on all of the runtime's
    // threads, and a long scheduling cycle holds up neither the reconcilers nor the lease.
    let mut leading = tokio::task::JoinSet::new();
    leading.spawn({
        let ctx = ctx.clone();
        async move {
            scheduler::run(ctx).await;
            "scheduler"
        }
    });
    for (name, reconciler) in reconcilers(client, ctx.clone(), job_requests) {
        leading.spawn(async move {
            reconciler.await;
            name
        });
    }
    leading.spawn({
        let ctx = ctx.clone();
        let stores = (history_store.clone(), durations_store.clone());
        async move {
            keep_histories(&ctx.settings.workload, &ctx.scheduler, &stores).await;
            "learned histories"
        }
    });
    let outcome = tokio::select! {
        stopped = leading.join_next() => Err(stopped_part(stopped)),
        _ = elector.hold() => {
            warn!("stepping down");
            ctx.metrics.leader.set(0);
            // The lease is gone: none of the leader's work may go on.
            leading.shutdown().await;
            return Ok(());
        }
        _ = shutdown_signal() => { info!("shutting down"); Ok(()) }
    };
    // Stopped before the lease is released, so no write of this replica's follows it.
    leading.shutdown().await;
    // Still the leader: what was learned since the last save is not lost.
    save_histories(
        &ctx.settings.workload,
        &ctx.scheduler,
        &(history_store, durations_store),
    )
    .await;
    elector.release().await;
    ctx.metrics.leader.set(0);
    outcome
}

/// The error for a part of the leader's work that ended; each runs until it is stopped.
fn stopped_part(stopped: Option<Result<&'static str, tokio::task::JoinError>>) -> Error {
    let (part, cause) = match stopped {
        Some(Ok(part)) => (part, "it ended".to_string()),
        Some(Err(e)) => ("a task", e.to_string()),
        None => ("every task", "none was running".to_string()),
    };
    error!(part, cause = %cause, "stopped; giving up leadership");
    Error::Stopped { part, cause }
}

/// The three reconcilers, each named, each running until stopped. The TrainingJob
/// controller has no watches of its own: it reads the shared caches and reconciles what
/// `job_requests` asks for (see [`watches`]). Queues and VirtualClusters are few; their
/// controllers watch them and reconcile all of them whenever a scheduling cycle changed the
/// usage numbers.
fn reconcilers(
    client: Client,
    ctx: Arc<Context>,
    job_requests: JobRequests,
) -> [(&'static str, BoxFuture<'static, ()>); 3] {
    let jobs = Controller::for_stream(
        futures::stream::pending::<Result<TrainingJob, watcher::Error>>(),
        ctx.caches.stores.jobs.clone(),
    )
    .reconcile_on(job_requests)
    .run(
        trainingjob::reconcile,
        trainingjob::error_policy,
        ctx.clone(),
    )
    .for_each({
        let ctx = ctx.clone();
        move |r| settle(&ctx.failures, r)
    });
    let queues = Controller::new(
        Api::<Queue>::all(client.clone()),
        watcher::Config::default(),
    )
    .reconcile_all_on(usage_changes(&ctx.signals))
    .run(queue::reconcile, queue::error_policy, ctx.clone())
    .for_each({
        let ctx = ctx.clone();
        move |r| settle(&ctx.failures, r)
    });
    let vcs = Controller::new(
        Api::<VirtualCluster>::all(client),
        watcher::Config::default(),
    )
    .reconcile_all_on(usage_changes(&ctx.signals))
    .run(
        virtualcluster::reconcile,
        virtualcluster::error_policy,
        ctx.clone(),
    )
    .for_each(move |r| settle(&ctx.failures, r));
    [
        ("trainingjob reconciler", jobs.boxed()),
        ("queue reconciler", queues.boxed()),
        ("virtualcluster reconciler", vcs.boxed()),
    ]
}

/// What a reconciler's run yields: a successful reconcile starts the object's backoff over
/// (failures are counted and retried by the error policies).
fn settle<K, E>(
    failures: &Failures,
    result: Result<(ObjectRef<K>, Action), E>,
) -> futures::future::Ready<()>
where
    K: Resource<DynamicType = ()>,
{
    if let Ok((obj, _)) = result {
        failures.forget(&obj.erase());
    }
    futures::future::ready(())
}

/// One item per change of the scheduling cycle's usage numbers (few Queues and
/// VirtualClusters exist, so all of them are reconciled; unchanged status is not written).
fn usage_changes(signals: &Signals) -> impl futures::Stream<Item = ()> + Send + 'static {
    futures::stream::unfold(signals.usage_changed.subscribe(), |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
}

/// Saves the learned histories (the workload's shapes, the run times) when they changed, at
/// most once a `save_interval`.
async fn keep_histories(
    settings: &WorkloadSettings,
    scheduler: &SchedulerState,
    stores: &(ConfigStore, ConfigStore),
) {
    loop {
        tokio::time::sleep(settings.save_interval).await;
        save_histories(settings, scheduler, stores).await;
    }
}

/// `stores`: the workload history's, the run times'.
async fn save_histories(
    settings: &WorkloadSettings,
    scheduler: &SchedulerState,
    (workload, durations): &(ConfigStore, ConfigStore),
) {
    if settings.learns() {
        workload.save_if_changed(scheduler.history_lock()).await;
    }
    durations.save_if_changed(scheduler.durations_lock()).await;
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
