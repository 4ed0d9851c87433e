//! Preemption: a waiting job takes room from running ones. Each kind is a file of its own
//! that owns which running jobs it may take (its eligibility) and what a set of them must
//! leave true besides the room (its acceptance rule): [`reclaim`] (other VirtualClusters'
//! bonus jobs, for a job within its guarantee), [`priority`] (its queue's lower-priority
//! jobs), [`queue_share`] (a queue's share taken back from sibling queues), [`consolidation`]
//! (its team's smaller jobs moved so that scattered GPUs come together) and [`drain`] (every
//! job on a draining node or an unhealthy GPU, for nobody).
//!
//! This file is the search the kinds share ([`Cycle::preempt`]): the memo of searches that
//! found nothing, the victim search (`sched::reclaim::plan`, here `search`) with the kind's
//! terms, the checks every plan passes, and the recording of what was decided.

use std::collections::BTreeSet;

use super::cycle_state::{Cycle, NoVictims, Pending};
use super::decisions::{Beneficiary, Preemption, PreemptionReason, WaitReason};
use super::ids::{Claimant, FlavorId, IdVec, JobIdx, NodeId, QueueId, RunIdx, VcId};
use super::model::Snapshot;
use super::placement::Trial;
use super::reclaim::{self as search, Credit, Outcome, RunInfo};
use super::tenants::{Freed, Tenants};

mod consolidation;
mod drain;
mod holdings;
pub(super) mod kind;
mod priority;
mod queue_share;
mod reclaim;

pub(super) use consolidation::CONSOLIDATION_SEARCHES;
use kind::Kind;

impl Kind {
    fn reason(self) -> PreemptionReason {
        match self {
            Kind::Reclaim => PreemptionReason::Reclaim,
            Kind::Priority { .. } => PreemptionReason::Priority,
            Kind::QueueShare => PreemptionReason::QueueShare,
            Kind::Consolidate => PreemptionReason::Consolidation,
        }
    }

    /// Who shares a search that found nothing: a reclaim takes from other VCs whatever the
    /// job's queue, so its VC; the other kinds take within the queue or team, so its queue.
    fn claimant(self, p: &Pending) -> Claimant {
        match self {
            Kind::Reclaim => Claimant::Vc(p.vc),
            Kind::Priority { .. } | Kind::QueueShare | Kind::Consolidate => {
                Claimant::Queue(p.queue)
            }
        }
    }

    /// Whether the victims it may take depend on the claiming job's priority (no higher).
    fn by_priority(self) -> bool {
        !matches!(self, Kind::Reclaim)
    }

    /// Whether a search that found nothing is looked up before searching again. A priority
    /// plan that a limit blocked depends on the job's user too (its user limit): not shared
    /// between jobs. Without a limit it depends on what the key holds (the queue, so the
    /// team; the priority; the shape), and a search that found nothing is not made again:
    /// thousands of waiting jobs of a queue repeated it, 6.3-6.8 s a cycle at 2,000 nodes and
    /// 4,000 pending jobs (`benches/sched.rs`).
    fn memoized(self, limited: bool) -> bool {
        !(matches!(self, Kind::Priority { .. }) && limited)
    }

    /// Whether running job `r` may be a victim of this kind for `claim`.
    fn eligible(self, claim: &Claim, t: &Tenants, r: &RunInfo) -> bool {
        match self {
            Kind::Reclaim => reclaim::eligible(claim, r),
            Kind::Priority { bonus, combined } => priority::eligible(claim, bonus, combined, r),
            Kind::QueueShare => queue_share::eligible(claim, t, r),
            Kind::Consolidate => consolidation::eligible(claim, r),
        }
    }

    /// Whether a plan of this kind records the other VCs' bonus jobs it takes apart, as a
    /// reclaim beside the kind's own preemption.
    fn reclaims_beside(self) -> bool {
        matches!(
            self,
            Kind::Priority { combined: true, .. } | Kind::QueueShare
        )
    }
}

