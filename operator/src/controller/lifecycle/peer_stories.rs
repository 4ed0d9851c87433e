//! Lifecycle cases of peer controllers (the Kubernetes Job controller and its TTL controller,
//! Kubeflow's training-operator, Volcano's job controller), told as kubetrain stories.
//!
//! Each case is mapped onto kubetrain's model: a replica failure restarts the whole gang, up
//! to `maxRetries`, after a backoff; what the platform does to a pod does not count; tasks not
//! `requiredForCompletion` do not decide success; a suspension stops the gang after a
//! checkpoint request. A case whose answer differs on purpose, as documented, asserts
//! kubetrain's answer and ends in `_differs`; a case kubetrain gets wrong is ignored with the
//! bug in one line.

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::stories::{Story, annotate, at, deleted, exits, reasons, replica, set_phase, stamp};
use super::*;
use crate::api::annotations::{
    CHECKPOINT_DONE, CHECKPOINT_REQUESTED, GPUS_ANNOTATION, INDEX_LABEL, PREEMPTION_REASON,
    RANK_ANNOTATION, TASK_LABEL,
};
use crate::controller::pods::pod_name;

/// A job `llm` of several tasks `(name, replicas, requiredForCompletion)`, one GPU a replica.
pub(super) fn gang_job(tasks: &[(&str, u32, bool)]) -> TrainingJob {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|(name, replicas, required)| {
            json!({"name": name, "replicas": replicas, "requiredForCompletion": required,
            "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ]}}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": "llm", "namespace": "team", "uid": "u-1", "generation": 1},
        "spec": {
            "queue": "q", "maxRetries": 2,
            "backoff": {"initialSeconds": 10, "maxSeconds": 600},
            "checkpoint": {"gracePeriodSeconds": 30},
            "tasks": tasks
        }
    }))
    .expect("valid job")
}

/// Replica `index` of `task`, rank (and GPU) `rank`, on node n1, in pod phase `phase`.
fn task_pod(task: &str, index: u32, rank: u32, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": pod_name("llm", task, index), "namespace": "team",
            "creationTimestamp": stamp(0),
            "labels": {TASK_LABEL: task, INDEX_LABEL: index.to_string()},
            "annotations": {GPUS_ANNOTATION: rank.to_string(), RANK_ANNOTATION: rank.to_string()}
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": phase}
    }))
    .expect("pod")
}

/// A job of several tasks, admitted at t = 0, every replica running.
pub(super) fn running_gang(tasks: &[(&str, u32, bool)]) -> Story {
    let mut s = Story::new(1);
    s.job = gang_job(tasks);
    s.tick();
    let mut rank = 0;
    for (task, replicas, _) in tasks {
        for i in 0..*replicas {
            s.pods.push(task_pod(task, i, rank, "Running"));
            rank += 1;
        }
    }
    s.tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(s.status().started_at.is_some());
    s
}

pub(super) fn pod<'a>(s: &'a mut Story, name: &str) -> &'a mut Pod {
    s.pods
        .iter_mut()
        .find(|p| p.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("pod {name}"))
}

pub(super) fn message(s: &Story) -> &str {
    s.status().message.as_deref().unwrap_or_default()
}

/// The scheduler admits the job again: its whole gang is back on n1, running.
pub(super) fn readmitted(s: &mut Story, replicas: u32) {
    s.pods = (0..replicas).map(|i| replica(i, "n1", "Running")).collect();
    s.tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
}

