//! Preemption victim selection, for reclaim (a VC takes back guaranteed GPUs lent as bonus)
//! and for priority preemption inside a queue.
//!
//! Per candidate *domain* (each node when the gang fits one node, then each rack, then the
//! whole flavor — the smallest domain first, so victims are never scattered across domains
//! in a way that still leaves the gang unplaceable):
//!
//! 1. If the gang already fits once the jobs that are being preempted are gone, no new
//!    victim is needed: the job waits for those releases.
//! 2. Otherwise take the eligible jobs with a replica in the domain, ordered by lost work
//!    (GPU-seconds since the last checkpoint, or start), then lower priority, then most
//!    recently started, then id; mark them released one by one until the gang fits in the
//!    domain (a real placement on the after-release capacity).
//! 3. Make the set minimal: try dropping each chosen victim, most expensive first; keep it
//!    dropped when the gang still fits. No victim can then be removed from the set.
//! 4. Repeat 2–3 with each of the first few candidates put first (`SEEDS`), skipping those
//!    already in the set in hand or that alone lose more, and keep the set that loses the
//!    least work, then has the fewest victims: one larger job can make the room of several
//!    cheap ones for less lost work, or for as much with fewer victims.
//!
//! Domains are tried by a lower bound on the work their set loses, least first, and the
//! search of a level ends once the bound passes the best set found: the bound cannot win.
//!
//! The smallest level with a plan decides (a node before a rack before the whole type); in
//! it, the domain whose set loses the least work wins; then the fewest victims, the lowest
//! priorities, the most recently started (`set_key`), then the first in order. Before
//! anyone is asked to checkpoint the gang is placed on the capacity that will be free once
//! all victims are gone, and that capacity is *reserved* for it (nobody else can take it
//! now, see `cluster`), so the core never evicts for a gang that would not fit.
//!
//! Minimum runtime: victims that ran less than their minimum runtime are left out while
//! another victim set exists; when only sets with such jobs exist, nothing is evicted and the
//! job waits until the youngest of them has run its minimum.

use super::cluster::{Cluster, Mode};
use super::ids::{FlavorId, IdVec, JobIdx, NodeId, QueueId, RunIdx, VcId};
use super::model::{GpuDemand, TopologyLevel};
use super::options::VictimSelection;
use super::placement::{Demand, Request, Scope, Trial, place};

/// What one replica of a running job holds: node, (GPU, milli) pairs, CPU, memory.
pub(crate) type Held = (NodeId, Vec<(u8, u16)>, u64, u64);

/// A job holding resources.
#[derive(Clone, Debug)]
pub(crate) struct RunInfo {
    pub job: JobIdx,
    pub queue: Option<QueueId>,
    pub vc: Option<VcId>,
    pub flavor: FlavorId,
    pub milli: u64,
    pub bonus: bool,
    pub priority: i32,
    pub started: i64,
    /// GPU-seconds lost if stopped now.
    pub lost: u64,
    /// Set while the job has not yet run its minimum runtime: when it will have.
    pub young_until: Option<i64>,
    /// (node, (gpu, milli)s, cpu, mem) per replica.
    pub takes: Vec<Held>,
    pub nodes: Vec<NodeId>,
    /// Being preempted (before this cycle, or chosen in it).
    pub gone: bool,
}

/// What victim selection found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Victims (indices into the runs) are released and the gang is reserved.
    Plan {
        victims: Vec<RunIdx>,
        lost: u64,
        trial: Trial,
    },
    /// Victims are released but the gang does not fit once they are gone (only with
    /// [`VictimSelection::CountOnly`]).
    Blind {
        victims: Vec<RunIdx>,
        lost: u64,
    },
    /// Only jobs younger than their minimum runtime could make room.
    MinRuntime {
        until: i64,
        victims: Vec<RunIdx>,
    },
    None,
}

/// A run's resources move to `releasing`: free for plans that wait for them, not for now.
pub(crate) fn release(c: &mut Cluster, r: &RunInfo) {
    set(c, r, true);
}

fn set(c: &mut Cluster, r: &RunInfo, on: bool) {
    for (n, g, cpu, mem) in &r.takes {
        c.set_releasing(*n, g, *cpu, *mem, on);
    }
}

fn fits(c: &mut Cluster, req: &Request, domain: &[NodeId]) -> bool {
    match place(c, req, Mode::AfterRelease, Scope::Nodes(domain)) {
        Some(t) => {
            t.undo(c);
            true
        }
        None => false,
    }
}

