//! The watches: one reflector cache per kind the operator reads, and what each kind's events
//! set off besides keeping its cache current. Every kind has one named handler (`on_event`)
//! that says what its events mean to the rest of the operator:
//!
//! | kind | handler | besides the cache |
//! | --- | --- | --- |
//! | Pod | [`PodEvents`] | the [`PodIndex`]; a reconcile of the owning job (pods labelled with a job) |
//! | Node | [`NodeEvents`] | a reconcile of every job with a pod on a node that changed; `refs_generation` when its GPU type label changes |
//! | TrainingJob | [`JobEvents`] | a reconcile of the job; on deletion, its status-write record and reconcile failures forgotten |
//! | Queue, VirtualCluster, Namespace, PVC, PV, PriorityClass | [`ReferenceEvents`] | `refs_generation`; on deletion, reconcile failures forgotten |
//!
//! Every change wakes the scheduler (debounced), except a node's heartbeat alone and a
//! status-only change of a Queue or VirtualCluster.
//!
//! Why it is wired this way:
//! - **One cache per kind, shared.** The scheduler, the reconcilers and validation read the
//!   same caches. The TrainingJob controller has no watches of its own: a second watch of
//!   every pod would double the operator's largest cache and the API server's work, so the
//!   job and pod handlers send it what its own watch of jobs and `owns` watch of pods would
//!   have, through [`JobTriggers`].
//! - **A standby buffers nothing.** A standby replica keeps warm caches (it is Ready and takes
//!   over at once) but does not reconcile. [`JobTriggers`] drops every request until the
//!   replica leads, then asks once for every cached job: nothing piles up in a standby's
//!   memory, and nothing a standby dropped is missed.
//! - **Nodes wake the jobs on them.** A node that changed (taints, readiness, GPU health) has
//!   the jobs running on it look at once whether it stopped them, not at their next requeue.
//!   A heartbeat alone changes nothing the scheduler or a job reads ([`node_fingerprint`]),
//!   so it wakes neither; the scheduler's periodic resync still runs.
//! - **The scheduler's own status writes do not wake it.** Each cycle applies the Queues' and
//!   VirtualClusters' status (their usage), which the scheduler never reads: waking on those
//!   made every cycle that changed a usage run the next one, about every 100 ms while jobs
//!   started ([`ReferenceEvents::status_only`]).
//! - **`refs_generation`.** Validation reads owned copies of the small kinds
//!   (`caches::RefMaps`), rebuilt only when the generation moved: every event of
//!   those kinds bumps it, a node's only when the GPU types on offer may have changed.
//! - **Handlers run after the cache applied the event**, so what they trigger reads a cache
//!   at least as new as the event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::Notify;
use tracing::warn;

use super::backoff::Failures;
use super::index::PodIndex;
use super::job_key::JobKey;
use crate::api::annotations::{JOB_LABEL, PRODUCT_LABEL};
use crate::api::{Queue, TrainingJob, VirtualCluster};

/// Reflector caches of everything the operator reads.
#[derive(Clone)]
pub struct Stores {
    pub nodes: Store<Node>,
    pub pods: Store<Pod>,
    pub jobs: Store<TrainingJob>,
    pub queues: Store<Queue>,
    pub vcs: Store<VirtualCluster>,
    pub namespaces: Store<Namespace>,
    pub claims: Store<PersistentVolumeClaim>,
    pub volumes: Store<PersistentVolume>,
    pub priority_classes: Store<PriorityClass>,
}

impl Stores {
    /// Waits until every cache has listed its kind once.
    pub async fn wait_until_ready(&self) -> Result<(), reflector::store::WriterDropped> {
        self.nodes.wait_until_ready().await?;
        self.pods.wait_until_ready().await?;
        self.jobs.wait_until_ready().await?;
        self.queues.wait_until_ready().await?;
        self.vcs.wait_until_ready().await?;
        self.namespaces.wait_until_ready().await?;
        self.claims.wait_until_ready().await?;
        self.volumes.wait_until_ready().await?;
        self.priority_classes.wait_until_ready().await
    }
}

/// By job key: the resourceVersion our last status write was computed from (forgotten when
/// the job is deleted).
#[derive(Default)]
pub struct StatusWrites(Mutex<HashMap<JobKey, Option<String>>>);

impl StatusWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobKey, Option<String>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn written_from(&self, job: &JobKey) -> Option<String> {
        self.lock().get(job).cloned().flatten()
    }

    pub fn record(&self, job: JobKey, from: Option<String>) {
        self.lock().insert(job, from);
    }

    pub fn forget(&self, job: &JobKey) {
        self.lock().remove(job);
    }
}

