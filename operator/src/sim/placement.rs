//! Setup A: placement quality under the FGD protocol (Weng et al., "Beware of
//! Fragmentation", USENIX ATC'23) on the openb traces.
//!
//! The cluster is the openb GPU node list, one VirtualCluster whose guarantee is every GPU of
//! every model, one FIFO queue. Pods arrive in a seeded order — the trace shuffled, then
//! pods drawn from it with replacement until the arrived GPU demand reaches `target_pct` of
//! the cluster's GPUs (the FGD simulator's "workload inflation"). **No pod ever leaves.**
//! Each pod is placed at once or fails for good: the pods arriving within one 1 % step of
//! demand are handed to `sched::schedule` as one batch of pending jobs (FIFO by arrival,
//! so the core places them in arrival order on the state left by the ones before, exactly
//! as one-at-a-time placement would), the admitted ones become running jobs of the next
//! snapshot and the rest are dropped. Nodes are named as FGD's simulator names them, each
//! prefixed with its place in a random permutation drawn per seed ([`tie_order`]), so
//! kubetrain's ties (first node by name) and FGD's fall in the same order.
//!
//! Recorded per step: the GPU allocation ratio (allocated GPU milli / total) and the FGD
//! fragmentation: for each node and each *typical pod shape* (the trace's GPU pods grouped
//! by shape, weighted by frequency), the idle GPU capacity that shape cannot use there —
//! all of the node's idle GPUs when the shape does not fit the node at all (GPU model, CPU,
//! memory or GPUs), else the idle part of GPUs too small for it (a share larger than what
//! is left of a partly used GPU; any partly used GPU for a whole-GPU pod). Fragmentation
//! amount is that expectation summed over nodes, as % of all GPUs; the ratio is the amount
//! over the idle GPUs. CPU-only pods are placed (they take CPU and memory on GPU nodes) but
//! are not shapes of the fragmentation measure, since they never use a GPU.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::openb::{OpenbNode, OpenbPod};
use super::rng::SplitMix64;
use crate::controller::workload::{DEFAULT_HISTORY, History};
use crate::sched::{
    Admission, Decisions, Flavor, FlavorGuarantee, GpuDemand, Job, Node, Queue, Running, Snapshot,
    TopologyConstraint, VirtualCluster, WorkloadShape, schedule,
};

/// The outcome of one seed on one trace.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementRun {
    pub workload: String,
    pub seed: u64,
    /// `alloc_pct[k]`: GPU allocation ratio (%) once arrived demand reached k % (k = 0..=target).
    pub alloc_pct: Vec<f64>,
    /// Fragmentation amount (% of all GPUs) per step.
    pub frag_amount_pct: Vec<f64>,
    /// Fragmentation over idle GPUs (%) per step.
    pub frag_ratio_pct: Vec<f64>,
    pub pods_arrived: usize,
    pub pods_failed: usize,
    pub gpu_pods_failed: usize,
    pub cycles: usize,
    pub seconds: f64,
}

/// What is in use on each node, from the admissions (the simulator's own ledger).
pub(crate) struct Usage {
    pub cpu: Vec<u64>,
    /// MiB.
    pub mem: Vec<u64>,
    /// Milli-GPU used per GPU.
    pub gpu: Vec<Vec<u32>>,
    /// Milli-GPU allocated in all.
    pub allocated: u64,
}

impl Usage {
    pub fn new(nodes: &[OpenbNode]) -> Usage {
        Usage {
            cpu: vec![0; nodes.len()],
            mem: vec![0; nodes.len()],
            gpu: nodes.iter().map(|n| vec![0; n.gpus as usize]).collect(),
            allocated: 0,
        }
    }

    /// A pod placed on node `n`: `each` milli-GPU on every GPU of `gpus`.
    pub fn take(&mut self, n: usize, cpu: u64, mem_mib: u64, gpus: &[usize], each: u32) {
        self.cpu[n] += cpu;
        self.mem[n] += mem_mib;
        for &g in gpus {
            if let Some(x) = self.gpu[n].get_mut(g) {
                *x += each;
                self.allocated += u64::from(each);
            }
        }
    }
}

impl PlacementRun {
    pub(crate) fn new(workload: &str, seed: u64, pods_arrived: usize) -> PlacementRun {
        PlacementRun {
            workload: workload.to_string(),
            seed,
            alloc_pct: vec![0.0],
            frag_amount_pct: vec![0.0],
            frag_ratio_pct: vec![0.0],
            pods_arrived,
            pods_failed: 0,
            gpu_pods_failed: 0,
            cycles: 0,
            seconds: 0.0,
        }
    }

