//! The gang's headless Service (stable names for its replicas, `MASTER_PORT`) and its
//! PodDisruptionBudget.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::{PodSettings, owner};
use crate::api::TrainingJob;
use crate::api::annotations::JOB_LABEL;

/// The gang's PodDisruptionBudget: no pod of it may be evicted (`kubectl drain`, cluster
/// autoscalers), so a drain waits while kubetrain asks the job to checkpoint and then stops
/// it itself. Deletions, kubetrain's own way of stopping pods, are not affected.
///
/// The budget is `minAvailable` of the whole gang, not `maxUnavailable: 0`: for
/// `maxUnavailable` the disruption controller reads the owner's `/scale`, which a
/// TrainingJob does not have, so every sync of the budget failed (`SyncFailed`, one failed
/// GET each, retried with backoff); `minAvailable` as a number needs only the pods.
pub fn disruption_budget(job: &TrainingJob) -> PodDisruptionBudget {
    let name = job.name_any();
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: job.namespace(),
            owner_references: owner(job).map(|o| vec![o]),
            labels: Some([(JOB_LABEL.to_string(), name.clone())].into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(replica_count(job).max(1))),
            selector: Some(LabelSelector {
                match_labels: Some([(JOB_LABEL.to_string(), name)].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// The job's replicas, all tasks together: the size of its gang.
fn replica_count(job: &TrainingJob) -> i32 {
    job.spec
        .tasks
        .iter()
        .map(|t| t.replicas().max(0))
        .fold(0, i32::saturating_add)
}

/// Whether the job's replicas need names to find each other (more than one in all): whether
/// it has a headless Service.
pub fn needs_rendezvous(job: &TrainingJob) -> bool {
    replica_count(job) > 1
}

/// The headless Service that gives every replica a stable DNS name; none for a job of one
/// replica, whose `MASTER_ADDR` is `localhost`.
/// The container port Kubeflow's PyTorchJob takes `MASTER_PORT` from.
const KUBEFLOW_MASTER_PORT_NAME: &str = "pytorchjob-port";

/// The job's `MASTER_PORT`: the first container port named `pytorchjob-port` in its tasks'
/// templates, as Kubeflow's PyTorchJob reads it (a migrated template keeps its port, and the
/// firewall rules made for it), else the operator's `--master-port`.
pub fn master_port(job: &TrainingJob, settings: &PodSettings) -> i32 {
    job.spec
        .tasks
        .iter()
        .filter_map(|t| t.template.pointer("/spec/containers")?.as_array())
        .flatten()
        .filter_map(|c| c.get("ports")?.as_array())
        .flatten()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some(KUBEFLOW_MASTER_PORT_NAME))
        .and_then(|p| p.get("containerPort")?.as_i64())
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| (1..=65535).contains(p))
        .unwrap_or(settings.master_port)
}

pub fn headless_service(job: &TrainingJob, settings: &PodSettings) -> Option<Service> {
    if !needs_rendezvous(job) {
        return None;
    }
    let name = job.name_any();
    Some(Service {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: job.namespace(),
            labels: Some(BTreeMap::from([(JOB_LABEL.to_string(), name.clone())])),
            owner_references: owner(job).map(|o| vec![o]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(JOB_LABEL.to_string(), name)])),
            publish_not_ready_addresses: Some(true),
            ports: Some(vec![ServicePort {
                name: Some("master".into()),
                port: master_port(job, settings),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::controller::pods::gang_pods;
    use crate::controller::pods::tests::{env_of, job, placed};

    #[test]
    fn only_a_job_of_several_replicas_gets_a_service_and_the_budget_keeps_the_gang() {
        let settings = PodSettings::default();
        let two = job();
        let service = headless_service(&two, &settings).expect("two replicas: a Service");
        assert_eq!(
            service.spec.and_then(|s| s.cluster_ip).as_deref(),
            Some("None")
        );
        let mut one = job();
        one.spec.tasks[0].replicas = Some(1);
        assert!(headless_service(&one, &settings).is_none());
        // The budget keeps the whole gang: every replica must stay available.
        let min_available = |j: &TrainingJob| {
            let spec = disruption_budget(j).spec.expect("spec");
            assert!(spec.max_unavailable.is_none());
            spec.min_available
        };
        assert_eq!(min_available(&two), Some(IntOrString::Int(2)));
        assert_eq!(min_available(&one), Some(IntOrString::Int(1)));
        let pods = gang_pods(
            &one,
            &[placed(0, 0, "n1", &[0, 1])],
            false,
            0,
            &settings,
            &|_| false,
        )
        .expect("pods");
        let env = env_of(&pods[0].spec.as_ref().expect("spec").containers[0]);
        assert_eq!(env["MASTER_ADDR"].as_deref(), Some("localhost"));
        assert_eq!(env["WORLD_SIZE"].as_deref(), Some("1"));
    }

    /// A Kubeflow template's port named `pytorchjob-port` is the job's `MASTER_PORT`, and
    /// the Service's; without one, the operator's.
    #[test]
    fn a_port_named_as_kubeflow_names_it_is_the_master_port() {
        let settings = PodSettings::default();
        let mut j = job();
        assert_eq!(master_port(&j, &settings), 23456);
        j.spec.tasks[0].template["spec"]["containers"][0]["ports"] = serde_json::json!([
            {"name": "metrics", "containerPort": 9090},
            {"name": "pytorchjob-port", "containerPort": 29500},
        ]);
        assert_eq!(master_port(&j, &settings), 29500);
        let pods = gang_pods(
            &j,
            &[placed(0, 0, "n1", &[0, 1]), placed(1, 1, "n1", &[2, 3])],
            false,
            0,
            &settings,
            &|_| false,
        )
        .expect("pods");
        let env = env_of(&pods[1].spec.as_ref().expect("spec").containers[0]);
        assert_eq!(env["MASTER_PORT"].as_deref(), Some("29500"));
        let service = headless_service(&j, &settings).expect("a Service for two replicas");
        assert_eq!(
            service.spec.expect("spec").ports.expect("ports")[0].port,
            29500
        );
    }
}
