//! What a waiting job's status says about its wait, and when a change is worth a write.
//!
//! Each cycle the scheduler finds every waiting job's reason and place in its queue, and the
//! job's status carries both (the `Admitted=False` condition's reason and message,
//! `queuePosition`). Rewritten on every change, a queue of N waiting jobs costs N status
//! applies, the costliest write the operator makes, each time one job ahead of them starts or
//! any GPU frees up: every place moves by one and every reason's counts change, so O(N²)
//! writes over the queue's life. Here the status follows a change of *cause* at once (another
//! reason, another set of victims, another limit), and a job's place and the counts in its
//! message when they have moved enough to matter to whoever reads them:
//!
//! - within the first [`EXACT_PLACES`] of its queue, the place is always exact;
//! - further back, it is rewritten once it has moved by a quarter or more since it was last
//!   written, so a published place is at most a third above the true one (a job moving up)
//!   and a fifth below it (moving back): each job is rewritten O(log N) times on its way up;
//! - counts alone (GPUs in use, free) are rewritten at most every [`REFRESH_SECONDS`];
//! - the estimated start when it appears, disappears, or moves by more than
//!   [`ESTIMATE_TOLERANCE_SECONDS`] or a tenth of the time left until it (so a job that
//!   waits behind a long run is not rewritten each time a prediction is overrun by a minute).

use crate::sched::WaitReason;

/// The head of a queue, where every change of place is written.
pub const EXACT_PLACES: u32 = crate::api::trainingjob::EXACT_QUEUE_POSITIONS;

/// The longest the counts in a waiting job's message go without a refresh.
pub const REFRESH_SECONDS: i64 = 120;

/// The least change of an estimated start worth a write.
pub const ESTIMATE_TOLERANCE_SECONDS: i64 = 60;

/// A waiting job's wait as its status says it (or is about to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub reason: WaitReason,
    /// 1-based place in its queue (`status.queuePosition`).
    pub position: Option<u32>,
    /// When it is estimated to start, in seconds (`status.estimatedStartTime`); None when it
    /// cannot be estimated.
    pub estimate: Option<i64>,
    /// When this was decided, in seconds.
    pub at: i64,
}

/// What the job's status should say now: the wait the cycle found, or, when it differs from
/// the `published` one only by less than is worth a write, the published one unchanged.
pub fn publish(
    published: Option<&Published>,
    reason: &WaitReason,
    position: Option<u32>,
    estimate: Option<i64>,
    now: i64,
) -> Published {
    let fresh = || Published {
        reason: reason.clone(),
        position,
        estimate,
        at: now,
    };
    let Some(old) = published else {
        return fresh();
    };
    if !close(old.estimate, estimate, now) {
        return fresh();
    }
    if old.reason == *reason && old.position == position {
        return old.clone();
    }
    let minor = old.reason.same_cause(reason) && !moved(old.position, position);
    if minor && now - old.at < REFRESH_SECONDS {
        return old.clone();
    }
    fresh()
}

/// Whether an estimated start moved too little to be written: by at most
/// [`ESTIMATE_TOLERANCE_SECONDS`] or a tenth of the time from now until the one published.
fn close(old: Option<i64>, new: Option<i64>, now: i64) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => {
            old.abs_diff(new) <= ESTIMATE_TOLERANCE_SECONDS.max((old - now).max(0) / 10) as u64
        }
        (old, new) => old == new,
    }
}

