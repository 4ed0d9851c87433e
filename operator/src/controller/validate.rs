//! What the schema cannot check: references to other objects and the pod templates.
//! A job that fails here gets `Valid=False` with the reason, waits, and recovers when a
//! later apply (or a new Queue, VirtualCluster or node) fixes it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

use super::job_key::JobKey;
use super::resources::{GPU_RESOURCE, parse_milli, pod_demand};
use crate::api::{Queue, TrainingJob, VirtualCluster};
use crate::sched;

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

/// Whether `vc` owns `namespace` (by name or by label selector).
pub fn owns_namespace(
    vc: &VirtualCluster,
    namespace: &str,
    namespaces: &BTreeMap<String, Namespace>,
) -> bool {
    if vc.spec.namespaces.iter().any(|n| n == namespace) {
        return true;
    }
    let Some(selector) = &vc.spec.namespace_selector else {
        return false;
    };
    let labels = namespaces
        .get(namespace)
        .map(|n| n.labels().clone())
        .unwrap_or_default();
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_match = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.clone().unwrap_or_default();
        match e.operator.as_str() {
            "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&e.key),
            "DoesNotExist" => !labels.contains_key(&e.key),
            _ => false,
        }
    });
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|m| m.is_empty());
    !empty && labels_match && exprs_match
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

/// Why a VirtualCluster's `spec.defaultQueue` cannot be used (the queue does not exist, or
/// belongs to another VirtualCluster), or None when it can or is unset. A CEL rule cannot
/// see other objects, so the operator checks it: the VirtualCluster's `Ready` condition and
/// the `Valid` condition of jobs that rely on it.
pub fn default_queue_problem(
    vc: &VirtualCluster,
    queues: &BTreeMap<String, std::sync::Arc<Queue>>,
) -> Option<String> {
    let name = vc.spec.default_queue.as_ref()?;
    match queues.get(name) {
        None => Some(format!("queue {name} does not exist")),
        Some(q) if q.spec.virtual_cluster != vc.name_any() => Some(format!(
            "queue {name} belongs to VirtualCluster {}, not {}",
            q.spec.virtual_cluster,
            vc.name_any()
        )),
        Some(_) => None,
    }
}

/// The namespaces `vc` owns that other VirtualClusters own too, each with those others'
/// names. A namespace should belong to one tenant: its jobs may use the queues of every
/// owner, and those naming no queue take the `defaultQueue` of the first owner by name that
/// sets one. The VirtualCluster's `Ready` condition says so. Namespaces named in
/// `spec.namespaces` count whether they exist yet or not; a selector counts the namespaces
/// that exist.
pub fn shared_namespaces(
    vc: &VirtualCluster,
    vcs: &BTreeMap<String, std::sync::Arc<VirtualCluster>>,
    namespaces: &BTreeMap<String, Namespace>,
) -> Vec<(String, Vec<String>)> {
    let name = vc.name_any();
    let candidates: BTreeSet<&str> = vc
        .spec
        .namespaces
        .iter()
        .map(String::as_str)
        .chain(namespaces.keys().map(String::as_str))
        .collect();
    candidates
        .into_iter()
        .filter(|ns| owns_namespace(vc, ns, namespaces))
        .filter_map(|ns| {
            let others: Vec<String> = vcs
                .values()
                .filter(|o| o.name_any() != name && owns_namespace(o, ns, namespaces))
                .map(|o| o.name_any())
                .collect();
            (!others.is_empty()).then(|| (ns.to_string(), others))
        })
        .collect()
}

