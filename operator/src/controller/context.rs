//! What every controller task shares, as narrow handles: the caches ([`Caches`]), the
//! scheduler's in-memory state (rebuilt from the API after a restart: [`SchedulerState`]),
//! the client and what records writes ([`Writer`]), the wake-ups ([`Signals`]), settings and
//! metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use tokio::sync::Notify;

use super::backoff::Failures;
pub use super::caches::Caches;
use super::config_store::locked;
use super::duration_history::DurationHistory;
use super::job_key::JobKey;
use super::metrics::Metrics;
use super::pods::PodSettings;
use super::snapshot::{Asked, Inflight};
use super::usage::Usage;
use super::waiting::Published;
pub use super::watches::StatusWrites;
use super::watches::{JobTriggers, Watches};
use super::workload::{History, WorkloadSettings};
pub use super::writer::Writer;
use crate::api::{TrainingJob, VirtualCluster};

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

/// The scheduler's memory: its state between cycles, the learned workload history and the
/// history of run times.
pub struct SchedulerState {
    state: Mutex<SchedState>,
    /// The learned workload history (kept in a ConfigMap across restarts, unlike `state`).
    history: Mutex<History>,
    /// The run times of finished jobs, for predictions (kept in a ConfigMap too).
    durations: Mutex<DurationHistory>,
}

impl SchedulerState {
    /// An empty state, and a history of `history` cycles (0: none learned).
    pub fn new(history: u32) -> Self {
        SchedulerState {
            state: Mutex::new(SchedState::default()),
            history: Mutex::new(History::new(history)),
            durations: Mutex::new(DurationHistory::new(crate::predict::Settings::default())),
        }
    }

    /// Locks the scheduler state; a panic elsewhere must not wedge the operator.
    pub fn state(&self) -> std::sync::MutexGuard<'_, SchedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks the learned workload history.
    pub fn history(&self) -> std::sync::MutexGuard<'_, History> {
        locked(&self.history)
    }

    /// The workload history's lock, for saving it.
    pub fn history_lock(&self) -> &Mutex<History> {
        &self.history
    }

    /// Locks the history of run times.
    pub fn durations(&self) -> std::sync::MutexGuard<'_, DurationHistory> {
        locked(&self.durations)
    }

    /// The run times' lock, for saving them.
    pub fn durations_lock(&self) -> &Mutex<DurationHistory> {
        &self.durations
    }
}

/// What wakes the scheduler loop and the controllers.
pub struct Signals {
    /// Wakes the scheduler loop.
    pub wake: Arc<Notify>,
    /// Reconcile requests for the TrainingJob controller, fed from the shared caches.
    pub job_triggers: Arc<JobTriggers>,
    /// Bumped by a scheduling cycle whose usage numbers differ from the last one's: the
    /// Queue and VirtualCluster controllers rewrite their status at once instead of on
    /// their periodic requeue (what `kubectl get queues` shows follows jobs within a cycle).
    pub usage_changed: Arc<tokio::sync::watch::Sender<u64>>,
}

/// What every controller task shares, as narrow handles: a function that needs only the
/// caches, the writer or the signals takes that handle, so its signature says what it
/// touches; reconcilers and the scheduler loop take the whole (one `Arc` for
/// kube-runtime's `Controller::run`).
pub struct Context {
    pub settings: Settings,
    pub caches: Caches,
    pub scheduler: SchedulerState,
    pub writer: Writer,
    pub signals: Signals,
    pub metrics: Arc<Metrics>,
    /// Consecutive reconcile failures by object, for their retries' backoff.
    pub failures: Arc<Failures>,
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
        let history = if settings.workload.learns() {
            settings.workload.history
        } else {
            0
        };
        Context {
            caches: Caches::new(stores, pod_index, refs_generation),
            scheduler: SchedulerState::new(history),
            writer: Writer::new(client, instance, status_writes),
            signals: Signals {
                wake,
                job_triggers,
                usage_changed: Arc::new(tokio::sync::watch::channel(0).0),
            },
            metrics: Arc::new(Metrics::default()),
            failures,
            settings,
        }
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
        self.scheduler
            .state()
            .inflight
            .contains_key(&JobKey::of(job))
            || self
                .caches
                .job_pods(job)
                .iter()
                .any(|p| !matches!(pod_phase(p), Some("Succeeded" | "Failed")))
    }

    /// Whether the API server holds a VirtualCluster the cache does not show as it is (new,
    /// or its spec changed since): a job naming no queue may be owned through it. As with
    /// [`Writer::exists_on_server`], a team applied in one go (its jobs before its
    /// VirtualCluster, as `kubectl apply -f dir/` orders the files) got a `NoQueue` Warning
    /// for a moment. One LIST of metadata, only on that path; an error counts as "not behind".
    pub async fn virtual_clusters_behind(&self) -> bool {
        let api = Api::<VirtualCluster>::all(self.writer.client.clone());
        let Ok(list) = api.list_metadata(&Default::default()).await else {
            return false;
        };
        list.items.iter().any(|vc| {
            let cached = self.caches.stores.vcs.get(&ObjectRef::new(&vc.name_any()));
            // the spec's generation: status writes (frequent) change no namespace's owner
            cached.is_none_or(|c| c.metadata.generation != vc.metadata.generation)
        })
    }

    /// Records that the API server refused an object of `job` as written: validation reports
    /// it (`Valid=False`, `InvalidTemplate`) and the scheduler no longer offers the job, so it
    /// holds no GPUs and blocks no job of its team, until its spec changes. Its reconcile
    /// writes the condition now, not on its next change.
    pub fn refuse(&self, job: &TrainingJob, object: String, message: String) {
        self.caches.record_refusal(job, object, message);
        self.signals
            .job_triggers
            .request(JobKey::of(job).object_ref());
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
