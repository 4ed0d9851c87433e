//! One scheduling cycle: build the state, then the guaranteed phase, the bonus phase and
//! priority preemption (see the module docs of `sched`).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use super::backfill::Reservations;
use super::cancel;

use super::cluster::{Cluster, Mode};
use super::constraints;
use super::cycle_state::{Cycle, Pending, ShapeKey, scope};
use super::decisions::{Admission, Decisions, WaitReason, Waiting};
use super::frag::Mix;
use super::ids::{FlavorId, IdVec, JobIdx, NodeId, QueueId, RunIdx, VcId};
use super::model::{
    Flavor, GpuDemand, Gpus, Job, QueueingStrategy, Running, Snapshot, TopologyLevel,
};
use super::options::Options;
use super::order;
use super::placement::{Request, Scope, Trial, place};
use super::preempt::CONSOLIDATION_SEARCHES;
use super::reclaim::RunInfo;
use super::risk;
use super::standing::{self, standing_order};
use super::tenants::{Tenants, gpus};
use super::usage;

/// Totally ordered f64 for the turn heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Key(f64);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// What phase 1 hands on: the order jobs were offered in, the jobs each VirtualCluster
/// deferred to phase 2 (with whether each is within its guarantee), per strict queue the
/// job that did not start and holds back the jobs offered after it, and each job's place
/// in the order.
struct Offered {
    order: Vec<JobIdx>,
    deferred: IdVec<VcId, Vec<(JobIdx, bool)>>,
    blocker: HashMap<QueueId, JobIdx>,
    place: IdVec<JobIdx, usize>,
}

/// The scheduling cycle: same snapshot, same decisions.
pub fn schedule(snap: &Snapshot) -> Decisions {
    schedule_with(snap, &Options::default())
}

/// [`schedule`] with non-default [`Options`] (the simulator's ablations; the operator always
/// runs the defaults).
pub fn schedule_with(snap: &Snapshot, opts: &Options) -> Decisions {
    let d = cycle(snap, opts, BTreeMap::new());
    let unneeded = cancel::unneeded(snap, &d);
    if unneeded.is_empty() {
        return d;
    }
    // Withdrawn, those victims hold their GPUs again: the cycle is made anew with them.
    cycle(snap, opts, unneeded)
}

/// What running job `j` holds, read from its placement and charged to the cluster (as
/// `leaving` when it is on its way out).
fn run_info(
    snap: &Snapshot,
    c: &mut Cluster,
    j: JobIdx,
    job: &Job,
    r: &Running,
    leaving: bool,
) -> RunInfo {
    let mut takes = Vec::new();
    let mut milli = 0u64;
    let mut flavor = None;
    let mut nodes = Vec::new();
    for p in &r.placement {
        let Some(&n) = c.node_by_name.get(&p.node) else {
            continue;
        };
        let task = job.tasks.iter().find(|t| t.name == p.task);
        let (cpu, mem) = task.map_or((0, 0), |t| (t.cpu_milli, t.memory_bytes));
        let gl: Vec<(u8, u16)> = match p.share {
            Some(m) => p
                .gpus
                .first()
                .map(|g| (g.0.min(255) as u8, m.0.min(1000) as u16))
                .into_iter()
                .collect(),
            None => p.gpus.iter().map(|g| (g.0.min(255) as u8, 1000)).collect(),
        };
        c.charge_running(n, &p.gpus, p.share.map(|m| m.0), cpu, mem, leaving);
        if !gl.is_empty() {
            flavor.get_or_insert(c.nodes[n].flavor);
        }
        milli += gl.iter().map(|x| u64::from(x.1)).sum::<u64>();
        if !nodes.contains(&n) {
            nodes.push(n);
        }
        takes.push((n, gl, cpu, mem));
    }
    let since = r.last_checkpoint.unwrap_or(r.started_at).max(r.started_at);
    let secs = (snap.now - since).max(0) as u64;
    RunInfo {
        job: j,
        queue: None,
        vc: None,
        flavor: flavor
            .or_else(|| nodes.first().map(|&n| c.nodes[n].flavor))
            .unwrap_or_default(),
        milli,
        bonus: r.bonus,
        priority: job.priority,
        started: r.started_at,
        lost: milli.saturating_mul(secs) / 1000,
        young_until: (snap.now < r.started_at + r.min_runtime_seconds)
            .then_some(r.started_at + r.min_runtime_seconds),
        takes,
        nodes,
        gone: leaving,
    }
}

