//! Consolidation: a job within its VirtualCluster's guarantee that does not fit although
//! enough whole GPUs of its type are free, scattered over nodes, moves smaller jobs of its own
//! team (of no higher priority) that fit at once elsewhere, so that its GPUs come together
//! (KAI's consolidation). Its acceptance rule: each victim fits at once elsewhere
//! ([`Cycle::a_move`]).

use super::{Claim, Kind};
use crate::sched::cluster::{Cluster, Mode};
use crate::sched::cycle_state::{Cycle, Pending, scope};
use crate::sched::ids::{FlavorId, NodeId, RunIdx};
use crate::sched::placement::{Scope, Trial, place};
use crate::sched::reclaim::{self as search, Outcome, RunInfo};

/// Consolidation searches per cycle, for the waiting jobs first in line. A search is a
/// victim search over the team's running jobs; on a cluster whose free GPUs are scattered
/// every waiting job of a team within its guarantee would run one, every cycle (Setup A's
/// simulation, 23 openb lists, took 4× the CPU without a bound). A job not searched for
/// this cycle is in a later one, as the jobs ahead of it start.
pub(in crate::sched) const CONSOLIDATION_SEARCHES: usize = 8;

/// Domains one consolidation search tries, best first, before it gives up: each is a victim
/// search (see [`Cycle::search_for_a_move`]).
const MOVE_DOMAINS: usize = 4;

/// Its team's smaller jobs of no higher priority: moving them is the team's own trade, and
/// only ever for a larger job, so no two jobs move each other in turn. A team with cells of
/// the type also moves its smaller guaranteed jobs of any priority: its own placements
/// split the cells its guarantee promises whole, and a move keeps the moved job's standing
/// (it fits at once elsewhere, guaranteed, and buddy packing puts it into the team's own
/// cells), so a job within the cell guarantee can always start (issue 49).
pub(super) fn eligible(claim: &Claim, r: &RunInfo) -> bool {
    r.vc == Some(claim.vc)
        && r.milli < claim.milli
        && (r.priority <= claim.priority || (claim.cells && !r.bonus))
}

impl<'a> Cycle<'a> {
    /// Phase 3 for a job within its VC's guarantee that does not fit although enough whole
    /// GPUs of its type are free, scattered over nodes (see the module docs). Returns true
    /// when the job's fate is decided.
    pub(in crate::sched) fn consolidation_plan(&mut self, p: &Pending) -> bool {
        if p.whole == 0 {
            return false;
        }
        for &f in &p.flavors {
            if self.consolidations_left == 0 {
                return false;
            }
            // a search known to find nothing (`no_victims`) is skipped and not counted
            if !self.t.within_guarantee(p.vc, f, p.milli)
                || self.c.free_summary(&[f]).1 < p.whole
                || self
                    .no_victims
                    .contains(&self.no_victims_key(p, f, Kind::Consolidate, false))
            {
                continue;
            }
            self.consolidations_left -= 1;
            if self.preempt(p, f, Kind::Consolidate, false) {
                return true;
            }
        }
        false
    }

    /// The victim search of a move, with its acceptance rule: the best domain's plan, else,
    /// for a team with cells of the type, while its victims do not all fit elsewhere, the
    /// next best's with the failed domain's nodes left out ([`MOVE_DOMAINS`] at most). A team whose own jobs split its cells may
    /// free one node only by moving the jobs of another (a 4-GPU job alone on a node, with
    /// 3 GPUs free beside each of the others, cannot move; two smaller ones can), and the
    /// best domain alone was tried. None when no plan is a move.
    pub(super) fn search_for_a_move(&mut self, p: &Pending, f: FlavorId) -> Option<Outcome> {
        let mut left_out: Vec<NodeId> = Vec::new();
        // without cells of the type, the best domain only, as before
        let tries = if self.cells.has_cells(f, p.vc) {
            MOVE_DOMAINS
        } else {
            1
        };
        for _ in 0..tries {
            let within: Option<Vec<NodeId>> = (!left_out.is_empty()).then(|| {
                let mut nodes = self.c.facts[f].nodes.clone();
                if let Scope::Nodes(ns) = scope(p) {
                    nodes.retain(|n| ns.contains(n));
                }
                nodes.retain(|n| !left_out.contains(n));
                nodes
            });
            let outcome = self.search(p, f, Kind::Consolidate, false, within.as_deref());
            if self.each_victim_moves(p, f, &outcome) {
                return Some(outcome);
            }
            let Outcome::Plan { trial, .. } = &outcome else {
                search::drop_plan(&mut self.c, &mut self.runs, outcome);
                return None;
            };
            left_out.extend(trial.takes.iter().map(|(_, t)| t.node));
            search::drop_plan(&mut self.c, &mut self.runs, outcome);
        }
        None
    }

