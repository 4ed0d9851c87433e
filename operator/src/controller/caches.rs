//! What the controllers read of the cluster: the reflector stores, the pod index by job,
//! and the reference maps validation needs, rebuilt only when the stores changed them. A
//! handle of the [`Context`](super::context::Context), for code that reads and writes
//! nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::ResourceExt;

use super::index::PodIndex;
use super::job_key::JobKey;
use super::validate::{PriorityClassValue, Refs, Refusal};
use super::watches::Stores;
use crate::api::{Queue, TrainingJob, VirtualCluster};

/// The shared caches.
pub struct Caches {
    pub stores: Stores,
    /// The pod cache's index by job.
    pub pod_index: Arc<PodIndex>,
    /// Bumped by the caches whenever what [`RefMaps`] holds may have changed.
    pub refs_generation: Arc<AtomicU64>,
    refs_cache: Mutex<Option<(u64, Arc<RefMaps>)>>,
    /// Jobs whose pods or Service the API server refused as written, kept out of scheduling
    /// until their spec changes. In memory only: after a restart each is tried once more.
    refused: Mutex<BTreeMap<JobKey, Refusal>>,
}

/// Owned copies of the small maps validation needs.
pub struct RefMaps {
    pub queues: BTreeMap<String, Arc<Queue>>,
    pub vcs: BTreeMap<String, Arc<VirtualCluster>>,
    pub namespaces: BTreeMap<String, Namespace>,
    pub flavors: BTreeSet<String>,
    /// The resources some node's allocatable has.
    pub resources: BTreeSet<String>,
    /// Node affinity of the volume bound to each claim (`namespace/claim`), where it has one.
    pub volumes: BTreeMap<String, crate::sched::constraints::Affinity>,
    /// PriorityClasses by name (a job's priority when `spec.priority` is unset).
    pub priority_classes: BTreeMap<String, PriorityClassValue>,
    /// Jobs the API server refused ([`Caches::record_refusal`]).
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

impl Caches {
    /// The caches over the watches' stores.
    pub fn new(stores: Stores, pod_index: Arc<PodIndex>, refs_generation: Arc<AtomicU64>) -> Self {
        Caches {
            stores,
            pod_index,
            refs_generation,
            refs_cache: Mutex::new(None),
            refused: Mutex::new(BTreeMap::new()),
        }
    }

    /// The job's pods in the cache (any phase, being deleted or not), from the index: those
    /// it controls, not others of its name.
    pub fn job_pods(&self, job: &TrainingJob) -> Vec<Arc<Pod>> {
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        self.pod_index
            .pods_of(&self.stores.pods, &JobKey::of(job), uid)
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

    /// Records that the API server refused an object of `job` as written, and moves the
    /// reference maps' generation so that validation sees it.
    pub fn record_refusal(&self, job: &TrainingJob, object: String, message: String) {
        {
            let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
            // Deleted jobs' refusals go with the next one (a refusal is rare).
            refused.retain(|k, _| self.stores.jobs.get(&k.object_ref()).is_some());
            refused.insert(
                JobKey::of(job),
                Refusal {
                    uid: job.metadata.uid.clone().unwrap_or_default(),
                    generation: job.metadata.generation.unwrap_or_default(),
                    object,
                    message,
                },
            );
        }
        self.refs_generation.fetch_add(1, Ordering::SeqCst);
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
}