/// Each running job's queue and VirtualCluster; returns the runs on each node.
fn assign_tenants(
    snap: &Snapshot,
    t: &Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    nodes: usize,
) -> IdVec<NodeId, Vec<RunIdx>> {
    let mut on_node = IdVec::filled(Vec::new(), nodes);
    for i in runs.ids() {
        let r: &mut RunInfo = &mut runs[i];
        let job = snap.job(r.job);
        r.queue = t.queue_by_name.get(&job.queue).copied();
        r.vc = r.queue.and_then(|q| t.queue_vc[q]);
        for &n in &r.nodes {
            on_node[n].push(i);
        }
    }
    on_node
}

/// One scheduling cycle, with the preemptions in `withdraw` withdrawn besides the stale ones.
fn cycle(
    snap: &Snapshot,
    opts: &Options,
    withdraw: BTreeMap<JobIdx, super::decisions::Cancellation>,
) -> Decisions {
    let c = Cluster::build(snap);
    let mix = Mix::build(snap, &c.flavor_by_name, c.flavor_names.len());
    let mut cy = Cycle::build(snap, c, &mix, withdraw);
    cy.opts = *opts;
    let at_risk = risk::shortfalls(snap, &cy.c, &cy.t, &cy.cells, &cy.runs);
    cy.at_risk = at_risk
        .keys()
        .filter_map(|(vc, f)| Some((*cy.t.vc_by_name.get(vc)?, *cy.c.flavor_by_name.get(&f.0)?)))
        .collect();
    cy.drain();
    let pending = cy.digest();
    cy.run(pending);
    cy.settle_with_admissions();
    cancel::retarget(&mut cy.out);
    cy.out.usage = usage::report(snap, &cy.c, &cy.t, &cy.out.promotions, &cy.out.demotions);
    risk::attach(&mut cy.out.usage, at_risk);
    cy.out
}

