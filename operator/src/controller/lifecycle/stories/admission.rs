//! Entering the queue and waiting there: the first status write, the scheduler's word on why the
//! job waits (a wait no cycle ends as a Warning), a gang being created or left half-created, and
//! the `Admitted` condition across admissions.

use super::*;

#[test]
fn a_new_job_enters_its_queue_and_waits_for_the_scheduler() {
    let mut s = Story::new(2);
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)));
    assert_eq!(s.status().queue.as_deref(), Some("q"));
    assert_eq!(s.status().gpus, Some(2.0));
    assert_eq!(s.status().observed_generation, Some(1));
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    // No scheduling cycle has looked at it yet.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
    assert_eq!(reasons(&fx), ["Queued"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    assert!(fx.pod_deletions.is_empty());

    // The scheduler says why it waits, and where it stands in line.
    s.world.wait = Some((
        WaitReason::Invalid {
            message: "zero replicas".into(),
        },
        Some(3),
    ));
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queue_position, Some(3));
    assert_eq!(s.says(ConditionType::Admitted).1, "Invalid");
    assert!(fx.events.is_empty(), "no transition, no Event");
    // Entering the queue happened once.
    assert_eq!(s.status().queued_at, Some(at(0)));
}

/// A wait no scheduling cycle ends (`NeverFits`, `ExceedsLimit`) is a Warning Event once,
/// as an invalid spec is; the same wait seen again is not news, and another such wait is.
#[test]
fn a_job_that_can_never_start_gets_a_warning_once() {
    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "no node has 16 GPUs".into(),
        },
        Some(1),
    ));
    let fx = s.tick();
    assert_eq!(s.status().reason.as_deref(), Some("NeverFits"));
    let warnings: Vec<&str> = fx
        .events
        .iter()
        .filter(|e| e.type_ == EventType::Warning)
        .map(|e| e.reason)
        .collect();
    assert_eq!(warnings, ["NeverFits"]);
    let fx = s.after(30).tick();
    assert!(fx.events.is_empty(), "{:?}", reasons(&fx));
    // A wait that ends on its own is no Warning.
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
            share_kept_by: None,
            required: None,
        },
        Some(1),
    ));
    let fx = s.after(30).tick();
    assert!(fx.events.iter().all(|e| e.type_ != EventType::Warning));
}

/// A job that waited in line is admitted: while its pods are being created its status keeps
/// the wait it had (no write saying it waits for the next cycle), and the pods' arrival writes
/// the admission.
#[test]
fn a_waiting_job_whose_pods_are_being_created_is_written_once_they_exist() {
    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "too big".into(),
        },
        Some(1),
    ));
    s.tick();
    assert_eq!(s.says(ConditionType::Admitted).1, "NeverFits");
    let writes = s.writes;
    let before = s.status().clone();
    // The scheduler admitted it: no longer waiting, its pods not yet in the cache.
    s.world.wait = None;
    s.world.admission_in_flight = true;
    let fx = s.after(1).tick();
    assert_eq!(s.status(), &before);
    assert_eq!(
        s.writes, writes,
        "no write while its pods are being created"
    );
    assert_eq!(s.says(ConditionType::Admitted).1, "NeverFits");
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.world.admission_in_flight = false;
    s = s.admitted("Pending");
    s.after(1).tick();
    assert_eq!(s.writes, writes + 1);
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.says(ConditionType::Admitted).0, "True");
}

