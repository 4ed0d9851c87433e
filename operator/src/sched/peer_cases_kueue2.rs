//! A fourth set of peer test cases, all Kueue's, ported onto kubetrain's model: victim
//! choice when a queue is exhausted, reclaim against priority preemption, several
//! preemptions in one cycle, GPU type fallback around preemption, and strict queues. Sources:
//! `pkg/scheduler/preemption/preemption_test.go` (TestPreemption, TestCandidatesOrdering),
//! `preemption_fair_test.go`, `pkg/scheduler/scheduler_test.go` (TestSchedule),
//! `scheduler_fs_test.go`, `flavorassigner/flavorassigner_test.go`
//! (TestReclaimBeforePriorityPreemption) and the StrictFIFO specs of
//! `test/integration/singlecluster/scheduler/{scheduler,preemption}_test.go`. None repeats a
//! case of `peer_cases`, `peer_cases_admission` or `peer_cases_topology`.
//!
//! Mapping, as in the other sets: a ClusterQueue's nominal quota is a VirtualCluster
//! guarantee (per ResourceFlavor = GPU type), cohort borrowing is bonus, a borrowing limit or
//! a ClusterQueue without a cohort is a VC limit, `withinClusterQueue: LowerPriority` is a
//! queue with priority preemption (`pqueue`), `reclaimWithinCohort` is reclaim, a
//! `StrictFIFO` ClusterQueue is a strict queue. CPUs of Kueue's cases are GPUs here; a
//! running workload is a job holding GPUs, within its VC's guarantee or bonus as kubetrain's
//! priority-ordered fill would make it.
//!
//! Where kubetrain decides differently on purpose (a rule of `docs/concepts.md`,
//! `docs/reclaim.md` or the `sched` docs), the test asserts kubetrain's behaviour, cites the
//! rule and ends in `_differs`. Where a user would call kubetrain's decision wrong, the test
//! keeps Kueue's expectation and is `#[ignore]`d with the reason: "minimal preemptions when
//! target queue is exhausted" found that a plan combining a queue's lower-priority jobs
//! judges whether the job then runs within its guarantee by the jobs' current standing, not
//! by the priority-ordered fill the next cycle applies (`cycle.rs`, `preempt`, `credit`), so
//! it evicts a higher-priority job and spares a lower one.

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Every running job checkpointed here, so jobs lose the same work per GPU unless a case
/// says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);

/// A running job of one replica of `gpus.len()` GPUs on `node`.
fn on(id: &str, queue: &str, prio: i32, node: &str, gpus: &[u32], bonus: bool) -> Job {
    run(
        pjob(id, queue, 1, gpus.len() as u32, prio),
        &[(node, gpus)],
        bonus,
        0,
        CKPT,
    )
}

/// A running gang of 1-GPU replicas, `n` of them on each `(node, first GPU, n)`.
fn gang_on(id: &str, queue: &str, prio: i32, places: &[(&str, u32, u32)], bonus: bool) -> Job {
    let gpus: Vec<Vec<u32>> = places
        .iter()
        .flat_map(|&(_, first, n)| (first..first + n).map(|g| vec![g]))
        .collect();
    let nodes: Vec<&str> = places
        .iter()
        .flat_map(|&(node, _, n)| std::iter::repeat_n(node, n as usize))
        .collect();
    let at: Vec<(&str, &[u32])> = nodes
        .iter()
        .zip(gpus.iter())
        .map(|(n, g)| (*n, g.as_slice()))
        .collect();
    run(
        pjob(id, queue, at.len() as u32, 1, prio),
        &at,
        bonus,
        0,
        CKPT,
    )
}

/// `j` accepting only `types`, most preferred first.
fn typed(mut j: Job, types: &[&str]) -> Job {
    j.gpu_types = types.iter().map(|t| Flavor::new(*t)).collect();
    j
}

/// `j` queued at `at`.
fn at(mut j: Job, at: i64) -> Job {
    j.queued_at = at;
    j
}

/// A VirtualCluster guaranteed `(type, GPUs)` of each type.
fn vc_types(name: &str, types: &[(&str, u32)]) -> VirtualCluster {
    let mut v = vc(name, "", 0);
    v.guarantee = types
        .iter()
        .map(|&(f, gpus)| FlavorGuarantee {
            flavor: Flavor::new(f),
            gpus,
            cells: vec![],
        })
        .collect();
    v
}

fn limited(mut v: VirtualCluster, limit: u32) -> VirtualCluster {
    v.limit_gpus = Some(limit);
    v
}

fn strict(mut q: Queue, policy: QueuePolicy) -> Queue {
    q.strict = true;
    q.policy = policy;
    q
}