/// The nodes a placement of `req` in `domain` uses once releases complete (none: it does
/// not fit); leaves the cluster unchanged.
fn placed_on(c: &mut Cluster, req: &Request, domain: &[NodeId]) -> Vec<NodeId> {
    match place(c, req, Mode::AfterRelease, Scope::Nodes(domain)) {
        Some(t) => {
            let mut nodes: Vec<NodeId> = t.takes.iter().map(|(_, take)| take.node).collect();
            t.undo(c);
            nodes.sort_unstable();
            nodes.dedup();
            nodes
        }
        None => Vec::new(),
    }
}

/// A domain victims are chosen in: its nodes, which of the cluster's nodes they are, and
/// its whole GPUs free once releases complete, as the search starts.
struct Domain<'a> {
    nodes: &'a [NodeId],
    member: &'a IdVec<NodeId, bool>,
    room: Room,
}

impl<'a> Domain<'a> {
    fn new(c: &Cluster, nodes: &'a [NodeId], member: &'a IdVec<NodeId, bool>) -> Self {
        let mut room = Room::default();
        room.count(c, member, nodes, true);
        Domain {
            nodes,
            member,
            room,
        }
    }

    /// A bound below the work any victim set of `runs_here` (the eligible jobs with a
    /// replica in the domain) loses that makes the gang's whole GPUs free there; None when
    /// no such set exists. A victim frees at most the GPUs it holds a share of here, so a
    /// set that makes room holds shares of at least the whole GPUs missing, and loses at
    /// least the least work that covers them with victims taken in part: the fractional
    /// knapsack, cheapest per GPU first.
    fn least_loss(
        &self,
        runs: &IdVec<RunIdx, RunInfo>,
        whole_gpus: u32,
        runs_here: &[RunIdx],
    ) -> Option<u64> {
        let missing = u64::from(whole_gpus.saturating_sub(self.room.free));
        if missing == 0 {
            return Some(0);
        }
        let mut items: Vec<(u64, u64)> = runs_here
            .iter()
            .filter_map(|&r| {
                let held: usize = runs[r]
                    .takes
                    .iter()
                    .filter(|t| self.member[t.0])
                    .map(|t| t.1.len())
                    .sum();
                (held > 0).then_some((runs[r].lost, held as u64))
            })
            .collect();
        // least work lost per GPU held first (`held` is never 0, so the products order the
        // fractions)
        items.sort_unstable_by(|a, b| {
            (u128::from(a.0) * u128::from(b.1)).cmp(&(u128::from(b.0) * u128::from(a.1)))
        });
        let mut need = missing;
        let mut bound: u64 = 0;
        for (lost, held) in items {
            if held >= need {
                let part = u128::from(lost) * u128::from(need) / u128::from(held);
                return Some(bound.saturating_add(part as u64));
            }
            bound = bound.saturating_add(lost);
            need -= held;
        }
        None
    }
}

/// The whole GPUs free once releases complete on a domain's nodes, as a count of nodes by
/// how many each has, kept as victims are released: enough to tell cheaply that a gang
/// cannot fit there, before a placement looks. A flavor-wide domain has free GPUs to spare
/// for a gang of whole nodes, and a placement over thousands of nodes after each candidate
/// was most of a cycle with priority preemption everywhere.
#[derive(Clone, Debug, Default)]
struct Room {
    /// Nodes by whole GPUs free.
    nodes_by_free: Vec<u32>,
    free: u32,
}

impl Room {
    /// Count (`on`) or uncount the free GPUs of those of `nodes` in the domain (`member`).
    fn count(&mut self, c: &Cluster, member: &IdVec<NodeId, bool>, nodes: &[NodeId], on: bool) {
        for &n in nodes.iter().filter(|&&n| member[n]) {
            let free = c.nodes[n].whole_avail(Mode::AfterRelease);
            let i = free as usize;
            if self.nodes_by_free.len() <= i {
                self.nodes_by_free.resize(i + 1, 0);
            }
            if on {
                self.nodes_by_free[i] += 1;
                self.free += free;
            } else {
                self.nodes_by_free[i] -= 1;
                self.free -= free;
            }
        }
    }

    /// Whether `need` may fit: enough whole GPUs in all, and for each size `k` of whole
    /// replica, nodes for the replicas of at least `k` GPUs (a node with `f` free holds at
    /// most `f / k` of them). Necessary, not sufficient: a placement decides.
    fn may_fit(&self, need: &Need) -> bool {
        self.free >= need.whole
            && need.at_least.iter().all(|&(k, replicas)| {
                let hosts: u64 = self
                    .nodes_by_free
                    .iter()
                    .enumerate()
                    .map(|(f, &n)| u64::from(n) * (f as u64 / u64::from(k)))
                    .sum();
                hosts >= u64::from(replicas)
            })
    }
}

