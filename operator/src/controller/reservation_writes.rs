//! Carrying out a GPU reservation [`Plan`](super::reservations::Plan): the API calls that
//! create and delete reservation pods (each with its PodDisruptionBudget) and release share
//! pods to their reserved GPU. What to do is decided by the pure `reservations::plan`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, info, warn};

use super::context::Context;
use super::reservations::{Plan, disruption_budget, release_patch, reservation_pod};
use crate::api::TrainingJob;

/// Carries out a [`Plan`]. Failures are logged, and the next cycle's plan tries again.
pub async fn carry_out(ctx: &Arc<Context>, plan: Plan) {
    let settings = &ctx.settings.pods.reservation;
    if plan == Plan::default() {
        return;
    }
    let reservations: Api<Pod> = Api::namespaced(ctx.writer.client.clone(), &settings.namespace);
    for gpu in &plan.create {
        let node_uid = ctx
            .caches
            .stores
            .nodes
            .get(&ObjectRef::<Node>::new(&gpu.node))
            .and_then(|n| n.uid());
        let pod = reservation_pod(gpu, node_uid.as_deref(), settings);
        match reservations.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                info!(node = %gpu.node, gpu = gpu.gpu, "reserving a shared GPU from the device plugin");
                let budgets: Api<PodDisruptionBudget> =
                    Api::namespaced(ctx.writer.client.clone(), &settings.namespace);
                let budget = disruption_budget(&created);
                if let Err(e) = budgets.create(&PostParams::default(), &budget).await
                    && !matches!(&e, kube::Error::Api(s) if s.code == 409)
                {
                    warn!(reservation = %created.name_any(), error = %e, "creating the GPU reservation's disruption budget failed");
                }
            }
            // Made by an earlier cycle the cache does not show yet.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                warn!(node = %gpu.node, gpu = gpu.gpu, error = %e, "creating a GPU reservation failed")
            }
        }
    }
    for name in &plan.delete {
        match reservations.delete(name, &DeleteParams::default()).await {
            Ok(_) => info!(reservation = %name, "GPU reservation no longer needed; deleted"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => warn!(reservation = %name, error = %e, "deleting a GPU reservation failed"),
        }
    }
    for (namespace, job) in &plan.recheck {
        ctx.signals
            .job_triggers
            .request(ObjectRef::<TrainingJob>::new(job).within(namespace));
    }
    for r in &plan.release {
        let api: Api<Pod> = Api::namespaced(ctx.writer.client.clone(), &r.namespace);
        let patch = Patch::Strategic(release_patch(&r.device, &r.reservation));
        match api.patch(&r.name, &PatchParams::default(), &patch).await {
            Ok(_) => {
                debug!(pod = %r.name, device = %r.device, "share released to its reserved GPU")
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => warn!(pod = %r.name, error = %e, "releasing a share pod failed"),
        }
    }
}
