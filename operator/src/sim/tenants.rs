//! Setup B: multi-tenant quality on a window of the Philly trace, four policies in one
//! discrete-event simulator.
//!
//! **Cluster.** 8-GPU nodes of one flavor (`P100`, two PCIe groups of four as
//! [`Topology::default_for`] assumes), in racks of `rack_nodes` nodes. Its size follows the
//! window's load: the GPU-time that the jobs submitted in the window would use inside the
//! window (a job running past its end counts up to the end), divided by the window's length,
//! is the mean demand in GPUs; the cluster has `ceil(mean / load / 8)` nodes
//! (`load` = 0.85 by default: the cluster would be 85 % busy if the demand were flat), and at
//! least enough nodes for the largest job.
//!
//! **Tenants.** One VirtualCluster (with one FIFO queue) per Philly tenant group (`cluster`
//! column); its guarantee is its share of the window's GPU-time, in whole nodes (largest
//! remainder, at least one node each), so guarantees add up to the cluster; the share is
//! of the same in-window GPU-time. Jobs over 8 GPUs
//! are gangs of 8-GPU replicas (plus one replica for the remainder).
//!
//! **Time.** Arrivals and completions happen at their exact times; the scheduler runs at
//! most once per `tick` seconds of simulated time (a controller's cycle), whenever something
//! changed. Running jobs checkpoint every `ckpt_interval` seconds of their run. A preempted
//! job loses the work since its last periodic checkpoint (the checkpoint request is *not*
//! credited as a fresh checkpoint: a conservative model of jobs that only save
//! periodically), and resumes from it when admitted again, keeping its place in line.
//!
//! **Policies** — each an honest variation of the snapshot given to `sched` or of how the
//! simulator carries out its decisions (see [`Policy`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

use serde::Serialize;

use super::philly::PhillyJob;
use super::stats::{mean, percentile};
use crate::sched::{
    CellGuarantee, Decisions, Flavor, FlavorGuarantee, GpuDemand, Job, Node, Options,
    PreemptionReason, Queue, QueuePolicy, QueueingStrategy, ReplicaPlacement, Resources, Running,
    Snapshot, StartEstimate, Task, Topology, TopologyConstraint, TopologyLevel, VictimSelection,
    VirtualCluster, WaitReason, schedule_with, start_estimates,
};

/// The flavor of every simulated Philly node.
pub const FLAVOR: &str = "P100";

/// The name of a victim selection, for reports.
pub fn victims_label(v: VictimSelection) -> &'static str {
    match v {
        VictimSelection::WholeDomain => "whole-domain",
        VictimSelection::Scattered => "scattered",
        VictimSelection::CountOnly => "count-only",
    }
}

fn victims_name<S: serde::Serializer>(v: &VictimSelection, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(victims_label(*v))
}

/// A multi-tenant policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Policy {
    /// (1) YARN-CS-like strict quotas: each VC's limit equals its guarantee, so nothing is
    /// ever lent and nothing is ever preempted.
    Strict,
    /// (2) Kueue-cohort-like lending with kill-and-restart reclaim: no limit, idle GPUs are
    /// borrowed; `sched` is told every job checkpointed just now, so its victim choice is
    /// checkpoint-blind and falls to its tie-breaks (lowest priority, most recently started
    /// first: Kueue's own rule); victims are killed at once (no grace) and restart from
    /// scratch, losing all their work.
    KillRestart,
    /// (3) HiveD-like: guarantees are node-level cells (whole 8-GPU nodes, kept obtainable by
    /// `sched`'s cell binding, as HiveD's buddy cells are), idle cells run opportunistic
    /// (bonus) jobs; victims are chosen checkpoint-blind as in (2) and killed at once, and
    /// resume from their last periodic checkpoint.
    HivedLike,
    /// (4) kubetrain: `sched` as it is, with real checkpoint times; victims get
    /// `ack_delay` seconds to acknowledge the checkpoint request before their GPUs are free,
    /// and resume from their last periodic checkpoint.
    Kubetrain,
}

