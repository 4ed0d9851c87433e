//! What every controller task shares: the client, the caches, the scheduler's in-memory
//! state (rebuilt from the API after a restart), settings and metrics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::Notify;

use super::backoff::Failures;
use super::index::PodIndex;
use super::job_key::JobKey;
use super::metrics::Metrics;
use super::pods::PodSettings;
use super::snapshot::{Asked, Inflight};
use super::usage::Usage;
use super::validate::{PriorityClassValue, Refs, Refusal};
use super::waiting::Published;
pub use super::watches::StatusWrites;
use super::watches::{JobTriggers, Stores, Watches};
use super::workload::{History, WorkloadSettings};
use crate::api::{Queue, TrainingJob, VirtualCluster};

pub use crate::api::annotations::MANAGER;

/// The operator's User-Agent: `MANAGER/version`.
pub const USER_AGENT: &str = concat!("kubetrain/", env!("CARGO_PKG_VERSION"));

/// Sets the operator's User-Agent on a client configuration. The API server names a write's
/// field manager after the User-Agent when the write gives none (kube-runtime's finalizer
/// patches), and audit logs name the client by it: without one both read "unknown".
pub fn identify(config: &mut kube::Config) {
    config.headers.push((
        axum::http::header::USER_AGENT,
        axum::http::HeaderValue::from_static(USER_AGENT),
    ));
}

/// Operator settings (from the command line).
#[derive(Clone, Debug)]
pub struct Settings {
    pub pods: PodSettings,
    /// Periodic scheduling cycle even when nothing changed.
    pub resync: Duration,
    /// Wait after a change before a cycle, to batch bursts.
    pub debounce: Duration,
    /// Retries caused by infrastructure (node lost, GPU unhealthy) before they count.
    pub max_infrastructure_retries: i32,
    /// A partial gang older than this with no admission in flight is torn down.
    pub incomplete_gang_timeout: Duration,
    /// A pod the cluster's scheduler reports `Unschedulable` this long rolls its gang's
    /// admission back (`--binding scheduler`).
    pub unschedulable_timeout: Duration,
    /// An admitted gang not running in full this long stops and retries (`None`: never).
    pub start_timeout: Option<Duration>,
    /// The workload's shape distribution for the fragmentation score: supplied, or learned.
    pub workload: WorkloadSettings,
    /// What the scheduling core may do (`--consolidation`).
    pub sched: crate::sched::Options,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            pods: PodSettings::default(),
            resync: Duration::from_secs(5),
            debounce: Duration::from_millis(100),
            max_infrastructure_retries: 10,
            incomplete_gang_timeout: Duration::from_secs(30),
            unschedulable_timeout: Duration::from_secs(20),
            start_timeout: Some(Duration::from_secs(600)),
            workload: WorkloadSettings::default(),
            sched: crate::sched::Options::default(),
        }
    }
}

/// The scheduler's memory between cycles. Nothing here is needed after a restart: it only
/// covers the time between an API write and the cache showing it.
#[derive(Default)]
pub struct SchedState {
    /// Admissions whose pods the cache may not show yet, by job key.
    pub inflight: BTreeMap<JobKey, Inflight>,
    /// Checkpoint requests the pod cache may not show yet, by the victim's job key.
    pub asked: BTreeMap<JobKey, Asked>,
    /// Why each waiting job waits, and its place in its queue, as its status says it
    /// (`waiting::publish`: the last cycle's, unless too little changed to be worth a write).
    pub waiting: BTreeMap<JobKey, Published>,
    /// Queue and VirtualCluster numbers from the last cycle.
    pub usage: Usage,
    /// A scheduling cycle is under way: every job it did not see, the next one sees.
    pub scheduling: bool,
}

pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub stores: Stores,
    pub state: Mutex<SchedState>,
    /// The learned workload history (kept in a ConfigMap across restarts, unlike `state`).
    pub history: Mutex<History>,
    /// Wakes the scheduler loop.
    pub wake: Arc<Notify>,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    /// The pod cache's index by job.
    pub pod_index: Arc<PodIndex>,
    /// Bumped by the caches whenever what [`RefMaps`] holds may have changed.
    pub refs_generation: Arc<AtomicU64>,
    refs_cache: Mutex<Option<(u64, Arc<RefMaps>)>>,
    /// Jobs whose pods or Service the API server refused as written, kept out of scheduling
    /// until their spec changes. In memory only: after a restart each is tried once more.
    refused: Mutex<BTreeMap<JobKey, Refusal>>,
    /// Reconcile requests for the TrainingJob controller, fed from the shared caches.
    pub job_triggers: Arc<JobTriggers>,
    pub status_writes: Arc<StatusWrites>,
    /// Consecutive reconcile failures by object, for their retries' backoff.
    pub failures: Arc<Failures>,
    /// Bumped by a scheduling cycle whose usage numbers differ from the last one's: the
    /// Queue and VirtualCluster controllers rewrite their status at once instead of on
    /// their periodic requeue (what `kubectl get queues` shows follows jobs within a cycle).
    pub usage_changed: Arc<tokio::sync::watch::Sender<u64>>,
}

