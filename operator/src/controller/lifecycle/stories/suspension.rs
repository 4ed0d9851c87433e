//! Suspension and resumption: a checkpoint first, the pods stopped, the job kept in its queue; what
//! a suspension keeps (the failure count, the place in line) and forgets (the backoff, the start).

use super::*;

#[test]
fn a_suspended_job_checkpoints_stops_and_resumes() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    // Nobody else asks for the checkpoint: the lifecycle does.
    assert_eq!(fx.checkpoint_requests, ["llm-worker-0", "llm-worker-1"]);
    assert!(fx.pod_deletions.is_empty());
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));

    s.annotate_all(CHECKPOINT_DONE, &stamp(12));
    let fx = s.after(2).tick();
    assert!(fx.checkpoint_requests.is_empty());
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("Suspend")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.status().preemptions, 0, "a suspension is no preemption");
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().reason.as_deref(), Some("Suspended"));
    // Suspended is quiet.
    let fx = s.after(60).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.phase(), Phase::Suspended);

    s.job.spec.suspend = false;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
}

#[test]
fn a_queued_job_suspended_before_admission_is_suspended_at_once() {
    let mut s = Story::new(1);
    s.tick();
    s.job.spec.suspend = true;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().reason.as_deref(), Some("Suspended"));
}

/// While a suspended job saves its checkpoint, its message says so (it kept "Admitted: ...").
#[test]
fn a_suspending_job_says_it_is_suspending() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    let message = s.status().message.clone().unwrap_or_default();
    assert!(message.starts_with("Suspending"), "{message}");
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
/// (`k8s_a_job_whose_pods_all_succeeded_completes_even_if_suspended`); in the
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

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "resuming a suspended job"
/// (the Job's `status.failed` is left as it was: a suspension neither clears nor adds
/// failures, and the back-off limit keeps counting them): in kubetrain, a job that used one
/// retry, is suspended and resumed, still has one used: its next failure is retry 2 (with the
/// doubled backoff), and the one after fails it.
#[test]
fn k8s_a_resumed_job_keeps_its_failure_count() {
    let mut s = Story::running(2);
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    assert_eq!(s.status().retries, 1);
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    readmitted(&mut s, 2);
    suspend_and_stop(&mut s);
    assert_eq!(s.status().retries, 1);
    s.job.spec.suspend = false;
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retries, 1, "a suspension clears no failure");
    readmitted(&mut s, 2);
    exits(&mut s.pods[1], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 2);
    assert!(
        message(&s).contains("Retry 2 of 2 in 20 s"),
        "{}",
        message(&s)
    );
    s.pods_gone();
    s.after(20).tick();
    readmitted(&mut s, 2);
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
}

