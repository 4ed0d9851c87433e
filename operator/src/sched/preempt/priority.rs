//! Priority preemption: a job takes the room of its own queue's lower-priority jobs (in a
//! queue that allows it), alone or, in a combined plan, with other VirtualClusters' bonus
//! jobs when that leaves it within its guarantee. Planned at the job's turn in phases 1 and 2
//! when nothing else can start it, and in phase 3.

use super::holdings::Holdings;
use super::{Claim, Kind, Terms, reclaim};
use crate::sched::cycle_state::{Cycle, Pending};
use crate::sched::ids::{FlavorId, IdVec, RunIdx};
use crate::sched::reclaim::RunInfo;

/// The queue's lower-priority jobs; only bonus ones for a job that would run as `bonus`:
/// a job that runs as bonus displaces only bonus work on its own, and guaranteed work goes
/// only in a `combined` plan, which also takes other VCs' bonus jobs and must leave the job
/// within its guarantee ([`Combined`]).
pub(super) fn eligible(claim: &Claim, bonus: bool, combined: bool, r: &RunInfo) -> bool {
    (r.queue == Some(claim.queue) && r.priority < claim.priority && (r.bonus || !bonus || combined))
        || (combined && reclaim::eligible(claim, r))
}

/// A combined plan's rule. A combined plan that reclaims from other VCs or evicts guaranteed
/// work must leave the job within its guarantee (Kueue: "only eligible to do preemptions if
/// it fits fully within nominal quota"), or both could be reclaimed at once. That is judged
/// as the next cycles fill the guarantee: by priority once the job runs (`fits_within`,
/// [`Cycle::combined_may_fit`]), and with only the victims gone where phase 1 offers it a
/// type first ([`Combined::short`]).
pub(super) struct Combined {
    fits_within: bool,
    /// Per run, whether evicting it demands the job end within its guarantee.
    demands: IdVec<RunIdx, bool>,
    own: Holdings,
}

impl Combined {
    fn demanding(&self, vs: &[RunIdx]) -> bool {
        vs.iter().any(|&v| self.demands[v])
    }

    /// No further victim can mend a set that demands the guarantee the job cannot reach.
    pub(super) fn never(&self, vs: &[RunIdx]) -> bool {
        self.demanding(vs) && !self.fits_within
    }

    /// The next cycle's phase 1 offers the job the types within its guarantee: beyond it on
    /// `f` but within it on another type, the job is placed or reclaims there and the
    /// victims' room goes unused. Within it on none, phase 2 lends it the room and the cycle
    /// after fills the guarantee by priority (`fits_within`).
    pub(super) fn short(&self, terms: &Terms, vs: &[RunIdx]) -> bool {
        let (t, f, milli) = (terms.t, terms.f, terms.claim.milli);
        self.demanding(vs)
            && !self.own.surely_within(t, vs, f, milli)
            && terms
                .flavors
                .iter()
                .any(|&other| other != f && self.own.maybe_within(t, vs, other, milli))
    }
}

impl<'a> Cycle<'a> {
    /// The terms of a combined plan for `p` on `f`.
    pub(super) fn combined_terms(&self, p: &Pending, f: FlavorId) -> Combined {
        Combined {
            fits_within: self.combined_may_fit(p, f),
            demands: self
                .runs
                .ids()
                .map(|r| self.demands_guarantee(p, r))
                .collect(),
            own: Holdings::of(&self.runs, p.vc),
        }
    }

    /// Phase 3 for one job: plan a priority preemption (the queue's lower-priority jobs),
    /// then one combining them with other VCs' bonus jobs when that leaves the job within its
    /// guarantee. Returns true when the job's fate is decided.
    ///
    /// A job a limit blocks (`limited`) had no turn in phases 1 and 2. Once its victims free
    /// the limit, the next cycle gives it that turn, and phase 1 reclaims on a flavor within
    /// its guarantee before phase 2 lets it borrow another. So its plan keeps that order:
    /// flavors within its guarantee first ([`Self::limited_tiers`]), the others after. Otherwise
    /// a plan could evict for a bonus placement on one flavor that the next cycle drops for a
    /// reclaim on another, the first victims' room never used. Its plan on the first tier was
    /// tried at its phase-1 turn already (`guaranteed`); it is tried again here, where
    /// jobs evicted since may have left room.
    pub(in crate::sched) fn priority_plan(&mut self, p: &Pending, limited: bool) -> bool {
        let tiers: Vec<Vec<FlavorId>> = if limited {
            let (head, rest) = self.limited_tiers(p);
            vec![head, rest]
        } else {
            vec![p.flavors.clone()]
        };
        tiers
            .iter()
            .any(|flavors| self.priority_tier(p, flavors, limited))
    }

