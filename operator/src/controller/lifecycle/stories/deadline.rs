//! `activeDeadlineSeconds`: counted from each admission; a job past it is stopped and fails for
//! good; what the replicas did before it was seen comes first.

use super::*;

/// `activeDeadlineSeconds`: a job that runs that long in one admission is stopped and fails
/// for good, not retried; the reconcile in between is timed to the deadline.
#[test]
fn a_job_past_its_deadline_is_stopped_and_not_retried() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(100);
    let fx = s.after(40).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    let fx = s.after(40).tick();
    assert_eq!(
        fx.requeue,
        Some(Duration::from_secs(20)),
        "looks again when the deadline falls"
    );
    let fx = s.after(20).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "DeadlineExceeded")
    );
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m
                .contains("100 s after its admission, past spec.activeDeadlineSeconds (100 s)")),
        "{:?}",
        s.status().message
    );
    assert_eq!(s.status().retries, 0, "not a retry");
    assert_eq!(s.status().finished_at, Some(at(100)));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // The stopped replicas' exits are not a failure to retry: the job is finished.
    for p in &mut s.pods {
        exits(p, 143);
    }
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert!(fx.events.is_empty());
}

/// The deadline counts from the job's admission: the time it waited in its queue is not
/// running time, and a job admitted again after a retry has the whole time again.
#[test]
fn a_deadline_counts_from_each_admission() {
    let mut s = Story::new(1);
    s.job.spec.active_deadline_seconds = Some(100);
    s.tick();
    s.after(500);
    s = s.admitted("Running");
    s.tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().admitted_at, Some(at(500)));
    s.after(99).tick();
    assert_eq!(s.phase(), Phase::Running, "500 s in its queue do not count");
    // A failure just before the deadline is retried as any other.
    exits(&mut s.pods[0], 1);
    s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    s.after(30);
    s = s.admitted("Running");
    s.tick();
    assert_eq!(s.status().admitted_at, Some(at(639)));
    s.after(99).tick();
    assert_eq!(s.phase(), Phase::Running);
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(s.status().retries, 1);
}

