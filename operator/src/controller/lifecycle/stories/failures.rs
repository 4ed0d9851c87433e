//! How a failed replica is judged and told: its exit code, `OOMKilled`, its pod's reason and
//! message, a failed init container, a container that is only restarting; the whole gang restarts.

use super::*;

#[test]
fn failures_are_classified() {
    let oom = member(
        json!({"metadata": {"name": "a"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&oom),
        Some(Failure::Replica {
            pod: "a".into(),
            reason: "OOMKilled".into()
        })
    );
    let exit = member(
        json!({"metadata": {"name": "b"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 3}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&exit),
        Some(Failure::Replica {
            pod: "b".into(),
            reason: "exit code 3".into()
        })
    );
    let lost = member(
        json!({"metadata": {"name": "c"}, "status": {"phase": "Failed", "reason": "NodeLost"}}),
    );
    assert!(matches!(
        pod_failure(&lost),
        Some(Failure::Infrastructure { .. })
    ));
    // Refused or evicted by the kubelet: the node's doing, not the job's.
    for reason in [
        "Evicted",
        "OutOfnvidia.com/gpu",
        "NodeAffinity",
        "UnexpectedAdmissionError",
    ] {
        let refused = member(json!({"metadata": {"name": "d"}, "status": {
            "phase": "Failed", "reason": reason, "message": "Pod was rejected"}}));
        assert!(
            matches!(pod_failure(&refused), Some(Failure::Infrastructure { ref reason, .. }) if reason.contains("Pod was rejected")),
            "{reason}"
        );
    }
    let app_error = member(json!({"metadata": {"name": "f"}, "status": {
        "phase": "Failed", "reason": "DeadlineExceeded"}}));
    assert!(matches!(
        pod_failure(&app_error),
        Some(Failure::Replica { .. })
    ));
    let running = member(json!({"metadata": {"name": "e"}, "status": {"phase": "Running"}}));
    assert_eq!(pod_failure(&running), None);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "WQ job all finished despite
/// one failure": a work-queue Job with one pod succeeded and one failed is `Complete`. A
/// kubetrain gang is one distributed program, and it succeeds only when every deciding
/// replica succeeded (docs/user-guide.md, `requiredForCompletion`): a failed replica restarts
/// the gang as a counted retry.
#[test]
fn k8s_one_success_and_one_failure_restart_the_gang_differs() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kubeflow training-operator, `pkg/controller.v1/mpi/mpijob_controller_test.go` "Test MPIJob
/// with failed launcher Pod" with the restart handling of `pytorchjob_controller.go`
/// `UpdateJobStatus` ("is restarting because replica(s) failed"): a failed replica restarts
/// the job. In kubetrain a failing non-deciding worker restarts the whole gang, counted, as
/// a failing launcher does.
#[test]
fn kubeflow_a_failed_worker_of_a_launcher_job_restarts_the_gang() {
    let mut s = running_gang(&[("launcher", 1, true), ("worker", 2, false)]);
    exits(pod(&mut s, "llm-worker-1"), 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(message(&s).contains("llm-worker-1 failed: exit code 1"));
    assert_eq!(
        deleted(&fx),
        ["llm-launcher-0", "llm-worker-0", "llm-worker-1"]
    );
}

/// Kubernetes, `job_controller_test.go`, `TestSyncJobWithJobPodFailurePolicy` "running pod
/// should not result in job fail based on OnExitCodes": a pod still `Running` whose main
/// container terminated with a non-zero exit code is not a failure yet (another container
/// runs). In kubetrain, a replica is judged by its pod's phase: the gang runs on until the
/// pod fails, and then the failure counts.
#[test]
fn k8s_a_running_pod_with_a_failed_container_is_not_yet_a_failure() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[0],
        json!({"phase": "Running", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"terminated": {"exitCode": 5}}},
            {"name": "sidecar", "ready": true, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"running": {}}}
        ]}),
    );
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().retries, 0);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert!(fx.events.is_empty());
    // The pod fails: now it counts.
    exits(&mut s.pods[0], 5);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(message(&s).contains("llm-worker-0 failed: exit code 5"));
}