/// The scheduler admits a new job in its first cycle: the job is written once on its way
/// to Running (`Queued` and `Admitted` together), once more when its replicas run; never
/// with the "waiting for the next scheduling cycle" that would be stale a moment later. It
/// gets no `Queued` Event: the scheduler's `Admitted` Event, posted before, names its queue.
#[test]
fn a_job_admitted_in_its_first_cycle_is_written_once_before_it_runs() {
    let mut s = Story::created(1);
    let fx = s.tick();
    assert!(
        s.job.status.is_none(),
        "no write before the scheduler's word"
    );
    assert_eq!(s.writes, 0);
    assert!(fx.events.is_empty(), "no Event before the scheduler's word");
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE));
    // The scheduler is creating its pods.
    s.world.admission_in_flight = true;
    let fx = s.after(1).tick();
    assert!(s.job.status.is_none());
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE));
    s.world.admission_in_flight = false;
    s = s.admitted("Pending");
    let fx = s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Starting);
    assert!(
        fx.events.is_empty(),
        "admitted before it waited: the Admitted Event says it all"
    );
    assert_eq!(
        s.status().queued_at,
        Some(at(0)),
        "in its queue since its creation"
    );
    assert_eq!(s.status().admitted_at, Some(at(2)));
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
    s.after(1).tick();
    assert_eq!(s.writes, 1, "nothing changed while its pod is pending");
    s.set_pods_phase("Running");
    let fx = s.after(1).tick();
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(s.writes, 2);
}

/// A new job the scheduler cannot admit is written once it says why: `Queued`, with the
/// reason and the job's place in its queue, as `kubectl get` and `describe` show it.
#[test]
fn a_new_job_that_waits_is_written_with_the_schedulers_reason() {
    let mut s = Story::created(2);
    s.after(1).tick();
    assert_eq!(s.writes, 0);
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(2000),
            share_kept_by: None,
            required: None,
        },
        Some(4),
    ));
    let fx = s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Queued"]);
    assert_eq!(s.status().queued_at, Some(at(0)));
    assert_eq!(s.status().queue_position, Some(4));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "QuotaExhausted"));
    assert_eq!(s.status().reason.as_deref(), Some("QuotaExhausted"));
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    // The same wait in fields, for tools that should not parse the message.
    let waiting = s.status().waiting.clone().expect("status.waiting");
    assert_eq!(waiting.code, "QuotaExhausted");
    assert_eq!(
        (
            waiting.virtual_cluster.as_deref(),
            waiting.guarantee_gpus,
            waiting.used_gpus,
            waiting.requested_gpus,
            waiting.short_gpus
        ),
        (Some("vc"), Some(8.0), Some(8.0), Some(2.0), Some(2.0))
    );
    assert!(message(&s).contains("this job needs 2, 2 more than are left"));
}

/// `status.waiting` (and the estimated start) follows the wait: the lifecycle's own word
/// before the scheduler's,
/// the scheduler's reason after, kept while the gang's pods are being created (no write),
/// and gone once the job is admitted.
#[test]
fn the_wait_in_fields_follows_the_job_until_it_is_admitted() {
    let mut s = Story::new(1);
    s.tick();
    let waiting = s.status().waiting.clone().expect("status.waiting");
    assert_eq!(
        (waiting.code.as_str(), waiting.queue.as_deref()),
        ("Waiting", Some("q"))
    );
    s.world.wait = Some((
        WaitReason::BehindQueueHead {
            queue: "q".into(),
            head: "ns/first".into(),
        },
        Some(2),
    ));
    s.world.estimated_start = Some(at(3_600).0.as_second());
    s.after(1).tick();
    let waiting = s.status().waiting.clone().expect("status.waiting");
    assert_eq!(
        (waiting.code.as_str(), waiting.jobs),
        ("BehindQueueHead", vec!["ns/first".to_string()])
    );
    assert_eq!(s.status().estimated_start_time, Some(at(3_600)));
    s.world.wait = None;
    s.world.admission_in_flight = true;
    s.after(1).tick();
    assert_eq!(
        s.status().waiting.as_ref().map(|w| w.code.as_str()),
        Some("BehindQueueHead")
    );
    assert_eq!(s.status().estimated_start_time, Some(at(3_600)));
    s.world.admission_in_flight = false;
    s = s.admitted("Pending");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().waiting, None);
    assert_eq!(
        s.status().estimated_start_time,
        None,
        "admitted: no estimate"
    );
}

