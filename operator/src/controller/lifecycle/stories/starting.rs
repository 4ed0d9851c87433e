//! How a gang starts: `Starting` until every replica runs (a replica done counts), the replica that
//! holds the start named, and the start timeout that requeues a gang that never runs.

use super::*;

#[test]
fn an_admitted_gang_runs_then_starts() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.now = 3;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().admitted_at, Some(at(3)));
    assert_eq!(s.status().placement.len(), 2);
    assert_eq!(s.status().placement[1].node, "n1");
    assert_eq!(s.status().placement[1].gpus, [1]);
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
    assert!(s.status().started_at.is_none(), "not running yet");
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    assert_eq!(s.status().reason.as_deref(), Some("Starting"));
    assert_eq!(fx.requeue, Some(Duration::from_secs(2)));
    assert_eq!(s.status().queue_position, None);

    // Still pulling images: nothing changes, look again soon.
    let fx = s.after(2).tick();
    assert!(fx.events.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(2)));

    s.set_pods_phase("Running");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().started_at, Some(at(7)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    // Started once.
    let fx = s.after(30).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.status().started_at, Some(at(7)));
}

/// A starting gang one of whose replicas cannot pull its image says so while it waits for
/// it: `Running=False` with reason `ReplicaNotStarting` and the status message name the pod
/// and the kubelet's words, and `status.reason` (the REASON column) is the kubelet's reason.
/// Containers being created are progress: nothing to say, no write.
#[test]
fn a_starting_gang_names_the_replica_that_does_not_start() {
    let waiting = |reason: &str, message: &str| {
        json!({"phase": "Pending", "containerStatuses": [
            container("c", json!({"waiting": {"reason": reason, "message": message}}))]})
    };
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    for p in &mut s.pods {
        status(p, waiting("ContainerCreating", ""));
    }
    let writes = s.writes;
    s.after(2).tick();
    assert_eq!(s.writes, writes, "progress is not news");
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));

    status(
        &mut s.pods[1],
        waiting("ImagePullBackOff", "Back-off pulling image \"x\""),
    );
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty(), "the start timeout decides");
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "ReplicaNotStarting")
    );
    assert_eq!(s.status().reason.as_deref(), Some("ImagePullBackOff"));
    let msg = s.status().message.clone().unwrap_or_default();
    assert!(
        msg.starts_with(
            "Replica llm-worker-1 is not running: ImagePullBackOff: Back-off pulling image \"x\"."
        ),
        "{msg}"
    );
    assert_eq!(s.condition(ConditionType::Running).message, msg);

    // The image is there now: back to progress, then the gang runs.
    status(&mut s.pods[1], waiting("ContainerCreating", ""));
    s.after(2).tick();
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    assert_eq!(s.status().reason.as_deref(), Some("Starting"));
    assert_eq!(
        s.status().message.as_deref(),
        Some("Waiting for the 2 replica(s) to start.")
    );
    s.set_pods_phase("Running");
    s.after(2).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
}

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

/// Kueue, `TestGetQueueOrderTimestamp` "evicted by PodsReady timeout" (with the default
/// `requeuingStrategy.timestamp: Eviction`, the order timestamp becomes the eviction's time)
/// and `pkg/controller/core/workload_controller_test.go` (an eviction by `PodsReadyTimeout`
/// requeues the workload after its backoff): a workload whose pods never became ready goes to
/// the back of its queue, so that it does not block the head of the line again. In kubetrain,
/// a gang stopped by the start timeout retries; once back in its queue its `queuedAt` is the
/// time it was stopped, not its first entry (ported as a gap: it kept its first place; fixed).
#[test]
fn kueue_a_gang_requeued_after_its_start_timeout_goes_to_the_back() {
    let mut s = Story::new(2);
    s.tick();
    assert_eq!(s.status().queued_at, Some(at(0)));
    s = s.admitted("Pending");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    // The image cannot be pulled: 600 s after its admission the gang stops.
    s.after(600).tick();
    assert_eq!(s.phase(), Phase::Retrying, "{}", message(&s));
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    let queued_at = s.status().queued_at.clone().expect("queuedAt");
    assert!(
        queued_at.0 >= at(601).0,
        "behind the jobs that queued while it held its GPUs: {queued_at:?}"
    );
}

/// Kueue, `workload_controller_test.go` PodsReady timeout cases (the timeout counts from the
/// `Admitted` condition's last transition, which a re-admission renews): a workload admitted
/// again after a preemption gets the whole timeout anew. In kubetrain the start timeout
/// counts from the new `admittedAt`: a readmitted gang pulling its image is not stopped
/// because its first admission was long ago.
#[test]
fn kueue_the_start_timeout_counts_from_the_new_admission() {
    let mut s = Story::running(1);
    s.after(500);
    preempt(&mut s, "Priority");
    s.after(1).tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    s.after(1).tick();
    assert_eq!(s.status().admitted_at, Some(at(504)));
    // 600 s after the first admission, 300 s after this one: it waits on.
    s.after(300).tick();
    assert_eq!(s.phase(), Phase::Starting, "{}", message(&s));
    assert_eq!(s.status().retries, 0);
    // 600 s after this one: stopped, counted.
    s.after(300).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(message(&s).contains("not running 600 s after admission"));
}

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
