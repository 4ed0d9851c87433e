//! What the schema cannot check: references to other objects and the pod templates.
//! A job that fails here gets `Valid=False` with the reason, waits, and recovers when a
//! later apply (or a new Queue, VirtualCluster or node) fixes it. What a job refers to (its
//! queue, VirtualCluster, namespace and priority) is read in `references`, its pod templates
//! in `templates`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

use super::job_key::JobKey;
use crate::api::{Queue, TrainingJob, VirtualCluster};
use crate::sched;

mod references;
mod templates;

pub use references::{
    default_queue_problem, effective_priority, effective_queue, owns_namespace,
    queue_parent_problem, shared_namespaces,
};
pub use templates::tasks;

/// Why a job cannot be scheduled as written. `reason()` is the condition reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("queue {0} does not exist")]
    UnknownQueue(String),
    #[error("queue {queue} belongs to VirtualCluster {vc}, which does not exist")]
    UnknownVirtualCluster { queue: String, vc: String },
    #[error(
        "queue {queue} belongs to VirtualCluster {vc}, which does not own namespace {namespace}"
    )]
    ForeignQueue {
        queue: String,
        vc: String,
        namespace: String,
    },
    #[error(
        "queue {queue} cannot admit jobs: {problem}; the platform team that manages queues \
         must fix its spec.parent (or point spec.queue at another queue)"
    )]
    InvalidQueueParent { queue: String, problem: String },
    #[error("task {0} appears more than once")]
    DuplicateTask(String),
    #[error("pod name {0} is longer than 63 characters; shorten the job or task name")]
    NameTooLong(String),
    #[error("task {task}: the pod template is invalid: {error}")]
    BadTemplate { task: String, error: String },
    #[error("task {0} sets gpuShare and also requests nvidia.com/gpu; use one or the other")]
    ShareAndWholeGpus(String),
    #[error(
        "task {task}: nvidia.com/gpu {value} is not a whole number of GPUs; for a fraction of \
         one GPU leave it out and set the task's gpuShare (thousandths of a GPU)"
    )]
    FractionalGpu { task: String, value: String },
    #[error("no node has any of the GPU types {0}; known types: {1}")]
    UnknownGpuType(String, String),
    #[error(
        "task {task} requests {resource}, which no node offers{hint}; the nodes offer {offered}"
    )]
    UnknownResource {
        task: String,
        resource: String,
        hint: String,
        offered: String,
    },
    #[error("spec.queue is unset and namespace {namespace} has no default queue: {detail}")]
    NoQueue { namespace: String, detail: String },
    #[error(
        "spec.queue is unset and the defaultQueue {queue} of VirtualCluster {vc} cannot be \
         used: {problem}"
    )]
    DefaultQueueInvalid {
        vc: String,
        queue: String,
        problem: String,
    },
    #[error(
        "task {task}: PriorityClass {class} (spec.priorityClassName of its template) does not \
         exist; the API server would reject the pods"
    )]
    UnknownPriorityClass { task: String, class: String },
    #[error(
        "spec.podFailurePolicy.rules[{rule}].onExitCodes.containerName: no task has a container \
         or init container named {name}"
    )]
    UnknownPolicyContainer { rule: usize, name: String },
    /// What only the API server's own validation catches (a volumeMount naming no volume):
    /// it refused to create the object, and would refuse it again.
    #[error("the API server refused {object}: {message}")]
    Refused { object: String, message: String },
}

impl Invalid {
    /// CamelCase reason for the `Valid` condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Invalid::UnknownQueue(_) => "UnknownQueue",
            Invalid::UnknownVirtualCluster { .. } => "UnknownVirtualCluster",
            Invalid::ForeignQueue { .. } => "QueueOfAnotherTenant",
            Invalid::InvalidQueueParent { .. } => "InvalidQueueParent",
            Invalid::DuplicateTask(_) => "DuplicateTask",
            Invalid::NameTooLong(_) => "NameTooLong",
            Invalid::BadTemplate { .. } => "InvalidTemplate",
            Invalid::ShareAndWholeGpus(_) => "InvalidGpuRequest",
            Invalid::FractionalGpu { .. } => "FractionalGpuRequest",
            Invalid::UnknownGpuType(..) => "UnknownGpuType",
            Invalid::UnknownResource { .. } => "UnknownResource",
            Invalid::NoQueue { .. } => "NoQueue",
            Invalid::DefaultQueueInvalid { .. } => "DefaultQueueInvalid",
            Invalid::UnknownPriorityClass { .. } => "UnknownPriorityClass",
            Invalid::UnknownPolicyContainer { .. } => "InvalidPodFailurePolicy",
            Invalid::Refused { .. } => "InvalidTemplate",
        }
    }
}