    /// Allocation and fragmentation once a step's pods are placed.
    pub(crate) fn record(
        &mut self,
        nodes: &[OpenbNode],
        u: &Usage,
        shapes: &[(&WorkloadShape, f64)],
        cap_milli: u64,
    ) {
        let frag = fragmentation(nodes, u, shapes);
        let idle = cap_milli.saturating_sub(u.allocated) as f64;
        self.alloc_pct
            .push(100.0 * u.allocated as f64 / cap_milli as f64);
        self.frag_amount_pct.push(100.0 * frag / cap_milli as f64);
        self.frag_ratio_pct
            .push(if idle > 0.0 { 100.0 * frag / idle } else { 0.0 });
    }
}

/// The order in which equal nodes are taken, drawn per seed apart from the arrival order:
/// node `i` is `tie_order[i]`-th. FGD's simulator prefixes each node's name with its place in
/// such a random permutation; kubetrain, whose ties go to the first node by name, is given
/// the same prefixed names, so neither placer gets a better or worse tie order than the other
/// from how the trace happens to name its nodes.
pub(crate) fn tie_order(nodes: usize, seed: u64) -> Vec<u32> {
    let mut rank: Vec<u32> = (0..nodes as u32).collect();
    SplitMix64::new(seed ^ 0x0F6D_5EED).shuffle(&mut rank);
    rank
}

/// The typical pod shapes of the fragmentation measure: the trace's GPU pod shapes, each
/// with its share of the GPU pods.
pub(crate) fn typical(trace: &[WorkloadShape]) -> Vec<(&WorkloadShape, f64)> {
    let n: u64 = trace.iter().map(|w| w.count).sum();
    trace
        .iter()
        .map(|w| (w, w.count as f64 / n.max(1) as f64))
        .collect()
}

/// FGD fragmentation amount in milli-GPUs: Σ nodes Σ shapes p(shape) · F(node, shape).
fn fragmentation(nodes: &[OpenbNode], u: &Usage, shapes: &[(&WorkloadShape, f64)]) -> f64 {
    let mut total = 0.0;
    for (i, n) in nodes.iter().enumerate() {
        let free: Vec<u32> = u.gpu[i]
            .iter()
            .map(|&x| 1000u32.saturating_sub(x))
            .collect();
        let idle: u32 = free.iter().sum();
        if idle == 0 {
            continue;
        }
        let cpu_free = n.cpu_milli.saturating_sub(u.cpu[i]);
        let mem_free = n.memory_mib.saturating_sub(u.mem[i]);
        let whole_free = free.iter().filter(|&&f| f == 1000).count() as u32;
        for (s, p) in shapes {
            let model_ok =
                s.gpu_types.is_empty() || s.gpu_types.iter().any(|f| f.as_str() == n.model);
            let frag = if !model_ok || cpu_free < s.cpu_milli || mem_free < s.memory_bytes >> 20 {
                idle
            } else {
                match s.gpus {
                    GpuDemand::Share(m) => {
                        if free.iter().any(|&f| f >= m.0) {
                            free.iter().filter(|&&f| f < m.0).sum()
                        } else {
                            idle
                        }
                    }
                    GpuDemand::Whole(k) => {
                        if whole_free >= k {
                            free.iter().filter(|&&f| f < 1000).sum()
                        } else {
                            idle
                        }
                    }
                    GpuDemand::None => 0,
                }
            };
            total += p * f64::from(frag);
        }
    }
    total
}

/// The seeded arrival sequence: the trace shuffled, then resampled with replacement until
/// the arrived GPU demand reaches `target_pct` of `cap_milli`.
pub fn arrivals(pods: &[OpenbPod], seed: u64, cap_milli: u64, target_pct: u32) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..pods.len()).collect();
    rng.shuffle(&mut order);
    let goal = cap_milli * u64::from(target_pct) / 100;
    let mut out = Vec::new();
    let mut arrived = 0u64;
    let mut i = 0usize;
    if pods.iter().all(|p| p.gpu_milli_total() == 0) {
        return out;
    }
    while arrived < goal {
        let p = if i < order.len() {
            order[i]
        } else {
            rng.below(pods.len() as u64) as usize
        };
        i += 1;
        arrived += pods[p].gpu_milli_total();
        out.push(p);
    }
    out
}

/// Where the fragmentation score's shape mix comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeMix {
    /// Learned by the core from each snapshot's jobs (placed pods and the pending batch).
    Learned,
    /// The trace's shape distribution, supplied as the snapshot's `workload` (what FGD's
    /// scorer is given).
    Supplied,
    /// Learned online, as the operator does by default: a rolling history of the last
    /// arrivals (`controller::workload::History`, [`DEFAULT_HISTORY`] of them unless told
    /// otherwise), each batch recorded before it is placed, supplied as the snapshot's
    /// `workload`.
    History,
}

