//! Which tasks decide success when a job has several (`requiredForCompletion`): a chief, master or
//! launcher and their workers, JobSet's success policy, and a failure beside a deciding task.

use super::*;

/// Kubeflow training-operator, `pkg/controller.v1/pytorch/pytorchjob_controller.go`
/// `UpdateJobStatus` ("when master is succeed, the job is finished"), exercised by
/// `pytorchjob_controller_test.go`: a PyTorchJob with a Master succeeds when the master
/// succeeds, workers still running. kubetrain decides by `requiredForCompletion` (default
/// true, docs/user-guide.md): with both tasks deciding, the job runs until the workers
/// succeed too; marking the workers not required gives the peer's answer.
#[test]
fn kubeflow_the_job_succeeds_when_its_master_succeeds_differs() {
    let mut s = running_gang(&[("master", 1, true), ("worker", 2, true)]);
    set_phase(pod(&mut s, "llm-master-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "the workers decide too");
    assert!(fx.pod_deletions.is_empty());

    let mut s = running_gang(&[("master", 1, true), ("worker", 2, false)]);
    set_phase(pod(&mut s, "llm-master-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Kubeflow training-operator, `pkg/controller.v1/mpi/mpijob_controller_test.go` "Test MPIJob
/// with succeeded launcher Pod", with `pkg/controller.v1/common/job_test.go` "Succeeded job
/// and cleanPodPolicy is Running": the MPIJob succeeds when its launcher succeeds, and the
/// workers still running are deleted while finished pods stay. In kubetrain the launcher is
/// the deciding task and the workers are not required for completion.
#[test]
fn kubeflow_an_mpi_job_succeeds_with_its_launcher_and_stops_its_workers() {
    let mut s = running_gang(&[("launcher", 1, true), ("worker", 3, false)]);
    set_phase(pod(&mut s, "llm-worker-2"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "a worker does not decide");
    assert!(fx.pod_deletions.is_empty());
    set_phase(pod(&mut s, "llm-launcher-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Volcano, `state/running.go` `CompleteJobAction` under a task policy `TaskCompleted` →
/// `CompleteJob` (the event fires when every replica of the task has completed): the job
/// completes and its other pods are killed. In kubetrain the task that completes the job is
/// the only deciding one: one of its replicas succeeding is not enough, all of them are.
#[test]
fn volcano_a_completed_task_completes_the_job() {
    let mut s = running_gang(&[("master", 2, true), ("worker", 2, false)]);
    set_phase(pod(&mut s, "llm-master-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "the task has not completed");
    assert!(fx.pod_deletions.is_empty());
    set_phase(pod(&mut s, "llm-master-1"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // Finished is final: the workers' exit changes nothing.
    for name in ["llm-worker-0", "llm-worker-1"] {
        exits(pod(&mut s, name), 143);
    }
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(fx.events.is_empty());
    assert_eq!(s.status().retries, 0);
}

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

/// Kubeflow training-operator, `pkg/controller.v1/tensorflow/job_test.go` (`TestStatus`),
/// "Chief is running, workers are succeeded": with a chief, the workers finishing does not
/// complete the TFJob. In kubetrain, non-deciding workers that succeed leave the job running
/// (their pods stay, nothing is stopped) until the deciding chief has exited 0; then the
/// parameter servers still running are stopped and the finished workers keep their logs.
#[test]
fn kubeflow_a_tf_job_with_a_chief_runs_on_when_its_workers_succeed() {
    let mut s = tf_with_chief();
    for i in 0..4 {
        set_phase(pod(&mut s, &format!("llm-worker-{i}")), "Succeeded");
    }
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty());
    // "Chief worker is succeeded": now the job is done.
    set_phase(pod(&mut s, "llm-chief-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.says(ConditionType::Succeeded), ("True", "Succeeded"));
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(sorted(deleted(&fx)), ["llm-ps-0", "llm-ps-1"]);
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "Chief worker is
/// succeeded" (with workers and PS still active: `pkg/controller.v1/tensorflow` `UpdateJobStatus`
/// completes the TFJob on the chief alone): the chief's success completes the job, and
/// (`cleanPodPolicy: Running`, the default) the running workers and PS are deleted. In
/// kubetrain the chief is the only deciding task: the job succeeds at once, every replica
/// still running is stopped, and the job's status is written once.
#[test]
fn kubeflow_a_tf_chief_succeeding_stops_the_running_workers_and_ps() {
    let mut s = tf_with_chief();
    set_phase(pod(&mut s, "llm-worker-3"), "Succeeded");
    s.after(5).tick();
    let writes = s.writes;
    set_phase(pod(&mut s, "llm-chief-0"), "Succeeded");
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.writes, writes + 1);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert_eq!(
        sorted(deleted(&fx)),
        [
            "llm-ps-0",
            "llm-ps-1",
            "llm-worker-0",
            "llm-worker-1",
            "llm-worker-2"
        ],
        "the finished worker keeps its logs"
    );
    // The stopped replicas exit as they are killed: the job stays succeeded, nothing is
    // deleted twice.
    for name in ["llm-ps-0", "llm-ps-1", "llm-worker-0"] {
        exits(pod(&mut s, name), 137);
    }
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().retries, 0);
    assert!(fx.events.is_empty());
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "Chief is running,
/// workers are failed": with a chief, failed workers leave the TFJob running. In kubetrain the
/// gang is one distributed program: any replica's failure, deciding or not, restarts the whole
/// gang as a counted retry (docs/user-guide.md, `maxRetries`, `backoff`: "A replica failure
/// ... restarts the whole gang").
#[test]
fn kubeflow_failed_workers_beside_a_running_chief_restart_the_gang_differs() {
    let mut s = tf_with_chief();
    for i in 0..4 {
        exits(pod(&mut s, &format!("llm-worker-{i}")), 1);
    }
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(deleted(&fx).len(), 7, "the whole gang: {fx:?}");
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "Chief is running, a PS
/// is failed" (the workers all succeeded, `restartPolicy: Never`): a failed parameter server
/// fails the TFJob. In kubetrain, with no retries left, the PS's failure fails the job
/// (`RetriesExhausted`, the message naming the PS): the chief and the other PS still running
/// are stopped, the failed PS and the succeeded workers keep their pods and logs.
#[test]
fn kubeflow_a_failed_ps_fails_the_job_and_keeps_the_finished_pods() {
    let mut s = tf_with_chief();
    s.job.spec.max_retries = 0;
    for i in 0..4 {
        set_phase(pod(&mut s, &format!("llm-worker-{i}")), "Succeeded");
    }
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    exits(pod(&mut s, "llm-ps-1"), 1);
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert!(
        message(&s).contains("llm-ps-1 failed: exit code 1"),
        "{}",
        message(&s)
    );
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(sorted(deleted(&fx)), ["llm-chief-0", "llm-ps-0"]);
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "Chief is failed and
/// restarting" (and "Chief is failed, workers are succeeded"): a failed chief restarts the
/// TFJob (or fails it with no restart). In kubetrain, a deciding replica's failure with
/// retries left restarts the whole gang: the workers that had succeeded are stopped too
/// (their pods deleted), `succeededReplicas` is emptied with the new admission, and they must
/// succeed again in the new run: only the chief decides, so the job succeeds once it does.
#[test]
fn kubeflow_a_failed_chief_restarts_the_gang_and_the_workers_run_again() {
    let mut s = tf_with_chief();
    for i in 0..4 {
        set_phase(pod(&mut s, &format!("llm-worker-{i}")), "Succeeded");
    }
    s.after(5).tick();
    assert_eq!(
        s.status().succeeded_replicas,
        [
            "llm-worker-0",
            "llm-worker-1",
            "llm-worker-2",
            "llm-worker-3"
        ]
    );
    exits(pod(&mut s, "llm-chief-0"), 1);
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(deleted(&fx).len(), 7, "every pod, finished or not: {fx:?}");
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    // Readmitted: the same shape runs again.
    let again = tf_with_chief();
    s.pods = again.pods;
    s.tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(s.status().succeeded_replicas.is_empty());
    set_phase(pod(&mut s, "llm-chief-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().retries, 1);
    assert_eq!(
        deleted(&fx).len(),
        6,
        "the workers and PS of the new run: {fx:?}"
    );
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "(No chief worker)
/// worker-0 are succeeded, 3 workers are active": with the default success policy, worker 0
/// exiting 0 completes a TFJob without a chief. kubetrain has no per-index rule: the job
/// succeeds when every replica of every `requiredForCompletion` task exited 0
/// (docs/user-guide.md, `tasks[]`), so worker 0 alone leaves it running.
#[test]
fn kubeflow_worker_0_alone_does_not_complete_a_tf_job_without_chief_differs() {
    let mut s = running_gang(&[("ps", 2, false), ("worker", 4, true)]);
    set_phase(pod(&mut s, "llm-worker-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty());
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "(No chief worker,
/// successPolicy: AllWorkers) worker-0 are succeeded, 3 workers are active" (running) and "...
/// 4 workers are succeeded" (succeeded): kubetrain's default rule is `AllWorkers`: the job runs
/// on after worker 0 and succeeds with the last worker.
#[test]
fn kubeflow_all_workers_success_policy_waits_for_the_last_worker() {
    let mut s = running_gang(&[("worker", 4, true)]);
    set_phase(pod(&mut s, "llm-worker-0"), "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    for i in 1..3 {
        set_phase(pod(&mut s, &format!("llm-worker-{i}")), "Succeeded");
    }
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    set_phase(pod(&mut s, "llm-worker-3"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert!(fx.pod_deletions.is_empty(), "nothing runs any more");
}

/// Kubeflow training-operator, `tensorflow/job_test.go` `TestStatus`, "(No chief worker,
/// successPolicy: AllWorkers) worker-0 is succeeded, 2 workers are running, 1 worker is
/// failed" (with "(No chief worker) 2 workers are succeeded, 2 workers are failed"): a
/// failure among the deciding workers fails the job although some succeeded. In kubetrain,
/// with no retries left, the job fails: the running workers are stopped, the succeeded and
/// the failed one keep their pods.
#[test]
fn kubeflow_a_failed_worker_fails_the_job_despite_an_earlier_success() {
    let mut s = running_gang(&[("worker", 4, true)]);
    s.job.spec.max_retries = 0;
    set_phase(pod(&mut s, "llm-worker-0"), "Succeeded");
    s.after(10).tick();
    exits(pod(&mut s, "llm-worker-3"), 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert_eq!(sorted(deleted(&fx)), ["llm-worker-1", "llm-worker-2"]);
}

/// Kubeflow training-operator, `pkg/controller.v1/pytorch/pytorchjob_controller.go`
/// `UpdateJobStatus`, the branch without a Master ("Some workers are still running, leave a
/// running condition"; `expected == 0`: "successfully completed"): a PyTorchJob of workers
/// only succeeds when all of them have. kubetrain: the same.
#[test]
fn kubeflow_a_pytorch_job_without_master_succeeds_with_its_last_worker() {
    let mut s = running_gang(&[("worker", 3, true)]);
    set_phase(pod(&mut s, "llm-worker-1"), "Succeeded");
    set_phase(pod(&mut s, "llm-worker-2"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty());
    set_phase(pod(&mut s, "llm-worker-0"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert_eq!(message(&s), "All replicas succeeded.");
}

/// Kubeflow training-operator, `pytorchjob_controller.go` `UpdateJobStatus` with an
/// `elasticPolicy` (`expected == 0 || (ElasticPolicy != nil && succeeded > 0)`): one worker of
/// an elastic PyTorchJob succeeding completes it. kubetrain has no elastic jobs: every
/// deciding replica must exit 0 (docs/user-guide.md, `tasks[]`).
#[test]
fn kubeflow_one_worker_of_an_elastic_job_is_not_enough_differs() {
    let mut s = running_gang(&[("worker", 3, true)]);
    set_phase(pod(&mut s, "llm-worker-2"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

/// JobSet, `test/integration/controller/jobset_controller_test.go`, "jobset should not succeed
/// if any job is not completed" and "success policy 'all' with empty replicated jobs list":
/// with every replicated job deciding, one finished replicated job leaves the JobSet active;
/// the other finishing completes it. In kubetrain every task is `requiredForCompletion` by
/// default: the same, and `succeededReplicas` lists the first task's replicas meanwhile.
#[test]
fn jobset_all_tasks_decide_by_default() {
    let mut s = running_gang(&[("a", 1, true), ("b", 3, true)]);
    set_phase(pod(&mut s, "llm-a-0"), "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().succeeded_replicas, ["llm-a-0"]);
    set_phase(pod(&mut s, "llm-b-0"), "Succeeded");
    set_phase(pod(&mut s, "llm-b-1"), "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "one job is not completed");
    set_phase(pod(&mut s, "llm-b-2"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
}

/// JobSet, `jobset_controller_test.go`, "success policy 'all' with replicated jobs specified"
/// (`targetReplicatedJobs: [replicated-job-b]`): the untargeted job finishing leaves the
/// JobSet active, so does one of the target's jobs; the target's last completes it. With
/// "active jobs are deleted after jobset succeeds": what still runs then is removed. In
/// kubetrain the untargeted task is `requiredForCompletion: false`: the same, and a replica of
/// it still running when the target finishes is stopped.
#[test]
fn jobset_targeted_all_success_policy_waits_for_the_target_only() {
    let mut s = running_gang(&[("a", 2, false), ("b", 3, true)]);
    set_phase(pod(&mut s, "llm-a-0"), "Succeeded");
    set_phase(pod(&mut s, "llm-a-1"), "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "not a target");
    set_phase(pod(&mut s, "llm-b-0"), "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "one of three targets");
    set_phase(pod(&mut s, "llm-b-1"), "Succeeded");
    set_phase(pod(&mut s, "llm-b-2"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(fx.pod_deletions.is_empty(), "nothing runs: {fx:?}");

    // The untargeted task still running when the target finishes is stopped.
    let mut s = running_gang(&[("a", 2, false), ("b", 3, true)]);
    set_phase(pod(&mut s, "llm-a-1"), "Succeeded");
    for i in 0..3 {
        set_phase(pod(&mut s, &format!("llm-b-{i}")), "Succeeded");
    }
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(deleted(&fx), ["llm-a-0"]);
}

/// JobSet, `jobset_controller_test.go`, "jobset with no failure policy should fail if any jobs
/// fail" (and "fails from first run, no restarts"): with no restarts allowed, any job's
/// failure fails the JobSet, whichever replicated job it belongs to. In kubetrain, with
/// `maxRetries: 0`, a failure in a task that does not decide success fails the job too, and
/// the deciding replicas still running are stopped.
#[test]
fn jobset_a_non_deciding_failure_fails_the_job_with_no_retries() {
    let mut s = running_gang(&[("driver", 1, true), ("worker", 2, false)]);
    s.job.spec.max_retries = 0;
    exits(pod(&mut s, "llm-worker-0"), 2);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(sorted(deleted(&fx)), ["llm-driver-0", "llm-worker-1"]);
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
