//! A seventh set of peer controllers' cases, about how a gang starts, how its failures are
//! timed, and what a reconcile that is redone or whose pod deletions fail does, told as
//! kubetrain stories. Sources: MPI Operator (`kubeflow/mpi-operator`,
//! `pkg/controller/mpi_job_controller_test.go`: `TestLauncherActiveWorkerNotReady`,
//! `TestLauncherActiveWorkerReady`, `TestLauncherSucceeded`, `TestLauncherFailed`,
//! `TestSuspendedRunningMPIJob`; the same launcher and worker cases of Kubeflow's
//! training-operator v1.9, `pkg/controller.v1/mpi/mpijob_controller_test.go`), Kueue
//! (`pkg/controller/jobs/job/job_controller_test.go` `TestPodsReady` and `TestReconciler`'s
//! PodsReady cases, `pkg/controller/core/workload_controller_requeue_test.go`
//! `TestReconcileRequeue`, `pkg/controller/core/workload_controller_test.go`
//! `TestAdmittedNotReadyWorkload`), the Kubernetes Job controller
//! (`pkg/controller/job/job_controller_test.go` `TestSyncJobUpdateRequeue`,
//! `TestSyncJobExpectations` and `TestControllerSyncJob` cases not yet ported;
//! `pkg/controller/job/backoff_utils_test.go` `TestNewBackoffRecord` and `TestGetFinishedTime`
//! cases not yet ported), Volcano (`pkg/controllers/job/job_state_test.go`
//! `TestCompletingState_Execute`) and JobSet (`pkg/controllers/jobset_controller_test.go`
//! `TestUpdateConditions`, `pkg/controllers/startup_policy_test.go`, and
//! `test/integration/controller/jobset_controller_test.go` "startupPolicy InOrder; ..." and
//! "jobset restarting condition transitions"). An MPIJob's launcher is a deciding task, its
//! workers a task not `requiredForCompletion`; Kueue's `PodsReady` is kubetrain's start (every
//! replica running, `status.startedAt`, `Running=True`), its `waitForPodsReady` timeout the
//! operator's start timeout; Volcano's `Completing` and JobSet's `Restarting` are told by
//! kubetrain's phases and its `Running` condition.
//!
//! The same conventions as `peer_stories.rs`: a case whose answer differs on purpose, as
//! documented, asserts kubetrain's answer and ends in `_differs`; a case kubetrain gets wrong
//! keeps the peer's expectation and is ignored with the gap in one line. Three were ported as
//! gaps and are fixed: a replica recorded as done whose pod is then removed now counts towards
//! the gang's start (it never counted as started, so a later preemption skipped its
//! checkpoint); a replica that failed with a pod reason and message but no exit code keeps the
//! message; and a failure timed by its pod's deletion counts from when the deletion was asked,
//! not from the end of its grace period.
//!
//! Not ported, already told: `TestControllerSyncJob` "too many active pods" and "more active
//! pods than parallelism" (a pod beyond the gang restarts it in its new shape:
//! `stories::a_gang_whose_tasks_changed_restarts_in_the_new_shape`), Kueue's "when workload is
//! evicted due to pods ready timeout, job gets suspended and quota is unset"
//! (`kueue_a_gang_whose_pods_never_become_ready_is_requeued`), MPI Operator's
//! `TestShutdownWorker` (`kubeflow_an_mpi_job_succeeds_with_its_launcher_and_stops_its_workers`),
//! `TestResumeMPIJob` and `TestResumeMPIJobClearsStartTime`
//! (`kubeflow_a_resumed_job_runs_again_with_a_new_start`), `TestCreateSuspendedMPIJob`
//! (`kubeflow_a_job_created_suspended_starts_only_once_resumed`), Kubeflow's
//! `TestDeletePodsAndServices` "Suspended job and cleanPodPolicy is Running" (as its `None`
//! twin, `kubeflow_a_suspended_job_removes_its_finished_pods_too`), Kueue's "should keep the
//! WorkloadRequeued condition until the WaitForPodsReady backoff expires"
//! (`kueue_a_job_waiting_out_its_backoff_is_not_admitted`), Volcano's `TestAddPodFunc` "AddPod
//! Success when pod is terminating" and `TestUpdatePodFunc` "UpdatePod keeps terminating pod in
//! cache" (a terminating pod still counts: `volcano_a_restarting_job_waits_for_its_terminating_pods`).
//! Not ported, not the lifecycle's: a job being deleted (`TestControllerSyncJob` "deleting job",
//! `TestSyncJobDeleted`, Kueue's "job is deleted with FinishOrphanedWorkloads ..."): the
//! reconciler does not run the lifecycle for a job being deleted, and owner references take its
//! pods; orphan adoption and controller references (`TestWorkerNotControlledByUs`,
//! `TestLauncherNotControlledByUs`, the Job controller's pod claiming): the gang is the pods
//! labelled with the job, which only the scheduler creates; the controller's own API backoff
//! (`TestJobApiBackoffReset`) and the Job controller's pod finalizers: the lifecycle is a pure
//! function of observed state and puts no finalizer on pods; Kueue's `reclaimablePods` (`TestReclaimablePods`): the scheduler,
//! not the lifecycle, counts what a finished replica frees; Kueue's `recoveryTimeout` ("recovery
//! time should be limited to recoveryTimeout") and Volcano's "running back to pending" states:
//! a gang is never left with a replica being replaced, it restarts as a whole; the Job
//! controller's `ready` counter ("count ready pods ..."): kubetrain keeps no such count;
//! `TestGetFinishedTime` "fallback to creationTimestamp": kubetrain documents the containers'
//! finish and the `Ready=False` transition (docs/user-guide.md, "Changing a job"), falls back
//! to the pod's deletion, and counts a failure with none of them from when it is seen (a pod's
//! creation says nothing of when it failed); Kubeflow's queue immutability
//! ("Shouldn't be updated resources if spec.runPolicy.schedulingPolicy.queue is changed"): an
//! admission matter, not the lifecycle's.

