//! FGD as a peer in Setup A, run on the same arrivals, nodes and measure as kubetrain, so the
//! two are compared in one run and not only against numbers published from another harness.
//!
//! Re-implemented here from the published algorithm (Weng et al., "Beware of
//! Fragmentation", USENIX ATC'23, and its authors' simulator), not from kubetrain's core:
//!
//! - **Typical pods**: the trace's pod shapes (CPU, milli-GPU per GPU, GPU count, accepted
//!   GPU models; CPU-only pods included), most frequent first, taken one at a time until
//!   they cover 95 % of the pods, weights renormalized over the ones taken. Memory is not
//!   part of a shape.
//! - **Node fragmentation** for a shape: all of the node's idle GPU milli when the shape
//!   cannot run there (model not accepted, too little CPU, too few GPUs with room, or it asks
//!   for no GPU at all), else the idle milli of the GPUs with less room than it asks per GPU.
//!   Summed over the typical pods, weighted.
//! - **Placement**, one pod at a time: every node where the pod fits (GPU model, CPU, memory,
//!   GPUs) gets the score `⌊100 · sigmoid((before − after) / 1000)⌋`, the fragmentation
//!   removed by placing it there; a share is scored on each GPU with room and goes to the
//!   first best one. The pod goes to a node of the highest score; ties go to the node first
//!   in one random order of the nodes drawn per seed (the authors' simulator prefixes every
//!   node name with its place in a random permutation, and its host selection takes the
//!   smallest name among equal scores, for reproducibility), so equal nodes fill in a fixed
//!   order rather than at random. kubetrain is given the same names
//!   ([`placement::tie_order`]): its ties go to the first node by name.

use std::collections::BTreeMap;
use std::time::Instant;

use super::openb::{OpenbNode, OpenbPod};
use super::placement::{self, PlacementRun, Usage};

/// Share of the pods the typical shapes cover (%), and how many shapes are taken at a time.
const POPULARITY_PCT: f64 = 95.0;
const SHAPE_STEP: usize = 1;

/// A typical pod shape, as FGD keys it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    cpu: u64,
    /// Milli-GPU per GPU (0 for a CPU-only pod).
    milli: u32,
    gpus: u32,
    models: Vec<String>,
}

fn shape(p: &OpenbPod) -> Shape {
    let (milli, gpus) = if p.num_gpu == 0 || p.gpu_milli == 0 {
        (0, 0)
    } else {
        (p.gpu_milli.min(1000), p.num_gpu)
    };
    Shape {
        cpu: p.cpu_milli,
        milli,
        gpus,
        models: p.gpu_spec.clone(),
    }
}

/// The typical pods of a pod list with their weights (summing to 1).
fn typical_pods(pods: &[OpenbPod]) -> Vec<(Shape, f64)> {
    let mut count: BTreeMap<Shape, u64> = BTreeMap::new();
    for p in pods {
        *count.entry(shape(p)).or_default() += 1;
    }
    let total = pods.len().max(1) as f64;
    let mut list: Vec<(Shape, u64)> = count.into_iter().collect();
    // most frequent first; ties in shape order, so the list is the same on every run
    list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let want = POPULARITY_PCT * total / 100.0;
    let (mut taken, mut covered) = (0usize, 0.0f64);
    while covered < want && taken < list.len() {
        let end = (taken + SHAPE_STEP).min(list.len());
        covered += list[taken..end].iter().map(|x| x.1 as f64).sum::<f64>();
        taken = end;
    }
    list.truncate(taken);
    list.into_iter()
        .map(|(s, n)| (s, n as f64 / covered.max(1.0)))
        .collect()
}

fn accepts(models: &[String], model: &str) -> bool {
    models.is_empty() || models.iter().any(|m| m == model)
}

/// FGD's node fragmentation (milli-GPUs) for a node of `model` with `free` milli left per GPU
/// and `cpu` milli-CPU left.
fn node_frag(shapes: &[(Shape, f64)], model: &str, free: &[u32], cpu: u64) -> f64 {
    let idle: u32 = free.iter().sum();
    if idle == 0 {
        return 0.0;
    }
    let mut frag = 0.0;
    for (s, w) in shapes {
        let runs = s.milli > 0
            && accepts(&s.models, model)
            && cpu >= s.cpu
            && free.iter().filter(|&&x| x >= s.milli).count() >= s.gpus as usize;
        let lost = if runs {
            free.iter().filter(|&&x| x < s.milli).sum()
        } else {
            idle
        };
        frag += w * f64::from(lost);
    }
    frag
}

/// `⌊100 · sigmoid((before − after) / 1000) + rounding⌋`: FGD's score with `rounding` 0.
/// Other roundings move where equal scores begin and end, to measure how much a result rests
/// on that (see `docs/benchmarks-placement.md`).
fn score(before: f64, after: f64, rounding: f64) -> i64 {
    let x = (before - after) / 1000.0;
    (100.0 / (1.0 + (-x).exp()) + rounding) as i64
}