/// Kubernetes, `job_controller_test.go`, `TestGetNewFinshedPods` "deleted pods": a pod that is
/// being deleted still counts by its phase (a `Failed` one as a failure, a `Succeeded` one as a
/// success). In kubetrain, a replica that exited 1 and whose pod is then deleted (`kubectl
/// delete pod` on the crashed replica, the pod garbage collector) before the operator's next
/// look failed by the job's fault: a counted retry, after the backoff, its exit code in the
/// message, not "the pod was removed, not the job's fault".
#[test]
fn k8s_a_failed_replica_whose_pod_is_being_deleted_still_counts() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    s.pods[1].metadata.deletion_timestamp = Some(at(10));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1, "the job's fault");
    assert_eq!(s.status().infrastructure_retries, 0);
    assert_eq!(s.status().retry_at, Some(at(20)), "after the backoff");
    assert!(message(&s).contains("llm-worker-1 failed: exit code 1"));
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
}

/// Kubernetes, `job_controller_test.go`, `TestSyncJobWithJobPodFailurePolicy` "fail job based
/// on OnExitCodes for InitContainer": a pod that failed because its init container exited 5 is
/// judged, and reported, by that exit code ("Container init-container ... failed with exit
/// code 5"). kubetrain's failure message names the pod and its exit code
/// (docs/troubleshooting.md, `Retrying`): a replica whose init container failed (its main
/// container never started) should say `exit code 5`, not only "failed".
#[test]
fn k8s_a_failed_init_container_is_reported_with_its_exit_code() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[0],
        json!({"phase": "Failed",
            "initContainerStatuses": [
                {"name": "fetch-data", "ready": false, "restartCount": 0, "image": "x",
                 "imageID": "", "state": {"terminated": {"exitCode": 5, "reason": "Error"}}}],
            "containerStatuses": [
                {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
                 "state": {"waiting": {"reason": "PodInitializing"}}}]}),
    );
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(message(&s).contains("exit code 5"), "{}", message(&s));
}

/// JobSet, `test/integration/controller/jobset_controller_test.go`, "job succeeds after one
/// failure": one job completes while another fails; the JobSet restarts as a whole and
/// completes once every job has completed in the new run. In kubetrain the replica that had
/// exited 0 before the failure (and was recorded in `succeededReplicas`) must succeed again in
/// the restarted gang before the job succeeds.
#[test]
fn jobset_a_gang_restarted_after_one_failure_needs_every_replica_again() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    assert!(s.status().succeeded_replicas.is_empty());
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(10).tick();
    assert_eq!(
        s.phase(),
        Phase::Running,
        "replica 0 has not succeeded in this run"
    );
    set_phase(&mut s.pods[0], "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(s.status().retries, 1);
}