use std::sync::Arc;

use serde_json::json;

use super::peer_stories::{gang_job, message, pod, readmitted, running_gang};
use super::stories::{
    Story, at, deleted, exits, exits_at, reasons, replica, set_phase, stamp, status, succeeds_at,
};
use super::*;
use crate::api::annotations::{
    BONUS_ANNOTATION, CHECKPOINT_DONE, CHECKPOINT_REQUESTED, GPUS_ANNOTATION, INDEX_LABEL,
    RANK_ANNOTATION, TASK_LABEL,
};
use crate::controller::pods::pod_name;
use crate::sched::Gpus;

/// A job of several tasks, admitted at t = 0, every replica's pod in phase `phase`.
fn admitted_gang(tasks: &[(&str, u32, bool)], phase: &str) -> Story {
    let mut s = Story::new(1);
    s.job = gang_job(tasks);
    s.tick();
    let mut rank = 0;
    for (task, replicas, _) in tasks {
        for i in 0..*replicas {
            s.pods.push(
                serde_json::from_value(json!({
                    "metadata": {
                        "name": pod_name("llm", task, i), "namespace": "team",
                        "creationTimestamp": stamp(0),
                        "labels": {TASK_LABEL: task, INDEX_LABEL: i.to_string()},
                        "annotations": {GPUS_ANNOTATION: rank.to_string(),
                                        RANK_ANNOTATION: rank.to_string()}
                    },
                    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
                    "status": {"phase": phase}
                }))
                .expect("pod"),
            );
            rank += 1;
        }
    }
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    s
}

fn running_is_true(s: &Story) -> bool {
    conditions::is_true(&s.status().conditions, ConditionType::Running)
}

// MPI Operator (and Kubeflow's MPIJob).