impl<'a> Cycle<'a> {
    fn build(
        snap: &'a Snapshot,
        mut c: Cluster,
        mix: &'a Mix,
        withdraw: BTreeMap<JobIdx, super::decisions::Cancellation>,
    ) -> Cycle<'a> {
        let mut cancelled = cancel::stale(snap);
        cancelled.extend(withdraw);
        let mut runs = IdVec::new();
        for (j, job) in snap.jobs.iter().enumerate() {
            let j = JobIdx(j as u32);
            let Some(r) = &job.running else { continue };
            let leaving = r.preempting && !cancelled.contains_key(&j);
            runs.push(run_info(snap, &mut c, j, job, r, leaving));
        }
        c.index(snap);
        let cap: IdVec<FlavorId, u64> = c
            .facts
            .iter()
            .map(|f| u64::from(f.total_gpus) * 1000)
            .collect();
        let mut t = Tenants::build(snap, &c.flavor_by_name, cap.clone());
        let on_node = assign_tenants(snap, &t, &mut runs, c.nodes.len());
        let mut out = Decisions {
            cancellations: cancelled.into_values().collect(),
            ..Decisions::default()
        };
        let cells = standing::settle(snap, &c, cap, &mut t, &mut runs, &mut out);
        Cycle {
            snap,
            opts: Options::default(),
            c,
            mix,
            t,
            cells,
            runs,
            on_node,
            out,
            no_fit: BTreeSet::new(),
            no_victims: BTreeSet::new(),
            cells_blocked: BTreeSet::new(),
            at_risk: BTreeSet::new(),
            consolidations_left: CONSOLIDATION_SEARCHES,
            admitted: Vec::new(),
            guaranteed_plans_only: false,
            any_taints: snap.nodes.iter().any(|n| {
                n.taints
                    .iter()
                    .any(|t| t.effect != constraints::TaintEffect::PreferNoSchedule)
            }),
            masks: RefCell::default(),
            filters: RefCell::default(),
        }
    }

    pub(super) fn wait(&mut self, job: JobIdx, reason: WaitReason) {
        self.out.waiting.push(Waiting {
            job: self.snap.job(job).id.clone(),
            reason,
            position: None,
        });
    }

    pub(super) fn request<'p>(&self, p: &'p Pending, f: FlavorId) -> Request<'p>
    where
        'a: 'p,
    {
        let job = &self.snap.job(p.job);
        Request {
            demands: &p.demands,
            flavor: f,
            required: job.topology.required,
            preferred: job.topology.preferred,
            whole_gpus: p.whole,
            nvlink_wanted: p.nvlink,
            filter: p.filter.as_deref(),
            mix: self.mix,
        }
    }

    pub(super) fn shape(&self, p: &Pending, f: FlavorId) -> ShapeKey {
        let job = &self.snap.job(p.job);
        (
            f,
            job.topology.required,
            job.topology.preferred,
            p.demands.iter().map(|d| (d.gpu, d.cpu, d.mem)).collect(),
            p.filter.as_ref().map(|f| f.id),
        )
    }

    /// Place now on flavor `f`; guaranteed placements must keep cell guarantees whole.
    pub(super) fn try_place(
        &mut self,
        p: &Pending,
        f: FlavorId,
        guaranteed: bool,
    ) -> Option<Trial> {
        let key = self.shape(p, f);
        if self.no_fit.contains(&key) {
            return None;
        }
        let req = self.request(p, f);
        if guaranteed && let Some(trial) = self.place_in_own_cells(p, f, &req) {
            return Some(trial);
        }
        let Some(trial) = place(&mut self.c, &req, Mode::Now, scope(p)) else {
            self.no_fit.insert(key);
            return None;
        };
        if !guaranteed || self.cells.accepts(&self.c, &self.t, &trial, p.vc, p.milli) {
            return Some(trial);
        }
        trial.undo(&mut self.c);
        self.cells_blocked.insert(p.job);
        // retry on capacity that does not break a cell guarantee
        let allowed = self.cells.allowed_nodes(&self.c, f, p.vc);
        let trial = place(&mut self.c, &req, Mode::Now, Scope::Nodes(&allowed))?;
        if self.cells.accepts(&self.c, &self.t, &trial, p.vc, p.milli) {
            return Some(trial);
        }
        trial.undo(&mut self.c);
        None
    }

    /// What a placement taken costs its tenant: its cells bound (guaranteed), its GPUs
    /// charged. The trial stays in the cluster until the cycle ends.
    fn take(&mut self, p: &Pending, f: FlavorId, trial: &Trial, bonus: bool) {
        if !bonus {
            self.cells.bind(&self.c, trial, p.vc);
        }
        let user = &self.snap.job(p.job).user;
        self.t.charge(p.queue, user, f, p.milli, bonus, true);
    }

    fn admit(&mut self, p: &Pending, f: FlavorId, trial: Trial, bonus: bool) {
        let job = &self.snap.job(p.job);
        self.take(p, f, &trial, bonus);
        let names: Vec<&str> = job.tasks.iter().map(|t| t.name.as_str()).collect();
        let placement = trial.placements(&self.c, self.snap, &p.demands, &names);
        self.admitted.push((p.job, p.vc, f, p.milli));
        self.out.admissions.push(Admission {
            job: job.id.clone(),
            flavor: Flavor(self.c.flavor_names[f].clone()),
            bonus,
            placement,
        });
    }

    /// The next cycle settles the standing again with this cycle's admissions running: a job
    /// admitted beyond its team's guarantee while jobs of lower priority held it was promoted
    /// a second later, and one of them demoted (`Promoted` on a job just admitted, in an
    /// acceptance run). Here the admissions take the standing the next cycle gives them, and
    /// the team's jobs they displace are demoted now: by `standing_order`, filling each
    /// team's guarantee per GPU type, as `settle_standing` does. Only on GPU types where no
    /// VirtualCluster guarantees cells, which weigh in on a promotion (`Cells::promote`):
    /// there the next cycle still decides.
    fn settle_with_admissions(&mut self) {
        let snap = self.snap;
        let touched: BTreeSet<(VcId, FlavorId)> = self
            .admitted
            .iter()
            .map(|&(_, v, f, _)| (v, f))
            .filter(|&(_, f)| !self.cells.guard(f))
            .collect();
        if touched.is_empty() {
            return;
        }
        // (standing key, milli, a run or the index of an admission)
        type Item<'k> = (
            (Reverse<i32>, bool, Reverse<u64>, i64, &'k str),
            u64,
            Result<RunIdx, usize>,
        );
        let mut teams: BTreeMap<(VcId, FlavorId), Vec<Item>> = BTreeMap::new();
        for i in self.runs.ids() {
            let r = &self.runs[i];
            let Some(v) =
                r.vc.filter(|&v| !r.gone && touched.contains(&(v, r.flavor)))
            else {
                continue;
            };
            let key = standing_order(r, snap.job(r.job).id.as_str());
            teams
                .entry((v, r.flavor))
                .or_default()
                .push((key, r.milli, Ok(i)));
        }
        for (k, &(j, v, f, milli)) in self.admitted.iter().enumerate() {
            if !touched.contains(&(v, f)) {
                continue;
            }
            let job = snap.job(j);
            // as the next cycle sees it: just started, nothing to lose yet
            let key = (
                Reverse(job.priority),
                self.out.admissions[k].bonus,
                Reverse(0),
                snap.now,
                job.id.as_str(),
            );
            teams.entry((v, f)).or_default().push((key, milli, Err(k)));
        }
        for ((v, f), mut items) in teams {
            items.sort_by(|a, b| a.0.cmp(&b.0));
            let guarantee = self.t.guarantee[v][f];
            let mut used = 0;
            for (_, milli, who) in items {
                let guaranteed = used + milli <= guarantee;
                if guaranteed {
                    used += milli;
                }
                match who {
                    Err(k) => self.out.admissions[k].bonus = !guaranteed,
                    Ok(i) if self.runs[i].bonus == guaranteed => {
                        self.runs[i].bonus = !guaranteed;
                        let job = snap.job(self.runs[i].job);
                        let id = &job.id;
                        self.out.promotions.retain(|x| x != id);
                        self.out.demotions.retain(|x| x != id);
                        let was = job.running.as_ref().is_some_and(|r| r.bonus);
                        self.out.note_standing(id, was, guaranteed);
                    }
                    Ok(_) => {}
                }
            }
        }
    }

    /// Whether `p`, not started, holds back the jobs behind it: in a strict queue, unless no
    /// preemption could ever make room for it (larger than a limit; one larger than the
    /// cluster never gets here).
    fn holds_back(&self, p: &Pending) -> bool {
        self.snap.queue(p.queue).strategy.holds_back()
            && !self.t.above_a_limit(self.snap, p.queue, p.milli)
    }

    fn no_fit_reason(&self, p: &Pending, within: bool) -> WaitReason {
        let job = &self.snap.job(p.job);
        // Counted where the job may go: of every node of its types, the numbers told a job
        // held to one node by its selector of GPUs it could not use (an acceptance run).
        let (largest, free) = match &p.filter {
            Some(filter) => self.c.free_summary_on(&filter.nodes),
            None => self.c.free_summary(&p.flavors),
        };
        if self.cells_blocked.contains(&p.job)
            && let Some(&f) = p.flavors.first()
        {
            return WaitReason::ReservedForCells {
                flavor: Flavor(self.c.flavor_names[f].clone()),
            };
        }
        if within {
            if let Some(r) = self.room_on_unavailable_nodes(p) {
                return r;
            }
            WaitReason::NoFit {
                flavors: p
                    .flavors
                    .iter()
                    .map(|&f| Flavor(self.c.flavor_names[f].clone()))
                    .collect(),
                needed_gpus: Gpus(p.milli),
                guarantee_at_risk: p
                    .flavors
                    .iter()
                    .any(|&f| self.at_risk.contains(&(p.vc, f)))
                    .then(|| self.t.vc_names[p.vc].clone()),
                largest_per_replica: p.largest_replica,
                required: job.topology.required,
                largest_free_on_node: largest,
                free_gpus: free,
                on_allowed_nodes: p.filter.is_some(),
            }
        } else {
            let g: u64 = p.flavors.iter().map(|&f| self.t.guarantee[p.vc][f]).sum();
            let u: u64 = p
                .flavors
                .iter()
                .map(|&f| self.t.guar_used[p.vc][f] + self.t.bonus_used[p.vc][f])
                .sum();
            WaitReason::QuotaExhausted {
                virtual_cluster: self.t.vc_names[p.vc].clone(),
                guaranteed_gpus: gpus(g),
                in_use_gpus: Gpus(u),
                needed_gpus: Gpus(p.milli),
                share_kept_by: self.share_kept_by(p),
                required: job.topology.required,
            }
        }
    }

    /// `NodesUnavailable` for a job that no schedulable node has room for now, but that the
    /// free GPUs of nodes taking no new work (cordoned, not ready) would hold, with the
    /// schedulable nodes' free GPUs where a gang spans nodes: the room it waits for is
    /// those nodes', not what running jobs hold (an acceptance run read "0 GPUs are free, at
    /// most 0 on one node" for an 8-GPU job whose one fitting node was cordoned and empty).
    /// Counted in replicas of the job's largest per node, on one GPU type, each away node
    /// checked for CPU and memory too. A job of shares, or bound to a GPU group or a rack,
    /// keeps `NoFit`: whole-GPU counts do not tell whether it would fit there. The nodes
    /// read are the few away ones (`Cluster::away`) and the free-GPU buckets; nothing at all
    /// while every node takes work.
    fn room_on_unavailable_nodes(&self, p: &Pending) -> Option<WaitReason> {
        let (c, job) = (&self.c, self.snap.job(p.job));
        let level = job.topology.required;
        let per = p.largest_replica;
        if c.away.is_empty()
            || per == 0
            || !matches!(level, None | Some(TopologyLevel::Node))
            || p.demands
                .iter()
                .any(|d| matches!(d.gpu, GpuDemand::Share(_)))
        {
            return None;
        }
        let replicas = p
            .demands
            .iter()
            .filter(|d| matches!(d.gpu, GpuDemand::Whole(_)))
            .count() as u32;
        let away = self.replicas_away(p, job);
        if away.is_empty() {
            return None;
        }
        let mut names: Vec<&str> = Vec::new();
        for f in c.flavor_names.ids().filter(|&f| acceptable(c, job, f)) {
            let (all, one) = self.replicas_here(p, f);
            let enough_here = match level {
                Some(TopologyLevel::Node) => one >= replicas,
                _ => all >= replicas,
            };
            if enough_here {
                // Room enough on nodes that take work: something else keeps the job out.
                return None;
            }
            let Some(nodes) = away.get(&f) else { continue };
            let with_away = match level {
                Some(TopologyLevel::Node) => nodes.iter().any(|&(_, k)| k >= replicas),
                _ => all + nodes.iter().map(|&(_, k)| k).sum::<u32>() >= replicas,
            };
            if with_away {
                names.extend(
                    nodes
                        .iter()
                        .filter(|&&(_, k)| level.is_none() || k >= replicas)
                        .map(|&(n, _)| self.snap.nodes[c.nodes[n].src as usize].name.as_str()),
                );
            }
        }
        (!names.is_empty()).then(|| WaitReason::nodes_unavailable(names))
    }

    /// Per acceptable GPU type, the away nodes (taking no new work now) that take the job's
    /// pods, with how many of its largest replicas each holds now: by its whole free GPUs,
    /// and by its CPU and memory too. Only nodes that hold one at least.
    fn replicas_away(&self, p: &Pending, job: &Job) -> BTreeMap<FlavorId, Vec<(NodeId, u32)>> {
        let c = &self.c;
        let per = p.largest_replica;
        let (cpu, mem) = p
            .demands
            .iter()
            .fold((0, 0), |(c, m), d| (c.max(d.cpu), m.max(d.mem)));
        let takes = |n: NodeId| {
            p.filter
                .as_ref()
                .is_none_or(|f| p.demands.iter().all(|d| f.admits(d.task, n)))
        };
        let holds = |n: NodeId| {
            let s = &c.nodes[n];
            let by = |avail: u64, need: u64| avail.checked_div(need).map_or(u32::MAX, |k| k as u32);
            (s.whole_avail(Mode::Now) / per)
                .min(by(s.cpu.avail(Mode::Now), cpu))
                .min(by(s.mem.avail(Mode::Now), mem))
        };
        let mut away: BTreeMap<FlavorId, Vec<(NodeId, u32)>> = BTreeMap::new();
        for &n in &c.away {
            let f = c.nodes[n].flavor;
            if acceptable(c, job, f) && takes(n) {
                let k = holds(n);
                if k > 0 {
                    away.entry(f).or_default().push((n, k));
                }
            }
        }
        away
    }

    /// How many of `p`'s largest replicas the schedulable nodes of type `f` hold now: in all,
    /// and at most on one node (counted by whole free GPUs only, which errs high and so only
    /// keeps `NoFit`).
    fn replicas_here(&self, p: &Pending, f: FlavorId) -> (u32, u32) {
        let (c, per) = (&self.c, p.largest_replica);
        let count =
            |free: u32, nodes: u32| (free / per * nodes, if nodes > 0 { free / per } else { 0 });
        let mut total = (0, 0);
        let mut add = |(all, one): (u32, u32)| total = (total.0 + all, total.1.max(one));
        match &p.filter {
            Some(filter) => filter
                .nodes
                .iter()
                .filter(|&&n| c.nodes[n].flavor == f && c.nodes[n].schedulable)
                .for_each(|&n| add(count(u32::from(c.nodes[n].free_now), 1))),
            None => c.buckets[f]
                .iter()
                .enumerate()
                .for_each(|(free, set)| add(count(free as u32, set.len() as u32))),
        }
        total
    }

    fn run(&mut self, pending: IdVec<JobIdx, Option<Pending>>) {
        let list: Vec<(JobIdx, QueueId)> =
            pending.iter().flatten().map(|p| (p.job, p.queue)).collect();
        let mut lines = order::build(self.snap, &self.t, &list);
        let mut offered = self.guaranteed_phase(&pending, &mut lines, list.len());
        let failed = self.bonus_phase(&pending, &mut offered);
        self.preemption_phase(&pending, failed);
        self.number_waiting(&pending, &offered.order);
    }

    /// Phase 1: guaranteed admission, VCs in turn by dominant share of guarantee used; at
    /// equal shares the VC whose next job has waited longest first, as in phase 2 (by the
    /// VC's place in the list, the first team by name won: KAI's allocate case "Both
    /// queues has the same share", `cases/fair_sharing.rs`). VCs with nothing left drop out.
    /// Jobs on their way back hold their room once every VC had its turns.
    fn guaranteed_phase(
        &mut self,
        pending: &IdVec<JobIdx, Option<Pending>>,
        lines: &mut IdVec<VcId, order::VcLines>,
        jobs: usize,
    ) -> Offered {
        let snap = self.snap;
        let nv = self.t.vc_names.len();
        let mut offered = Offered {
            order: Vec::with_capacity(jobs),
            deferred: IdVec::filled(Vec::new(), nv),
            blocker: HashMap::new(),
            place: IdVec::filled(usize::MAX, pending.len()),
        };
        let guaranteed_turn = |t: &Tenants, lines: &IdVec<VcId, order::VcLines>, vc: VcId| {
            let next = lines[vc].peek(t)?;
            Some(Reverse((
                Key(t.guaranteed_share(vc)),
                snap.job(next).queued_at,
                vc,
            )))
        };
        let mut heap: BinaryHeap<Reverse<(Key, i64, VcId)>> = offered
            .deferred
            .ids()
            .filter_map(|v| guaranteed_turn(&self.t, lines, v))
            .collect();
        // Jobs on their way back at the head of their queue, in their turn's order.
        let mut returning: Vec<JobIdx> = Vec::new();
        while let Some(Reverse((_, _, vc))) = heap.pop() {
            let Some(j) = lines[vc].next(&self.t) else {
                continue;
            };
            offered.place[j] = offered.order.len();
            offered.order.push(j);
            let p = pending[j].as_ref().expect("lines hold digested jobs");
            match offered.blocker.entry(p.queue) {
                Entry::Occupied(_) => {
                    // behind a head that has not started: phase 2 tells it why, unless the
                    // head starts as bonus there and this job may go on
                    let within = p
                        .flavors
                        .iter()
                        .any(|&f| self.t.within_guarantee(p.vc, f, p.milli));
                    offered.deferred[vc].push((j, within));
                }
                Entry::Vacant(slot) if snap.job(j).returning => {
                    // Not admitted yet: it holds its place, and the jobs behind it wait for
                    // it (phase 2 tells them why). Its room is held once phase 1 is done.
                    returning.push(j);
                    slot.insert(j);
                }
                Entry::Vacant(slot) => {
                    let admitted = self.out.admissions.len();
                    self.guaranteed(p, &mut offered.deferred[vc]);
                    if self.out.admissions.len() == admitted && self.holds_back(p) {
                        slot.insert(j);
                    }
                }
            }
            heap.extend(guaranteed_turn(&self.t, lines, vc));
        }
        for j in returning {
            let p = pending[j].as_ref().expect("returning jobs are digested");
            self.hold_for_return(p);
        }
        offered
    }

    /// Phase 2: bonus admission, VCs in turn by weighted dominant share of borrowed GPUs;
    /// at equal shares the VC whose next job has waited longest goes first (by the VC's
    /// place in the list, the first team by name won every tie: Kueue's fair-sharing case
    /// "schedule earliest timestamp first", `cases/fair_sharing.rs`). Returns the jobs that
    /// neither start nor wait behind another, for phase 3, with whether each is within its
    /// guarantee.
    fn bonus_phase(
        &mut self,
        pending: &IdVec<JobIdx, Option<Pending>>,
        offered: &mut Offered,
    ) -> Vec<(JobIdx, bool)> {
        let snap = self.snap;
        let nv = self.t.vc_names.len();
        let (deferred, blocker, place) = (&offered.deferred, &mut offered.blocker, &offered.place);
        let mut cursor: IdVec<VcId, usize> = IdVec::filled(0, nv);
        let mut failed: Vec<(JobIdx, bool)> = Vec::new();
        let mut reservations = Reservations::new();
        let turn = |t: &Tenants, vc: VcId, next: JobIdx| {
            Reverse((Key(t.bonus_share(vc)), snap.job(next).queued_at, vc))
        };
        let mut heap: BinaryHeap<Reverse<(Key, i64, VcId)>> = deferred
            .ids()
            .filter(|&v| !deferred[v].is_empty())
            .map(|v| turn(&self.t, v, deferred[v][0].0))
            .collect();
        while let Some(Reverse((_, _, vc))) = heap.pop() {
            let (j, within) = deferred[vc][cursor[vc]];
            cursor[vc] += 1;
            let p = pending[j].as_ref().expect("deferred jobs are digested");
            match blocker.get(&p.queue) {
                Some(&head) if place[head] < place[j] => {
                    let returning = snap.job(head).returning;
                    // a job on its way back is not admitted before it is back
                    let backfills = snap.queue(p.queue).strategy == QueueingStrategy::Backfill
                        && !snap.job(j).returning;
                    let (queue, head_id) =
                        (snap.queue(p.queue).name.clone(), snap.job(head).id.clone());
                    let reason = if returning {
                        Err(WaitReason::BehindReturningJob {
                            queue,
                            head: head_id,
                        })
                    } else if let (true, Some(h)) = (backfills, pending[head].as_ref()) {
                        self.backfill(p, h, &mut reservations)
                    } else {
                        Err(WaitReason::BehindQueueHead {
                            queue,
                            head: head_id,
                        })
                    };
                    if let Err(reason) = reason {
                        self.wait(j, reason);
                    }
                }
                // behind a head that started as bonus: still not admitted before it is
                // back, and the jobs behind it wait for it
                _ if snap.job(j).returning => {
                    let queue = snap.queue(p.queue).name.clone();
                    self.wait(j, WaitReason::Returning { queue });
                    blocker.entry(p.queue).or_insert(j);
                }
                _ if self.bonus(p) => {
                    if blocker.get(&p.queue) == Some(&j) {
                        blocker.remove(&p.queue);
                    }
                }
                _ => {
                    // as in phase 1: its plan before the jobs behind it take its room
                    let limited = self
                        .t
                        .check_limits(snap, p.queue, &snap.job(j).user, p.milli)
                        .is_err();
                    if limited || !self.priority_plan_at_turn(p, false) {
                        failed.push((j, within));
                    }
                    if self.holds_back(p) {
                        blocker.entry(p.queue).or_insert(j);
                    }
                }
            }
            if let Some(&(next, _)) = deferred[vc].get(cursor[vc]) {
                heap.push(turn(&self.t, vc, next));
            }
        }
        failed
    }

    /// Phase 3: priority preemption inside queues that allow it, a queue's share taken back
    /// from sibling queues, and consolidation; else the job waits with the reason that
    /// holds it. A job a limit blocks may preempt too, when the victims free the limit and
    /// the room together; never a job larger than its limit.
    fn preemption_phase(
        &mut self,
        pending: &IdVec<JobIdx, Option<Pending>>,
        failed: Vec<(JobIdx, bool)>,
    ) {
        let snap = self.snap;
        for (j, within) in failed {
            let p = pending[j].as_ref().expect("failed jobs are digested");
            let limit = self
                .t
                .check_limits(snap, p.queue, &snap.job(j).user, p.milli)
                .err();
            let never = limit.is_some() && self.t.above_a_limit(snap, p.queue, p.milli);
            let preemptible = snap.queue(p.queue).priority_preemption && !never;
            if preemptible && self.priority_plan(p, limit.is_some()) {
                continue;
            }
            if !never && self.share_plan(p, limit.is_some()) {
                continue;
            }
            if self.opts.consolidation && limit.is_none() && within && self.consolidation_plan(p) {
                continue;
            }
            let r = limit.unwrap_or_else(|| self.no_fit_reason(p, within));
            self.wait(j, r);
        }
    }

    /// Gives each waiting job its place in its queue: the order phase 1 offered the queue's
    /// jobs, counting only those still waiting. A job larger than one of its limits has no
    /// place, as one larger than the cluster has none: it can never start, and holds back
    /// nobody (an acceptance run read position 1 on it, as if it were next).
    fn number_waiting(&mut self, pending: &IdVec<JobIdx, Option<Pending>>, offered: &[JobIdx]) {
        let at: HashMap<&str, usize> = self
            .out
            .waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.reason.exceeds_limit())
            .map(|(i, w)| (w.job.as_str(), i))
            .collect();
        let mut next: HashMap<QueueId, u32> = HashMap::new();
        let mut places: Vec<(usize, u32)> = Vec::new();
        for &j in offered {
            let (Some(&i), Some(p)) = (at.get(self.snap.job(j).id.as_str()), &pending[j]) else {
                continue;
            };
            let n = next.entry(p.queue).or_insert(0);
            *n += 1;
            places.push((i, *n));
        }
        for (i, n) in places {
            self.out.waiting[i].position = Some(n);
        }
    }

    fn guaranteed(&mut self, p: &Pending, deferred: &mut Vec<(JobIdx, bool)>) {
        let snap = self.snap;
        if let Err(r) = self
            .t
            .check_limits(snap, p.queue, &snap.job(p.job).user, p.milli)
        {
            let preemptible = snap.queue(p.queue).priority_preemption
                && !self.t.above_a_limit(snap, p.queue, p.milli);
            // Its priority plan on the flavors within its guarantee has its turn here, where
            // the next cycle gives the job its turn once the victims free the limit: before
            // phase 2 lends that guarantee to other VCs. In phase 3 the plan could not take
            // back this cycle's admissions, and would free the limit for room on another
            // flavor that the next cycle passes over to reclaim the borrowers here.
            if preemptible && self.priority_tier(p, &self.limited_tiers(p).0, true) {
                return;
            }
            if snap.queue(p.queue).priority_preemption || self.may_take_share(p) {
                // may still preempt lower-priority jobs (on the other flavors, or on room
                // left by jobs evicted since), or take its queue's share back, in the
                // limit's scope (phase 3)
                deferred.push((p.job, false));
            } else {
                self.wait(p.job, r);
            }
            return;
        }
        let head = self.within_guarantee(p);
        if head.is_empty() {
            if !self.priority_plan_at_turn(p, true) {
                deferred.push((p.job, false));
            }
            return;
        }
        let head = self.rank_flavors(p, &head);
        for &f in &head {
            if let Some(trial) = self.try_place(p, f, true) {
                self.admit(p, f, trial, false);
                return;
            }
        }
        if self.reclaim_plan(p, &head) {
            return;
        }
        if !self.priority_plan_at_turn(p, true) {
            deferred.push((p.job, true));
        }
    }

    /// The job's GPU types on which it stays within its VirtualCluster's guarantee.
    fn within_guarantee(&self, p: &Pending) -> Vec<FlavorId> {
        p.flavors
            .iter()
            .copied()
            .filter(|&f| self.t.within_guarantee(p.vc, f, p.milli))
            .collect()
    }

    /// A job on its way back (stopped for a drain, back in its queue once `kubectl drain`
    /// has seen its pods gone) within its VirtualCluster's guarantee keeps the room it will
    /// take back from being lent: held for the rest of the cycle, after every team's
    /// guaranteed jobs had their turn and before phase 2 lends what is left. Lent meanwhile,
    /// another team's bonus job started in the gap and was reclaimed for it seconds later
    /// (an acceptance run: an 8-GPU gang admitted, then checkpointed 9 s later). Where the
    /// room is not free, the bonus jobs that hold it are reclaimed now, so that their
    /// checkpoints overlap the gap instead of following it. Beyond its guarantee it waits
    /// as before: lending to others is what bonus capacity is for.
    fn hold_for_return(&mut self, p: &Pending) {
        let snap = self.snap;
        let queue = snap.queue(p.queue).name.clone();
        let within = self.within_guarantee(p);
        let limited = self
            .t
            .check_limits(snap, p.queue, &snap.job(p.job).user, p.milli)
            .is_err();
        if !limited && !within.is_empty() {
            for f in self.rank_flavors(p, &within) {
                if let Some(trial) = self.try_place(p, f, true) {
                    // taken as an admission is, without the admission
                    self.take(p, f, &trial, false);
                    self.wait(p.job, WaitReason::Returning { queue });
                    return;
                }
            }
            if self.reclaim_plan(p, &within) {
                return;
            }
        }
        self.wait(p.job, WaitReason::Returning { queue });
    }

    /// Bonus (or, on a flavor with guarantee left, guaranteed) admission on idle capacity.
    pub(super) fn bonus(&mut self, p: &Pending) -> bool {
        let snap = self.snap;
        if self
            .t
            .check_limits(snap, p.queue, &snap.job(p.job).user, p.milli)
            .is_err()
        {
            return false;
        }
        for f in self.rank_flavors(p, &p.flavors) {
            if self.t.within_guarantee(p.vc, f, p.milli)
                && let Some(trial) = self.try_place(p, f, true)
            {
                self.admit(p, f, trial, false);
                return true;
            }
            // on a flavor with guarantee left this borrows a cell kept for another VC:
            // as bonus, it stays reclaimable
            if let Some(trial) = self.try_place(p, f, false) {
                self.admit(p, f, trial, true);
                return true;
            }
        }
        false
    }
}

/// Whether `f` is a GPU type `job` accepts (any, when it lists none).
fn acceptable(c: &Cluster, job: &Job, f: FlavorId) -> bool {
    let name = c.flavor_names[f].as_str();
    !name.is_empty()
        && (job.gpu_types.is_empty() || job.gpu_types.iter().any(|t| t.as_str() == name))
}