/// The claiming job, as the kinds' eligibility reads it.
#[derive(Clone, Copy)]
struct Claim {
    vc: VcId,
    queue: QueueId,
    priority: i32,
    milli: u64,
    /// Whether its VC is guaranteed cells of the GPU type searched: a consolidation may
    /// then move the VC's guaranteed jobs of any priority together ([`consolidation`]).
    cells: bool,
}

/// What a kind asks of a victim set besides the room, computed once per search.
enum Rule {
    /// The room only.
    Room,
    /// A combined priority plan's ([`priority::Combined`]).
    Combined(priority::Combined),
    /// A queue-share plan's ([`queue_share::Share`]).
    QueueShare(queue_share::Share),
}

/// One search's judgement of a victim set ([`Credit`]): the kind's rule, and, when a limit
/// blocked the job, whether the victims free it.
struct Terms<'s> {
    claim: Claim,
    user: &'s str,
    f: FlavorId,
    flavors: &'s [FlavorId],
    limited: bool,
    t: &'s Tenants,
    snap: &'s Snapshot,
    /// What each run would free against the limits and the shares (only when counted).
    freed: IdVec<RunIdx, (Option<QueueId>, &'s str, u64)>,
    rule: Rule,
}

impl Terms<'_> {
    /// Whether what the victims free is counted: against a limit, or a queue's share.
    fn counts_freed(limited: bool, kind: Kind) -> bool {
        limited || kind == Kind::QueueShare
    }

    /// Whether the search is given the terms at all (else any set that makes room passes).
    fn bind(&self) -> bool {
        self.limited || !matches!(self.rule, Rule::Room)
    }

    fn credit(&self, vs: &[RunIdx]) -> Credit {
        let fr: Vec<Freed> = if self.limited || matches!(self.rule, Rule::QueueShare(_)) {
            vs.iter()
                .filter_map(|&v| {
                    let (q, user, milli) = self.freed[v];
                    Some((q?, user, milli))
                })
                .collect()
        } else {
            Vec::new()
        };
        // rules no further victim can mend first
        let never = match &self.rule {
            Rule::Room => false,
            Rule::Combined(c) => c.never(vs),
            Rule::QueueShare(_) => queue_share::Share::never(self, &fr),
        };
        if never {
            return Credit::Never;
        }
        let (queue, milli) = (self.claim.queue, self.claim.milli);
        if self.limited
            && !self
                .t
                .limits_pass_after(self.snap, queue, self.user, milli, &fr)
        {
            return Credit::Short;
        }
        let short = match &self.rule {
            Rule::Room => false,
            Rule::Combined(c) => c.short(self, vs),
            Rule::QueueShare(s) => s.short(self, vs, &fr),
        };
        if short { Credit::Short } else { Credit::Pass }
    }
}

/// What makes the room of a plan that takes no victim.
enum Leaving {
    /// Jobs already leaving these nodes (preempting, or evicted earlier in this cycle).
    Runs(Vec<String>),
    /// Pods of no job on their way out (a deleted job's).
    Pods(Vec<String>),
}

impl<'a> Cycle<'a> {
    /// Plan a preemption for `p` on flavor `f`. Returns true when the job's fate is decided
    /// (a plan, or a wait for minimum runtime).
    /// `limited`: a limit blocks the job, so victims must free it too (see
    /// [`search::plan`]). What the plan may take is `kind`'s (see [`Kind`]).
    pub(super) fn preempt(&mut self, p: &Pending, f: FlavorId, kind: Kind, limited: bool) -> bool {
        let memo = self.no_victims_key(p, f, kind, limited);
        if kind.memoized(limited) && self.no_victims.contains(&memo) {
            return false;
        }
        let outcome = if kind == Kind::Consolidate {
            match self.search_for_a_move(p, f) {
                Some(outcome) => outcome,
                None => {
                    self.no_victims.insert(memo);
                    return false;
                }
            }
        } else {
            self.search(p, f, kind, limited, None)
        };
        // at a turn in phase 1, a plan that leaves the job borrowing would take room before
        // other teams' guaranteed jobs had theirs
        if self.guaranteed_plans_only
            && !matches!(&outcome, Outcome::Plan { victims: vs, .. }
                if self.places_guaranteed(p, kind, vs))
        {
            search::drop_plan(&mut self.c, &mut self.runs, outcome);
            return false;
        }
        self.take_outcome(p, f, kind, outcome, memo)
    }