/// The caches and what their handlers keep current, for the `Context`.
pub struct Watches {
    pub stores: Stores,
    /// Wakes the scheduler loop.
    pub wake: Arc<Notify>,
    pub pod_index: Arc<PodIndex>,
    pub refs_generation: Arc<AtomicU64>,
    pub job_triggers: Arc<JobTriggers>,
    pub status_writes: Arc<StatusWrites>,
    pub failures: Arc<Failures>,
}

/// The TrainingJob controller's reconcile requests (see [`JobTriggers`]).
pub type JobRequests = mpsc::UnboundedReceiver<ObjectRef<TrainingJob>>;

/// Starts a watch of every kind the operator reads, each with its handler.
pub fn start(client: &Client) -> (Watches, JobRequests) {
    let wake = Arc::new(Notify::new());
    let pod_index = Arc::new(PodIndex::default());
    let refs_generation = Arc::new(AtomicU64::new(0));
    let (job_triggers, job_requests) = JobTriggers::new();
    let job_triggers = Arc::new(job_triggers);
    let status_writes = Arc::new(StatusWrites::default());
    let failures = Arc::new(Failures::default());

    let pods = cache(
        client,
        &wake,
        PodEvents {
            index: pod_index.clone(),
            triggers: job_triggers.clone(),
        },
    );
    let refs = || ReferenceEvents {
        generation: refs_generation.clone(),
        failures: failures.clone(),
        status_only: None,
    };
    let stores = Stores {
        nodes: cache(
            client,
            &wake,
            NodeEvents::new(refs_generation.clone(), pods.clone(), job_triggers.clone()),
        ),
        pods,
        jobs: cache(
            client,
            &wake,
            JobEvents {
                triggers: job_triggers.clone(),
                status_writes: status_writes.clone(),
                failures: failures.clone(),
            },
        ),
        queues: cache(client, &wake, refs().ignoring_status()),
        vcs: cache(client, &wake, refs().ignoring_status()),
        namespaces: cache(client, &wake, refs()),
        // A bound volume's node affinity restricts where the job's pods may run
        // (placement_rules::volume_affinities).
        claims: cache(client, &wake, refs()),
        volumes: cache(client, &wake, refs()),
        // A job's priority when spec.priority is unset (validate::effective_priority).
        priority_classes: cache(client, &wake, refs()),
    };
    let watches = Watches {
        stores,
        wake,
        pod_index,
        refs_generation,
        job_triggers,
        status_writes,
        failures,
    };
    (watches, job_requests)
}

/// What one kind's events set off besides its cache.
trait Handler<K>: Send + 'static {
    /// Follows one event, once the cache applied it; says whether the change can matter to
    /// the scheduler.
    fn on_event(&mut self, event: &watcher::Event<K>) -> bool;
}

/// A reflector cache of every `K`, kept current by a task that hands each event to `handler`
/// and wakes the scheduler when the handler says the change can matter to it.
fn cache<K, H>(client: &Client, wake: &Arc<Notify>, mut handler: H) -> Store<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    H: Handler<K>,
{
    let (reader, writer) = reflector::store();
    let wake = wake.clone();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(Api::<K>::all(client.clone()), watcher::Config::default())
            .default_backoff()
            .modify(strip_bookkeeping),
    );
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    if handler.on_event(&event)
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

/// Reconcile requests for the TrainingJob controller. The caches feed it (so the controller
/// needs no watches of its own) only while this operator leads; a standby buffers nothing.
pub struct JobTriggers {
    tx: mpsc::UnboundedSender<ObjectRef<TrainingJob>>,
    on: AtomicBool,
}

impl JobTriggers {
    pub fn new() -> (Self, JobRequests) {
        let (tx, rx) = mpsc::unbounded();
        let triggers = JobTriggers {
            tx,
            on: AtomicBool::new(false),
        };
        (triggers, rx)
    }

    /// Starts forwarding requests (on taking the lead), and asks for every job in `jobs`:
    /// what happened to them while this replica stood by was dropped.
    pub fn enable(&self, jobs: &Store<TrainingJob>) {
        self.on.store(true, Ordering::SeqCst);
        for job in jobs.state() {
            self.request(ObjectRef::from_obj(job.as_ref()));
        }
    }