/// Owned copies of the small maps validation needs.
pub struct RefMaps {
    pub queues: BTreeMap<String, Arc<Queue>>,
    pub vcs: BTreeMap<String, Arc<VirtualCluster>>,
    pub namespaces: BTreeMap<String, Namespace>,
    pub flavors: std::collections::BTreeSet<String>,
    /// The resources some node's allocatable has.
    pub resources: std::collections::BTreeSet<String>,
    /// Node affinity of the volume bound to each claim (`namespace/claim`), where it has one.
    pub volumes: BTreeMap<String, crate::sched::constraints::Affinity>,
    /// PriorityClasses by name (a job's priority when `spec.priority` is unset).
    pub priority_classes: BTreeMap<String, PriorityClassValue>,
    /// Jobs the API server refused ([`Context::refuse`]).
    pub refused: BTreeMap<JobKey, Refusal>,
}

impl RefMaps {
    pub fn refs(&self) -> Refs<'_> {
        Refs {
            queues: &self.queues,
            vcs: &self.vcs,
            namespaces: &self.namespaces,
            flavors: &self.flavors,
            resources: &self.resources,
            volumes: &self.volumes,
            priority_classes: &self.priority_classes,
            refused: &self.refused,
        }
    }
}

impl Context {
    /// The context of this operator (`instance`: its identity, as its Events name it), from
    /// the watches that keep its caches.
    pub fn new(client: Client, settings: Settings, instance: String, watches: Watches) -> Self {
        let Watches {
            stores,
            wake,
            pod_index,
            refs_generation,
            job_triggers,
            status_writes,
            failures,
        } = watches;
        let reporter = Reporter {
            controller: "kubetrain".into(),
            instance: Some(instance),
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            stores,
            state: Mutex::new(SchedState::default()),
            history: Mutex::new(History::new(if settings.workload.learns() {
                settings.workload.history
            } else {
                0
            })),
            wake,
            metrics: Arc::new(Metrics::default()),
            pod_index,
            refs_generation,
            refs_cache: Mutex::new(None),
            refused: Mutex::new(BTreeMap::new()),
            job_triggers,
            status_writes,
            failures,
            usage_changed: Arc::new(tokio::sync::watch::channel(0).0),
            settings,
        }
    }

    /// The resourceVersion the last status write for the job was computed from.
    pub fn status_written_from(&self, job: &JobKey) -> Option<String> {
        self.status_writes.written_from(job)
    }

    pub fn record_status_write(&self, job: JobKey, from: Option<String>) {
        self.status_writes.record(job, from);
    }

    /// The job's pods in the cache (any phase, being deleted or not), from the index: those
    /// it controls, not others of its name.
    pub fn job_pods(&self, job: &TrainingJob) -> Vec<Arc<Pod>> {
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        self.pod_index
            .pods_of(&self.stores.pods, &JobKey::of(job), uid)
    }

    /// Whether the job holds GPUs or is about to: its status says it was admitted
    /// (`Starting`, `Running`, `Preempting`), or an admission of it is in flight, or pods of it are
    /// present (its status not written yet, or its pods still leaving). What a deleted Queue
    /// or VirtualCluster waits for: a job admitted in the very cycle of the deletion is not
    /// `Running` yet, and letting the finalizer go cannot be undone.
    pub fn holds_gpus(&self, job: &TrainingJob) -> bool {
        let phase = job.status.as_ref().map(|s| s.phase).unwrap_or_default();
        if phase.holds_gpus() {
            return true;
        }
        if phase.is_finished() {
            return false;
        }
        self.state().inflight.contains_key(&JobKey::of(job))
            || self
                .job_pods(job)
                .iter()
                .any(|p| !matches!(pod_phase(p), Some("Succeeded" | "Failed")))
    }

