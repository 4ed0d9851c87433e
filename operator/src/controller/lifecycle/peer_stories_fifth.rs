//! A fifth set of peer controllers' cases, about completion with several tasks (Kubeflow's
//! TFJob chief, PyTorchJob master and workers, JobSet's `successPolicy`, the Kubernetes Job
//! controller's success bookkeeping), told as kubetrain stories: which tasks decide success
//! (`requiredForCompletion`), what becomes of the other replicas when the job succeeds or
//! fails (those still running are stopped, finished pods keep their logs), a replica that
//! succeeds while others run, a failure beside a deciding task, and `succeededReplicas` across
//! a restart.
//!
//! The same conventions as `peer_stories.rs`: a case whose answer differs on purpose, as
//! documented, asserts kubetrain's answer and ends in `_differs`; a case kubetrain gets wrong
//! keeps the peer's expectation and is ignored with the gap in one line.
//!
//! Not ported, for want of the feature in kubetrain: the Job controller's `completions`
//! above the replica count and its work-queue mode (any pod's success completes the Job):
//! a kubetrain task has exactly `replicas` replicas, each run once per attempt; indexed
//! completion and `successPolicy.rules` with `succeededIndexes` / `succeededCount`
//! (`TestSyncJobWithJobSuccessPolicy`): no per-index rule, a task decides as a whole; JobSet's
//! `successPolicy` operator `Any` ("success policy 'any' with/without replicated job
//! specified", "active jobs are deleted after jobset succeeds"): no "any" rule (the targeted
//! case is in `peer_stories_more.rs`); TFJob's `restartPolicy: ExitCode` ("Chief is failed and
//! restarting" as a per-pod restart): the gang restarts as a whole (ported as such below);
//! `cleanPodPolicy` `All` / `None` variants on success: a finished job always stops what runs
//! and keeps its finished pods; Volcano's `minSuccess` and task-level `minAvailable`
//! thresholds: no partial-success count.

use super::peer_stories::{message, pod, running_gang};
use super::stories::{Story, deleted, exits, reasons, set_phase, sorted, succeeds_at};
use super::*;

/// A TFJob's shape: one chief that decides, four workers and two parameter servers that do
/// not (the workers' and PS's outcome does not complete a TFJob that has a chief).
fn tf_with_chief() -> Story {
    running_gang(&[("chief", 1, true), ("ps", 2, false), ("worker", 4, false)])
}

// Kubeflow training-operator: TFJob.

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
    assert_eq!(s.status().finished_at, Some(super::stories::at(10)));
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

// Kubeflow training-operator: PyTorchJob.

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

// JobSet.

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
    assert_eq!(s.status().finished_at, Some(super::stories::at(10)));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(sorted(deleted(&fx)), ["llm-driver-0", "llm-worker-1"]);
}

// Kubernetes Job controller: success bookkeeping.

/// Kubernetes, `pkg/controller/job/job_controller_test.go`,
/// `TestTrackJobStatusAndRemoveFinalizers` (succeeded pods go through
/// `uncountedTerminatedPods.succeeded` into `status.succeeded`, each counted once, and the
/// count stays when the pods' finalizers are removed and the pods go): a success is recorded
/// once and kept. In kubetrain, replicas of several tasks that exited 0 are listed in
/// `succeededReplicas` 30 s after their finish (docs/user-guide.md, `tasks[]`), each once and
/// in order, and stay listed while the job runs on and after their pods are removed.
#[test]
fn k8s_succeeded_replicas_are_recorded_once_and_kept() {
    let mut s = running_gang(&[("master", 1, true), ("worker", 3, true)]);
    succeeds_at(pod(&mut s, "llm-worker-2"), 0);
    succeeds_at(pod(&mut s, "llm-master-0"), 0);
    s.after(10).tick();
    assert!(s.status().succeeded_replicas.is_empty(), "not yet 30 s");
    s.after(25).tick();
    assert_eq!(
        s.status().succeeded_replicas,
        ["llm-master-0", "llm-worker-2"]
    );
    let writes = s.writes;
    s.after(10).tick();
    assert_eq!(s.writes, writes, "recorded once");
    // Their pods are removed (the pod garbage collector): they stay done.
    s.pods.retain(|p| {
        !matches!(
            p.metadata.name.as_deref(),
            Some("llm-worker-2" | "llm-master-0")
        )
    });
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert_eq!(
        s.status().succeeded_replicas,
        ["llm-master-0", "llm-worker-2"]
    );
    set_phase(pod(&mut s, "llm-worker-0"), "Succeeded");
    set_phase(pod(&mut s, "llm-worker-1"), "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(reasons(&fx), ["Succeeded"]);
}

/// Kubernetes, `job_controller_test.go`, `TestTrackJobStatusAndRemoveFinalizers` with the
/// Job's pod finalizer (`batch.kubernetes.io/job-tracking`): a succeeded pod cannot vanish
/// before the controller has counted it, so a success removed at once still counts. kubetrain
/// puts no finalizer on its pods and records a success only 30 s after it (docs/user-guide.md,
/// `tasks[]`: "listed in `status.succeededReplicas` 30 s later and then stays done if its
/// finished pod is removed"): a succeeded pod removed outright within those 30 s, never seen
/// being deleted, is a missing replica, and the gang restarts without counting a retry. The
/// window is a chosen trade-off (`RECORD_SUCCESS_AFTER_SECONDS` in `lifecycle/mod.rs`: "A
/// finished pod is removed minutes after its node idles, not seconds").
#[test]
fn k8s_a_success_removed_before_it_is_recorded_is_a_missing_replica_differs() {
    let mut s = running_gang(&[("master", 1, true), ("worker", 2, true)]);
    succeeds_at(pod(&mut s, "llm-worker-1"), 0);
    s.after(5).tick();
    assert!(s.status().succeeded_replicas.is_empty());
    s.pods
        .retain(|p| p.metadata.name.as_deref() != Some("llm-worker-1"));
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
}
