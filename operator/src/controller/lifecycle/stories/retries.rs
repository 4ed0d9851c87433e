//! Retries: `maxRetries` counted and used up (a lowered limit too), and the backoff, doubling up to
//! its cap and timed from when the replica failed.

use super::*;

#[test]
fn a_failed_replica_is_retried_after_its_backoff() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 3);
    let fx = s.after(50).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(60)));
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(s.status().reason.as_deref(), Some("ReplicaFailed"));
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("llm-worker-1 failed: exit code 3. Retry 1 of 2 in 10 s"))
    );
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("ReplicaFailed1"));
    assert_eq!(fx.events[0].type_, EventType::Warning);
    // The whole gang stops.
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(10)));

    // Pods still leaving: wait for them.
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    // Gone, but the backoff runs until t = 60.
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(fx.requeue, Some(Duration::from_secs(8)));
    // Backoff over: back in the queue.
    let fx = s.after(8).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retry_at, None);
    assert!(s.status().placement.is_empty());
    assert!(s.status().started_at.is_none());
    assert_eq!(reasons(&fx), ["Requeued"]);
}

#[test]
fn a_job_out_of_retries_fails() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").retries = 2;
    set_phase(&mut s.pods[0], "Failed");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "ReplicaFailed"));
    assert_eq!(s.status().reason.as_deref(), Some("RetriesExhausted"));
    assert_eq!(reasons(&fx), ["Failed"]);
    // The replica still running stops; the one that failed stays for `kubectl logs`.
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
    // Looking again deletes nothing more.
    s.pods.truncate(1);
    assert!(deleted(&s.after(5).tick()).is_empty());
}