/// MPI Operator, `pkg/controller/mpi_job_controller_test.go`, `TestLauncherActiveWorkerNotReady`
/// (the launcher runs, the eight workers are `Pending`: the MPIJob is only `Created`, not
/// `Running`) and `TestLauncherActiveWorkerReady` (every worker runs too: `Running=True`), with
/// Kubeflow training-operator's "Test MPIJob with Running launcher Pod and Pending worker Pods".
/// In kubetrain the gang has not started while its launcher runs and its workers are still
/// pending: phase `Starting`, no `startedAt`, no `Running=True`, no `Running` Event, nothing
/// stopped; it starts when the last worker runs.
#[test]
fn mpi_a_running_launcher_with_pending_workers_has_not_started() {
    let mut s = admitted_gang(&[("launcher", 1, true), ("worker", 2, false)], "Pending");
    set_phase(pod(&mut s, "llm-launcher-0"), "Running");
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().started_at.is_none());
    assert!(!running_is_true(&s));
    assert!(fx.events.is_empty(), "{:?}", reasons(&fx));
    assert!(fx.pod_deletions.is_empty());
    set_phase(pod(&mut s, "llm-worker-0"), "Running");
    s.after(5).tick();
    assert!(s.status().started_at.is_none(), "one worker still pending");
    set_phase(pod(&mut s, "llm-worker-1"), "Running");
    let fx = s.after(5).tick();
    assert_eq!(s.status().started_at, Some(at(15)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
}

/// MPI Operator, `TestLauncherSucceeded`: the launcher's Job completes before the MPIJob was
/// ever `Running`; the MPIJob succeeds, and "Running=False is added when the job finishes
/// without Running ever being set". In kubetrain, a launcher that exits 0 while the workers
/// (not `requiredForCompletion`) are still pending succeeds the job: `Succeeded=True`,
/// `Running=False` with reason `Succeeded`, no `startedAt` and no `Running` Event; the pending
/// workers are stopped and the launcher keeps its pod.
#[test]
fn mpi_a_launcher_done_before_its_workers_ran_succeeds_with_running_false() {
    let mut s = admitted_gang(&[("launcher", 1, true), ("worker", 2, false)], "Pending");
    succeeds_at(pod(&mut s, "llm-launcher-0"), 8);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.says(ConditionType::Succeeded), ("True", "Succeeded"));
    assert_eq!(s.says(ConditionType::Running), ("False", "Succeeded"));
    assert!(s.status().started_at.is_none());
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
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

/// MPI Operator, `TestSuspendedRunningMPIJob`: suspending a running MPIJob deletes its workers
/// and sets `Suspended=True` and `Running=False` (reason `MPIJobSuspended`) at once. kubetrain
/// has no `Suspended` condition: a running gang being suspended checkpoints first, and stays
/// `Running=True` while its replicas still run (docs/troubleshooting.md: `Running` is true
/// when every replica runs); once its pods are gone it is `Suspended` with `Running=False` and
/// `Admitted=False`, reason `Preempted` ("preempted or suspended, back in the queue"), and
/// `Preempting=False`, reason `Requeued`.
#[test]
fn mpi_a_suspended_job_is_running_false_as_preempted_differs() {
    let mut s = running_gang(&[("launcher", 1, true), ("worker", 2, false)]);
    s.job.spec.suspend = true;
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(s.says(ConditionType::Preempting), ("True", "Suspended"));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning"),
        "its replicas still run while they checkpoint"
    );
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(CHECKPOINT_DONE, &stamp(12));
    let fx = s.after(2).tick();
    assert_eq!(
        deleted(&fx),
        ["llm-launcher-0", "llm-worker-0", "llm-worker-1"]
    );
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.says(ConditionType::Running), ("False", "Preempted"));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Preempted"));
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert!(s.status().conditions.iter().all(|c| c.type_ != "Suspended"));
    assert_eq!(reasons(&fx), ["Suspended"]);
}

// Kueue.

