//! Scenario tests for a `Backfill` queue (issue 53 item 3): the first job that does not
//! start holds a reservation at its earliest predicted start; the jobs behind it start now
//! only if they do not delay it; an overrun moves the reservation and kills nobody; without
//! predictions the queue is `Strict`.

use super::fixtures::*;
use super::*;

/// A team of 8 guaranteed A100s on one node, queue `q` with `strategy`. `t/running` holds 6
/// GPUs since 0, predicted to run `predicted` seconds; `t/big` (8 GPUs) heads the queue,
/// then `behind` in order, each (id, GPUs, predicted seconds). It is 1000 s now.
fn world(
    strategy: QueueingStrategy,
    predicted: Option<i64>,
    behind: &[(&str, u32, Option<i64>)],
) -> Snapshot {
    let mut q = queue("q", "t");
    q.strategy = strategy;
    let mut running = run(
        job("t/running", "q", 1, 6),
        &[("n0", &[0, 1, 2, 3, 4, 5])],
        false,
        0,
        None,
    );
    running.predicted_duration_seconds = predicted;
    let mut jobs = vec![running, job("t/big", "q", 1, 8)];
    for (i, &(id, gpus, p)) in behind.iter().enumerate() {
        let mut j = job(id, "q", 1, gpus);
        j.queued_at = 1 + i as i64;
        j.predicted_duration_seconds = p;
        jobs.push(j);
    }
    snapshot(
        1000,
        vec![node("n0", "A100", 8, None)],
        vec![vc("t", "A100", 8)],
        vec![q],
        jobs,
    )
}

/// The head waits for the running job's predicted end at 3600: a 2-GPU job predicted to end
/// at 2000 starts in the gap; one predicted to run past 3600 would delay the head and waits,
/// told when the reservation begins and whose it is.
#[test]
fn a_small_job_that_ends_in_time_starts_and_one_that_would_delay_the_head_waits() {
    let d = schedule(&world(
        QueueingStrategy::Backfill,
        Some(3600),
        &[("t/quick", 2, Some(1000)), ("t/long", 2, Some(5000))],
    ));
    assert!(d.admission("t/quick").is_some(), "{d:?}");
    assert!(d.admission("t/big").is_none(), "{d:?}");
    assert_eq!(
        d.waiting_reason("t/long"),
        Some(&WaitReason::BehindReservation {
            queue: "q".into(),
            head: "t/big".into(),
            at: 3600,
        })
    );
    // the message says when, as a time, and why
    let msg = d.waiting_reason("t/long").unwrap().to_string();
    assert!(
        msg.contains("t/big") && msg.contains("1970-01-01T01:00:00Z"),
        "{msg}"
    );
    // a strict queue starts neither
    let d = schedule(&world(
        QueueingStrategy::Strict,
        Some(3600),
        &[("t/quick", 2, Some(1000)), ("t/long", 2, Some(5000))],
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
}

/// A job with no prediction may never end: it would delay the head, and waits.
#[test]
fn a_job_without_prediction_does_not_backfill_into_the_head_s_room() {
    let d = schedule(&world(
        QueueingStrategy::Backfill,
        Some(3600),
        &[("t/unknown", 2, None)],
    ));
    assert!(waits_with(&d, "t/unknown", "BehindReservation"), "{d:?}");
}

/// The running job was predicted to end at 600 and still runs at 1000: it is not killed for
/// the reservation, which moves to "soon" (now + `OVERRUN_SECONDS`); a job that would run
/// past that waits behind it.
#[test]
fn an_overrun_moves_the_reservation_and_kills_nobody() {
    let d = schedule(&world(
        QueueingStrategy::Backfill,
        Some(600),
        &[("t/quick", 2, Some(1000))],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert_eq!(
        d.waiting_reason("t/quick"),
        Some(&WaitReason::BehindReservation {
            queue: "q".into(),
            head: "t/big".into(),
            at: 1000 + OVERRUN_SECONDS,
        })
    );
    // a shorter job still fits in what is left of the gap
    let d = schedule(&world(
        QueueingStrategy::Backfill,
        Some(600),
        &[("t/tiny", 2, Some(30))],
    ));
    assert!(d.admission("t/tiny").is_some(), "{d:?}");
}

/// Without predictions the head's start cannot be told: a backfill queue decides exactly as
/// a strict one, every job behind the head waiting with `BehindQueueHead`.
#[test]
fn without_predictions_backfill_is_strict() {
    let behind = [("t/a", 2, None), ("t/b", 1, None)];
    let backfill = schedule(&world(QueueingStrategy::Backfill, None, &behind));
    let strict = schedule(&world(QueueingStrategy::Strict, None, &behind));
    assert_eq!(backfill, strict);
    assert!(
        waits_with(&backfill, "t/a", "BehindQueueHead"),
        "{backfill:?}"
    );
}

/// The head needs 8 A100s at 3600, when 10 will be free: the 2 beyond its need are not lent
/// to a job that runs on past the reservation (they are counted, not placed: they may be
/// the head's own node's); GPUs of a type the head does not take are not the reservation's
/// at all.
#[test]
fn other_types_do_not_delay_the_reservation_and_spare_gpus_are_not_lent() {
    let mut s = world(QueueingStrategy::Backfill, Some(3600), &[]);
    s.nodes.push(node("n1", "A100", 4, None));
    s.nodes.push(node("h0", "H100", 4, None));
    s.virtual_clusters[0].guarantee[0].gpus = 12;
    // the head takes A100s only; 4 of n1's GPUs are held by a job without prediction
    s.jobs[1].gpu_types = vec![Flavor::new("A100")];
    s.jobs.push(run(
        job("t/forever", "q", 1, 2),
        &[("n1", &[0, 1])],
        false,
        0,
        None,
    ));
    for (i, (id, gpus)) in [("t/spare", 2), ("t/h100", 4)].into_iter().enumerate() {
        let mut j = job(id, "q", 1, gpus);
        j.queued_at = 1 + i as i64;
        j.gpu_types = vec![Flavor::new(if id == "t/h100" { "H100" } else { "A100" })];
        s.jobs.push(j);
    }
    let d = schedule(&s);
    // A100s at 3600: 2 + 2 free now, 6 back = 10, the head needs 8
    assert!(waits_with(&d, "t/spare", "BehindReservation"), "{d:?}");
    assert!(d.admission("t/h100").is_some(), "{d:?}");
}