/// The GPU type of every victim's node, for cases on several types.
fn flavor_of_victims(d: &Decisions, snap: &Snapshot) -> Vec<String> {
    let mut out: Vec<String> = d
        .victims()
        .map(|v| {
            let j = snap.jobs.iter().find(|j| j.id == v).expect("victim");
            let node = &j.running.as_ref().expect("running").placement[0].node;
            let n = snap.nodes.iter().find(|n| &n.name == node).expect("node");
            n.flavor.0.clone()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

// ---------------------------------------------------------------------------------------
// pkg/scheduler/preemption/preemption_test.go, TestPreemption
// ---------------------------------------------------------------------------------------

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "only preempt workloads using the
/// chosen flavor": a team guaranteed 3 GPUs of each of two types; the higher-priority job
/// asks for the second type, so only the lower-priority job on that type is preempted, never
/// the lowest-priority job, which runs on the other type and would free nothing useful.
#[test]
fn kueue_only_preempt_workloads_using_the_chosen_flavor() {
    let jobs = vec![
        on("t/low", "q", -1, "a0", &[0, 1], false),
        on("t/mid", "q", 0, "b0", &[0], false),
        on("t/high", "q", 1, "b0", &[1], false),
        typed(pjob("t/in", "q", 1, 2, 1), &["beta"]),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("a0", "alpha", 3, None), node("b0", "beta", 3, None)],
        vec![vc_types("t", &[("alpha", 3), ("beta", 3)])],
        vec![pqueue("q", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["t/mid"]), "{d:?}");
    assert_eq!(reason_of(&d, "t/mid"), Some(PreemptionReason::Priority));
}

/// Kueue's cohort of `c1` and `c2`, 6 GPUs guaranteed each, on one 12-GPU node; both queues
/// preempt by priority.
fn cohort_c1_c2(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 12, None)],
        vec![vc("c1", "A100", 6), vc("c2", "A100", 6)],
        vec![pqueue("q1", "c1"), pqueue("q2", "c2")],
        jobs,
    ))
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "do not reclaim borrowed quota
/// from same priority for withinCohort=ReclaimFromLowerPriority": c1 holds 2 of its 6, c2
/// borrows 2 beyond its 6 with jobs of the same priority as c1's incoming 4-GPU job; Kueue
/// (reclaim limited to lower priorities) preempts nobody. Deliberate difference: a guarantee
/// is obtainable within the borrowers' grace period whatever their priority
/// (docs/concepts.md, VirtualCluster, "Guarantee"; "Checkpoint-aware preemption": a reclaim
/// takes bonus jobs by lost work, priority only breaks ties), so c2's bonus job is reclaimed.
#[test]
fn kueue_reclaims_borrowed_quota_from_same_priority_differs() {
    let d = cohort_c1_c2(vec![
        on("c1/c1", "q1", 0, "n0", &[0, 1], false),
        on("c2/c2-1", "q2", 0, "n0", &[2, 3, 4, 5], false),
        on("c2/c2-2", "q2", 0, "n0", &[6, 7, 8, 9], true),
        pjob("c1/in", "q1", 1, 4, 0),
    ]);
    assert_eq!(victims(&d), strings(&["c2/c2-2"]), "{d:?}");
    assert_eq!(reason_of(&d, "c2/c2-2"), Some(PreemptionReason::Reclaim));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "preempt from all ClusterQueues
/// in cohort": c1 holds 5 of 6, c2 borrows 1; c1's 4-GPU job needs both c1's own
/// lower-priority job (3) and c2's borrowed lower-priority job (3): one plan takes both, and
/// c1 then ends within its guarantee (2 + 4 = 6).
#[test]
fn kueue_preempt_from_all_cluster_queues_in_cohort() {
    let d = cohort_c1_c2(vec![
        on("c1/low", "q1", -1, "n0", &[0, 1, 2], false),
        on("c1/mid", "q1", 0, "n0", &[3, 4], false),
        on("c2/low", "q2", -1, "n0", &[5, 6, 7], true),
        on("c2/mid", "q2", 0, "n0", &[8, 9, 10, 11], false),
        pjob("c1/in", "q1", 1, 4, 0),
    ]);
    assert_eq!(victims(&d), strings(&["c1/low", "c2/low"]), "{d:?}");
    assert_eq!(reason_of(&d, "c1/low"), Some(PreemptionReason::Priority));
    assert_eq!(reason_of(&d, "c2/low"), Some(PreemptionReason::Reclaim));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "use BorrowWithinCohort; only
/// preempt from CQ if no workloads below threshold and already above nominal": 13 GPUs,
/// `a_standard` borrows 10 of `shared`'s; `b_standard` (guaranteed 1) runs a priority-1 and
/// a priority-2 job. Its priority-3 job preempts its own priority-1 job, not the other
/// team's borrowed jobs (b is not below its guarantee, so nothing is reclaimed).
#[test]
fn kueue_borrow_within_cohort_preempts_only_in_its_own_queue() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 13, None)],
        vec![
            vc("a_standard", "A100", 1),
            vc("b_standard", "A100", 1),
            vc("a_best_effort", "A100", 1),
            vc("b_best_effort", "A100", 0),
            vc("shared", "A100", 10),
        ],
        vec![
            queue("qa", "a_standard"),
            pqueue("qb", "b_standard"),
            queue("qae", "a_best_effort"),
            queue("qbe", "b_best_effort"),
            queue("qs", "shared"),
        ],
        vec![
            on(
                "a/a_standard_1",
                "qa",
                1,
                "n0",
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                true,
            ),
            on("a/a_standard_2", "qa", 1, "n0", &[10], false),
            on("b/b_standard_1", "qb", 1, "n0", &[11], true),
            on("b/b_standard_2", "qb", 2, "n0", &[12], false),
            pjob("b/in", "qb", 1, 1, 3),
        ],
    ));
    assert_eq!(victims(&d), strings(&["b/b_standard_1"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "b/b_standard_1"),
        Some(PreemptionReason::Priority)
    );
}

