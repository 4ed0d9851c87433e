//! Scenario tests for holding a queue (`stopPolicy`, as Kueue's, issue 55 item 10): `Hold`
//! admits nothing new and lets the admitted jobs run; `HoldAndDrain` also sends them back to
//! the queue with a checkpoint; a hold covers the queues below the held one; lifting it admits
//! again.

use super::fixtures::*;
use super::*;

/// A team of 16 guaranteed GPUs on two nodes, with queue `q` (held by `stop`), its child
/// `q/child`, and an unheld sibling `open`. `t/old` runs in `q`, `t/young` (within its
/// minimum runtime) in the child; each of the three queues has a job waiting.
fn world(stop: StopPolicy, child_stop: StopPolicy) -> Snapshot {
    let mut q = queue("q", "t");
    q.stop = stop;
    let mut child = queue("child", "t");
    child.parent = Some("q".into());
    child.stop = child_stop;
    let old = run(
        job("t/old", "q", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        Some(900),
    );
    let mut young = run(
        job("t/young", "child", 1, 2),
        &[("n0", &[4, 5])],
        false,
        900,
        None,
    );
    young.running.as_mut().unwrap().min_runtime_seconds = 10_000;
    snapshot(
        1000,
        vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)],
        vec![vc("t", "A100", 16)],
        vec![q, child, queue("open", "t")],
        vec![
            old,
            young,
            job("t/q-next", "q", 1, 2),
            job("t/child-next", "child", 1, 2),
            job("t/open-next", "open", 1, 2),
        ],
    )
}

/// Whether `job` waits because `holder` is held with `policy`.
fn held(d: &Decisions, job: &str, holder: &str, policy: StopPolicy) -> bool {
    d.admission(job).is_none()
        && matches!(
            d.waiting_reason(job),
            Some(WaitReason::QueueHeld { queue, policy: p }) if queue == holder && *p == policy
        )
}

/// `Hold`: the held queue and the queue below it admit nothing, their running jobs run on
/// (even the one past nothing but its minimum runtime is not touched), and the sibling queue
/// is admitted as before.
#[test]
fn a_held_queue_admits_nothing_new_and_its_running_jobs_run_on() {
    let d = schedule(&world(StopPolicy::Hold, StopPolicy::None));
    for j in ["t/q-next", "t/child-next"] {
        assert!(held(&d, j, "q", StopPolicy::Hold), "{j}: {d:?}");
        assert!(waits_with(&d, j, "QueueHeld"), "{j}: {d:?}");
    }
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);
    assert!(d.admission("t/open-next").is_some(), "{d:?}");
    assert_eq!(d.admissions.len(), 1, "{d:?}");
}

/// `HoldAndDrain`: besides admitting nothing, every running job of the queue and of the
/// queues below it checkpoints and leaves, whatever its minimum runtime, with reason
/// `QueueHold` and the queue as what makes it; the sibling queue's job is admitted.
#[test]
fn hold_and_drain_sends_the_running_jobs_back_with_the_hold_as_reason() {
    let d = schedule(&world(StopPolicy::HoldAndDrain, StopPolicy::None));
    assert_eq!(victims(&d), ["t/old", "t/young"], "{:?}", d.preemptions);
    for p in &d.preemptions {
        assert_eq!(p.reason, PreemptionReason::QueueHold, "{p:?}");
        assert_eq!(p.beneficiary, Beneficiary::Queue("q".into()), "{p:?}");
    }
    // The work since the last checkpoint is what the stop costs, as for a node drain.
    let old = d.preemptions.iter().find(|p| p.victims == ["t/old"]);
    assert_eq!(old.map(|p| p.lost_gpu_seconds), Some(4 * 100));
    for j in ["t/q-next", "t/child-next"] {
        assert!(held(&d, j, "q", StopPolicy::HoldAndDrain), "{j}: {d:?}");
    }
    assert!(d.admission("t/open-next").is_some(), "{d:?}");
}

/// A job already on its way back (stopped by the drain) waits for the hold, not for its
/// return: `QueueHeld`, and no room is kept for it.
#[test]
fn a_drained_job_on_its_way_back_waits_for_the_hold() {
    let mut s = world(StopPolicy::HoldAndDrain, StopPolicy::None);
    s.jobs.retain(|j| j.id != "t/old");
    let mut back = job("t/old", "q", 1, 4);
    back.returning = true;
    s.jobs.push(back);
    let d = schedule(&s);
    assert!(held(&d, "t/old", "q", StopPolicy::HoldAndDrain), "{d:?}");
}

/// The strongest policy of the chain applies and the wait names the queue that sets it: a
/// child draining under a parent that only holds loses its running job, the parent's runs on;
/// a child held under a parent that is not admits nothing while the parent admits.
#[test]
fn the_strongest_hold_of_the_chain_applies_and_names_its_queue() {
    let d = schedule(&world(StopPolicy::Hold, StopPolicy::HoldAndDrain));
    assert_eq!(victims(&d), ["t/young"], "{:?}", d.preemptions);
    assert_eq!(
        reason_of(&d, "t/young"),
        Some(PreemptionReason::QueueHold),
        "{d:?}"
    );
    assert_eq!(
        d.preemptions[0].beneficiary,
        Beneficiary::Queue("child".into())
    );
    assert!(held(&d, "t/q-next", "q", StopPolicy::Hold), "{d:?}");
    assert!(
        held(&d, "t/child-next", "child", StopPolicy::HoldAndDrain),
        "{d:?}"
    );

    let d = schedule(&world(StopPolicy::None, StopPolicy::Hold));
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);
    assert!(held(&d, "t/child-next", "child", StopPolicy::Hold), "{d:?}");
    assert!(d.admission("t/q-next").is_some(), "{d:?}");
}

/// Resuming (`None` again) admits the queue's jobs in the next cycle, as if the hold had
/// never been.
#[test]
fn resuming_a_held_queue_admits_again() {
    let d = schedule(&world(StopPolicy::None, StopPolicy::None));
    for j in ["t/q-next", "t/child-next", "t/open-next"] {
        assert!(d.admission(j).is_some(), "{j}: {d:?}");
    }
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);
}
