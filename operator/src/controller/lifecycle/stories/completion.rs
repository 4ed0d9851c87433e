//! Success: the replicas done recorded (`status.succeededReplicas`), what still runs stopped and
//! finished pods kept, and the TTL deletion.

use super::*;

#[test]
fn the_deciding_replicas_succeed_and_the_job_succeeds() {
    let mut s = Story::running(2);
    s.set_pods_phase("Succeeded");
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().finished_at, Some(at(100)));
    assert_eq!(s.says(ConditionType::Succeeded), ("True", "Succeeded"));
    assert_eq!(s.says(ConditionType::Running), ("False", "Succeeded"));
    // Its GPUs went back with the same write: it no longer says it is admitted.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Succeeded"));
    assert_eq!(reasons(&fx), ["Succeeded"]);
    // The pods finished: nothing to stop.
    assert!(fx.pod_deletions.is_empty());
    // Finished is final.
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(fx.events.is_empty());
    assert!(!fx.delete_job);
}

#[test]
fn a_finished_job_is_deleted_once_its_ttl_passes() {
    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(60);
    s.set_pods_phase("Succeeded");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    let fx = s.after(20).tick();
    assert!(!fx.delete_job);
    assert_eq!(fx.requeue, Some(Duration::from_secs(40)));
    let fx = s.after(40).tick();
    assert!(fx.delete_job);
    assert_eq!(reasons(&fx), ["Expired"]);
}

/// A replica that finished while the others run is recorded in `status.succeededReplicas`
/// only once it has been done a while: a gang whose replicas finish together succeeds with
/// no write for each that finished first. Its pod's removal after that is no failure.
#[test]
fn a_replica_done_is_recorded_after_a_while_and_survives_its_pod() {
    let mut s = Story::running(2);
    s.pods[0].status = Some(
        serde_json::from_value(json!({"phase": "Succeeded", "containerStatuses": [{
            "name": "trainer", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(10)}}}]}))
        .expect("pod status"),
    );
    let writes = s.writes;
    s.after(15).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.writes, writes,
        "nothing to write 5 s after the replica finished"
    );
    s.after(30).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    s.pods.remove(0);
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
}

/// A job that succeeded with a replica of a task not needed for completion still running
/// (a parameter server) stops that one; the replicas that succeeded keep their logs.
#[test]
fn a_finished_job_stops_only_what_still_runs() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    set_phase(&mut s.pods[1], "Running");
    let fx = s.after(5).tick();
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
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

/// Kubernetes, `pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go`,
/// `TestTimeLeft` "Job completed 10s ago, 15s TTL" (5 s left): the TTL runs from the job's
/// completion, whenever it is set or looked at. In kubetrain, a job that succeeded at t = 100
/// and is given `ttlSecondsAfterFinished: 15` at t = 110 is deleted 5 s later; given 15 s at
/// t = 200, it is deleted at once.
#[test]
fn k8s_a_ttl_set_after_the_job_finished_counts_from_its_finish() {
    let mut s = Story::running(1);
    s.set_pods_phase("Succeeded");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().finished_at, Some(at(100)));
    let fx = s.after(10).tick();
    assert!(!fx.delete_job, "no TTL: kept");
    s.job.spec.ttl_seconds_after_finished = Some(15);
    let fx = s.tick();
    assert!(!fx.delete_job);
    assert_eq!(fx.requeue, Some(Duration::from_secs(5)));
    let fx = s.after(5).tick();
    assert!(fx.delete_job);
    assert_eq!(reasons(&fx), ["Expired"]);

    let mut s = Story::running(1);
    s.set_pods_phase("Succeeded");
    s.after(100).tick();
    s.job.spec.ttl_seconds_after_finished = Some(15);
    let fx = s.after(100).tick();
    assert!(fx.delete_job, "expired long ago");
}

/// Kubernetes, `ttlafterfinished_controller_test.go`, `TestTimeLeft` "Error case: Job completed
/// now, no CompletionTime": a finished job with no completion time is not expired (its time
/// left cannot be known). In kubetrain, a finished job whose `status.finishedAt` is missing
/// (a status written by hand or by an old version) is never deleted for its TTL.
#[test]
fn k8s_a_finished_job_without_its_finish_time_is_not_expired() {
    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(0);
    s.set_pods_phase("Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    s.job.status.as_mut().expect("status").finished_at = None;
    let fx = s.after(1000).tick();
    assert!(!fx.delete_job);
    assert!(fx.events.is_empty());
}

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
/// window is a chosen trade-off (`RECORD_SUCCESS_AFTER_SECONDS` in `lifecycle/running.rs`: "A
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