/// Kueue's cohort of three ClusterQueues `a`, `b`, `c` guaranteed 2 GPUs each on one
/// 6-GPU node; `a` and `b` preempt by priority.
fn cohort_three(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 6, None)],
        vec![vc("a", "A100", 2), vc("b", "A100", 2), vc("c", "A100", 2)],
        vec![pqueue("qa", "a"), pqueue("qb", "b"), queue("qc", "c")],
        jobs,
    ))
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "preemptions from cq when target
/// queue is exhausted for the single requested resource", and pkg/scheduler/scheduler_test.go,
/// case "minimal preemptions when target queue is exhausted": a borrows 1 with jobs of
/// priorities -2, -2, -1; b borrows 1 with priority-0 jobs; a's priority-0 job of 2 GPUs
/// preempts a's two priority -2 jobs (the lowest, and no more than needed), nothing of b's.
/// It then runs within a's guarantee: it outranks the remaining priority -1 job, which the
/// priority-ordered fill demotes (docs/concepts.md, "Which jobs are bonus follows
/// priority"). kubetrain once preempted a1 and a3 instead, sparing a2: the same lost work, but
/// a priority -1 job evicted while a priority -2 job ran on (against "then the lowest
/// priority", docs/concepts.md, "Checkpoint-aware preemption"); its combined plan judged the
/// guarantee by the jobs' standing now, not as the next cycle's priority fill would.
#[test]
fn kueue_minimal_preemptions_when_target_queue_is_exhausted() {
    let d = cohort_three(vec![
        on("a/a1", "qa", -2, "n0", &[0], false),
        on("a/a2", "qa", -2, "n0", &[1], true),
        on("a/a3", "qa", -1, "n0", &[2], false),
        on("b/b1", "qb", 0, "n0", &[3], false),
        on("b/b2", "qb", 0, "n0", &[4], false),
        on("b/b3", "qb", 0, "n0", &[5], true),
        pjob("a/in", "qa", 1, 2, 0),
    ]);
    assert_eq!(victims(&d), strings(&["a/a1", "a/a2"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "allow preemption from other
/// cluster queues if target cq is not exhausted for the requested resource": a holds 1 of its
/// 2 with a priority -1 job, b borrows 3 (one of its jobs has priority -1); a's 2-GPU job
/// takes a's own lower-priority job and one GPU back from b, the lowest-priority borrower,
/// and then runs within a's guarantee.
#[test]
fn kueue_allow_preemption_from_other_cqs_if_target_is_not_exhausted() {
    let d = cohort_three(vec![
        on("a/a1", "qa", -1, "n0", &[0], false),
        on("b/b1", "qb", 0, "n0", &[1], false),
        on("b/b2", "qb", 0, "n0", &[2], false),
        on("b/b3", "qb", 0, "n0", &[3], true),
        on("b/b4", "qb", 0, "n0", &[4], true),
        on("b/b5", "qb", -1, "n0", &[5], true),
        pjob("a/in", "qa", 1, 2, 0),
    ]);
    assert_eq!(victims(&d), strings(&["a/a1", "b/b5"]), "{d:?}");
    assert_eq!(reason_of(&d, "a/a1"), Some(PreemptionReason::Priority));
    assert_eq!(reason_of(&d, "b/b5"), Some(PreemptionReason::Reclaim));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, TestCandidatesOrdering, case "evicted
/// workload first": a job already being evicted is the first candidate, so no other job is
/// preempted when its leaving makes the room. Here a lower-priority job already leaves (a
/// suspension); the higher-priority job waits for it and asks nobody else to checkpoint.
#[test]
fn kueue_evicted_workload_first() {
    let mut leaving = on("t/leaving", "q", -1, "n0", &[0, 1], false);
    leaving.running.as_mut().expect("running").preempting = true;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 6, None)],
        vec![vc("t", "A100", 6)],
        vec![pqueue("q", "t")],
        vec![
            leaving,
            on("t/low", "q", -1, "n0", &[2, 3], false),
            on("t/high", "q", 1, "n0", &[4, 5], false),
            pjob("t/in", "q", 1, 2, 1),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/in").is_none(), "{d:?}");
    match d.waiting_reason("t/in") {
        Some(WaitReason::WaitingForPreemption { victims, .. }) => {
            assert_eq!(victims, &strings(&["t/leaving"]));
        }
        r => panic!("t/in should wait for t/leaving, got {r:?}: {d:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// pkg/scheduler/preemption/preemption_fair_test.go, TestFairPreemptions
// ---------------------------------------------------------------------------------------

/// Kueue's `all` cohort of fair sharing: a, b and c guaranteed 3 GPUs each, on three
/// 3-GPU nodes; a and b preempt by priority.
fn fair_abc(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![
            node("n0", "A100", 3, None),
            node("n1", "A100", 3, None),
            node("n2", "A100", 3, None),
        ],
        vec![vc("a", "A100", 3), vc("b", "A100", 3), vc("c", "A100", 3)],
        vec![pqueue("qa", "a"), pqueue("qb", "b"), queue("qc", "c")],
        jobs,
    ))
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can reclaim from queue
/// using less, if taking the latest workload from user using the most isn't enough": a runs
/// 3 + 1 GPUs, b 2 + 3, c nothing; c's 3-GPU job takes Kueue's single victim a1 (3 GPUs).
/// Deliberate difference: reclaim victims are other teams' *bonus* jobs, and a team's
/// guarantee is filled by its most important jobs first, then by the work they would lose
/// (docs/concepts.md, "Guaranteed and bonus"): a1 is within a's guarantee, a's 1-GPU job and
/// b's 2-GPU job are the borrowed ones, and they share a node, so they go (the same lost work
/// as a1).
#[test]
fn kueue_fair_reclaim_takes_the_bonus_jobs_not_a_guaranteed_one_differs() {
    let d = fair_abc(vec![
        on("a/a1", "qa", 0, "n0", &[0, 1, 2], false),
        on("a/a2", "qa", 0, "n1", &[0], true),
        on("b/b1", "qb", 0, "n1", &[1, 2], true),
        on("b/b2", "qb", 0, "n2", &[0, 1, 2], false),
        job("c/in", "qc", 1, 3),
    ]);
    assert_eq!(victims(&d), strings(&["a/a2", "b/b1"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Reclaim)
    );
    let lost: u64 = d.preemptions.iter().map(|p| p.lost_gpu_seconds).sum();
    assert_eq!(lost, 3 * 1000, "as much work as a1 alone would lose");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can preempt lower priority
/// workloads from same CQ": a runs four 1-GPU jobs (two of priority -1) and borrows one; b
/// borrows two; a's 2-GPU job preempts a's two low-priority jobs and runs borrowing. Deliberate
/// difference: a job that would run beyond its VirtualCluster's guarantee may displace only
/// jobs that run as bonus too (docs/concepts.md, Queue, `priorityPreemption`: otherwise the
/// new bonus job could be reclaimed at once, and both runs would be lost). Only one of a's
/// low-priority jobs is bonus, which frees too little, so the job waits and nobody is
/// preempted.
#[test]
fn kueue_fair_preempt_lower_priority_in_same_cq_while_borrowing_differs() {
    let d = fair_abc(vec![
        on("a/a1_low", "qa", -1, "n0", &[0], false),
        on("a/a2_low", "qa", -1, "n0", &[1], true),
        on("a/a3", "qa", 0, "n0", &[2], false),
        on("a/a4", "qa", 0, "n1", &[0], false),
        on("b/b1", "qb", 0, "n1", &[1], false),
        on("b/b2", "qb", 0, "n1", &[2], false),
        on("b/b3", "qb", 0, "n2", &[0], false),
        on("b/b4", "qb", 0, "n2", &[1], true),
        on("b/b5", "qb", 0, "n2", &[2], true),
        pjob("a/in", "qa", 1, 2, 0),
    ]);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "forced to preempt within
/// clusterqueue because borrowing workload too important": a (guaranteed 5) runs three
/// priority -1 jobs; b (guaranteed 3) borrows 1 with a priority-100 4-GPU job; one GPU is
/// idle. a's 4-GPU job takes a's three low-priority jobs, ending within a's guarantee;
/// reclaiming b's job alone would leave a beyond its guarantee.
#[test]
fn kueue_fair_forced_to_preempt_within_cq_because_borrower_too_important() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None)],
        vec![vc("a", "A100", 5), vc("b", "A100", 3)],
        vec![pqueue("qa", "a"), queue("qb", "b")],
        vec![
            on("a/a1", "qa", -1, "n0", &[0], false),
            on("a/a2", "qa", -1, "n0", &[1], false),
            on("a/a3", "qa", -1, "n0", &[2], false),
            on("b/b1", "qb", 100, "n0", &[3, 4, 5, 6], true),
            pjob("a/in", "qa", 1, 4, 0),
        ],
    ));
    assert_eq!(victims(&d), strings(&["a/a1", "a/a2", "a/a3"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority)
    );
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "nominal first: workload
/// fitting within nominal can preempt despite high aggregate DRS": team a borrows five cheap
/// GPUs, yet its premium job within its premium guarantee takes back the premium GPU team b
/// borrows. Guarantees are per GPU type; borrowing of another type does not count.
#[test]
fn kueue_fair_nominal_first_can_reclaim_despite_borrowing_elsewhere() {
    let mut jobs = vec![
        on("a/a_prem1", "qa", 0, "p0", &[0], false),
        on("a/a_prem2", "qa", 0, "p0", &[1], false),
        on("b/b_prem1", "qb", 0, "p0", &[2], true),
    ];
    for g in 0..5u32 {
        jobs.push(on(&format!("a/a_cheap{g}"), "qa", 0, "c0", &[g], true));
    }
    jobs.push(typed(job("a/in", "qa", 1, 1), &["premium"]));
    let d = schedule(&snapshot(
        NOW,
        vec![node("p0", "premium", 3, None), node("c0", "cheap", 6, None)],
        vec![
            vc_types("a", &[("premium", 3)]),
            vc_types("b", &[("cheap", 6)]),
        ],
        vec![queue("qa", "a"), queue("qb", "b")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["b/b_prem1"]), "{d:?}");
    assert_eq!(reason_of(&d, "b/b_prem1"), Some(PreemptionReason::Reclaim));
}

// ---------------------------------------------------------------------------------------
// pkg/scheduler/scheduler_test.go, TestSchedule
// ---------------------------------------------------------------------------------------

/// Kueue pkg/scheduler/scheduler_test.go, case "preempt workloads in ClusterQueue and
/// cohort" (scaled by 1/10): eng-beta (5 on-demand) runs jobs of priorities -1 (3 GPUs) and
/// -2 (1 GPU); eng-alpha borrows 1 on-demand GPU with a 6-GPU job. eng-beta's 2-GPU job:
/// Kueue preempts the -2 job and reclaims alpha's borrower, so that beta ends at its
/// guarantee. Deliberate difference: a plan that takes the queue's lower-priority jobs and
/// other teams' bonus jobs, leaving the job within its guarantee, is chosen "by lost work
/// like any other" (docs/concepts.md, Queue, `priorityPreemption`; `sched` module docs,
/// step 5): the -1 job alone (3 GPUs of lost work) beats the -2 job with alpha's borrower
/// (7), and beta stays below its guarantee while alpha borrows.
#[test]
fn kueue_preempt_workloads_in_cluster_queue_and_cohort_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("od0", "on-demand", 10, None),
            node("sp0", "spot", 10, None),
        ],
        vec![
            vc_types("alpha", &[("on-demand", 5), ("spot", 10)]),
            vc_types("beta", &[("on-demand", 5)]),
        ],
        vec![queue("qa", "alpha"), pqueue("qb", "beta")],
        vec![
            on(
                "alpha/use-all-spot",
                "qa",
                0,
                "sp0",
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                false,
            ),
            on("alpha/borrower", "qa", 0, "od0", &[0, 1, 2, 3, 4, 5], true),
            on("beta/low-1", "qb", -1, "od0", &[6, 7, 8], false),
            on("beta/low-2", "qb", -2, "od0", &[9], false),
            typed(pjob("beta/preemptor", "qb", 1, 2, 0), &["on-demand"]),
        ],
    ));
    assert_eq!(victims(&d), strings(&["beta/low-1"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "beta/low-1"),
        Some(PreemptionReason::Priority)
    );
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple CQs need preemption": other-alpha
/// (guaranteed 5, limit 10) runs a 10-GPU job that borrows 5; other-beta's 1-GPU job within
/// its guarantee reclaims it whole, and other-alpha's next job preempts nothing. Kueue has it
/// wait on its limit (the job being reclaimed still holds it). In kubetrain both teams use
/// none of their guarantee, so beta's job, waiting longer, goes first; once its reclaim
/// counts alpha's job as leaving, alpha's next job, within its guarantee, waits for the room
/// that job frees: the same outcome, said as what it waits for.
#[test]
fn kueue_multiple_cqs_need_preemption() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 5, None), node("n1", "A100", 5, None)],
        vec![
            limited(vc("other-alpha", "A100", 5), 10),
            limited(vc("other-beta", "A100", 5), 6),
        ],
        vec![queue("qa", "other-alpha"), pqueue("qb", "other-beta")],
        vec![
            gang_on(
                "alpha/use-all",
                "qa",
                0,
                &[("n0", 0, 5), ("n1", 0, 5)],
                true,
            ),
            at(pjob("beta/preemptor", "qb", 1, 1, -1), 0),
            at(pjob("alpha/pending", "qa", 1, 1, 1), 1),
        ],
    ));
    assert_eq!(victims(&d), strings(&["alpha/use-all"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "alpha/use-all"),
        Some(PreemptionReason::Reclaim)
    );
    assert!(
        waits_with(&d, "beta/preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
    assert!(
        waits_with(&d, "alpha/pending", "WaitingForPreemption"),
        "{d:?}"
    );
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple preemptions without borrowing": two
/// teams, each full within its guarantee of 2, each with a high-priority 2-GPU job: both
/// preempt their own lower-priority job in the same cycle.
#[test]
fn kueue_multiple_preemptions_without_borrowing() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 4, None)],
        vec![vc("alpha", "A100", 2), vc("beta", "A100", 2)],
        vec![pqueue("qa", "alpha"), pqueue("qb", "beta")],
        vec![
            on("alpha/a1", "qa", 0, "n0", &[0, 1], false),
            on("beta/b1", "qb", 0, "n0", &[2, 3], false),
            pjob("alpha/preemptor", "qa", 1, 2, 100),
            pjob("beta/preemptor", "qb", 1, 2, 100),
        ],
    ));
    assert_eq!(victims(&d), strings(&["alpha/a1", "beta/b1"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority)
    );
    assert!(waits_with(&d, "alpha/preemptor", "WaitingForPreemption"));
    assert!(waits_with(&d, "beta/preemptor", "WaitingForPreemption"));
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple preemptions skip preemption when
/// shared limited resource": two teams each run a 2-GPU job and want a 3-GPU one; one GPU is
/// idle, so only one of them can fit even if both preempt: Kueue preempts for one and skips
/// the other, "no wasteful preemption". In Kueue the 3-GPU jobs borrow the idle GPU; kubetrain
/// would refuse that outright (evicting guaranteed work for bonus work,
/// `peer_cases::kueue_preemption_only_within_nominal_quota`), so here each team is guaranteed
/// 3 (an overcommitted cluster) and the question is Kueue's: the idle GPU serves one plan.
#[test]
fn kueue_multiple_preemptions_skip_preemption_when_shared_limited_resource() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 5, None)],
        vec![vc("alpha", "A100", 3), vc("beta", "A100", 3)],
        vec![pqueue("qa", "alpha"), pqueue("qb", "beta")],
        vec![
            on("alpha/a1", "qa", 0, "n0", &[0, 1], false),
            on("beta/b1", "qb", 0, "n0", &[2, 3], false),
            at(pjob("alpha/preemptor", "qa", 1, 3, 100), 0),
            at(pjob("beta/pretending-preemptor", "qb", 1, 3, 99), 1),
        ],
    ));
    // alpha's job has waited longer (Kueue: it has the higher priority)
    assert_eq!(victims(&d), strings(&["alpha/a1"]), "one plan only: {d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(
        !waits_with(&d, "beta/pretending-preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// Kueue's `other` cohort with two types: alpha guaranteed 10 on-demand and 10 spot, beta
/// nothing; alpha's queue preempts by priority.
fn two_types(jobs: Vec<Job>) -> (Snapshot, Decisions) {
    let snap = snapshot(
        NOW,
        vec![
            node("od0", "on-demand", 10, None),
            node("sp0", "spot", 10, None),
        ],
        vec![
            vc_types("alpha", &[("on-demand", 10), ("spot", 10)]),
            vc("beta", "", 0),
        ],
        vec![pqueue("qa", "alpha"), queue("qb", "beta")],
        jobs,
    );
    let d = schedule(&snap);
    (snap, d)
}

/// Kueue pkg/scheduler/scheduler_test.go, case "prefer first preemption flavor when second
/// flavor requires both reclaim and cq priority preemption": a 6-GPU job of alpha needs one
/// own job preempted on on-demand, or its own job and beta's borrower on spot: the first
/// type, one victim.
#[test]
fn kueue_prefer_first_preemption_flavor_when_second_needs_reclaim_too() {
    let (snap, d) = two_types(vec![
        on("alpha/a1", "qa", 50, "od0", &[0, 1, 2, 3, 4], false),
        on("alpha/a2", "qa", 50, "sp0", &[0, 1, 2, 3, 4], false),
        on("beta/b1", "qb", 50, "sp0", &[5, 6, 7, 8, 9], true),
        typed(
            pjob("alpha/preemptor", "qa", 1, 6, 100),
            &["on-demand", "spot"],
        ),
    ]);
    assert_eq!(victims(&d), strings(&["alpha/a1"]), "{d:?}");
    assert_eq!(flavor_of_victims(&d, &snap), strings(&["on-demand"]));
}

/// Kueue pkg/scheduler/scheduler_test.go, case "prefer first preemption flavor when second
/// flavor also requires cq preemption": on spot, alpha's 5-GPU job fits its guarantee but
/// beta's borrower has priority 9001, which Kueue's `reclaimWithinCohort: LowerPriority`
/// spares; so Kueue preempts alpha's own job on the first type. Deliberate difference: a
/// guarantee is obtainable whatever the borrowers' priority (docs/concepts.md,
/// VirtualCluster, "Guarantee"), and a job within its guarantee reclaims before any priority
/// preemption is tried (`sched` module docs, steps 3 and 5): beta's borrower is reclaimed on
/// spot and alpha's own jobs keep running.
#[test]
fn kueue_reclaims_a_high_priority_borrower_before_preempting_its_own_job_differs() {
    let (_, d) = two_types(vec![
        on("alpha/a1", "qa", 50, "od0", &[0, 1, 2, 3, 4, 5], false),
        on("alpha/a2", "qa", 50, "sp0", &[0, 1, 2, 3, 4], false),
        on("beta/b1", "qb", 9001, "sp0", &[5, 6, 7, 8, 9], true),
        typed(
            pjob("alpha/preemptor", "qa", 1, 5, 100),
            &["on-demand", "spot"],
        ),
    ]);
    assert_eq!(victims(&d), strings(&["beta/b1"]), "{d:?}");
    assert_eq!(reason_of(&d, "beta/b1"), Some(PreemptionReason::Reclaim));
}

/// Kueue's setting of "workload requiring reclaimation prioritized over wl in another full
/// cq": CQ1 and CQ2 guaranteed 10 each, CQ3 nothing; CQ1 holds 5, CQ3 borrows 10 with a
/// priority-0 and a priority-1 job of 5 GPUs; CQ1's older 10-GPU job would borrow, CQ2's
/// 10-GPU job (ten 1-GPU replicas) is within its guarantee. `nodes` are the A100 nodes; the
/// jobs are placed by `places` (admitted-1, admitted-2, admitted-3).
fn reclaim_over_full_cq(nodes: Vec<Node>, places: [(&str, &[u32]); 3]) -> Decisions {
    schedule(&snapshot(
        NOW,
        nodes,
        vec![
            vc("cq1", "A100", 10),
            vc("cq2", "A100", 10),
            vc("cq3", "", 0),
        ],
        vec![queue("q1", "cq1"), queue("q2", "cq2"), queue("q3", "cq3")],
        vec![
            on("a/admitted-1", "q1", 0, places[0].0, places[0].1, false),
            on("g/admitted-2", "q3", 0, places[1].0, places[1].1, true),
            on("g/admitted-3", "q3", 1, places[2].0, places[2].1, true),
            at(job("a/wl1", "q1", 10, 1), 0),
            at(job("b/wl2", "q2", 10, 1), 1),
        ],
    ))
}

fn reclaims_for_wl2(d: &Decisions) -> Vec<String> {
    match d.waiting_reason("b/wl2") {
        Some(WaitReason::WaitingForPreemption { reason, victims }) => {
            assert_eq!(*reason, PreemptionReason::Reclaim, "{d:?}");
            victims.clone()
        }
        r => panic!("b/wl2 should wait for a reclaim, got {r:?}: {d:?}"),
    }
}

/// Kueue pkg/scheduler/scheduler_test.go, case "workload requiring reclaimation prioritized
/// over wl in another full cq" (kueue#3405): CQ2's reclaim is planned, taking the
/// lower-priority of CQ3's two borrowers, and CQ1's older job, which would borrow, does not
/// take the room it waits for. Kueue has no nodes: here each job has a 5-GPU node of its
/// own, so the placement favours neither borrower.
#[test]
fn kueue_workload_requiring_reclamation_prioritized_over_wl_in_another_full_cq() {
    let nodes = (0..4)
        .map(|i| node(&format!("n{i}"), "A100", 5, None))
        .collect();
    let five: &[u32] = &[0, 1, 2, 3, 4];
    let d = reclaim_over_full_cq(nodes, [("n0", five), ("n1", five), ("n2", five)]);
    assert_eq!(reclaims_for_wl2(&d), strings(&["g/admitted-2"]));
    assert_eq!(victims(&d), strings(&["g/admitted-2"]), "{d:?}");
    assert!(d.admission("a/wl1").is_none(), "{d:?}");
}

/// The same case on two 10-GPU nodes, the priority-0 borrower beside CQ1's job and the
/// priority-1 borrower beside 5 idle GPUs: Kueue still takes the priority-0 borrower.
/// Deliberate difference: victims are searched domain by domain, the smallest first, and the
/// smallest level with a plan wins (docs/reclaim.md, section 2: "each node when the gang fits
/// on one node, then each rack, then the whole GPU type"; `reclaim` module docs), so the
/// priority-1 borrower goes, which frees a whole node for the gang; priority only breaks ties
/// within a level.
#[test]
fn kueue_reclamation_frees_a_whole_node_before_it_weighs_priority_differs() {
    let nodes = vec![node("n0", "A100", 10, None), node("n1", "A100", 10, None)];
    let d = reclaim_over_full_cq(
        nodes,
        [
            ("n0", &[0, 1, 2, 3, 4]),
            ("n0", &[5, 6, 7, 8, 9]),
            ("n1", &[0, 1, 2, 3, 4]),
        ],
    );
    assert_eq!(reclaims_for_wl2(&d), strings(&["g/admitted-3"]));
    assert!(d.admission("a/wl1").is_none(), "{d:?}");
}

// ---------------------------------------------------------------------------------------
// flavorassigner_test.go, TestReclaimBeforePriorityPreemption; scheduler_fs_test.go
// ---------------------------------------------------------------------------------------

/// Kueue's `test-clusterqueue` of TestReclaimBeforePriorityPreemption: a team guaranteed 10
/// GPUs of each of `uno`, `due`, `tre` (one 10-GPU node each), another team guaranteed
/// nothing, and a 10-GPU job listing the three types in order.
fn uno_due_tre(running: Vec<Job>, incoming_priority: i32) -> (Snapshot, Decisions) {
    let mut jobs = running;
    jobs.push(typed(
        pjob("t/in", "qt", 1, 10, incoming_priority),
        &["uno", "due", "tre"],
    ));
    let snap = snapshot(
        NOW,
        vec![
            node("u0", "uno", 10, None),
            node("d0", "due", 10, None),
            node("t0", "tre", 10, None),
        ],
        vec![
            vc_types("t", &[("uno", 10), ("due", 10), ("tre", 10)]),
            vc("o", "", 0),
        ],
        vec![pqueue("qt", "t"), queue("qo", "o")],
        jobs,
    );
    let d = schedule(&snap);
    (snap, d)
}

/// Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go, TestReclaimBeforePriorityPreemption,
/// cases "Select first flavor which fits" and "Select first flavor where gpu reclamation is
/// possible": the job takes the first type where it fits outright, preempting nobody; when
/// no type fits outright, it reclaims on the first type where a reclaim makes room, before
/// it would preempt its own team's job on the first type.
#[test]
fn kueue_reclaim_before_priority_preemption() {
    let (_, d) = uno_due_tre(
        vec![
            on("t/own-uno", "qt", -1, "u0", &[0], false),
            on("o/borrow-due", "qo", 0, "d0", &[0], true),
        ],
        0,
    );
    let a = d.admission("t/in").expect("fits on tre");
    assert_eq!(a.flavor, Flavor::new("tre"), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");

    let (snap, d) = uno_due_tre(
        vec![
            on("t/own-uno", "qt", -1, "u0", &[0], false),
            on("o/borrow-due", "qo", 0, "d0", &[0], true),
            on("o/borrow-tre", "qo", 0, "t0", &[0], true),
        ],
        0,
    );
    assert_eq!(victims(&d), strings(&["o/borrow-due"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "o/borrow-due"),
        Some(PreemptionReason::Reclaim)
    );
    assert_eq!(flavor_of_victims(&d, &snap), strings(&["due"]));
}

/// Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go, TestReclaimBeforePriorityPreemption,
/// case "Select first flavor where priority based preemption is possible": the team's own
/// lower-priority jobs hold one GPU of each type, losing the same work; the job preempts on
/// its first listed type.
#[test]
fn kueue_priority_preemption_on_the_first_listed_type() {
    let (snap, d) = uno_due_tre(
        vec![
            on("t/own-uno", "qt", -1, "u0", &[0], false),
            on("t/own-due", "qt", -1, "d0", &[0], false),
            on("t/own-tre", "qt", -1, "t0", &[0], false),
        ],
        0,
    );
    assert_eq!(victims(&d), strings(&["t/own-uno"]), "{d:?}");
    assert_eq!(flavor_of_victims(&d, &snap), strings(&["uno"]));
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "multiple preemptions skip overlapping
/// preemption targets": two teams below their guarantees both need GPUs that one borrower
/// holds. Kueue preempts it once, for the first, and skips the second. In kubetrain the
/// borrower is asked to leave once: the second team counts it as already leaving (`reclaim`
/// module docs, step 1) and waits for the same release, its room reserved too.
#[test]
fn kueue_fs_multiple_preemptions_skip_overlapping_targets() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 9, None)],
        vec![
            vc("alpha", "A100", 3),
            vc("beta", "A100", 3),
            vc("gamma", "", 0),
        ],
        vec![
            pqueue("qa", "alpha"),
            pqueue("qb", "beta"),
            queue("qg", "gamma"),
        ],
        vec![
            gang_on("gamma/c1", "qg", 0, &[("n0", 0, 9)], true),
            at(pjob("alpha/preemptor", "qa", 1, 3, 100), 0),
            at(pjob("beta/pretending-preemptor", "qb", 1, 3, 99), 1),
        ],
    ));
    let all: Vec<&str> = d.victims().collect();
    assert_eq!(all, vec!["gamma/c1"], "asked to leave once: {d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(
        waits_with(&d, "alpha/preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
    assert!(
        waits_with(&d, "beta/pretending-preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
}

// ---------------------------------------------------------------------------------------
// StrictFIFO: test/integration/singlecluster/scheduler/{scheduler,preemption}_test.go
// ---------------------------------------------------------------------------------------

/// Kueue test/integration/singlecluster/scheduler/scheduler_test.go, "Queueing with
/// StrictFIFO", spec "Should schedule workloads by their priority strictly": in a strict
/// queue (guarantee and limit 5), the priority-100 job starts, the priority-10 job of 5 GPUs
/// does not fit beside it and holds back the priority-1 job of 1 GPU, though it would fit.
#[test]
fn kueue_strict_fifo_schedules_workloads_by_priority_strictly() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None)],
        vec![limited(vc("t", "A100", 5), 5)],
        vec![strict(queue("q", "t"), QueuePolicy::Priority)],
        vec![
            at(pjob("t/wl1", "q", 1, 2, 100), 0),
            at(pjob("t/wl2", "q", 1, 5, 10), 1),
            at(pjob("t/wl3", "q", 1, 1, 1), 2),
        ],
    ));
    assert!(d.admission("t/wl1").is_some(), "{d:?}");
    assert!(waits_with(&d, "t/wl2", "OverLimit"), "{d:?}");
    match d.waiting_reason("t/wl3") {
        Some(WaitReason::BehindQueueHead { head, .. }) => assert_eq!(head, "t/wl2"),
        r => panic!("t/wl3 should wait behind t/wl2, got {r:?}: {d:?}"),
    }
}

