//! Invariants as properties over random clusters, tenants and jobs (issue 3 §6, issue 11).
//!
//! Worlds are built in two steps so that running jobs are always consistent: a first
//! cycle admits random jobs on an empty cluster, those admissions become running jobs (with
//! random bonus flags, start and checkpoint times, some already preempting), then fresh
//! pending jobs arrive and the cycle under test runs. Case counts come from
//! `KUBETRAIN_PROPTEST_CASES` (per property; the defaults add up to 21,500), the cases
//! from a fixed seed unless `KUBETRAIN_PROPTEST_SEED` says otherwise (see [`SEED`]).
//! `invariants_hold_through_histories` runs sequences of cycles instead (issue 18 §6), with
//! nodes lost between cycles, 10,000 histories on clusters of 2–5 nodes: small enough that
//! they cost about what the other properties together cost in a debug build.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::fixtures::*;
use super::*;

/// The seed `make test` generates cases from: the same cases on every run, so a red CI run
/// is a regression of this code and reproduces, not a draw (as Hypothesis' `derandomize`
/// does for CI). `KUBETRAIN_PROPTEST_SEED=random` (or another number) explores beyond
/// them; known, still unfixed failures found that way are kept in `testdata/`.
const SEED: u64 = 20_261_124;

pub(crate) fn cases(default: u32) -> ProptestConfig {
    let n = std::env::var("KUBETRAIN_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    let rng_seed = match std::env::var("KUBETRAIN_PROPTEST_SEED").ok().as_deref() {
        Some("random") => proptest::test_runner::RngSeed::Random,
        Some(v) => proptest::test_runner::RngSeed::Fixed(v.parse().unwrap_or(SEED)),
        None => proptest::test_runner::RngSeed::Fixed(SEED),
    };
    ProptestConfig {
        failure_persistence: None,
        rng_seed,
        ..ProptestConfig::with_cases(n)
    }
}

const FLAVORS: [&str; 2] = ["A100", "H100"];

#[derive(Clone, Debug)]
struct JobSpec {
    vc: usize,
    queue: usize,
    replicas: u32,
    gpus: GpuDemand,
    typed: Option<usize>,
    required: Option<TopologyLevel>,
    priority: i32,
    user: u8,
    predicted: Option<i64>,
    /// Pending only: on its way back from a drain ([`Job::returning`]).
    returning: bool,
}

fn job_spec(whole_only: bool) -> impl Strategy<Value = JobSpec> {
    let gpus = if whole_only {
        prop_oneof![
            Just(GpuDemand::Whole(1)),
            Just(GpuDemand::Whole(2)),
            Just(GpuDemand::Whole(4)),
            Just(GpuDemand::Whole(8))
        ]
        .boxed()
    } else {
        prop_oneof![
            4 => Just(GpuDemand::Whole(1)),
            2 => Just(GpuDemand::Whole(2)),
            1 => Just(GpuDemand::Whole(4)),
            2 => Just(GpuDemand::Whole(8)),
            2 => (1u32..1000).prop_map(|m| GpuDemand::Share(MilliGpu(m))),
            1 => Just(GpuDemand::None),
        ]
        .boxed()
    };
    let required = prop_oneof![6 => Just(None), 1 => Just(Some(TopologyLevel::GpuGroup)), 1 => Just(Some(TopologyLevel::Node)), 1 => Just(Some(TopologyLevel::Rack))];
    (
        0usize..3,
        0usize..2,
        prop_oneof![4 => Just(1u32), 1 => 2u32..5, 1 => Just(8u32)],
        gpus,
        prop::option::of(0usize..2),
        required,
        0i32..3,
        0u8..3,
        prop::option::of(1i64..1000),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(vc, queue, replicas, gpus, typed, required, priority, user, predicted, returning)| {
                JobSpec {
                    vc,
                    queue,
                    replicas,
                    gpus,
                    typed,
                    required,
                    priority,
                    user,
                    predicted,
                    returning,
                }
            },
        )
}

#[derive(Clone, Debug)]
struct World {
    nodes: Vec<Node>,
    vcs: Vec<VirtualCluster>,
    queues: Vec<Queue>,
    first: Vec<JobSpec>,
    second: Vec<JobSpec>,
    /// Per first-round admission: (bonus override, started, checkpoint age, preempting, min runtime).
    fates: Vec<(bool, i64, i64, bool, i64)>,
}

fn world(simple: bool) -> impl Strategy<Value = World> {
    let node_s = (
        0usize..2,
        prop_oneof![Just(1u32), Just(2), Just(4), Just(8), Just(8)],
        0u8..3,
        any::<bool>(),
        0u8..10,
        0u8..10,
        0u8..10,
    );
    let nodes = prop::collection::vec(node_s, 1..9);
    let vcs = prop::collection::vec(
        (
            0u32..9,
            0u32..9,
            prop::option::weighted(0.2, 1u32..24),
            1u32..4,
            0u8..6,
        ),
        3,
    );
    let queues = prop::collection::vec(
        (
            // the policy, and from 4 on a strict queue, from 8 on a backfill queue
            0usize..12,
            prop::option::weighted(0.15, 1u32..6),
            prop_oneof![3 => Just(100u32), 1 => 20u32..=100],
            any::<bool>(),
            0u8..4,
        ),
        6,
    );
    let fates = prop::collection::vec(
        (
            any::<bool>(),
            0i64..1000,
            0i64..1000,
            prop::bool::weighted(0.2),
            prop_oneof![2 => Just(0i64), 1 => 1000i64..4000],
        ),
        12,
    );
    (
        nodes,
        vcs,
        queues,
        prop::collection::vec(job_spec(simple), 0..16),
        prop::collection::vec(job_spec(simple), 0..10),
        fates,
    )
        .prop_map(move |(ns, vs, qs, first, second, fates)| {
            let nodes: Vec<Node> = ns
                .iter()
                .enumerate()
                .map(|(i, &(f, g, rack, nv, sick, cordon, foreign))| {
                    let mut n = node(
                        &format!("n{i}"),
                        FLAVORS[f],
                        g,
                        (rack > 0).then_some(if rack == 1 { "r1" } else { "r2" }),
                    );
                    if nv {
                        n.topology = Topology::nvswitch(g);
                    }
                    if !simple {
                        if sick == 0 {
                            n.unhealthy_gpus = vec![GpuIndex(0)];
                        }
                        n.schedulable = cordon != 0;
                        if foreign == 0 {
                            n.foreign.gpus = 1;
                        }
                    }
                    n
                })
                .collect();
            let cap = |f: &str| -> u32 {
                nodes
                    .iter()
                    .filter(|n| n.flavor.as_str() == f)
                    .map(|n| n.allocatable.gpus)
                    .sum()
            };
            let mut vcs: Vec<VirtualCluster> = Vec::new();
            let mut left = [cap(FLAVORS[0]), cap(FLAVORS[1])];
            for (i, &(ga, gh, limit, weight, cells)) in vs.iter().enumerate() {
                let mut v = vc(&format!("vc{i}"), "A100", 0);
                // the third VC only borrows; guarantees never exceed the cluster
                for (fi, g) in [ga, gh].into_iter().enumerate() {
                    let g = if i == 2 { 0 } else { g.min(left[fi]) };
                    left[fi] -= g;
                    if g > 0 {
                        let mut fg = FlavorGuarantee {
                            flavor: Flavor::new(FLAVORS[fi]),
                            gpus: g,
                            cells: vec![],
                        };
                        // node cells, and rack cells beside them (one clean rack can
                        // serve only one of the two)
                        let level = match cells {
                            0 => Some(TopologyLevel::Node),
                            1 => Some(TopologyLevel::Rack),
                            _ => None,
                        };
                        if let Some(level) = level.filter(|_| !simple && g >= 8) {
                            fg.cells.push(CellGuarantee { level, count: 1 });
                        }
                        v.guarantee.push(fg);
                    }
                }
                if !simple {
                    v.limit_gpus = limit;
                }
                v.weight = weight;
                vcs.push(v);
            }
            let queues: Vec<Queue> = qs
                .iter()
                .enumerate()
                .map(|(i, &(policy, user_limit, max_share, pp, parent))| {
                    let mut q = queue(&format!("q{i}"), &format!("vc{}", i / 2));
                    q.policy = [
                        QueuePolicy::Fifo,
                        QueuePolicy::Priority,
                        QueuePolicy::ShortestPredictedFirst,
                        QueuePolicy::UserFair,
                    ][policy % 4];
                    q.strategy = [
                        QueueingStrategy::BestEffort,
                        QueueingStrategy::Strict,
                        QueueingStrategy::Backfill,
                    ][policy / 4];
                    q.priority_preemption = pp;
                    if !simple {
                        q.user_limit = user_limit;
                        q.max_share = max_share;
                        if parent == 0 && i % 2 == 1 {
                            q.parent = Some(format!("q{}", i - 1));
                            q.share = 50;
                        } else if parent == 1 || parent == 2 {
                            // a firm share when its sibling's is half too
                            q.share = 50;
                        }
                    }
                    q
                })
                .collect();
            World {
                nodes,
                vcs,
                queues,
                first,
                second,
                fates,
            }
        })
}

fn make_job(id: String, s: &JobSpec, t: i64) -> Job {
    let mut j = job(&id, &format!("q{}", s.vc * 2 + s.queue), s.replicas, 0);
    j.tasks[0].gpus = s.gpus;
    j.gpu_types = s
        .typed
        .map(|f| vec![Flavor::new(FLAVORS[f])])
        .unwrap_or_default();
    j.topology.required = s.required;
    j.priority = s.priority;
    j.user = format!("user{}", s.user);
    j.predicted_duration_seconds = s.predicted;
    j.queued_at = t;
    j
}

/// The snapshot under test: first-round admissions running, second-round jobs pending.
fn build(w: &World) -> Snapshot {
    let first: Vec<Job> = w
        .first
        .iter()
        .enumerate()
        .map(|(i, s)| make_job(format!("ns/first-{i}"), s, i as i64))
        .collect();
    let snap0 = snapshot(
        0,
        w.nodes.clone(),
        w.vcs.clone(),
        w.queues.clone(),
        first.clone(),
    );
    let d0 = schedule(&snap0);
    let now = 2000;
    let mut jobs = Vec::new();
    for (k, a) in d0.admissions.iter().enumerate() {
        let mut j = first
            .iter()
            .find(|j| j.id == a.job)
            .cloned()
            .expect("admitted job exists");
        let (flip, started, age, preempting, min_rt) = w.fates[k % w.fates.len()];
        j.running = Some(Running {
            placement: a.placement.clone(),
            bonus: a.bonus || flip && k % 3 == 0,
            started_at: started,
            last_checkpoint: Some(now - age),
            checkpoint_grace_seconds: 30,
            min_runtime_seconds: min_rt,
            preempting,
            checkpoint_request: None,
        });
        jobs.push(j);
    }
    for (i, s) in w.second.iter().enumerate() {
        let mut j = make_job(format!("ns/second-{i}"), s, 100 + i as i64);
        j.returning = s.returning;
        jobs.push(j);
    }
    snapshot(now, w.nodes.clone(), w.vcs.clone(), w.queues.clone(), jobs)
}

fn demand_of(j: &Job, task: &str) -> GpuDemand {
    j.tasks
        .iter()
        .find(|t| t.name == task)
        .map(|t| t.gpus)
        .unwrap_or_default()
}