// Kubernetes Job controller.

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

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "WQ job finishing" and "job
/// finish": while a pod still runs the job is not complete; once every pod succeeded it is
/// `Complete`. In kubetrain, the job succeeds when every replica of its deciding tasks
/// succeeded, not before.
#[test]
fn k8s_a_job_finishes_when_its_last_replica_succeeds() {
    let mut s = Story::running(3);
    set_phase(&mut s.pods[0], "Succeeded");
    set_phase(&mut s.pods[1], "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty());
    set_phase(&mut s.pods[2], "Succeeded");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().finished_at, Some(at(20)));
    assert_eq!(s.says(ConditionType::Succeeded), ("True", "Succeeded"));
    assert_eq!(reasons(&fx), ["Succeeded"]);
    assert!(fx.pod_deletions.is_empty());
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

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "suspending a job with
/// satisfied expectations": suspending a running Job deletes its active pods, counts no
/// failure and marks it suspended. kubetrain asks the gang to checkpoint first, then deletes
/// the pods; pods that exit non-zero as they are stopped count no retry, and the job ends
/// `Suspended`.
#[test]
fn k8s_suspending_a_running_job_stops_its_pods_without_counting_a_failure() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(s.says(ConditionType::Preempting).0, "True");
    assert_eq!(fx.checkpoint_requests, ["llm-worker-0", "llm-worker-1"]);
    assert!(fx.pod_deletions.is_empty(), "the checkpoint first");
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(CHECKPOINT_DONE, &stamp(15));
    let fx = s.after(5).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // SIGTERM: the replicas exit 143 while they are deleted.
    for p in &mut s.pods {
        exits(p, 143);
        p.metadata.deletion_timestamp = Some(at(15));
    }
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 0);
    assert_eq!(s.status().preemptions, 0);
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert!(s.status().placement.is_empty());
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "suspending a job with
/// satisfied expectations" (`expectedConditions`: `Suspended=True`, reason `JobSuspended`):
/// the Job's condition says it was suspended. kubetrain documents the same for a running job
/// being suspended (docs/troubleshooting.md, condition reasons: `Suspended` on
/// `Preempting=True`, "asked to checkpoint because `spec.suspend` is true"), so `kubectl
/// describe` tells a suspension from a preemption while the gang checkpoints.
#[test]
fn k8s_a_running_job_being_suspended_says_so() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(s.says(ConditionType::Preempting), ("True", "Suspended"));
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Preempting), ("True", "Suspended"));
}

/// Kubernetes, `job_controller.go` `syncJob` (the completion check precedes the suspension's)
/// with `TestControllerSyncJob` "job finish": a Job whose pods have all succeeded is
/// `Complete` even when `suspend` is set at that moment. In kubetrain, a job whose every
/// replica has exited 0 when `spec.suspend` turns true before the next reconcile should
/// succeed: its work is done, and there is nothing left to checkpoint.
#[test]
fn k8s_a_job_whose_pods_all_succeeded_completes_even_if_suspended() {
    let mut s = Story::running(2);
    s.set_pods_phase("Succeeded");
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(
        fx.pod_deletions.is_empty(),
        "the finished pods keep their logs"
    );
}

/// Kubernetes, `pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go`,
/// `TestTimeLeft` "Error case: Job unfinished", "Job completed now, 0s TTL" and "Job failed
/// now, 10s TTL": a running job is never cleaned up; a finished one, succeeded or failed, is
/// deleted its TTL after it finished (at once for 0).
#[test]
fn k8s_ttl_after_finished_deletes_succeeded_and_failed_jobs_only() {
    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(0);
    let fx = s.after(1000).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(!fx.delete_job, "unfinished: not cleaned up");
    s.set_pods_phase("Succeeded");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    let fx = s.tick();
    assert!(fx.delete_job, "0 s TTL: deleted at once");
    assert_eq!(reasons(&fx), ["Expired"]);

    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(10);
    s.job.spec.max_retries = 0;
    exits(&mut s.pods[0], 1);
    s.after(50).tick();
    assert_eq!(s.phase(), Phase::Failed);
    let fx = s.after(9).tick();
    assert!(!fx.delete_job);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    let fx = s.after(1).tick();
    assert!(fx.delete_job);
}

/// Kubernetes, `pkg/controller/job/pod_failure_policy_test.go`, `TestMatchPodFailurePolicy`
/// "ignore rule matched for pod conditions": a pod that failed with `DisruptionTarget=True`
/// (here set by the pod garbage collector, reason `DeletionByPodGC`, on a pod whose node was
/// deleted) is ignored: not counted against the backoff limit. kubetrain documents node loss
/// as not the job's fault (docs/user-guide.md, `maxRetries`): the replica's failure on a gone
/// node must restart the gang without counting a retry.
#[test]
fn k8s_a_pod_failed_by_pod_gc_on_a_deleted_node_is_not_counted() {
    let mut s = Story::running(2);
    // The node is deleted; the pod GC marks its pods Failed before deleting them.
    s.world.nodes.clear();
    s.pods[0].status = Some(
        serde_json::from_value(json!({"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
             "message": "PodGC: node no longer exists"}
        ]}))
        .expect("pod status"),
    );
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0, "node loss is not the job's fault");
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "WQ job: turn on
/// PodReplacementPolicy but not set PodReplacementPolicy": a terminating pod (deleted while it
/// ran) is counted as failed (`expectedFailed: 2` for one failed and one terminating pod).
/// kubetrain treats a replica removed by someone else as the platform's doing
/// (`Failure::Infrastructure`: "node lost, GPU unhealthy, pod removed"): the gang restarts
/// at once and no retry is counted.
#[test]
fn k8s_a_pod_deleted_while_running_is_not_a_counted_failure_differs() {
    let mut s = Story::running(2);
    s.pods[1].metadata.deletion_timestamp = Some(at(10));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert!(message(&s).contains("llm-worker-1 stopped: the pod was removed"));
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "no new pod; possible
/// finalizer update of failed pod" (a count recorded in the Job's status stays when its pod is
/// gone; succeeded pods are tracked the same way, with finalizers): a finished pod's removal
/// does not undo its outcome. In kubetrain, a replica that succeeded while the others still
/// run, and whose finished pod is then removed (the pod GC after its idle node was scaled
/// down), has done its part: the job runs on, and succeeds when the others do.
#[test]
fn k8s_a_succeeded_replica_whose_pod_is_removed_stays_succeeded() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    // The finished pod is garbage-collected.
    s.pods.remove(0);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert_eq!(s.status().infrastructure_retries, 0);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
}

