//! A preemption's checkpoint request as the victim's pods carry it: read for the snapshot,
//! and what withdrawing it takes when the core cancels the preemption because the job it
//! made room for no longer waits (`sched::Decisions::cancellations`). Pure: the withdrawal
//! itself, its API calls and its Event, is `withdrawal::withdraw`.
//!
//! A request may be withdrawn only while nothing has acted on it: the job has not
//! acknowledged its checkpoint, its pods are not being deleted, and the lifecycle has not
//! told them to stop. The patch carries the pod's `resourceVersion`, so an acknowledgement
//! written since the cache saw the pod makes it fail rather than be lost.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::gang::Gang;
use super::lifecycle::stop_decided;
use crate::api::annotations::{CHECKPOINT_REQUESTED, PREEMPTED_FOR, PREEMPTION_REASON};
use crate::api::reasons::PreemptionCause;
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::sched;

/// A checkpoint request the scheduler wrote that the pod cache may not show yet. Until it
/// does, the job is taken as asked (preempting, with this request), so the next cycle does
/// not choose it again and ask it anew: a new request would restart its grace period and
/// call for a second acknowledgement.
#[derive(Clone, Debug)]
pub struct Asked {
    pub reason: sched::PreemptionReason,
    /// The job the room is for, as the pods' annotation names it (`Reclaim`, `Priority`, `QueueShare`).
    pub beneficiary: Option<String>,
    pub at: i64,
    /// The job's attempt whose pods were asked.
    pub attempt: i32,
}

/// The scheduler's reason of a preemption cause (`None` for a suspension, the lifecycle's).
pub fn scheduler_reason(cause: PreemptionCause) -> Option<sched::PreemptionReason> {
    Some(match cause {
        PreemptionCause::Reclaim => sched::PreemptionReason::Reclaim,
        PreemptionCause::Priority => sched::PreemptionReason::Priority,
        PreemptionCause::QueueShare => sched::PreemptionReason::QueueShare,
        PreemptionCause::Consolidation => sched::PreemptionReason::Consolidation,
        PreemptionCause::Drain => sched::PreemptionReason::Drain,
        PreemptionCause::UnhealthyGpu => sched::PreemptionReason::UnhealthyGpu,
        PreemptionCause::QueueHold => sched::PreemptionReason::QueueHold,
        PreemptionCause::Suspend => return None,
    })
}

/// The cause the pods record for a scheduler's preemption.
pub fn cause_of(reason: sched::PreemptionReason) -> PreemptionCause {
    match reason {
        sched::PreemptionReason::Reclaim => PreemptionCause::Reclaim,
        sched::PreemptionReason::Priority => PreemptionCause::Priority,
        sched::PreemptionReason::QueueShare => PreemptionCause::QueueShare,
        sched::PreemptionReason::Consolidation => PreemptionCause::Consolidation,
        sched::PreemptionReason::Drain => PreemptionCause::Drain,
        sched::PreemptionReason::UnhealthyGpu => PreemptionCause::UnhealthyGpu,
        sched::PreemptionReason::QueueHold => PreemptionCause::QueueHold,
    }
}

/// The scheduler's request on the job's active pods, if one is there and names its reason.
pub fn request(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    gang: &Gang,
) -> Option<sched::CheckpointRequest> {
    let asked = gang.scheduler_request()?;
    let reason = asked.reason.and_then(scheduler_reason)?;
    Some(sched::CheckpointRequest {
        reason,
        beneficiary: asked.preempted_for.clone(),
        withdrawable: withdrawable(job, status, gang),
    })
}

/// Whether a request on the job could still be withdrawn: not acknowledged, its pods not
/// leaving, not suspended or deleted, no stop decided. A job that finished or failed
/// meanwhile is stopping for its own reasons.
fn withdrawable(job: &TrainingJob, status: &TrainingJobStatus, gang: &Gang) -> bool {
    status.phase.holds_gpus()
        && !gang.acknowledged()
        && !gang.leaving()
        && !job.spec.suspend
        && job.metadata.deletion_timestamp.is_none()
        && !stop_decided(status)
}

/// The request the scheduler wrote on the job's pods (`a`) before the cache shows it there:
/// what [`request`] will read once it does.
pub fn asked(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    gang: &Gang,
    a: &Asked,
) -> sched::CheckpointRequest {
    sched::CheckpointRequest {
        reason: a.reason,
        beneficiary: a.beneficiary.clone(),
        withdrawable: withdrawable(job, status, gang),
    }
}

