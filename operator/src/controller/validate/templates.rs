//! A job's pod templates as the scheduler reads them: each task's demand and constraints,
//! and what the API server or kube-scheduler would refuse later (a fractional GPU, a
//! resource no node offers, a failure rule naming no container, GPU types no node has).

use std::collections::BTreeSet;

use kube::ResourceExt;

use super::{Invalid, Refs};
use crate::api::TrainingJob;
use crate::api::trainingjob::TaskSpec;
use crate::controller::resources::{GPU_RESOURCE, parse_milli, pod_demand};
use crate::sched;

/// The job's tasks as the scheduler sees them, from its templates: the part of
/// [`validate`](super::validate) that does not depend on where the job is queued.
pub fn tasks(job: &TrainingJob, refs: &Refs<'_>) -> Result<Vec<sched::Task>, Invalid> {
    let mut seen = BTreeSet::new();
    let mut tasks = Vec::new();
    // The containers' names, only for a job whose failure policy may name one.
    let mut containers = job.spec.pod_failure_policy.is_some().then(BTreeSet::new);
    for t in &job.spec.tasks {
        if !seen.insert(t.name.as_str()) {
            return Err(Invalid::DuplicateTask(t.name.clone()));
        }
        tasks.push(task(job, t, refs, containers.as_mut())?);
    }
    policy_containers_exist(job, &containers.unwrap_or_default())?;
    gpu_types_exist(job, &tasks, refs)?;
    Ok(tasks)
}

/// One task from its template, adding its containers' names to `containers` where asked.
fn task(
    job: &TrainingJob,
    t: &TaskSpec,
    refs: &Refs<'_>,
    containers: Option<&mut BTreeSet<String>>,
) -> Result<sched::Task, Invalid> {
    let longest = crate::controller::pods::pod_name(
        &job.name_any(),
        &t.name,
        (t.replicas().max(1) - 1) as u32,
    );
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
        return Err(unknown_resource(&t.name, resource, refs.resources));
    }
    if let Some(containers) = containers {
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
    let mut constraints =
        crate::controller::placement_rules::pod_constraints(&spec).map_err(bad)?;
    let ns = job.namespace().unwrap_or_default();
    for v in spec.volumes.iter().flatten() {
        let Some(claim) = &v.persistent_volume_claim else {
            continue;
        };
        if let Some(a) = refs.volumes.get(&format!("{ns}/{}", claim.claim_name)) {
            constraints.affinities.push(a.clone());
        }
    }
    Ok(sched::Task {
        name: t.name.clone(),
        replicas: t.replicas().max(1) as u32,
        cpu_milli: demand.cpu_milli,
        memory_bytes: demand.memory_bytes,
        gpus,
        constraints,
    })
}

/// `UnknownResource` for `resource`, listing what the nodes offer.
fn unknown_resource(task: &str, resource: String, offered: &BTreeSet<String>) -> Invalid {
    let offered: Vec<&str> = offered
        .iter()
        .map(String::as_str)
        .filter(|r| !r.starts_with("hugepages-"))
        .collect();
    Invalid::UnknownResource {
        task: task.to_string(),
        hint: if resource.to_ascii_lowercase().contains("gpu") {
            format!(" (GPUs are {GPU_RESOURCE})")
        } else {
            String::new()
        },
        resource,
        offered: offered.join(", "),
    }
}

/// Each container a failure rule names is one of the job's, as the Job API checks at
/// creation; a CEL rule would have to walk every template, on every write of the job.
fn policy_containers_exist(
    job: &TrainingJob,
    containers: &BTreeSet<String>,
) -> Result<(), Invalid> {
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
    Ok(())
}

/// A job that wants GPUs of listed types can run only if some node has one of them.
fn gpu_types_exist(
    job: &TrainingJob,
    tasks: &[sched::Task],
    refs: &Refs<'_>,
) -> Result<(), Invalid> {
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
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::validate::fixtures::*;
    use crate::controller::validate::validate;

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