/// What a gang needs of whole GPUs, for [`Room::may_fit`].
#[derive(Debug)]
struct Need {
    whole: u32,
    /// (k, replicas asking at least k whole GPUs), for each k a replica asks.
    at_least: Vec<(u32, u32)>,
}

impl Need {
    fn from_demands(demands: &[Demand], whole: u32) -> Need {
        let mut sizes: Vec<u32> = demands
            .iter()
            .filter_map(|d| match d.gpu {
                GpuDemand::Whole(k) if k > 0 => Some(k),
                _ => None,
            })
            .collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let mut at_least: Vec<(u32, u32)> = Vec::new();
        for (i, &k) in sizes.iter().enumerate() {
            match at_least.last_mut() {
                Some(last) if last.0 == k => last.1 = i as u32 + 1,
                _ => at_least.push((k, i as u32 + 1)),
            }
        }
        Need { whole, at_least }
    }
}

/// The gang victims make room for: its request, and what that asks of whole GPUs (built once
/// per plan: each domain's search tests it after every candidate).
struct Gang<'a> {
    req: &'a Request<'a>,
    need: Need,
}

impl<'a> Gang<'a> {
    fn new(req: &'a Request<'a>) -> Self {
        Gang {
            req,
            need: Need::from_demands(req.demands, req.whole_gpus),
        }
    }
}

/// Whether the limits that blocked the job pass once `victims` are gone (always, when no
/// limit blocked it).
pub(crate) type Limits<'a> = Option<&'a dyn Fn(&[RunIdx]) -> Credit>;

/// What a plan's rules say of a victim set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credit {
    /// The set passes.
    Pass,
    /// Not yet: more victims may make it pass (a limit not freed yet).
    Short,
    /// No superset passes either (a queue giving back more than it uses beyond its share):
    /// the last victim added is no answer.
    Never,
}

fn limits_ok(limits: Limits, victims: &[RunIdx]) -> bool {
    limits.is_none_or(|l| l(victims) == Credit::Pass)
}

fn never(limits: Limits, victims: &[RunIdx]) -> bool {
    limits.is_some_and(|l| l(victims) == Credit::Never)
}

/// How two victim sets that make the room compare, smaller first: the least lost work, the
/// fewest victims, then the lowest priorities (the highest of each set first, then the next),
/// then the most recently started (the oldest victim of each set), as single candidates are
/// ordered. Without the last two, sets that tie on work went by domain or seed order: of two
/// nodes whose jobs lose as much, the first node's higher-priority job was taken (Kueue's
/// topology-aware preemption case, `cases/topology_placement.rs`).
type SetKey = (u64, usize, Vec<i32>, std::cmp::Reverse<i64>);

fn set_key(runs: &IdVec<RunIdx, RunInfo>, victims: &[RunIdx], lost: u64) -> SetKey {
    let mut prio: Vec<i32> = victims.iter().map(|&r| runs[r].priority).collect();
    prio.sort_unstable_by(|a, b| b.cmp(a));
    let oldest = victims.iter().map(|&r| runs[r].started).min().unwrap_or(0);
    (lost, victims.len(), prio, std::cmp::Reverse(oldest))
}

/// Candidates tried first in turn ([`in_domain`]): beyond them the seeds are the jobs that
/// lose the most and could not beat the set found already. Bounds a domain's cost at about
/// 1 + `SEEDS` greedy passes.
const SEEDS: usize = 16;