/// Where the mix comes from, and how many arrivals a [`ShapeMix::History`] keeps.
#[derive(Clone, Copy, Debug)]
pub struct MixSettings {
    pub mix: ShapeMix,
    pub history: u32,
}

impl From<ShapeMix> for MixSettings {
    fn from(mix: ShapeMix) -> Self {
        MixSettings {
            mix,
            history: DEFAULT_HISTORY,
        }
    }
}

/// The trace's GPU pod shapes with their counts, as a supplied workload.
pub fn workload_of(pods: &[OpenbPod]) -> Vec<WorkloadShape> {
    let mut m: BTreeMap<(GpuDemand, u64, u64, Vec<Flavor>), u64> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.gpu_milli_total() > 0) {
        let t = p.task();
        *m.entry((t.gpus, t.cpu_milli, t.memory_bytes, p.gpu_types()))
            .or_default() += 1;
    }
    m.into_iter()
        .map(
            |((gpus, cpu_milli, memory_bytes, gpu_types), count)| WorkloadShape {
                gpus,
                cpu_milli,
                memory_bytes,
                gpu_types,
                count,
            },
        )
        .collect()
}

/// Run the FGD protocol for one seed.
pub fn run(
    workload: &str,
    nodes: &[OpenbNode],
    pods: &[OpenbPod],
    seed: u64,
    target_pct: u32,
    mix: impl Into<MixSettings>,
) -> PlacementRun {
    let MixSettings {
        mix,
        history: capacity,
    } = mix.into();
    let t0 = Instant::now();
    let cap_milli: u64 = nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum();
    let trace = workload_of(pods);
    let mut snap = first_snapshot(nodes, seed, mix, &trace);
    // Pods never leave in this protocol, so no arrival ages out for being gone: only the
    // window's length forgets.
    let mut history = (mix == ShapeMix::History).then(|| History::new(capacity));
    let node_idx: BTreeMap<String, usize> = snap
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let mut usage = Usage::new(nodes);
    let shapes = typical(&trace);
    let seq = arrivals(pods, seed, cap_milli, target_pct);
    let mut out = PlacementRun::new(workload, seed, seq.len());
    let mut arrived = 0u64;
    let mut next = 0usize;
    for step in 1..=target_pct {
        let goal = cap_milli * u64::from(step) / 100;
        let first = snap.jobs.len();
        while next < seq.len() && arrived < goal {
            let p = &pods[seq[next]];
            arrived += p.gpu_milli_total();
            snap.jobs.push(pod_job(next, p));
            next += 1;
        }
        if snap.jobs.len() > first {
            if let Some(h) = history.as_mut() {
                // As the leader does each cycle: the batch is recorded, then scored against.
                for job in &snap.jobs[first..] {
                    h.record(&job.id, job);
                }
                snap.workload = h.shapes();
            }
            snap.now = step.into();
            let d = schedule(&snap);
            out.cycles += 1;
            keep_admitted(&mut snap, first, &d, &node_idx, &mut usage, &mut out);
        }
        out.record(nodes, &usage, &shapes, cap_milli);
    }
    out.seconds = t0.elapsed().as_secs_f64();
    out
}

/// The cluster before any pod arrives: the openb nodes (named in the seed's tie order), one
/// VirtualCluster guaranteed every GPU of every model, one FIFO queue, and the trace's
/// shapes as the workload when the mix is supplied.
fn first_snapshot(
    nodes: &[OpenbNode],
    seed: u64,
    mix: ShapeMix,
    trace: &[WorkloadShape],
) -> Snapshot {
    let mut per_model: BTreeMap<&str, u32> = BTreeMap::new();
    for n in nodes {
        *per_model.entry(n.model.as_str()).or_default() += n.gpus;
    }
    let vc = VirtualCluster {
        name: "openb".into(),
        guarantee: per_model
            .iter()
            .map(|(m, g)| FlavorGuarantee {
                flavor: Flavor::new(*m),
                gpus: *g,
                cells: vec![],
            })
            .collect(),
        limit_gpus: None,
        weight: 1,
        terminating: false,
    };
    let queue = Queue {
        name: "openb".into(),
        virtual_cluster: "openb".into(),
        ..Default::default()
    };
    let rank = tie_order(nodes.len(), seed);
    Snapshot {
        now: 0,
        nodes: nodes
            .iter()
            .zip(&rank)
            .map(|(n, r)| Node {
                name: format!("{r:05}-{}", n.name),
                ..n.to_node()
            })
            .collect(),
        virtual_clusters: vec![vc],
        queues: vec![queue],
        jobs: vec![],
        workload: match mix {
            ShapeMix::Learned | ShapeMix::History => vec![],
            ShapeMix::Supplied => trace.to_vec(),
        },
    }
}

