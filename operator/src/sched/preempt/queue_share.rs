//! Queue share: a queue below its share of its VirtualCluster's guarantee takes it back
//! from sibling queues that use more than theirs (Volcano's capacity reclaim, YuniKorn's
//! guaranteed queues), with other VirtualClusters' bonus jobs reclaimed in the same plan,
//! when the job then runs within its own share and its VC's guarantee.

use std::collections::BTreeMap;

use super::holdings::Holdings;
use super::{Claim, Kind, Terms, reclaim};
use crate::sched::cycle_state::{Cycle, Pending};
use crate::sched::ids::{QueueId, RunIdx};
use crate::sched::reclaim::RunInfo;
use crate::sched::tenants::{Freed, Tenants};

/// Within the team: jobs of no higher priority whose queue line, where it parts from the
/// job's, uses more than its firm share, by at least the job's GPUs; and other teams' bonus
/// jobs, reclaimed in the same plan (KAI takes a department's quota back from a sibling
/// project and from a borrowing department at once). The plan must leave the job within its
/// VC's guarantee either way ([`Share`]).
pub(super) fn eligible(claim: &Claim, t: &Tenants, r: &RunInfo) -> bool {
    (r.vc == Some(claim.vc)
        && r.priority <= claim.priority
        && r.queue
            .and_then(|rq| t.parting(claim.queue, rq))
            .is_some_and(|s| r.milli <= t.beyond_share(s)))
        || reclaim::eligible(claim, r)
}

/// A queue-share plan's rule: it takes from each queue line only what the line uses beyond
/// its share ([`share_taken_only_beyond`]), and leaves the job within its queue's share and
/// beside all of its team's running jobs within the guarantee.
pub(super) struct Share {
    own: Holdings,
}

impl Share {
    /// A set that takes a line below its share stays so with more victims.
    pub(super) fn never(terms: &Terms, fr: &[Freed]) -> bool {
        !share_taken_only_beyond(terms.t, terms.claim.queue, fr)
    }

    /// The job must fit beside all of the team's running jobs, not only beside those
    /// guaranteed now. (Counting only these, a team beyond its guarantee freed room that its
    /// bonus jobs took back, and the victims returned to their queue ahead of the job: the
    /// same plan for ever.)
    pub(super) fn short(&self, terms: &Terms, vs: &[RunIdx], fr: &[Freed]) -> bool {
        let (t, q, milli) = (terms.t, terms.claim.queue, terms.claim.milli);
        !self.own.surely_within(t, vs, terms.f, milli) || !t.within_share_after(q, milli, fr)
    }
}

/// Whether a queue-share plan freeing `freed` (queue, milli) for a job of `q` takes from each
/// queue line no more than it uses beyond its share. So the line stays at or above its share,
/// each victim would put it beyond again were it to come back, and the room a plan frees is
/// not offered to the victims' queue before the job's in the next cycle (the queue furthest
/// below its share goes first). Volcano takes one victim more (while the queue is still
/// above its share); the property `queue_share_reclaims_settle` found that taking a large
/// job that way puts its queue below its share, first in line for the room, and the same
/// two plans then alternate for ever. Other teams' bonus jobs reclaimed in the same plan take
/// nothing from a line of the job's team.
fn share_taken_only_beyond(t: &Tenants, q: QueueId, freed: &[Freed]) -> bool {
    let mut by_side: BTreeMap<QueueId, u64> = BTreeMap::new();
    for &(fq, _, milli) in freed {
        if t.queue_vc[fq] != t.queue_vc[q] {
            continue;
        }
        let Some(side) = t.parting(q, fq) else {
            return false;
        };
        *by_side.entry(side).or_insert(0) += milli;
    }
    by_side
        .iter()
        .all(|(&side, &sum)| sum <= t.beyond_share(side))
}

impl<'a> Cycle<'a> {
    /// The terms of a queue-share plan for `p`.
    pub(super) fn share_terms(&self, p: &Pending) -> Share {
        Share {
            own: Holdings::of(&self.runs, p.vc),
        }
    }

    /// Phase 3 for a job whose queue is below its share of its VC's guarantee: take it back
    /// from sibling queues that use more than theirs, on a flavor where the job then runs
    /// within the guarantee. Returns true when the job's fate is decided.
    pub(in crate::sched) fn share_plan(&mut self, p: &Pending, limited: bool) -> bool {
        if !self.may_take_share(p) {
            return false;
        }
        for &f in &p.flavors {
            if self.t.guarantee[p.vc][f] >= p.milli && self.preempt(p, f, Kind::QueueShare, limited)
            {
                return true;
            }
        }
        false
    }

    /// Whether a queue-share plan may exist for `p`: its queue is entitled to it, and another
    /// queue line of its VC uses more than its firm share.
    pub(in crate::sched) fn may_take_share(&self, p: &Pending) -> bool {
        let t = &self.t;
        t.entitlement[p.queue] >= t.queue_used[p.queue] + p.milli
            && t.queue_vc.iter_enumerated().any(|(q, vc)| {
                *vc == Some(p.vc) && !t.chain[p.queue].contains(&q) && t.beyond_share(q) > 0
            })
    }

    /// The sibling queue that keeps what `p`'s queue could take back as its share: `p`'s
    /// queue is within its share with `p`, and the sibling uses more than its own, but every
    /// job it runs there is of higher priority than `p` (`Kind::QueueShare` takes none of
    /// those). The message says so, or the wait reads as the team's guarantee simply used up.
    pub(in crate::sched) fn share_kept_by(&self, p: &Pending) -> Option<String> {
        if !self.may_take_share(p) {
            return None;
        }
        let t = &self.t;
        let prio = self.snap.job(p.job).priority;
        let mut kept = None;
        for r in self.runs.iter().filter(|r| !r.gone && r.vc == Some(p.vc)) {
            let Some(sibling) = r
                .queue
                .and_then(|rq| t.parting(p.queue, rq))
                .filter(|&s| t.beyond_share(s) > 0)
            else {
                continue;
            };
            if r.priority <= prio {
                // Something could be taken back: the wait has another cause.
                return None;
            }
            kept.get_or_insert(sibling);
        }
        kept.map(|s| self.snap.queue(s).name.clone())
    }
}