/// Victims in one domain: the least lost work, then the fewest victims, among the sets the
/// greedy pass finds from the cost order and from that order with each of the first
/// [`SEEDS`] candidates put first. The cost order alone takes the cheapest jobs one by one,
/// so two half-GPU jobs that lose as much as one whole-GPU job went where the one would
/// have done, and three 1-GPU jobs losing 400 GPU-s each went where one 3-GPU job losing 900
/// would have (KAI's preempt cases, `cases/`). A set must make the gang fit and pass
/// `limits` together. Without `seeded` (the scattered ablation, a one-list greedy as its
/// docs describe) only the cost order is tried. Returns the set and its [`set_key`]; leaves
/// the cluster unchanged.
fn in_domain(
    c: &mut Cluster,
    runs: &IdVec<RunIdx, RunInfo>,
    gang: &Gang,
    domain: &Domain,
    cands: &[RunIdx],
    limits: Limits,
    seeded: bool,
) -> Option<(Vec<RunIdx>, SetKey)> {
    if limits_ok(limits, &[]) && domain.room.may_fit(&gang.need) && fits(c, gang.req, domain.nodes)
    {
        return Some((Vec::new(), set_key(runs, &[], 0)));
    }
    // The cost order can fail where another finds a set: `limits` need not pass for a
    // superset of a set that passes (a queue-share plan may take only so much from one
    // queue), so the seeds are tried even then.
    let mut best = greedy(c, runs, gang, domain, cands.iter().copied(), limits).map(|b| {
        let key = set_key(runs, &b.0, b.1);
        (b, key)
    });
    let seeds = if seeded { SEEDS } else { 0 };
    for (i, &seed) in cands.iter().enumerate().take(seeds).skip(1) {
        // A set with this job loses at least its work: it can only win by losing less, or
        // as much with fewer victims. A job already in the set in hand is no new start (a
        // full node's jobs all are, and cost nothing more to look at).
        let lost = runs[seed].lost;
        if let Some(((set, set_lost), _)) = &best
            && (lost > *set_lost || (lost == *set_lost && set.len() == 1) || set.contains(&seed))
        {
            continue;
        }
        let order = std::iter::once(seed).chain(
            cands
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &r)| r),
        );
        if let Some(found) = greedy(c, runs, gang, domain, order, limits) {
            let key = set_key(runs, &found.0, found.1);
            if best.as_ref().is_none_or(|(_, best_key)| key < *best_key) {
                best = Some((found, key));
            }
        }
    }
    best.map(|((set, _), key)| (set, key))
}

/// Candidates released in `order` until the gang fits in the domain and `limits` pass,
/// then the set made minimal (each victim dropped, the last taken first, while the gang
/// still fits: one that holds nothing of the last placement found is dropped without a
/// placement, which that one proves). Leaves the cluster unchanged.
fn greedy(
    c: &mut Cluster,
    runs: &IdVec<RunIdx, RunInfo>,
    gang: &Gang,
    domain: &Domain,
    order: impl Iterator<Item = RunIdx>,
    limits: Limits,
) -> Option<(Vec<RunIdx>, u64)> {
    let (req, need) = (gang.req, &gang.need);
    let mut chosen: Vec<RunIdx> = Vec::new();
    let mut ok = false;
    let mut used: Vec<NodeId> = Vec::new();
    // the search leaves the cluster as it found it, so each pass starts from the domain's room
    let mut room = domain.room.clone();
    let release = |c: &mut Cluster, room: &mut Room, r: RunIdx, on: bool| {
        let nodes = &runs[r].nodes;
        room.count(c, domain.member, nodes, false);
        set(c, &runs[r], on);
        room.count(c, domain.member, nodes, true);
    };
    for r in order {
        chosen.push(r);
        if never(limits, &chosen) {
            // no set with it passes: pass over it
            chosen.pop();
            continue;
        }
        release(c, &mut room, r, true);
        if room.may_fit(need) && limits_ok(limits, &chosen) {
            used = placed_on(c, req, domain.nodes);
            if !used.is_empty() {
                ok = true;
                break;
            }
        }
    }
    if !ok {
        for &r in &chosen {
            set(c, &runs[r], false);
        }
        return None;
    }
    let mut i = chosen.len();
    while i > 0 {
        i -= 1;
        let r = chosen[i];
        release(c, &mut room, r, false);
        let without: Vec<RunIdx> = chosen.iter().copied().filter(|&x| x != r).collect();
        if !limits_ok(limits, &without) {
            release(c, &mut room, r, true);
            continue;
        }
        // A victim that holds nothing on the nodes of the last placement found leaves
        // that placement as it was: the gang still fits without it, and no placement need
        // look again (in a large domain the cost order takes cheap jobs anywhere before the
        // room comes together, and a placement over every node of a flavor per such victim
        // was most of a cycle with priority preemption everywhere).
        if !runs[r].nodes.iter().any(|n| used.contains(n)) {
            chosen.remove(i);
            continue;
        }
        let elsewhere = if room.may_fit(need) {
            placed_on(c, req, domain.nodes)
        } else {
            Vec::new()
        };
        if elsewhere.is_empty() {
            release(c, &mut room, r, true);
        } else {
            used = elsewhere;
            chosen.remove(i);
        }
    }
    for &r in &chosen {
        set(c, &runs[r], false);
    }
    let lost = chosen.iter().map(|&r| runs[r].lost).sum();
    Some((chosen, lost))
}