/// What the objects a job refers to look like right now.
pub struct Refs<'a> {
    pub queues: &'a BTreeMap<String, std::sync::Arc<Queue>>,
    pub vcs: &'a BTreeMap<String, std::sync::Arc<VirtualCluster>>,
    pub namespaces: &'a BTreeMap<String, Namespace>,
    /// GPU types some node has.
    pub flavors: &'a BTreeSet<String>,
    /// The resources some node's allocatable has (empty before the first node is seen).
    pub resources: &'a BTreeSet<String>,
    /// Node affinity of the volume bound to each claim (`namespace/claim`).
    pub volumes: &'a BTreeMap<String, sched::constraints::Affinity>,
    /// The cluster's PriorityClasses, by name.
    pub priority_classes: &'a BTreeMap<String, PriorityClassValue>,
    /// The jobs whose objects the API server refused to create.
    pub refused: &'a BTreeMap<JobKey, Refusal>,
}

/// The API server refused to create an object of the job (its pod, its Service) as written:
/// 422 Invalid or 400 BadRequest. It holds for the version of the spec it was refused for;
/// an update of the spec (a new `metadata.generation`) is tried again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The job's UID: a job re-created under the same name is a new job.
    pub uid: String,
    pub generation: i64,
    /// What was refused: `pod <name>`, `Service <name>`.
    pub object: String,
    /// The API server's own message.
    pub message: String,
}

impl Refusal {
    /// Whether the refusal is of this very job and version of its spec.
    pub fn holds_for(&self, job: &TrainingJob) -> bool {
        job.metadata.uid.as_deref() == Some(self.uid.as_str())
            && job.metadata.generation == Some(self.generation)
    }
}

/// What a job's priority needs of a PriorityClass (scheduling.k8s.io/v1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityClassValue {
    pub value: i32,
    pub global_default: bool,
}

/// A valid job in the scheduling core's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// From [`effective_queue`].
    pub queue: String,
    /// From [`effective_priority`].
    pub priority: i32,
    pub tasks: Vec<sched::Task>,
}

/// The API server's refusal of the job as it stands, if any, as (object, message): the one
/// this process saw, else the one the job's status records for its current generation. A
/// refusal outlives an operator restart: tried again, the job's pods would be created and
/// undone once more, with the same Warning.
fn refusal(job: &TrainingJob, refused: &BTreeMap<JobKey, Refusal>) -> Option<(String, String)> {
    if !refused.is_empty()
        && let Some(r) = refused.get(&JobKey::of(job)).filter(|r| r.holds_for(job))
    {
        return Some((r.object.clone(), r.message.clone()));
    }
    let status = job.status.as_ref()?;
    let valid = crate::controller::conditions::get(
        &status.conditions,
        crate::api::reasons::ConditionType::Valid,
    )?;
    let recorded = valid.status == "False"
        && valid.reason == "InvalidTemplate"
        && valid.observed_generation.is_some()
        && valid.observed_generation == job.metadata.generation;
    if !recorded {
        return None;
    }
    // Written by `Invalid::Refused`'s Display; the operator's own template checks
    // (`BadTemplate`) share the reason but not the words.
    let (object, message) = valid
        .message
        .strip_prefix(REFUSED_PREFIX)?
        .split_once(": ")?;
    Some((object.to_string(), message.to_string()))
}

/// How `Invalid::Refused` begins.
const REFUSED_PREFIX: &str = "the API server refused ";

/// Checks a job and returns its queue, priority and tasks in the scheduling core's terms.
pub fn validate(job: &TrainingJob, refs: &Refs<'_>) -> Result<Validated, Invalid> {
    let ns = job.namespace().unwrap_or_default();
    let queue_name = effective_queue(job, refs)?;
    let queue = refs
        .queues
        .get(&queue_name)
        .ok_or_else(|| Invalid::UnknownQueue(queue_name.clone()))?;
    let vc_name = &queue.spec.virtual_cluster;
    let vc = refs
        .vcs
        .get(vc_name)
        .ok_or_else(|| Invalid::UnknownVirtualCluster {
            queue: queue_name.clone(),
            vc: vc_name.clone(),
        })?;
    if let Some(problem) = queue_parent_problem(queue, refs.queues) {
        return Err(Invalid::InvalidQueueParent {
            queue: queue_name,
            problem,
        });
    }
    if !owns_namespace(vc, &ns, refs.namespaces) {
        return Err(Invalid::ForeignQueue {
            queue: queue_name.clone(),
            vc: vc_name.clone(),
            namespace: ns,
        });
    }
    let priority = effective_priority(job, refs)?;
    let tasks = tasks(job, refs)?;
    // Last: the operator's own checks name a problem more precisely than the API server's
    // refusal of what they let through.
    if let Some((object, message)) = refusal(job, refs.refused) {
        return Err(Invalid::Refused { object, message });
    }
    Ok(Validated {
        queue: queue_name,
        priority,
        tasks,
    })
}

