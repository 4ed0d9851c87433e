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
pub mod index;
pub mod leader;
pub mod lifecycle;
pub mod metrics;
pub mod placement_rules;
pub mod pods;
pub mod preemption;
pub mod queue;
pub mod resources;
pub mod scheduler;
pub mod snapshot;
pub mod status;
pub mod trainingjob;
pub mod usage;
pub mod validate;
pub mod virtualcluster;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::api::annotations::{JOB_LABEL, PRODUCT_LABEL};
use crate::api::{Queue, TrainingJob, VirtualCluster};
use context::{Context, JobTriggers, Settings, Stores};
use index::PodIndex;
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

/// A reflector cache of `K`, kept current by a task that also wakes the scheduler on change
/// and hands every event, once applied, to `on_event` (indexes, reconcile triggers), which
/// says whether the change can matter to the scheduler.
fn cache<K>(
    api: Api<K>,
    wc: watcher::Config,
    wake: Arc<Notify>,
    mut on_event: impl FnMut(&watcher::Event<K>) -> bool + Send + 'static,
) -> Store<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(api, wc)
            .default_backoff()
            .modify(strip_bookkeeping),
    );
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    if on_event(&event)
                        && matches!(
                            event,
                            watcher::Event::Apply(_)
                                | watcher::Event::Delete(_)
                                | watcher::Event::InitApply(_)
                        )
                    {
                        wake.notify_one();
                    }
                }
                Err(e) => warn!(error = %e, "watch error; retrying with backoff"),
            }
        }
    });
    reader
}

/// Drops what no reader of the caches uses but every cached object carries: the field
/// managers' records and kubectl's copy of the last applied manifest. With tens of
/// thousands of jobs and pods cached they are a large part of the operator's memory.
fn strip_bookkeeping<K: Resource>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
    if let Some(a) = obj.meta_mut().annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The object of an event that carries one.
fn event_object<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => {
            Some(o)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// Asks for a reconcile of the TrainingJobs owning `pod`.
fn request_owners(triggers: &JobTriggers, pod: &Pod) {
    let ns = pod.namespace();
    for owner in pod.owner_references() {
        if let Some(job) = ObjectRef::<TrainingJob>::from_owner_ref(ns.as_deref(), owner, ()) {
            triggers.request(job);
        }
    }
}

/// Bumps `generation` on every event (for the small kinds the reference maps copy).
fn bump<K>(generation: Arc<AtomicU64>) -> impl FnMut(&watcher::Event<K>) -> bool + Send + 'static {
    move |_| {
        generation.fetch_add(1, Ordering::SeqCst);
        true
    }
}

/// What the scheduler reads of a node: everything but the heartbeat times, which change
/// every few seconds on every node and would otherwise start a cycle each time.
fn node_fingerprint(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    node.metadata.labels.hash(&mut h);
    node.metadata.annotations.hash(&mut h);
    if let Some(spec) = &node.spec {
        spec.unschedulable.hash(&mut h);
        for t in spec.taints.iter().flatten() {
            (&t.key, &t.value, &t.effect).hash(&mut h);
        }
    }
    if let Some(status) = &node.status {
        for (k, q) in status.allocatable.iter().flatten() {
            (k, &q.0).hash(&mut h);
        }
        for c in status.conditions.iter().flatten() {
            (&c.type_, &c.status).hash(&mut h);
        }
    }
    h.finish()
}

