//! One full scheduling cycle at 500 / 5,000 / 15,000 nodes (8 GPUs each, mixed topology:
//! NVSwitch H100 nodes and PCIe A100 nodes, racks of 20) with 1,000 and 10,000 pending jobs
//! (1-GPU jobs, 8-GPU jobs and 64-GPU gangs of 8 × 8). About half the cluster is busy with
//! running jobs (guaranteed and bonus) before the measured cycle. Prints, per size, the
//! decisions per second and the snapshot memory per node.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kubetrain::sched::*;

fn node(i: usize) -> Node {
    let h100 = i % 10 < 7;
    Node {
        name: format!("gpu-node-{i:05}"),
        flavor: Flavor::new(if h100 { "H100" } else { "A100" }),
        allocatable: Resources {
            cpu_milli: 128_000,
            memory_bytes: 1 << 40,
            gpus: 8,
        },
        rack: Some(format!("rack-{:04}", i / 20)),
        topology: if h100 {
            Topology::nvswitch(8)
        } else {
            Topology::default_for(8)
        },
        unhealthy_gpus: vec![],
        schedulable: true,
        foreign: Resources::default(),
        ..Default::default()
    }
}

/// Deterministic pseudo-random numbers (no dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn job(i: usize, rng: &mut Lcg, vcs: usize) -> Job {
    let kind = rng.next(100);
    let (replicas, gpus) = match kind {
        0..70 => (1, 1),
        70..92 => (1, 8),
        _ => (8, 8),
    };
    let vc = rng.next(vcs as u64) as usize;
    Job {
        id: format!("team-{vc}/job-{i:06}"),
        queue: format!("q-{vc}-{}", rng.next(2)),
        priority: rng.next(3) as i32,
        queued_at: i as i64,
        user: format!("user-{}", rng.next(20)),
        tasks: vec![Task {
            name: "worker".into(),
            replicas,
            cpu_milli: 4000,
            memory_bytes: 32 << 30,
            gpus: GpuDemand::Whole(gpus),
            ..Default::default()
        }],
        gpu_types: if rng.next(4) == 0 {
            vec![Flavor::new("A100")]
        } else {
            vec![]
        },
        topology: TopologyConstraint::default(),
        retries: 0,
        preemptions: 0,
        predicted_duration_seconds: None,
        running: None,
        returning: false,
    }
}

fn world(nodes: usize, pending: usize) -> Snapshot {
    let vcs = 10;
    let gpus = (nodes * 8) as u32;
    let virtual_clusters = (0..vcs)
        .map(|v| VirtualCluster {
            name: format!("team-{v}"),
            guarantee: vec![
                FlavorGuarantee {
                    flavor: Flavor::new("H100"),
                    gpus: gpus * 7 / 10 * 8 / 100,
                    cells: vec![],
                },
                FlavorGuarantee {
                    flavor: Flavor::new("A100"),
                    gpus: gpus * 3 / 10 * 8 / 100,
                    cells: vec![],
                },
            ],
            limit_gpus: None,
            weight: 1 + (v % 3) as u32,
            terminating: false,
        })
        .collect();
    let queues = (0..vcs)
        .flat_map(|v| {
            (0..2).map(move |q| Queue {
                name: format!("q-{v}-{q}"),
                virtual_cluster: format!("team-{v}"),
                parent: None,
                share: 50,
                max_share: 100,
                user_limit: None,
                policy: if q == 0 {
                    QueuePolicy::Fifo
                } else {
                    QueuePolicy::Priority
                },
                priority_preemption: false,
                strategy: QueueingStrategy::BestEffort,
                terminating: false,
                ..Queue::default()
            })
        })
        .collect();
    let mut snap = Snapshot {
        now: 100_000,
        nodes: (0..nodes).map(node).collect(),
        virtual_clusters,
        queues,
        jobs: vec![],
        workload: vec![],
    };
    // fill about half the cluster with running jobs: admit a first batch
    let mut rng = Lcg(42);
    let mut first = Vec::new();
    let mut asked = 0;
    let mut i = 0;
    while asked < gpus as u64 / 2 {
        let j = job(i, &mut rng, vcs);
        asked += j.gpu_milli() / 1000;
        first.push(j);
        i += 1;
    }
    snap.jobs = first.clone();
    let d = schedule(&snap);
    snap.jobs = d
        .admissions
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let mut j = first
                .iter()
                .find(|j| j.id == a.job)
                .cloned()
                .expect("admitted");
            j.running = Some(Running {
                placement: a.placement.clone(),
                bonus: a.bonus,
                started_at: 1000 + k as i64,
                last_checkpoint: Some(50_000 + (k as i64 * 7) % 40_000),
                checkpoint_grace_seconds: 120,
                min_runtime_seconds: 600,
                preempting: false,
                checkpoint_request: None,
            });
            j
        })
        .collect();
    for p in 0..pending {
        snap.jobs.push(job(1_000_000 + p, &mut rng, vcs));
    }
    snap
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sched_cycle");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for nodes in [500usize, 5_000, 15_000] {
        for pending in [1_000usize, 10_000] {
            let snap = world(nodes, pending);
            let t = Instant::now();
            let d = schedule(&snap);
            let once = t.elapsed();
            let nodes_only = Snapshot {
                jobs: vec![],
                ..snap.clone()
            };
            let running = Snapshot {
                jobs: snap
                    .jobs
                    .iter()
                    .filter(|j| j.running.is_some())
                    .cloned()
                    .collect(),
                ..snap.clone()
            };
            eprintln!(
                "{nodes} nodes, {pending} pending ({} running): cycle {:.1} ms, {} admitted, {} preemptions, {:.0} decisions/s, {:.0} admissions/s; \
                 snapshot {} B/node (nodes only), {} B/node (with running jobs), cycle state {} B/node",
                running.jobs.len(),
                once.as_secs_f64() * 1e3,
                d.admissions.len(),
                d.preemptions.len(),
                pending as f64 / once.as_secs_f64(),
                d.admissions.len() as f64 / once.as_secs_f64(),
                nodes_only.approx_bytes() / nodes,
                running.approx_bytes() / nodes,
                state_bytes(&snap) / nodes,
            );
            g.bench_function(format!("{nodes}_nodes_{pending}_pending"), |b| {
                b.iter(|| black_box(schedule(black_box(&snap))))
            });
        }
    }
    g.finish();
    fragmented(c);
    priority_preemption(c);
}