impl Policy {
    pub const ALL: [Policy; 4] = [
        Policy::Strict,
        Policy::KillRestart,
        Policy::HivedLike,
        Policy::Kubetrain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Strict => "strict-quota",
            Policy::KillRestart => "lend-kill-restart",
            Policy::HivedLike => "hived-like",
            Policy::Kubetrain => "kubetrain",
        }
    }

    pub fn from_name(s: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// Parameters of Setup B.
#[derive(Clone, Debug, Serialize)]
pub struct TenantConfig {
    /// Window start, seconds since the epoch.
    pub window_start: i64,
    pub window_days: i64,
    /// Target mean utilisation the cluster is sized for.
    pub load: f64,
    pub rack_nodes: u32,
    /// Seconds between a running job's periodic checkpoints.
    pub ckpt_interval: i64,
    /// Seconds a kubetrain victim takes to acknowledge its checkpoint request and leave.
    pub ack_delay: i64,
    /// Seconds between scheduling cycles (at most one per tick).
    pub tick: i64,
    /// Stop the drain this many days after the window's end (jobs left are unfinished).
    pub drain_days: i64,
}

impl Default for TenantConfig {
    fn default() -> Self {
        TenantConfig {
            window_start: super::philly::parse_time("2017-09-25").unwrap_or(0),
            window_days: 28,
            load: 0.85,
            rack_nodes: 16,
            ckpt_interval: 1800,
            ack_delay: 60,
            tick: 60,
            drain_days: 60,
        }
    }
}

/// How every tenant's queue admits its jobs, and what the scheduler is told of their
/// durations: the queueing strategies' comparison (`strategies`) varies these.
#[derive(Clone, Debug, Default)]
pub struct Queueing {
    pub policy: QueuePolicy,
    pub strategy: QueueingStrategy,
    /// Each job's predicted duration, in the order of the window's jobs (`Workload::jobs`);
    /// empty: no job has one. A job resumed after a preemption is predicted the rest of it.
    pub predictions: Vec<Option<i64>>,
}

/// The jobs of the window and the cluster sized for them.
#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    #[serde(skip)]
    pub jobs: Vec<PhillyJob>,
    pub tenants: Vec<String>,
    /// Guaranteed nodes per tenant (same order as `tenants`).
    pub guarantee_nodes: Vec<u32>,
    /// GPU-time share per tenant.
    pub share: Vec<f64>,
    pub nodes: u32,
    pub mean_demand_gpus: f64,
    pub largest_job_gpus: u32,
}