/// Volcano, `pkg/controllers/job/job_state_test.go`, `TestPendingState_Execute` "PendingState-
/// RestartJobAction case With terminating pod count equal to zero" (`state/pending.go`: the
/// restart kills the job's pods and increments `RetryCount`): a job that has not started yet
/// restarts, counted, when a pod fails. In kubetrain, a replica that fails as it starts (its
/// container could not be started) restarts the gang that never ran, as a counted retry after
/// the backoff.
#[test]
fn volcano_a_replica_failing_before_the_gang_starts_restarts_it() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().started_at.is_none());
    status(
        &mut s.pods[1],
        json!({"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"terminated": {"exitCode": 128, "reason": "StartError"}}}
        ]}),
    );
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(15)));
    assert!(message(&s).contains("llm-worker-1 failed: exit code 128"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kubernetes, `pkg/controller/job/pod_failure_policy_test.go`, `TestMatchPodFailurePolicy`
/// "default - do not match condition with status=False" and "ignore rule does not match when
/// status for pattern is True, but actual False": only `DisruptionTarget=True` says the
/// platform stopped the pod; a failed pod whose `DisruptionTarget` is `False` (or `Unknown`) is
/// the job's failure and counts. In kubetrain such a replica failure is a counted retry, not an
/// infrastructure failure.
#[test]
fn k8s_a_failure_whose_disruption_target_is_not_true_counts() {
    for condition in ["False", "Unknown"] {
        let mut s = Story::running(2);
        status(
            &mut s.pods[1],
            json!({"phase": "Failed",
                   "conditions": [{"type": "DisruptionTarget", "status": condition,
                                   "reason": "PreemptionByScheduler"}],
                   "containerStatuses": [container("c", json!({"terminated": {"exitCode": 1}}))]}),
        );
        let fx = s.after(10).tick();
        assert_eq!(s.phase(), Phase::Retrying, "{condition}");
        assert_eq!(s.status().retries, 1, "{condition}");
        assert_eq!(s.status().infrastructure_retries, 0, "{condition}");
        assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
        assert_eq!(reasons(&fx), ["ReplicaFailed"]);
        assert!(message(&s).contains("llm-worker-1 failed: exit code 1"));
    }
}

/// Kubernetes, `pod_failure_policy_test.go`, `TestMatchPodFailurePolicy` "successful
/// containers are skipped by the rules" (an init container and a support container exited 0,
/// the main one 111), "pod failure policy with NotIn operator and value 0" (the main container
/// 1, a support container 0), "count rule matched for exit codes" (a container with no state
/// before one that exited 2) and "ignore rule matched on negative exit codes - needed for
/// Windows support": the failure is the container that exited non-zero, whatever its place.
/// In kubetrain the retry's message names that exit code, and every such failure counts.
#[test]
fn k8s_the_failure_names_the_container_that_failed() {
    let cases = [
        (
            json!({"phase": "Failed",
                   "initContainerStatuses": [container("init", json!({"terminated": {"exitCode": 0}}))],
                   "containerStatuses": [
                       container("main", json!({"terminated": {"exitCode": 111}})),
                       container("support", json!({"terminated": {"exitCode": 0}}))]}),
            "exit code 111",
        ),
        (
            json!({"phase": "Failed", "containerStatuses": [
                       container("support", json!({"terminated": {"exitCode": 0}})),
                       container("main", json!({"terminated": {"exitCode": 1}}))]}),
            "exit code 1.",
        ),
        (
            json!({"phase": "Failed", "containerStatuses": [
                       container("foo", json!({})),
                       container("bar", json!({"terminated": {"exitCode": 2}}))]}),
            "exit code 2.",
        ),
        (
            json!({"phase": "Failed", "containerStatuses": [
                       container("c", json!({"terminated": {"exitCode": -1_073_741_510}}))]}),
            "exit code -1073741510",
        ),
    ];
    for (pod_status, says) in cases {
        let mut s = Story::running(2);
        status(&mut s.pods[0], pod_status);
        s.after(10).tick();
        assert_eq!(s.phase(), Phase::Retrying, "{says}");
        assert_eq!(s.status().retries, 1, "{says}");
        assert!(
            message(&s).contains(&format!("llm-worker-0 failed: {says}")),
            "{}",
            message(&s)
        );
    }
}

/// Kubeflow training-operator, `pkg/controller.v1/common/job_test.go`, `TestPastBackoffLimit`
/// "backOffLimit is 0" (a running and a succeeded pod are not past a limit of 0), with Volcano
/// `job_state_test.go` `TestRunningState_Execute` "RunningState- Default case and Total is not
/// equal to failed+succeeded" (one of two done: still running): a replica that succeeded is no
/// failure. In kubetrain, with `maxRetries: 0`, one replica done and one running leave the job
/// running, nothing stopped; the done replica is recorded after a while, and the job succeeds
/// when the other one is done.
#[test]
fn kubeflow_a_succeeded_replica_is_no_failure_with_no_retries() {
    let mut s = Story::running(2);
    s.job.spec.max_retries = 0;
    set_phase(&mut s.pods[0], "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
    assert!(fx.events.is_empty());
    s.after(40).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    assert_eq!(s.status().retries, 0);
    set_phase(&mut s.pods[1], "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
}

/// MPI Operator, `TestLauncherFailed`: the launcher's two pods failed, each with a reason and a
/// message of its own, and the launcher's Job reached its backoff limit; the MPIJob fails with
/// the latest pod's: reason `BackoffLimitExceeded/FailedReason2`, message "Job has reached the
/// specified backoff limit: second message". In kubetrain, with `maxRetries: 0`,
/// a launcher whose pod failed with a pod-level reason and message (no container exit code)
/// fails the job, and the failure's message, which names the last failure
/// (docs/troubleshooting.md, `Failed`), should carry both the reason and the pod's message.
#[test]
fn mpi_a_failed_launchers_pod_message_names_the_failure() {
    let mut s = running_gang(&[("launcher", 1, true), ("worker", 2, false)]);
    s.job.spec.max_retries = 0;
    status(
        pod(&mut s, "llm-launcher-0"),
        json!({"phase": "Failed", "reason": "FailedReason2", "message": "second message"}),
    );
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert!(message(&s).contains("FailedReason2"), "{}", message(&s));
    assert!(message(&s).contains("second message"), "{}", message(&s));
}
