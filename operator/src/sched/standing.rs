//! Standing: which running jobs are within their VirtualCluster's guarantee and which are
//! bonus, settled afresh at the start of each cycle (most important first), with the
//! preemptions a limit still needs kept and the jobs that return to their queue charged to
//! its limits.

use std::cmp::Reverse;

use super::cells::Cells;
use super::cluster::Cluster;
use super::decisions::Decisions;
use super::ids::{FlavorId, IdVec, RunIdx};
use super::model::Snapshot;
use super::reclaim::RunInfo;
use super::tenants::Tenants;

/// The standing of every running job, charged to `t` (built against `cap`), its changes in
/// `out`; returns the cells as the standing leaves them.
pub(super) fn settle(
    snap: &Snapshot,
    c: &Cluster,
    cap: IdVec<FlavorId, u64>,
    t: &mut Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    out: &mut Decisions,
) -> Cells {
    let was_bonus: IdVec<RunIdx, bool> = runs.iter().map(|r| r.bonus).collect();
    let (order, mut cells) = settle_standing(snap, c, t, runs, out);
    if keep_preemptions_a_limit_needs(snap, t, runs, &order, out) {
        // The standing counted the victims whose withdrawal a limit then refused: they
        // leave after all, so the others' standing is settled again without them. A
        // sibling was demoted for as long as the victim checkpointed, and promoted when it
        // left (Demoted, then Promoted, within seconds in an acceptance run).
        for i in runs.ids() {
            runs[i].bonus = was_bonus[i];
        }
        out.promotions.clear();
        out.demotions.clear();
        *t = Tenants::build(snap, &c.flavor_by_name, cap);
        cells = settle_standing(snap, c, t, runs, out).1;
    }
    charge_jobs_that_return(snap, t, runs);
    cells
}

/// A job leaving for a drain or an unhealthy GPU (no job takes its place) comes back to its
/// queue: its team's limits still count it, so that no job of the team takes the room it
/// will need under them and is preempted for it when it returns (uncharged, a job the
/// team's limit held back started the moment a drain began, and was preempted 16 s later).
/// Its GPUs still come free for placement as its pods go, and its guarantee for whoever
/// waits within it, as before.
fn charge_jobs_that_return(snap: &Snapshot, t: &mut Tenants, runs: &IdVec<RunIdx, RunInfo>) {
    for i in runs.ids() {
        let r = &runs[i];
        let job = snap.job(r.job);
        let returns = job
            .running
            .as_ref()
            .and_then(|run| run.checkpoint_request.as_ref())
            .is_some_and(|req| !req.reason.for_a_job());
        if let (true, true, Some(q)) = (r.gone, returns, r.queue) {
            t.hold_limits(q, &job.user, r.milli);
        }
    }
}

/// A withdrawal that would take its tenant above a limit is not made. A job that a limit
/// (the VirtualCluster's, a queue's `maxShare`, a user's) kept waiting is admitted while its
/// victims leave, on their credit against the limit, and it may be placed on other free GPUs;
/// once it runs it no longer waits, so the victims' preemption looks stale (`cancel`). Let
/// go, a victim ran on beside it and the tenant stayed above its cap for good (an acceptance
/// run saw 12 GPUs held under a limit of 8). Each victim whose withdrawal finds its scope
/// above a limit goes on leaving instead (the least important first; one kept may bring the
/// others within it).
fn keep_preemptions_a_limit_needs(
    snap: &Snapshot,
    t: &mut Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    order: &[RunIdx],
    out: &mut Decisions,
) -> bool {
    let mut kept = false;
    if out.cancellations.is_empty() {
        return kept;
    }
    for &i in order.iter().rev() {
        let r = &runs[i];
        let job = snap.job(r.job);
        let Some(q) = r.queue else { continue };
        if !out.cancellations.iter().any(|c| c.job == job.id)
            || t.check_limits(snap, q, &job.user, 0).is_ok()
        {
            continue;
        }
        t.charge(q, &job.user, r.flavor, r.milli, r.bonus, false);
        out.cancellations.retain(|c| c.job != job.id);
        out.promotions.retain(|x| x != &job.id);
        out.demotions.retain(|x| x != &job.id);
        runs[i].gone = true;
        kept = true;
    }
    kept
}

/// Standing: which running jobs are within their VC's guarantee and which are bonus is
/// decided afresh each cycle, most important first (see `standing_order`), and charged to
/// `t`, in three steps. First by priority alone (the counts, [`fill_by_count`]); then the
/// cells are built from the jobs that stay guaranteed (a job that the fill demotes no
/// longer binds its domain); then, in the same order, a job that the guarantee holds and
/// that did not stay guaranteed binds its domains only where that keeps other VCs' cells
/// obtainable, else it is bonus (reclaimable) and the room goes on to the next. Built from
/// last cycle's standing instead, the cells kept a low-priority job's node bound while the
/// high-priority job's promotion was refused for the node it needed, so the high-priority
/// job was reclaimed (issue 49). Changes of standing go to `out`; returns the order and the
/// cells.
fn settle_standing(
    snap: &Snapshot,
    c: &Cluster,
    t: &mut Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    out: &mut Decisions,
) -> (Vec<RunIdx>, Cells) {
    let mut order: Vec<RunIdx> = runs.ids().filter(|&i| !runs[i].gone).collect();
    order.sort_by_key(|&i| standing_order(&runs[i], snap.job(runs[i].job).id.as_str()));
    let held = fill_by_count(t, runs, &order);
    let stays = |i: RunIdx| !runs[i].bonus && held[i];
    let stayed: IdVec<RunIdx, bool> = runs.ids().map(stays).collect();
    let mut cells = Cells::build(snap, c, t, runs, |i| stayed[i]);
    for &i in &order {
        let r = &runs[i];
        let (Some(q), Some(vc)) = (r.queue, r.vc) else {
            continue;
        };
        let guaranteed =
            t.within_guarantee(vc, r.flavor, r.milli) && (stayed[i] || cells.promote(c, t, r, vc));
        out.note_standing(&snap.job(r.job).id, r.bonus, guaranteed);
        t.charge(
            q,
            &snap.job(r.job).user,
            r.flavor,
            r.milli,
            !guaranteed,
            true,
        );
        runs[i].bonus = !guaranteed;
    }
    let cells = swap_refused_promotions(snap, c, t, runs, &order, cells, out);
    (order, cells)
}