/// Select the window's jobs, size the cluster and apportion guarantees.
pub fn prepare(all: &[PhillyJob], cfg: &TenantConfig) -> Result<Workload, super::SimError> {
    let end = cfg.window_start + cfg.window_days * 86_400;
    let jobs: Vec<PhillyJob> = all
        .iter()
        .filter(|j| j.submit >= cfg.window_start && j.submit < end)
        .cloned()
        .collect();
    if jobs.is_empty() {
        return Err(super::SimError::Invalid(
            "no Philly job is submitted in the window".into(),
        ));
    }
    let mut by_tenant: BTreeMap<String, f64> = BTreeMap::new();
    for j in &jobs {
        // GPU-time inside the window only: long jobs that run on after it do not load it
        let overlap = (j.submit + j.duration).min(end) - j.submit;
        *by_tenant.entry(j.tenant.clone()).or_default() += f64::from(j.gpus) * overlap as f64;
    }
    let total: f64 = by_tenant.values().sum();
    let mean_demand = total / (end - cfg.window_start) as f64;
    let largest = jobs.iter().map(|j| j.gpus).max().unwrap_or(1);
    let tenants: Vec<String> = by_tenant.keys().cloned().collect();
    let share: Vec<f64> = by_tenant.values().map(|v| v / total).collect();
    let nodes = ((mean_demand / cfg.load / 8.0).ceil() as u32)
        .max(largest.div_ceil(8))
        .max(tenants.len() as u32);
    // largest remainder, at least one node each
    let quota: Vec<f64> = share.iter().map(|s| s * f64::from(nodes)).collect();
    let mut g: Vec<u32> = quota.iter().map(|q| (q.floor() as u32).max(1)).collect();
    while g.iter().sum::<u32>() > nodes {
        let i = (0..g.len())
            .max_by_key(|&i| (g[i], Reverse(i)))
            .unwrap_or(0);
        g[i] -= 1;
    }
    while g.iter().sum::<u32>() < nodes {
        let i = (0..g.len())
            .max_by(|&a, &b| {
                (quota[a] - f64::from(g[a]))
                    .total_cmp(&(quota[b] - f64::from(g[b])))
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        g[i] += 1;
    }
    Ok(Workload {
        jobs,
        tenants,
        guarantee_nodes: g,
        share,
        nodes,
        mean_demand_gpus: mean_demand,
        largest_job_gpus: largest,
    })
}

/// Nodes of 8 GPUs in racks of `rack_nodes`.
pub fn cluster(nodes: u32, rack_nodes: u32, prefix: &str) -> Vec<Node> {
    (0..nodes)
        .map(|i| Node {
            name: format!(
                "{prefix}r{:03}-n{:02}",
                i / rack_nodes.max(1),
                i % rack_nodes.max(1)
            ),
            flavor: Flavor::new(FLAVOR),
            allocatable: Resources {
                cpu_milli: 64_000,
                memory_bytes: 512 << 30,
                gpus: 8,
            },
            rack: Some(format!("{prefix}r{:03}", i / rack_nodes.max(1))),
            topology: Topology::default(),
            unhealthy_gpus: vec![],
            schedulable: true,
            foreign: Resources::default(),
            ..Default::default()
        })
        .collect()
}

/// The job's tasks: up to 8 GPUs on one replica, larger jobs as gangs of 8-GPU replicas.
pub fn tasks(gpus: u32) -> Vec<Task> {
    let t = |name: &str, replicas: u32, k: u32| Task {
        name: name.into(),
        replicas,
        cpu_milli: 0,
        memory_bytes: 0,
        gpus: GpuDemand::Whole(k),
        ..Default::default()
    };
    if gpus <= 8 {
        return vec![t("worker", 1, gpus)];
    }
    let mut v = vec![t("worker", gpus / 8, 8)];
    if !gpus.is_multiple_of(8) {
        v.push(t("rest", 1, gpus % 8));
    }
    v
}

/// One job's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct JobRecord {
    pub id: String,
    pub tenant: String,
    pub gpus: u32,
    pub submit: i64,
    pub duration: i64,
    pub first_start: Option<i64>,
    pub finish: Option<i64>,
    pub preemptions: u32,
    pub lost_gpu_seconds: i64,
    /// The start time the scheduler estimated for it in the cycle it arrived in, when it did
    /// not start in that cycle: `Some(None)` when the estimate was unknown. `None`: it
    /// started at once, or no estimate was made (no job of the run had a prediction).
    pub estimate_at_submit: Option<Option<i64>>,
}

impl JobRecord {
    pub fn queue_delay(&self) -> Option<i64> {
        self.first_start.map(|s| s - self.submit)
    }
    pub fn jct(&self) -> Option<i64> {
        self.finish.map(|f| f - self.submit)
    }
}

/// Per-tenant results of one policy.
#[derive(Clone, Debug, Serialize)]
pub struct TenantStats {
    pub tenant: String,
    pub guarantee_gpus: u32,
    pub jobs: usize,
    pub unfinished: usize,
    pub avg_queue_s: f64,
    pub p99_queue_s: f64,
    /// Over the same jobs, on a private cluster of the tenant's guarantee.
    pub private_avg_queue_s: f64,
    pub private_p99_queue_s: f64,
    /// `avg_queue_s - private_avg_queue_s` over the jobs that started in both: positive is
    /// a sharing anomaly (the tenant waits longer than alone on its guarantee).
    pub anomaly_s: f64,
}

/// Results of one policy.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyResult {
    pub policy: Policy,
    pub name: String,
    pub jobs: usize,
    pub finished: usize,
    pub unfinished: usize,
    pub avg_jct_s: f64,
    pub p99_jct_s: f64,
    pub avg_queue_s: f64,
    pub p99_queue_s: f64,
    /// Mean allocated GPUs over capacity during the window (%).
    pub alloc_rate_pct: f64,
    pub preemptions: u64,
    /// Reclaim plans that preempted someone, their victims, and the GPU-hours lost as planned.
    pub reclaims: u64,
    pub reclaim_victims: u64,
    pub reclaim_planned_lost_gpu_hours: f64,
    /// How `sched` chose victims in this run.
    #[serde(serialize_with = "victims_name")]
    pub victims: VictimSelection,
    pub lost_gpu_hours: f64,
    /// Idle GPUs while some job within its quota waits for room (NoFit), mean over the window, % of capacity.
    pub frag_pct: f64,
    pub tenants_with_anomaly: usize,
    pub tenants: Vec<TenantStats>,
    pub cycles: u64,
    pub seconds: f64,
    #[serde(skip)]
    pub records: Vec<JobRecord>,
}