/// [`VictimSelection::CountOnly`]: enough whole GPUs free in number, wherever they are.
fn count_only(
    c: &mut Cluster,
    runs: &mut IdVec<RunIdx, RunInfo>,
    req: &Request,
    eligible: &dyn Fn(&RunInfo) -> bool,
    limits: Limits,
    nodes: &[NodeId],
) -> Outcome {
    let need = req.whole_gpus.max(1);
    let free = |c: &Cluster| -> u32 {
        nodes
            .iter()
            .map(|&n| c.nodes[n].whole_avail(Mode::AfterRelease))
            .sum()
    };
    let mut cands: Vec<RunIdx> = runs
        .ids()
        .filter(|&r| {
            let x = &runs[r];
            !x.gone
                && x.flavor == req.flavor
                && x.young_until.is_none()
                && eligible(x)
                && x.nodes.iter().any(|n| nodes.contains(n))
        })
        .collect();
    cands.sort_by_key(|&r| {
        (
            runs[r].lost,
            runs[r].priority,
            std::cmp::Reverse(runs[r].started),
            runs[r].job,
        )
    });
    let mut chosen = Vec::new();
    for &r in &cands {
        if free(c) >= need && limits_ok(limits, &chosen) {
            break;
        }
        set(c, &runs[r], true);
        chosen.push(r);
    }
    if free(c) < need || !limits_ok(limits, &chosen) {
        for &r in &chosen {
            set(c, &runs[r], false);
        }
        return Outcome::None;
    }
    let mut i = chosen.len();
    while i > 0 {
        i -= 1;
        let r = chosen[i];
        set(c, &runs[r], false);
        let without: Vec<RunIdx> = chosen.iter().copied().filter(|&x| x != r).collect();
        if free(c) >= need && limits_ok(limits, &without) {
            chosen.remove(i);
        } else {
            set(c, &runs[r], true);
        }
    }
    for &r in &chosen {
        runs[r].gone = true;
    }
    let lost = chosen.iter().map(|&r| runs[r].lost).sum();
    match place(c, req, Mode::AfterRelease, Scope::Nodes(nodes)) {
        Some(trial) => Outcome::Plan {
            victims: chosen,
            lost,
            trial,
        },
        None => Outcome::Blind {
            victims: chosen,
            lost,
        },
    }
}

/// Undo `outcome` when it is a plan (see [`unplan`]).
pub(crate) fn drop_plan(c: &mut Cluster, runs: &mut IdVec<RunIdx, RunInfo>, outcome: Outcome) {
    if let Outcome::Plan { victims, trial, .. } = outcome {
        unplan(c, runs, &victims, trial);
    }
}

/// Undo an [`Outcome::Plan`]: its victims stay and its reservation is dropped.
pub(crate) fn unplan(
    c: &mut Cluster,
    runs: &mut IdVec<RunIdx, RunInfo>,
    victims: &[RunIdx],
    trial: Trial,
) {
    trial.undo(c);
    for &r in victims {
        set(c, &runs[r], false);
        runs[r].gone = false;
    }
}

/// Choose victims so that `req` fits; `eligible` says which running jobs may be victims.
/// With `limits` (a job a limit blocks), the set must also pass them once its victims'
/// usage is credited, and eligible jobs anywhere (any node, any GPU type) are candidates for
/// that credit in every domain. With `allowed`, the gang is placed on those nodes only (as
/// for a guaranteed placement that must keep other VCs' cells whole, see `cells`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    c: &mut Cluster,
    runs: &mut IdVec<RunIdx, RunInfo>,
    on_node: &IdVec<NodeId, Vec<RunIdx>>,
    req: &Request,
    eligible: &dyn Fn(&RunInfo) -> bool,
    selection: VictimSelection,
    limits: Limits,
    allowed: Option<&[NodeId]>,
) -> Outcome {
    let search = Search {
        on_node,
        req,
        eligible,
        selection,
        limits,
        allowed,
        gang: Gang::new(req),
    };
    if selection == VictimSelection::CountOnly {
        let nodes: Vec<NodeId> = match c.facts.get(req.flavor) {
            Some(f) => f.nodes.iter().copied().filter(|n| search.may(n)).collect(),
            None => return Outcome::None,
        };
        if !limits_ok(limits, &[]) || !fits(c, req, &nodes) {
            return count_only(c, runs, req, eligible, limits, &nodes);
        }
    }
    if let Some((victims, lost, domain)) = search.pass(c, runs, false) {
        return take(c, runs, req, victims, lost, &domain);
    }
    if let Some((victims, _, _)) = search.pass(c, runs, true) {
        let until = victims.iter().filter_map(|&r| runs[r].young_until).max();
        if let Some(until) = until {
            return Outcome::MinRuntime { until, victims };
        }
    }
    Outcome::None
}