/// Why `queue`'s chain of parents is unusable, if it is: a parent that does not exist, one
/// of another VirtualCluster, or a cycle. The scheduling core then admits none of its jobs
/// (`Tenants::build` skips the queue); the Queue's `Ready` condition and its jobs' `Valid`
/// say why, where the fix is the Queue's, not the job's.
pub fn queue_parent_problem(
    queue: &Queue,
    queues: &BTreeMap<String, std::sync::Arc<Queue>>,
) -> Option<String> {
    let mut chain = vec![queue.name_any()];
    let mut cur = queue;
    while let Some(parent) = &cur.spec.parent {
        if chain.contains(parent) {
            chain.push(parent.clone());
            return Some(format!("its parents form a cycle ({})", chain.join(" → ")));
        }
        let Some(p) = queues.get(parent) else {
            return Some(format!("parent queue {parent} does not exist"));
        };
        if p.spec.virtual_cluster != queue.spec.virtual_cluster {
            return Some(format!(
                "parent queue {parent} belongs to VirtualCluster {}, not {}",
                p.spec.virtual_cluster, queue.spec.virtual_cluster
            ));
        }
        chain.push(parent.clone());
        cur = p;
    }
    None
}

/// The queue a job is in: `spec.queue` when set, else the `defaultQueue` of the
/// VirtualCluster that owns the job's namespace (the first by name that sets one, when
/// several own it). The one place that answers "which queue": validation, the snapshot,
/// usage numbers, the Queue finalizer and `status.queue` all ask it.
pub fn effective_queue(job: &TrainingJob, refs: &Refs<'_>) -> Result<String, Invalid> {
    if let Some(q) = &job.spec.queue {
        return Ok(q.clone());
    }
    let ns = job.namespace().unwrap_or_default();
    let owners: Vec<&std::sync::Arc<VirtualCluster>> = refs
        .vcs
        .values()
        .filter(|vc| owns_namespace(vc, &ns, refs.namespaces))
        .collect();
    let Some(vc) = owners.iter().find(|vc| vc.spec.default_queue.is_some()) else {
        let detail = if owners.is_empty() {
            // spec.queue cannot help: a queue runs only the jobs of its VirtualCluster's
            // namespaces.
            "no VirtualCluster owns it, so no queue takes its jobs; an admin adds the \
             namespace to a VirtualCluster (spec.namespaces or spec.namespaceSelector)"
                .to_string()
        } else {
            let names: Vec<String> = owners.iter().map(|v| v.name_any()).collect();
            format!(
                "VirtualCluster {} sets no spec.defaultQueue; set spec.queue or a defaultQueue",
                names.join(", ")
            )
        };
        return Err(Invalid::NoQueue {
            namespace: ns,
            detail,
        });
    };
    let queue = vc.spec.default_queue.clone().unwrap_or_default();
    match default_queue_problem(vc, refs.queues) {
        Some(problem) => Err(Invalid::DefaultQueueInvalid {
            vc: vc.name_any(),
            queue,
            problem,
        }),
        None => Ok(queue),
    }
}

/// The `spec.priorityClassName` of a task's template, if it names one. Read from the raw
/// template: the snapshot asks every cycle, and this needs no decoding of the whole pod.
fn priority_class_name(task: &crate::api::trainingjob::TaskSpec) -> Option<&str> {
    task.template
        .pointer("/spec/priorityClassName")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
}