#[derive(Clone, Debug)]
enum State {
    Future,
    Pending,
    Running {
        started: i64,
        placement: Vec<ReplicaPlacement>,
        bonus: bool,
        leave_at: Option<i64>,
    },
    Done,
}

struct SimJob {
    template: Job,
    gpus: u32,
    duration: i64,
    /// Its place among the window's jobs.
    index: usize,
    /// Its predicted duration, when the scheduler is told one.
    predicted: Option<i64>,
    /// Seconds of work saved by checkpoints (resumed from).
    done: i64,
    state: State,
    /// Bumped at each start: stale completion events are ignored.
    generation: u32,
    rec: JobRecord,
}

/// One simulation: `jobs` on `nodes` with these tenants.
struct Sim<'a> {
    cfg: &'a TenantConfig,
    policy: Policy,
    snap: Snapshot,
    jobs: Vec<SimJob>,
    by_id: BTreeMap<String, usize>,
    /// (time, kind, job, generation); kind 0 = leave (preemption acknowledged), 1 = completion.
    events: BinaryHeap<Reverse<(i64, u8, usize, u32)>>,
    next_arrival: usize,
    allocated: u64,
    capacity: u64,
    last_t: i64,
    alloc_area: f64,
    frag_area: f64,
    frag_free: Option<u64>,
    opts: Options,
    totals: Totals,
    /// Whether the jobs carry predictions, so start estimates are worth recording.
    estimates: bool,
    /// Jobs that arrived since the last cycle (estimates are recorded for them).
    arrived: Vec<usize>,
}

/// Counters of one simulation run.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    cycles: u64,
    /// Victims told to leave (a job preempted twice counts twice).
    preemptions: u64,
    /// Reclaim plans that preempted at least one job.
    reclaims: u64,
    /// Victims of those plans.
    reclaim_victims: u64,
    /// GPU-seconds lost as `sched` planned them (since each victim's last checkpoint).
    reclaim_planned_lost: u64,
}