    /// The acceptance rule: a plan is a move only if every victim fits at once elsewhere
    /// ([`Self::a_move`]); it then starts again there when its pods are gone (its room is
    /// held for the rest of this cycle). An outcome without victims passes as it is.
    pub(super) fn each_victim_moves(
        &mut self,
        p: &Pending,
        f: FlavorId,
        outcome: &Outcome,
    ) -> bool {
        match outcome {
            Outcome::Plan {
                victims: vs, trial, ..
            } if !vs.is_empty() => self.a_move(p, f, vs, trial),
            _ => true,
        }
    }

    /// Whether evicting `victims` for `p` (placed by `planned` on `f`) is a move: each victim
    /// fits again whichever goes first in the next cycle, the job or its victims. Victims
    /// first: placed as the next cycle would place them (the job's room and their own free),
    /// they must leave the job room; otherwise one would go back where the job's room is and
    /// the same move would be planned again. Job first: each fits on capacity neither held
    /// nor reserved now, and that room stays taken for the rest of this cycle. Otherwise the
    /// cluster is left as it was.
    fn a_move(&mut self, p: &Pending, f: FlavorId, victims: &[RunIdx], planned: &Trial) -> bool {
        // each victim as a job to place again: its own type, and guaranteed as it is now (a
        // guaranteed placement keeps other VCs' cells whole, as `try_place`)
        let digests: Option<Vec<(Pending, FlavorId, bool)>> = victims
            .iter()
            .map(|&v| {
                let r = &self.runs[v];
                let (job, vf, guaranteed) = (r.job, r.flavor, !r.bonus);
                self.digest_one(job, &[vf], &[vf])
                    .ok()
                    .map(|pv| (pv, vf, guaranteed))
            })
            .collect();
        let Some(digests) = digests else {
            return false;
        };
        planned.lift(&mut self.c);
        let fits = self.fits_after_release(p, f, &digests);
        planned.restore(&mut self.c);
        fits && self.victims_fit_now(&digests)
    }

    /// Victims first, on the capacity free once they are gone, the job's room included (the
    /// plan lifted): each victim, then the job. The cluster is left as it was.
    fn fits_after_release(
        &mut self,
        p: &Pending,
        f: FlavorId,
        digests: &[(Pending, FlavorId, bool)],
    ) -> bool {
        let mut placed: Vec<Trial> = Vec::new();
        let mut fits = true;
        // capacity that is leaving is not in the free index: search the nodes themselves
        let nodes_of = |c: &Cluster, q: &Pending, f: FlavorId| -> Vec<NodeId> {
            match scope(q) {
                Scope::Nodes(ns) => ns.to_vec(),
                Scope::Flavor => c.facts[f].nodes.clone(),
            }
        };
        for (pv, vf, guaranteed) in digests {
            let req = self.request(pv, *vf);
            let nodes = nodes_of(&self.c, pv, *vf);
            match place(&mut self.c, &req, Mode::AfterRelease, Scope::Nodes(&nodes)) {
                Some(t) => {
                    let kept =
                        !guaranteed || self.cells.accepts(&self.c, &self.t, &t, pv.vc, pv.milli);
                    placed.push(t);
                    if !kept {
                        fits = false;
                        break;
                    }
                }
                None => {
                    fits = false;
                    break;
                }
            }
        }
        if fits {
            let req = self.request(p, f);
            let nodes = nodes_of(&self.c, p, f);
            match place(&mut self.c, &req, Mode::AfterRelease, Scope::Nodes(&nodes)) {
                Some(t) => t.undo(&mut self.c),
                None => fits = false,
            }
        }
        for t in placed.drain(..).rev() {
            t.undo(&mut self.c);
        }
        fits
    }

    /// The job first: each victim placed on what is free now, and that room kept for the
    /// rest of this cycle; when one does not fit, none is.
    fn victims_fit_now(&mut self, digests: &[(Pending, FlavorId, bool)]) -> bool {
        let mut placed: Vec<Trial> = Vec::new();
        for (pv, vf, guaranteed) in digests {
            match self.try_place(pv, *vf, *guaranteed) {
                Some(t) => placed.push(t),
                None => {
                    for t in placed.into_iter().rev() {
                        t.undo(&mut self.c);
                    }
                    return false;
                }
            }
        }
        true
    }
}