    /// The victim search for `p` on `f`, on the kind's terms. A plan whose job is placed
    /// guaranteed must keep other VCs' cells whole, as a guaranteed placement now must
    /// (`try_place`): otherwise, once its victims are gone, the job is refused the room it
    /// was planned on (a clean cell another VC's guarantee needs) and waits on another plan.
    /// Then it is planned again on the nodes the cells allow.
    /// `within`: the nodes the plan may be placed on, when not all of the type's.
    fn search(
        &mut self,
        p: &Pending,
        f: FlavorId,
        kind: Kind,
        limited: bool,
        within: Option<&[NodeId]>,
    ) -> Outcome {
        let snap = self.snap;
        let claim = Claim {
            vc: p.vc,
            queue: p.queue,
            priority: snap.job(p.job).priority,
            milli: p.milli,
            cells: kind == Kind::Consolidate && self.cells.has_cells(f, p.vc),
        };
        let req = self.request(p, f);
        let t = &self.t;
        let eligible = move |r: &RunInfo| kind.eligible(&claim, t, r);
        let victims = self.opts.victims;
        let freed: IdVec<RunIdx, (Option<QueueId>, &str, u64)> =
            if Terms::counts_freed(limited, kind) {
                self.runs
                    .iter()
                    .map(|r| (r.queue, snap.job(r.job).user.as_str(), r.milli))
                    .collect()
            } else {
                IdVec::new()
            };
        let rule = self.rule(p, f, kind);
        let terms = Terms {
            claim,
            user: snap.job(p.job).user.as_str(),
            f,
            flavors: &p.flavors,
            limited,
            t: &self.t,
            snap,
            freed,
            rule,
        };
        let credit = |vs: &[RunIdx]| terms.credit(vs);
        let limits: search::Limits = if terms.bind() { Some(&credit) } else { None };
        let on_node = &self.on_node;
        let mut outcome = search::plan(
            &mut self.c,
            &mut self.runs,
            on_node,
            &req,
            &eligible,
            victims,
            limits,
            within,
        );
        if let Outcome::Plan {
            victims: vs, trial, ..
        } = &outcome
            && self.places_guaranteed(p, kind, vs)
            && !self.cells.accepts(&self.c, &self.t, trial, p.vc, p.milli)
        {
            search::drop_plan(&mut self.c, &mut self.runs, outcome);
            let mut allowed = self.cells.allowed_nodes(&self.c, f, p.vc);
            if let Some(w) = within {
                allowed.retain(|n| w.contains(n));
            }
            outcome = search::plan(
                &mut self.c,
                &mut self.runs,
                on_node,
                &req,
                &eligible,
                victims,
                limits,
                Some(&allowed),
            );
        }
        outcome
    }

    /// The kind's acceptance rule for a search for `p` on `f`.
    fn rule(&self, p: &Pending, f: FlavorId, kind: Kind) -> Rule {
        match kind {
            Kind::Priority { combined: true, .. } => Rule::Combined(self.combined_terms(p, f)),
            Kind::QueueShare => Rule::QueueShare(self.share_terms(p)),
            Kind::Priority { .. } | Kind::Reclaim | Kind::Consolidate => Rule::Room,
        }
    }