/// The pending job of the `next`-th arrival, pod `p`.
fn pod_job(next: usize, p: &OpenbPod) -> Job {
    Job {
        id: format!("p{next:06}/{}", p.name),
        queue: "openb".into(),
        priority: 0,
        queued_at: next as i64,
        user: "openb".into(),
        tasks: vec![p.task()],
        gpu_types: p.gpu_types(),
        topology: TopologyConstraint::default(),
        retries: 0,
        preemptions: 0,
        predicted_duration_seconds: None,
        returning: false,
        running: None,
    }
}

/// The batch's jobs (from `first` on) that the decisions admit become running jobs and take
/// their place in `usage`; the others fail for good and leave the snapshot.
fn keep_admitted(
    snap: &mut Snapshot,
    first: usize,
    d: &Decisions,
    node_idx: &BTreeMap<String, usize>,
    usage: &mut Usage,
    out: &mut PlacementRun,
) {
    let mut placed: BTreeMap<&str, &Admission> = BTreeMap::new();
    for a in &d.admissions {
        placed.insert(a.job.as_str(), a);
    }
    let mut kept = Vec::with_capacity(snap.jobs.len());
    for (i, mut job) in snap.jobs.drain(..).enumerate() {
        if i < first {
            kept.push(job);
            continue;
        }
        match placed.get(job.id.as_str()) {
            Some(a) => {
                let task = &job.tasks[0];
                for r in &a.placement {
                    let Some(&n) = node_idx.get(&r.node) else {
                        continue;
                    };
                    let gpus: Vec<usize> = r.gpus.iter().map(|g| g.0 as usize).collect();
                    let each = r.share.map_or(1000, |m| m.0);
                    usage.take(n, task.cpu_milli, task.memory_bytes >> 20, &gpus, each);
                }
                job.running = Some(running_from(a, snap.now));
                kept.push(job);
            }
            None => {
                out.pods_failed += 1;
                if job.gpu_milli() > 0 {
                    out.gpu_pods_failed += 1;
                }
            }
        }
    }
    snap.jobs = kept;
}

/// A pod admitted at `now`, running where the admission placed it.
fn running_from(a: &Admission, now: i64) -> Running {
    Running {
        placement: a.placement.clone(),
        bonus: a.bonus,
        started_at: now,
        last_checkpoint: None,
        checkpoint_grace_seconds: 0,
        min_runtime_seconds: 0,
        preempting: false,
        checkpoint_request: None,
    }
}

/// Mean over seeds of one trace, in the columns of `fgd_summary.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementSummary {
    pub workload: String,
    pub seeds: usize,
    pub alloc_100: f64,
    pub alloc_130: f64,
    pub frag_ratio_80: f64,
    pub frag_ratio_90: f64,
    pub frag_amount_80: f64,
    pub frag_amount_90: f64,
    /// Mean allocation curve (index = arrived %).
    pub curve: Vec<f64>,
    pub seconds: f64,
}

pub fn summarize(runs: &[PlacementRun]) -> Option<PlacementSummary> {
    let first = runs.first()?;
    let n = runs.len() as f64;
    let at = |f: &dyn Fn(&PlacementRun) -> &Vec<f64>, k: usize| {
        runs.iter()
            .map(|r| f(r).get(k).copied().unwrap_or(0.0))
            .sum::<f64>()
            / n
    };
    let len = first.alloc_pct.len();
    Some(PlacementSummary {
        workload: first.workload.clone(),
        seeds: runs.len(),
        alloc_100: at(&|r| &r.alloc_pct, 100),
        alloc_130: at(&|r| &r.alloc_pct, 130.min(len - 1)),
        frag_ratio_80: at(&|r| &r.frag_ratio_pct, 80),
        frag_ratio_90: at(&|r| &r.frag_ratio_pct, 90),
        frag_amount_80: at(&|r| &r.frag_amount_pct, 80),
        frag_amount_90: at(&|r| &r.frag_amount_pct, 90),
        curve: (0..len).map(|k| at(&|r| &r.alloc_pct, k)).collect(),
        seconds: runs.iter().map(|r| r.seconds).sum(),
    })
}

