//! Withdrawing a cancelled preemption's checkpoint request from the victim's pods, and the
//! Event that says so. What is withdrawn, and with which patch, is `preemption`'s (pure).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use tracing::{info, warn};

use super::caches::Caches;
use super::gang::Gang;
use super::job_key::JobKey;
use super::preemption::{cancelled_note, withdrawal_patch, withdrawal_stale};
use super::writer::Writer;
use crate::api::TrainingJob;
use crate::api::reasons::EventReason;
use crate::sched;

/// Withdraws a cancelled preemption's request from the victim's pods, and records why.
pub async fn withdraw(
    caches: &Caches,
    writer: &Writer,
    job: &TrainingJob,
    c: &sched::Cancellation,
) {
    let gang = Gang::new(caches.job_pods(job));
    // The cache may have moved on since the snapshot: withdraw only what is still ours to.
    if withdrawal_stale(&gang, c) {
        return;
    }
    let mut withdrawn = 0;
    for m in gang.active().filter(|m| m.checkpoint_request.is_some()) {
        let api: Api<Pod> = Api::namespaced(
            writer.client.clone(),
            &m.pod.namespace().unwrap_or_default(),
        );
        let patch = withdrawal_patch(&m.pod);
        match api
            .patch(&m.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => withdrawn += 1,
            // Changed since the cache saw it (an acknowledgement?): the next cycle decides.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                warn!(pod = %m.name, error = %e, "could not withdraw a checkpoint request")
            }
        }
    }
    if withdrawn == 0 {
        return;
    }
    info!(job = %JobKey::of(job), reason = %c.reason, beneficiary = %c.beneficiary, "preemption cancelled");
    let n = job.status.as_ref().map_or(0, |s| s.preemptions) + 1;
    let reason = EventReason::PreemptionCancelled.as_str();
    writer
        .event_with_action(
            job,
            EventType::Normal,
            reason,
            format!("{reason}{n}"),
            cancelled_note(c),
        )
        .await;
}
