//! One scheduling cycle: build the state, then the guaranteed phase, the bonus phase and
//! priority preemption (see the module docs of `sched`).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::rc::Rc;

use super::cancel;
use super::cells::Cells;
use super::cluster::{Cluster, FlavorFacts, Mode};
use super::constraints::{self, Mismatch, NodeConstraints};
use super::decisions::{Admission, Decisions, WaitReason, Waiting};
use super::frag::{self, Mix};
use super::ids::{FlavorId, IdVec, JobIdx, NodeId, QueueId, RackId, RunIdx, VcId};
use super::model::{Flavor, GpuDemand, Gpus, Job, Snapshot, TopologyLevel};
use super::options::Options;
use super::order;
use super::placement::{Demand, NodeFilter, NodeMask, Request, Scope, Trial, place};
use super::preempt::{CONSOLIDATION_SEARCHES, NoVictims};
use super::reclaim::RunInfo;
use super::risk;
use super::tenants::{Tenants, gpus};
use super::usage;

/// A pending job, digested.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) job: JobIdx,
    pub(super) queue: QueueId,
    pub(super) vc: VcId,
    pub(super) milli: u64,
    pub(super) demands: Vec<Demand>,
    pub(super) whole: u32,
    pub(super) largest_replica: u32,
    pub(super) flavors: Vec<FlavorId>,
    pub(super) nvlink: bool,
    /// Set when node constraints keep some task off some nodes.
    pub(super) filter: Option<Rc<NodeFilter>>,
}

/// Where to search for a job: the whole flavor, or the nodes its constraints allow.
pub(super) fn scope(p: &Pending) -> Scope<'_> {
    p.filter
        .as_ref()
        .map_or(Scope::Flavor, |f| Scope::Nodes(&f.nodes))
}

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

pub(super) type ShapeKey = (
    FlavorId,
    Option<TopologyLevel>,
    Option<TopologyLevel>,
    Vec<(GpuDemand, u64, u64)>,
    Option<usize>,
);

pub(super) struct Cycle<'a> {
    pub(super) snap: &'a Snapshot,
    pub(super) opts: Options,
    pub(super) c: Cluster,
    /// The workload's shape mix that fragmentation is scored against (empty: no scores).
    pub(super) mix: &'a Mix,
    pub(super) t: Tenants,
    pub(super) cells: Cells,
    pub(super) runs: IdVec<RunIdx, RunInfo>,
    pub(super) on_node: IdVec<NodeId, Vec<RunIdx>>,
    pub(super) out: Decisions,
    /// Shapes that did not fit a flavor now: capacity only shrinks within a cycle.
    pub(super) no_fit: BTreeSet<ShapeKey>,
    /// Victim searches that found nothing this cycle ([`NoVictims`]).
    pub(super) no_victims: BTreeSet<NoVictims>,
    /// Jobs a cell guarantee kept from capacity that would otherwise fit.
    pub(super) cells_blocked: BTreeSet<JobIdx>,
    /// VirtualClusters and types whose guarantee cannot be obtained now, even by reclaim
    /// (`risk`): a job within such a guarantee that finds no room is told so.
    pub(super) at_risk: BTreeSet<(VcId, FlavorId)>,
    /// Consolidation searches left this cycle ([`CONSOLIDATION_SEARCHES`]).
    pub(super) consolidations_left: usize,
    /// This cycle's admissions, as `out.admissions` lists them: the job, its VC, its GPU
    /// type and its milli-GPUs (`settle_with_admissions`).
    pub(super) admitted: Vec<(JobIdx, VcId, FlavorId, u64)>,
    /// Set while a plan is made at a job's turn in phase 1: only a plan that leaves the job
    /// within its guarantee may be made there, before other teams' guaranteed admissions.
    pub(super) guaranteed_plans_only: bool,
    /// Whether any node has a taint that keeps pods out (then every job is checked).
    pub(super) any_taints: bool,
    /// Node masks per distinct set of constraints (jobs of one template share them), and
    /// the node filters per distinct list of masks.
    pub(super) masks: RefCell<HashMap<&'a NodeConstraints, Option<NodeMask>>>,
    pub(super) filters: RefCell<HashMap<FilterKey, Rc<NodeFilter>>>,
}