/// One row of `fgd_summary.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct FgdRow {
    pub workload: String,
    pub policy: String,
    pub alloc_100: f64,
    pub alloc_130: f64,
    pub frag_ratio_80: f64,
    pub frag_ratio_90: f64,
    pub frag_amount_80: f64,
    pub frag_amount_90: f64,
}

/// Read the published FGD baselines.
pub fn read_fgd(path: &std::path::Path) -> Result<Vec<FgdRow>, super::SimError> {
    let t = super::Table::read(path)?;
    let c = |n: &str| t.col(n);
    let (w, p, a1, a3, r8, r9, m8, m9) = (
        c("workload")?,
        c("policy")?,
        c("alloc_pct@100")?,
        c("alloc_pct@130")?,
        c("frag_ratio_pct@80")?,
        c("frag_ratio_pct@90")?,
        c("frag_amount_pct@80")?,
        c("frag_amount_pct@90")?,
    );
    t.rows
        .iter()
        .map(|(line, row)| {
            Ok(FgdRow {
                workload: row.get(w).cloned().unwrap_or_default(),
                policy: row.get(p).cloned().unwrap_or_default(),
                alloc_100: t.get(*line, row, a1)?,
                alloc_130: t.get(*line, row, a3)?,
                frag_ratio_80: t.get(*line, row, r8)?,
                frag_ratio_90: t.get(*line, row, r9)?,
                frag_amount_80: t.get(*line, row, m8)?,
                frag_amount_90: t.get(*line, row, m9)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_order_is_a_permutation_drawn_per_seed() {
        let a = tie_order(100, 42);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<u32>>());
        assert_eq!(a, tie_order(100, 42), "same seed, same order");
        assert_ne!(a, tie_order(100, 43), "another seed, another order");
        assert_ne!(a, sorted, "not the trace's own order");
    }

    fn small_trace() -> (Vec<OpenbNode>, Vec<OpenbPod>) {
        let nodes = (0..24)
            .map(|i| OpenbNode {
                name: format!("node-{i:02}"),
                cpu_milli: 64_000,
                memory_mib: 256 << 10,
                gpus: if i % 3 == 0 { 4 } else { 8 },
                model: if i % 2 == 0 { "A" } else { "B" }.into(),
            })
            .collect();
        let shapes = [
            (1, 1000),
            (1, 500),
            (1, 250),
            (2, 1000),
            (4, 1000),
            (8, 1000),
            (0, 0),
        ];
        let pods = (0..300)
            .map(|i| {
                let (num_gpu, gpu_milli) = shapes[i % shapes.len()];
                OpenbPod {
                    name: format!("pod-{i:03}"),
                    cpu_milli: 2_000 + 1_000 * (i as u64 % 5),
                    memory_mib: 8 << 10,
                    num_gpu,
                    gpu_milli,
                    gpu_spec: if i % 11 == 0 {
                        vec!["B".into()]
                    } else {
                        vec![]
                    },
                }
            })
            .collect();
        (nodes, pods)
    }

    #[test]
    fn a_history_of_no_arrivals_leaves_the_core_to_learn_from_the_snapshot() {
        // as `--workload-history 0` does in the operator
        let (nodes, pods) = small_trace();
        let off = MixSettings {
            mix: ShapeMix::History,
            history: 0,
        };
        for seed in [42, 43] {
            let learned = run("t", &nodes, &pods, seed, 130, ShapeMix::Learned);
            let history = run("t", &nodes, &pods, seed, 130, off);
            assert_eq!(learned.alloc_pct, history.alloc_pct);
            assert_eq!(learned.gpu_pods_failed, history.gpu_pods_failed);
        }
    }

    #[test]
    fn every_mix_places_each_arrival_once_and_repeats_itself() {
        let (nodes, pods) = small_trace();
        let cap: u64 = nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum();
        for mix in [ShapeMix::Learned, ShapeMix::History, ShapeMix::Supplied] {
            let a = run("t", &nodes, &pods, 7, 130, mix);
            let b = run("t", &nodes, &pods, 7, 130, mix);
            assert_eq!(
                a.alloc_pct, b.alloc_pct,
                "{mix:?}: same seed, same placements"
            );
            assert_eq!(a.alloc_pct.len(), 131);
            assert!(
                a.alloc_pct.windows(2).all(|w| w[0] <= w[1]),
                "{mix:?}: no pod leaves"
            );
            let last = a.alloc_pct[130];
            assert!(last > 50.0 && last <= 100.0, "{mix:?}: {last}");
            // arrivals up to 130 % of the GPUs, so some GPU pods must have failed
            assert!(a.gpu_pods_failed > 0, "{mix:?}");
            assert_eq!(a.pods_arrived, arrivals(&pods, 7, cap, 130).len());
        }
    }
}