/// A scheduler that says nothing (busy, or stopped) does not keep a new job unwritten: past
/// the grace it is written as waiting for the next cycle. Invalid and suspended jobs are
/// written at once: no cycle changes what they say.
#[test]
fn a_new_job_is_written_anyway_when_the_scheduler_stays_silent() {
    let mut s = Story::created(1);
    let fx = s.after(4).tick();
    assert_eq!(s.writes, 0);
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE - Duration::from_secs(4)));
    let fx = s.after(6).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
    assert_eq!(reasons(&fx), ["Queued"]);

    // A long cycle (creating many gangs) is under way: the next one sees the job, however old.
    let mut s = Story::created(1);
    s.world.scheduling = true;
    s.after(60).tick();
    assert_eq!(s.writes, 0);
    s.world.scheduling = false;
    s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);

    let mut s = Story::created(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.tick();
    assert_eq!(s.phase(), Phase::Pending);

    let mut s = Story::created(1);
    s.job.spec.suspend = true;
    s.tick();
    assert_eq!(s.phase(), Phase::Suspended);
}

#[test]
fn a_half_created_gang_waits_for_its_admission_then_is_torn_down() {
    let mut s = Story::new(2);
    s.tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    // The scheduler is still creating the gang.
    s.world.admission_in_flight = true;
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    // Nobody is creating it, but it is young.
    s.world.admission_in_flight = false;
    s.now = 10;
    let fx = s.tick();
    assert!(fx.pod_deletions.is_empty());
    // Left half-created: removed, queued again, not the job's fault.
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retries, 0);
    assert_eq!(reasons(&fx), ["IncompleteGang"]);
}

/// Kueue, `pkg/controller/jobs/job/job_controller_test.go` "when workload is evicted due to
/// preemption, job gets suspended": in the reconcile that finds
/// the job stopped, the workload's `QuotaReserved` and `Admitted` conditions turn `False`
/// (`Pending`, `NoReservation`) together with `Requeued`. In kubetrain, the write that puts a
/// preempted job back in its queue (`Running=False` `Preempted`, `Preempting=False`
/// `Requeued`) should also turn `Admitted` `False`: the job holds no admission any more.
#[test]
fn kueue_a_requeued_job_is_no_longer_admitted() {
    let mut s = Story::running(2);
    s.after(100);
    preempt(&mut s, "Priority");
    assert_eq!(s.says(ConditionType::Running), ("False", "Preempted"));
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
}

/// Kueue, `pkg/controller/core/workload_controller_test.go` (an eviction for `PodsReadyTimeout`
/// unsets the quota reservation; the workload waits for its `requeueState.requeueAt` with
/// `Admitted=False`) : a workload waiting out its requeue backoff is not admitted. In
/// kubetrain, a job `Retrying` (its gang stopped, waiting out the backoff) should not say
/// `Admitted=True`.
#[test]
fn kueue_a_job_waiting_out_its_backoff_is_not_admitted() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
}

/// Kueue, `workload_controller_test.go` and the job reconciler: a workload admitted again
/// after an eviction gets a new `Admitted` (new transition time) and its job a new
/// `startTime`, the eviction's conditions cleared. In kubetrain, the job admitted again after
/// a preemption records the new admission (`admittedAt`, `Admitted=True` with a new
/// transition time), the new start once all replicas run, and `Preempting` stays `False`.
#[test]
fn kueue_a_readmitted_job_records_its_new_admission() {
    let mut s = Story::running(2);
    let first = s
        .condition(ConditionType::Admitted)
        .last_transition_time
        .clone();
    s.after(100);
    preempt(&mut s, "Priority");
    s.after(1).tick();
    assert_eq!(s.says(ConditionType::Admitted).0, "False");
    s.after(50);
    s.pods = (0..2).map(|i| replica(i, "n1", "Pending")).collect();
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().admitted_at, Some(at(153)));
    assert_eq!(s.status().started_at, None, "not running yet");
    // The preemption's `Running=False` is this run's no more.
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    let admitted = s.condition(ConditionType::Admitted);
    assert_eq!(admitted.status, "True");
    assert_ne!(admitted.last_transition_time, first);
    assert_eq!(admitted.last_transition_time, at(153));
    s.set_pods_phase("Running");
    let fx = s.after(5).tick();
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(s.status().started_at, Some(at(158)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.status().preemptions, 1);
}
