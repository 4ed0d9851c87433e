//! A fourth set of peer controllers' cases, about preemption, eviction, suspension, resumption
//! and requeueing (Kueue's job reconciler, workload controller and queue order, the Kubernetes
//! Job controller's suspension, Kubeflow's training-operator, Volcano's job states), told as
//! kubetrain stories: what becomes of the counters, the conditions, the pods, `queuedAt`,
//! `admittedAt` and `startedAt`, and the job's place in its queue.
//!
//! The same conventions as `peer_stories.rs`: a case whose answer differs on purpose, as
//! documented, asserts kubetrain's answer and ends in `_differs`; a case kubetrain gets wrong
//! keeps the peer's expectation and is ignored with the gap in one line. Four were ported as
//! gaps and are fixed: a gang stopped by its start timeout goes to the back of its queue; a
//! job that leaves its admission (back in its queue, suspended, waiting out a backoff, its
//! placement refused) is `Admitted=False` in the same write; and a preempted gang is back in
//! its queue, the preemption counted, only once its pods are gone.
//!
//! Not ported, for want of the feature in kubetrain: Kueue's restoration of the pod template
//! (node selectors, labels, tolerations from admission checks' `PodSetUpdates`) when a job is
//! stopped ("when workload is evicted, suspend, reset startTime and restore node selectors",
//! "labels and annotations should be propagated from admission check to job"): kubetrain's
//! placement lives in the pods it creates, not in the job's template; admission checks and
//! their `EvictedByAdmissionCheck` requeue: none in kubetrain; `manageJobsWithoutQueueName`
//! and the `Requeued` / `Deactivated` conditions of a workload's `spec.active`: the job's
//! `spec.suspend` is the only switch; the Job controller's expectations ("suspending a job
//! with unsatisfied expectations") and deletion races ("suspending a deleted job"): the
//! lifecycle is a pure function of observed state; Volcano's `AbortJob` / `ResumeJob` actions
//! on `PodEvicted` (`Aborting` → `Aborted`, `vcctl job resume`): no such actions; KAI's stale
//! gang eviction and pod-grouper: a gang missing a pod already restarts
//! (`peer_stories.rs`); JobSet's suspend/resume of child Jobs with node-selector updates: the
//! same template restoration as Kueue's.

use super::peer_stories::{message, readmitted};
use super::stories::{
    Story, at, deleted, exits, reasons, replica, set_phase, stamp, suspend_and_stop,
};
use super::*;
use crate::api::annotations::{CHECKPOINT_DONE, CHECKPOINT_REQUESTED, PREEMPTION_REASON};
use crate::api::trainingjob::PreemptionOutcome;

/// The scheduler asks the running gang to checkpoint for `reason`; the gang acknowledges a
/// second later and its pods are deleted: the effects of that step.
fn preempt_and_ack(s: &mut Story, reason: &str) -> Effects {
    let now = s.now;
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(now));
    s.annotate_all(PREEMPTION_REASON, reason);
    s.tick();
    assert_eq!(s.phase(), Phase::Preempting, "{}", message(s));
    s.annotate_all(CHECKPOINT_DONE, &stamp(now + 1));
    s.after(1).tick()
}

/// Preempted for `reason`, acknowledged, pods gone: back in the queue.
fn preempt(s: &mut Story, reason: &str) {
    preempt_and_ack(s, reason);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued, "{}", message(s));
}

// Kueue: queue order after an eviction.

/// Kueue, `pkg/workload/workload_test.go`, `TestGetQueueOrderTimestamp` "evicted by
/// preemption" (the order timestamp stays the creation time, for both orderings) and the job
/// reconciler's `WorkloadEvictedByPreemption` handling (requeued at once, `requeueState`
/// untouched): a preempted workload goes back to its old place, with no backoff. kubetrain
/// documents the same (docs/user-guide.md, "Checkpoints": "queues the job again in its old
/// place in line"; a preemption is not a failure): `queuedAt` is kept, no `retryAt`, no retry
/// counted, and the admission and start times of the stopped run are cleared.
#[test]
fn kueue_a_preempted_job_keeps_its_place_and_waits_no_backoff() {
    let mut s = Story::running(2);
    // One failure earlier: its retry is used, its backoff long over.
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    s.pods_gone();
    s.after(10).tick();
    readmitted(&mut s, 2);
    let queued_at = s.status().queued_at.clone();
    assert_eq!(queued_at, Some(at(0)));
    s.after(100);
    preempt(&mut s, "Priority");
    assert_eq!(s.status().queued_at, queued_at, "its place in line");
    assert_eq!(s.status().retry_at, None, "no backoff after a preemption");
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().preemptions, 1);
    assert_eq!(s.status().admitted_at, None);
    assert_eq!(s.status().started_at, None);
    // The scheduler places it again at once.
    readmitted(&mut s, 2);
    assert_eq!(s.status().queued_at, queued_at);
}