    /// Asks for a reconcile of the job (dropped while not enabled).
    pub fn request(&self, job: ObjectRef<TrainingJob>) {
        if self.on.load(Ordering::Relaxed) {
            let _ = self.tx.unbounded_send(job);
        }
    }

    /// Asks for a reconcile of the TrainingJobs owning `pod`.
    fn request_owners(&self, pod: &Pod) {
        let ns = pod.namespace();
        for owner in pod.owner_references() {
            if let Some(job) = ObjectRef::<TrainingJob>::from_owner_ref(ns.as_deref(), owner, ()) {
                self.request(job);
            }
        }
    }
}

/// The object of an event that carries one.
fn event_object<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => {
            Some(o)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// Pods: the index by job, and what `Controller::owns` did with a watch of its own.
struct PodEvents {
    index: Arc<PodIndex>,
    triggers: Arc<JobTriggers>,
}

impl Handler<Pod> for PodEvents {
    fn on_event(&mut self, event: &watcher::Event<Pod>) -> bool {
        self.index.apply(event);
        if let Some(pod) = event_object(event)
            && pod.labels().contains_key(JOB_LABEL)
        {
            self.triggers.request_owners(pod);
        }
        true
    }
}

/// Nodes: the jobs on a node that changed look at once; the GPU types on offer feed
/// validation.
struct NodeEvents {
    refs_generation: Arc<AtomicU64>,
    pods: Store<Pod>,
    triggers: Arc<JobTriggers>,
    /// By node: its GPU type and [`node_fingerprint`], as last seen.
    seen: HashMap<String, (Option<String>, u64)>,
}

impl NodeEvents {
    fn new(refs_generation: Arc<AtomicU64>, pods: Store<Pod>, triggers: Arc<JobTriggers>) -> Self {
        NodeEvents {
            refs_generation,
            pods,
            triggers,
            seen: HashMap::new(),
        }
    }

    /// Whether the event changes the node's GPU type, and whether it changes anything else
    /// the scheduler reads.
    fn changes(&mut self, event: &watcher::Event<Node>) -> (bool, bool) {
        match event {
            watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                let flavor = n.labels().get(PRODUCT_LABEL).cloned();
                let print = node_fingerprint(n);
                match self.seen.insert(n.name_any(), (flavor.clone(), print)) {
                    Some((f, p)) => (f != flavor, p != print),
                    None => (true, true),
                }
            }
            watcher::Event::Delete(n) => {
                self.seen.remove(&n.name_any());
                (true, true)
            }
            watcher::Event::Init => {
                self.seen.clear();
                (true, true)
            }
            watcher::Event::InitDone => (true, true),
        }
    }
}

impl Handler<Node> for NodeEvents {
    fn on_event(&mut self, event: &watcher::Event<Node>) -> bool {
        let (flavor_changed, changed) = self.changes(event);
        if flavor_changed {
            self.refs_generation.fetch_add(1, Ordering::SeqCst);
        }
        if let (true, watcher::Event::Apply(n)) = (changed, event) {
            let name = n.name_any();
            for pod in self.pods.state() {
                if pod.labels().contains_key(JOB_LABEL)
                    && pod.spec.as_ref().and_then(|s| s.node_name.as_ref()) == Some(&name)
                {
                    self.triggers.request_owners(&pod);
                }
            }
        }
        changed
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

/// TrainingJobs: what `Controller::new`'s watch of the kind did; a deleted job's last
/// status write and its reconcile failures are forgotten.
struct JobEvents {
    triggers: Arc<JobTriggers>,
    status_writes: Arc<StatusWrites>,
    failures: Arc<Failures>,
}

impl Handler<TrainingJob> for JobEvents {
    fn on_event(&mut self, event: &watcher::Event<TrainingJob>) -> bool {
        match event {
            watcher::Event::Apply(j) | watcher::Event::InitApply(j) => {
                self.triggers.request(ObjectRef::from_obj(j));
            }
            watcher::Event::Delete(j) => {
                self.status_writes.forget(&JobKey::of(j));
                self.failures.forget(&ObjectRef::from_obj(j).erase());
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
        true
    }
}

/// The small kinds validation copies into its reference maps: any change may change them.
/// Queues and VirtualClusters are reconciled too: a deleted one's failures are forgotten.
struct ReferenceEvents {
    generation: Arc<AtomicU64>,
    failures: Arc<Failures>,
    /// For kinds whose status only the operator writes and the scheduler does not read: by
    /// object, its [`meta_fingerprint`] as last seen. A change that leaves it alone is a
    /// status write and wakes nobody.
    status_only: Option<HashMap<ObjectRef<DynamicObject>, u64>>,
}

impl ReferenceEvents {
    fn ignoring_status(self) -> Self {
        ReferenceEvents {
            status_only: Some(HashMap::new()),
            ..self
        }
    }
}

impl<K: Resource<DynamicType = ()>> Handler<K> for ReferenceEvents {
    fn on_event(&mut self, event: &watcher::Event<K>) -> bool {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let watcher::Event::Delete(o) = event {
            self.failures.forget(&ObjectRef::from_obj(o).erase());
        }
        let Some(seen) = self.status_only.as_mut() else {
            return true;
        };
        match event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                let print = meta_fingerprint(o.meta());
                seen.insert(ObjectRef::from_obj(o).erase(), print) != Some(print)
            }
            watcher::Event::Delete(o) => {
                seen.remove(&ObjectRef::from_obj(o).erase());
                true
            }
            watcher::Event::Init => {
                seen.clear();
                true
            }
            watcher::Event::InitDone => true,
        }
    }
}

/// Everything of an object but its status: `generation` moves with every spec change of a
/// kind with a status subresource; the rest of the metadata does not move it.
fn meta_fingerprint(meta: &ObjectMeta) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut h);
    meta.labels.hash(&mut h);
    meta.annotations.hash(&mut h);
    meta.deletion_timestamp.as_ref().map(|t| t.0).hash(&mut h);
    meta.finalizers.hash(&mut h);
    meta.uid.hash(&mut h);
    h.finish()
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