/// The victims found leave (their room released) and the gang is placed on `domain` once
/// they are gone; where it does not fit after all, they stay and there is no plan.
fn take(
    c: &mut Cluster,
    runs: &mut IdVec<RunIdx, RunInfo>,
    req: &Request,
    victims: Vec<RunIdx>,
    lost: u64,
    domain: &[NodeId],
) -> Outcome {
    for &r in &victims {
        set(c, &runs[r], true);
        runs[r].gone = true;
    }
    if let Some(trial) = place(c, req, Mode::AfterRelease, Scope::Nodes(domain)) {
        return Outcome::Plan {
            victims,
            lost,
            trial,
        };
    }
    for &r in &victims {
        set(c, &runs[r], false);
        runs[r].gone = false;
    }
    Outcome::None
}

/// The best set found so far: its key, its domain's index, its victims, its domain.
type Best = (SetKey, usize, Vec<RunIdx>, Vec<NodeId>);

/// One victim search: what it searches room for, and on what terms (see [`plan`]).
struct Search<'s> {
    on_node: &'s IdVec<NodeId, Vec<RunIdx>>,
    req: &'s Request<'s>,
    eligible: &'s dyn Fn(&RunInfo) -> bool,
    selection: VictimSelection,
    limits: Limits<'s>,
    allowed: Option<&'s [NodeId]>,
    gang: Gang<'s>,
}

/// Sets each node of `d` in or out of the domain being searched.
fn mark(member: &mut IdVec<NodeId, bool>, d: &[NodeId], on: bool) {
    for &n in d {
        member[n] = on;
    }
}