/// Whether a place changed enough to be written. A place that is or was within the head is
/// always written, so a published place within the first [`EXACT_PLACES`] is exact.
fn moved(old: Option<u32>, new: Option<u32>) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => {
            old != new
                && (new <= EXACT_PLACES
                    || old <= EXACT_PLACES
                    || u64::from(old.abs_diff(new)) * 4 >= u64::from(old))
        }
        (old, new) => old != new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Gpus;

    fn quota(in_use: u32) -> WaitReason {
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus::whole(in_use),
            needed_gpus: Gpus(8000),
            share_kept_by: None,
            required: None,
        }
    }

    fn at(reason: WaitReason, position: Option<u32>, at: i64) -> Published {
        Published {
            reason,
            position,
            estimate: None,
            at,
        }
    }

    #[test]
    fn a_new_wait_is_written() {
        assert_eq!(
            publish(None, &quota(8), Some(40), None, 5),
            at(quota(8), Some(40), 5)
        );
    }

    #[test]
    fn another_cause_is_written_at_once() {
        let old = at(quota(8), Some(40), 0);
        let victims = WaitReason::WaitingForPreemption {
            reason: crate::sched::PreemptionReason::Reclaim,
            victims: vec!["a/b".into()],
        };
        assert_eq!(
            publish(Some(&old), &victims, Some(40), None, 1).reason,
            victims
        );
        let more = WaitReason::WaitingForPreemption {
            reason: crate::sched::PreemptionReason::Reclaim,
            victims: vec!["a/b".into(), "a/c".into()],
        };
        let old = at(victims, None, 0);
        assert_eq!(publish(Some(&old), &more, None, None, 1).reason, more);
    }

    #[test]
    fn counts_alone_wait_for_the_refresh() {
        let old = at(quota(6), Some(3), 100);
        assert_eq!(publish(Some(&old), &quota(7), Some(3), None, 150), old);
        assert_eq!(
            publish(Some(&old), &quota(7), Some(3), None, 100 + REFRESH_SECONDS),
            at(quota(7), Some(3), 100 + REFRESH_SECONDS)
        );
    }

    #[test]
    fn the_head_of_a_queue_is_exact() {
        let old = at(quota(8), Some(EXACT_PLACES + 1), 0);
        let new = publish(Some(&old), &quota(8), Some(EXACT_PLACES), None, 1);
        assert_eq!(new.position, Some(EXACT_PLACES));
        let new = publish(Some(&new), &quota(8), Some(EXACT_PLACES - 1), None, 2);
        assert_eq!(new.position, Some(EXACT_PLACES - 1));
        // Pushed back out of the head (a job of higher priority arrived): a place that reads
        // as exact is never left behind.
        let new = publish(Some(&new), &quota(8), Some(EXACT_PLACES + 1), None, 3);
        assert_eq!(new.position, Some(EXACT_PLACES + 1));
    }

    #[test]
    fn further_back_a_place_is_written_once_it_moved_by_a_quarter() {
        let old = at(quota(8), Some(400), 0);
        assert_eq!(publish(Some(&old), &quota(8), Some(301), None, 1), old);
        assert_eq!(
            publish(Some(&old), &quota(8), Some(300), None, 1).position,
            Some(300)
        );
        assert_eq!(publish(Some(&old), &quota(8), Some(499), None, 1), old);
        assert_eq!(
            publish(Some(&old), &quota(8), Some(500), None, 1).position,
            Some(500)
        );
        assert_eq!(publish(Some(&old), &quota(8), None, None, 1).position, None);
    }

    /// An estimated start is written when it appears or goes, and when it moves by more than
    /// a minute or a tenth of the time left; the wait itself unchanged.
    #[test]
    fn an_estimate_is_written_once_it_moved_enough() {
        let old = Published {
            estimate: Some(10_000),
            ..at(quota(8), Some(1), 0)
        };
        let said = |e, now| publish(Some(&old), &quota(8), Some(1), e, now);
        // a tenth of the 10,000 s left: 1,000 s either way is noise
        assert_eq!(said(Some(10_900), 1), old);
        assert_eq!(said(Some(11_001), 1).estimate, Some(11_001));
        assert_eq!(said(None, 1).estimate, None);
        // close to it, a minute is the least change written
        assert_eq!(said(Some(10_050), 9_990), old);
        assert_eq!(said(Some(10_070), 9_990).estimate, Some(10_070));
        let unknown = at(quota(8), Some(1), 0);
        assert_eq!(
            publish(Some(&unknown), &quota(8), Some(1), Some(500), 1).estimate,
            Some(500)
        );
    }

    /// A queue of 2,000 jobs drained one job per cycle, with the counts changing each time:
    /// each job's place is written O(log N) times, not once per job ahead of it, and what
    /// its status says stays within the bounds the module promises.
    #[test]
    fn a_draining_queue_costs_few_writes_and_stays_close() {
        const N: u32 = 2_000;
        let mut published: Vec<Option<Published>> = vec![None; N as usize];
        let mut writes = 0u64;
        for started in 0..N {
            for job in started..N {
                let place = job - started + 1;
                let reason = quota(started % 8);
                let now = i64::from(started); // one cycle a second
                let p = publish(
                    published[job as usize].as_ref(),
                    &reason,
                    Some(place),
                    None,
                    now,
                );
                if published[job as usize].as_ref() != Some(&p) {
                    writes += 1;
                }
                let shown = p.position.unwrap();
                if place <= EXACT_PLACES {
                    assert_eq!(shown, place);
                } else {
                    assert!(shown >= place && u64::from(shown) * 3 <= u64::from(place) * 4);
                }
                published[job as usize] = Some(p);
            }
        }
        // Every change written: N (N + 1) / 2 = 2,001,000 writes.
        let per_job = writes as f64 / f64::from(N);
        assert!(per_job < 60.0, "{per_job} writes per job");
    }
}