#[test]
fn backoff_doubles_up_to_max() {
    assert_eq!(backoff(10, 600, 1), Duration::from_secs(10));
    assert_eq!(backoff(10, 600, 2), Duration::from_secs(20));
    assert_eq!(backoff(10, 600, 4), Duration::from_secs(80));
    assert_eq!(backoff(10, 600, 10), Duration::from_secs(600));
    assert_eq!(backoff(0, 600, 3), Duration::ZERO);
    assert_eq!(backoff(10, 600, 1000), Duration::from_secs(600));
}

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestControllerSyncJob` "too many
/// job failures" (with "new failed pod" before it): each failure is counted, and the failure
/// past the backoff limit fails the job with `BackoffLimitExceeded`. In kubetrain, each
/// failure restarts the gang after a doubling backoff until `maxRetries` are used, and the
/// next fails the job.
#[test]
fn k8s_too_many_job_failures_fail_the_job_once_the_retries_are_used() {
    let mut s = Story::running(2);
    // Failure 1: retry 1 after 10 s.
    exits(&mut s.pods[0], 1);
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(110)));
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    // Failure 2: retry 2 after 20 s.
    exits(&mut s.pods[1], 1);
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 2);
    assert_eq!(s.status().retry_at, Some(at(230)));
    assert_eq!(fx.events[0].action.as_deref(), Some("ReplicaFailed2"));
    s.pods_gone();
    s.after(20).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    // Failure 3: no retries left.
    exits(&mut s.pods[0], 1);
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(
        s.status().retries,
        2,
        "the failure that ends it is not a retry"
    );
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "count ready pods when job
/// fails": with `backoffLimit: 0`, one failed pod fails the job and its two running pods are
/// deleted. In kubetrain, `maxRetries: 0`: the first replica failure fails the job, the
/// running replicas are stopped and the failed one stays for its logs.
#[test]
fn k8s_a_failure_with_no_retries_fails_the_job_and_stops_the_running_pods() {
    let mut s = Story::running(3);
    s.job.spec.max_retries = 0;
    exits(&mut s.pods[2], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(message(&s).contains("llm-worker-2 failed: exit code 1"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "indexed job failed": with
/// `backoffLimit: 0`, index 0 succeeded, index 1 failed and index 2 running, the job fails and
/// only the running pod is deleted. kubetrain stops only what still runs: the replica that
/// succeeded and the one that failed keep their logs.
#[test]
fn k8s_a_failed_job_deletes_only_its_running_pods() {
    let mut s = Story::running(3);
    s.job.spec.max_retries = 0;
    set_phase(&mut s.pods[0], "Succeeded");
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert!(message(&s).contains("llm-worker-1 failed"));
    assert_eq!(deleted(&fx), ["llm-worker-2"]);
}

/// Kubeflow training-operator, `pkg/util/train/train_util_test.go` `TestIsRetryableExitCode`
/// (exit codes 1-3 permanent, 130 and 138 retryable) with `restartPolicy: ExitCode`
/// (`pkg/controller.v1/common/pod.go`): a permanent exit code fails the job at once. kubetrain
/// has no exit-code policy: every non-zero exit is a replica failure, retried up to
/// `maxRetries` (docs/user-guide.md, `maxRetries`).
#[test]
fn kubeflow_a_permanent_exit_code_is_retried_like_any_other_differs() {
    for code in [1, 2, 130, 138] {
        let mut s = Story::running(2);
        exits(&mut s.pods[0], code);
        s.after(10).tick();
        assert_eq!(s.phase(), Phase::Retrying, "exit code {code}");
        assert_eq!(s.status().retries, 1, "exit code {code}");
        assert!(message(&s).contains(&format!("exit code {code}")));
    }
}

/// Volcano, `pkg/controllers/job/job_state_test.go`, `TestRunningState_Execute`
/// "RunningState- RestartJobAction case and Terminating Pods not equal to 0" and
/// `state/restarting.go` (`Restarting` until the pods are terminated, then `Pending`): a
/// restarting job waits for its old pods to go. In kubetrain a Retrying job returns to its
/// queue only once its backoff is over and no pod of the old gang is left, terminating ones
/// included.
#[test]
fn volcano_a_restarting_job_waits_for_its_terminating_pods() {
    let mut s = Story::running(2);
    exits(&mut s.pods[0], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    for p in &mut s.pods {
        p.metadata.deletion_timestamp = Some(at(40));
    }
    // The backoff is over, the pods are still terminating.
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(fx.pod_deletions.is_empty(), "already leaving");
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.pods.truncate(1);
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Requeued"]);
}

/// Kubernetes, `pkg/controller/job/backoff_utils_test.go`, `TestGetRemainingBackoffTime` "one
/// failure; current time == 1 second + failure time" (4 s left of a 5 s backoff) with
/// `TestGetFinishedTime` (the failure's time is its container's `finishedAt`): the backoff runs
/// from the moment the pod failed, not from when the controller looked. In kubetrain, a replica
/// that failed at t = 100 and is first seen at t = 160 (the operator was restarting) has
/// waited out its 10 s backoff already: the retry is due at once (`retryAt` is now, never in
/// the past), where counting from the look would hold it until 170.
#[test]
fn k8s_the_backoff_counts_from_when_the_replica_failed() {
    let mut s = Story::running(2);
    exits_at(&mut s.pods[1], 1, 100);
    s.now = 160;
    s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(160)));

    // seen 4 s after it failed, 6 s of the backoff are left
    let mut s = Story::running(2);
    exits_at(&mut s.pods[1], 1, 100);
    s.now = 104;
    s.tick();
    assert_eq!(s.status().retry_at, Some(at(110)));
    assert!(message(&s).contains("in 6 s"), "{}", message(&s));
}

/// JobSet, `pkg/controllers/failure_policy_test.go`, `TestApplyFailurePolicyRuleAction`
/// "RestartJobSetAndIgnoreMaxRestarts action does not count toward max restarts": with its
/// restarts all used, a JobSet whose failure matches such a rule restarts, and never fails for
/// it. kubetrain restarts the gang without counting when the platform stopped a replica, even
/// with every retry used; but only `max_infrastructure_retries` times in the job's life
/// (`lifecycle::Settings`: "How many infrastructure failures are retried without counting",
/// 10 by default, `controller::context::Settings`): past that, the failure counts, and with no
/// retries left the job fails.
#[test]
fn jobset_a_restart_that_ignores_the_limit_differs() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").retries = 2;
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 2);
    assert_eq!(s.status().infrastructure_retries, 1);

    // The platform's allowance (3 in these stories) is used up: the loss counts.
    let mut s = Story::running(2);
    let st = s.job.status.as_mut().expect("status");
    st.retries = 2;
    st.infrastructure_retries = 3;
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(message(&s).contains("node n1 is not ready"));
}

/// Kubernetes, `pkg/controller/job/backoff_utils_test.go`, `TestGetRemainingBackoffTime`
/// "three failures; current time and failure time are same" (20 s of a 5 s base), "eight
/// failures; ... backoff not exceeding maxBackoff" (640 s) and "nine failures; ... backoff
/// exceeding maxBackoff" (700 s, the cap): the backoff doubles with each failure up to its
/// maximum. In kubetrain, with `backoff: {initialSeconds: 5, maxSeconds: 700}`, retry 3 waits
/// 20 s, retry 8 640 s and retry 9 700 s.
#[test]
fn k8s_the_backoff_doubles_up_to_its_cap() {
    for (used, wait) in [(2, 20), (7, 640), (8, 700)] {
        let mut s = Story::running(2);
        s.job.spec.max_retries = 10;
        s.job.spec.backoff.initial_seconds = 5;
        s.job.spec.backoff.max_seconds = 700;
        s.job.status.as_mut().expect("status").retries = used;
        exits(&mut s.pods[0], 1);
        let fx = s.after(100).tick();
        assert_eq!(s.phase(), Phase::Retrying);
        assert_eq!(s.status().retries, used + 1);
        assert_eq!(
            s.status().retry_at,
            Some(at(100 + wait)),
            "retry {}",
            used + 1
        );
        assert_eq!(fx.requeue, Some(Duration::from_secs(wait as u64)));
    }
}

/// Kubernetes, `backoff_utils_test.go`, `TestGetFinishedTime` "Pod with multiple containers
/// and all containers terminated": a pod's failure time is the latest `finishedAt` of its
/// containers. In kubetrain, a replica whose main container failed at t = 95 and whose other
/// container stopped at t = 100 waits out its 10 s backoff from 100.
#[test]
fn k8s_the_backoff_counts_from_the_last_container_to_finish() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed", "containerStatuses": [
            container("c", json!({"terminated": {"exitCode": 1, "finishedAt": stamp(95)}})),
            container("logs", json!({"terminated": {"exitCode": 0, "finishedAt": stamp(100)}})),
        ]}),
    );
    s.now = 104;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retry_at, Some(at(110)));
    assert_eq!(fx.requeue, Some(Duration::from_secs(10)));
}

/// Kubernetes, `backoff_utils_test.go`, `TestGetFinishedTime` "Pod with init container and all
/// containers terminated" (init containers count: a sidecar stops after the main container)
/// with `TestGetRemainingBackoffTime` "one failure; current time == expected backoff time + 1
/// Second" (nothing left to wait): the backoff runs from when the pod's last container,
/// init containers included, finished. In kubetrain, a replica whose init container failed at
/// t = 100 (its main container never started) and that the operator first sees at t = 160
/// (it was restarting) has waited out its 10 s backoff: the retry is due at once. Likewise a
/// sidecar (restartable init container) that stopped at t = 100, after the main container
/// failed at t = 99: the backoff runs from 100.
#[test]
fn k8s_the_backoff_counts_from_an_init_containers_finish() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed",
               "initContainerStatuses": [
                   container("setup", json!({"terminated": {"exitCode": 1, "finishedAt": stamp(100)}}))],
               "containerStatuses": [
                   container("c", json!({"waiting": {"reason": "PodInitializing"}}))]}),
    );
    s.now = 160;
    s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(message(&s).contains("exit code 1"), "{}", message(&s));
    assert_eq!(s.status().retry_at, Some(at(160)), "waited out already");

    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed",
               "initContainerStatuses": [
                   container("sidecar", json!({"terminated": {"exitCode": 0, "finishedAt": stamp(100)}}))],
               "containerStatuses": [
                   container("c", json!({"terminated": {"exitCode": 1, "finishedAt": stamp(99)}}))]}),
    );
    s.now = 100;
    s.tick();
    assert_eq!(
        s.status().retry_at,
        Some(at(110)),
        "from the sidecar's stop"
    );
}

/// Kubernetes, `backoff_utils_test.go`, `TestGetFinishedTime` "fallback to
/// PodReady.LastTransitionTime when status of the condition is False": a failed pod whose
/// terminated container has no `finishedAt` failed when it stopped being ready. In kubetrain,
/// such a replica that stopped being ready at t = 100 and is seen at t = 160 has waited out
/// its 10 s backoff: the retry is due at once.
#[test]
fn k8s_a_failure_without_finish_time_counts_from_when_the_pod_stopped_being_ready() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed",
               "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed",
                               "lastTransitionTime": stamp(100)}],
               "containerStatuses": [container("c", json!({"terminated": {"exitCode": 1}}))]}),
    );
    s.now = 160;
    s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retry_at, Some(at(160)), "waited out already");
}

/// Volcano, `job_state_test.go`, `TestRestartingState_Execute` "RestartingState- RetryCount is
/// equal to or greater than MaxRetry" (`state/restarting.go`: a restarting job whose
/// `RetryCount` has reached `MaxRetry` goes to `Failed` instead of running again): the limit
/// is checked when the job restarts, against the spec as it is then. kubetrain lets
/// `maxRetries` change at any time but while the job runs (docs/user-guide.md, "Changing a
/// job"); a job waiting out the backoff of retry 2 of 2, whose owner lowers `maxRetries` to 1,
/// has used more retries than it now allows: it fails, and does not go back to its queue to
/// run a third time ("retry 2 of 1", as it did before).
#[test]
fn volcano_a_restart_past_a_lowered_retry_limit_fails_the_job() {
    let mut s = Story::running(2);
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    s.pods_gone();
    s.after(10).tick();
    readmitted(&mut s, 2);
    exits(&mut s.pods[1], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 2);
    s.pods_gone();
    s.job.spec.max_retries = 1;
    let fx = s.after(20).tick();
    assert_eq!(s.phase(), Phase::Failed, "{}", message(&s));
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(!reasons(&fx).contains(&"Requeued"));
}

/// Kueue, `pkg/controller/core/workload_controller_test.go`, `TestReconcile` "trigger
/// deactivation of workload when reaching backoffLimitCount": a workload whose pods are not
/// ready within the `waitForPodsReady` timeout, with its requeues used up
/// (`requeuingStrategy.backoffLimitCount`), is deactivated, not requeued again. In kubetrain,
/// a gang with `maxRetries: 0` one of whose replicas cannot pull its image is stopped
/// `startTimeout` (600 s) after its admission and fails, naming why; its live pods are
/// deleted.
#[test]
fn kueue_a_gang_never_ready_fails_once_its_retries_are_used() {
    let mut s = Story::new(2);
    s.job.spec.max_retries = 0;
    s.tick();
    s = s.admitted("Running");
    status(
        &mut s.pods[0],
        json!({"phase": "Pending", "containerStatuses": [
            container("c", json!({"waiting": {"reason": "ImagePullBackOff",
                                               "message": "Back-off pulling image \"x\""}}))]}),
    );
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().admitted_at, Some(at(0)));
    let fx = s.after(599).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty());
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed, "{}", message(&s));
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(message(&s).contains("ImagePullBackOff"), "{}", message(&s));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kueue, `pkg/controller/core/workload_controller_requeue_test.go`, `TestReconcileRequeue`
/// "increment re-queue count" (the fourth eviction for the PodsReady timeout waits
/// 10 s × 2^(4-1) = 80 s before its requeue) and "wait time should be limited to
/// backoffMaxSeconds" (the eleventh would wait 10240 s: 7200 s, the cap). In kubetrain a gang
/// stopped by the operator's start timeout is a counted retry and waits the job's own doubling
/// backoff: with `backoff: {initialSeconds: 10, maxSeconds: 7200}`, retry 4 waits 80 s and
/// retry 11 waits 7200 s.
#[test]
fn kueue_a_start_timeout_retry_waits_the_doubling_backoff_up_to_its_cap() {
    for (used, wait) in [(3, 80), (10, 7200)] {
        let mut s = Story::new(2);
        s.job.spec.max_retries = 100;
        s.job.spec.backoff.max_seconds = 7200;
        s.tick();
        s = s.admitted("Pending");
        s.tick();
        assert_eq!(s.phase(), Phase::Starting);
        s.job.status.as_mut().expect("status").retries = used;
        let fx = s.after(600).tick();
        assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
        assert_eq!(s.status().retries, used + 1);
        assert_eq!(s.status().retry_at, Some(at(600 + wait)));
        assert_eq!(fx.requeue, Some(Duration::from_secs(wait as u64)));
        assert!(
            message(&s).contains("not running 600 s after admission"),
            "{}",
            message(&s)
        );
        assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    }
}

/// Kubernetes, `pkg/controller/job/backoff_utils_test.go`, `TestNewBackoffRecord` "Empty backoff
/// store, two failures followed by success" (`failuresAfterLastSuccess: 0`) and "Empty backoff
/// store, two failures, one success and two more failures" (2), with `TestControllerSyncJob`
/// "failed + succeeded pods: reset backoff delay": a pod's success resets the back-off, so the
/// next failure waits the base delay again. kubetrain doubles the backoff with each retry of
/// the job (docs/user-guide.md, `maxRetries`, `backoff`: "restarts the whole gang after
/// `backoff.initialSeconds` ..., doubling up to `backoff.maxSeconds` ..., at most `maxRetries`
/// times"): a replica that succeeded in the run after retry 1 does not reset it, and retry 2
/// waits 20 s.
#[test]
fn k8s_a_success_between_failures_does_not_reset_the_backoff_differs() {
    let mut s = Story::running(2);
    exits_at(&mut s.pods[0], 1, 100);
    s.after(100).tick();
    assert_eq!(s.status().retry_at, Some(at(110)));
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    succeeds_at(&mut s.pods[0], 150);
    s.now = 190;
    s.tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    exits_at(&mut s.pods[1], 1, 200);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 2);
    assert_eq!(s.status().retry_at, Some(at(220)));
    assert!(
        message(&s).contains("Retry 2 of 2 in 20 s"),
        "{}",
        message(&s)
    );
    assert_eq!(fx.requeue, Some(Duration::from_secs(20)));
}

/// Kubernetes, `backoff_utils_test.go`, `TestGetFinishedTime` "fallback to deletionTimestamp,
/// decremented by grace period" (no container finish time and no `Ready=False`: the pod failed
/// when its deletion was asked, its `deletionTimestamp` less `deletionGracePeriodSeconds`) and
/// "skip fallback to PodReady.LastTransitionTime when status of the condition is True". In
/// kubetrain the backoff runs from when the replica failed (docs/user-guide.md, "Changing a
/// job"; `finished_at`: "else when it was deleted"): a replica that exited 1 with no finish
/// time recorded, whose pod's deletion was asked at t = 100 with a 30 s grace period
/// (`deletionTimestamp` t = 130), seen at t = 105, is retried 10 s after t = 100, not 10 s
/// after it was seen.
#[test]
fn k8s_a_failure_timed_by_its_deletion_counts_from_when_the_deletion_was_asked() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
                 "state": {"terminated": {"exitCode": 1}}}]}),
    );
    s.pods[1].metadata.deletion_timestamp = Some(at(130));
    s.pods[1].metadata.deletion_grace_period_seconds = Some(30);
    s.after(105).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(110)));
}