    /// Whether a plan of `kind` with `victims` places `p` guaranteed: every kind does but a
    /// priority plan for a job beyond its guarantee, unless combined and ending within it.
    fn places_guaranteed(&self, p: &Pending, kind: Kind, victims: &[RunIdx]) -> bool {
        match kind {
            Kind::Priority { bonus, combined } => {
                !bonus || (combined && self.ends_guaranteed(p, victims))
            }
            Kind::Reclaim | Kind::QueueShare | Kind::Consolidate => true,
        }
    }

    /// What the search came to: a plan taken, a wait for minimum runtime, or nothing (then
    /// remembered in `no_victims` under `memo`). Returns true when the job's fate is decided.
    fn take_outcome(
        &mut self,
        p: &Pending,
        f: FlavorId,
        kind: Kind,
        outcome: Outcome,
        memo: NoVictims,
    ) -> bool {
        match outcome {
            Outcome::Plan {
                victims,
                lost,
                trial,
            } => self.take_plan(p, f, kind, &victims, lost, trial),
            Outcome::Blind { victims, lost } => {
                let reason = kind.reason();
                let names = self.evict(p.job, &victims, lost, reason);
                self.wait(
                    p.job,
                    WaitReason::WaitingForPreemption {
                        reason,
                        victims: names,
                    },
                );
                true
            }
            Outcome::MinRuntime { until, victims } => {
                let mut names: Vec<String> = victims
                    .iter()
                    .map(|&v| self.snap.job(self.runs[v].job).id.clone())
                    .collect();
                names.sort();
                self.wait(
                    p.job,
                    WaitReason::WaitingForMinRuntime {
                        until,
                        victims: names,
                    },
                );
                true
            }
            Outcome::None => {
                self.no_victims.insert(memo);
                false
            }
        }
    }

    /// A plan taken: the job's room is held (its cells bound when it runs guaranteed, its
    /// GPUs charged and promised), the victims evicted, and the job waits on them. A plan
    /// with no victims waits on what already leaves its nodes, or is dropped when nothing
    /// does. Returns true when the job's fate is decided.
    fn take_plan(
        &mut self,
        p: &Pending,
        f: FlavorId,
        kind: Kind,
        victims: &[RunIdx],
        lost: u64,
        trial: Trial,
    ) -> bool {
        let job = self.snap.job(p.job);
        let leaving = if victims.is_empty() {
            let Some(leaving) = self.already_leaving(&trial) else {
                // Nothing is leaving: the plan fits only because it ignores what kept the
                // job from placing now (another VC's cell reservation), and waiting on it
                // would never end. Let the job go on to bonus.
                trial.undo(&mut self.c);
                return false;
            };
            Some(leaving)
        } else {
            None
        };
        // the job waits on the kind of preemption that makes its room: when that is jobs
        // already leaving, the kind they leave by, not the kind searched for
        let reason = match &leaving {
            Some(Leaving::Runs(v)) => self.leaving_by(v),
            _ => None,
        }
        .unwrap_or(kind.reason());
        let bonus = !self.places_guaranteed(p, kind, victims);
        let (own, theirs): (Vec<RunIdx>, Vec<RunIdx>) = victims
            .iter()
            .partition(|&&v| self.runs[v].vc == Some(p.vc));
        if !bonus {
            self.cells.bind(&self.c, &trial, p.vc);
        }
        self.t.charge(p.queue, &job.user, f, p.milli, bonus, true);
        self.t.promise(p.queue, p.milli);
        let waiting_on = match leaving {
            Some(Leaving::Pods(pods_of)) => {
                self.wait(p.job, WaitReason::WaitingForTerminatingPods { pods_of });
                return true;
            }
            Some(Leaving::Runs(v)) => v,
            None if kind.reclaims_beside() && !theirs.is_empty() => {
                self.evict_apart(p.job, &own, &theirs, reason)
            }
            None => self.evict(p.job, victims, lost, reason),
        };
        self.wait(
            p.job,
            WaitReason::WaitingForPreemption {
                reason,
                victims: waiting_on,
            },
        );
        true
    }