/// A job whose work is done when the deadline is seen succeeded: the success came first.
#[test]
fn a_job_done_by_its_deadline_succeeds() {
    let mut s = Story::running(1);
    s.job.spec.active_deadline_seconds = Some(60);
    s.set_pods_phase("Succeeded");
    s.after(61).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
}

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestSyncJobPastDeadline`
/// "activeDeadlineSeconds less than single pod execution" and "activeDeadlineSeconds bigger
/// than single pod execution" (one pod succeeded, one active: the active one is deleted, the
/// job fails with `DeadlineExceeded`), with Kubeflow training-operator
/// `pkg/controller.v1/common/job_test.go` `TestPastActiveDeadline` (past the deadline the
/// job's pods are deleted and it fails). In kubetrain, a two-replica gang one of whose
/// replicas is done fails at its deadline: the running replica is stopped, the done one keeps
/// its pod (and logs).
#[test]
fn k8s_past_its_deadline_a_job_fails_and_stops_its_active_pods() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(10);
    set_phase(&mut s.pods[0], "Succeeded");
    let fx = s.after(15).tick();
    assert_eq!(s.phase(), Phase::Failed, "{}", message(&s));
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
}

/// Kubernetes, `TestSyncJobPastDeadline` "activeDeadlineSeconds times-out before any pod
/// starts": the deadline runs from the job's start, not its pods'. In kubetrain it runs from
/// the admission: a gang whose pods never started (an image that cannot be pulled) fails at
/// its deadline, before the operator's start timeout.
#[test]
fn k8s_the_deadline_runs_before_any_pod_starts() {
    let mut s = Story::new(2);
    s.job.spec.active_deadline_seconds = Some(10);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    s.after(9).tick();
    assert_eq!(s.phase(), Phase::Starting);
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kubernetes, `TestSyncJobPastDeadline` "activeDeadlineSeconds with backofflimit reach": a
/// job past its deadline whose pod failed with no retries left fails with
/// `BackoffLimitExceeded`: the failure decides. In kubetrain too, with `RetriesExhausted`.
#[test]
fn k8s_a_failure_past_the_deadline_is_still_the_failure() {
    let mut s = Story::running(1);
    s.job.spec.max_retries = 0;
    s.job.spec.active_deadline_seconds = Some(1);
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
}

/// Kubernetes, `TestSyncJobPastDeadline` "activeDeadlineSeconds is not triggered when Job is
/// suspended", with the Job documentation (a resumed Job's `startTime` is reset, and with it
/// the deadline's count). In kubetrain, a job suspended past its deadline stays `Suspended`,
/// and once resumed and admitted again it has the whole time again.
#[test]
fn k8s_a_suspended_job_is_not_past_its_deadline() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(30);
    suspend_and_stop(&mut s);
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    s.after(29).tick();
    assert_eq!(s.phase(), Phase::Running, "a new admission, a new count");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
}

/// JobSet, `pkg/controllers/active_deadline_test.go`, `TestReconcileDeadlineBeatsFailurePolicy`:
/// a child Job's failure and an expired `activeDeadlineSeconds` seen in the same reconcile fail
/// the JobSet with `DeadlineExceeded`, not restarted (`maxRestarts: 3` left). kubetrain
/// documents the opposite order (docs/user-guide.md, `activeDeadlineSeconds`: "A replica that
/// fails or a job that succeeds before the deadline is seen counts as such"): the failure is a
/// counted retry, and the job admitted again has the whole time again.
#[test]
fn jobset_a_failure_seen_past_the_deadline_is_retried_differs() {
    let mut s = Story::running(1);
    s.job.spec.active_deadline_seconds = Some(10);
    s.job.spec.max_retries = 3;
    exits(&mut s.pods[0], 1);
    s.now = 3600;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    s.pods_gone();
    s.after(10).tick();
    readmitted(&mut s, 1);
    s.after(9).tick();
    assert_eq!(s.phase(), Phase::Running, "a new admission, a new count");
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
}

/// JobSet, `active_deadline_test.go`, `TestExecuteActiveDeadlinePolicy` "future startTime (clock
/// skew): treated as not expired" (requeued for the whole time left) and "overflow-large
/// deadline: treated as never expiring, no failure". In kubetrain, an admission time an hour
/// ahead of the operator's clock (written by a replica whose clock ran ahead) puts the deadline
/// an hour later, and the reconcile is timed to it; `activeDeadlineSeconds` past the last
/// representable time is no deadline: the job runs on.
#[test]
fn jobset_a_future_admission_or_an_overflowing_deadline_is_not_past_due() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(10);
    s.job.status.as_mut().expect("status").admitted_at = Some(at(3600));
    s.now = 20;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Running, "{}", message(&s));
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    s.now = 3609;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.now = 3610;
    s.tick();
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));

    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(i64::MAX);
    let fx = s.after(1_000_000_000).tick();
    assert_eq!(s.phase(), Phase::Running, "{}", message(&s));
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    assert!(fx.events.is_empty());
}

/// Kubeflow training-operator (v1.9), `pkg/controller.v1/tensorflow/job_test.go`, "Test
/// Active Deadline Seconds": "4 workers and 2 ps is running, ActiveDeadlineSeconds is 2" (past
/// the deadline every pod and service is removed) and "4 workers and 2 ps is running,
/// ActiveDeadlineSeconds unset" (all six remain). In kubetrain, a TFJob-shaped gang past its
/// deadline fails with `DeadlineExceeded` and every replica of every task, deciding or not, is
/// stopped; without a deadline it runs on.
#[test]
fn kubeflow_past_its_deadline_every_task_of_a_tf_job_is_stopped() {
    let tasks = [("ps", 2, false), ("worker", 4, true)];
    let mut s = running_gang(&tasks);
    s.job.spec.active_deadline_seconds = Some(2);
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Failed, "{}", message(&s));
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(
        sorted(deleted(&fx)),
        [
            "llm-ps-0",
            "llm-ps-1",
            "llm-worker-0",
            "llm-worker-1",
            "llm-worker-2",
            "llm-worker-3"
        ]
    );

    let mut s = running_gang(&tasks);
    let fx = s.after(100_000).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

/// Kueue, `test/integration/singlecluster/controller/core/workload_controller_test.go`, "should
/// deactivate the workload when the time expires with multiple admissions" (the time a workload
/// ran before its eviction is kept in `accumulatedPastExecutionTimeSeconds` and counts towards
/// `maximumExecutionTimeSeconds` after its next admission), with
/// `pkg/controller/core/workload_controller_test.go` `TestReconcile` "admitted workload with max
/// execution time - expired" (the workload is deactivated: its job stopped, not failed).
/// kubetrain's deadline counts one admission (docs/user-guide.md, `activeDeadlineSeconds`: "a
/// job admitted again after a retry, a preemption or a suspension has the whole time again")
/// and fails the job when it falls ("`Failed` with reason `DeadlineExceeded`, not retried"): a
/// job preempted after 50 s of a 60 s deadline runs 60 s more, then fails.
#[test]
fn kueue_the_deadline_starts_over_with_each_admission_differs() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(60);
    s.after(50).tick();
    let now = s.now;
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(now));
    s.annotate_all(PREEMPTION_REASON, "Priority");
    s.tick();
    assert_eq!(s.phase(), Phase::Preempting, "{}", message(&s));
    s.annotate_all(CHECKPOINT_DONE, &stamp(now + 1));
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued, "{}", message(&s));
    readmitted(&mut s, 2);
    assert_eq!(s.status().admitted_at, Some(at(52)));
    s.after(59).tick();
    assert_eq!(
        s.phase(),
        Phase::Running,
        "50 s + 59 s, but 59 s in this admission"
    );
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert!(!s.job.spec.suspend, "failed, not deactivated");
    assert_eq!(s.status().preemptions, 1);
    assert_eq!(s.status().retries, 0);
    assert_eq!(reasons(&fx), ["Failed"]);
}