/// Kueue, `TestGetQueueOrderTimestamp` "evicted by PodsReady timeout" (with the default
/// `requeuingStrategy.timestamp: Eviction`, the order timestamp becomes the eviction's time)
/// and `pkg/controller/core/workload_controller_test.go` (an eviction by `PodsReadyTimeout`
/// requeues the workload after its backoff): a workload whose pods never became ready goes to
/// the back of its queue, so that it does not block the head of the line again. In kubetrain,
/// a gang stopped by the start timeout retries; once back in its queue its `queuedAt` is the
/// time it was stopped, not its first entry (ported as a gap: it kept its first place; fixed).
#[test]
fn kueue_a_gang_requeued_after_its_start_timeout_goes_to_the_back() {
    let mut s = Story::new(2);
    s.tick();
    assert_eq!(s.status().queued_at, Some(at(0)));
    s = s.admitted("Pending");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    // The image cannot be pulled: 600 s after its admission the gang stops.
    s.after(600).tick();
    assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    let queued_at = s.status().queued_at.clone().expect("queuedAt");
    assert!(
        queued_at.0 >= at(601).0,
        "behind the jobs that queued while it held its GPUs: {queued_at:?}"
    );
}

/// Kueue, `TestGetQueueOrderTimestamp` with `PrioritySortingWithinCohort` off: a workload
/// preempted with reason `InCohortReclaimWhileBorrowing` is ordered from its preemption's
/// time (plus an epsilon, to stay behind its preemptor). kubetrain puts a reclaimed bonus job
/// back in its old place, as every preemption (docs/user-guide.md, "Checkpoints": "their owner
/// reclaims a bonus loan ... queues the job again in its old place in line"); the scheduler
/// keeps it from borrowing the owner's GPUs back, not its queue order.
#[test]
fn kueue_a_reclaimed_borrower_keeps_its_place_differs() {
    let mut s = Story::running(2);
    s.after(300);
    preempt(&mut s, "Reclaim");
    assert_eq!(s.status().queued_at, Some(at(0)));
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("Reclaim")
    );
    assert!(
        message(&s).contains("keeping its place in line"),
        "{}",
        message(&s)
    );
}

// Kueue: what an eviction does to the workload's admission.

/// Kueue, `pkg/controller/jobs/job/job_controller_test.go` "when workload is evicted due to
/// preemption, job gets suspended": in the reconcile that finds
/// the job stopped, the workload's `QuotaReserved` and `Admitted` conditions turn `False`
/// (`Pending`, `NoReservation`) together with `Requeued`. In kubetrain, the write that puts a
/// preempted job back in its queue (`Running=False` `Preempted`, `Preempting=False`
/// `Requeued`) should also turn `Admitted` `False`: the job holds no admission any more.
#[test]
fn kueue_a_requeued_job_is_no_longer_admitted() {
    let mut s = Story::running(2);
    s.after(100);
    preempt(&mut s, "Priority");
    assert_eq!(s.says(ConditionType::Running), ("False", "Preempted"));
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
}

/// Kueue, `pkg/controller/core/workload_controller_test.go` (an eviction for `PodsReadyTimeout`
/// unsets the quota reservation; the workload waits for its `requeueState.requeueAt` with
/// `Admitted=False`) : a workload waiting out its requeue backoff is not admitted. In
/// kubetrain, a job `Retrying` (its gang stopped, waiting out the backoff) should not say
/// `Admitted=True`.
#[test]
fn kueue_a_job_waiting_out_its_backoff_is_not_admitted() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
}

/// Kueue, `test/integration/controller/jobs/job/job_controller_test.go` "Should finish the
/// preemption when the job becomes inactive": a preempted workload whose job is suspended
/// but still has active pods "should stay admitted"; only once the job is inactive does it
/// get unadmitted and go back to pending. In kubetrain, a preempted gang whose pods are
/// still terminating (a long `terminationGracePeriodSeconds`, the checkpoint still being
/// flushed) should stay `Preempting`: the troubleshooting table says `Requeued` means "the
/// pods are gone; the job is back in its queue" (a retrying gang does wait for them:
/// `volcano_a_restarting_job_waits_for_its_terminating_pods`).
#[test]
fn kueue_the_preemption_finishes_only_once_the_pods_are_gone() {
    let mut s = Story::running(2);
    s.after(100);
    let fx = preempt_and_ack(&mut s, "Priority");
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    for p in &mut s.pods {
        p.metadata.deletion_timestamp = Some(at(102));
    }
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Preempting, "{}", message(&s));
    assert_eq!(s.status().preemptions, 0);
    assert!(fx.events.is_empty(), "{:?}", reasons(&fx));
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().preemptions, 1);
    assert_eq!(reasons(&fx), ["Requeued"]);
}

