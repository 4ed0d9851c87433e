//! Secondary indexes over the reflector caches, kept current by the caches' own tasks.
//!
//! A reconcile that needs one job's pods looks them up here instead of scanning every pod
//! in the cache; the index holds names only, the objects stay in the cache.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use super::job_key::{JobKey, owned_by};

#[derive(Default)]
struct Index {
    /// Pod names by job.
    by_job: HashMap<JobKey, BTreeSet<String>>,
    /// The job of each pod (by `namespace/pod`), to follow a label change or a deletion.
    job_of: HashMap<String, JobKey>,
}

impl Index {
    fn insert(&mut self, pod: &Pod) {
        let ns = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        let pod_key = format!("{ns}/{name}");
        let job = JobKey::of_pod(pod);
        if let Some(old) = self.job_of.get(&pod_key)
            && Some(old) != job.as_ref()
        {
            let old = old.clone();
            self.remove_from(&old, &name);
            self.job_of.remove(&pod_key);
        }
        if let Some(job) = job {
            self.by_job.entry(job.clone()).or_default().insert(name);
            self.job_of.insert(pod_key, job);
        }
    }

    fn remove(&mut self, pod: &Pod) {
        let ns = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        if let Some(job) = self.job_of.remove(&format!("{ns}/{name}")) {
            self.remove_from(&job, &name);
        }
    }

    fn remove_from(&mut self, job: &JobKey, name: &str) {
        if let Some(names) = self.by_job.get_mut(job) {
            names.remove(name);
            if names.is_empty() {
                self.by_job.remove(job);
            }
        }
    }
}

/// Pods of kubetrain jobs by job, fed with the pod cache's watch events.
#[derive(Default)]
pub struct PodIndex {
    live: RwLock<Index>,
    /// A relist in progress: replaces `live` when it completes, as the cache does.
    relist: std::sync::Mutex<Option<Index>>,
}

impl PodIndex {
    /// Follows one watch event (after the cache applied it).
    pub fn apply(&self, event: &watcher::Event<Pod>) {
        match event {
            watcher::Event::Apply(p) => self.write().insert(p),
            watcher::Event::Delete(p) => self.write().remove(p),
            watcher::Event::Init => *self.relist() = Some(Index::default()),
            watcher::Event::InitApply(p) => {
                if let Some(i) = self.relist().as_mut() {
                    i.insert(p);
                }
            }
            watcher::Event::InitDone => {
                if let Some(i) = self.relist().take() {
                    *self.write() = i;
                }
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.live.write().unwrap_or_else(|e| e.into_inner())
    }

    fn relist(&self) -> std::sync::MutexGuard<'_, Option<Index>> {
        self.relist.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pods of the job with UID `uid` that the cache holds, by name: those labelled
    /// with its name that it controls ([`owned_by`]).
    pub fn pods_of(&self, pods: &Store<Pod>, job: &JobKey, uid: &str) -> Vec<Arc<Pod>> {
        let names: Vec<String> = {
            let live = self.live.read().unwrap_or_else(|e| e.into_inner());
            match live.by_job.get(job) {
                Some(n) => n.iter().cloned().collect(),
                None => return Vec::new(),
            }
        };
        names
            .into_iter()
            .filter_map(|n| pods.get(&ObjectRef::new(&n).within(&job.namespace)))
            // The cache is the truth; the index may trail it by one event.
            .filter(|p| JobKey::of_pod(p).as_ref() == Some(job) && owned_by(p.as_ref(), uid))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::annotations::JOB_LABEL;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::runtime::reflector;

    /// A pod of `job` (its label), controlled by the job of UID `uid`, if any.
    fn owned(ns: &str, name: &str, job: Option<&str>, uid: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = Some(ns.into());
        p.metadata.name = Some(name.into());
        if let Some(j) = job {
            p.metadata.labels = Some([(JOB_LABEL.to_string(), j.to_string())].into());
        }
        if let (Some(j), Some(uid)) = (job, uid) {
            p.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "kubetrain.io/v1alpha1".into(),
                kind: "TrainingJob".into(),
                name: j.into(),
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]);
        }
        p
    }

    /// A pod of `job`, controlled by it (UID `<ns>/<job>` here).
    fn pod(ns: &str, name: &str, job: Option<&str>) -> Pod {
        let uid = job.map(|j| format!("{ns}/{j}"));
        owned(ns, name, job, uid.as_deref())
    }

    #[test]
    fn follows_the_cache() {
        let (reader, mut writer) = reflector::store::<Pod>();
        let index = PodIndex::default();
        let mut feed = |ev: watcher::Event<Pod>| {
            writer.apply_watcher_event(&ev);
            index.apply(&ev);
        };
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(pod("a", "j-0", Some("j"))));
        feed(watcher::Event::InitApply(pod("b", "j-0", Some("j"))));
        feed(watcher::Event::InitApply(pod("a", "other", None)));
        feed(watcher::Event::InitDone);
        feed(watcher::Event::Apply(pod("a", "j-1", Some("j"))));
        let names = |ns: &str, job: &str| -> Vec<String> {
            index
                .pods_of(&reader, &JobKey::new(ns, job), &format!("{ns}/{job}"))
                .iter()
                .map(|p| p.name_any())
                .collect()
        };
        assert_eq!(names("a", "j"), ["j-0", "j-1"]);
        assert_eq!(names("b", "j"), ["j-0"]);
        // Relabelled to another job, then deleted.
        feed(watcher::Event::Apply(pod("a", "j-1", Some("k"))));
        assert_eq!(names("a", "j"), ["j-0"]);
        assert_eq!(names("a", "k"), ["j-1"]);
        feed(watcher::Event::Delete(pod("a", "j-1", Some("k"))));
        assert!(names("a", "k").is_empty());
        // A relist replaces everything once it completes.
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(pod("c", "x-0", Some("x"))));
        assert_eq!(names("a", "j"), ["j-0"]);
        feed(watcher::Event::InitDone);
        assert!(names("a", "j").is_empty());
        assert_eq!(names("c", "x"), ["x-0"]);
    }

    /// A pod labelled with the job's name that the job does not control (left by a deleted
    /// job of the same name, orphaned) is not the job's.
    #[test]
    fn only_the_pods_the_job_controls_are_its() {
        let (reader, mut writer) = reflector::store::<Pod>();
        let index = PodIndex::default();
        for p in [
            owned("a", "j-w-0", Some("j"), Some("new")),
            owned("a", "j-w-1", Some("j"), Some("old")),
            owned("a", "j-w-2", Some("j"), None),
        ] {
            let ev = watcher::Event::Apply(p);
            writer.apply_watcher_event(&ev);
            index.apply(&ev);
        }
        let names = |uid: &str| -> Vec<String> {
            index
                .pods_of(&reader, &JobKey::new("a", "j"), uid)
                .iter()
                .map(|p| p.name_any())
                .collect()
        };
        assert_eq!(names("new"), ["j-w-0"]);
        assert_eq!(names("old"), ["j-w-1"]);
    }
}
