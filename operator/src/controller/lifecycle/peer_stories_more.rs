//! More lifecycle cases of peer controllers (the Kubernetes Job controller, Kubeflow's
//! training-operator, JobSet, Kueue, Volcano), told as kubetrain stories, beyond those in
//! `peer_stories.rs`.
//!
//! The same conventions: a case whose answer differs on purpose, as documented, asserts
//! kubetrain's answer and ends in `_differs`; a case kubetrain gets wrong keeps the peer's
//! expectation and is ignored with the bug in one line.

use serde_json::json;

use super::peer_stories::{message, pod, readmitted, running_gang};
use super::stories::{
    Story, annotate, at, deleted, exits, exits_at, reasons, set_phase, stamp, status,
};
use super::*;
use crate::api::annotations::{CHECKPOINT_DONE, CHECKPOINT_REQUESTED, PREEMPTION_REASON};

// Kubernetes Job controller.

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestSyncJobWithJobSuccessPolicy`
/// "job with successPolicy; ... job has SuccessCriteriaMet condition if job meets to
/// successPolicy and some indexes fail": once the indexes that decide success have succeeded,
/// a failure of another index does not fail or restart the job. In kubetrain, a deciding
/// task that succeeds in the same observation as a non-deciding worker fails: the job
/// succeeds, no retry is counted, the worker still running is stopped and the failed one
/// keeps its logs.
#[test]
fn k8s_success_criteria_met_wins_over_a_simultaneous_failure() {
    let mut s = running_gang(&[("master", 1, true), ("worker", 2, false)]);
    set_phase(pod(&mut s, "llm-master-0"), "Succeeded");
    exits(pod(&mut s, "llm-worker-0"), 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 0);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
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

/// Kubernetes, `job_controller_test.go`, `TestSyncJobWithJobPodFailurePolicy` "ignore pod
/// failure based on OnPodConditions, ignored failures delays pod recreation": a pod that failed
/// with `DisruptionTarget=True` and is still terminating is not counted, and no replacement is
/// created while it is there. In kubetrain, the gang restarts without counting a retry and
/// without backoff, but returns to its queue only once that pod is gone.
#[test]
fn k8s_an_ignored_failure_waits_for_its_pod_to_go_before_the_restart() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[1],
        json!({"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
             "message": "The node had condition: [MemoryPressure]."}
        ]}),
    );
    s.pods[1].metadata.deletion_timestamp = Some(at(10));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert_eq!(
        deleted(&fx),
        ["llm-worker-0"],
        "the other is already leaving"
    );
    // llm-worker-0 is gone.
    s.pods.remove(0);
    // The disrupted pod is still terminating: no new gang yet.
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert_eq!(s.status().retries, 0);
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

/// Kubernetes, `job_controller_test.go`, `TestGetNewFinshedPods` "deleted pods" (the `Succeeded`
/// pod with a deletion timestamp counts as succeeded). In kubetrain, a replica that exited 0
/// while the others run, and whose finished pod is being deleted before `succeededReplicas`
/// records it (within 30 s), has done its part all the same: its pod still says `Succeeded`.
/// The job runs on and succeeds when the others do; nothing restarts.
#[test]
fn k8s_a_succeeded_replica_whose_pod_is_being_deleted_still_counts() {
    let mut s = Story::running(2);
    status(
        &mut s.pods[0],
        json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(10)}}}
        ]}),
    );
    s.pods[0].metadata.deletion_timestamp = Some(at(12));
    let fx = s.after(12).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert_eq!(s.status().infrastructure_retries, 0);
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "suspending a job with
/// satisfied expectations": suspending a Job deletes its active pods at once (pending pods are
/// active), with nothing lost. kubetrain asks a running gang to checkpoint first (docs/user-
/// guide.md, `suspend`), but a gang that never started (its pods still `Pending`, pulling
/// images) has nothing to save and cannot acknowledge: it should be stopped without waiting
/// out `checkpoint.gracePeriodSeconds`, and no work should be reported lost.
#[test]
fn k8s_suspending_a_gang_that_never_started_loses_no_work() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().started_at.is_none(), "never started");
    s.job.spec.suspend = true;
    let first = s.after(5).tick();
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(5));
    let second = s.after(1).tick();
    let mut stopped: Vec<&str> = deleted(&first);
    stopped.extend(deleted(&second));
    stopped.sort_unstable();
    stopped.dedup();
    assert_eq!(
        stopped,
        ["llm-worker-0", "llm-worker-1"],
        "nothing ran: nothing to checkpoint"
    );
    // Whatever happens next, no work was lost.
    s.after(40).tick();
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .map_or(0, |r| r.lost_gpu_seconds),
        0
    );
    assert!(!message(&s).contains("lost"), "{}", message(&s));
    assert_eq!(
        message(&s),
        "Suspended before every replica ran: nothing to checkpoint.",
        "no checkpoint was taken"
    );
    assert!(fx.events.iter().all(|e| e.type_ == EventType::Normal));
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "resuming a suspended job"
/// (`Suspended=False`, reason `JobResumed`): a Job resumed by its owner says it was resumed.
/// In kubetrain, a job suspended and resumed again before it acknowledged the checkpoint (the
/// owner changed their mind) may still stop, but it was not preempted: `preemptions` stays 0,
/// it gets no `Requeued` (preemption) Event and its message does not say it was preempted.
#[test]
fn k8s_resuming_before_the_suspension_is_done_is_no_preemption() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    // The owner resumes it at once; the job had already started saving.
    s.job.spec.suspend = false;
    s.after(5).tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(16));
    s.after(1).tick();
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().preemptions, 0, "nobody preempted it");
    assert!(!reasons(&fx).contains(&"Requeued"), "{:?}", reasons(&fx));
    assert!(!message(&s).contains("Preempted"), "{}", message(&s));
}

/// Kubernetes, `job_controller.go` `syncJob` (the backoff-limit check precedes the
/// suspension's) with `TestControllerSyncJob` "count ready pods when job fails" (`backoffLimit:
/// 0`, one failed pod: the Job fails): a failure already there when `suspend` is set still
/// counts. kubetrain already lets a completion go before a suspension
/// (`peer_stories::k8s_a_job_whose_pods_all_succeeded_completes_even_if_suspended`); in the
/// same way a job with no retries left whose replica has failed when it is suspended should
/// fail, not be suspended with its failure forgotten (and run again, uncounted, once resumed).
#[test]
fn k8s_a_failure_before_the_suspension_still_counts() {
    let mut s = Story::running(2);
    s.job.spec.max_retries = 0;
    exits(&mut s.pods[0], 1);
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(message(&s).contains("llm-worker-0 failed: exit code 1"));
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
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

// Kubeflow training-operator.

/// Kubeflow training-operator, `pkg/controller.v1/common/job_test.go`,
/// `TestDeletePodsAndServices` "Suspended job and cleanPodPolicy is None": a suspended job's
/// pods are all deleted, the finished ones too, whatever the clean-pod policy. In kubetrain, a
/// suspension stops the whole gang, a replica that already exited 0 included; resumed, every
/// replica runs again (none is carried over as done).
#[test]
fn kubeflow_a_suspended_job_removes_its_finished_pods_too() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(
        fx.checkpoint_requests,
        ["llm-worker-1"],
        "only the live one"
    );
    annotate(&mut s.pods[1], CHECKPOINT_REQUESTED, &stamp(20));
    annotate(&mut s.pods[1], CHECKPOINT_DONE, &stamp(22));
    let fx = s.after(2).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);

    s.job.spec.suspend = false;
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    assert!(s.status().succeeded_replicas.is_empty());
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "replica 0 runs again");
}