/// Jobs, queues and VirtualClusters for tests of what resolves against them.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    pub fn queue(name: &str, vc: &str) -> (String, Arc<Queue>) {
        let q = serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name}, "spec": {"virtualCluster": vc}}))
        .expect("queue");
        (name.to_string(), Arc::new(q))
    }

    pub fn vc(
        name: &str,
        namespaces: &[&str],
        default_queue: Option<&str>,
    ) -> (String, Arc<VirtualCluster>) {
        let mut spec = json!({"namespaces": namespaces});
        if let Some(d) = default_queue {
            spec["defaultQueue"] = json!(d);
        }
        let v = serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "VirtualCluster",
            "metadata": {"name": name}, "spec": spec}))
        .expect("vc");
        (name.to_string(), Arc::new(v))
    }

    /// A job in namespace `ns` with one task per entry of `classes` (its template's
    /// priorityClassName, if any).
    pub fn job(
        ns: &str,
        queue: Option<&str>,
        priority: Option<i32>,
        classes: &[Option<&str>],
    ) -> TrainingJob {
        let tasks: Vec<serde_json::Value> = classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut spec = json!({"containers": [{"name": "c"}]});
                if let Some(c) = c {
                    spec["priorityClassName"] = json!(c);
                }
                json!({"name": format!("t{i}"), "template": {"spec": spec}})
            })
            .collect();
        let mut spec = json!({"tasks": tasks});
        if let Some(q) = queue {
            spec["queue"] = json!(q);
        }
        if let Some(p) = priority {
            spec["priority"] = json!(p);
        }
        serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": "j", "namespace": ns}, "spec": spec}))
        .expect("job")
    }

    pub struct World {
        pub queues: BTreeMap<String, Arc<Queue>>,
        pub vcs: BTreeMap<String, Arc<VirtualCluster>>,
        pub namespaces: BTreeMap<String, Namespace>,
        pub flavors: BTreeSet<String>,
        pub resources: BTreeSet<String>,
        pub volumes: BTreeMap<String, sched::constraints::Affinity>,
        pub classes: BTreeMap<String, PriorityClassValue>,
        pub refused: BTreeMap<JobKey, Refusal>,
    }

    impl World {
        pub fn new() -> World {
            World {
                queues: [queue("vision", "a"), queue("nlp", "b")].into(),
                vcs: [
                    vc("a", &["team-a"], Some("vision")),
                    vc("b", &["team-b"], None),
                    vc("c", &["team-c"], Some("nlp")),
                    vc("d", &["team-d"], Some("missing")),
                ]
                .into(),
                namespaces: BTreeMap::new(),
                flavors: BTreeSet::new(),
                resources: BTreeSet::new(),
                volumes: BTreeMap::new(),
                classes: BTreeMap::new(),
                refused: BTreeMap::new(),
            }
        }
        pub fn class(mut self, name: &str, value: i32, global_default: bool) -> World {
            self.classes.insert(
                name.into(),
                PriorityClassValue {
                    value,
                    global_default,
                },
            );
            self
        }
        pub fn refs(&self) -> Refs<'_> {
            Refs {
                queues: &self.queues,
                vcs: &self.vcs,
                namespaces: &self.namespaces,
                flavors: &self.flavors,
                resources: &self.resources,
                volumes: &self.volumes,
                priority_classes: &self.classes,
                refused: &self.refused,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    /// A template the API server refused holds the job back as it was written: the same job
    /// at a new generation (its spec changed) or re-created (a new UID) is tried again.
    #[test]
    fn a_refused_template_is_invalid_until_the_spec_changes() {
        let mut w = World::new();
        let mut j = job("team-a", None, None, &[None]);
        j.metadata.uid = Some("u1".into());
        j.metadata.generation = Some(3);
        w.refused.insert(
            JobKey::of(&j),
            Refusal {
                uid: "u1".into(),
                generation: 3,
                object: "pod j-t0-0".into(),
                message: "Pod \"j-t0-0\" is invalid: spec.containers[0].volumeMounts[0].name: \
                          Not found: \"data\""
                    .into(),
            },
        );
        let e = validate(&j, &w.refs()).unwrap_err();
        assert_eq!(e.reason(), "InvalidTemplate");
        assert!(
            e.to_string()
                .starts_with("the API server refused pod j-t0-0: Pod \"j-t0-0\" is invalid")
                && e.to_string().contains("volumeMounts[0].name"),
            "{e}"
        );
        // After a restart the refusal is read back from the job's status.
        let mut restarted = j.clone();
        let mut status = crate::api::TrainingJobStatus::default();
        crate::controller::conditions::set(
            &mut status.conditions,
            crate::api::reasons::ConditionType::Valid,
            false,
            e.reason(),
            e.to_string(),
            Some(3),
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        );
        restarted.status = Some(status);
        let again = validate(&restarted, &World::new().refs()).unwrap_err();
        assert_eq!(again, e, "read back from the status");
        restarted.metadata.generation = Some(4);
        assert!(
            validate(&restarted, &World::new().refs()).is_ok(),
            "the spec changed since"
        );
        j.metadata.generation = Some(4);
        assert!(validate(&j, &w.refs()).is_ok(), "the spec changed");
        j.metadata.generation = Some(3);
        j.metadata.uid = Some("u2".into());
        assert!(
            validate(&j, &w.refs()).is_ok(),
            "another job of the same name"
        );
    }
}