/// Volcano, `pkg/controllers/job/job_state_test.go`, `TestAbortingState_Execute`
/// "AbortedState-ResumeAction case" ("Retry Count should not be zero": `state/aborting.go`
/// resumes through `KillJob` with `RetryCount++`), with `TestRestartingState_Execute`
/// "RestartingState- RetryCount is equal to or greater than MaxRetry" (such a job then fails):
/// in Volcano, resuming a stopped job spends a retry. kubetrain's suspension is a preemption
/// the owner asks for (docs/user-guide.md, `suspend`: "checkpoints and stops the job (as a
/// preemption)"; "Checkpoints": "A preemption is not a failure: `retries` stays"): a job with
/// every retry used, suspended and resumed, runs again with its retries as they were and
/// succeeds.
#[test]
fn volcano_a_resumed_job_spends_no_retry_differs() {
    let mut s = Story::running(2);
    s.job.spec.max_retries = 1;
    exits(&mut s.pods[0], 1);
    s.after(10).tick();
    s.pods_gone();
    s.after(10).tick();
    readmitted(&mut s, 2);
    assert_eq!(s.status().retries, 1, "every retry used");
    suspend_and_stop(&mut s);
    s.job.spec.suspend = false;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
    readmitted(&mut s, 2);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().preemptions, 0);
    s.set_pods_phase("Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
}

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestControllerSyncJob` "resuming a
/// suspended job": the Job's `Suspended` condition turns `False` (`JobResumed`) and its pods
/// are created again. In kubetrain the resumed job goes back to its queue (Event `Resumed`),
/// in its old place (docs/user-guide.md: "resume ... back in its queue, same place in line"),
/// and the same write says why it waits there, with its position, as for any queued job.
#[test]
fn k8s_resuming_a_suspended_job_queues_it_again_in_its_place() {
    let mut s = Story::running(2);
    s.after(100);
    suspend_and_stop(&mut s);
    assert_eq!(s.status().queue_position, None);
    s.job.spec.suspend = false;
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "too big".into(),
        },
        Some(2),
    ));
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    // (A job that can never start is told so by a Warning too.)
    assert_eq!(reasons(&fx), ["Resumed", "NeverFits"]);
    assert_eq!(s.status().queued_at, Some(at(0)), "same place in line");
    assert_eq!(s.status().preemptions, 0);
    // The same write says why it waits, and where.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "NeverFits"));
    assert_eq!(s.status().queue_position, Some(2));
    let writes = s.writes;
    let fx = s.after(1).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.writes, writes, "nothing more to say");
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations;
/// PodReplacementPolicy enabled" (the deleted pods are counted `terminating`) with
/// `podReplacementPolicy: Failed` (no replacement while they terminate): a resumed Job does
/// not start new pods beside the old ones still terminating. In kubetrain, a job suspended
/// while its pods terminate is `Suspended` (its pods are told to stop), and once resumed it
/// waits in `Queued` without asking anything of the scheduler until they are gone.
#[test]
fn k8s_a_resumed_job_waits_for_its_terminating_pods() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(10).tick();
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));
    s.annotate_all(CHECKPOINT_DONE, &stamp(11));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    for p in &mut s.pods {
        p.metadata.deletion_timestamp = Some(at(41));
    }
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)), "waits for them");
    assert!(fx.pod_deletions.is_empty());
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations" and
/// "resuming a suspended job" (`status.succeeded` survives the suspension, and the resumed Job
/// only creates the completions still missing): in kubetrain the gang restarts as a whole
/// (docs/concepts.md; `status.succeededReplicas` is "cleared when the job is admitted
/// again"), so a replica done before the suspension runs again once the job is resumed.
#[test]
fn k8s_replicas_done_before_a_suspension_run_again_differs() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    s.after(40).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    suspend_and_stop(&mut s);
    assert_eq!(s.status().retries, 0);
    s.job.spec.suspend = false;
    s.after(10).tick();
    s.after(1).tick();
    s.pods = (0..2).map(|i| replica(i, "n1", "Running")).collect();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().succeeded_replicas.is_empty());
    // The second replica alone finishing does not finish the job.
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
}

/// Kubeflow training-operator, `pkg/controller.v1/pytorch/pytorchjob_controller_test.go`
/// "Shouldn't create resources if PyTorchJob is suspended" (no pods, no `startTime`, a
/// `Suspended` condition) then "Should resume PyTorchJob after PyTorchJob is unsuspended": a
/// job created suspended is never started until resumed. In kubetrain it is written
/// `Suspended` at once (no wait for the scheduler), nothing is admitted, and once resumed it
/// waits in its queue; its `queuedAt` is its creation, as for any job valid from the start.
#[test]
fn kubeflow_a_job_created_suspended_starts_only_once_resumed() {
    let mut s = Story::created(2);
    s.job.spec.suspend = true;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Suspended);
    // Only Suspended: a "Queued, entered queue" Event for a job that never waited misled a
    // user in an acceptance run.
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert!(s.status().admitted_at.is_none() && s.status().started_at.is_none());
    let fx = s.after(600).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.phase(), Phase::Suspended);
    s.job.spec.suspend = false;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
    assert_eq!(s.status().queued_at, Some(at(0)));
    readmitted(&mut s, 2);
    assert_eq!(s.status().admitted_at, Some(at(601)));
    assert_eq!(s.status().started_at, Some(at(601)));
}

/// Kubernetes, `TestControllerSyncJob` "suspending a job with satisfied expectations" (a
/// suspension deletes the active pods whatever else is under way, and the Job's condition says
/// `Suspended`), applied to a job the scheduler is preempting: no peer case has both at once.
/// In kubetrain the owner's suspension wins: the gang stops after its acknowledgement, the job
/// ends `Suspended`, not requeued, counts no preemption, and its record says `Suspend`.
#[test]
fn k8s_a_job_suspended_while_being_preempted_ends_suspended() {
    let mut s = Story::running(2);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Priority");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    s.job.spec.suspend = true;
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().preemptions, 0);
    assert_eq!(s.status().retries, 0);
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("Suspend")
    );
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