/// Whether a running job's preemption is to be withdrawn (`cancel`): a reclaim or priority
/// preemption, not acknowledged, whose beneficiary is no longer pending.
fn withdrawable(s: &Snapshot, j: &Job) -> bool {
    let Some(r) = &j.running else { return false };
    let Some(req) = r.checkpoint_request.as_ref().filter(|_| r.preempting) else {
        return false;
    };
    let pending = |id: &str| s.jobs.iter().any(|j| j.id == id && j.running.is_none());
    req.reason.for_a_job()
        && req.withdrawable
        && req.beneficiary.as_deref().is_some_and(|b| !pending(b))
}

/// Whether VirtualCluster `vc` is guaranteed cells of the GPU type `r` runs on.
fn has_cells_on(s: &Snapshot, vc: &str, r: &Running) -> bool {
    let Some(flavor) = r
        .placement
        .first()
        .and_then(|p| s.nodes.iter().find(|n| n.name == p.node))
        .map(|n| &n.flavor)
    else {
        return false;
    };
    s.virtual_clusters
        .iter()
        .filter(|v| v.name == vc)
        .flat_map(|v| &v.guarantee)
        .any(|g| &g.flavor == flavor && g.cells.iter().any(|c| c.count > 0))
}

/// Check every invariant that holds for any snapshot.
/// A strict queue has at most one job that holds back the others, and every job that waits
/// behind a head names that one, of its own queue.
fn check_strict_order(s: &Snapshot, d: &Decisions) -> Result<(), TestCaseError> {
    let jobs: BTreeMap<&str, &Job> = s.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let waiting: BTreeMap<&str, &WaitReason> = d
        .waiting
        .iter()
        .map(|w| (w.job.as_str(), &w.reason))
        .collect();
    for q in s.queues.iter().filter(|q| q.strategy.holds_back()) {
        let mut heads = BTreeSet::new();
        for (&id, &r) in &waiting {
            if jobs[id].queue != q.name {
                continue;
            }
            match r {
                WaitReason::BehindQueueHead { queue, head }
                | WaitReason::BehindReservation { queue, head, .. }
                | WaitReason::BehindReturningJob { queue, head } => {
                    prop_assert_eq!(queue, &q.name);
                    prop_assert_eq!(jobs[head.as_str()].queue.as_str(), q.name.as_str());
                    prop_assert!(
                        waiting.get(head.as_str()).is_some_and(|h| !matches!(
                            h,
                            WaitReason::BehindQueueHead { .. }
                                | WaitReason::BehindReservation { .. }
                                | WaitReason::BehindReturningJob { .. }
                        )),
                        "{} waits behind {}, which does not wait for a reason of its own: {:?} {:?}",
                        id,
                        head,
                        waiting.get(head.as_str()),
                        d.admissions.iter().find(|a| &a.job == head)
                    );
                    heads.insert(head.as_str());
                }
                // decided before any turn (`admitting_queue` included), or larger than a
                // limit: they hold back nobody
                WaitReason::Invalid { .. }
                | WaitReason::NeverFits { .. }
                | WaitReason::NodesUnavailable { .. }
                | WaitReason::QueueHeld { .. }
                | WaitReason::QueueTerminating { .. }
                | WaitReason::VirtualClusterTerminating { .. } => {}
                r if r.exceeds_limit() => {}
                _ => {
                    heads.insert(id);
                }
            }
        }
        prop_assert!(
            heads.len() <= 1,
            "strict queue {} held back by several jobs: {:?}",
            q.name,
            heads
                .iter()
                .map(|h| (h, waiting.get(h)))
                .collect::<Vec<_>>()
        );
    }
    Ok(())
}

fn check_invariants(s: &Snapshot, d: &Decisions) -> Result<(), TestCaseError> {
    check_strict_order(s, d)?;
    let jobs: BTreeMap<&str, &Job> = s.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let nodes: BTreeMap<&str, &Node> = s.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    // determinism
    prop_assert_eq!(&schedule(s), d);
    // every pending job decided exactly once; running jobs never
    let mut seen = BTreeSet::new();
    for id in d
        .admissions
        .iter()
        .map(|a| &a.job)
        .chain(d.waiting.iter().map(|w| &w.job))
    {
        prop_assert!(seen.insert(id.as_str()), "{} decided twice", id);
        prop_assert!(
            jobs[id.as_str()].running.is_none(),
            "running job {} decided",
            id
        );
    }
    for a in &d.admissions {
        prop_assert!(
            !jobs[a.job.as_str()].returning,
            "{} admitted before it is back",
            a.job
        );
    }
    prop_assert_eq!(
        seen.len(),
        s.jobs.iter().filter(|j| j.running.is_none()).count()
    );

    // no GPU (or fraction) given twice: running (incl. preempting) plus admissions
    let victims: BTreeSet<&str> = d.victims().collect();
    let mut milli: BTreeMap<(&str, u32), u32> = BTreeMap::new();
    let mut whole: BTreeSet<(&str, u32)> = BTreeSet::new();
    let mut gpus_used: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    let running = s
        .jobs
        .iter()
        .filter_map(|j| j.running.as_ref().map(|r| (j, &r.placement)));
    let admitted = d
        .admissions
        .iter()
        .map(|a| (jobs[a.job.as_str()], &a.placement));
    for (k, (j, placement)) in running.chain(admitted).enumerate() {
        let is_admission = j.running.is_none();
        for p in placement {
            let n = nodes[p.node.as_str()];
            if is_admission {
                prop_assert!(n.schedulable, "admission on cordoned node");
                match demand_of(j, &p.task) {
                    GpuDemand::Whole(g) => prop_assert_eq!(p.gpus.len() as u32, g),
                    GpuDemand::Share(m) => {
                        prop_assert_eq!(p.gpus.len(), 1);
                        prop_assert_eq!(p.share, Some(m));
                    }
                    GpuDemand::None => prop_assert!(p.gpus.is_empty()),
                }
                for g in &p.gpus {
                    prop_assert!(g.0 < n.allocatable.gpus, "GPU out of range");
                    prop_assert!(!n.unhealthy_gpus.contains(g), "admission on unhealthy GPU");
                }
            }
            for g in &p.gpus {
                gpus_used.entry(n.name.as_str()).or_default().insert(g.0);
                let m = milli.entry((n.name.as_str(), g.0)).or_default();
                match p.share {
                    Some(sh) => *m += sh.0,
                    None => {
                        prop_assert!(
                            *m == 0 && whole.insert((n.name.as_str(), g.0)),
                            "GPU {}:{} given twice (entry {})",
                            n.name,
                            g.0,
                            k
                        );
                        *m += 1000;
                    }
                }
                prop_assert!(*m <= 1000, "GPU {}:{} over 1000 milli", n.name, g.0);
            }
        }
    }
    for (n, used) in &gpus_used {
        let node = nodes[n];
        let healthy = node.allocatable.gpus - node.unhealthy_gpus.len() as u32;
        // foreign GPUs are opaque; only new work must leave room for them
        let new_work = d.admissions.iter().any(|a| {
            a.placement
                .iter()
                .any(|p| p.node == *n && !p.gpus.is_empty())
        });
        if new_work {
            prop_assert!(
                used.len() as u32 + node.foreign.gpus <= healthy,
                "foreign GPUs on {} overbooked",
                n
            );
        }
    }

    // gangs whole, ranks a permutation, contiguous per node
    for a in &d.admissions {
        let j = jobs[a.job.as_str()];
        let want: BTreeSet<(String, u32)> = j
            .tasks
            .iter()
            .flat_map(|t| (0..t.replicas).map(move |i| (t.name.clone(), i)))
            .collect();
        let got: BTreeSet<(String, u32)> = a
            .placement
            .iter()
            .map(|p| (p.task.clone(), p.index))
            .collect();
        prop_assert_eq!(&want, &got, "gang of {} not whole", &a.job);
        prop_assert_eq!(a.placement.len(), want.len());
        let mut by_rank = a.placement.clone();
        by_rank.sort_by_key(|p| p.rank);
        prop_assert!(
            by_rank.iter().enumerate().all(|(i, p)| p.rank == i as u32),
            "ranks not 0..n"
        );
        let mut done = BTreeSet::new();
        for w in by_rank.windows(2) {
            if w[0].node != w[1].node {
                prop_assert!(
                    done.insert(w[0].node.clone()),
                    "ranks of node {} not contiguous",
                    &w[0].node
                );
                prop_assert!(
                    !done.contains(&w[1].node),
                    "ranks of node {} not contiguous",
                    &w[1].node
                );
            }
        }
        if let Some(level) = j.topology.required {
            let ns: BTreeSet<&str> = a
                .placement
                .iter()
                .filter(|p| !p.gpus.is_empty())
                .map(|p| p.node.as_str())
                .collect();
            match level {
                TopologyLevel::Node | TopologyLevel::GpuGroup => prop_assert!(ns.len() <= 1),
                TopologyLevel::Rack => {
                    let racks: BTreeSet<Option<&String>> =
                        ns.iter().map(|n| nodes[n].rack.as_ref()).collect();
                    prop_assert!(racks.len() <= 1 && !racks.contains(&None));
                }
            }
        }
    }

    // victims: running, not already preempting, each once; reclaim takes only other VCs'
    // bonus jobs that have run their minimum runtime; priority only lower priority, same queue
    let vc_of_queue: BTreeMap<&str, &str> = s
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.virtual_cluster.as_str()))
        .collect();
    let mut once = BTreeSet::new();
    for p in &d.preemptions {
        prop_assert!(!p.victims.is_empty());
        if !p.reason.for_a_job() {
            continue; // no beneficiary job: a node, a GPU or a held queue
        }
        let b = jobs[p.beneficiary.job().expect("a preemption for a job")];
        prop_assert!(b.running.is_none());
        for v in &p.victims {
            prop_assert!(once.insert(v.as_str()), "victim {} twice", v);
            let vj = jobs[v.as_str()];
            let r = vj.running.as_ref().expect("victims run");
            prop_assert!(
                !r.preempting || withdrawable(s, vj),
                "victim {} already leaving",
                v
            );
            prop_assert!(
                s.now >= r.started_at + r.min_runtime_seconds,
                "young victim {}",
                v
            );
            match p.reason {
                PreemptionReason::Reclaim => {
                    prop_assert!(bonus_now(d, vj), "reclaim victim {} is not bonus", v);
                    prop_assert_ne!(
                        vc_of_queue.get(vj.queue.as_str()),
                        vc_of_queue.get(b.queue.as_str())
                    );
                }
                PreemptionReason::Priority => {
                    prop_assert_eq!(&vj.queue, &b.queue);
                    prop_assert!(vj.priority < b.priority);
                }
                PreemptionReason::Consolidation => {
                    prop_assert_eq!(
                        vc_of_queue.get(vj.queue.as_str()),
                        vc_of_queue.get(b.queue.as_str())
                    );
                    // a team with cells of the type moves its guaranteed jobs of any priority
                    let cells = vc_of_queue
                        .get(b.queue.as_str())
                        .is_some_and(|vc| has_cells_on(s, vc, r));
                    prop_assert!(
                        vj.priority <= b.priority || (cells && !bonus_now(d, vj)),
                        "consolidation victim {} more important than {}",
                        v,
                        b.id
                    );
                    prop_assert!(vj.gpu_milli() < b.gpu_milli(), "victim {} not smaller", v);
                }
                PreemptionReason::QueueShare => {
                    prop_assert_eq!(
                        vc_of_queue.get(vj.queue.as_str()),
                        vc_of_queue.get(b.queue.as_str())
                    );
                    prop_assert_ne!(&vj.queue, &b.queue);
                    prop_assert!(vj.priority <= b.priority);
                }
                PreemptionReason::Drain
                | PreemptionReason::UnhealthyGpu
                | PreemptionReason::QueueHold => {}
            }
        }
        let waits = matches!(
            d.waiting_reason(&p.beneficiary.to_string()),
            Some(WaitReason::WaitingForPreemption { .. })
        );
        prop_assert!(waits);
    }

    // no VC above its limit through admissions
    for v in &s.virtual_clusters {
        let Some(limit) = v.limit_gpus else { continue };
        let mine = |j: &Job| vc_of_queue.get(j.queue.as_str()) == Some(&v.name.as_str());
        let admitted: u64 = d
            .admissions
            .iter()
            .map(|a| jobs[a.job.as_str()])
            .filter(|j| mine(j))
            .map(Job::gpu_milli)
            .sum();
        if admitted == 0 {
            continue;
        }
        let held: u64 = s
            .jobs
            .iter()
            .filter(|j| {
                mine(j)
                    && j.running
                        .as_ref()
                        .is_some_and(|r| !r.preempting || withdrawable(s, j))
                    && !victims.contains(j.id.as_str())
            })
            .map(Job::gpu_milli)
            .sum();
        // one beneficiary may have several preemptions (one per kind in a combined plan)
        let beneficiaries: BTreeSet<&str> = d
            .preemptions
            .iter()
            .filter_map(|p| p.beneficiary.job())
            .filter(|b| jobs.contains_key(b))
            .collect();
        let reserved: u64 = beneficiaries
            .iter()
            .map(|b| jobs[b])
            .filter(|j| mine(j))
            .map(Job::gpu_milli)
            .sum();
        prop_assert!(
            held + admitted + reserved <= u64::from(limit) * 1000,
            "VC {} above its limit",
            v.name
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(6000))]

    /// No GPU twice, gangs whole, ranks contiguous, victims legitimate, limits kept,
    /// determinism — over worlds with limits, cells, shares, cordons and sick GPUs.
    #[test]
    fn invariants_hold_for_any_world(w in world(false)) {
        let s = build(&w);
        let d = schedule(&s);
        check_invariants(&s, &d)?;
    }
}