/// A job's priority: `spec.priority` when set; else the value of the PriorityClass its
/// task templates name (the highest if tasks differ); else the value of the cluster's
/// `globalDefault` PriorityClass (the lowest, if a race made several, as the API server's
/// Priority admission picks); else 0. A template naming a PriorityClass that does not exist
/// is invalid whether or not `spec.priority` is set: its pods would be rejected.
pub fn effective_priority(job: &TrainingJob, refs: &Refs<'_>) -> Result<i32, Invalid> {
    let mut named: Option<i32> = None;
    for t in &job.spec.tasks {
        let Some(class) = priority_class_name(t) else {
            continue;
        };
        let pc = refs
            .priority_classes
            .get(class)
            .ok_or_else(|| Invalid::UnknownPriorityClass {
                task: t.name.clone(),
                class: class.to_string(),
            })?;
        named = Some(named.map_or(pc.value, |v| v.max(pc.value)));
    }
    if let Some(p) = job.spec.priority {
        return Ok(p);
    }
    if let Some(p) = named {
        return Ok(p);
    }
    Ok(refs
        .priority_classes
        .values()
        .filter(|pc| pc.global_default)
        .map(|pc| pc.value)
        .min()
        .unwrap_or(0))
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

/// The first `nvidia.com/gpu` request or limit of the pod that is not a whole number.
fn fractional_gpu(spec: &k8s_openapi::api::core::v1::PodSpec) -> Option<String> {
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .flat_map(|r| r.limits.iter().chain(r.requests.iter()))
        .filter_map(|m| m.get(GPU_RESOURCE))
        .find(|q| parse_milli(&q.0).is_ok_and(|m| m % 1000 != 0))
        .map(|q| q.0.clone())
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
    let valid = super::conditions::get(
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

/// A resource a container requests that no node offers (a typo such as `nvidia.com/gpus`):
/// kube-scheduler would refuse every node for it, one after the other, and the job would be
/// told its node selector is at fault. None before any node is seen, and never for the
/// resources every node has or kubetrain places itself (`nvidia.com/gpu`, which nodes of
/// the `kubetrain` GPU binding do not advertise).
fn unoffered_resource(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    offered: &BTreeSet<String>,
) -> Option<String> {
    if offered.is_empty() {
        return None;
    }
    let standard = |r: &str| {
        matches!(r, "cpu" | "memory" | "ephemeral-storage" | GPU_RESOURCE)
            || r.starts_with("hugepages-")
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .flat_map(|r| r.limits.iter().chain(r.requests.iter()).flatten())
        .map(|(name, _)| name)
        .find(|name| !standard(name) && !offered.contains(*name))
        .cloned()
}

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

/// The job's tasks as the scheduler sees them, from its templates: the part of
/// [`validate`] that does not depend on where the job is queued.
pub fn tasks(job: &TrainingJob, refs: &Refs<'_>) -> Result<Vec<sched::Task>, Invalid> {
    let ns = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let mut seen = BTreeSet::new();
    let mut tasks = Vec::new();
    // The containers' names, only for a job whose failure policy may name one.
    let mut containers = BTreeSet::new();
    let names_containers = job.spec.pod_failure_policy.is_some();
    for t in &job.spec.tasks {
        if !seen.insert(t.name.as_str()) {
            return Err(Invalid::DuplicateTask(t.name.clone()));
        }
        let longest = super::pods::pod_name(&name, &t.name, (t.replicas().max(1) - 1) as u32);
        if longest.len() > 63 {
            return Err(Invalid::NameTooLong(longest));
        }
        let bad = |error: String| Invalid::BadTemplate {
            task: t.name.clone(),
            error,
        };
        let template = t.pod_template().map_err(|e| bad(e.to_string()))?;
        let spec = template.spec.ok_or_else(|| bad("spec is missing".into()))?;
        if spec.containers.is_empty() {
            return Err(bad("spec.containers is empty".into()));
        }
        if let Some(resource) = unoffered_resource(&spec, refs.resources) {
            let offered: Vec<&str> = refs
                .resources
                .iter()
                .map(String::as_str)
                .filter(|r| !r.starts_with("hugepages-"))
                .collect();
            return Err(Invalid::UnknownResource {
                task: t.name.clone(),
                hint: if resource.to_ascii_lowercase().contains("gpu") {
                    format!(" (GPUs are {GPU_RESOURCE})")
                } else {
                    String::new()
                },
                resource,
                offered: offered.join(", "),
            });
        }
        if names_containers {
            containers.extend(
                spec.containers
                    .iter()
                    .chain(spec.init_containers.iter().flatten())
                    .map(|c| c.name.clone()),
            );
        }
        // The API server rejects these at apply (a CEL rule); a job stored before that rule
        // existed is caught here rather than silently floored to fewer GPUs.
        if let Some(value) = fractional_gpu(&spec) {
            return Err(Invalid::FractionalGpu {
                task: t.name.clone(),
                value,
            });
        }
        let demand = pod_demand(&spec).map_err(|e| bad(e.to_string()))?;
        let gpus = match t.gpu_share {
            Some(_) if demand.gpus > 0 => return Err(Invalid::ShareAndWholeGpus(t.name.clone())),
            Some(share) => sched::GpuDemand::Share(sched::MilliGpu(share.clamp(1, 999) as u32)),
            None if demand.gpus > 0 => {
                sched::GpuDemand::Whole(u32::try_from(demand.gpus).unwrap_or(u32::MAX))
            }
            None => sched::GpuDemand::None,
        };
        tasks.push(sched::Task {
            name: t.name.clone(),
            replicas: t.replicas().max(1) as u32,
            cpu_milli: demand.cpu_milli,
            memory_bytes: demand.memory_bytes,
            gpus,
            constraints: {
                let mut c = super::placement_rules::pod_constraints(&spec).map_err(bad)?;
                for v in spec.volumes.iter().flatten() {
                    let Some(claim) = &v.persistent_volume_claim else {
                        continue;
                    };
                    if let Some(a) = refs.volumes.get(&format!("{ns}/{}", claim.claim_name)) {
                        c.affinities.push(a.clone());
                    }
                }
                c
            },
        });
    }
    // As the Job API checks at creation; a CEL rule would have to walk every template, on
    // every write of the job.
    let rules = job.spec.pod_failure_policy.iter().flat_map(|p| &p.rules);
    for (rule, r) in rules.enumerate() {
        if let Some(name) = r
            .on_exit_codes
            .as_ref()
            .and_then(|c| c.container_name.as_ref())
            && !containers.contains(name)
        {
            return Err(Invalid::UnknownPolicyContainer {
                rule,
                name: name.clone(),
            });
        }
    }
    let wants_gpus = tasks.iter().any(|t| t.gpus != sched::GpuDemand::None);
    if wants_gpus && !job.spec.gpu_types.is_empty() && !refs.flavors.is_empty() {
        // Only when none of the listed types exists: the job could never run.
        if !job.spec.gpu_types.iter().any(|t| refs.flavors.contains(t)) {
            let known = refs.flavors.iter().cloned().collect::<Vec<_>>().join(", ");
            return Err(Invalid::UnknownGpuType(
                job.spec.gpu_types.join(", "),
                known,
            ));
        }
    }
    Ok(tasks)
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

    #[test]
    fn a_job_without_a_queue_runs_in_its_virtual_clusters_default_queue() {
        let w = World::new();
        let refs = w.refs();
        // spec.queue wins, even over a default.
        assert_eq!(
            effective_queue(&job("team-a", Some("x"), None, &[None]), &refs),
            Ok("x".into())
        );
        assert_eq!(
            effective_queue(&job("team-a", None, None, &[None]), &refs),
            Ok("vision".into())
        );
        let v = validate(&job("team-a", None, None, &[None]), &refs).expect("valid");
        assert_eq!(v.queue, "vision");
    }

    #[test]
    fn no_queue_and_no_default_is_invalid_naming_the_namespace() {
        let w = World::new();
        let refs = w.refs();
        let e = effective_queue(&job("team-b", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "NoQueue");
        assert!(e.to_string().contains("namespace team-b"), "{e}");
        assert!(e.to_string().contains("VirtualCluster b"), "{e}");
        let e = validate(&job("nobody", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "NoQueue");
        assert!(e.to_string().contains("no VirtualCluster owns it"), "{e}");
    }

    /// A misspelt GPU resource is accepted by the schema (any extended resource is) but no
    /// node offers it: the job is told so, with the right name, instead of every node being
    /// refused in turn.
    #[test]
    fn a_resource_no_node_offers_is_named() {
        let mut w = World::new();
        let mut j = job("team-a", None, None, &[None]);
        j.spec.tasks[0].template["spec"]["containers"][0]["resources"] =
            serde_json::json!({"limits": {"nvidia.com/gpus": 4}});
        assert!(validate(&j, &w.refs()).is_ok(), "no node seen yet");
        w.resources = ["cpu", "memory", "pods", "hugepages-2Mi", "rdma/hca"]
            .map(String::from)
            .into();
        let e = validate(&j, &w.refs()).unwrap_err();
        assert_eq!(e.reason(), "UnknownResource");
        assert_eq!(
            e.to_string(),
            "task t0 requests nvidia.com/gpus, which no node offers (GPUs are nvidia.com/gpu); \
             the nodes offer cpu, memory, pods, rdma/hca"
        );
        // Offered, or placed by kubetrain whether nodes advertise it or not: fine.
        j.spec.tasks[0].template["spec"]["containers"][0]["resources"] =
            serde_json::json!({"limits": {"nvidia.com/gpu": 4, "rdma/hca": 1}});
        assert!(validate(&j, &w.refs()).is_ok());
    }

    /// A parent that is missing, of another tenant, or part of a cycle makes the queue
    /// unusable: its jobs are told the queue is at fault, naming the problem.
    #[test]
    fn a_queue_with_a_broken_parent_chain_is_named() {
        let mut w = World::new();
        let child = |name: &str, vc: &str, parent: &str| {
            let mut q: Queue = (*queue(name, vc).1).clone();
            q.spec.parent = Some(parent.into());
            (name.to_string(), std::sync::Arc::new(q))
        };
        for (name, q) in [
            child("orphan", "a", "gone"),
            child("crossed", "a", "nlp"),
            child("cyc-a", "a", "cyc-b"),
            child("cyc-b", "a", "cyc-a"),
            child("fine", "a", "vision"),
        ] {
            w.queues.insert(name, q);
        }
        let problem = |q: &str| queue_parent_problem(&w.queues[q], &w.queues);
        assert_eq!(
            problem("orphan").as_deref(),
            Some("parent queue gone does not exist")
        );
        assert_eq!(
            problem("crossed").as_deref(),
            Some("parent queue nlp belongs to VirtualCluster b, not a")
        );
        assert_eq!(
            problem("cyc-a").as_deref(),
            Some("its parents form a cycle (cyc-a → cyc-b → cyc-a)")
        );
        assert_eq!(problem("fine"), None);
        let e = validate(&job("team-a", Some("cyc-a"), None, &[None]), &w.refs()).unwrap_err();
        assert_eq!(e.reason(), "InvalidQueueParent");
        assert!(e.to_string().contains("must fix its spec.parent"), "{e}");
    }

    /// A namespace two VirtualClusters own, by name or by selector, is reported on both;
    /// a selector alone counts only namespaces that exist.
    #[test]
    fn a_namespace_owned_twice_is_reported_on_each_owner() {
        let mut w = World::new();
        let (name, e) = vc("e", &["team-a", "team-e"], None);
        w.vcs.insert(name, e);
        let mut f: VirtualCluster = (*vc("f", &[], None).1).clone();
        f.spec.namespace_selector = Some(
            serde_json::from_value(serde_json::json!({"matchLabels": {"tenant": "f"}}))
                .expect("selector"),
        );
        w.vcs.insert("f".into(), std::sync::Arc::new(f));
        let labelled: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "team-e", "labels": {"tenant": "f"}}}))
        .expect("namespace");
        w.namespaces.insert("team-e".into(), labelled);
        let shared = |v: &str| shared_namespaces(&w.vcs[v], &w.vcs, &w.namespaces);
        assert_eq!(
            shared("a"),
            vec![("team-a".to_string(), vec!["e".to_string()])]
        );
        assert_eq!(
            shared("e"),
            vec![
                ("team-a".to_string(), vec!["a".to_string()]),
                ("team-e".to_string(), vec!["f".to_string()]),
            ]
        );
        assert_eq!(
            shared("f"),
            vec![("team-e".to_string(), vec!["e".to_string()])]
        );
        assert_eq!(shared("b"), vec![]);
    }

    #[test]
    fn a_default_queue_of_another_tenant_or_missing_is_invalid() {
        let w = World::new();
        let refs = w.refs();
        assert_eq!(default_queue_problem(&w.vcs["a"], &w.queues), None);
        assert_eq!(default_queue_problem(&w.vcs["b"], &w.queues), None);
        let p = default_queue_problem(&w.vcs["c"], &w.queues).expect("foreign");
        assert!(p.contains("belongs to VirtualCluster b"), "{p}");
        let p = default_queue_problem(&w.vcs["d"], &w.queues).expect("missing");
        assert!(p.contains("does not exist"), "{p}");
        let e = validate(&job("team-c", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "DefaultQueueInvalid");
        assert!(e.to_string().contains("VirtualCluster c"), "{e}");
        // A job naming its queue does not depend on the default.
        assert_eq!(
            effective_queue(&job("team-c", Some("other"), None, &[None]), &refs),
            Ok("other".into())
        );
    }

    #[test]
    fn priority_comes_from_spec_then_classes_then_the_global_default() {
        let w = World::new()
            .class("high", 1000, false)
            .class("low", 10, false);
        let refs = w.refs();
        let p = |j: TrainingJob| effective_priority(&j, &refs);
        assert_eq!(p(job("team-a", None, Some(5), &[Some("high")])), Ok(5));
        assert_eq!(p(job("team-a", None, None, &[Some("high")])), Ok(1000));
        // The highest when tasks differ.
        assert_eq!(
            p(job(
                "team-a",
                None,
                None,
                &[Some("low"), None, Some("high")]
            )),
            Ok(1000)
        );
        assert_eq!(p(job("team-a", None, None, &[None])), Ok(0));
        // No class named: the global default, the lowest if several claim it.
        let w = World::new()
            .class("default", 100, true)
            .class("also-default", 50, true)
            .class("high", 1000, false);
        let refs = w.refs();
        assert_eq!(
            effective_priority(&job("team-a", None, None, &[None]), &refs),
            Ok(50)
        );
        assert_eq!(
            effective_priority(&job("team-a", None, None, &[Some("high")]), &refs),
            Ok(1000)
        );
        let v = validate(&job("team-a", None, None, &[Some("high")]), &refs).expect("valid");
        assert_eq!(v.priority, 1000);
    }

    #[test]
    fn a_missing_priority_class_is_invalid_even_with_spec_priority() {
        let w = World::new().class("high", 1000, false);
        let refs = w.refs();
        for priority in [None, Some(3)] {
            let e =
                validate(&job("team-a", None, priority, &[None, Some("nope")]), &refs).unwrap_err();
            assert_eq!(e.reason(), "UnknownPriorityClass");
            assert!(
                e.to_string().contains("task t1") && e.to_string().contains("nope"),
                "{e}"
            );
        }
    }

    /// As the Job API refuses it: an exit-code rule naming a container no task has could
    /// never match.
    #[test]
    fn a_failure_rule_must_name_a_container_of_the_job() {
        let w = World::new();
        let refs = w.refs();
        let mut j = job("team-a", None, None, &[None]);
        let rule = |name: &str| {
            serde_json::from_value(serde_json::json!({"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                {"action": "FailJob",
                 "onExitCodes": {"containerName": name, "operator": "In", "values": [42]}}]}))
            .expect("policy")
        };
        j.spec.pod_failure_policy = Some(rule("c"));
        assert!(validate(&j, &refs).is_ok());
        j.spec.pod_failure_policy = Some(rule("trainer"));
        let e = validate(&j, &refs).unwrap_err();
        assert_eq!(e.reason(), "InvalidPodFailurePolicy");
        assert!(
            e.to_string().contains("rules[1]") && e.to_string().contains("trainer"),
            "{e}"
        );
    }

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

    fn spec(limit: serde_json::Value) -> k8s_openapi::api::core::v1::PodSpec {
        serde_json::from_value(serde_json::json!({"containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": limit}}}]}))
        .expect("pod spec")
    }

    #[test]
    fn fractional_gpu_requests_are_found_whole_ones_pass() {
        assert_eq!(
            fractional_gpu(&spec(serde_json::json!("500m"))).as_deref(),
            Some("500m")
        );
        assert_eq!(
            fractional_gpu(&spec(serde_json::json!("1.5"))).as_deref(),
            Some("1.5")
        );
        assert_eq!(fractional_gpu(&spec(serde_json::json!(2))), None);
        assert_eq!(fractional_gpu(&spec(serde_json::json!("2000m"))), None);
        let e = Invalid::FractionalGpu {
            task: "worker".into(),
            value: "500m".into(),
        };
        assert_eq!(e.reason(), "FractionalGpuRequest");
        assert!(e.to_string().contains("gpuShare"), "{e}");
    }
}
