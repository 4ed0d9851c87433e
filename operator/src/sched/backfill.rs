//! A `Backfill` queue (`QueueingStrategy::Backfill`): the first job that does not start
//! gets a reservation at its earliest predicted start, and the jobs behind it start now only
//! where they do not delay it (the HPC schedulers' EASY backfilling).
//!
//! The reservation is made in phase 2, once the head has failed there too, on the state the
//! cycle has reached: the free whole GPUs of each of the head's types now, and the running
//! jobs' (and this cycle's admissions') predicted ends (`estimate`). Its time is the
//! earliest at which the head's GPUs are free on one type. A job behind the head may then
//! start on a type other than the reservation's, or on the reservation's when it is
//! predicted to end by then. EASY backfilling also lends the GPUs free at the reserved time
//! beyond the head's need to jobs that run past it; here they are not lent: the reservation
//! counts GPUs, not the nodes they are on, so "spare" GPUs are often the very ones a gang
//! of whole nodes needs (lending them let 8-GPU jobs wait longer than under `Strict` on the
//! Philly trace). For the same reason a head that does not start although enough GPUs are
//! free now (they are scattered) gets no backfill at all: nothing ends before "now".
//! Nothing is ever preempted for a reservation: a job that overruns its prediction only
//! moves it later, cycle by cycle. A head whose start cannot be predicted (it needs GPUs of
//! a running job without a prediction) or that a limit holds (a limit the jobs behind would
//! use up too) holds the queue as `Strict` does.

use std::collections::HashMap;

use super::cycle_state::{Cycle, Pending};
use super::decisions::WaitReason;
use super::estimate::{OVERRUN_SECONDS, Timeline, predicted_end};
use super::ids::{FlavorId, IdVec, JobIdx, QueueId};

/// The reservation of a backfill queue's head.
#[derive(Clone, Debug)]
pub(super) struct Reservation {
    head: JobIdx,
    /// When the head is predicted to start, and on which GPU type; None: not predictable.
    at: Option<(i64, FlavorId)>,
}

/// Each backfill queue's reservation, made at the first job behind its head.
pub(super) type Reservations = HashMap<QueueId, Reservation>;

impl Cycle<'_> {
    /// The reservation of `head`, a backfill queue's first job that does not start.
    fn reservation(&self, head: &Pending) -> Reservation {
        let snap = self.snap;
        if self
            .t
            .check_limits(snap, head.queue, &snap.job(head.job).user, head.milli)
            .is_err()
        {
            return Reservation {
                head: head.job,
                at: None,
            };
        }
        let lines = self.timelines(&head.flavors);
        let best = head
            .flavors
            .iter()
            .filter_map(|&f| Some((lines[f].earliest(head.milli, None, snap.now)?, f)))
            .min();
        Reservation {
            head: head.job,
            at: best,
        }
    }

    /// Free milli-GPUs over time of each of `flavors` (others stay empty): free whole GPUs now,
    /// and what the running jobs and this cycle's admissions give back when they are
    /// predicted to end.
    fn timelines(&self, flavors: &[FlavorId]) -> IdVec<FlavorId, Timeline> {
        let (snap, now) = (self.snap, self.snap.now);
        let mut lines = IdVec::filled(Timeline::new(0), self.c.flavor_names.len());
        for &f in flavors {
            let free = i64::from(self.c.free_summary(&[f]).1) * 1000;
            lines[f].add(i64::MIN, None, free);
        }
        for r in self.runs.iter().filter(|r| flavors.contains(&r.flavor)) {
            let end = if r.gone {
                Some(now + OVERRUN_SECONDS)
            } else {
                predicted_end(snap.job(r.job), now)
            };
            if let Some(end) = end {
                lines[r.flavor].add(end, None, r.milli as i64);
            }
        }
        for &(j, _, f, milli) in self.admitted.iter().filter(|a| flavors.contains(&a.2)) {
            if let Some(d) = snap.job(j).predicted_duration_seconds {
                lines[f].add(now.saturating_add(d.max(1)), None, milli as i64);
            }
        }
        lines
    }

    /// Phase 2 for `p`, behind `head` in a backfill queue: started on the GPU types where it
    /// does not delay the head's reservation (made here for the queue's first such job), or
    /// the reason it waits.
    pub(super) fn backfill(
        &mut self,
        p: &Pending,
        head: &Pending,
        reservations: &mut Reservations,
    ) -> Result<(), WaitReason> {
        let snap = self.snap;
        let res = match reservations.get(&p.queue) {
            Some(r) if r.head == head.job => r.clone(),
            _ => {
                let r = self.reservation(head);
                reservations.insert(p.queue, r.clone());
                r
            }
        };
        let (queue, head_id) = (
            snap.queue(p.queue).name.clone(),
            snap.job(head.job).id.clone(),
        );
        let Some((at, reserved)) = res.at else {
            return Err(WaitReason::BehindQueueHead {
                queue,
                head: head_id,
            });
        };
        let ends_before = snap
            .job(p.job)
            .predicted_duration_seconds
            .is_some_and(|d| snap.now.saturating_add(d.max(1)) <= at);
        let flavors: Vec<FlavorId> = p
            .flavors
            .iter()
            .copied()
            .filter(|&f| f != reserved || ends_before)
            .collect();
        let wait = WaitReason::BehindReservation {
            queue,
            head: head_id,
            at,
        };
        if flavors.is_empty() {
            return Err(wait);
        }
        let allowed = Pending {
            flavors,
            ..p.clone()
        };
        if self.bonus(&allowed) {
            Ok(())
        } else {
            Err(wait)
        }
    }
}
