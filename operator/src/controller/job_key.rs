//! [`JobKey`]: which TrainingJob, by namespace and name. The controller's maps of jobs (the
//! scheduler's in-flight admissions and wait reasons, the status-write guard, the pod index,
//! the snapshot's gangs) are keyed by it; logs and the scheduling core see it as
//! `namespace/name`.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use crate::api::TrainingJob;
use crate::api::annotations::JOB_LABEL;

/// A TrainingJob's namespace and name, ordered by namespace, then name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct JobKey {
    pub namespace: String,
    pub name: String,
}

impl JobKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        JobKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The job's key.
    pub fn of(job: &TrainingJob) -> Self {
        JobKey::new(job.namespace().unwrap_or_default(), job.name_any())
    }

    /// The key of the job a pod belongs to (its `kubetrain.io/job` label), if any.
    pub fn of_pod(pod: &Pod) -> Option<Self> {
        let job = pod.labels().get(JOB_LABEL)?;
        Some(JobKey::new(
            pod.namespace().unwrap_or_default(),
            job.clone(),
        ))
    }

    /// The job's reference in the job cache (and for reconcile requests).
    pub fn object_ref(&self) -> ObjectRef<TrainingJob> {
        ObjectRef::new(&self.name).within(&self.namespace)
    }
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// No `/` in the text: not a job key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not namespace/name")]
pub struct NotAJobKey(pub String);

/// Reads `namespace/name` back (the scheduling core's job ids): a namespace holds no `/`, so
/// the first one splits.
impl FromStr for JobKey {
    type Err = NotAJobKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (namespace, name) = s.split_once('/').ok_or_else(|| NotAJobKey(s.into()))?;
        Ok(JobKey::new(namespace, name))
    }
}

/// Whether `pod` is the job's with UID `uid`: the job is its controller, as the Job
/// controller matches its pods. The job label names the job only by name: a job deleted with
/// `--cascade=orphan` leaves pods under it that a new job of the name must not take for its
/// own (finished, they made it Succeeded with nothing run).
/// The same holds for the job's Service and PodDisruptionBudget.
pub fn owned_by<K: Resource>(obj: &K, uid: &str) -> bool {
    controller_uid(obj) == Some(uid)
}

/// The UID of the object's controller (the API server allows one), if it has one.
pub fn controller_uid<K: Resource>(obj: &K) -> Option<&str> {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_the_jobs_whose_controller_it_is() {
        let pod = |owners: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({"metadata": {
                "name": "j-w-0", "labels": {JOB_LABEL: "j"}, "ownerReferences": owners}}))
            .expect("pod")
        };
        let owner = |uid: &str, controller: bool| {
            serde_json::json!({"apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
                "name": "j", "uid": uid, "controller": controller})
        };
        assert!(owned_by(&pod(serde_json::json!([owner("u1", true)])), "u1"));
        // Left by an earlier job of the name, or orphaned (`--cascade=orphan`).
        assert!(!owned_by(
            &pod(serde_json::json!([owner("u0", true)])),
            "u1"
        ));
        assert!(!owned_by(&pod(serde_json::json!([])), "u1"));
        // An owner that is not the controller does not make the pod the job's.
        assert!(!owned_by(
            &pod(serde_json::json!([owner("u1", false)])),
            "u1"
        ));
    }

    #[test]
    fn shows_and_reads_back_as_namespace_slash_name() {
        let key = JobKey::new("team", "llm");
        assert_eq!(key.to_string(), "team/llm");
        assert_eq!("team/llm".parse::<JobKey>(), Ok(key));
        assert!("no-slash".parse::<JobKey>().is_err());
        // Only the first slash splits (a name holds none either, but reading never panics).
        assert_eq!("a/b/c".parse(), Ok(JobKey::new("a", "b/c")));
    }
}