/// A node filter's identity in one cycle: its tasks' masks (by address: the masks live in
/// `Cycle::masks` for the whole cycle) and the GPU types searched.
type FilterKey = (Vec<Option<usize>>, Vec<FlavorId>);

/// What a job needs of one GPU type at least, for the "never fits" checks.
struct Shape {
    largest_replica: u32,
    whole: u32,
    level: Option<TopologyLevel>,
}

impl Shape {
    /// Whether a type with these facts could ever hold the job: a node for its largest
    /// replica, and all its GPUs in the type and in one domain of its required level.
    fn fits(&self, x: &FlavorFacts) -> bool {
        self.largest_replica <= x.max_node_gpus
            && self.whole <= x.total_gpus
            && self.whole <= x.max_in(self.level)
    }
}

fn sort_key(d: &Demand) -> (u8, Reverse<u64>, u16, u32) {
    match d.gpu {
        GpuDemand::Whole(k) => (0, Reverse(u64::from(k)), d.task, d.index),
        GpuDemand::Share(m) => (1, Reverse(u64::from(m.0)), d.task, d.index),
        GpuDemand::None => (2, Reverse(0), d.task, d.index),
    }
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
/// `t`; cell ownership starts from the jobs guaranteed so far, and a bonus job becomes
/// guaranteed only where that keeps other VCs' cells obtainable (else it stays
/// reclaimable). Changes of standing go to `out`; returns the order and the cells.
fn settle_standing(
    snap: &Snapshot,
    c: &Cluster,
    t: &mut Tenants,
    runs: &mut IdVec<RunIdx, RunInfo>,
    out: &mut Decisions,
) -> (Vec<RunIdx>, Cells) {
    let mut order: Vec<RunIdx> = runs.ids().filter(|&i| !runs[i].gone).collect();
    order.sort_by_key(|&i| standing_order(&runs[i], snap.job(runs[i].job).id.as_str()));
    let mut cells = Cells::build(snap, c, t, runs);
    for &i in &order {
        let r = &runs[i];
        let (Some(q), Some(vc)) = (r.queue, r.vc) else {
            continue;
        };
        let guaranteed =
            t.within_guarantee(vc, r.flavor, r.milli) && (!r.bonus || cells.promote(c, t, r, vc));
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
    (order, cells)
}

/// The order in which running jobs fill their VirtualCluster's guarantee; what is left over
/// is bonus, so a VC's bonus jobs are its least important. Higher priority first; among
/// equal priorities the standing a job already has (guaranteed first), so that jobs do not
/// swap at every checkpoint and a reclaim planned on a domain is not undone by the next
/// cycle; then the most work lost if stopped now, the oldest, the id.
fn standing_order<'a>(
    r: &RunInfo,
    id: &'a str,
) -> (Reverse<i32>, bool, Reverse<u64>, i64, &'a str) {
    (Reverse(r.priority), r.bonus, Reverse(r.lost), r.started, id)
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

/// One demand per replica of the job, in task order; an invalid job (no replicas, too many
/// tasks, a share outside 1..=999 milli) says why.
fn demands_of(job: &Job) -> Result<Vec<Demand>, WaitReason> {
    let invalid = |m: String| Err(WaitReason::Invalid { message: m });
    if job.tasks.is_empty() || job.tasks.iter().all(|t| t.replicas == 0) {
        return invalid("it has no replicas".into());
    }
    if job.tasks.len() > usize::from(u16::MAX) {
        return invalid("it has too many tasks".into());
    }
    let mut demands = Vec::new();
    for (ti, t) in job.tasks.iter().enumerate() {
        let gpu = match t.gpus {
            GpuDemand::Whole(0) => GpuDemand::None,
            GpuDemand::Share(m) if m.0 == 0 || m.0 >= 1000 => {
                return invalid(format!(
                    "task {} asks for a GPU share of {} milli; a share is 1 to 999",
                    t.name, m.0
                ));
            }
            g => g,
        };
        for index in 0..t.replicas {
            demands.push(Demand {
                gpu,
                cpu: t.cpu_milli,
                mem: t.memory_bytes,
                task: ti as u16,
                index,
            });
        }
    }
    Ok(demands)
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

/// Approximate bytes of the per-cycle node state the core builds for a snapshot (ledgers,
/// topology, free index), for the memory budget. Diagnostic only.
pub fn state_bytes(snap: &Snapshot) -> usize {
    use std::mem::size_of;
    let mut c = Cluster::build(snap);
    c.index(snap);
    let per_node: usize = c
        .nodes
        .iter()
        .map(|n| {
            size_of::<super::cluster::NodeState>()
                + n.gpus.capacity() * size_of::<super::cluster::GpuLedger>()
                + n.groups
                    .iter()
                    .map(|g| size_of::<Vec<u8>>() + g.capacity())
                    .sum::<usize>()
                + n.group_nvlink.capacity()
                + n.gpu_pos.capacity()
        })
        .sum();
    // name map, bucket and rack index entries (B-tree nodes ~ 2× the key size)
    let index = c
        .node_by_name
        .keys()
        .map(|k| k.capacity() + 48)
        .sum::<usize>()
        + c.nodes.len() * 2 * size_of::<(bool, NodeId)>();
    per_node + index
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
            runs.push(RunInfo {
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
            });
        }
        c.index(snap);
        let cap: IdVec<FlavorId, u64> = c
            .facts
            .iter()
            .map(|f| u64::from(f.total_gpus) * 1000)
            .collect();
        let mut t = Tenants::build(snap, &c.flavor_by_name, cap.clone());
        let mut on_node = IdVec::filled(Vec::new(), c.nodes.len());
        for i in runs.ids() {
            let r: &mut RunInfo = &mut runs[i];
            let job = snap.job(r.job);
            r.queue = t.queue_by_name.get(&job.queue).copied();
            r.vc = r.queue.and_then(|q| t.queue_vc[q]);
            for &n in &r.nodes {
                on_node[n].push(i);
            }
        }
        let mut out = Decisions {
            cancellations: cancelled.into_values().collect(),
            ..Decisions::default()
        };
        let was_bonus: IdVec<RunIdx, bool> = runs.iter().map(|r| r.bonus).collect();
        let (order, mut cells) = settle_standing(snap, &c, &mut t, &mut runs, &mut out);
        if keep_preemptions_a_limit_needs(snap, &mut t, &mut runs, &order, &mut out) {
            // The standing counted the victims whose withdrawal a limit then refused: they
            // leave after all, so the others' standing is settled again without them. A
            // sibling was demoted for as long as the victim checkpointed, and promoted when it
            // left (Demoted, then Promoted, within seconds in an acceptance run).
            for i in runs.ids() {
                runs[i].bonus = was_bonus[i];
            }
            out.promotions.clear();
            out.demotions.clear();
            t = Tenants::build(snap, &c.flavor_by_name, cap);
            cells = settle_standing(snap, &c, &mut t, &mut runs, &mut out).1;
        }
        charge_jobs_that_return(snap, &mut t, &runs);
        if !out.demotions.is_empty() {
            // a demoted job no longer binds its domains: they may be clean again
            cells = Cells::build(snap, &c, &t, &runs);
        }
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

    /// Validate pending jobs and turn them into demands; invalid ones get their reason.
    fn digest(&mut self) -> IdVec<JobIdx, Option<Pending>> {
        let snap = self.snap;
        // reserve-and-pack: jobs that accept any type try the types fewest jobs ask for first
        let mut asked: BTreeMap<FlavorId, usize> = BTreeMap::new();
        for j in snap.jobs.iter().filter(|j| j.running.is_none()) {
            for f in &j.gpu_types {
                if let Some(&id) = self.c.flavor_by_name.get(f.as_str()) {
                    *asked.entry(id).or_default() += 1;
                }
            }
        }
        let mut any_gpu: Vec<FlavorId> = self
            .c
            .flavor_names
            .ids()
            .filter(|&f| !self.c.flavor_names[f].is_empty() && self.c.facts[f].total_gpus > 0)
            .collect();
        any_gpu.sort_by_key(|&f| {
            (
                asked.get(&f).copied().unwrap_or(0),
                self.c.flavor_names[f].clone(),
            )
        });
        let mut any_cpu: Vec<FlavorId> = self
            .c
            .flavor_names
            .ids()
            .filter(|&f| !self.c.facts[f].nodes.is_empty())
            .collect();
        any_cpu.sort_by_key(|&f| {
            (
                !self.c.flavor_names[f].is_empty(),
                self.c.flavor_names[f].clone(),
            )
        });

        let mut out: IdVec<JobIdx, Option<Pending>> = IdVec::new();
        for (j, job) in snap.jobs.iter().enumerate() {
            let j = JobIdx(j as u32);
            let digested = match job.running {
                Some(_) => None,
                None => self
                    .digest_one(j, &any_gpu, &any_cpu)
                    .map_err(|reason| self.wait(j, reason))
                    .ok(),
            };
            out.push(digested);
        }
        out
    }

    pub(super) fn digest_one(
        &self,
        j: JobIdx,
        any_gpu: &[FlavorId],
        any_cpu: &[FlavorId],
    ) -> Result<Pending, WaitReason> {
        let job = self.snap.job(j);
        let (queue, vc) = self.admitting_queue(job)?;
        let mut demands = demands_of(job)?;
        demands.sort_by_key(sort_key);
        let whole_gpus = |d: &Demand| match d.gpu {
            GpuDemand::Whole(k) => k,
            _ => 0,
        };
        let whole: u32 = demands.iter().map(whole_gpus).sum();
        let largest_replica = demands.iter().map(whole_gpus).max().unwrap_or(0);
        let uses_gpu = demands.iter().any(|d| d.gpu != GpuDemand::None);
        let mut flavors = self.acceptable_flavors(job, uses_gpu, any_gpu, any_cpu);
        let level = job.topology.required;
        let shape = Shape {
            largest_replica,
            whole,
            level,
        };
        if flavors.is_empty() || !flavors.iter().any(|&f| shape.fits(&self.c.facts[f])) {
            return Err(self.never_fits(job, &flavors, &shape, uses_gpu));
        }
        flavors.retain(|&f| shape.fits(&self.c.facts[f]));
        self.fits_a_node(&demands, &flavors)?;
        let filter = self.node_filter(job, &mut flavors)?;
        let nvlink = largest_replica >= 2
            || job.topology.required == Some(TopologyLevel::GpuGroup)
            || job.topology.preferred == Some(TopologyLevel::GpuGroup);
        Ok(Pending {
            job: j,
            queue,
            vc,
            milli: job.gpu_milli(),
            demands,
            whole,
            largest_replica,
            flavors,
            nvlink,
            filter,
        })
    }

    /// The job's queue and its VirtualCluster, when the queue admits jobs now: it exists,
    /// belongs to a VirtualCluster, and neither it (nor a queue above it) nor the
    /// VirtualCluster is being deleted.
    fn admitting_queue(&self, job: &Job) -> Result<(QueueId, VcId), WaitReason> {
        let invalid = |m: String| Err(WaitReason::Invalid { message: m });
        let Some(&queue) = self.t.queue_by_name.get(&job.queue) else {
            return invalid(format!("queue {} does not exist", job.queue));
        };
        let Some(vc) = self.t.queue_vc[queue] else {
            return invalid(format!(
                "queue {} has no valid VirtualCluster or parent",
                job.queue
            ));
        };
        if let Some(&closed) = self.t.chain[queue]
            .iter()
            .find(|&&q| self.snap.queue(q).terminating)
        {
            return Err(WaitReason::QueueTerminating {
                queue: self.snap.queue(closed).name.clone(),
            });
        }
        // After the queue's own deletion: the queue is the nearer thing to fix.
        if self.t.vc_terminating[vc] {
            return Err(WaitReason::VirtualClusterTerminating {
                virtual_cluster: self.t.vc_names[vc].clone(),
            });
        }
        Ok((queue, vc))
    }

    /// The GPU types the job may use, in the cluster's order of types (never the order the
    /// user wrote them).
    fn acceptable_flavors(
        &self,
        job: &Job,
        uses_gpu: bool,
        any_gpu: &[FlavorId],
        any_cpu: &[FlavorId],
    ) -> Vec<FlavorId> {
        if !uses_gpu {
            // A job that takes no GPU still keeps off the GPU types it did not list: nodes
            // without GPUs, or of a listed type.
            any_cpu
                .iter()
                .copied()
                .filter(|&f| {
                    let name = self.c.flavor_names[f].as_str();
                    job.gpu_types.is_empty()
                        || name.is_empty()
                        || job.gpu_types.iter().any(|t| t.as_str() == name)
                })
                .collect()
        } else if job.gpu_types.is_empty() {
            any_gpu.to_vec()
        } else {
            // A list of acceptable types is a set: taken in the cluster's order of them (as
            // for a job that accepts any type), never in the order the user wrote them.
            any_gpu
                .iter()
                .copied()
                .filter(|&f| {
                    let name = self.c.flavor_names[f].as_str();
                    job.gpu_types.iter().any(|t| t.as_str() == name)
                })
                .collect()
        }
    }

    /// Why a job that no acceptable GPU type can hold waits: the nodes of its types that
    /// take no new work now would hold it (`NodesUnavailable`), or it never fits, naming
    /// what it is too large for.
    fn never_fits(
        &self,
        job: &Job,
        flavors: &[FlavorId],
        shape: &Shape,
        uses_gpu: bool,
    ) -> WaitReason {
        let Shape {
            largest_replica,
            whole,
            level,
        } = *shape;
        if flavors.is_empty() {
            if let Some(r) = uses_gpu
                .then(|| self.nodes_unavailable(job, shape))
                .flatten()
            {
                return r;
            }
            return WaitReason::NeverFits {
                message: format!(
                    "no schedulable node has GPUs of type {}; list other spec.gpuTypes, or it starts once such a node joins",
                    job.gpu_types
                        .iter()
                        .map(Flavor::to_string)
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
        }
        if let Some(r) = self.nodes_unavailable(job, shape) {
            return r;
        }
        // The most any acceptable type offers, to name what the job is too large for;
        // counted only for such a job, not on every job's way through each cycle.
        let most = |of: &dyn Fn(&FlavorFacts) -> u32| {
            flavors
                .iter()
                .map(|&f| of(&self.c.facts[f]))
                .max()
                .unwrap_or(0)
        };
        let most_node = most(&|x| x.max_node_gpus);
        let most_total = most(&|x| x.total_gpus);
        let most_in_level = most(&|x| x.max_in(level));
        WaitReason::NeverFits {
            message: if largest_replica > most_node {
                format!(
                    "a replica needs {largest_replica} GPUs and no node of the acceptable GPU types has more than {most_node}; use more replicas of fewer GPUs each"
                )
            } else if whole > most_total {
                format!(
                    "the job needs {whole} GPUs and no acceptable GPU type has more than {most_total} in the whole cluster; ask for fewer GPUs, or allow more spec.gpuTypes"
                )
            } else if let Some(l) = level.filter(|_| whole > most_in_level) {
                format!(
                    "the job needs {whole} GPUs within one {l} (topology.required) and no {l} of the acceptable GPU types has more than {most_in_level}; ask for fewer GPUs, or loosen topology.required"
                )
            } else {
                format!(
                    "no one acceptable GPU type has both a node for a replica of {largest_replica} GPUs and room for all {whole}; ask for fewer GPUs, or allow more spec.gpuTypes"
                )
            },
        }
    }

    /// Before a job is told it never fits: whether it would, were the nodes of its GPU
    /// types that take no new work now (cordoned, not ready) back. A cordon is maintenance:
    /// a job that needs the cordoned node was told "can never run on this cluster", with a
    /// Warning, and Argo CD read it Degraded (an acceptance run). Counted only for such a
    /// job, over the nodes of its types.
    fn nodes_unavailable(&self, job: &Job, shape: &Shape) -> Option<WaitReason> {
        let c = &self.c;
        let acceptable = |f: FlavorId| {
            let name = c.flavor_names[f].as_str();
            !name.is_empty()
                && (job.gpu_types.is_empty() || job.gpu_types.iter().any(|t| t.as_str() == name))
        };
        let mut all: IdVec<FlavorId, FlavorFacts> =
            IdVec::filled(FlavorFacts::default(), c.flavor_names.len());
        let mut racks: BTreeMap<(FlavorId, RackId), u32> = BTreeMap::new();
        let mut away: Vec<&str> = Vec::new();
        for n in c.nodes.iter().filter(|n| acceptable(n.flavor)) {
            let healthy = n.healthy_gpus();
            if !n.schedulable && healthy > 0 {
                away.push(self.snap.nodes[n.src as usize].name.as_str());
            }
            all[n.flavor].count(n);
            if let Some(r) = n.rack {
                *racks.entry((n.flavor, r)).or_insert(0) += healthy;
            }
        }
        for (&(f, _), &gpus) in &racks {
            all[f].max_rack_gpus = all[f].max_rack_gpus.max(gpus);
        }
        (!away.is_empty() && all.iter().any(|x| shape.fits(x)))
            .then(|| WaitReason::nodes_unavailable(away))
    }

    /// `NeverFits` when a replica asks for more CPU or memory than any one node of the
    /// acceptable types has: it would wait for GPUs to free up for ever, told it waits for
    /// room (kube-scheduler refuses every node for it as well).
    fn fits_a_node(&self, demands: &[Demand], flavors: &[FlavorId]) -> Result<(), WaitReason> {
        let most = |of: fn(&FlavorFacts) -> u64| {
            flavors
                .iter()
                .map(|&f| of(&self.c.facts[f]))
                .max()
                .unwrap_or(0)
        };
        let cpu = demands.iter().map(|d| d.cpu).max().unwrap_or(0);
        let mem = demands.iter().map(|d| d.mem).max().unwrap_or(0);
        let (most_cpu, most_mem) = (most(|x| x.max_node_cpu), most(|x| x.max_node_mem));
        // A type whose nodes report no CPU or memory at all tells nothing.
        let message = if most_cpu > 0 && cpu > most_cpu {
            format!(
                "a replica requests {} CPUs and no node of the acceptable GPU types has more \
                 than {} allocatable; request less CPU per replica",
                cores(cpu),
                cores(most_cpu)
            )
        } else if most_mem > 0 && mem > most_mem {
            format!(
                "a replica requests {} of memory and no node of the acceptable GPU types has \
                 more than {} allocatable; request less memory per replica",
                gib(mem),
                gib(most_mem)
            )
        } else {
            return Ok(());
        };
        Err(WaitReason::NeverFits { message })
    }

    /// The nodes each task may use, when node constraints rule any out; keeps only the
    /// flavors where every task has a node, and when none is left, waits with `NeverFits`
    /// naming what kept the first such task out, counted per node as kube-scheduler does.
    fn node_filter(
        &self,
        job: &'a Job,
        flavors: &mut Vec<FlavorId>,
    ) -> Result<Option<Rc<NodeFilter>>, WaitReason> {
        if !self.any_taints && job.tasks.iter().all(|t| t.constraints.only_tolerations()) {
            return Ok(None);
        }
        let per_task: Vec<Option<NodeMask>> = job
            .tasks
            .iter()
            .map(|t| self.mask(&t.constraints))
            .collect();
        if per_task.iter().all(Option::is_none) {
            return Ok(None);
        }
        let has_node = |mask: &Option<NodeMask>, f: FlavorId| {
            mask.as_ref()
                .is_none_or(|m| self.c.facts[f].nodes.iter().any(|&n| m[n]))
        };
        let acceptable = flavors.clone();
        flavors.retain(|&f| {
            job.tasks
                .iter()
                .zip(&per_task)
                .all(|(t, m)| t.replicas == 0 || has_node(m, f))
        });
        if flavors.is_empty() {
            // Nodes of an acceptable type that take no new work now (cordoned, not ready)
            // and take a task's pods: with them back, every task of the job has a node.
            let passes = |m: &Option<NodeMask>, n: NodeId| m.as_ref().is_none_or(|m| m[n]);
            let mut away: Vec<&str> = Vec::new();
            for &f in &acceptable {
                let of_type = || {
                    self.c
                        .nodes
                        .ids()
                        .filter(move |&n| self.c.nodes[n].flavor == f)
                };
                let every_task = job
                    .tasks
                    .iter()
                    .zip(&per_task)
                    .all(|(t, m)| t.replicas == 0 || of_type().any(|n| passes(m, n)));
                if every_task {
                    away.extend(
                        of_type()
                            .filter(|&n| !self.c.nodes[n].schedulable)
                            .filter(|&n| per_task.iter().any(|m| passes(m, n)))
                            .map(|n| self.snap.nodes[self.c.nodes[n].src as usize].name.as_str()),
                    );
                }
            }
            if !away.is_empty() {
                return Err(WaitReason::nodes_unavailable(away));
            }
            let (task, _) = job
                .tasks
                .iter()
                .zip(&per_task)
                .find(|(t, m)| t.replicas > 0 && acceptable.iter().all(|&f| !has_node(m, f)))
                .or_else(|| {
                    job.tasks
                        .iter()
                        .zip(&per_task)
                        .find(|(t, _)| t.replicas > 0)
                })
                .expect("a job with replicas");
            let mut counts: BTreeMap<Mismatch, u32> = BTreeMap::new();
            for &f in &acceptable {
                for &n in &self.c.facts[f].nodes {
                    let node = &self.snap.nodes[self.c.nodes[n].src as usize];
                    if let Err(m) = task.constraints.check(node) {
                        *counts.entry(m).or_default() += 1;
                    }
                }
            }
            return Err(WaitReason::NeverFits {
                message: format!(
                    "no node of the acceptable GPU types takes the pods of task {}: {}; change the task's nodeSelector, node affinity or tolerations, or the nodes: the job is placed once a node accepts its pods",
                    task.name,
                    if counts.is_empty() {
                        "its tasks need nodes no single GPU type has".to_string()
                    } else {
                        constraints::summarize(&counts)
                    }
                ),
            });
        }
        // Jobs of one template share their masks (the same `Rc`s) and usually their GPU
        // types: their filter is built once per cycle and found by identity, not by
        // comparing node lists.
        let key: FilterKey = (
            per_task
                .iter()
                .map(|m| m.as_ref().map(|m| Rc::as_ptr(m) as usize))
                .collect(),
            flavors.clone(),
        );
        if let Some(f) = self.filters.borrow().get(&key) {
            return Ok(Some(f.clone()));
        }
        let mut nodes: Vec<NodeId> = flavors
            .iter()
            .flat_map(|&f| self.c.facts[f].nodes.iter().copied())
            .filter(|&n| per_task.iter().any(|m| m.as_ref().is_none_or(|m| m[n])))
            .collect();
        nodes.sort_unstable();
        let mut filters = self.filters.borrow_mut();
        let f = Rc::new(NodeFilter {
            per_task,
            nodes,
            id: filters.len(),
        });
        filters.insert(key, f.clone());
        Ok(Some(f))
    }

    /// Which nodes (by index) a replica with these constraints may use; None when all.
    fn mask(&self, c: &'a NodeConstraints) -> Option<NodeMask> {
        if let Some(m) = self.masks.borrow().get(c) {
            return m.clone();
        }
        let mask: IdVec<NodeId, bool> = self
            .c
            .nodes
            .iter()
            .map(|n| c.check(&self.snap.nodes[n.src as usize]).is_ok())
            .collect();
        let m = (!mask.iter().all(|&b| b)).then(|| Rc::new(mask));
        self.masks.borrow_mut().insert(c, m.clone());
        m
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

    /// A job that accepts several GPU types (any, or the set it lists; or uses none): its
    /// acceptable types in the order of the fragmentation its placement there would add
    /// (FGD's coarse score, see `frag`; a type where it does not fit last), so that every
    /// acceptable type and node is scored together. Between types that fit equally well the
    /// scarcer goes last: the type whose GPUs the workload's mix asks more of (its demand per
    /// GPU, `Mix::demand_per_gpu`), so that a job with a choice leaves it to the jobs that
    /// have none. Then ties for a job without GPUs go to a type where it goes on nodes with
    /// no idle GPU (as `frag_pick` within a type), then to the type whose placement starts
    /// at the lowest node index: the same fixed node order as within a type, so a tie does
    /// not always favour the first type by name. Nothing here reads the order in which a job
    /// lists its types: `flavors` comes in the cluster's order (`digest`), and the ranking
    /// is a sort on the scores.
    fn rank_flavors(&mut self, p: &Pending, flavors: &[FlavorId]) -> Vec<FlavorId> {
        if flavors.len() < 2 || self.mix.is_empty() {
            return flavors.to_vec();
        }
        // (score, lower is better; the type's demand per GPU (a non-negative float's bits,
        // ordered as the float); a job without GPUs placed beside idle GPUs (as in
        // `frag_pick`); first node of the placement; type)
        let no_gpu = p.demands.iter().all(|d| d.gpu == GpuDemand::None);
        let mut scored: Vec<(i64, u64, bool, NodeId, FlavorId)> = Vec::with_capacity(flavors.len());
        let mut scratch = Vec::new();
        for &f in flavors {
            let key = self.shape(p, f);
            let mut score = (i64::MAX, true, NodeId(u32::MAX));
            if !self.no_fit.contains(&key) {
                let req = self.request(p, f);
                match place(&mut self.c, &req, Mode::Now, scope(p)) {
                    None => {
                        self.no_fit.insert(key);
                    }
                    Some(trial) => {
                        let mut nodes: Vec<NodeId> = trial.takes.iter().map(|t| t.1.node).collect();
                        nodes.sort_unstable();
                        nodes.dedup();
                        let after: f64 = nodes
                            .iter()
                            .map(|&n| self.mix.frag_now(&self.c, n, &mut scratch))
                            .sum();
                        trial.undo(&mut self.c);
                        let before: f64 = nodes
                            .iter()
                            .map(|&n| self.mix.frag_now(&self.c, n, &mut scratch))
                            .sum();
                        let beside_idle =
                            no_gpu && nodes.iter().any(|&n| self.c.nodes[n].has_idle_gpu());
                        score = (
                            -frag::rank(after - before),
                            beside_idle,
                            nodes.first().copied().unwrap_or(NodeId(u32::MAX)),
                        );
                    }
                }
            }
            let demand = self.mix.demand_per_gpu(f).max(0.0).to_bits();
            scored.push((score.0, demand, score.1, score.2, f));
        }
        scored.sort_unstable();
        scored.into_iter().map(|x| x.4).collect()
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
        self.snap.queue(p.queue).strict && !self.t.above_a_limit(self.snap, p.queue, p.milli)
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
        let (cpu, mem) = p
            .demands
            .iter()
            .fold((0, 0), |(c, m), d| (c.max(d.cpu), m.max(d.mem)));
        let acceptable = |f: FlavorId| {
            let name = c.flavor_names[f].as_str();
            !name.is_empty()
                && (job.gpu_types.is_empty() || job.gpu_types.iter().any(|t| t.as_str() == name))
        };
        let takes = |n: NodeId| {
            p.filter
                .as_ref()
                .is_none_or(|f| p.demands.iter().all(|d| f.admits(d.task, n)))
        };
        // Replicas a node holds now: by its whole free GPUs, and on an away node by its CPU
        // and memory too (the schedulable nodes' count errs high, which only keeps NoFit).
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
            if acceptable(f) && takes(n) {
                let k = holds(n);
                if k > 0 {
                    away.entry(f).or_default().push((n, k));
                }
            }
        }
        if away.is_empty() {
            return None;
        }
        // Per type, what the schedulable nodes hold now: in all, and at most on one node.
        let here = |f: FlavorId| -> (u32, u32) {
            let count = |free: u32, nodes: u32| {
                (free / per * nodes, if nodes > 0 { free / per } else { 0 })
            };
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
        };
        let mut names: Vec<&str> = Vec::new();
        for f in c.flavor_names.ids().filter(|&f| acceptable(f)) {
            let (all, one) = here(f);
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
                    let (queue, head) =
                        (snap.queue(p.queue).name.clone(), snap.job(head).id.clone());
                    let reason = if returning {
                        WaitReason::BehindReturningJob { queue, head }
                    } else {
                        WaitReason::BehindQueueHead { queue, head }
                    };
                    self.wait(j, reason);
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
    fn bonus(&mut self, p: &Pending) -> bool {
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

/// Milli-CPUs as cores: `200`, `0.5`.
fn cores(milli: u64) -> String {
    if milli.is_multiple_of(1000) {
        (milli / 1000).to_string()
    } else {
        format!("{:.3}", milli as f64 / 1000.0)
            .trim_end_matches('0')
            .to_string()
    }
}

/// Bytes as GiB: `2048Gi`, `0.5Gi`.
fn gib(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let g = format!("{:.2}", bytes as f64 / GIB);
    format!("{}Gi", g.trim_end_matches('0').trim_end_matches('.'))
}