/// Lower-priority guaranteed jobs a refused promotion may displace, per refused job.
const SWAP_CANDIDATES: usize = 8;

/// A bonus job whose promotion the cells refused while lower-priority jobs of its VC stay
/// guaranteed is more important than they are: one of them (the least important first)
/// is demoted in its place where, with that job's domains no longer bound, the promotion
/// keeps every VC's cells obtainable and the guarantee's count holds. The fill by counts
/// had kept the larger lower-priority job and demoted a smaller one whose node stayed
/// bound by its neighbours, so the promotion found no clean node (the history property,
/// a random seed). Returns the cells as the swaps leave them.
fn swap_refused_promotions(
    snap: &Snapshot,
    c: &Cluster,
    t: &mut Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    order: &[RunIdx],
    mut cells: Cells,
    out: &mut Decisions,
) -> Cells {
    for &b in order {
        let (Some(qb), Some(vc)) = (runs[b].queue, runs[b].vc) else {
            continue;
        };
        let (f, priority, milli) = (runs[b].flavor, runs[b].priority, runs[b].milli);
        if !runs[b].bonus || !cells.guard(f) {
            continue;
        }
        let lower: Vec<RunIdx> = order
            .iter()
            .rev()
            .copied()
            .filter(|&l| {
                let r = &runs[l];
                !r.bonus && r.vc == Some(vc) && r.flavor == f && r.priority < priority
            })
            .take(SWAP_CANDIDATES)
            .collect();
        for l in lower {
            let Some(ql) = runs[l].queue else { continue };
            let (user_l, milli_l) = (&snap.job(runs[l].job).user, runs[l].milli);
            t.charge(ql, user_l, f, milli_l, false, false);
            runs[l].bonus = true;
            if t.within_guarantee(vc, f, milli) {
                let mut without = Cells::build(snap, c, t, runs, |i| !runs[i].bonus);
                if without.promote(c, t, &runs[b], vc) {
                    t.charge(ql, user_l, f, milli_l, true, true);
                    let user_b = &snap.job(runs[b].job).user;
                    t.charge(qb, user_b, f, milli, true, false);
                    t.charge(qb, user_b, f, milli, false, true);
                    runs[b].bonus = false;
                    for i in [l, b] {
                        let id = &snap.job(runs[i].job).id;
                        let now_guaranteed = !runs[i].bonus;
                        let changed = out.promotions.contains(id) || out.demotions.contains(id);
                        out.promotions.retain(|x| x != id);
                        out.demotions.retain(|x| x != id);
                        // its standing before this cycle: the opposite of now, unless the
                        // fill had already changed it
                        let was_bonus = if changed {
                            runs[i].bonus
                        } else {
                            !runs[i].bonus
                        };
                        out.note_standing(id, was_bonus, now_guaranteed);
                    }
                    cells = without;
                    break;
                }
            }
            runs[l].bonus = false;
            t.charge(ql, user_l, f, milli_l, false, true);
        }
    }
    cells
}

/// Which running jobs the guarantee holds by priority alone, counts only (no cells): each
/// job in `order` that still fits its VC's guarantee of its GPU type.
fn fill_by_count(
    t: &Tenants,
    runs: &IdVec<RunIdx, RunInfo>,
    order: &[RunIdx],
) -> IdVec<RunIdx, bool> {
    let mut used = t.guar_used.clone();
    let mut held: IdVec<RunIdx, bool> = runs.ids().map(|_| false).collect();
    for &i in order {
        let r = &runs[i];
        let (Some(_), Some(vc)) = (r.queue, r.vc) else {
            continue;
        };
        let guarantee = t.guarantee[vc].get(r.flavor).copied();
        if let (Some(u), Some(g)) = (used[vc].get_mut(r.flavor), guarantee)
            && *u + r.milli <= g
        {
            *u += r.milli;
            held[i] = true;
        }
    }
    held
}

/// The order in which running jobs fill their VirtualCluster's guarantee; what is left over
/// is bonus, so a VC's bonus jobs are its least important. Higher priority first; among
/// equal priorities the standing a job already has (guaranteed first), so that jobs do not
/// swap at every checkpoint and a reclaim planned on a domain is not undone by the next
/// cycle; then the most work lost if stopped now, the oldest, the id.
pub(super) fn standing_order<'a>(
    r: &RunInfo,
    id: &'a str,
) -> (Reverse<i32>, bool, Reverse<u64>, i64, &'a str) {
    (Reverse(r.priority), r.bonus, Reverse(r.lost), r.started, id)
}