proptest! {
    #![proptest_config(cases(1000))]

    /// With rack labels, `NoSchedule` taints, node selectors and tolerations sprinkled over
    /// any world: every invariant still holds and every admitted replica is on a node its
    /// task accepts.
    #[test]
    fn admissions_keep_node_constraints(
        w in world(false),
        node_marks in prop::collection::vec((0u8..3, 0u8..4), 8),
        job_marks in prop::collection::vec((0u8..5, any::<bool>()), 16),
    ) {
        let mut s = build(&w);
        for (i, n) in s.nodes.iter_mut().enumerate() {
            let (rack, taint) = node_marks[i % node_marks.len()];
            n.labels.insert("rack".into(), format!("r{rack}"));
            if taint == 0 {
                n.taints.push(Taint {
                    key: "gpu".into(),
                    value: String::new(),
                    effect: TaintEffect::NoSchedule,
                });
            }
        }
        for (i, j) in s.jobs.iter_mut().filter(|j| j.running.is_none()).enumerate() {
            let (rack, tolerate) = job_marks[i % job_marks.len()];
            if rack < 3 {
                j.tasks[0].constraints.node_selector.insert("rack".into(), format!("r{rack}"));
            }
            if tolerate {
                j.tasks[0].constraints.tolerations.push(Toleration {
                    key: "gpu".into(),
                    exists: true,
                    ..Default::default()
                });
            }
        }
        let d = schedule(&s);
        check_invariants(&s, &d)?;
        let jobs: BTreeMap<&str, &Job> = s.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
        let nodes: BTreeMap<&str, &Node> = s.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        for a in &d.admissions {
            let j = jobs[a.job.as_str()];
            for p in &a.placement {
                let t = j.tasks.iter().find(|t| t.name == p.task).expect("task");
                let n = nodes[p.node.as_str()];
                prop_assert!(
                    t.constraints.check(n).is_ok(),
                    "{} placed on {} against {:?}", a.job, p.node, t.constraints
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(cases(2000))]

    /// A VC below its guarantee with a pending 1-GPU job gets an admission or a preemption
    /// plan (guarantees within the cluster, no limits, whole GPUs).
    #[test]
    fn guarantee_is_always_reclaimable(w in world(true), vc in 0usize..2) {
        let mut s = build(&w);
        // the VC under test holds no bonus jobs of its own (they could block it)
        let vc_name = format!("vc{vc}");
        let mine = |q: &str| q == format!("q{}", vc * 2) || q == format!("q{}", vc * 2 + 1);
        s.jobs.retain(|j| !(mine(&j.queue) && j.running.as_ref().is_some_and(|r| r.bonus)));
        for j in &mut s.jobs {
            if let Some(r) = &mut j.running {
                r.min_runtime_seconds = 0;
                r.preempting = false;
            }
            // one of its own on its way back holds its turn on purpose
            j.returning = false;
        }
        let used: BTreeMap<String, u32> = FLAVORS.iter().map(|f| {
            let u = s.jobs.iter().filter(|j| mine(&j.queue)).filter_map(|j| j.running.as_ref()).flat_map(|r| r.placement.iter())
                .filter(|p| s.nodes.iter().any(|n| n.name == p.node && n.flavor.as_str() == *f)).map(|p| p.gpus.len() as u32).sum();
            (f.to_string(), u)
        }).collect();
        let g = &s.virtual_clusters[vc].guarantee;
        let Some(fg) = g.iter().find(|fg| used[fg.flavor.as_str()] < fg.gpus) else { return Ok(()) };
        // a strict queue's head that cannot start holds the probe back on purpose
        s.queues[vc * 2].strategy = QueueingStrategy::BestEffort;
        let mut probe = job("ns/probe", &format!("q{}", vc * 2), 1, 1);
        probe.gpu_types = vec![fg.flavor.clone()];
        probe.queued_at = -1;
        s.jobs.push(probe);
        let d = schedule(&s);
        check_invariants(&s, &d)?;
        let ok = d.admissions.iter().any(|a| mine(&s.jobs.iter().find(|j| j.id == a.job).unwrap().queue))
            || d.waiting.iter().any(|w| mine(&s.jobs.iter().find(|j| j.id == w.job).unwrap().queue) && matches!(w.reason, WaitReason::WaitingForPreemption { .. }));
        prop_assert!(ok, "{} below its guarantee got nothing: {:?}", vc_name, d);
    }
}

proptest! {
    #![proptest_config(cases(2000))]

    /// No reclaim that leaves the gang unplaceable: in the next cycle, with every victim (and
    /// every job already preempting) gone and this cycle's admissions running, each
    /// beneficiary fits — with either victim selection.
    #[test]
    fn beneficiary_fits_once_victims_are_gone(w in world(false), scattered in any::<bool>()) {
        check_beneficiary_fits(&w, scattered)?;
    }
}

/// The body of `beneficiary_fits_once_victims_are_gone`, shared with its regressions.
/// Each preemption of `d` as (beneficiary, reason, victims).
fn plan_of(d: &Decisions) -> Vec<(&str, PreemptionReason, Vec<String>)> {
    d.preemptions
        .iter()
        .map(|p| {
            let b = p.beneficiary.job().expect("these plans are for jobs");
            (b, p.reason, p.victims.clone())
        })
        .collect()
}

fn check_beneficiary_fits(w: &World, scattered: bool) -> Result<(), TestCaseError> {
    let s = build(w);
    let opts = Options {
        victims: if scattered {
            VictimSelection::Scattered
        } else {
            VictimSelection::WholeDomain
        },
        ..Options::default()
    };
    let d = schedule_with(&s, &opts);
    for p in &d.preemptions {
        let gone: BTreeSet<&str> = d.victims().collect();
        let mut s2 = s.clone();
        s2.jobs.retain(|j| match &j.running {
            Some(r) => !r.preempting && !gone.contains(j.id.as_str()),
            None => p.beneficiary == j.id.as_str() || d.admission(&j.id).is_some(),
        });
        // The cycle's admissions run in the next one: the plan was made with them charged
        // (their quota, limits and cells) and its reservation kept them off the room.
        for j in &mut s2.jobs {
            if let Some(a) = d.admission(&j.id) {
                j.running = Some(Running {
                    placement: a.placement.clone(),
                    bonus: a.bonus,
                    started_at: s.now,
                    last_checkpoint: None,
                    checkpoint_grace_seconds: 30,
                    min_runtime_seconds: 0,
                    preempting: false,
                    checkpoint_request: None,
                });
            }
        }
        // a beneficiary on its way back is back by then
        for j in s2
            .jobs
            .iter_mut()
            .filter(|j| p.beneficiary == j.id.as_str())
        {
            j.returning = false;
        }
        let d2 = schedule(&s2);
        prop_assert!(
            d2.admission(&p.beneficiary.to_string()).is_some(),
            "{} does not fit after {:?}: {:?}",
            p.beneficiary,
            p.victims,
            d2
        );
    }
    Ok(())
}

/// A guarantee of `gpus` GPUs of type `f`, no cells.
fn flavor_guarantee(f: &str, gpus: u32) -> FlavorGuarantee {
    FlavorGuarantee {
        flavor: Flavor::new(f),
        gpus,
        cells: vec![],
    }
}

/// Regression (a rare seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing
/// world): a 2×2-GPU job of user2 in q2 (vc1), blocked only by q2's user limit of 5, within
/// vc1's A100 guarantee (lent to vc2's 4-GPU bonus job on n3), with 6 idle H100s on n4 it
/// could only borrow. The plan evicted user2's lower-priority first-1 to free the limit and
/// reserved the H100s as bonus; with first-1 gone the next cycle reclaimed n3 instead, so the
/// job waited on a second preemption. Now one plan frees the limit and reclaims n3 together.
#[test]
fn limited_job_within_guarantee_reclaims_in_the_same_plan() {
    let spec = |vc: usize, replicas: u32, gpus: GpuDemand, priority: i32, user: u8| JobSpec {
        vc,
        queue: 0,
        replicas,
        gpus,
        typed: None,
        required: None,
        priority,
        user,
        predicted: None,
        returning: false,
    };
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 0),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![flavor_guarantee("A100", 1), flavor_guarantee("H100", 2)];
    vcs[0].limit_gpus = Some(3);
    vcs[1].guarantee = vec![flavor_guarantee("A100", 5), flavor_guarantee("H100", 2)];
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [1, 3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    queues[2].user_limit = Some(5);
    queues[2].policy = QueuePolicy::Priority;
    queues[2].priority_preemption = true;
    queues[4].policy = QueuePolicy::ShortestPredictedFirst;
    let w = World {
        nodes: vec![
            node("n0", "H100", 1, None),
            node("n1", "A100", 1, None),
            node("n2", "A100", 1, None),
            node("n3", "A100", 4, None),
            node("n4", "H100", 8, Some("r1")),
        ],
        vcs,
        queues,
        first: vec![
            spec(0, 1, GpuDemand::Whole(1), 0, 0),
            spec(1, 1, GpuDemand::Whole(1), 0, 2),
            spec(0, 1, GpuDemand::Whole(1), 0, 0),
            spec(1, 1, GpuDemand::None, 1, 0),
            spec(1, 1, GpuDemand::Whole(1), 1, 0),
            spec(2, 1, GpuDemand::Whole(4), 0, 0),
            spec(1, 1, GpuDemand::Share(MilliGpu(1)), 0, 2),
        ],
        second: vec![spec(1, 2, GpuDemand::Whole(2), 1, 2)],
        fates: vec![(false, 0, 0, false, 0); 12],
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let d = schedule(&build(&w));
    let plan: Vec<(PreemptionReason, Vec<String>)> = d
        .preemptions
        .iter()
        .map(|p| (p.reason, p.victims.clone()))
        .collect();
    assert_eq!(
        plan,
        vec![
            (PreemptionReason::Priority, vec!["ns/first-1".to_string()]),
            (PreemptionReason::Reclaim, vec!["ns/first-5".to_string()]),
        ]
    );
}

/// Regression (a seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing world):
/// vc1 is guaranteed one H100 node cell, and n4 (8 GPUs, held only by vc2's bonus first-2) is
/// the one clean H100 node left (n1 and n2 cordoned). vc0's second-1 (4 × 0.501 GPU, within
/// its H100 guarantee) was planned a guaranteed reclaim of first-2 onto n4, a placement the
/// cells refuse: with first-2 gone the next cycle kept n4 for vc1 and planned a reclaim of
/// first-1 and first-4 on A100 instead. Now a guaranteed plan is made only on the nodes the
/// cells allow (here none is enough, so second-1 waits and first-2 keeps running).
#[test]
fn reclaim_plan_under_guarantee_at_risk_is_enough() {
    let spec = |vc: usize, queue: usize, replicas: u32, gpus: GpuDemand| JobSpec {
        vc,
        queue,
        replicas,
        gpus,
        typed: None,
        required: None,
        priority: 0,
        user: 0,
        predicted: None,
        returning: false,
    };
    let flavor_guarantee = |f: &str, gpus: u32, cell: bool| FlavorGuarantee {
        flavor: Flavor::new(f),
        gpus,
        cells: if cell {
            vec![CellGuarantee {
                level: TopologyLevel::Node,
                count: 1,
            }]
        } else {
            vec![]
        },
    };
    let mut nodes = vec![
        node("n0", "H100", 2, None),
        node("n1", "H100", 4, None),
        node("n2", "H100", 1, None),
        node("n3", "A100", 8, Some("r1")),
        node("n4", "H100", 8, None),
        node("n5", "A100", 2, None),
    ];
    for i in [1, 2] {
        nodes[i].unhealthy_gpus = vec![GpuIndex(0)];
        nodes[i].schedulable = false;
    }
    for i in [1, 2, 3, 5] {
        nodes[i].foreign.gpus = 1;
    }
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 0),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![
        flavor_guarantee("A100", 3, false),
        flavor_guarantee("H100", 3, false),
    ];
    vcs[0].weight = 2;
    vcs[1].guarantee = vec![
        flavor_guarantee("A100", 4, false),
        flavor_guarantee("H100", 8, true),
    ];
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [1, 3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    queues[3].max_share = 20;
    queues[3].policy = QueuePolicy::ShortestPredictedFirst;
    let mut first0 = spec(1, 1, 1, GpuDemand::Whole(4));
    first0.required = Some(TopologyLevel::Rack);
    let mut first3 = spec(0, 0, 1, GpuDemand::Share(MilliGpu(1)));
    first3.typed = Some(1);
    let w = World {
        nodes,
        vcs,
        queues,
        first: vec![
            first0,
            spec(2, 1, 1, GpuDemand::Whole(1)),
            spec(2, 0, 8, GpuDemand::Share(MilliGpu(501))),
            first3,
            spec(2, 0, 1, GpuDemand::Whole(1)),
        ],
        second: vec![
            spec(0, 0, 1, GpuDemand::Whole(1)),
            spec(0, 0, 4, GpuDemand::Share(MilliGpu(501))),
        ],
        fates: vec![(false, 0, 0, false, 0); 12],
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let d = schedule(&build(&w));
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);
    assert!(d.admission("ns/second-1").is_none());
}

/// Regression (a seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing world):
/// vc0's second-0 and second-2 take 2.657 of its 4 A100s guaranteed this cycle, so second-3
/// (4 GPUs, any type, priority 1 in q1) is within no guarantee and borrows: it evicts q1's
/// lower-priority first-1 for a bonus place on n1 (H100). The property used to re-run the
/// cycle without this cycle's admissions: vc0's A100 guarantee was then free again, and the
/// guaranteed phase (rightly) reclaimed vc1's first-3 on A100 before borrowing the idle n1.
/// The plan was never short: the next cycle runs second-0 and second-2, and there second-3
/// takes n1. The property now keeps the cycle's admissions running.
#[test]
fn priority_plan_fits_beside_the_cycles_admissions() {
    let spec =
        |vc: usize, queue: usize, gpus: GpuDemand, typed: Option<usize>, priority: i32| JobSpec {
            vc,
            queue,
            replicas: 1,
            gpus,
            typed,
            required: None,
            priority,
            user: 0,
            predicted: None,
            returning: false,
        };
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 0),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![flavor_guarantee("A100", 4), flavor_guarantee("H100", 1)];
    vcs[1].guarantee = vec![flavor_guarantee("H100", 3)];
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [1, 3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    queues[1].priority_preemption = true;
    let mut first1 = spec(0, 1, GpuDemand::Whole(1), Some(1), 0);
    first1.replicas = 2;
    let w = World {
        nodes: vec![
            node("n0", "H100", 4, None),
            node("n1", "H100", 8, None),
            node("n2", "A100", 4, None),
        ],
        vcs,
        queues,
        first: vec![
            spec(0, 0, GpuDemand::Whole(2), Some(1), 0),
            first1,
            spec(0, 0, GpuDemand::None, None, 0),
            spec(1, 0, GpuDemand::Whole(1), Some(0), 0),
            spec(0, 0, GpuDemand::Share(MilliGpu(344)), Some(1), 0),
            spec(0, 0, GpuDemand::Whole(1), Some(1), 0),
        ],
        second: vec![
            // Priority 1 as second-3, so that it still goes first in q1, where priority
            // leads (`order`).
            spec(0, 1, GpuDemand::Whole(2), None, 1),
            spec(0, 0, GpuDemand::Whole(2), Some(1), 0),
            spec(0, 0, GpuDemand::Share(MilliGpu(657)), None, 0),
            spec(0, 1, GpuDemand::Whole(4), None, 1),
            spec(1, 0, GpuDemand::Whole(1), None, 0),
        ],
        fates: vec![(false, 0, 0, false, 0); 12],
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let d = schedule(&build(&w));
    let plan = plan_of(&d);
    assert_eq!(
        plan,
        vec![(
            "ns/second-3",
            PreemptionReason::Priority,
            vec!["ns/first-1".to_string()]
        )]
    );
}

/// Regression (a seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing world):
/// n0 (rack r1) has three healthy H100s: two held whole, one holding vc1's 0.001-GPU first-3.
/// vc0's second-1 (0.001 GPU, rack required, within its guarantee) did not fit now: the rack
/// search only opened nodes with a whole GPU free, blind to the 0.999 left on first-3's GPU.
/// So it reclaimed first-3 for a whole GPU, and vc1's second-0 (0.001 GPU, no topology) then
/// shared that GPU beside the reservation; in the next cycle the GPU was partly used again
/// and second-1 planned another reclaim (second-0). Now a share also searches partly used
/// GPUs in a node list: second-1 is admitted beside first-3 and nobody is evicted.
#[test]
fn rack_bound_share_fits_a_partly_used_gpu() {
    let spec = |vc: usize, gpus: GpuDemand, required: Option<TopologyLevel>| JobSpec {
        vc,
        queue: 0,
        replicas: 1,
        gpus,
        typed: None,
        required,
        priority: 0,
        user: 0,
        predicted: None,
        returning: false,
    };
    let mut n0 = node("n0", "H100", 4, Some("r1"));
    n0.unhealthy_gpus = vec![GpuIndex(0)];
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 0),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![FlavorGuarantee {
        flavor: Flavor::new("H100"),
        gpus: 2,
        cells: vec![],
    }];
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [1, 3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    let mut fates = vec![(false, 0, 0, false, 0); 12];
    fates[3].1 = 1;
    let w = World {
        nodes: vec![n0],
        vcs,
        queues,
        first: vec![
            spec(1, GpuDemand::Whole(1), None),
            spec(0, GpuDemand::None, None),
            spec(0, GpuDemand::Whole(1), None),
            spec(1, GpuDemand::Share(MilliGpu(1)), None),
        ],
        second: vec![
            spec(1, GpuDemand::Share(MilliGpu(1)), None),
            spec(0, GpuDemand::Share(MilliGpu(1)), Some(TopologyLevel::Rack)),
        ],
        fates,
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let s = build(&w);
    let d = schedule(&s);
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);
    let a = d.admission("ns/second-1").expect("second-1 is admitted");
    let first3 = s.jobs.iter().find(|j| j.id == "ns/first-3").unwrap();
    let shared = &first3.running.as_ref().unwrap().placement[0].gpus;
    assert_eq!(&a.placement[0].gpus, shared, "{:?}", a.placement);
}

/// Regression (a seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing world):
/// vc0 (6 H100s guaranteed, limit 6) runs first-1 (4 A100s, bonus) and first-0 (0.001 GPU);
/// its second-0 (4 GPUs on one node, priority 1, q0 allows priority preemption) is blocked
/// by the limit. Its plan used to wait for phase 3: by then phase 2 had lent n0's H100s,
/// vc0's guarantee, to vc1's second-2, an admission no plan may take back this cycle, so
/// second-0 evicted first-1 to free the limit and borrowed the A100s. With first-1 gone
/// the next cycle gave second-0 its guaranteed turn and reclaimed second-2 instead (a
/// borrower admitted and reclaimed at once, the A100 room never used). Now a limited job's
/// plan on the types within its guarantee has its phase-1 turn, as the next cycle gives it:
/// it evicts first-1 and reserves n0's H100s before anyone borrows them.
#[test]
fn limited_job_plans_its_guarantee_before_it_is_lent() {
    let spec = |vc: usize, replicas: u32, gpus: GpuDemand, priority: i32| JobSpec {
        vc,
        queue: 0,
        replicas,
        gpus,
        typed: None,
        required: None,
        priority,
        user: 0,
        predicted: None,
        returning: false,
    };
    let mut n1 = node("n1", "A100", 8, None);
    n1.unhealthy_gpus = vec![GpuIndex(0)];
    n1.foreign.gpus = 1;
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 0),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![flavor_guarantee("H100", 6)];
    vcs[0].limit_gpus = Some(6);
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [1, 3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    queues[0].priority_preemption = true;
    let mut first1 = spec(0, 1, GpuDemand::Whole(4), 0);
    first1.typed = Some(0);
    let mut second0 = spec(0, 1, GpuDemand::Whole(4), 1);
    second0.required = Some(TopologyLevel::Node);
    let w = World {
        nodes: vec![node("n0", "H100", 8, None), n1],
        vcs,
        queues,
        first: vec![
            spec(0, 1, GpuDemand::Share(MilliGpu(1)), 0),
            first1,
            spec(0, 1, GpuDemand::None, 0),
        ],
        second: vec![
            second0,
            spec(0, 1, GpuDemand::Whole(1), 0),
            spec(1, 4, GpuDemand::Whole(1), 0),
        ],
        fates: vec![(false, 0, 0, false, 0); 12],
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let d = schedule(&build(&w));
    let plan = plan_of(&d);
    assert_eq!(
        plan,
        vec![(
            "ns/second-0",
            PreemptionReason::Priority,
            vec!["ns/first-1".to_string()]
        )]
    );
    assert!(d.admission("ns/second-2").is_none(), "{:?}", d.admissions);
}

/// Regression (a seed of `beneficiary_fits_once_victims_are_gone`, its minimal failing world):
/// q0 (vc0, user limit 3, priority preemption) runs user2's first-0 (0.224 A100) and, on
/// H100, first-4 (2 GPUs) and first-9 (1); with q1's jobs vc0 fills its H100 guarantee of 7.
/// user2's second-2 (3 × 1 GPU, priority 1) is blocked by the user limit. Its combined plan
/// evicted first-0 (the limit) and first-4 (room on n1), judged within the guarantee as if
/// first-9 were gone too ("demoted once second-2 runs"). But the next cycle fills the
/// guarantee with the running jobs first: second-2 was beyond it on H100 (5 + 3 > 7), within
/// it on A100, and phase 1 reclaimed vc2's first-1 there instead. Now a combined plan's end
/// is judged beside every job of the VC that runs in the next cycle: first-9 goes too.
#[test]
fn combined_plan_ends_within_the_guarantee_the_next_cycle_sees() {
    let spec = |vc: usize, queue: usize, gpus: GpuDemand, user: u8| JobSpec {
        vc,
        queue,
        replicas: 1,
        gpus,
        typed: None,
        required: None,
        priority: 0,
        user,
        predicted: None,
        returning: false,
    };
    let mut n2 = node("n2", "A100", 8, None);
    n2.unhealthy_gpus = vec![GpuIndex(0)];
    let mut vcs = vec![
        vc("vc0", "A100", 0),
        vc("vc1", "A100", 1),
        vc("vc2", "A100", 0),
    ];
    vcs[0].guarantee = vec![flavor_guarantee("A100", 3), flavor_guarantee("H100", 7)];
    let mut queues: Vec<Queue> = (0..6)
        .map(|i| queue(&format!("q{i}"), &format!("vc{}", i / 2)))
        .collect();
    for i in [3, 5] {
        queues[i].parent = Some(format!("q{}", i - 1));
        queues[i].share = 50;
    }
    queues[0].share = 50;
    queues[0].user_limit = Some(3);
    queues[0].policy = QueuePolicy::UserFair;
    queues[0].priority_preemption = true;
    let mut first1 = spec(2, 1, GpuDemand::Whole(1), 0);
    first1.replicas = 3;
    let mut second1 = spec(1, 0, GpuDemand::Share(MilliGpu(256)), 0);
    second1.typed = Some(0);
    let mut second2 = spec(0, 0, GpuDemand::Whole(1), 2);
    second2.replicas = 3;
    second2.priority = 1;
    let w = World {
        nodes: vec![node("n0", "H100", 1, None), node("n1", "H100", 8, None), n2],
        vcs,
        queues,
        first: vec![
            spec(0, 0, GpuDemand::Share(MilliGpu(224)), 2),
            first1,
            spec(1, 0, GpuDemand::Share(MilliGpu(349)), 0),
            spec(0, 0, GpuDemand::None, 0),
            spec(0, 0, GpuDemand::Whole(2), 0),
            spec(0, 1, GpuDemand::Whole(1), 0),
            spec(0, 1, GpuDemand::Whole(1), 0),
            spec(0, 0, GpuDemand::None, 0),
            spec(0, 1, GpuDemand::Whole(2), 0),
            spec(0, 0, GpuDemand::Whole(1), 0),
            spec(2, 0, GpuDemand::Whole(1), 0),
        ],
        second: vec![
            spec(1, 0, GpuDemand::Share(MilliGpu(172)), 0),
            second1,
            second2,
        ],
        fates: vec![(false, 0, 0, false, 0); 12],
    };
    for scattered in [false, true] {
        check_beneficiary_fits(&w, scattered).unwrap();
    }
    let d = schedule(&build(&w));
    let plan = plan_of(&d);
    let victims = ["ns/first-0", "ns/first-4", "ns/first-9"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        plan,
        vec![("ns/second-2", PreemptionReason::Priority, victims)]
    );
}

proptest! {
    #![proptest_config(cases(1000))]

    /// Victims already leaving carry their requests (any reason, a beneficiary pending, gone
    /// or running, acknowledged or not): the unacknowledged reclaim and priority victims
    /// whose beneficiary no longer waits are withdrawn (unless preempted again in the same
    /// cycle), and besides them only those whose beneficiary waits on no preemption; with
    /// them holding their GPUs again every invariant still holds.
    #[test]
    fn only_preemptions_whose_beneficiary_no_longer_waits_are_withdrawn(w in world(false)) {
        let mut s = build(&w);
        let pending: Vec<String> = s.jobs.iter().filter(|j| j.running.is_none()).map(|j| j.id.clone()).collect();
        let running: Vec<String> = s.jobs.iter().filter(|j| j.running.is_some()).map(|j| j.id.clone()).collect();
        let reasons = [
            PreemptionReason::Reclaim,
            PreemptionReason::Priority,
            PreemptionReason::Drain,
            PreemptionReason::UnhealthyGpu,
        ];
        for (k, j) in s.jobs.iter_mut().enumerate() {
            let Some(r) = j.running.as_mut().filter(|r| r.preempting) else { continue };
            let beneficiary = match (k / 4) % 3 {
                0 => pending.first().cloned(),
                1 => Some("ns/deleted".to_string()),
                _ => running.first().cloned(),
            };
            r.checkpoint_request = Some(CheckpointRequest {
                reason: reasons[k % 4],
                beneficiary,
                withdrawable: k % 5 != 0,
            });
        }
        let d = schedule(&s);
        check_invariants(&s, &d)?;
        let victims: BTreeSet<&str> = d.victims().collect();
        let want: BTreeSet<&str> = s
            .jobs
            .iter()
            .filter(|j| withdrawable(&s, j) && !victims.contains(j.id.as_str()))
            .map(|j| j.id.as_str())
            .collect();
        let got: BTreeSet<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
        prop_assert!(got.is_superset(&want), "{:?} not all withdrawn: {:?}", want, got);
        // beyond those, only preemptions whose beneficiary, pending, waits on none (the
        // cycle made again with them running)
        for c in d.cancellations.iter().filter(|c| !want.contains(c.job.as_str())) {
            let b = c.beneficiary.as_str();
            prop_assert!(s.jobs.iter().any(|j| j.id == b && j.running.is_none()), "{:?}", c);
            prop_assert!(d.admission(b).is_none(), "{:?}", c);
            prop_assert!(
                !matches!(
                    d.waiting_reason(b),
                    Some(WaitReason::WaitingForPreemption { victims, .. }) if victims.contains(&c.job)
                ),
                "{:?}: {:?}", c, d.waiting_reason(b)
            );
        }
    }
}

proptest! {
    #![proptest_config(cases(500))]

    /// Queues held at random (`stopPolicy`, issue 55 item 10): a queue held by itself or one
    /// above it admits nothing; under `HoldAndDrain` every running job of it not already
    /// leaving is preempted with `QueueHold`, and the hold preempts nobody else; every other
    /// invariant still holds.
    #[test]
    fn held_queues_admit_nothing_and_drained_ones_keep_no_job(
        w in world(false),
        holds in prop::collection::vec(0usize..3, 6),
    ) {
        let mut s = build(&w);
        for (q, &h) in s.queues.iter_mut().zip(&holds) {
            q.stop = [StopPolicy::None, StopPolicy::Hold, StopPolicy::HoldAndDrain][h];
        }
        let stop_of = |queue: &str| {
            let mut seen = BTreeSet::new();
            let mut at = s.queues.iter().find(|q| q.name == queue);
            let mut stop = StopPolicy::None;
            while let Some(q) = at.filter(|q| seen.insert(q.name.clone())) {
                stop = stop.max(q.stop);
                at = q.parent.as_ref().and_then(|p| s.queues.iter().find(|q| &q.name == p));
            }
            stop
        };
        let d = schedule(&s);
        check_invariants(&s, &d)?;
        for a in &d.admissions {
            let j = s.jobs.iter().find(|j| j.id == a.job).expect("admitted job");
            prop_assert_eq!(stop_of(&j.queue), StopPolicy::None, "{} admitted", &a.job);
        }
        for j in &s.jobs {
            let Some(r) = &j.running else { continue };
            let drained = stop_of(&j.queue) == StopPolicy::HoldAndDrain;
            let reason = reason_of(&d, &j.id);
            if drained && !r.preempting {
                prop_assert!(reason.is_some(), "{} runs on in a drained queue", &j.id);
            }
            if reason == Some(PreemptionReason::QueueHold) {
                prop_assert!(drained, "{} preempted for a hold it is not under", &j.id);
            }
        }
    }
}

/// The generators reach the interesting cases (otherwise the properties above prove
/// little): reclaims, priority preemptions, min-runtime waits, shares and cells.
#[test]
fn generators_reach_interesting_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = world(false);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let n = 400;
    for _ in 0..n {
        let w = strategy.new_tree(&mut runner).expect("a world").current();
        let s = build(&w);
        let d = schedule(&s);
        let mut hit = |k: &'static str, b: bool| *counts.entry(k).or_default() += usize::from(b);
        hit("admission", !d.admissions.is_empty());
        hit(
            "reclaim",
            d.preemptions
                .iter()
                .any(|p| p.reason == PreemptionReason::Reclaim),
        );
        hit(
            "priority",
            d.preemptions
                .iter()
                .any(|p| p.reason == PreemptionReason::Priority),
        );
        hit(
            "share",
            d.admissions
                .iter()
                .any(|a| a.placement.iter().any(|p| p.share.is_some())),
        );
        hit(
            "multi-node",
            d.admissions
                .iter()
                .any(|a| a.placement.windows(2).any(|w| w[0].node != w[1].node)),
        );
        hit(
            "no-fit",
            d.waiting
                .iter()
                .any(|w| matches!(w.reason, WaitReason::NoFit { .. })),
        );
        hit(
            "behind-head",
            d.waiting
                .iter()
                .any(|w| matches!(w.reason, WaitReason::BehindQueueHead { .. })),
        );
        hit(
            "waiting-in-flight",
            d.waiting
                .iter()
                .any(|w| matches!(&w.reason, WaitReason::WaitingForPreemption { .. })),
        );
        hit(
            "min-runtime",
            d.waiting
                .iter()
                .any(|w| matches!(w.reason, WaitReason::WaitingForMinRuntime { .. })),
        );
        hit(
            "limit",
            d.waiting.iter().any(|w| {
                matches!(
                    w.reason,
                    WaitReason::OverLimit { .. }
                        | WaitReason::UserLimit { .. }
                        | WaitReason::QueueMaxShare { .. }
                )
            }),
        );
        hit("promotion", !d.promotions.is_empty());
    }
    eprintln!("{counts:?} of {n}");
    for (k, c) in &counts {
        assert!(
            *c * 100 >= n,
            "generator reaches {k} in only {c} of {n} worlds"
        );
    }
}

/// A cluster for histories: healthy, schedulable nodes; three VCs whose guarantees fit the
/// cluster, some with node cells, some with limits; two queues per VC, the second with a
/// user limit or a maxShare at times. Between cycles a node may be lost: cordoned (drained,
/// or not Ready), uncordoned again, or gone.
#[derive(Clone, Debug)]
struct HistoryWorld {
    nodes: Vec<Node>,
    vcs: Vec<VirtualCluster>,
    queues: Vec<Queue>,
    /// Per cycle: arriving jobs, which running jobs (by position) complete, and what happens
    /// to a node (by position, modulo the nodes left) before the cycle.
    steps: Vec<Step>,
}

/// Arriving jobs, completions, and a node event.
type Step = (Vec<JobSpec>, Vec<bool>, Option<(usize, NodeEvent)>);

#[derive(Clone, Copy, Debug)]
enum NodeEvent {
    /// `kubectl drain`: cordoned while Ready, its jobs asked to leave.
    Drain,
    /// Cordoned and not Ready: its jobs stay where they are.
    Cordon,
    Uncordon,
    /// Deleted: its jobs' pods are gone, the jobs go back to their queue (a retry).
    Gone,
}

fn node_event() -> impl Strategy<Value = NodeEvent> {
    prop_oneof![
        Just(NodeEvent::Drain),
        Just(NodeEvent::Cordon),
        Just(NodeEvent::Uncordon),
        Just(NodeEvent::Gone),
    ]
}

fn history_world() -> impl Strategy<Value = HistoryWorld> {
    let nodes = prop::collection::vec(
        (0usize..2, prop_oneof![Just(4u32), Just(8), Just(8)], 0u8..3),
        2..6,
    );
    let vcs = prop::collection::vec(
        (
            0u32..17,
            0u32..9,
            prop::option::weighted(0.4, 1u32..24),
            any::<bool>(),
        ),
        3,
    );
    let queues = prop::collection::vec(
        (
            any::<bool>(),
            prop::option::weighted(0.3, 1u32..6),
            prop_oneof![3 => Just(100u32), 1 => 20u32..=100],
        ),
        6,
    );
    let steps = prop::collection::vec(
        (
            prop::collection::vec(job_spec(true), 0..6),
            prop::collection::vec(prop::bool::weighted(0.3), 12),
            prop::option::weighted(0.3, (0usize..8, node_event())),
        ),
        2..6,
    );
    (nodes, vcs, queues, steps).prop_map(|(ns, vs, qs, steps)| {
        let nodes: Vec<Node> = ns
            .iter()
            .enumerate()
            .map(|(i, &(f, g, rack))| {
                node(
                    &format!("n{i}"),
                    FLAVORS[f],
                    g,
                    (rack > 0).then_some(if rack == 1 { "r1" } else { "r2" }),
                )
            })
            .collect();
        let cap = |f: &str| -> u32 {
            nodes
                .iter()
                .filter(|n| n.flavor.as_str() == f)
                .map(|n| n.allocatable.gpus)
                .sum()
        };
        let mut left = [cap(FLAVORS[0]), cap(FLAVORS[1])];
        let vcs = vs
            .iter()
            .enumerate()
            .map(|(i, &(ga, gh, limit, cells))| {
                let mut v = vc(&format!("vc{i}"), "A100", 0);
                for (fi, g) in [ga, gh].into_iter().enumerate() {
                    let g = if i == 2 { 0 } else { g.min(left[fi]) };
                    left[fi] -= g;
                    if g > 0 {
                        v.guarantee.push(FlavorGuarantee {
                            flavor: Flavor::new(FLAVORS[fi]),
                            gpus: g,
                            cells: if cells && g >= 8 {
                                vec![CellGuarantee {
                                    level: TopologyLevel::Node,
                                    count: 1,
                                }]
                            } else {
                                vec![]
                            },
                        });
                    }
                }
                v.limit_gpus = limit;
                v
            })
            .collect();
        let queues = qs
            .iter()
            .enumerate()
            .map(|(i, &(pp, user_limit, max_share))| {
                let mut q = queue(&format!("q{i}"), &format!("vc{}", i / 2));
                q.policy = QueuePolicy::Priority;
                q.priority_preemption = pp;
                if i % 2 == 1 {
                    q.user_limit = user_limit;
                    q.max_share = max_share;
                }
                q
            })
            .collect();
        HistoryWorld {
            nodes,
            vcs,
            queues,
            steps,
        }
    })
}

/// Whole GPUs a job holds per flavor.
fn held_on(s: &Snapshot, j: &Job, flavor: &str) -> u32 {
    j.running.as_ref().map_or(0, |r| {
        r.placement
            .iter()
            .filter(|p| {
                s.nodes
                    .iter()
                    .any(|n| n.name == p.node && n.flavor.as_str() == flavor)
            })
            .map(|p| p.gpus.len() as u32)
            .sum()
    })
}

/// A VC below its guarantee (count) with a pending job of 1-GPU replicas that fits what is
/// left of it, in its queue without user limit or maxShare, and under its VC limit, gets an
/// admission or a reclaim plan for one of its jobs, unless its guarantee is reported at
/// risk (lost nodes; `check_risk` holds that report to the cluster being whole or not).
/// With cells too: a VC with a node cell must not pack its guaranteed jobs into the node
/// another VC's count guarantee needs while the free node is kept for its own cell.
fn check_guarantees(s: &Snapshot, d: &Decisions) -> Result<(), TestCaseError> {
    for (v, vcd) in s.virtual_clusters.iter().enumerate() {
        if at_risk(d, &vcd.name) {
            continue; // capacity lost: see check_risk
        }
        let mine =
            |j: &Job| j.queue == format!("q{}", v * 2) || j.queue == format!("q{}", v * 2 + 1);
        let live = |j: &&Job| mine(j) && j.running.as_ref().is_some_and(|r| !r.preempting);
        let total: u64 = s.jobs.iter().filter(live).map(Job::gpu_milli).sum();
        let fitting = s.jobs.iter().any(|j| {
            j.running.is_none()
                && j.queue == format!("q{}", v * 2)
                && j.tasks[0].gpus == GpuDemand::Whole(1)
                && j.topology.required.is_none()
                && vcd
                    .limit_gpus
                    .is_none_or(|l| total + j.gpu_milli() <= u64::from(l) * 1000)
                && vcd.guarantee.iter().any(|fg| {
                    let used: u32 = s
                        .jobs
                        .iter()
                        .filter(live)
                        .map(|x| held_on(s, x, fg.flavor.as_str()))
                        .sum();
                    (j.gpu_types.is_empty() || j.gpu_types.contains(&fg.flavor))
                        && used + j.tasks[0].replicas <= fg.gpus
                })
        });
        if !fitting {
            continue;
        }
        let got = d
            .admissions
            .iter()
            .any(|a| s.jobs.iter().any(|j| j.id == a.job && mine(j)))
            || d.waiting.iter().any(|w| {
                matches!(w.reason, WaitReason::WaitingForPreemption { .. })
                    && s.jobs.iter().any(|j| j.id == w.job && mine(j))
            });
        prop_assert!(
            got,
            "vc{} below its guarantee got nothing: {:?}\n{:?}",
            v,
            d,
            s
        );
    }
    Ok(())
}

/// Whether a running job is bonus once the cycle's changes of standing apply.
fn bonus_now(d: &Decisions, j: &Job) -> bool {
    j.running
        .as_ref()
        .is_some_and(|r| (r.bonus && !d.promotions.contains(&j.id)) || d.demotions.contains(&j.id))
}

/// Which jobs are bonus follows priority: per VC and GPU type, once the cycle's promotions
/// and demotions apply, with the cycle's admissions as they start (the next cycle's
/// standing, which the cycle settles at once), its guaranteed jobs hold no more than the
/// guarantee, and no bonus job would fit the guarantee in place of guaranteed jobs of lower
/// priority (it would be more important than all of them). Equal priorities are not
/// compared (a job keeps its standing among equals), nor types with cells (a cell guarantee
/// of another VC may keep a job bonus on purpose).
fn check_bonus_follows_priority(s: &Snapshot, d: &Decisions) -> Result<(), TestCaseError> {
    let cancelled: BTreeSet<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
    // asked to leave in this cycle: their GPUs count for nobody's standing any more
    let leaving: BTreeSet<&str> = d
        .preemptions
        .iter()
        .flat_map(|p| p.victims.iter().map(String::as_str))
        .collect();
    let on_type = |node: &str, f: &str| {
        s.nodes
            .iter()
            .any(|n| n.name == node && n.flavor.as_str() == f)
    };
    for (v, vcd) in s.virtual_clusters.iter().enumerate() {
        let mine =
            |j: &Job| j.queue == format!("q{}", v * 2) || j.queue == format!("q{}", v * 2 + 1);
        for fg in &vcd.guarantee {
            let f = fg.flavor.as_str();
            // (id, priority, GPUs of the type, bonus): running jobs, then admissions
            let mut held: Vec<(&str, i32, u32, bool)> = s
                .jobs
                .iter()
                .filter(|j| {
                    mine(j)
                        && j.running
                            .as_ref()
                            .is_some_and(|r| !r.preempting || cancelled.contains(j.id.as_str()))
                })
                .map(|j| (j.id.as_str(), j.priority, held_on(s, j, f), bonus_now(d, j)))
                .collect();
            for a in &d.admissions {
                let Some(j) = s.jobs.iter().find(|j| j.id == a.job && mine(j)) else {
                    continue;
                };
                let gpus = a
                    .placement
                    .iter()
                    .filter(|p| on_type(&p.node, f))
                    .map(|p| p.gpus.len() as u32)
                    .sum();
                held.push((j.id.as_str(), j.priority, gpus, a.bonus));
            }
            held.retain(|h| h.2 > 0);
            // the victims asked to leave in this cycle hold their room until they go: for
            // the cap they count no more (a job may be admitted into their place), for
            // the standing they still do (their room goes to the job they leave for)
            let used: u32 = held.iter().filter(|h| !h.3).map(|h| h.2).sum();
            let staying: u32 = held
                .iter()
                .filter(|h| !h.3 && !leaving.contains(h.0))
                .map(|h| h.2)
                .sum();
            prop_assert!(
                staying <= fg.gpus,
                "vc{} holds {} guaranteed {} GPUs of {}: {:?}",
                v,
                staying,
                f,
                fg.gpus,
                d
            );
            let cells = s
                .virtual_clusters
                .iter()
                .flat_map(|x| &x.guarantee)
                .any(|g| g.flavor == fg.flavor && !g.cells.is_empty());
            if cells {
                check_cell_swaps(s, d, fg, &held)?;
                continue;
            }
            for &(id, priority, gpus, _) in held.iter().filter(|h| h.3) {
                let lower: u32 = held
                    .iter()
                    .filter(|g| !g.3 && g.1 < priority)
                    .map(|g| g.2)
                    .sum();
                prop_assert!(
                    used - lower + gpus > fg.gpus,
                    "vc{}: bonus {} (priority {}) would fit its {} guarantee in place of \
                     lower-priority jobs: {:?}\n{:?}",
                    v,
                    id,
                    priority,
                    f,
                    d,
                    s
                );
            }
        }
    }
    Ok(())
}

/// With cells, which jobs are bonus follows priority where the cells leave no choice: a
/// bonus job alone on one node with no guaranteed work, that fits the guarantee in place of
/// one lower-priority guaranteed job of its VC (and not beside it) alone among the
/// guaranteed jobs on a node of the same size, is not bonus. Swapping them binds one node
/// and leaves the other clean, so every cell stays as obtainable as it was (issue 49: the
/// promotion was refused because the cells were built from last cycle's standing, and
/// another VC's reclaim took the high-priority job). `held` as in
/// `check_bonus_follows_priority`: (id, priority, GPUs of the type, bonus).
fn check_cell_swaps(
    s: &Snapshot,
    d: &Decisions,
    fg: &FlavorGuarantee,
    held: &[(&str, i32, u32, bool)],
) -> Result<(), TestCaseError> {
    // the nodes of each running job
    let nodes_of = |id: &str| -> BTreeSet<&str> {
        s.jobs
            .iter()
            .filter(|j| j.id == id)
            .flat_map(|j| j.running.iter().flat_map(|r| &r.placement))
            .map(|p| p.node.as_str())
            .collect()
    };
    let guaranteed_on = |node: &str| -> Vec<&str> {
        s.jobs
            .iter()
            .filter(|j| j.running.as_ref().is_some_and(|r| !r.preempting))
            .filter(|j| !bonus_now(d, j) && nodes_of(&j.id).contains(node))
            .map(|j| j.id.as_str())
            .chain(
                d.admissions
                    .iter()
                    .filter(|a| !a.bonus && a.placement.iter().any(|p| p.node == node))
                    .map(|a| a.job.as_str()),
            )
            .collect()
    };
    let plain = |node: &str| {
        s.nodes.iter().find(|n| n.name == node).filter(|n| {
            n.schedulable
                && n.unhealthy_gpus.is_empty()
                && n.foreign.gpus == 0
                && n.flavor == fg.flavor
        })
    };
    let used: u32 = held.iter().filter(|h| !h.3).map(|h| h.2).sum();
    let admitted = |id: &str| d.admission(id).is_some();
    for &(id, priority, gpus, _) in held.iter().filter(|h| h.3 && !admitted(h.0)) {
        let on = nodes_of(id);
        let Some(n) = on
            .iter()
            .next()
            .filter(|_| on.len() == 1)
            .and_then(|n| plain(n))
        else {
            continue;
        };
        if used + gpus <= fg.gpus || !guaranteed_on(&n.name).is_empty() {
            continue;
        }
        let swap = held.iter().find(|l| {
            let lon = nodes_of(l.0);
            !l.3 && !admitted(l.0)
                && l.1 < priority
                && used - l.2 + gpus <= fg.gpus
                && lon.len() == 1
                && lon.iter().next().and_then(|m| plain(m)).is_some_and(|m| {
                    m.allocatable.gpus == n.allocatable.gpus && guaranteed_on(&m.name) == [l.0]
                })
        });
        prop_assert!(
            swap.is_none(),
            "bonus {} (priority {}) would take the guarantee of {:?} with cells: {:?}\n{:?}",
            id,
            priority,
            swap,
            d,
            s
        );
    }
    Ok(())
}

fn at_risk(d: &Decisions, vc: &str) -> bool {
    d.usage
        .virtual_clusters
        .get(vc)
        .is_some_and(|u| u.flavors.values().any(|f| f.at_risk.is_some()))
}

/// A guarantee is reported at risk only with a shortfall, never beyond what is usable, and
/// never while the cluster is whole (every node there, healthy and schedulable: the
/// generated guarantees fit it).
fn check_risk(s: &Snapshot, d: &Decisions, whole: bool) -> Result<(), TestCaseError> {
    for (name, u) in &d.usage.virtual_clusters {
        for (flavor, f) in &u.flavors {
            let Some(r) = &f.at_risk else { continue };
            prop_assert!(
                !whole,
                "{} at risk on the whole cluster: {:?}\n{:?}",
                name,
                r,
                s
            );
            prop_assert_eq!(&r.flavor, flavor);
            prop_assert!(r.obtainable_gpus <= r.usable_gpus.min(r.guaranteed_gpus));
            let short = r.obtainable_gpus < r.guaranteed_gpus
                || r.cells.iter().any(|c| c.obtainable < c.guaranteed);
            prop_assert!(short, "{} at risk without a shortfall: {:?}", name, r);
        }
    }
    Ok(())
}

/// The nodes after `event`, and the nodes gone.
fn lose_node(nodes: &[Node], event: Option<(usize, NodeEvent)>) -> (Vec<Node>, Option<String>) {
    let mut nodes = nodes.to_vec();
    let Some((i, event)) = event else {
        return (nodes, None);
    };
    if nodes.len() <= 1 {
        return (nodes, None);
    }
    let i = i % nodes.len();
    let n = &mut nodes[i];
    match event {
        NodeEvent::Drain => {
            n.schedulable = false;
            n.draining = true;
        }
        NodeEvent::Cordon => n.schedulable = false,
        NodeEvent::Uncordon => {
            n.schedulable = true;
            n.draining = false;
        }
        NodeEvent::Gone => {
            let name = nodes.remove(i).name;
            return (nodes, Some(name));
        }
    }
    (nodes, None)
}

/// The next cycle's snapshot: admissions run, promotions lose their bonus, victims
/// checkpoint (preempting), jobs that were preempting are back in their queue, some
/// running jobs complete, new jobs arrive, a node may be lost (jobs on a node gone go back
/// to their queue, as the lifecycle retries them).
fn advance(
    s: &Snapshot,
    d: &Decisions,
    arrivals: &[JobSpec],
    done: &[bool],
    event: Option<(usize, NodeEvent)>,
    step: usize,
) -> Snapshot {
    let now = s.now + 100;
    let victims: BTreeSet<&str> = d.victims().collect();
    let (nodes, gone) = lose_node(&s.nodes, event);
    let mut jobs = Vec::new();
    let mut k = 0;
    for j in &s.jobs {
        let mut j = j.clone();
        if let Some(a) = d.admission(&j.id) {
            j.running = Some(Running {
                placement: a.placement.clone(),
                bonus: a.bonus,
                started_at: s.now,
                last_checkpoint: None,
                checkpoint_grace_seconds: 30,
                min_runtime_seconds: 0,
                preempting: false,
                checkpoint_request: None,
            });
        } else if let Some(r) = &mut j.running {
            if r.preempting {
                j.running = None;
                j.preemptions += 1;
            } else {
                k += 1;
                if done[k % done.len()] {
                    continue; // completed
                }
                r.preempting = victims.contains(j.id.as_str());
                if d.promotions.contains(&j.id) {
                    r.bonus = false;
                }
                if d.demotions.contains(&j.id) {
                    r.bonus = true;
                }
            }
        }
        let on_gone = j.running.as_ref().is_some_and(|r| {
            r.placement
                .iter()
                .any(|p| gone.as_deref() == Some(p.node.as_str()))
        });
        if on_gone {
            j.running = None;
            j.retries += 1;
        }
        jobs.push(j);
    }
    for (i, a) in arrivals.iter().enumerate() {
        jobs.push(make_job(format!("ns/s{step}-{i}"), a, now + i as i64));
    }
    snapshot(
        now,
        nodes,
        s.virtual_clusters.clone(),
        s.queues.clone(),
        jobs,
    )
}

proptest! {
    #![proptest_config(cases(10_000))]

    /// Over short histories (arrivals, admissions that run, completions, preemptions that
    /// finish and send their victims back to the queue, promotions, nodes drained, cordoned,
    /// uncordoned or gone) on clusters with node cells and limits, after every cycle: no GPU
    /// given twice, victims legitimate, no VC above its limit, bonus jobs each VC's least
    /// important ones, (without cells) every VC below
    /// its guarantee that is not at risk with a fitting pending job gets an admission or a
    /// reclaim plan, and no guarantee is at risk while no node was lost.
    #[test]
    fn invariants_hold_through_histories(w in history_world()) {
        let mut s = snapshot(1000, w.nodes.clone(), w.vcs.clone(), w.queues.clone(), vec![]);
        let mut d = Decisions::default();
        let mut whole = true;
        for (step, (arrivals, done, event)) in w.steps.iter().enumerate() {
            s = advance(&s, &d, arrivals, done, *event, step);
            whole &= event.is_none();
            d = schedule(&s);
            check_invariants(&s, &d)?;
            check_guarantees(&s, &d)?;
            check_bonus_follows_priority(&s, &d)?;
            check_risk(&s, &d, whole)?;
        }
    }
}

/// A team on 1–3 full 8-GPU nodes whose guarantee is every GPU, split between three queues
/// with firm shares (adding up to at most 100 %), running jobs of 1, 2 or 4 GPUs in any of
/// them and jobs waiting (queue, GPUs, priority).
#[derive(Clone, Debug)]
struct ShareWorld {
    nodes: u32,
    shares: [u32; 3],
    running: Vec<(usize, u32, i32, i64)>,
    /// Per running job, the node it goes to first (first fit when it does not fit there or
    /// none is given): scattered jobs leave free GPUs scattered.
    node_pick: Vec<u32>,
    pending: Vec<(usize, u32, i32)>,
    /// GPUs of the cluster outside the team's guarantee (at most all but one).
    unguaranteed: u32,
    /// Another team's jobs (GPUs, node picked), with no guarantee: bonus, placed after the
    /// team's own, where they fit.
    borrowers: Vec<(u32, u32)>,
}

fn share_world_s() -> impl Strategy<Value = ShareWorld> {
    let job = (
        0usize..3,
        prop_oneof![Just(1u32), Just(2), Just(4)],
        0i32..3,
    );
    (
        1u32..4,
        (0u32..=100, 0u32..=100, 0u32..=100),
        prop::collection::vec((job.clone(), 0i64..3000), 1..16),
        prop::collection::vec(job, 1..8),
        prop::collection::vec(0u32..3, 0..16),
        prop_oneof![Just(0u32), Just(2), Just(4), Just(8)],
        prop::collection::vec((prop_oneof![Just(1u32), Just(2)], 0u32..3), 0..4),
    )
        .prop_map(
            |(nodes, (a, b, c), running, pending, node_pick, unguaranteed, borrowers)| {
                let a = a.min(100);
                let b = b.min(100 - a);
                let c = c.min(100 - a - b);
                ShareWorld {
                    nodes,
                    shares: [a, b, c],
                    running: running
                        .into_iter()
                        .map(|((q, g, p), age)| (q, g, p, age))
                        .collect(),
                    node_pick,
                    pending,
                    unguaranteed: unguaranteed.min(8 * nodes - 1),
                    borrowers,
                }
            },
        )
}

/// Applies a cycle's decisions at once: admissions run, victims are back in their queues.
fn apply(s: &mut Snapshot, d: &Decisions) {
    let gone: BTreeSet<&str> = d.victims().collect();
    for j in &mut s.jobs {
        if gone.contains(j.id.as_str()) {
            j.running = None;
        } else if let Some(a) = d.admission(&j.id) {
            *j = run_admitted(j.clone(), a, s.now);
        }
    }
    s.now += 100;
}

/// Every queue-share preemption takes from queue lines only what they use beyond their share,
/// for a job that then runs within its share. Usage is the cycle's as the plan saw it: the
/// running jobs, the cycle's admissions (phases 1 and 2 come before any plan), and the plans
/// before it (victims off, beneficiaries on).
fn check_share_plans(s: &Snapshot, d: &Decisions) -> Result<(), TestCaseError> {
    let ent = |q: &str| -> u64 {
        let share = s.queues.iter().find(|x| x.name == q).map_or(0, |x| x.share);
        s.virtual_clusters[0].guarantee[0].gpus as u64 * 1000 * u64::from(share) / 100
    };
    let jobs: BTreeMap<&str, &Job> = s.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let mut used: BTreeMap<&str, u64> = BTreeMap::new();
    for j in &s.jobs {
        if j.running.is_some() || d.admission(&j.id).is_some() {
            *used.entry(j.queue.as_str()).or_insert(0) += j.gpu_milli();
        }
    }
    let used_of = |used: &BTreeMap<&str, u64>, q: &str| used.get(q).copied().unwrap_or(0);
    let team = &s.virtual_clusters[0].name;
    let of_team = |q: &str| {
        s.queues
            .iter()
            .any(|x| x.name == q && &x.virtual_cluster == team)
    };
    // a plan that also reclaims another team's bonus jobs is recorded as two preemptions
    // for one beneficiary
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    for p in &d.preemptions {
        let b = jobs[p
            .beneficiary
            .job()
            .expect("every preemption here is for a job")];
        let mut freed: BTreeMap<&str, u64> = BTreeMap::new();
        for v in &p.victims {
            *freed.entry(jobs[v.as_str()].queue.as_str()).or_insert(0) +=
                jobs[v.as_str()].gpu_milli();
        }
        if p.reason == PreemptionReason::QueueShare {
            prop_assert!(
                used_of(&used, &b.queue) + b.gpu_milli() <= ent(&b.queue),
                "{} beyond its share once it runs",
                b.id
            );
            for (&q, &sum) in freed.iter().filter(|(q, _)| of_team(q)) {
                prop_assert!(
                    sum <= used_of(&used, q).saturating_sub(ent(q)),
                    "queue {} loses {} milli-GPUs of its share for {}",
                    q,
                    sum,
                    b.id
                );
            }
        }
        for (q, sum) in freed {
            *used.entry(q).or_insert(0) -= sum;
        }
        if placed.insert(b.id.as_str()) {
            *used.entry(b.queue.as_str()).or_insert(0) += b.gpu_milli();
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(1000))]

    /// Queue shares taken back and consolidations settle: with no job ending, a team whose
    /// queues' shares are firm stops preempting within a few cycles (no victim takes its
    /// share back in turn, no moved job moves back), and every plan on the way is
    /// legitimate.
    #[test]
    fn queue_share_reclaims_settle(w in share_world_s()) {
        check_share_world(&w)?;
    }
}

/// The team of a [`ShareWorld`], its running jobs placed, its waiting jobs queued.
fn share_snapshot(w: &ShareWorld) -> Snapshot {
    let nodes: Vec<Node> = (0..w.nodes)
        .map(|i| node(&format!("n{i}"), "A100", 8, None))
        .collect();
    let queues: Vec<Queue> = (0..3)
        .map(|i| {
            let mut q = queue(&format!("s{i}"), "t");
            q.share = w.shares[i];
            q
        })
        .collect();
    // running jobs on their picked node, else first fit, as long as they fit
    let mut free: Vec<u32> = vec![0; w.nodes as usize];
    let mut jobs = Vec::new();
    for (k, &(q, g, prio, age)) in w.running.iter().enumerate() {
        let picked = w
            .node_pick
            .get(k)
            .map(|&n| (n % w.nodes) as usize)
            .filter(|&n| free[n] + g <= 8);
        let Some(n) = picked.or_else(|| free.iter().position(|&used| used + g <= 8)) else {
            continue;
        };
        let gpus: Vec<u32> = (free[n]..free[n] + g).collect();
        free[n] += g;
        jobs.push(run(
            pjob(&format!("t/r{k}"), &format!("s{q}"), 1, g, prio),
            &[(&format!("n{n}"), &gpus)],
            false,
            0,
            Some(4000 - age),
        ));
    }
    for (k, &(g, pick)) in w.borrowers.iter().enumerate() {
        let n = (pick % w.nodes) as usize;
        let Some(n) = Some(n)
            .filter(|&n| free[n] + g <= 8)
            .or_else(|| free.iter().position(|&used| used + g <= 8))
        else {
            continue;
        };
        let gpus: Vec<u32> = (free[n]..free[n] + g).collect();
        free[n] += g;
        jobs.push(run(
            pjob(&format!("o/b{k}"), "o", 1, g, 0),
            &[(&format!("n{n}"), &gpus)],
            true,
            0,
            Some(3000),
        ));
    }
    for (k, &(q, g, prio)) in w.pending.iter().enumerate() {
        let mut j = pjob(&format!("t/p{k}"), &format!("s{q}"), 1, g, prio);
        j.queued_at = k as i64;
        jobs.push(j);
    }
    let mut queues = queues;
    queues.push(queue("o", "o"));
    snapshot(
        4000,
        nodes,
        vec![
            vc("t", "A100", 8 * w.nodes - w.unguaranteed),
            vc("o", "A100", 0),
        ],
        queues,
        jobs,
    )
}

fn check_share_world(w: &ShareWorld) -> Result<(), TestCaseError> {
    let mut s = share_snapshot(w);
    let mut last = Decisions::default();
    for _ in 0..12 {
        last = schedule(&s);
        check_invariants(&s, &last)?;
        check_share_plans(&s, &last)?;
        apply(&mut s, &last);
    }
    prop_assert!(
        last.preemptions.is_empty(),
        "still preempting after 12 cycles: {:?}",
        last.preemptions
    );
    Ok(())
}

/// Found by `queue_share_reclaims_settle`: the jobs that lose the least are of a queue
/// barely beyond its share, so the cheapest victims break the share rule and the cost order
/// found no set. The victim search then gave up, and the job waited until time made another
/// job the cheapest (11 cycles here). The search now tries its other orders whatever the
/// first found, and a job larger than what its queue uses beyond its share is no candidate.
#[test]
fn queue_share_plan_passes_over_the_cheapest_victims_when_they_break_the_share() {
    let w = ShareWorld {
        nodes: 3,
        shares: [30, 0, 25],
        running: vec![
            (1, 4, 0, 92),
            (2, 1, 0, 0),
            (0, 2, 0, 151),
            (1, 2, 0, 151),
            (0, 2, 0, 151),
            (1, 1, 0, 1302),
            (1, 1, 0, 1302),
            (1, 4, 0, 76),
            (0, 1, 0, 1302),
            (1, 1, 0, 1302),
            (1, 1, 2, 0),
            (0, 4, 0, 0),
        ],
        node_pick: vec![],
        pending: vec![(2, 1, 0)],
        unguaranteed: 0,
        borrowers: vec![],
    };
    check_share_world(&w).unwrap();
}

/// Found by `queue_share_reclaims_settle`: a queue-share plan exists (two small jobs of one
/// sibling, one of another), but every victim order the search tried put one job too many
/// of a sibling in the set early, and adding more never mended it; the job waited until
/// time reordered the candidates (12 cycles). Victims that no set could include are now
/// passed over (`reclaim::Credit::Never`), and the plan is found at once.
#[test]
fn queue_share_plan_passes_over_victims_no_set_can_take() {
    let w = ShareWorld {
        nodes: 2,
        shares: [75, 1, 13],
        running: vec![
            (2, 1, 0, 0),
            (1, 2, 0, 397),
            (2, 2, 0, 0),
            (0, 4, 0, 0),
            (0, 2, 0, 0),
            (1, 2, 0, 358),
            (2, 1, 0, 1816),
            (1, 1, 0, 1716),
        ],
        node_pick: vec![0, 0, 0, 0, 2, 0, 1],
        pending: vec![(0, 4, 0)],
        unguaranteed: 0,
        borrowers: vec![],
    };
    let s = share_snapshot(&w);
    let d = schedule(&s);
    assert!(
        d.preemptions
            .iter()
            .any(|p| p.reason == PreemptionReason::QueueShare && p.beneficiary == "t/p0"),
        "{d:?}"
    );
    check_share_world(&w).unwrap();
}

/// Found by `queue_share_reclaims_settle` once its team could run beyond its guarantee: a
/// plan judged the job within the guarantee beside the team's guaranteed jobs only. The next
/// cycle filled the freed guarantee with the team's bonus jobs and the victims came back in
/// phase 1 ahead of the job, beyond it now; two plans alternated for ever. The job must now
/// fit beside all of the team's running jobs.
#[test]
fn queue_share_plan_counts_the_teams_bonus_jobs() {
    let w = ShareWorld {
        nodes: 3,
        shares: [1, 68, 0],
        running: vec![
            (2, 2, 1, 843),
            (0, 2, 0, 813),
            (0, 2, 0, 0),
            (0, 4, 1, 407),
            (0, 1, 0, 0),
            (0, 1, 0, 0),
            (0, 1, 0, 0),
            (0, 4, 0, 422),
            (0, 4, 0, 422),
            (0, 1, 0, 0),
            (0, 2, 0, 1),
        ],
        node_pick: vec![1],
        pending: vec![(0, 2, 0), (1, 1, 0), (1, 4, 0)],
        unguaranteed: 2,
        borrowers: vec![],
    };
    check_share_world(&w).unwrap();
}

/// Found by `queue_share_reclaims_settle` with another team borrowing: two 1-GPU jobs of
/// queue s0 reclaimed the borrower, and with them charged s0 looked 4.96 GPUs beyond its
/// share, so a plan took s0's 4-GPU job for s1's. In the next cycle all three s0 jobs waited
/// again, s0 and s1 tied at nothing used, and the victim came back first (FIFO in s0, s0
/// first on the tie). A job waiting on a plan now holds nothing of its queue's share.
#[test]
fn queue_share_counts_only_jobs_that_run_next_cycle() {
    let w = ShareWorld {
        nodes: 1,
        shares: [13, 50, 0],
        running: vec![(0, 4, 0, 0), (2, 2, 0, 0)],
        node_pick: vec![],
        pending: vec![(1, 4, 0), (0, 1, 0), (0, 1, 0)],
        unguaranteed: 0,
        borrowers: vec![(2, 0)],
    };
    let s = share_snapshot(&w);
    assert!(
        !schedule(&s)
            .preemptions
            .iter()
            .any(|p| p.reason == PreemptionReason::QueueShare),
        "no queue-share plan while s0's jobs only wait on a reclaim"
    );
    check_share_world(&w).unwrap();
}

/// A job's types (of `["A100", "H100", "V100"]`; no node has V100) by the bits of `mask`,
/// in the order `turn` picks: reversed when its lowest bit is set, then rotated by the rest.
fn listed_types(mask: u8, turn: u8) -> Vec<Flavor> {
    let mut types: Vec<Flavor> = ["A100", "H100", "V100"]
        .iter()
        .enumerate()
        .filter(|&(i, _)| mask & (1 << i) != 0)
        .map(|(_, f)| Flavor::new(*f))
        .collect();
    if turn & 1 == 1 {
        types.reverse();
    }
    if !types.is_empty() {
        let k = usize::from(turn >> 1) % types.len();
        types.rotate_left(k);
    }
    types
}

proptest! {
    #![proptest_config(cases(1000))]

    /// A job's list of acceptable GPU types is a set (issue 56): pending jobs that list
    /// several types get the same decisions, whatever the order they list them in.
    #[test]
    fn order_of_accepted_types_never_changes_a_decision(
        w in world(false),
        lists in prop::collection::vec((0u8..8, any::<u8>()), 10),
    ) {
        let s = build(&w);
        let listed = |turns: bool| {
            let mut s = s.clone();
            for (j, &(mask, turn)) in s.jobs.iter_mut().filter(|j| j.running.is_none()).zip(&lists) {
                if mask.count_ones() >= 2 {
                    j.gpu_types = listed_types(mask, if turns { turn } else { 0 });
                }
            }
            s
        };
        let (written, turned) = (listed(false), listed(true));
        let d = schedule(&written);
        check_invariants(&written, &d)?;
        prop_assert_eq!(schedule(&turned), d);
    }
}