/// Kueue, `pkg/controller/jobs/job/job_controller_test.go`, `TestPodsReady` "parallelism =
/// completions; some ready, some succeeded" (2 ready and 1 succeeded of 3: `PodsReady`) and
/// "parallelism = completions; not enough progress" (1 ready and 1 succeeded of 3: not yet).
/// In kubetrain a replica that already exited 0 counts towards the gang's start: with one
/// replica done, one running and one pending the gang has not started; once the last runs it
/// has (`Running=True`), and the start timeout no longer applies.
#[test]
fn kueue_a_replica_done_counts_towards_the_gangs_start() {
    let mut s = Story::new(3);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    succeeds_at(&mut s.pods[0], 4);
    set_phase(&mut s.pods[1], "Running");
    s.after(5).tick();
    assert!(s.status().started_at.is_none());
    assert!(!running_is_true(&s));
    set_phase(&mut s.pods[2], "Running");
    let fx = s.after(5).tick();
    assert_eq!(s.status().started_at, Some(at(10)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    // Well past the operator's start timeout (600 s): nothing stops it.
    let fx = s.after(900).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
}

/// Kueue, `TestPodsReady` "parallelism = completions; some ready, some succeeded": the Job's
/// `status.succeeded` counts a finished pod for good (its finalizer keeps it counted after the
/// pod is gone), so 2 ready and 1 succeeded of 3 are `PodsReady` whatever became of the
/// finished pod. In kubetrain, a replica recorded in `succeededReplicas` "stays done if its
/// finished pod is removed" (docs/user-guide.md, `tasks[]`); with the other two running, the
/// gang has started: `Running=True`, a `startedAt` (a preemption then waits for a checkpoint
/// rather than stopping it as `NotStarted`).
#[test]
fn kueue_a_replica_recorded_as_done_counts_towards_the_start_after_its_pod_is_gone() {
    let mut s = Story::new(3);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    succeeds_at(&mut s.pods[0], 4);
    set_phase(&mut s.pods[1], "Running");
    s.after(40).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    // The finished pod is removed (`kubectl delete pod`); the last replica then runs.
    s.pods.remove(0);
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Starting);
    set_phase(pod(&mut s, "llm-worker-2"), "Running");
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().started_at, Some(at(50)));
    assert!(running_is_true(&s));
    assert_eq!(reasons(&fx), ["Running"]);
}

/// Kueue, `job_controller_test.go`, `TestReconciler` "PodsReady is set to False after Workload
/// is Admitted, some Pods became ready but not all Pods reached readiness" (9 of 10 active pods
/// ready: not `PodsReady`, and the `waitForPodsReady` timeout keeps counting), with
/// `TestPodsReady` (readiness is the pods' `Ready` condition). kubetrain counts a replica as
/// started once its pod runs (docs/troubleshooting.md: `AllReplicasRunning`, "every replica
/// runs"; the start timeout stops a gang "not running" in full): a pod `Running` whose `Ready`
/// condition is `False` (a readiness probe not yet passing) has started, and the start timeout
/// does not stop the gang.
#[test]
fn kueue_a_running_replica_not_yet_ready_has_started_differs() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Running");
    status(
        &mut s.pods[1],
        json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}),
    );
    s.tick();
    let fx = s.after(1).tick();
    assert_eq!(s.status().started_at, Some(at(1)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    let fx = s.after(900).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(s.status().retries, 0);
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

/// Kueue, `TestReconciler` "PodsReady is set to False after Workload is running and one pod
/// failed" (`WaitForRecovery`) and "PodsReady is set to True after failing pod recovered"
/// (`Recovered`), with JobSet, `test/integration/controller/jobset_controller_test.go`,
/// "jobset restarting condition transitions" (`Restarting=True` after the failure, `False` once
/// the restarted jobs are ready). In kubetrain the failure turns `Running` `False`
/// (`ReplicaFailed`) and the admission `False`; the gang admitted again and running is
/// `Running=True` again, with a new transition time and a new `startedAt`.
#[test]
fn kueue_a_gang_restarted_after_a_failure_is_running_again() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    s.after(50).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "ReplicaFailed"));
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    s.after(5);
    readmitted(&mut s, 2);
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(
        s.condition(ConditionType::Running).last_transition_time,
        at(65)
    );
    assert_eq!(s.status().started_at, Some(at(65)));
    assert_eq!(s.says(ConditionType::Admitted).0, "True");
    assert_eq!(s.status().retries, 1);
}