    /// The flavors of a job a limit blocks that are within its VC's guarantee once its own
    /// lower-priority jobs there are gone (those are the victims that free the limit, and the
    /// next cycle counts without them), then the others.
    pub(in crate::sched) fn limited_tiers(&self, p: &Pending) -> (Vec<FlavorId>, Vec<FlavorId>) {
        p.flavors.iter().partition(|&&f| {
            self.t.within_guarantee(p.vc, f, p.milli) || self.combined_may_fit(p, f)
        })
    }

    /// A priority plan on `flavors`: the job's own lower-priority jobs alone on each, then
    /// with other VCs' bonus jobs when that leaves it within its guarantee. Returns true when
    /// the job's fate is decided.
    pub(in crate::sched) fn priority_tier(
        &mut self,
        p: &Pending,
        flavors: &[FlavorId],
        limited: bool,
    ) -> bool {
        for &f in flavors {
            let bonus = !self.t.within_guarantee(p.vc, f, p.milli);
            let kind = Kind::Priority {
                bonus,
                combined: false,
            };
            if self.preempt(p, f, kind, limited) {
                return true;
            }
        }
        // then the job's own lower-priority jobs and other VCs' bonus jobs together,
        // when that leaves it within its guarantee
        for &f in flavors {
            if !self.combined_may_fit(p, f) {
                continue;
            }
            let bonus = !self.t.within_guarantee(p.vc, f, p.milli);
            let kind = Kind::Priority {
                bonus,
                combined: true,
            };
            if self.preempt(p, f, kind, limited) {
                return true;
            }
        }
        false
    }

    /// Phase 3's priority plan, made at the job's turn in phase 1 or 2 when nothing else can
    /// start it: its queue allows priority preemption, and it fits nowhere now, within its
    /// guarantee or borrowed (room only shrinks during a cycle, so phase 2 could not place it
    /// either). Made in phase 3, the plan came after the lower-priority jobs behind it in its
    /// queue had taken the free part of the room it needs, and the next cycle preempted them
    /// for it (an acceptance run: admitted, then preempted 0.2 s later). In phase 1
    /// (`guaranteed_only`) only a plan that leaves the job within its guarantee is made:
    /// one that leaves it borrowing waits for its turn in phase 2, after every team's
    /// guaranteed jobs.
    /// Returns true when the job's fate is decided.
    pub(in crate::sched) fn priority_plan_at_turn(
        &mut self,
        p: &Pending,
        guaranteed_only: bool,
    ) -> bool {
        if !self.snap.queue(p.queue).priority_preemption {
            return false;
        }
        for &f in &p.flavors {
            if let Some(trial) = self.try_place(p, f, false) {
                trial.undo(&mut self.c);
                return false;
            }
        }
        self.guaranteed_plans_only = guaranteed_only;
        let decided = self.priority_plan(p, false);
        self.guaranteed_plans_only = false;
        decided
    }

    /// Whether evicting every lower-priority guaranteed job of `p`'s queue on flavor `f` would
    /// bring `p` within its VC's guarantee there (else a combined plan cannot exist). It is
    /// also how a combined plan's end is judged: the next cycle fills the guarantee by
    /// priority, so those jobs are demoted once `p` runs, evicted or not (provided `p` gets
    /// there: the plan's credit checks that phase 1 offers it no other type first).
    fn combined_may_fit(&self, p: &Pending, f: FlavorId) -> bool {
        let g = self.t.guarantee[p.vc][f];
        if g == 0 {
            return false;
        }
        let prio = self.snap.job(p.job).priority;
        let own: u64 = self
            .runs
            .iter()
            .filter(|r| {
                !r.gone
                    && !r.bonus
                    && r.flavor == f
                    && r.queue == Some(p.queue)
                    && r.priority < prio
            })
            .map(|r| r.milli)
            .sum();
        self.t.guar_used[p.vc][f].saturating_sub(own) + p.milli <= g
    }

    /// Whether evicting run `r` in a combined plan for `p` demands that `p` end within its
    /// guarantee: another VC's job (a reclaim), or guaranteed work.
    fn demands_guarantee(&self, p: &Pending, r: RunIdx) -> bool {
        self.runs[r].vc != Some(p.vc) || !self.runs[r].bonus
    }

    /// Whether a combined plan with `victims` leaves `p` within its guarantee: it does when
    /// one of them demands it (its credit refused the plan otherwise).
    pub(super) fn ends_guaranteed(&self, p: &Pending, victims: &[RunIdx]) -> bool {
        victims.iter().any(|&v| self.demands_guarantee(p, v))
    }
}