    fn job(ns: &str, name: &str) -> TrainingJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1",
            "kind": "TrainingJob",
            "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{name}")},
            "spec": {"tasks": []},
        }))
        .expect("job")
    }

    /// A pod of job `job`, on `node`, owned by the job (`labelled`: carrying the job label).
    fn pod(name: &str, job: &str, node: &str, labelled: bool) -> Pod {
        let labels = if labelled {
            serde_json::json!({JOB_LABEL: job})
        } else {
            serde_json::json!({})
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "namespace": "team", "name": name, "labels": labels,
                "ownerReferences": [{
                    "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
                    "name": job, "uid": format!("uid-{job}"), "controller": true,
                }],
            },
            "spec": {"nodeName": node, "containers": []},
        }))
        .expect("pod")
    }

    fn node(name: &str, product: &str, tainted: bool, heartbeat: &str) -> Node {
        let taints = if tainted {
            serde_json::json!([{"key": "maintenance", "effect": "NoSchedule"}])
        } else {
            serde_json::json!([])
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {PRODUCT_LABEL: product}},
            "spec": {"taints": taints},
            "status": {"conditions": [{
                "type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat,
            }]},
        }))
        .expect("node")
    }

    fn enabled_triggers() -> (Arc<JobTriggers>, JobRequests) {
        let (triggers, rx) = JobTriggers::new();
        triggers.enable(&reflector::store().0);
        (Arc::new(triggers), rx)
    }

    /// The requests waiting in `rx`, as `namespace/name`.
    fn requested(rx: &mut JobRequests) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
            .collect()
    }

    #[test]
    fn a_standby_buffers_nothing_and_catches_up_when_it_leads() {
        let (triggers, mut rx) = JobTriggers::new();
        triggers.request(ObjectRef::new("early").within("team"));
        assert!(requested(&mut rx).is_empty());
        let (jobs, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Apply(job("team", "a")));
        triggers.enable(&jobs);
        triggers.request(ObjectRef::new("b").within("team"));
        assert_eq!(requested(&mut rx), ["team/a", "team/b"]);
    }

    #[test]
    fn a_pod_event_reconciles_its_job_only_when_labelled_with_it() {
        let (triggers, mut rx) = enabled_triggers();
        let mut pods = PodEvents {
            index: Arc::default(),
            triggers,
        };
        assert!(pods.on_event(&watcher::Event::Apply(pod("a-0", "a", "n1", true))));
        assert!(pods.on_event(&watcher::Event::Apply(pod("b-0", "b", "n1", false))));
        assert!(pods.on_event(&watcher::Event::Delete(pod("a-1", "a", "n1", true))));
        assert_eq!(requested(&mut rx), ["team/a", "team/a"]);
    }

    #[test]
    fn a_heartbeat_wakes_nobody_and_a_taint_wakes_the_jobs_on_the_node() {
        let (triggers, mut rx) = enabled_triggers();
        let (pods, mut writer) = reflector::store();
        for p in [
            pod("a-0", "a", "n1", true),
            pod("b-0", "b", "n2", true),
            pod("c-0", "c", "n1", false),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(p));
        }
        let generation = Arc::new(AtomicU64::new(0));
        let mut nodes = NodeEvents::new(generation.clone(), pods, triggers);
        let gen_now = || generation.load(Ordering::SeqCst);

        nodes.on_event(&watcher::Event::Init);
        let first = node("n1", "H100", false, "2026-01-01T00:00:00Z");
        assert!(nodes.on_event(&watcher::Event::InitApply(first)));
        nodes.on_event(&watcher::Event::InitDone);
        let listed = gen_now();
        assert!(requested(&mut rx).is_empty(), "a relist reconciles nothing");

        let heartbeat = node("n1", "H100", false, "2026-01-01T00:00:10Z");
        assert!(!nodes.on_event(&watcher::Event::Apply(heartbeat)));
        assert!(requested(&mut rx).is_empty());
        assert_eq!(gen_now(), listed);

        let tainted = node("n1", "H100", true, "2026-01-01T00:00:20Z");
        assert!(nodes.on_event(&watcher::Event::Apply(tainted)));
        assert_eq!(requested(&mut rx), ["team/a"]);
        assert_eq!(gen_now(), listed, "the GPU types on offer did not change");

        let relabelled = node("n1", "A100", true, "2026-01-01T00:00:30Z");
        assert!(nodes.on_event(&watcher::Event::Apply(relabelled)));
        assert_eq!(gen_now(), listed + 1);
    }

    fn queue(generation: i64, label: &str, running: i32) -> Queue {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "q", "uid": "uid-q", "generation": generation,
                         "labels": {"team": label}},
            "spec": {"virtualCluster": "vc"},
            "status": {"running": running},
        }))
        .expect("queue")
    }

    /// The scheduler's own usage writes do not start another cycle; any other change does,
    /// and every event still renews the reference maps.
    #[test]
    fn a_queue_status_write_wakes_nobody_and_a_spec_change_does() {
        let generation = Arc::new(AtomicU64::new(0));
        let mut events = ReferenceEvents {
            generation: generation.clone(),
            failures: Arc::new(Failures::default()),
            status_only: None,
        }
        .ignoring_status();
        let wakes = |events: &mut ReferenceEvents, e: watcher::Event<Queue>| events.on_event(&e);

        assert!(wakes(&mut events, watcher::Event::Init));
        assert!(wakes(
            &mut events,
            watcher::Event::InitApply(queue(1, "a", 0))
        ));
        assert!(wakes(&mut events, watcher::Event::InitDone));
        assert!(!wakes(&mut events, watcher::Event::Apply(queue(1, "a", 5))));
        assert!(wakes(&mut events, watcher::Event::Apply(queue(2, "a", 5))));
        assert!(wakes(&mut events, watcher::Event::Apply(queue(2, "b", 5))));
        assert!(!wakes(&mut events, watcher::Event::Apply(queue(2, "b", 6))));
        assert!(wakes(&mut events, watcher::Event::Delete(queue(2, "b", 6))));
        assert!(
            wakes(&mut events, watcher::Event::Apply(queue(1, "b", 0))),
            "a queue made again is new"
        );
        assert_eq!(generation.load(Ordering::SeqCst), 9);
    }

    #[test]
    fn a_deleted_job_forgets_its_last_status_write_and_its_failures() {
        let (triggers, mut rx) = enabled_triggers();
        let status_writes = Arc::new(StatusWrites::default());
        let key = JobKey::new("team", "a");
        status_writes.record(key.clone(), Some("7".into()));
        let failures = Arc::new(Failures::default());
        failures.failed(ObjectRef::<TrainingJob>::new("a").within("team").erase());
        let mut jobs = JobEvents {
            triggers,
            status_writes: status_writes.clone(),
            failures: failures.clone(),
        };
        jobs.on_event(&watcher::Event::Apply(job("team", "a")));
        assert_eq!(requested(&mut rx), ["team/a"]);
        assert_eq!(status_writes.written_from(&key).as_deref(), Some("7"));
        jobs.on_event(&watcher::Event::Delete(job("team", "a")));
        assert_eq!(status_writes.written_from(&key), None);
        let again = failures.failed(ObjectRef::<TrainingJob>::new("a").within("team").erase());
        assert_eq!(again, super::super::backoff::FIRST, "the job starts over");
    }
}