// Kueue: re-admission after an eviction.

/// Kueue, `workload_controller_test.go` and the job reconciler: a workload admitted again
/// after an eviction gets a new `Admitted` (new transition time) and its job a new
/// `startTime`, the eviction's conditions cleared. In kubetrain, the job admitted again after
/// a preemption records the new admission (`admittedAt`, `Admitted=True` with a new
/// transition time), the new start once all replicas run, and `Preempting` stays `False`.
#[test]
fn kueue_a_readmitted_job_records_its_new_admission() {
    let mut s = Story::running(2);
    let first = s
        .condition(ConditionType::Admitted)
        .last_transition_time
        .clone();
    s.after(100);
    preempt(&mut s, "Priority");
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
    s.after(50);
    s.pods = (0..2).map(|i| replica(i, "n1", "Pending")).collect();
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().admitted_at, Some(at(153)));
    assert_eq!(s.status().started_at, None, "not running yet");
    // The preemption's `Running=False` is this run's no more.
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    let admitted = s.condition(ConditionType::Admitted);
    assert_eq!(admitted.status, "True");
    assert_ne!(admitted.last_transition_time, first);
    assert_eq!(admitted.last_transition_time, at(153));
    s.set_pods_phase("Running");
    let fx = s.after(5).tick();
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(s.status().started_at, Some(at(158)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.status().preemptions, 1);
}

/// Kueue, `workload_controller_test.go` PodsReady timeout cases (the timeout counts from the
/// `Admitted` condition's last transition, which a re-admission renews): a workload admitted
/// again after a preemption gets the whole timeout anew. In kubetrain the start timeout
/// counts from the new `admittedAt`: a readmitted gang pulling its image is not stopped
/// because its first admission was long ago.
#[test]
fn kueue_the_start_timeout_counts_from_the_new_admission() {
    let mut s = Story::running(1);
    s.after(500);
    preempt(&mut s, "Priority");
    s.after(1).tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    s.after(1).tick();
    assert_eq!(s.status().admitted_at, Some(at(504)));
    // 600 s after the first admission, 300 s after this one: it waits on.
    s.after(300).tick();
    assert_eq!(s.phase(), Phase::Starting, "{}", message(&s));
    assert_eq!(s.status().retries, 0);
    // 600 s after this one: stopped, counted.
    s.after(300).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(message(&s).contains("not running 600 s after admission"));
}

/// Kueue's job reconciler (`pkg/controller/jobframework/reconciler.go`: an evicted workload's
/// job is stopped at once, `stopJob` with `StopReasonWorkloadEvicted`, whatever its pods'
/// readiness), with the Job controller's suspension deleting pods that have not started: a
/// gang preempted before all its replicas run is stopped at once, with no grace period and no
/// work lost, and goes back to its queue counting a preemption (docs/troubleshooting.md,
/// `NotStarted`).
#[test]
fn kueue_a_gang_preempted_before_it_started_stops_at_once() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.after(1).tick();
    set_phase(&mut s.pods[0], "Running");
    s.after(5).tick();
    assert_eq!(s.status().started_at, None);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(PREEMPTION_REASON, "Priority");
    s.now = 10;
    let fx = s.tick();
    assert_eq!(s.says(ConditionType::Preempting), ("True", "NotStarted"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.outcome, PreemptionOutcome::NotStarted);
    assert_eq!(record.lost_gpu_seconds, 0);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().preemptions, 1);
    assert_eq!(s.status().retries, 0);
}