/// Runs the operator until a shutdown signal or the loss of leadership.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    let wake = Arc::new(Notify::new());
    let pod_index = Arc::new(PodIndex::default());
    let refs_generation = Arc::new(AtomicU64::new(0));
    let (triggers, trigger_rx) = JobTriggers::new();
    let triggers = Arc::new(triggers);
    let status_writes: Arc<std::sync::Mutex<HashMap<String, Option<String>>>> = Arc::default();
    let pods = cache(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default(),
        wake.clone(),
        {
            let (index, triggers) = (pod_index.clone(), triggers.clone());
            move |event: &watcher::Event<Pod>| {
                index.apply(event);
                // What `Controller::owns` did with a watch of its own.
                if let Some(pod) = event_object(event)
                    && pod.labels().contains_key(JOB_LABEL)
                {
                    request_owners(&triggers, pod);
                }
                true
            }
        },
    );
    let stores = Stores {
        nodes: cache(
            Api::<Node>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            {
                // The GPU types the nodes offer feed validation: bump only when they change.
                // Heartbeats alone do not wake the scheduler (its resync still runs).
                let generation = refs_generation.clone();
                let (pods, node_triggers) = (pods.clone(), triggers.clone());
                let mut seen: HashMap<String, (Option<String>, u64)> = HashMap::new();
                move |event: &watcher::Event<Node>| {
                    let (flavor_changed, wake) = match event {
                        watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                            let flavor = n.labels().get(PRODUCT_LABEL).cloned();
                            let print = node_fingerprint(n);
                            match seen.insert(n.name_any(), (flavor.clone(), print)) {
                                Some((f, p)) => (f != flavor, p != print),
                                None => (true, true),
                            }
                        }
                        watcher::Event::Delete(n) => {
                            seen.remove(&n.name_any());
                            (true, true)
                        }
                        watcher::Event::Init => {
                            seen.clear();
                            (true, true)
                        }
                        watcher::Event::InitDone => (true, true),
                    };
                    if flavor_changed {
                        generation.fetch_add(1, Ordering::SeqCst);
                    }
                    // A node that changed (taints, readiness, GPU health): the jobs running
                    // on it look at once whether it stopped them.
                    if let (true, watcher::Event::Apply(n)) = (wake, event) {
                        let name = n.name_any();
                        for pod in pods.state() {
                            if pod.labels().contains_key(JOB_LABEL)
                                && pod.spec.as_ref().and_then(|s| s.node_name.as_ref())
                                    == Some(&name)
                            {
                                request_owners(&node_triggers, &pod);
                            }
                        }
                    }
                    wake
                }
            },
        ),
        pods: pods.clone(),
        jobs: cache(
            Api::<TrainingJob>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            {
                let (triggers, writes) = (triggers.clone(), status_writes.clone());
                move |event: &watcher::Event<TrainingJob>| {
                    match event {
                        watcher::Event::Apply(j) | watcher::Event::InitApply(j) => {
                            triggers.request(ObjectRef::from_obj(j));
                        }
                        watcher::Event::Delete(j) => {
                            let key = snapshot::job_key(j);
                            writes
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&key);
                        }
                        watcher::Event::Init | watcher::Event::InitDone => {}
                    }
                    true
                }
            },
        ),
        queues: cache(
            Api::<Queue>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
        vcs: cache(
            Api::<VirtualCluster>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
        namespaces: cache(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
        // Claims and volumes: a bound volume's node affinity restricts where the job's pods
        // may run (placement_rules::volume_affinities).
        claims: cache(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
        volumes: cache(
            Api::<PersistentVolume>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
        // PriorityClasses: a job's priority when spec.priority is unset
        // (validate::effective_priority).
        priority_classes: cache(
            Api::<PriorityClass>::all(client.clone()),
            watcher::Config::default(),
            wake.clone(),
            bump(refs_generation.clone()),
        ),
    };
    let mut ctx = Context::new(
        client.clone(),
        config.settings.clone(),
        stores.clone(),
        config.leader.identity.clone(),
    );
    ctx.wake = wake;
    ctx.pod_index = pod_index;
    ctx.refs_generation = refs_generation;
    ctx.job_triggers = triggers.clone();
    ctx.status_writes = status_writes;
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
        stores.claims.wait_until_ready().await,
        stores.volumes.wait_until_ready().await,
        stores.priority_classes.wait_until_ready().await,
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

    // The TrainingJob controller shares the caches: the job and pod caches' tasks send it
    // what its own watches of jobs and of owned pods would have (see `cache` above).
    triggers.enable();
    for job in stores.jobs.state() {
        triggers.request(ObjectRef::from_obj(job.as_ref()));
    }
    let jobs = Controller::for_stream(
        futures::stream::pending::<Result<TrainingJob, watcher::Error>>(),
        stores.jobs.clone(),
    )
    .reconcile_on(trigger_rx)
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
    .reconcile_all_on(usage_changes(&ctx))
    .run(queue::reconcile, queue::error_policy, ctx.clone())
    .for_each(|_| futures::future::ready(()));
    let vcs = Controller::new(
        Api::<VirtualCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .reconcile_all_on(usage_changes(&ctx))
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

/// One item per change of the scheduling cycle's usage numbers (few Queues and
/// VirtualClusters exist, so all of them are reconciled; unchanged status is not written).
fn usage_changes(ctx: &Context) -> impl futures::Stream<Item = ()> + Send + 'static {
    futures::stream::unfold(ctx.usage_changed.subscribe(), |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_objects_lose_bookkeeping_but_keep_their_own_annotations() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "p",
                "annotations": {LAST_APPLIED: "{\"big\": true}", "kubetrain.io/placement": "x"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            }
        }))
        .expect("pod");
        strip_bookkeeping(&mut pod);
        assert!(pod.metadata.managed_fields.is_none());
        let annotations = pod.metadata.annotations.expect("annotations");
        assert!(!annotations.contains_key(LAST_APPLIED));
        assert_eq!(
            annotations
                .get("kubetrain.io/placement")
                .map(String::as_str),
            Some("x")
        );
    }
}