    /// What leaves the nodes of a plan without victims, sorted: jobs already leaving them
    /// (preempting, or evicted earlier in this cycle), else pods of no job on their way out
    /// (a deleted job's): nobody else need leave for it. None when nothing does.
    fn already_leaving(&self, trial: &Trial) -> Option<Leaving> {
        let nodes: BTreeSet<NodeId> = trial.takes.iter().map(|t| t.1.node).collect();
        let mut v: Vec<String> = self
            .runs
            .iter()
            .filter(|r| r.gone && r.nodes.iter().any(|n| nodes.contains(n)))
            .map(|r| self.snap.job(r.job).id.clone())
            .collect();
        let runs = !v.is_empty();
        if !runs {
            v = nodes
                .iter()
                .flat_map(|&n| &self.snap.nodes[self.c.nodes[n].src as usize].held)
                .filter_map(|h| h.leaving.clone())
                .collect();
        }
        if v.is_empty() {
            return None;
        }
        v.sort();
        v.dedup();
        Some(if runs {
            Leaving::Runs(v)
        } else {
            Leaving::Pods(v)
        })
    }

    /// One plan, recorded per kind: own jobs by the kind (priority or queue share), the
    /// other VCs' bonus jobs by reclaim. Returns all the victims' names, sorted.
    fn evict_apart(
        &mut self,
        job: JobIdx,
        own: &[RunIdx],
        theirs: &[RunIdx],
        reason: PreemptionReason,
    ) -> Vec<String> {
        let cost = |vs: &[RunIdx]| vs.iter().map(|&v| self.runs[v].lost).sum();
        let (lo, lt) = (cost(own), cost(theirs));
        let mut names = Vec::new();
        if !own.is_empty() {
            names.extend(self.evict(job, own, lo, reason));
        }
        names.extend(self.evict(job, theirs, lt, PreemptionReason::Reclaim));
        names.sort();
        names
    }

    pub(super) fn no_victims_key(
        &self,
        p: &Pending,
        f: FlavorId,
        kind: Kind,
        limited: bool,
    ) -> NoVictims {
        let priority = if kind.by_priority() {
            self.snap.job(p.job).priority
        } else {
            0
        };
        (kind.claimant(p), kind, priority, limited, self.shape(p, f))
    }

    /// A leaving run's usage comes off its queue, user and VirtualCluster.
    fn uncharge(&mut self, run: RunIdx) {
        let r = &self.runs[run];
        if let Some(q) = r.queue {
            self.t.charge(
                q,
                &self.snap.job(r.job).user,
                r.flavor,
                r.milli,
                r.bonus,
                false,
            );
        }
    }

    /// Preempt `victims` for `job`: their usage is uncharged and the preemption recorded.
    /// Returns the victims' names, sorted.
    fn evict(
        &mut self,
        job: JobIdx,
        victims: &[RunIdx],
        lost: u64,
        reason: PreemptionReason,
    ) -> Vec<String> {
        for &v in victims {
            self.uncharge(v);
        }
        let mut names: Vec<String> = victims
            .iter()
            .map(|&v| self.snap.job(self.runs[v].job).id.clone())
            .collect();
        names.sort();
        self.out.preemptions.push(Preemption {
            beneficiary: Beneficiary::Job(self.snap.job(job).id.clone()),
            reason,
            victims: names.clone(),
            lost_gpu_seconds: lost,
        });
        names
    }

    /// The kind of preemption the first of these leaving jobs leaves by that is known: this
    /// cycle's decision, else the request its pods record.
    fn leaving_by(&self, jobs: &[String]) -> Option<PreemptionReason> {
        jobs.iter().find_map(|id| {
            let decided = self.out.preemptions.iter().find(|p| p.victims.contains(id));
            decided.map(|p| p.reason).or_else(|| {
                let r = self.runs.iter().find(|r| &self.snap.job(r.job).id == id)?;
                let running = self.snap.job(r.job).running.as_ref()?;
                running.checkpoint_request.as_ref().map(|q| q.reason)
            })
        })
    }
}