/// Where one pod goes: (node, GPUs), or None when it fits nowhere.
fn place(
    nodes: &[OpenbNode],
    u: &Usage,
    shapes: &[(Shape, f64)],
    p: &OpenbPod,
    rank: &[u32],
    rounding: f64,
) -> Option<(usize, Vec<usize>)> {
    let s = shape(p);
    let mut best: Option<(i64, u32)> = None;
    let mut pick: Option<(usize, Vec<usize>)> = None;
    let mut free: Vec<u32> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let cpu = n.cpu_milli.saturating_sub(u.cpu[i]);
        let mem = n.memory_mib.saturating_sub(u.mem[i]);
        if cpu < p.cpu_milli || mem < p.memory_mib || (s.gpus > 0 && !accepts(&s.models, &n.model))
        {
            continue;
        }
        free.clear();
        free.extend(u.gpu[i].iter().map(|&x| 1000u32.saturating_sub(x)));
        let before = node_frag(shapes, &n.model, &free, cpu);
        let cpu_after = cpu - p.cpu_milli;
        // the score of the node left with `free` GPU rooms and the pod's CPU taken
        let score_after = |free: &[u32]| {
            score(
                before,
                node_frag(shapes, &n.model, free, cpu_after),
                rounding,
            )
        };
        let candidate = if s.gpus == 0 {
            Some((score_after(&free), vec![]))
        } else if s.milli < 1000 {
            // a share: the first GPU with the best score
            let mut best_gpu: Option<(i64, usize)> = None;
            for g in 0..free.len() {
                if free[g] < s.milli {
                    continue;
                }
                free[g] -= s.milli;
                let sc = score_after(&free);
                free[g] += s.milli;
                if best_gpu.is_none_or(|b| sc > b.0) {
                    best_gpu = Some((sc, g));
                }
            }
            best_gpu.map(|(sc, g)| (sc, vec![g]))
        } else {
            let whole: Vec<usize> = (0..free.len())
                .filter(|&g| free[g] >= 1000)
                .take(s.gpus as usize)
                .collect();
            if whole.len() < s.gpus as usize {
                None
            } else {
                for &g in &whole {
                    free[g] = 0;
                }
                Some((score_after(&free), whole))
            }
        };
        let Some((sc, gpus)) = candidate else {
            continue;
        };
        // highest score, ties to the lowest rank
        let key = (sc, std::cmp::Reverse(rank[i]));
        if best.is_some_and(|b| (b.0, std::cmp::Reverse(b.1)) >= key) {
            continue;
        }
        best = Some((sc, rank[i]));
        pick = Some((i, gpus));
    }
    pick
}

/// Run the FGD protocol for one seed with FGD placing: same arrivals and measure as
/// [`placement::run`]. `rounding` is added to every score before it is rounded down (0 for
/// FGD as published).
pub fn run(
    workload: &str,
    nodes: &[OpenbNode],
    pods: &[OpenbPod],
    seed: u64,
    target_pct: u32,
    rounding: f64,
) -> PlacementRun {
    let t0 = Instant::now();
    let cap_milli: u64 = nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum();
    let shapes = typical_pods(pods);
    let trace = placement::workload_of(pods);
    let measure = placement::typical(&trace);
    let seq = placement::arrivals(pods, seed, cap_milli, target_pct);
    let mut u = Usage::new(nodes);
    let rank = placement::tie_order(nodes.len(), seed);
    let mut out = PlacementRun::new(workload, seed, seq.len());
    let mut arrived = 0u64;
    let mut next = 0usize;
    for step in 1..=target_pct {
        let goal = cap_milli * u64::from(step) / 100;
        while next < seq.len() && arrived < goal {
            let p = &pods[seq[next]];
            arrived += p.gpu_milli_total();
            next += 1;
            match place(nodes, &u, &shapes, p, &rank, rounding) {
                Some((n, gpus)) => {
                    let each = if p.gpu_milli > 0 && p.num_gpu > 0 {
                        p.gpu_milli.min(1000)
                    } else {
                        0
                    };
                    u.take(n, p.cpu_milli, p.memory_mib, &gpus, each);
                }
                None => {
                    out.pods_failed += 1;
                    if p.gpu_milli_total() > 0 {
                        out.gpu_pods_failed += 1;
                    }
                }
            }
        }
        out.cycles += 1;
        out.record(nodes, &u, &measure, cap_milli);
    }
    out.seconds = t0.elapsed().as_secs_f64();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(cpu: u64, n: u32, milli: u32) -> OpenbPod {
        OpenbPod {
            name: "p".into(),
            cpu_milli: cpu,
            memory_mib: 0,
            num_gpu: n,
            gpu_milli: milli,
            gpu_spec: vec![],
        }
    }

    #[test]
    fn typical_pods_cover_95_percent_of_the_pods_most_frequent_first() {
        // one shape with 50 pods, then 12 with 5, 4, ... : the 95 % mark (of 100 pods) is
        // passed by the shape that reaches it, and the rest are left out
        let mut pods = vec![pod(1000, 1, 1000); 50];
        for k in 0..10u64 {
            pods.extend(vec![pod(2000 + k, 1, 1000); 5]);
        }
        let t = typical_pods(&pods);
        // 50 + 9·5 = 95 pods: ten shapes reach 95 %
        assert_eq!(t.len(), 10);
        let sum: f64 = t.iter().map(|x| x.1).sum();
        assert!((sum - 1.0).abs() < 1e-9);
        assert_eq!(t[0].0.cpu, 1000);
        assert!((t[0].1 - 50.0 / 95.0).abs() < 1e-9);
    }

    #[test]
    fn a_share_goes_where_it_fragments_least() {
        // typical pod: half a GPU. Node 0 has a GPU with 0.5 left, node 1 is empty: a
        // half-GPU pod completes node 0's GPU and removes its fragment.
        let shapes = vec![(
            Shape {
                cpu: 0,
                milli: 500,
                gpus: 1,
                models: vec![],
            },
            1.0,
        )];
        let node = |name: &str| OpenbNode {
            name: name.into(),
            cpu_milli: 10_000,
            memory_mib: 10_000,
            gpus: 2,
            model: "G".into(),
        };
        let nodes = vec![node("a"), node("b")];
        let mut u = Usage::new(&nodes);
        u.take(0, 0, 0, &[0], 700);
        let got = place(&nodes, &u, &shapes, &pod(0, 1, 300), &[1, 0], 0.0);
        assert_eq!(got, Some((0, vec![0])));
    }
}