// Kubernetes Job controller.

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestControllerSyncJob` "resuming a
/// suspended job": the Job's `Suspended` condition turns `False` (`JobResumed`) and its pods
/// are created again. In kubetrain the resumed job goes back to its queue (Event `Resumed`),
/// in its old place (docs/user-guide.md: "resume ... back in its queue, same place in line"),
/// and the same write says why it waits there, with its position, as for any queued job.
#[test]
fn k8s_resuming_a_suspended_job_queues_it_again_in_its_place() {
    let mut s = Story::running(2);
    s.after(100);
    suspend_and_stop(&mut s);
    assert_eq!(s.status().queue_position, None);
    s.job.spec.suspend = false;
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "too big".into(),
        },
        Some(2),
    ));
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    // (A job that can never start is told so by a Warning too.)
    assert_eq!(reasons(&fx), ["Resumed", "NeverFits"]);
    assert_eq!(s.status().queued_at, Some(at(0)), "same place in line");
    assert_eq!(s.status().preemptions, 0);
    // The same write says why it waits, and where.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "NeverFits"));
    assert_eq!(s.status().queue_position, Some(2));
    let writes = s.writes;
    let fx = s.after(1).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.writes, writes, "nothing more to say");
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations;
/// PodReplacementPolicy enabled" (the deleted pods are counted `terminating`) with
/// `podReplacementPolicy: Failed` (no replacement while they terminate): a resumed Job does
/// not start new pods beside the old ones still terminating. In kubetrain, a job suspended
/// while its pods terminate is `Suspended` (its pods are told to stop), and once resumed it
/// waits in `Queued` without asking anything of the scheduler until they are gone.
#[test]
fn k8s_a_resumed_job_waits_for_its_terminating_pods() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(10).tick();
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(CHECKPOINT_DONE, &stamp(11));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    for p in &mut s.pods {
        p.metadata.deletion_timestamp = Some(at(41));
    }
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)), "waits for them");
    assert!(fx.pod_deletions.is_empty());
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations" and
/// "resuming a suspended job" (`status.succeeded` survives the suspension, and the resumed Job
/// only creates the completions still missing): in kubetrain the gang restarts as a whole
/// (docs/concepts.md; `status.succeededReplicas` is "cleared when the job is admitted
/// again"), so a replica done before the suspension runs again once the job is resumed.
#[test]
fn k8s_replicas_done_before_a_suspension_run_again_differs() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(40).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    suspend_and_stop(&mut s);
    assert_eq!(s.status().retries, 0);
    s.job.spec.suspend = false;
    s.after(10).tick();
    s.after(1).tick();
    s.pods = (0..2).map(|i| replica(i, "n1", "Running")).collect();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().succeeded_replicas.is_empty());
    // The second replica alone finishing does not finish the job.
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
}

// Kubeflow training-operator.

/// Kubeflow training-operator, `pkg/controller.v1/pytorch/pytorchjob_controller_test.go`
/// "Shouldn't create resources if PyTorchJob is suspended" (no pods, no `startTime`, a
/// `Suspended` condition) then "Should resume PyTorchJob after PyTorchJob is unsuspended": a
/// job created suspended is never started until resumed. In kubetrain it is written
/// `Suspended` at once (no wait for the scheduler), nothing is admitted, and once resumed it
/// waits in its queue; its `queuedAt` is its creation, as for any job valid from the start.
#[test]
fn kubeflow_a_job_created_suspended_starts_only_once_resumed() {
    let mut s = Story::created(2);
    s.job.spec.suspend = true;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Suspended);
    // Only Suspended: a "Queued, entered queue" Event for a job that never waited misled a
    // user in an acceptance run.
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert!(s.status().admitted_at.is_none() && s.status().started_at.is_none());
    let fx = s.after(600).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
    assert_eq!(s.status().queued_at, Some(at(0)));
    readmitted(&mut s, 2);
    assert_eq!(s.status().admitted_at, Some(at(601)));
    assert_eq!(s.status().started_at, Some(at(601)));
}

// Volcano job controller.

/// Volcano, `pkg/controllers/job/state/pending.go` (a `PodEvicted` event under the
/// `RestartJob` policy takes a Pending job to `Restarting`, `RetryCount` + 1), with
/// `job_state_test.go` `TestPendingState_Execute` "PendingState- RestartJobAction case":
/// an eviction before the job runs restarts it, counted. kubetrain restarts the gang that has
/// not started yet too, but a kubelet eviction is the node's doing and counts no retry
/// (docs/troubleshooting.md, `InfrastructureFailure`: "eviction ... retries without
/// counting").
#[test]
fn volcano_an_eviction_before_the_gang_started_restarts_it_uncounted_differs() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.after(1).tick();
    set_phase(&mut s.pods[0], "Running");
    s.pods[1].status = Some(
        serde_json::from_value(serde_json::json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: ephemeral-storage."}))
        .expect("pod status"),
    );
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(reasons(&fx), ["InfrastructureFailure"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)));
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations" (a
/// suspension deletes the active pods whatever else is under way, and the Job's condition says
/// `Suspended`), applied to a job the scheduler is preempting: no peer case has both at once.
/// In kubetrain the owner's suspension wins: the gang stops after its acknowledgement, the job
/// ends `Suspended`, not requeued, counts no preemption, and its record says `Suspend`.
#[test]
fn k8s_a_job_suspended_while_being_preempted_ends_suspended() {
    let mut s = Story::running(2);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Priority");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    s.job.spec.suspend = true;
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().preemptions, 0);
    assert_eq!(s.status().retries, 0);
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("Suspend")
    );
}