/// The job is still `Preempting` in its status, but its request is gone from its pods and
/// they were not told to stop: the scheduler withdrew it, and the reconciler is about to
/// take the job back to Running. Its GPUs are not leaving.
pub fn withdrawn(job: &TrainingJob, status: &TrainingJobStatus, gang: &Gang) -> bool {
    status.phase == Phase::Preempting
        && gang.active().next().is_some()
        && !gang.leaving()
        && !job.spec.suspend
        && !stop_decided(status)
        && gang.active().all(|m| m.checkpoint_request.is_none())
}

/// Whether the cache has moved on since the snapshot that cancelled `c`: the victim is
/// leaving, acknowledged its checkpoint, or its request names another beneficiary. Only
/// what is still the cancellation's to withdraw is withdrawn.
pub fn withdrawal_stale(gang: &Gang, c: &sched::Cancellation) -> bool {
    gang.leaving()
        || gang.acknowledged()
        || gang.active().any(|m| {
            m.checkpoint_request
                .as_ref()
                .and_then(|r| r.preempted_for.as_deref())
                .is_some_and(|b| b != c.beneficiary)
        })
}

/// The patch that takes a checkpoint request off `pod`: it carries the pod's
/// `resourceVersion`, so an acknowledgement written since the cache saw the pod makes it
/// fail (409) rather than be lost.
pub fn withdrawal_patch(pod: &Pod) -> serde_json::Value {
    serde_json::json!({"metadata": {
        "resourceVersion": pod.resource_version(),
        "annotations": {
            CHECKPOINT_REQUESTED: null,
            PREEMPTION_REASON: null,
            PREEMPTED_FOR: null,
        },
    }})
}

/// The `PreemptionCancelled` Event's note.
pub fn cancelled_note(c: &sched::Cancellation) -> String {
    format!(
        "{} preemption withdrawn: {} no longer waits (deleted, suspended or placed elsewhere) and this job had not acknowledged its checkpoint; it runs on.",
        c.reason, c.beneficiary
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// Every scheduler reason is a cause the pods record and reads back as itself; a
    /// suspension is nobody's preemption.
    #[test]
    fn scheduler_reasons_are_causes_and_back() {
        for r in sched::PreemptionReason::ALL {
            assert_eq!(scheduler_reason(cause_of(r)), Some(r));
            assert_eq!(cause_of(r).as_str(), r.to_string());
        }
        assert_eq!(scheduler_reason(PreemptionCause::Suspend), None);
    }

    use serde_json::json;

    use super::*;
    use crate::api::annotations::CHECKPOINT_DONE;

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

    /// The job's gang of one pod, being deleted when `leaving`.
    fn gang_of(p: &Arc<Pod>, leaving: bool) -> Gang {
        let mut pod = (**p).clone();
        if leaving {
            pod.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    "2026-01-01T00:00:10Z".parse().expect("time"),
                ));
        }
        Gang::new([Arc::new(pod)])
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
        let r = request(&job(false), &status(Phase::Preempting), &gang_of(&p, false))
            .expect("a request");
        assert_eq!(r.reason, sched::PreemptionReason::Reclaim);
        assert_eq!(r.beneficiary.as_deref(), Some("vision/train"));
        assert!(r.withdrawable);
    }

    #[test]
    fn an_acknowledged_leaving_or_suspended_request_stays() {
        let acked = asked(&[(CHECKPOINT_DONE, "2026-01-01T00:00:05Z")]);
        let s = status(Phase::Preempting);
        let withdrawable = |j: &TrainingJob, p: &Arc<Pod>, leaving| {
            request(j, &s, &gang_of(p, leaving)).map(|r| r.withdrawable)
        };
        assert_eq!(withdrawable(&job(false), &acked, false), Some(false));
        assert_eq!(withdrawable(&job(false), &asked(&[]), true), Some(false));
        assert_eq!(withdrawable(&job(true), &asked(&[]), false), Some(false));
        let done = request(
            &job(false),
            &status(Phase::Succeeded),
            &gang_of(&asked(&[]), false),
        );
        assert_eq!(done.map(|r| r.withdrawable), Some(false));
    }

    #[test]
    fn a_suspensions_request_names_no_reason_and_is_not_the_schedulers() {
        let p = pod(json!({CHECKPOINT_REQUESTED: "2026-01-01T00:00:00Z"}));
        assert_eq!(
            request(&job(true), &status(Phase::Preempting), &gang_of(&p, false)),
            None
        );
    }

    #[test]
    fn a_preempting_job_whose_request_is_gone_is_not_leaving() {
        let p = pod(json!({}));
        assert!(withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &gang_of(&p, false)
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &gang_of(&asked(&[]), false)
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Preempting),
            &gang_of(&p, true)
        ));
        assert!(!withdrawn(
            &job(true),
            &status(Phase::Preempting),
            &gang_of(&p, false)
        ));
        assert!(!withdrawn(
            &job(false),
            &status(Phase::Running),
            &gang_of(&p, false)
        ));
    }
}