/// The main world with every queue allowing priority preemption: each pending job that
/// fits nowhere searches for a plan, so this is the cycle where priority plans cost the most.
/// The cost grows much faster than the sizes (about 4 s a cycle at 2,000 nodes and 4,000
/// pending jobs, a minute at 5,000 and 10,000): kept to sizes `make bench` can afford.
fn priority_preemption(c: &mut Criterion) {
    let mut g = c.benchmark_group("sched_cycle_priority_preemption");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (nodes, pending) in [(1_000usize, 2_000usize), (2_000, 4_000)] {
        let mut snap = world(nodes, pending);
        for q in &mut snap.queues {
            q.priority_preemption = true;
        }
        let t = Instant::now();
        let d = schedule(&snap);
        eprintln!(
            "priority preemption, {nodes} nodes, {pending} pending: cycle {:.1} ms, {} admitted, {} preemptions, decisions {:x}",
            t.elapsed().as_secs_f64() * 1e3,
            d.admissions.len(),
            d.preemptions.len(),
            {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                format!("{d:?}").hash(&mut h);
                h.finish()
            }
        );
        g.bench_function(format!("{nodes}_nodes_{pending}_pending"), |b| {
            b.iter(|| black_box(schedule(black_box(&snap))))
        });
    }
    g.finish();
}

/// A cluster whose one team holds 7 of every node's 8 GPUs with 1-GPU jobs, and waits with
/// 1,000 8-GPU jobs within its guarantee: every one fits nowhere although thousands of GPUs
/// are free, one per node. With consolidation each cycle moves the 1-GPU jobs off a few
/// nodes (a victim search over the team's running jobs per move, at most
/// `CONSOLIDATION_SEARCHES`); without, it only finds that nothing fits. The difference is
/// what consolidation costs a cycle where it is most often tried.
fn fragmented(c: &mut Criterion) {
    let mut g = c.benchmark_group("sched_cycle_fragmented");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for nodes in [1_000usize, 15_000] {
        let mut snap = Snapshot {
            now: 100_000,
            nodes: (0..nodes).map(node).collect(),
            virtual_clusters: vec![VirtualCluster {
                name: "team".into(),
                guarantee: ["H100", "A100"]
                    .into_iter()
                    .map(|f| FlavorGuarantee {
                        flavor: Flavor::new(f),
                        gpus: (nodes * 8) as u32,
                        cells: vec![],
                    })
                    .collect(),
                limit_gpus: None,
                weight: 1,
                terminating: false,
            }],
            queues: vec![Queue {
                name: "q".into(),
                virtual_cluster: "team".into(),
                parent: None,
                share: 100,
                max_share: 100,
                user_limit: None,
                policy: QueuePolicy::Fifo,
                priority_preemption: false,
                strategy: QueueingStrategy::BestEffort,
                terminating: false,
                ..Queue::default()
            }],
            jobs: vec![],
            workload: vec![],
        };
        let one = |id: String, gpus: u32, queued_at: i64| Job {
            id,
            queue: "q".into(),
            priority: 0,
            queued_at,
            user: "u".into(),
            tasks: vec![Task {
                name: "worker".into(),
                replicas: 1,
                cpu_milli: 1000,
                memory_bytes: 1 << 30,
                gpus: GpuDemand::Whole(gpus),
                ..Default::default()
            }],
            gpu_types: vec![],
            topology: TopologyConstraint::default(),
            retries: 0,
            preemptions: 0,
            predicted_duration_seconds: None,
            running: None,
            returning: false,
        };
        for n in 0..nodes {
            for gpu in 0..7u32 {
                let mut j = one(format!("team/run-{n:05}-{gpu}"), 1, 0);
                j.running = Some(Running {
                    placement: vec![ReplicaPlacement {
                        task: "worker".into(),
                        index: 0,
                        rank: 0,
                        node: snap.nodes[n].name.clone(),
                        gpus: vec![GpuIndex(gpu)],
                        share: None,
                    }],
                    bonus: false,
                    started_at: 1000,
                    last_checkpoint: Some(90_000 + (n as i64 * 7 + i64::from(gpu)) % 9_000),
                    checkpoint_grace_seconds: 120,
                    min_runtime_seconds: 0,
                    preempting: false,
                    checkpoint_request: None,
                });
                snap.jobs.push(j);
            }
        }
        for p in 0..1_000 {
            snap.jobs
                .push(one(format!("team/wait-{p:04}"), 8, 50_000 + p as i64));
        }
        for consolidation in [true, false] {
            let opts = Options {
                consolidation,
                ..Options::default()
            };
            let t = Instant::now();
            let d = schedule_with(&snap, &opts);
            eprintln!(
                "fragmented, {nodes} nodes, 1,000 pending 8-GPU jobs, consolidation {consolidation}: cycle {:.1} ms, {} preemptions",
                t.elapsed().as_secs_f64() * 1e3,
                d.preemptions.len(),
            );
            g.bench_function(
                format!("{nodes}_nodes_consolidation_{consolidation}"),
                |b| b.iter(|| black_box(schedule_with(black_box(&snap), &opts))),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