// Kubeflow training-operator.

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

/// Kubeflow training-operator, `pkg/controller.v1/pytorch/pytorchjob_controller_test.go`
/// "Should delete resources after PyTorchJob is suspended; Should resume PyTorchJob after
/// PyTorchJob is unsuspended": the suspended job's pods are deleted and its start time
/// cleared; resumed, it runs again with a new start time. In kubetrain the resumed job goes
/// back to its queue, and its new admission and start are recorded afresh.
#[test]
fn kubeflow_a_resumed_job_runs_again_with_a_new_start() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(10).tick();
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(CHECKPOINT_DONE, &stamp(11));
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert!(s.status().started_at.is_none());
    assert!(s.status().admitted_at.is_none());
    assert_eq!(s.says(ConditionType::Running).0, "False");

    s.job.spec.suspend = false;
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
    s.pods = (0..2).map(|i| replica(i, "n1", "Running")).collect();
    s.after(5).tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().admitted_at, Some(at(117)));
    assert_eq!(s.status().started_at, Some(at(117)));
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().preemptions, 0);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "too few active pods and
/// active back-off" (a Job waiting out its back-off), suspended and resumed as in Kubeflow's
/// "Should delete resources after PyTorchJob is suspended; Should resume ...": the back-off
/// ends with the suspension. In kubetrain, a job suspended while it waits out a retry's
/// backoff leaves no `status.retryAt` behind once resumed, and a later drain of its node still
/// waits the drain's settle before requeueing (`requeue_preempted` keeps its settle time in
/// `retryAt`).
#[test]
fn k8s_a_job_suspended_during_its_backoff_forgets_the_backoff() {
    let mut s = Story::running(1);
    exits(&mut s.pods[0], 1);
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retry_at, Some(at(110)));
    s.pods_gone();
    s.job.spec.suspend = true;
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retry_at, None, "no backoff left to wait");
    readmitted(&mut s, 1);
    // Later, its node is drained.
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(200));
    s.annotate_all(PREEMPTION_REASON, "Drain");
    s.now = 200;
    s.tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(201));
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(
        s.phase(),
        Phase::Preempting,
        "kubectl drain must see the pod gone"
    );
    assert_eq!(s.status().retry_at, Some(at(212)));
}

// Volcano job controller.

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

/// Volcano, `pkg/controllers/job/job_controller_util_test.go` `TestApplyPolicies` (a
/// `PodEvicted` event takes the job's policy) with `state/running.go` (`RestartJobAction`
/// increments `RetryCount`): a job whose policy is PodEvicted → RestartJob restarts, counting
/// a retry towards `maxRetry`. kubetrain restarts the gang too, but an eviction by the
/// kubelet is the node's doing and counts no retry (docs/user-guide.md, `maxRetries`).
#[test]
fn volcano_an_evicted_pod_restarts_the_job_without_counting_differs() {
    let mut s = Story::running(2);
    s.pods[1].status = Some(
        serde_json::from_value(json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."}))
        .expect("pod status"),
    );
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert_eq!(reasons(&fx), ["InfrastructureFailure"]);
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

/// Volcano, `pkg/controllers/job/job_state_test.go`, `TestFinishedState_Execute` "FinishedState
/// Test Case" (`state/finished.go`: a finished job ignores every action): in kubetrain a
/// checkpoint request that lands on a finished job's pod (a scheduler that saw it running)
/// changes nothing.
#[test]
fn volcano_a_finished_job_ignores_a_late_checkpoint_request() {
    let mut s = Story::running(1);
    s.set_pods_phase("Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    annotate(&mut s.pods[0], CHECKPOINT_REQUESTED, &stamp(20));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(fx.events.is_empty());
    assert!(fx.pod_deletions.is_empty());
}