/// Kueue, `pkg/controller/core/workload_controller_test.go`, `TestAdmittedNotReadyWorkload`
/// "workload with Admitted=True, no PodsReady, but no timeout configured; not counting": without
/// a `waitForPodsReady` timeout an admitted workload whose pods never get ready is never
/// evicted for it. In kubetrain, with the operator's start timeout off (`start_timeout: None`,
/// "for ever"), a gang one of whose replicas cannot pull its image keeps its admission: a day
/// on it is still `Running`, nothing stopped, no retry counted.
#[test]
fn kueue_without_a_start_timeout_a_gang_that_never_runs_keeps_its_admission() {
    let mut s = Story::new(2);
    s.world.settings.start_timeout = None;
    s.tick();
    s = s.admitted("Running");
    status(
        &mut s.pods[0],
        json!({"phase": "Pending", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}),
    );
    s.tick();
    for _ in 0..48 {
        let fx = s.after(1800).tick();
        assert!(fx.pod_deletions.is_empty());
    }
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().started_at.is_none());
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.says(ConditionType::Admitted).0, "True");
}

// Kubernetes Job controller.

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestSyncJobUpdateRequeue`
/// "generic error" and "conflict error": a sync whose status update fails is requeued and done
/// again. In kubetrain, a reconcile that decided a retry but whose status write failed leaves
/// the job as it was; the next reconcile decides the same, from the failure's own time: one
/// retry counted, the same `retryAt`, one `ReplicaFailed` Event numbered 1, and a further
/// reconcile adds nothing.
#[test]
fn k8s_a_status_write_that_failed_is_redone_without_counting_twice() {
    let mut s = Story::running(2);
    exits_at(&mut s.pods[1], 1, 100);
    s.after(102);
    let gang = Gang::new(s.pods.iter().cloned().map(Arc::new));
    let (lost, _) = next(&s.job, &gang, &s.world, &at(s.now));
    assert_eq!(lost.phase, Phase::Retrying);
    assert_eq!(lost.retry_at, Some(at(110)));
    // The write failed: the job is as it was.
    assert_eq!(s.phase(), Phase::Running);
    let fx = s.after(3).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, lost.retry_at);
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("ReplicaFailed1"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    let fx = s.after(1).tick();
    assert_eq!(s.status().retries, 1);
    assert!(fx.events.is_empty());
}

/// Kubernetes, `job_controller_test.go`, `TestSyncJobExpectations` ("a pod cannot sneak in
/// between counting active pods and checking expectations": the controller creates no
/// replacement for a pod its cache does not show yet). In kubetrain, a gang of two whose second
/// pod is not in the operator's cache yet (the scheduler created both; no admission is in
/// flight any more) is waited for, not torn down as half-created, and runs once the pod shows
/// up: nothing deleted, no restart counted.
#[test]
fn k8s_a_pod_late_in_the_cache_is_waited_for_not_torn_down() {
    let mut s = Story::new(2);
    s.tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(fx.pod_deletions.is_empty());
    assert!(fx.events.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.pods.push(replica(1, "n1", "Pending"));
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(s.status().infrastructure_retries, 0);
    assert_eq!(s.status().retries, 0);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "too many active pods, with
/// controller error" (the deletion fails: the pods stay active, to be deleted by a later sync).
/// In kubetrain the pods to stop follow from the job's state, not from a record of what was
/// asked: when the deletions of a retrying gang, or of a failed job's running replica, fail,
/// the next reconcile asks again, and counts nothing more.
#[test]
fn k8s_a_pod_deletion_that_failed_is_asked_again() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // The deletions failed: the pods are as they were.
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(s.status().retries, 1);
    assert!(fx.events.is_empty());

    let mut s = Story::running(2);
    s.job.spec.max_retries = 0;
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    assert!(fx.events.is_empty());
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

// Volcano.

/// Volcano, `pkg/controllers/job/job_state_test.go`, `TestCompletingState_Execute`
/// "CompletingState- With pod count not equal to zero" (a job whose completion is decided stays
/// `Completing` while pods still run) and "CompletingState- With pod count equal to zero"
/// (`Completed` once they are gone), with `TestRunningState_Execute` "RunningState-
/// CompleteJobAction case and Terminating Pods not equal to 0". kubetrain decides success by
/// the deciding replicas alone (docs/user-guide.md, `tasks[]`: "the job succeeds when every
/// replica of every such task exits 0"): the job is `Succeeded` in the step that stops the
/// non-deciding replicas still running, stays so, unchanged and quiet, while they terminate,
/// and keeps its finish time.
#[test]
fn volcano_a_completing_job_is_succeeded_while_its_pods_stop_differs() {
    let mut s = running_gang(&[("master", 1, true), ("worker", 2, false)]);
    succeeds_at(pod(&mut s, "llm-master-0"), 9);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    for w in ["llm-worker-0", "llm-worker-1"] {
        pod(&mut s, w).metadata.deletion_timestamp = Some(at(40));
    }
    let writes = s.writes;
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.writes, writes);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty(), "already being deleted");
    s.pods
        .retain(|p| p.metadata.name.as_deref() == Some("llm-master-0"));
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert!(fx.events.is_empty());
}

// JobSet.

/// JobSet, `pkg/controllers/jobset_controller_test.go`, `TestUpdateConditions` "existing
/// conditions, update reason/message but keep status same" (the condition is updated, its
/// `lastTransitionTime` kept). In kubetrain a gang demoted onto borrowed GPUs keeps
/// `Admitted=True` with the new reason `AdmittedAsBonus` and a new message, its transition time
/// still its admission's; and a waiting job whose wait reason changes keeps `Admitted=False`
/// with the new reason, its transition time still when it began to wait.
#[test]
fn jobset_a_new_reason_keeps_the_conditions_transition_time() {
    let mut s = Story::running(2);
    assert_eq!(
        s.condition(ConditionType::Admitted).last_transition_time,
        at(0)
    );
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.after(100).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
    let c = s.condition(ConditionType::Admitted);
    assert_eq!(c.last_transition_time, at(0));
    assert!(c.message.contains("borrowed"), "{}", c.message);

    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
            share_kept_by: None,
            required: None,
        },
        Some(2),
    ));
    s.tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "QuotaExhausted"));
    s.world.wait = Some((
        WaitReason::OverLimit {
            virtual_cluster: "vc".into(),
            limit_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
        },
        Some(2),
    ));
    s.after(50).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "OverLimit"));
    assert_eq!(
        s.condition(ConditionType::Admitted).last_transition_time,
        at(0)
    );
}

/// JobSet, `pkg/controllers/startup_policy_test.go`, `TestInOrderStartupPolicy` "startup policy
/// InOrder" and `TestReplicatedJobStarted` "replicas 4; replicatedJobStatus all active" (active
/// but not ready is not started), with `test/integration/controller/jobset_controller_test.go`
/// "startupPolicy InOrder; replicated-job-a not ready then replicated-job-b should not run": the
/// second replicated job is created only once the first is ready. kubetrain has no startup
/// order: the gang starts together or not at all (docs/user-guide.md, "A first job"; the
/// scheduler creates every replica at admission), and it has started once every replica of
/// every task runs, whichever runs first: workers running before their driver are neither held
/// nor stopped, and the gang starts when the driver runs too.
#[test]
fn jobset_an_in_order_startup_is_one_gang_start_differs() {
    let mut s = admitted_gang(&[("driver", 1, true), ("worker", 3, true)], "Pending");
    for w in ["llm-worker-0", "llm-worker-1", "llm-worker-2"] {
        set_phase(pod(&mut s, w), "Running");
    }
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().started_at.is_none());
    assert!(fx.pod_deletions.is_empty());
    assert!(fx.events.is_empty());
    set_phase(pod(&mut s, "llm-driver-0"), "Running");
    let fx = s.after(5).tick();
    assert_eq!(s.status().started_at, Some(at(10)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    assert!(message(&s).contains("All 4 replica(s) are running"));
}