/// Kueue test/integration/singlecluster/scheduler/scheduler_test.go, "Queueing with
/// StrictFIFO", spec "Workloads not matching namespaceSelector should not block others": a
/// job the queue can never admit as written (here: invalid, with no replicas) holds back
/// nobody in a strict queue; the jobs before and after it start.
#[test]
fn kueue_strict_fifo_invalid_job_does_not_block_others() {
    let mut wl2 = at(pjob("t/wl2", "q", 1, 5, 10), 1);
    wl2.tasks[0].replicas = 0;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None)],
        vec![limited(vc("t", "A100", 5), 5)],
        vec![strict(queue("q", "t"), QueuePolicy::Priority)],
        vec![
            at(pjob("t/wl1", "q", 1, 2, 100), 0),
            wl2,
            at(pjob("t/wl3", "q", 1, 1, 1), 2),
        ],
    ));
    assert!(d.admission("t/wl1").is_some(), "{d:?}");
    assert!(d.admission("t/wl3").is_some(), "{d:?}");
    assert!(waits_with(&d, "t/wl2", "Invalid"), "{d:?}");
}

/// Kueue test/integration/singlecluster/scheduler/scheduler_test.go, "Queueing with
/// StrictFIFO", spec "Pending workload with StrictFIFO doesn't block other CQ from borrowing
/// from a third CQ": the strict team (guarantee and limit 5) runs 3 and waits with a job that
/// its limit stops; team-a borrows the shared team's idle GPUs (Kueue and kubetrain agree),
/// and Kueue keeps team-a's 1-GPU job from borrowing the strict team's 2 idle GPUs.
/// Deliberate difference: kubetrain lends every idle GPU, reclaim gets it back when its owner
/// needs it (docs/concepts.md, "GPUs a VirtualCluster does not use are lent to other teams'
/// jobs as bonus"), and a strict queue holds back only its own jobs (docs/concepts.md, Queue,
/// `queueingStrategy`); the strict team's waiting job could not use them anyway. Which of
/// team-a's jobs borrow follows priority, at once: player2-a (priority 11) takes team-a's
/// guarantee from player1-a (priority 0), which is demoted to bonus in the same cycle.
#[test]
fn kueue_strict_fifo_pending_does_not_block_other_teams_borrowing_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("n0", "A100", 5, None),
            node("n1", "A100", 5, None),
            node("n2", "A100", 5, None),
        ],
        vec![
            limited(vc("s", "A100", 5), 5),
            vc("team-a", "A100", 5),
            vc("shared", "A100", 5),
        ],
        vec![
            strict(queue("qs", "s"), QueuePolicy::Priority),
            queue("qa", "team-a"),
            queue("qsh", "shared"),
        ],
        vec![
            on("s/wl", "qs", 10, "n0", &[0, 1, 2], false),
            on("a/player1-a", "qa", 1, "n1", &[0, 1, 2, 3, 4], false),
            at(pjob("s/pending-wl", "qs", 1, 3, 99), 0),
            at(pjob("a/player2-a", "qa", 1, 5, 11), 1),
            at(pjob("a/player3-a", "qa", 1, 1, 10), 2),
        ],
    ));
    assert!(waits_with(&d, "s/pending-wl", "OverLimit"), "{d:?}");
    assert!(
        d.admission("a/player2-a").is_some_and(|a| !a.bonus),
        "{d:?}"
    );
    assert_eq!(d.demotions, ["a/player1-a"], "{d:?}");
    assert!(d.admission("a/player3-a").is_some_and(|a| a.bonus), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue test/integration/singlecluster/scheduler/preemption_test.go, "In a cohort with
/// StrictFIFO", spec "Should reclaim from cohort even if another CQ has pending workloads":
/// alpha (strict, guaranteed 2) borrows 2 with a 4-GPU job and has a job waiting; beta's
/// 1-GPU job reclaims the borrower. Once it is gone, beta's job starts and the borrower,
/// back in its strict queue, does not fit and waits.
#[test]
fn kueue_strict_fifo_reclaims_even_if_another_queue_has_pending_jobs() {
    let decide = |jobs: Vec<Job>| {
        schedule(&snapshot(
            NOW,
            vec![node("n0", "A100", 4, None)],
            vec![vc("alpha", "A100", 2), vc("beta", "A100", 2)],
            vec![
                strict(pqueue("qa", "alpha"), QueuePolicy::Priority),
                strict(pqueue("qb", "beta"), QueuePolicy::Priority),
            ],
            jobs,
        ))
    };
    let use_all = at(pjob("alpha/use-all", "qa", 1, 4, 1), 0);
    let pending = at(pjob("alpha/pending", "qa", 1, 1, 0), 1);
    let preemptor = at(pjob("beta/preemptor", "qb", 1, 1, -1), 2);
    let d = decide(vec![
        run(use_all.clone(), &[("n0", &[0, 1, 2, 3])], true, 0, CKPT),
        pending.clone(),
        preemptor.clone(),
    ]);
    assert_eq!(victims(&d), strings(&["alpha/use-all"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "alpha/use-all"),
        Some(PreemptionReason::Reclaim)
    );
    assert!(d.admission("alpha/pending").is_none(), "{d:?}");

    // the borrower has left and is back in its queue, keeping its place
    let mut back = use_all;
    back.preemptions = 1;
    let d = decide(vec![back, pending, preemptor]);
    assert!(
        d.admission("beta/preemptor").is_some_and(|a| !a.bonus),
        "{d:?}"
    );
    assert!(d.admission("alpha/use-all").is_none(), "{d:?}");
}