impl Search<'_> {
    /// Whether the gang may be placed on node `n`.
    fn may(&self, n: &NodeId) -> bool {
        self.allowed.is_none_or(|a| a.contains(n))
    }

    /// May be a victim (the limits' credit takes any such job); a job younger than its
    /// minimum runtime only when `young_ok`.
    fn may_go(&self, r: &RunInfo, young_ok: bool) -> bool {
        !r.gone && (self.eligible)(r) && (young_ok || r.young_until.is_none())
    }

    /// A candidate for the room: one that may go, of the gang's GPU type too.
    fn ok(&self, r: &RunInfo, young_ok: bool) -> bool {
        r.flavor == self.req.flavor && self.may_go(r, young_ok)
    }

    /// The smallest set of victims (and what it loses, and its domain) that makes the room,
    /// searched level by level, the smallest level with a plan winning.
    fn pass(
        &self,
        c: &mut Cluster,
        runs: &IdVec<RunIdx, RunInfo>,
        young_ok: bool,
    ) -> Option<(Vec<RunIdx>, u64, Vec<NodeId>)> {
        let facts = c.facts.get(self.req.flavor)?;
        let levels = self.levels(facts.max_node_gpus);
        let flavor_nodes: Vec<NodeId> = facts
            .nodes
            .iter()
            .copied()
            .filter(|n| self.may(n))
            .collect();
        // candidates for the limits' credit, wherever they run
        let anywhere: Vec<RunIdx> = if self.limits.is_some() {
            runs.ids()
                .filter(|&r| self.may_go(&runs[r], young_ok))
                .collect()
        } else {
            Vec::new()
        };
        let mut best: Option<Best> = None;
        let mut member: IdVec<NodeId, bool> = IdVec::filled(false, c.nodes.len());
        for level in levels {
            let domains = self.domains(c, runs, level, &flavor_nodes, young_ok);
            self.best_of(
                c,
                runs,
                &domains,
                &anywhere,
                &mut member,
                &mut best,
                young_ok,
            );
            if best.is_some() {
                break; // the smallest level with a plan wins
            }
        }
        best.map(|(k, _, v, d)| (v, k.0, d))
    }

    /// The levels of domains victims are chosen in, smallest first.
    fn levels(&self, max_node_gpus: u32) -> Vec<TopologyLevel> {
        let mut levels = Vec::new();
        match self.req.required {
            // the ablation: one flavor-wide domain; the placement may still need a node or
            // rack, but victims are not chosen per domain
            _ if self.selection != VictimSelection::WholeDomain => {
                levels.push(TopologyLevel::GpuGroup)
            }
            Some(TopologyLevel::GpuGroup) | Some(TopologyLevel::Node) => {
                levels.push(TopologyLevel::Node)
            }
            Some(TopologyLevel::Rack) => levels.push(TopologyLevel::Rack),
            None => {
                if self.req.whole_gpus <= max_node_gpus {
                    levels.push(TopologyLevel::Node);
                }
                levels.push(TopologyLevel::Rack);
                levels.push(TopologyLevel::GpuGroup); // stands for "the whole flavor" here
            }
        }
        levels
    }

    /// The domains of `level` that could hold the gang: nodes with enough whole GPUs free
    /// or held by candidates, racks of the type with enough healthy GPUs, the whole type.
    fn domains(
        &self,
        c: &Cluster,
        runs: &IdVec<RunIdx, RunInfo>,
        level: TopologyLevel,
        flavor_nodes: &[NodeId],
        young_ok: bool,
    ) -> Vec<Vec<NodeId>> {
        let g = self.req.whole_gpus;
        match level {
            TopologyLevel::Node => flavor_nodes
                .iter()
                .filter(|&&n| {
                    let extra: u32 = self.on_node[n]
                        .iter()
                        .filter(|&&r| self.ok(&runs[r], young_ok))
                        .map(|&r| {
                            runs[r]
                                .takes
                                .iter()
                                .filter(|t| t.0 == n)
                                .map(|t| t.1.iter().filter(|x| x.1 == 1000).count() as u32)
                                .sum::<u32>()
                        })
                        .sum();
                    c.nodes[n].whole_avail(Mode::AfterRelease) + extra >= g
                })
                .map(|&n| vec![n])
                .collect(),
            TopologyLevel::Rack => c
                .racks
                .iter()
                .filter(|r| r.flavor == self.req.flavor && r.healthy_gpus >= g)
                .map(|r| {
                    r.nodes
                        .iter()
                        .copied()
                        .filter(|n| self.may(n))
                        .collect::<Vec<_>>()
                })
                .filter(|d| !d.is_empty())
                .collect(),
            TopologyLevel::GpuGroup => vec![flavor_nodes.to_vec()],
        }
    }

    /// The best set in any of `domains`, kept in `best` when better than the one in hand.
    /// Domains by a bound on the work their set loses, least first; once the bound passes the
    /// set in hand no domain left can win. Searching every node for each waiting job was most
    /// of a cycle with priority preemption everywhere (`benches/sched.rs`). Ties keep the
    /// domain order (`i`), as trying them in that order did. The search cannot change what a
    /// domain holds or has free (it leaves the cluster as it found it), so each domain's jobs
    /// and room are read once, first.
    #[allow(clippy::too_many_arguments)]
    fn best_of(
        &self,
        c: &mut Cluster,
        runs: &IdVec<RunIdx, RunInfo>,
        domains: &[Vec<NodeId>],
        anywhere: &[RunIdx],
        member: &mut IdVec<NodeId, bool>,
        best: &mut Option<Best>,
        young_ok: bool,
    ) {
        let mut seen: Vec<Option<(Vec<RunIdx>, Room)>> = Vec::with_capacity(domains.len());
        let mut order: Vec<(u64, usize)> = Vec::new();
        for (i, d) in domains.iter().enumerate() {
            // every job with a replica here that may go, for the limits' credit too
            let mut here: Vec<RunIdx> = d
                .iter()
                .flat_map(|&n| self.on_node[n].iter().copied())
                .filter(|&r| self.may_go(&runs[r], young_ok))
                .collect();
            here.sort_unstable();
            here.dedup();
            mark(member, d, true);
            let domain = Domain::new(c, d, member);
            let bound = domain.least_loss(runs, self.req.whole_gpus, &here);
            let room = domain.room;
            mark(member, d, false);
            seen.push(bound.map(|_| (here, room)));
            order.extend(bound.map(|b| (b, i)));
        }
        order.sort_unstable();
        let key = |r: RunIdx| {
            (
                runs[r].lost,
                runs[r].priority,
                std::cmp::Reverse(runs[r].started),
                runs[r].job,
            )
        };
        for (bound, i) in order {
            if best.as_ref().is_some_and(|b| bound > b.0.0) {
                break;
            }
            let d = &domains[i];
            let Some((here, room)) = seen[i].take() else {
                continue;
            };
            let mut cands: Vec<RunIdx> = here
                .into_iter()
                .filter(|&r| self.ok(&runs[r], young_ok))
                .collect();
            cands.extend_from_slice(anywhere);
            cands.sort_by_key(|&r| key(r));
            cands.dedup();
            mark(member, d, true);
            let found = in_domain(
                c,
                runs,
                &self.gang,
                &Domain {
                    nodes: d,
                    member,
                    room,
                },
                &cands,
                self.limits,
                self.selection == VictimSelection::WholeDomain,
            );
            mark(member, d, false);
            if let Some((v, k)) = found
                && best.as_ref().is_none_or(|b| (&k, i) < (&b.0, b.1))
            {
                // an empty set loses nothing and has no victims: no domain after it wins
                let empty = v.is_empty();
                *best = Some((k, i, v, d.clone()));
                if empty {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::fixtures::{node, snapshot};
    use crate::sched::ids::Id;
    use crate::sched::model::GpuIndex;

    /// Nodes of 8 GPUs, with the first `held[i]` GPUs of node `i` held.
    fn cluster(held: &[u32]) -> Cluster {
        let nodes = (0..held.len())
            .map(|i| node(&format!("n{i}"), "H100", 8, None))
            .collect();
        let snap = snapshot(0, nodes, vec![], vec![], vec![]);
        let mut c = Cluster::build(&snap);
        for (i, &h) in held.iter().enumerate() {
            let n = c.node_by_name[&format!("n{i}")];
            let gpus: Vec<GpuIndex> = (0..h).map(GpuIndex).collect();
            c.charge_running(n, &gpus, None, 0, 0, false);
        }
        c.index(&snap);
        c
    }

    fn whole(k: u32) -> Demand {
        Demand {
            gpu: GpuDemand::Whole(k),
            cpu: 0,
            mem: 0,
            task: 0,
            index: 0,
        }
    }

    fn all(c: &Cluster) -> (Vec<NodeId>, IdVec<NodeId, bool>) {
        (c.nodes.ids().collect(), IdVec::filled(true, c.nodes.len()))
    }

    #[test]
    fn a_gang_needs_replicas_of_at_least_each_size() {
        let need = Need::from_demands(&[whole(8), whole(8), whole(4), whole(1)], 21);
        assert_eq!(need.at_least, vec![(8, 2), (4, 3), (1, 4)]);
        assert_eq!(need.whole, 21);
    }

    #[test]
    fn room_rules_out_gangs_the_free_gpus_cannot_hold() {
        // free: 8, 4, 4
        let mut c = cluster(&[0, 4, 4]);
        let (nodes, member) = all(&c);
        let mut room = Domain::new(&c, &nodes, &member).room;
        let two_nodes = Need::from_demands(&[whole(8), whole(8)], 16);
        assert!(!room.may_fit(&two_nodes), "only one node has 8 free");
        assert!(room.may_fit(&Need::from_demands(&[whole(8), whole(4), whole(4)], 16)));
        assert!(room.may_fit(&Need::from_demands(&vec![whole(4); 4], 16)));
        assert!(!room.may_fit(&Need::from_demands(&vec![whole(1); 17], 17)));
        // the second node's job releases its 4 GPUs: two nodes with 8 free
        let n1 = c.node_by_name["n1"];
        let held: Vec<(u8, u16)> = (0..4).map(|g| (g, 1000)).collect();
        room.count(&c, &member, &[n1], false);
        c.set_releasing(n1, &held, 0, 0, true);
        room.count(&c, &member, &[n1], true);
        assert!(room.may_fit(&two_nodes));
        assert_eq!(room.free, 20);
    }

    fn held_run(job: u32, node: NodeId, gpus: u8, lost: u64) -> RunInfo {
        RunInfo {
            job: JobIdx::new(job as usize),
            queue: None,
            vc: None,
            flavor: FlavorId::default(),
            milli: u64::from(gpus) * 1000,
            bonus: true,
            priority: 0,
            started: 0,
            lost,
            young_until: None,
            takes: vec![(node, (0..gpus).map(|g| (g, 1000)).collect(), 0, 0)],
            nodes: vec![node],
            gone: false,
        }
    }

    #[test]
    fn the_bound_is_the_cheapest_cover_with_victims_taken_in_part() {
        let c = cluster(&[8]);
        let (nodes, member) = all(&c);
        let n = nodes[0];
        let d = Domain::new(&c, &nodes, &member);
        // per GPU: 25, 10, 45
        let runs: IdVec<RunIdx, RunInfo> = vec![
            held_run(0, n, 4, 100),
            held_run(1, n, 1, 10),
            held_run(2, n, 2, 90),
        ]
        .into();
        let ids: Vec<RunIdx> = runs.ids().collect();
        // 6 GPUs: the 1-GPU job (10), the 4-GPU one (100), half the 2-GPU one (45); the
        // cheapest real set, the 4- and 2-GPU jobs, loses 190
        assert_eq!(d.least_loss(&runs, 6, &ids), Some(155));
        // the 1- and 2-GPU jobs hold 3 GPUs: no set frees 6
        assert_eq!(d.least_loss(&runs, 6, &ids[1..]), None);
        // nothing missing, nothing to lose
        let free = cluster(&[2]);
        let d = Domain::new(&free, &nodes, &member);
        assert_eq!(d.least_loss(&runs, 6, &ids), Some(0));
    }
}