impl<'a> Sim<'a> {
    fn new(
        cfg: &'a TenantConfig,
        policy: Policy,
        nodes: Vec<Node>,
        vcs: Vec<VirtualCluster>,
        jobs: &[PhillyJob],
        tenant_of: &dyn Fn(&str) -> Option<usize>,
        opts: Options,
    ) -> Sim<'a> {
        let queues = vcs
            .iter()
            .map(|v| Queue {
                name: v.name.clone(),
                virtual_cluster: v.name.clone(),
                ..Default::default()
            })
            .collect();
        let capacity = nodes.iter().map(|n| u64::from(n.allocatable.gpus)).sum();
        let mut sim_jobs = Vec::new();
        let mut by_id = BTreeMap::new();
        for (i, j) in jobs.iter().enumerate() {
            let Some(t) = tenant_of(&j.tenant) else {
                continue;
            };
            let id = format!("{}/job-{i:06}", j.tenant);
            let template = Job {
                id: id.clone(),
                queue: vcs[t].name.clone(),
                priority: 0,
                queued_at: j.submit,
                user: j.tenant.clone(),
                tasks: tasks(j.gpus),
                gpu_types: vec![],
                topology: TopologyConstraint::default(),
                retries: 0,
                preemptions: 0,
                predicted_duration_seconds: None,
                returning: false,
                running: None,
            };
            by_id.insert(id.clone(), sim_jobs.len());
            sim_jobs.push(SimJob {
                template,
                gpus: j.gpus,
                duration: j.duration,
                index: i,
                predicted: None,
                done: 0,
                state: State::Future,
                generation: 0,
                rec: JobRecord {
                    id,
                    tenant: j.tenant.clone(),
                    gpus: j.gpus,
                    submit: j.submit,
                    duration: j.duration,
                    first_start: None,
                    finish: None,
                    preemptions: 0,
                    lost_gpu_seconds: 0,
                    estimate_at_submit: None,
                },
            });
        }
        Sim {
            cfg,
            policy,
            snap: Snapshot {
                now: 0,
                nodes,
                virtual_clusters: vcs,
                queues,
                jobs: vec![],
                workload: vec![],
            },
            jobs: sim_jobs,
            by_id,
            events: BinaryHeap::new(),
            next_arrival: 0,
            allocated: 0,
            capacity,
            last_t: cfg.window_start,
            alloc_area: 0.0,
            frag_area: 0.0,
            frag_free: None,
            opts,
            totals: Totals::default(),
            estimates: false,
            arrived: Vec::new(),
        }
    }

    /// Every tenant's queue admits as `q` says, and the jobs carry its predictions.
    fn with_queueing(mut self, q: &Queueing) -> Self {
        for queue in &mut self.snap.queues {
            queue.policy = q.policy;
            queue.strategy = q.strategy;
        }
        for j in &mut self.jobs {
            j.predicted = q.predictions.get(j.index).copied().flatten();
        }
        self.estimates = self.jobs.iter().any(|j| j.predicted.is_some());
        self
    }

    /// Records, for the jobs that arrived before this cycle and do not start in it, the
    /// start the scheduler estimates for them (what `status.estimatedStartTime` would say).
    fn record_estimates(&mut self, d: &Decisions) {
        let arrived = std::mem::take(&mut self.arrived);
        if !self.estimates || arrived.is_empty() {
            return;
        }
        let estimates = start_estimates(&self.snap, d);
        for j in arrived {
            let id = &self.jobs[j].rec.id;
            if d.admissions.iter().any(|a| &a.job == id) {
                continue;
            }
            let estimate = match estimates.get(id) {
                Some(StartEstimate::At(t)) => Some(*t),
                _ => None,
            };
            self.jobs[j].rec.estimate_at_submit = Some(estimate);
        }
    }

    /// Integrate allocation (and fragmentation) up to `t`, within the window.
    fn advance(&mut self, t: i64) {
        let end = self.cfg.window_start + self.cfg.window_days * 86_400;
        let (a, b) = (
            self.last_t.clamp(self.cfg.window_start, end),
            t.clamp(self.cfg.window_start, end),
        );
        if b > a {
            let dt = (b - a) as f64;
            self.alloc_area += self.allocated as f64 * dt;
            if let Some(free) = self.frag_free {
                self.frag_area += free as f64 * dt;
            }
        }
        self.last_t = self.last_t.max(t);
    }

    fn last_checkpoint(&self, started: i64, now: i64) -> Option<i64> {
        match self.policy {
            Policy::Kubetrain => {
                let ran = now - started;
                (ran >= self.cfg.ckpt_interval)
                    .then(|| started + ran / self.cfg.ckpt_interval * self.cfg.ckpt_interval)
            }
            // checkpoint-blind: every job looks as if it had just saved
            _ => Some(now),
        }
    }

    fn grace(&self) -> i64 {
        if self.policy == Policy::Kubetrain {
            self.cfg.ack_delay
        } else {
            0
        }
    }

    fn finish(&mut self, j: usize, t: i64) {
        self.advance(t);
        let job = &mut self.jobs[j];
        job.state = State::Done;
        job.rec.finish = Some(t);
        self.allocated -= u64::from(job.gpus);
    }

    /// A victim leaves at `t`: account the lost work and requeue it.
    fn leave(&mut self, j: usize, t: i64) {
        self.advance(t);
        let interval = self.cfg.ckpt_interval.max(1);
        let policy = self.policy;
        let job = &mut self.jobs[j];
        let State::Running { started, .. } = job.state else {
            return;
        };
        let ran = t - started;
        let lost = if policy == Policy::KillRestart {
            let lost = job.done + ran;
            job.done = 0;
            lost
        } else {
            let saved = ran / interval * interval;
            job.done += saved;
            ran - saved
        };
        job.rec.lost_gpu_seconds += lost * i64::from(job.gpus);
        job.rec.preemptions += 1;
        job.generation += 1;
        job.state = State::Pending;
        self.allocated -= u64::from(job.gpus);
    }

    fn start(&mut self, j: usize, t: i64, placement: Vec<ReplicaPlacement>, bonus: bool) {
        self.advance(t);
        let job = &mut self.jobs[j];
        job.generation += 1;
        job.rec.first_start.get_or_insert(t);
        let end = t + (job.duration - job.done).max(1);
        self.events.push(Reverse((end, 1, j, job.generation)));
        job.state = State::Running {
            started: t,
            placement,
            bonus,
            leave_at: None,
        };
        self.allocated += u64::from(job.gpus);
    }

    fn build_snapshot(&mut self, now: i64) {
        self.snap.now = now;
        let mut jobs = Vec::new();
        for j in &self.jobs {
            // what is left of the prediction, as of the work it resumes from
            let predicted = j.predicted.map(|p| (p - j.done).max(1));
            match &j.state {
                State::Pending => {
                    let mut job = j.template.clone();
                    job.predicted_duration_seconds = predicted;
                    jobs.push(job);
                }
                State::Running {
                    started,
                    placement,
                    bonus,
                    leave_at,
                } => {
                    let mut job = j.template.clone();
                    job.predicted_duration_seconds = predicted;
                    job.preemptions = j.rec.preemptions;
                    job.running = Some(Running {
                        placement: placement.clone(),
                        bonus: *bonus,
                        started_at: *started,
                        last_checkpoint: self.last_checkpoint(*started, now),
                        checkpoint_grace_seconds: self.grace(),
                        min_runtime_seconds: 0,
                        preempting: leave_at.is_some(),
                        checkpoint_request: None,
                    });
                    jobs.push(job);
                }
                State::Future | State::Done => {}
            }
        }
        self.snap.jobs = jobs;
    }

    fn apply(&mut self, d: Decisions, now: i64) -> bool {
        let mut immediate = false;
        for a in d.admissions {
            if let Some(&j) = self.by_id.get(&a.job) {
                self.start(j, now, a.placement, a.bonus);
            }
        }
        let standing = d.promotions.iter().map(|p| (p, false));
        for (p, now_bonus) in standing.chain(d.demotions.iter().map(|p| (p, true))) {
            if let Some(&j) = self.by_id.get(p)
                && let State::Running { bonus, .. } = &mut self.jobs[j].state
            {
                *bonus = now_bonus;
            }
        }
        for p in &d.preemptions {
            if p.reason == PreemptionReason::Reclaim && !p.victims.is_empty() {
                self.totals.reclaims += 1;
                self.totals.reclaim_victims += p.victims.len() as u64;
                self.totals.reclaim_planned_lost += p.lost_gpu_seconds;
            }
            for v in &p.victims {
                let Some(&j) = self.by_id.get(v) else {
                    continue;
                };
                self.totals.preemptions += 1;
                let grace = self.grace();
                if let State::Running { leave_at, .. } = &mut self.jobs[j].state {
                    if leave_at.is_some() {
                        continue;
                    }
                    *leave_at = Some(now + grace);
                }
                if grace == 0 {
                    self.leave(j, now);
                    immediate = true;
                } else {
                    let g = self.jobs[j].generation;
                    self.events.push(Reverse((now + grace, 0, j, g)));
                }
            }
        }
        let nofit = d
            .waiting
            .iter()
            .any(|w| matches!(w.reason, WaitReason::NoFit { .. }));
        self.frag_free = nofit.then(|| self.capacity - self.allocated);
        immediate
    }

    fn run(mut self) -> (Vec<JobRecord>, f64, f64, Totals) {
        let tick = self.cfg.tick.max(1);
        let stop = self.cfg.window_start + (self.cfg.window_days + self.cfg.drain_days) * 86_400;
        let mut now = match self.jobs.first() {
            Some(j) => j.rec.submit.div_euclid(tick) * tick + tick,
            None => return (Vec::new(), 0.0, 0.0, Totals::default()),
        };
        loop {
            // events up to now, in time order
            let mut dirty = false;
            loop {
                let next_arr = self.jobs.get(self.next_arrival).map(|j| j.rec.submit);
                let next_ev = self.events.peek().map(|Reverse(e)| e.0);
                match (next_arr, next_ev) {
                    (Some(a), e) if a <= now && e.is_none_or(|e| a <= e) => {
                        let j = self.next_arrival;
                        self.next_arrival += 1;
                        self.jobs[j].state = State::Pending;
                        self.arrived.push(j);
                        dirty = true;
                    }
                    (_, Some(e)) if e <= now => {
                        let Some(Reverse((t, kind, j, generation))) = self.events.pop() else {
                            break;
                        };
                        if generation != self.jobs[j].generation
                            || !matches!(self.jobs[j].state, State::Running { .. })
                        {
                            continue;
                        }
                        if kind == 1 {
                            self.finish(j, t);
                        } else {
                            self.leave(j, t);
                        }
                        dirty = true;
                    }
                    _ => break,
                }
            }
            self.advance(now);
            let mut reruns = 0;
            while dirty && reruns < 8 {
                self.build_snapshot(now);
                let d = schedule_with(&self.snap, &self.opts);
                self.totals.cycles += 1;
                self.record_estimates(&d);
                dirty = self.apply(d, now);
                reruns += 1;
            }
            self.snap.jobs.clear();
            // next time something happens, on the tick grid
            let next_arr = self.jobs.get(self.next_arrival).map(|j| j.rec.submit);
            let next_ev = self.events.peek().map(|Reverse(e)| e.0);
            let Some(next) = [next_arr, next_ev].into_iter().flatten().min() else {
                break;
            };
            let next = next.max(now + 1);
            now = (next + tick - 1).div_euclid(tick) * tick;
            if now > stop {
                break;
            }
        }
        let end = self.cfg.window_start + self.cfg.window_days * 86_400;
        self.advance(end);
        let span = (end - self.cfg.window_start) as f64 * self.capacity as f64;
        let alloc = 100.0 * self.alloc_area / span;
        let frag = 100.0 * self.frag_area / span;
        (
            self.jobs.into_iter().map(|j| j.rec).collect(),
            alloc,
            frag,
            self.totals,
        )
    }
}