// JobSet.

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

/// JobSet, `test/integration/controller/jobset_controller_test.go`, "success policy 'any' with
/// replicated job specified": one of the three jobs of the targeted replicated job completing
/// completes the JobSet. kubetrain has no "any" success policy: the job succeeds when every
/// replica of every `requiredForCompletion` task has exited 0 (docs/user-guide.md, `tasks[]`),
/// so one replica of three succeeding leaves it running.
#[test]
fn jobset_one_replica_of_a_deciding_task_is_not_enough_differs() {
    let mut s = running_gang(&[("driver", 1, false), ("worker", 3, true)]);
    set_phase(pod(&mut s, "llm-worker-1"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty());
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

/// JobSet, `pkg/controllers/jobset_controller_test.go`, `TestIsJobFinished` "suspended" and
/// "failure target" (neither is finished), with `ttl_after_finished_test.go` "jobset running,
/// TTL set" (not deleted): only a finished job is cleaned up. In kubetrain, a suspended job and
/// a job waiting out a retry's backoff are not finished, and `ttlSecondsAfterFinished: 0` does
/// not delete them.
#[test]
fn jobset_a_suspended_or_retrying_job_is_not_finished_for_its_ttl() {
    let mut s = Story::new(1);
    s.job.spec.ttl_seconds_after_finished = Some(0);
    s.job.spec.suspend = true;
    s.tick();
    assert_eq!(s.phase(), Phase::Suspended);
    let fx = s.after(1000).tick();
    assert!(!fx.delete_job);

    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(0);
    exits(&mut s.pods[0], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(!fx.delete_job);
    s.pods_gone();
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(!fx.delete_job);
}

// Kueue.

/// Kueue, `pkg/controller/core/workload_controller_requeue_test.go`, `TestReconcileRequeue`
/// "increment re-queue count" (with `workload_controller_test.go` "workload with Admitted=True,
/// no PodsReady; timeout exceeded"): an admitted workload whose pods are not all ready within
/// the `waitForPodsReady` timeout (5 min by default) is evicted, its pods removed and its quota
/// released, and it is requeued with a backoff, without failing. In kubetrain, a gang one of
/// whose replicas cannot start (its image cannot be pulled) holds its GPUs; ten minutes on it
/// should have been stopped and sent back to its queue (or its backoff), not kept `Running`.
#[test]
fn kueue_a_gang_whose_pods_never_become_ready_is_requeued() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Running");
    status(
        &mut s.pods[0],
        json!({"phase": "Pending", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"waiting": {"reason": "ImagePullBackOff",
                                   "message": "Back-off pulling image \"x\""}}}
        ]}),
    );
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    let mut stopped = Vec::new();
    for _ in 0..20 {
        let fx = s.after(30).tick();
        stopped.extend(deleted(&fx).into_iter().map(str::to_string));
    }
    assert_eq!(s.now, 600);
    assert_ne!(s.phase(), Phase::Running, "{}", message(&s));
    assert_ne!(s.phase(), Phase::Failed);
    assert_eq!(
        s.status().retries,
        1,
        "counted: the image may never be pulled"
    );
    assert!(message(&s).contains("ImagePullBackOff"), "{}", message(&s));
    assert!(stopped.contains(&"llm-worker-0".to_string()));
    assert!(stopped.contains(&"llm-worker-1".to_string()));
}

// Volcano.

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
