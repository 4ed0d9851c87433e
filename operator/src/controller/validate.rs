//! What the schema cannot check: references to other objects and the pod templates.
//! A job that fails here gets `Valid=False` with the reason, waits, and recovers when a
//! later apply (or a new Queue, VirtualCluster or node) fixes it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

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
}

impl Invalid {
    /// CamelCase reason for the `Valid` condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Invalid::UnknownQueue(_) => "UnknownQueue",
            Invalid::UnknownVirtualCluster { .. } => "UnknownVirtualCluster",
            Invalid::ForeignQueue { .. } => "QueueOfAnotherTenant",
            Invalid::DuplicateTask(_) => "DuplicateTask",
            Invalid::NameTooLong(_) => "NameTooLong",
            Invalid::BadTemplate { .. } => "InvalidTemplate",
            Invalid::ShareAndWholeGpus(_) => "InvalidGpuRequest",
            Invalid::FractionalGpu { .. } => "FractionalGpuRequest",
            Invalid::UnknownGpuType(..) => "UnknownGpuType",
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
    /// Node affinity of the volume bound to each claim (`namespace/claim`).
    pub volumes: &'a BTreeMap<String, sched::constraints::Affinity>,
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

/// Checks a job and returns its tasks in the scheduling core's terms.
pub fn validate(job: &TrainingJob, refs: &Refs<'_>) -> Result<Vec<sched::Task>, Invalid> {
    let ns = job.namespace().unwrap_or_default();
    let queue = refs
        .queues
        .get(&job.spec.queue)
        .ok_or_else(|| Invalid::UnknownQueue(job.spec.queue.clone()))?;
    let vc_name = &queue.spec.virtual_cluster;
    let vc = refs
        .vcs
        .get(vc_name)
        .ok_or_else(|| Invalid::UnknownVirtualCluster {
            queue: job.spec.queue.clone(),
            vc: vc_name.clone(),
        })?;
    if !owns_namespace(vc, &ns, refs.namespaces) {
        return Err(Invalid::ForeignQueue {
            queue: job.spec.queue.clone(),
            vc: vc_name.clone(),
            namespace: ns,
        });
    }
    let name = job.name_any();
    let mut seen = BTreeSet::new();
    let mut tasks = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

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