fn vcs_for(w: &Workload, policy: Policy) -> Vec<VirtualCluster> {
    w.tenants
        .iter()
        .zip(&w.guarantee_nodes)
        .map(|(t, &n)| VirtualCluster {
            name: t.clone(),
            guarantee: vec![FlavorGuarantee {
                flavor: Flavor::new(FLAVOR),
                gpus: n * 8,
                cells: if policy == Policy::HivedLike {
                    vec![CellGuarantee {
                        level: TopologyLevel::Node,
                        count: n,
                    }]
                } else {
                    vec![]
                },
            }],
            limit_gpus: (policy == Policy::Strict).then_some(n * 8),
            weight: 1,
            terminating: false,
        })
        .collect()
}

/// Queueing delays on a private cluster of each tenant's guarantee, by job id.
pub fn private_delays(w: &Workload, cfg: &TenantConfig) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for (t, name) in w.tenants.iter().enumerate() {
        let n = w.guarantee_nodes[t];
        let vc = VirtualCluster {
            name: name.clone(),
            guarantee: vec![FlavorGuarantee {
                flavor: Flavor::new(FLAVOR),
                gpus: n * 8,
                cells: vec![],
            }],
            limit_gpus: None,
            weight: 1,
            terminating: false,
        };
        let nodes = cluster(n, cfg.rack_nodes, &format!("{name}-"));
        let sim = Sim::new(
            cfg,
            Policy::Strict,
            nodes,
            vec![vc],
            &w.jobs,
            &|x| (x == name).then_some(0),
            Options::default(),
        );
        let (recs, ..) = sim.run();
        for r in recs {
            if let Some(q) = r.queue_delay() {
                out.insert(r.id, q);
            }
        }
    }
    out
}

