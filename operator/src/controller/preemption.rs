//! A preemption's checkpoint request as the victim's pods carry it: read for the snapshot,
//! and withdrawn when the core cancels the preemption because the job it made room for no
//! longer waits (`sched::Decisions::cancellations`).
//!
//! A request may be withdrawn only while nothing has acted on it: the job has not
//! acknowledged its checkpoint, its pods are not being deleted, and the lifecycle has not
//! told them to stop. The patch carries the pod's `resourceVersion`, so an acknowledgement
//! written since the cache saw the pod makes it fail rather than be lost.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use tracing::{info, warn};

use super::context::Context;
use super::lifecycle::stop_decided;
use super::snapshot::{is_active, job_key};
use crate::api::annotations::{
    CHECKPOINT_DONE, CHECKPOINT_REQUESTED, PREEMPTED_FOR, PREEMPTION_REASON,
};
use crate::api::reasons::EventReason;
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::sched;

/// The scheduler's request on the job's active pods, if one is there and names its reason.
/// `leaving`: some pod is being deleted.
pub fn request(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    active: &[&Arc<Pod>],
    leaving: bool,
) -> Option<sched::CheckpointRequest> {
    let asked = active
        .iter()
        .find(|p| p.annotations().contains_key(CHECKPOINT_REQUESTED))?;
    let reason = asked
        .annotations()
        .get(PREEMPTION_REASON)
        .and_then(|r| sched::PreemptionReason::from_name(r))?;
    let acknowledged = active
        .iter()
        .any(|p| p.annotations().contains_key(CHECKPOINT_DONE));
    // A job that finished or failed meanwhile is stopping for its own reasons.
    let live = matches!(status.phase, Phase::Running | Phase::Preempting);
    Some(sched::CheckpointRequest {
        reason,
        beneficiary: asked.annotations().get(PREEMPTED_FOR).cloned(),
        withdrawable: live
            && !acknowledged
            && !leaving
            && !job.spec.suspend
            && !stop_decided(status),
    })
}

/// The job is still `Preempting` in its status, but its request is gone from its pods and
/// they were not told to stop: the scheduler withdrew it, and the reconciler is about to
/// take the job back to Running. Its GPUs are not leaving.
pub fn withdrawn(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    active: &[&Arc<Pod>],
    leaving: bool,
) -> bool {
    status.phase == Phase::Preempting
        && !active.is_empty()
        && !leaving
        && !job.spec.suspend
        && !stop_decided(status)
        && active
            .iter()
            .all(|p| !p.annotations().contains_key(CHECKPOINT_REQUESTED))
}

/// Withdraws a cancelled preemption's request from the victim's pods, and records why.
pub async fn withdraw(ctx: &Arc<Context>, job: &Arc<TrainingJob>, c: &sched::Cancellation) {
    let pods: Vec<Arc<Pod>> = ctx
        .job_pods(job)
        .into_iter()
        .filter(|p| is_active(p))
        .collect();
    // The cache may have moved on since the snapshot: withdraw only what is still ours to.
    let stale = pods.iter().any(|p| {
        p.metadata.deletion_timestamp.is_some()
            || p.annotations().contains_key(CHECKPOINT_DONE)
            || p.annotations()
                .get(PREEMPTED_FOR)
                .is_some_and(|b| *b != c.beneficiary)
    });
    if stale {
        return;
    }
    let mut withdrawn = 0;
    for pod in pods
        .iter()
        .filter(|p| p.annotations().contains_key(CHECKPOINT_REQUESTED))
    {
        let api: Api<Pod> =
            Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": pod.resource_version(),
            "annotations": {
                CHECKPOINT_REQUESTED: null,
                PREEMPTION_REASON: null,
                PREEMPTED_FOR: null,
            },
        }});
        match api
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => withdrawn += 1,
            // Changed since the cache saw it (an acknowledgement?): the next cycle decides.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                warn!(pod = %pod.name_any(), error = %e, "could not withdraw a checkpoint request")
            }
        }
    }
    if withdrawn == 0 {
        return;
    }
    info!(job = %job_key(job), reason = %c.reason, beneficiary = %c.beneficiary, "preemption cancelled");
    let n = job.status.as_ref().map_or(0, |s| s.preemptions) + 1;
    let reason = EventReason::PreemptionCancelled.as_str();
    ctx.event_with_action(
        job.as_ref(),
        EventType::Normal,
        reason,
        format!("{reason}{n}"),
        format!(
            "{} preemption withdrawn: {} no longer waits (deleted, suspended or placed elsewhere) and this job had not acknowledged its checkpoint; it runs on.",
            c.reason, c.beneficiary
        ),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(suspend: bool) -> TrainingJob {
        serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": "sweep", "namespace": "nlp"},
            "spec": {"queue": "q", "suspend": suspend, "tasks": [{"name": "w", "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}
        }))
        .expect("job")
    }

    fn pod(annotations: serde_json::Value) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "sweep-w-0", "namespace": "nlp", "annotations": annotations},
                "status": {"phase": "Running"}
            }))
            .expect("pod"),
        )
    }

    fn status(phase: Phase) -> TrainingJobStatus {
        TrainingJobStatus {
            phase,
            ..Default::default()
        }
    }

    fn asked(extra: &[(&str, &str)]) -> Arc<Pod> {
        let mut a = json!({
            CHECKPOINT_REQUESTED: "2026-01-01T00:00:00Z",
            PREEMPTION_REASON: "Reclaim",
            PREEMPTED_FOR: "vision/train",
        });
        for (k, v) in extra {
            a[*k] = json!(v);
        }
        pod(a)
    }

    #[test]
    fn a_reclaim_not_yet_acknowledged_can_be_withdrawn() {
        let p = asked(&[]);
        let r = request(&job(false), &status(Phase::Preempting), &[&p], false).expect("a request");
        assert_eq!(r.reason, sched::PreemptionReason::Reclaim);
        assert_eq!(r.beneficiary.as_deref(), Some("vision/train"));
        assert!(r.withdrawable);
    }

    #[test]
    fn an_acknowledged_leaving_or_suspended_request_stays() {
        let acked = asked(&[(CHECKPOINT_DONE, "2026-01-01T00:00:05Z")]);
        let s = status(Phase::Preempting);
        let withdrawable = |j: &TrainingJob, p: &Arc<Pod>, leaving| {
            request(j, &s, &[p], leaving).map(|r| r.withdrawable)
        };
        assert_eq!(withdrawable(&job(false), &acked, false), Some(false));
        assert_eq!(withdrawable(&job(false), &asked(&[]), true), Some(false));
        assert_eq!(withdrawable(&job(true), &asked(&[]), false), Some(false));
        let done = request(
            &job(false),
            &status(Phase::Succeeded),
            &[&asked(&[])],
            false,
        );
        assert_eq!(done.map(|r| r.withdrawable), Some(false));
    }

    #[test]
    fn a_suspensions_request_names_no_reason_and_is_not_the_schedulers() {
        let p = pod(json!({CHECKPOINT_REQUESTED: "2026-01-01T00:00:00Z"}));
        assert_eq!(
            request(&job(true), &status(Phase::Preempting), &[&p], false),
            None
        );
    }

    #[test]
    fn a_preempting_job_whose_request_is_gone_is_not_leaving() {
        let p = pod(json!({}));
        assert!(withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &[&p],
            false
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &[&asked(&[])],
            false
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &[&p],
            true
        ));
        assert!(!withdrawn(
            &job(true),
            &status(Phase::Preempting),
            &[&p],
            false
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Running),
            &[&p],
            false
        ));
    }
}
