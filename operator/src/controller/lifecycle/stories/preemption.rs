//! Preemption: the checkpoint request, its acknowledgement or grace period, the pods stopped, the
//! job back in its queue keeping its place (after a drain's settle), and a preemption withdrawn in
//! time.

use super::*;

#[test]
fn a_preempted_job_checkpoints_and_returns_to_its_queue() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").gpus = Some(2.0);
    // The scheduler asks for a checkpoint, for its owner's guarantee.
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointRequested")
    );
    assert_eq!(s.status().reason.as_deref(), Some("CheckpointRequested"));
    assert!(fx.pod_deletions.is_empty(), "the pods checkpoint first");
    assert!(fx.requeue.is_some_and(|d| d <= Duration::from_secs(2)));

    // The job acknowledges.
    s.annotate_all(CHECKPOINT_DONE, &stamp(105));
    let fx = s.after(5).tick();
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointSaved")
    );
    assert_eq!(s.status().last_checkpoint_time, Some(at(105)));
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.outcome, PreemptionOutcome::CheckpointSaved);
    assert_eq!(record.reason.as_deref(), Some("Reclaim"));
    assert_eq!(record.lost_gpu_seconds, 0);
    assert_eq!(reasons(&fx), ["CheckpointSaved"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("CheckpointSaved1"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // Recorded once.
    let fx = s.after(1).tick();
    assert!(fx.events.is_empty());

    // The pods are gone: back in line, keeping the job's place.
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().preemptions, 1);
    assert!(s.status().placement.is_empty());
    assert!(s.status().admitted_at.is_none() && s.status().started_at.is_none());
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.says(ConditionType::Running), ("False", "Preempted"));
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert_eq!(fx.events[0].type_, EventType::Normal);
    assert_eq!(fx.events[0].action.as_deref(), Some("Requeued1"));
}

/// The owner whose guarantee a reclaim served deletes its job before this one acknowledges:
/// the scheduler withdraws the request, and the job runs on, its pods untouched and no
/// preemption counted.
#[test]
fn a_withdrawn_preemption_lets_the_job_run_on() {
    let mut s = Story::running(2);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    let started = s.status().started_at.clone();

    // The scheduler withdraws the request (the annotations are removed).
    for p in &mut s.pods {
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(CHECKPOINT_REQUESTED);
            a.remove(PREEMPTION_REASON);
        }
    }
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("False", "PreemptionCancelled")
    );
    assert_eq!(s.says(ConditionType::Running).0, "True");
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert_eq!(s.status().preemptions, 0);
    assert_eq!(s.status().started_at, started);
    assert!(s.status().last_preemption.is_none());
    // Well past the grace period, it still runs.
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

/// Once the pods were told to stop, a request that vanishes from them changes nothing: the
/// gang stops as decided.
#[test]
fn a_preemption_past_its_acknowledgement_is_not_withdrawn() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.after(100).tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    for p in &mut s.pods {
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(CHECKPOINT_REQUESTED);
        }
    }
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
}

#[test]
fn a_preemption_without_acknowledgement_loses_the_work_since_the_start() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").gpus = Some(2.0);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    // the scheduler names its reason (a request without one is the lifecycle's suspension)
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    s.after(100).tick();
    // Within the grace period (30 s): keep waiting.
    let fx = s.after(29).tick();
    assert!(fx.pod_deletions.is_empty());
    let fx = s.after(1).tick();
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointLost")
    );
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.outcome, PreemptionOutcome::CheckpointLost);
    // 130 s since the start on 2 GPUs.
    assert_eq!(record.lost_gpu_seconds, 260);
    assert_eq!(fx.events[0].type_, EventType::Warning);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert_eq!(fx.events[0].type_, EventType::Warning, "work was lost");
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("about 260 GPU-seconds of work lost"))
    );
}

#[test]
fn pods_that_exit_on_their_own_end_the_preemption() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.after(100).tick();
    s.set_pods_phase("Succeeded");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(s.says(ConditionType::Preempting), ("True", "PodsExited"));
    assert_eq!(reasons(&fx), ["PodsExited"]);
}

#[test]
fn a_drained_job_waits_for_the_drain_to_settle_before_requeueing() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Drain");
    s.after(100).tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    s.after(1).tick();
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(
        s.phase(),
        Phase::Preempting,
        "kubectl drain must see the pod gone"
    );
    assert_eq!(s.status().retry_at, Some(at(112)));
    assert_eq!(fx.requeue, Some(Duration::from_secs(10)));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retry_at, None);
    assert_eq!(reasons(&fx), ["Requeued"]);
}

/// A queue held with `stopPolicy: HoldAndDrain` (issue 55 item 10) stops its running job as
/// a preemption (reason `QueueHold`): the job checkpoints, is back in its queue as soon as its
/// pods are gone (no drain's settle: no `kubectl drain` retries evictions by name), counts a
/// preemption and no retry, and waits there, `Admitted=False` with `QueueHeld`, for the hold
/// to be lifted.
#[test]
fn a_job_its_held_queue_drains_goes_back_to_wait_for_the_hold() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "QueueHold");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    s.after(1).tick();
    s.pods_gone();
    s.world.wait = Some((
        WaitReason::QueueHeld {
            queue: "q".into(),
            policy: crate::sched::StopPolicy::HoldAndDrain,
        },
        Some(1),
    ));
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued, "no settle after a hold");
    assert_eq!(s.status().retry_at, None);
    assert_eq!(reasons(&fx), ["Requeued"]);
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.reason.as_deref(), Some("QueueHold"));
    assert_eq!(record.outcome, PreemptionOutcome::CheckpointSaved);
    assert_eq!((s.status().retries, s.status().preemptions), (0, 1));
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "QueueHeld"));
}

/// Kueue and the Job controller count a pod that failed as a failure, whatever comes after.
/// In kubetrain, a replica crashed and, before the job's reconcile saw it, the scheduler
/// (from a cache that did not show the crash yet) asked the gang to checkpoint for a
/// reclaim: the crash is still the job's, a counted retry, not a preemption that would
/// hide it. A replica that exits after the request is the gang stopping as asked.
#[test]
fn a_crash_before_a_checkpoint_request_is_a_failure_not_a_preemption() {
    let mut s = running_gang(&[("worker", 2, false)]);
    exits_at(pod(&mut s, "llm-worker-0"), 1, 95);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().preemptions, 0);
    assert!(message(&s).contains("exit code 1"), "{}", message(&s));
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);

    // the same exit after the request: the gang stopping as asked
    let mut s = running_gang(&[("worker", 2, false)]);
    exits_at(pod(&mut s, "llm-worker-0"), 1, 101);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    s.after(102).tick();
    assert_eq!(s.phase(), Phase::Preempting, "{}", message(&s));
    assert_eq!(s.status().retries, 0);
}

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