/// Job ids are `tenant/job-<index in the window>` in every run, so records can be matched.
pub fn simulate(
    w: &Workload,
    cfg: &TenantConfig,
    policy: Policy,
    private: &BTreeMap<String, i64>,
) -> PolicyResult {
    simulate_with(w, cfg, policy, private, Options::default())
}

/// [`simulate`] with `sched` options other than the defaults (the ablations).
pub fn simulate_with(
    w: &Workload,
    cfg: &TenantConfig,
    policy: Policy,
    private: &BTreeMap<String, i64>,
    opts: Options,
) -> PolicyResult {
    simulate_queueing(w, cfg, policy, private, opts, &Queueing::default())
}

/// [`simulate_with`] with every tenant's queue admitting as `queueing` says.
pub fn simulate_queueing(
    w: &Workload,
    cfg: &TenantConfig,
    policy: Policy,
    private: &BTreeMap<String, i64>,
    opts: Options,
    queueing: &Queueing,
) -> PolicyResult {
    let t0 = Instant::now();
    let idx: BTreeMap<&str, usize> = w
        .tenants
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    let sim = Sim::new(
        cfg,
        policy,
        cluster(w.nodes, cfg.rack_nodes, ""),
        vcs_for(w, policy),
        &w.jobs,
        &|x| idx.get(x).copied(),
        opts,
    )
    .with_queueing(queueing);
    let (records, alloc, frag, totals) = sim.run();
    let f = |v: Vec<i64>| v.into_iter().map(|x| x as f64).collect::<Vec<f64>>();
    let jct = f(records.iter().filter_map(JobRecord::jct).collect());
    let queue = f(records.iter().filter_map(JobRecord::queue_delay).collect());
    let tenants: Vec<TenantStats> = w
        .tenants
        .iter()
        .enumerate()
        .map(|(t, name)| {
            let mine: Vec<&JobRecord> = records.iter().filter(|r| r.tenant == *name).collect();
            let q = f(mine.iter().filter_map(|r| r.queue_delay()).collect());
            let both: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|r| Some((r.queue_delay()? as f64, *private.get(&r.id)? as f64)))
                .collect();
            let shared_both: Vec<f64> = both.iter().map(|x| x.0).collect();
            let private_both: Vec<f64> = both.iter().map(|x| x.1).collect();
            TenantStats {
                tenant: name.clone(),
                guarantee_gpus: w.guarantee_nodes[t] * 8,
                jobs: mine.len(),
                unfinished: mine.iter().filter(|r| r.finish.is_none()).count(),
                avg_queue_s: mean(&q),
                p99_queue_s: percentile(&q, 99.0),
                private_avg_queue_s: mean(&private_both),
                private_p99_queue_s: percentile(&private_both, 99.0),
                anomaly_s: mean(&shared_both) - mean(&private_both),
            }
        })
        .collect();
    PolicyResult {
        policy,
        name: policy.name().to_string(),
        jobs: records.len(),
        finished: jct.len(),
        unfinished: records.len() - jct.len(),
        avg_jct_s: mean(&jct),
        p99_jct_s: percentile(&jct, 99.0),
        avg_queue_s: mean(&queue),
        p99_queue_s: percentile(&queue, 99.0),
        alloc_rate_pct: alloc,
        preemptions: totals.preemptions,
        reclaims: totals.reclaims,
        reclaim_victims: totals.reclaim_victims,
        reclaim_planned_lost_gpu_hours: totals.reclaim_planned_lost as f64 / 3600.0,
        victims: opts.victims,
        lost_gpu_hours: records
            .iter()
            .map(|r| r.lost_gpu_seconds as f64)
            .sum::<f64>()
            / 3600.0,
        frag_pct: frag,
        tenants_with_anomaly: tenants
            .iter()
            .filter(|t| t.anomaly_s > cfg.tick as f64)
            .count(),
        tenants,
        cycles: totals.cycles,
        seconds: t0.elapsed().as_secs_f64(),
        records,
    }
}