    /// Whether the cluster-scoped object `name` (a Queue, a VirtualCluster) exists on the API
    /// server, for a reference the cache does not show. Objects applied together (a GitOps
    /// sync) reach the operator on separate watches, and under load the referring one can
    /// come first: reporting the reference unknown then would be a Warning and a status write
    /// about an object that is there. One GET, only on that path; an error counts as "not
    /// there", so the reference is reported as before.
    pub async fn exists_on_server<K>(&self, name: &str) -> bool
    where
        K: Resource<Scope = kube::core::ClusterResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::<K>::all(self.client.clone())
            .get_opt(name)
            .await
            .is_ok_and(|o| o.is_some())
    }

    /// Whether the API server holds a VirtualCluster the cache does not show as it is (new,
    /// or its spec changed since): a job naming no queue may be owned through it. As with
    /// [`Self::exists_on_server`], a team applied in one go (its jobs before its
    /// VirtualCluster, as `kubectl apply -f dir/` orders the files) got a `NoQueue` Warning
    /// for a moment. One LIST of metadata, only on that path; an error counts as "not behind".
    pub async fn virtual_clusters_behind(&self) -> bool {
        let api = Api::<VirtualCluster>::all(self.client.clone());
        let Ok(list) = api.list_metadata(&Default::default()).await else {
            return false;
        };
        list.items.iter().any(|vc| {
            let cached = self.stores.vcs.get(&ObjectRef::new(&vc.name_any()));
            // the spec's generation: status writes (frequent) change no namespace's owner
            cached.is_none_or(|c| c.metadata.generation != vc.metadata.generation)
        })
    }

    /// Locks the scheduler state; a panic elsewhere must not wedge the operator.
    pub fn state(&self) -> std::sync::MutexGuard<'_, SchedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks the learned workload history.
    pub fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The reference maps validation needs, rebuilt only after the caches changed them.
    pub fn ref_maps(&self) -> Arc<RefMaps> {
        let generation = self.refs_generation.load(Ordering::SeqCst);
        let mut cached = self.refs_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((g, maps)) = cached.as_ref()
            && *g == generation
        {
            return maps.clone();
        }
        let maps = Arc::new(self.build_ref_maps());
        *cached = Some((generation, maps.clone()));
        maps
    }

    /// Records that the API server refused an object of `job` as written: validation reports
    /// it (`Valid=False`, `InvalidTemplate`) and the scheduler no longer offers the job, so it
    /// holds no GPUs and blocks no job of its team, until its spec changes. Its reconcile
    /// writes the condition now, not on its next change.
    pub fn refuse(&self, job: &TrainingJob, object: String, message: String) {
        let key = JobKey::of(job);
        {
            let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
            // Deleted jobs' refusals go with the next one (a refusal is rare).
            refused.retain(|k, _| self.stores.jobs.get(&k.object_ref()).is_some());
            refused.insert(
                key.clone(),
                Refusal {
                    uid: job.metadata.uid.clone().unwrap_or_default(),
                    generation: job.metadata.generation.unwrap_or_default(),
                    object,
                    message,
                },
            );
        }
        self.refs_generation.fetch_add(1, Ordering::SeqCst);
        self.job_triggers.request(key.object_ref());
    }

    fn build_ref_maps(&self) -> RefMaps {
        RefMaps {
            refused: self
                .refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            queues: self
                .stores
                .queues
                .state()
                .into_iter()
                .map(|q| (q.name_any(), q))
                .collect(),
            vcs: self
                .stores
                .vcs
                .state()
                .into_iter()
                .map(|v| (v.name_any(), v))
                .collect(),
            namespaces: self
                .stores
                .namespaces
                .state()
                .into_iter()
                .map(|n| (n.name_any(), (*n).clone()))
                .collect(),
            flavors: self
                .stores
                .nodes
                .state()
                .iter()
                .filter_map(|n| {
                    n.labels()
                        .get(crate::api::annotations::PRODUCT_LABEL)
                        .cloned()
                })
                .collect(),
            resources: self
                .stores
                .nodes
                .state()
                .iter()
                .filter_map(|n| n.status.as_ref()?.allocatable.as_ref())
                .flat_map(|a| a.keys().cloned())
                .collect(),
            volumes: super::placement_rules::volume_affinities(
                &self.stores.claims.state(),
                &self.stores.volumes.state(),
            ),
            priority_classes: self
                .stores
                .priority_classes
                .state()
                .iter()
                .map(|pc| {
                    (
                        pc.name_any(),
                        PriorityClassValue {
                            value: pc.value.unwrap_or(0),
                            global_default: pc.global_default.unwrap_or(false),
                        },
                    )
                })
                .collect(),
        }
    }

    /// Publishes a Kubernetes Event about `obj`; failures are logged, never fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        self.event_with_action(obj, type_, reason, reason.to_string(), note)
            .await;
    }

    /// The same with its own `action`. The recorder folds events of one object, reason and
    /// action into a series that keeps the first note; an action per occurrence (`Retry2`)
    /// keeps each occurrence's note (its attempt and delay) visible.
    pub async fn event_with_action<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        action: String,
        note: String,
    ) {
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action,
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &obj.object_ref(&())).await {
            tracing::warn!(error = %e, reason, "could not publish event");
        }
    }
}

fn pod_phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manager the API server derives from the User-Agent (up to its `/`) is the one the
    /// operator's own applies name.
    #[test]
    fn the_user_agent_names_the_field_manager() {
        assert_eq!(USER_AGENT.split('/').next(), Some(MANAGER));
    }
}
