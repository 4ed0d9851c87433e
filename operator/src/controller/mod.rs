//! The controllers: kube-runtime reconcilers for the three kinds, the scheduling loop that
//! drives [`crate::sched`], leader election, and the metrics/health endpoints.
//!
//! All state lives in the API: job status, and annotations on the pods (placement, bonus,
//! checkpoint request and acknowledgement). The in-memory state ([`context::SchedState`])
//! only bridges the moment between a write and the cache showing it, so an operator killed
//! at any instant is replaced by one that resumes from the API alone.

pub mod conditions;
pub mod context;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod pods;
pub mod queue;
pub mod resources;
pub mod scheduler;
pub mod snapshot;
pub mod trainingjob;
pub mod usage;
pub mod validate;
pub mod virtualcluster;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::api::annotations::JOB_LABEL;
use crate::api::{Queue, TrainingJob, VirtualCluster};
use context::{Context, Settings, Stores};
use leader::{Elector, LeaderSettings};

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub settings: Settings,
    pub leader: LeaderSettings,
    pub http: Option<SocketAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("a cache stopped before it synced")]
    CacheClosed,
    #[error("serving metrics: {0}")]
    Http(#[from] std::io::Error),
}

/// A reflector cache of `K`, kept current by a task that also wakes the scheduler on change.
fn cache<K>(api: Api<K>, wc: watcher::Config, wake: Arc<Notify>) -> Store<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream =
        reflector::reflector(writer, watcher::watcher(api, wc).default_backoff()).touched_objects();
    tokio::spawn(drain(stream, wake));
    reader
}

async fn drain<K, S: Stream<Item = Result<K, watcher::Error>>>(stream: S, wake: Arc<Notify>) {
    futures::pin_mut!(stream);
    while let Some(item) = stream.next().await {
        match item {
            Ok(_) => wake.notify_one(),
            Err(e) => warn!(error = %e, "watch error; retrying with backoff"),
        }
    }
}

/// Runs the operator until a shutdown signal or the loss of leadership.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    let wake = Arc::new(Notify::new());
    let stores = Stores {
        nodes: cache(
            Api::<Node>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
        pods: cache(
            Api::<Pod>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
        jobs: cache(
            Api::<TrainingJob>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
        queues: cache(
            Api::<Queue>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
        vcs: cache(
            Api::<VirtualCluster>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
        namespaces: cache(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
        ),
    };
    let mut ctx = Context::new(
        client.clone(),
        config.settings.clone(),
        stores.clone(),
        config.leader.identity.clone(),
    );
    ctx.wake = wake;
    let ctx = Arc::new(ctx);

    let health = Arc::new(http::Health {
        metrics: ctx.metrics.clone(),
        ready: Default::default(),
    });
    if let Some(addr) = config.http {
        let health = health.clone();
        tokio::spawn(async move {
            if let Err(e) = http::serve(addr, health).await {
                warn!(error = %e, "metrics endpoint stopped");
            }
        });
    }

    for ready in [
        stores.nodes.wait_until_ready().await,
        stores.pods.wait_until_ready().await,
        stores.jobs.wait_until_ready().await,
        stores.queues.wait_until_ready().await,
        stores.vcs.wait_until_ready().await,
        stores.namespaces.wait_until_ready().await,
    ] {
        ready.map_err(|_| Error::CacheClosed)?;
    }
    health.ready.store(true, Ordering::Relaxed);
    info!("caches synced");

    let elector = Elector::new(client.clone(), config.leader.clone());
    tokio::select! {
        _ = elector.acquire() => {}
        _ = shutdown_signal() => { info!("shutting down"); return Ok(()); }
    }

    let jobs = Controller::new(
        Api::<TrainingJob>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(JOB_LABEL),
    )
    .run(
        trainingjob::reconcile,
        trainingjob::error_policy,
        ctx.clone(),
    )
    .for_each(|_| futures::future::ready(()));
    let queues = Controller::new(
        Api::<Queue>::all(client.clone()),
        watcher::Config::default(),
    )
    .run(queue::reconcile, queue::error_policy, ctx.clone())
    .for_each(|_| futures::future::ready(()));
    let vcs = Controller::new(
        Api::<VirtualCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .run(
        virtualcluster::reconcile,
        virtualcluster::error_policy,
        ctx.clone(),
    )
    .for_each(|_| futures::future::ready(()));
    info!("scheduling and reconciling");
    tokio::select! {
        _ = scheduler::run(ctx.clone()) => {}
        _ = jobs => {}
        _ = queues => {}
        _ = vcs => {}
        _ = elector.hold() => { warn!("stepping down"); return Ok(()); }
        _ = shutdown_signal() => { info!("shutting down"); }
    }
    elector.release().await;
    Ok(())
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
