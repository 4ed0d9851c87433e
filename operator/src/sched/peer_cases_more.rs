//! A fifth set of peer schedulers' test cases, ported onto kubetrain's model: priority
//! preemption while a team borrows, reclaim from borrowers of the same priority, Kueue's
//! `borrowWithinCohort`, fair-sharing preemption, gangs reclaimed whole, gangs that
//! preempt only when they then fit, and KAI's departments. Sources: Kueue
//! `pkg/scheduler/preemption/preemption_test.go` (TestPreemption) and
//! `preemption_fair_test.go` (TestFairPreemptions); KAI scheduler
//! `pkg/scheduler/actions/reclaim/{reclaim,reclaimGang,reclaimDepartments}_test.go` and
//! `actions/preempt/{preempt,preemptGang}_test.go`. Read at Kueue `ff69552e` and the KAI
//! scheduler snapshot of the same day. None repeats a case of the other `peer_cases*` sets.
//!
//! Mapping, as in the other sets: a ClusterQueue's nominal quota, a KAI queue's (or
//! department's) deserved GPUs are a VirtualCluster guarantee; cohort borrowing and KAI
//! over-quota use are bonus; a borrowing limit is a VC limit; `withinClusterQueue:
//! LowerPriority` is a queue with priority preemption (`pqueue`), `Never` a plain queue;
//! `reclaimWithinCohort` is reclaim. A KAI department is a VirtualCluster and its queues are
//! kubetrain queues whose `share` is their part of the department's deserved GPUs; KAI's
//! train, build and inference jobs are priorities 50, 100 and 125. CPUs of the peers' cases
//! are GPUs here (Kueue's half CPUs are doubled).
//!
//! Where kubetrain decides differently on purpose (a rule of `docs/concepts.md`,
//! `docs/reclaim.md` or the `sched` module docs), the test asserts kubetrain's behaviour,
//! cites the rule and ends in `_differs`. KAI's "Reclaim from different department and same
//! department" found that a job within its team's guarantee and its queue's firm share waited
//! for ever when the room it is owed was held partly by a sibling queue beyond its share and
//! partly by another team's bonus job: no plan took a queue-share victim and a reclaim victim
//! together. A queue-share plan now may (docs/reclaim.md §7).

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Every running job checkpointed here, so jobs lose the same work per GPU unless a case
/// says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);

/// KAI's train, build and inference priorities.
const TRAIN: i32 = 50;
const BUILD: i32 = 100;
const INFERENCE: i32 = 125;

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

/// A running gang of `places.len()` replicas, each of `places[i].1.len()` GPUs.
fn gang_on(id: &str, queue: &str, prio: i32, places: &[(&str, &[u32])], bonus: bool) -> Job {
    let per = places[0].1.len() as u32;
    run(
        pjob(id, queue, places.len() as u32, per, prio),
        places,
        bonus,
        0,
        CKPT,
    )
}

/// `j` queued at `at`.
fn at(mut j: Job, at: i64) -> Job {
    j.queued_at = at;
    j
}

fn limited(mut v: VirtualCluster, limit: Option<u32>) -> VirtualCluster {
    v.limit_gpus = limit;
    v
}

// ---------------------------------------------------------------------------------------
// Kueue pkg/scheduler/preemption/preemption_test.go, TestPreemption
// ---------------------------------------------------------------------------------------

/// Kueue pkg/scheduler/preemption/preemption_test.go, cases "preempting locally and
/// borrowing same resource in cohort" (c1, c2 with borrowing limits of 6) and "...; no
/// borrowing limit in the cohort" (d1, d2): the team borrows 2 GPUs with its lower-priority
/// job; its higher-priority job preempts that job in its own queue, and never the other
/// team's job within its guarantee, although that one has lower priority still.
#[test]
fn kueue_preempting_locally_while_borrowing_the_same_gpus() {
    for limit in [Some(12), None] {
        let d = schedule(&snapshot(
            NOW,
            vec![node("n0", "A100", 12, None)],
            vec![
                limited(vc("c1", "A100", 6), limit),
                limited(vc("c2", "A100", 6), limit),
            ],
            vec![pqueue("q1", "c1"), pqueue("q2", "c2")],
            vec![
                on("c1/med", "q1", 0, "n0", &[0, 1, 2, 3], false),
                on("c1/low", "q1", -1, "n0", &[4, 5, 6, 7], true),
                on("c2/low-1", "q2", -1, "n0", &[8, 9, 10, 11], false),
                pjob("c1/in", "q1", 1, 4, 1),
            ],
        ));
        assert_eq!(victims(&d), strings(&["c1/low"]), "limit {limit:?}: {d:?}");
        assert_eq!(reason_of(&d, "c1/low"), Some(PreemptionReason::Priority));
    }
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "reclaim borrowed quota from
/// same priority for withinCohort=ReclaimFromAny": c1 borrows 2 with two jobs of priority 0
/// and 1; c2 (2 of its 6 in use) reclaims for its 4-GPU job of priority 0, and the borrower
/// loses its priority-0 job, not its more important one.
#[test]
fn kueue_reclaim_borrowed_quota_from_same_priority() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 12, None)],
        vec![vc("c1", "A100", 6), vc("c2", "A100", 6)],
        vec![pqueue("q1", "c1"), queue("q2", "c2")],
        vec![
            on("c1/c1-1", "q1", 0, "n0", &[0, 1, 2, 3], true),
            on("c1/c1-2", "q1", 1, "n0", &[4, 5, 6, 7], false),
            on("c2/c2", "q2", 0, "n0", &[8, 9], false),
            pjob("c2/in", "q2", 1, 4, 0),
        ],
    ));
    assert_eq!(victims(&d), strings(&["c1/c1-1"]), "{d:?}");
    assert_eq!(reason_of(&d, "c1/c1-1"), Some(PreemptionReason::Reclaim));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "can't preempt workloads in
/// ClusterQueue for withinClusterQueue=Never": in a queue without priority preemption a
/// higher-priority job evicts nobody and waits; the same world with priority preemption
/// (as a contrast) evicts the lower-priority job.
#[test]
fn kueue_cant_preempt_in_a_queue_without_priority_preemption() {
    let world = |q: Queue| {
        schedule(&snapshot(
            NOW,
            vec![node("n0", "A100", 6, None)],
            vec![vc("c2", "A100", 6)],
            vec![q],
            vec![
                on("c2/low", "q2", -1, "n0", &[0, 1, 2], false),
                pjob("c2/in", "q2", 1, 4, 1),
            ],
        ))
    };
    let d = world(queue("q2", "c2"));
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("c2/in").is_none(), "{d:?}");
    let d = world(pqueue("q2", "c2"));
    assert_eq!(victims(&d), strings(&["c2/low"]), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "preempt newer workloads with
/// the same priority" (`withinClusterQueue: LowerOrNewerEqualPriority`): a queue full with
/// priorities 2, 1, 1; an incoming priority-1 job, queued before both priority-1 jobs were
/// admitted, evicts the newer one. Deliberate difference: kubetrain's priority preemption
/// takes only *lower*-priority jobs of the queue (docs/concepts.md, Queue,
/// `priorityPreemption`: "a higher-priority job may preempt lower-priority jobs of the same
/// queue"); an equally important job keeps its GPUs and the incoming one waits its turn.
#[test]
fn kueue_preempt_newer_workloads_with_the_same_priority_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 6, None)],
        vec![vc("t", "A100", 6)],
        vec![pqueue("q", "t")],
        vec![
            on("t/wl1", "q", 2, "n0", &[0, 1], false),
            run(
                at(pjob("t/wl2", "q", 1, 2, 1), NOW - 100),
                &[("n0", &[2, 3])],
                false,
                NOW - 99,
                CKPT,
            ),
            run(
                at(pjob("t/wl3", "q", 1, 2, 1), NOW - 100),
                &[("n0", &[4, 5])],
                false,
                NOW - 100,
                CKPT,
            ),
            at(pjob("t/in", "q", 1, 2, 1), NOW - 115),
        ],
    ));
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("t/in").is_none(), "{d:?}");
}

/// Kueue's `with_shared_cq` cohort: `a_standard`, `b_standard`, `a_best_effort` guaranteed
/// 1 GPU each, `b_best_effort` none, `shared` 10 that it lends, on one 13-GPU node.
fn with_shared_cq(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
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
        jobs,
    ))
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "use BorrowWithinCohort; allow
/// preempting a lower-priority workload from another ClusterQueue while borrowing":
/// `a_standard` (guaranteed 1) wants 10 GPUs, 9 of them borrowed; Kueue evicts
/// `a_best_effort`'s borrowed 10-GPU job of lower priority for it. Deliberate difference: a
/// job beyond its VirtualCluster's guarantee only borrows idle GPUs and never causes
/// preemption (`sched` module docs, step 4, "Bonus jobs never cause preemption";
/// docs/concepts.md, "Guaranteed and bonus"), so nobody is evicted and the job waits.
#[test]
fn kueue_borrow_within_cohort_never_preempts_for_a_borrower_differs() {
    let d = with_shared_cq(vec![
        on(
            "ae/a_best_effort_low",
            "qae",
            -1,
            "n0",
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            true,
        ),
        on("be/b_best_effort_low", "qbe", -1, "n0", &[10], true),
        pjob("a/in", "qa", 1, 10, 0),
    ]);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(waits_with(&d, "a/in", "QuotaExhausted"), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "use BorrowWithinCohort; allow
/// preempting a lower-priority workload with priority above MaxPriorityThreshold, if
/// borrowing is not required after the preemption": `b_standard` borrows all 13 GPUs with one
/// job; `a_standard`'s 1-GPU job is within its guarantee and reclaims it.
#[test]
fn kueue_borrow_within_cohort_reclaims_when_no_borrowing_is_needed_after() {
    let all: Vec<u32> = (0..13).collect();
    let d = with_shared_cq(vec![
        on("b/b_standard", "qb", 1, "n0", &all, true),
        pjob("a/in", "qa", 1, 1, 2),
    ]);
    assert_eq!(victims(&d), strings(&["b/b_standard"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "b/b_standard"),
        Some(PreemptionReason::Reclaim)
    );
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "use BorrowWithinCohort; don't
/// allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if
/// borrowing is required even after the preemption": `b_standard` borrows 10; `a_standard`'s
/// 10-GPU job would borrow 9 and evicts nobody (3 GPUs are idle, too few).
#[test]
fn kueue_borrow_within_cohort_no_preemption_when_still_borrowing_after() {
    let d = with_shared_cq(vec![
        on(
            "b/b_standard",
            "qb",
            1,
            "n0",
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            true,
        ),
        pjob("a/in", "qa", 1, 10, 2),
    ]);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

// ---------------------------------------------------------------------------------------
// Kueue pkg/scheduler/preemption/preemption_fair_test.go, TestFairPreemptions
// ---------------------------------------------------------------------------------------

/// TestFairPreemptions' cohort: `a`, `b`, `c` guaranteed `nominal` GPUs each (queues with
/// priority preemption) and `preemptible` none, on one node holding all the guarantees.
fn fair(nominal: u32, jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 3 * nominal, None)],
        vec![
            vc("a", "A100", nominal),
            vc("b", "A100", nominal),
            vc("c", "A100", nominal),
            vc("preemptible", "A100", 0),
        ],
        vec![
            pqueue("qa", "a"),
            pqueue("qb", "b"),
            pqueue("qc", "c"),
            queue("qp", "preemptible"),
        ],
        jobs,
    ))
}

/// `n` running 1-GPU jobs `{team}/{team}{i}` on consecutive GPUs from `first`, the first
/// `guaranteed` of them within the team's guarantee.
fn units(team: &str, n: u32, first: u32, guaranteed: u32, prio: i32) -> Vec<Job> {
    (0..n)
        .map(|i| {
            on(
                &format!("{team}/{team}{}", i + 1),
                &format!("q{}", &team[..1]),
                prio,
                "n0",
                &[first + i],
                i >= guaranteed,
            )
        })
        .collect()
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "preempt one from each CQ
/// borrowing" (GPUs doubled): `a` and `b` each run one job of their whole guarantee (6) and
/// borrow 2 with two 1-GPU jobs; `c`'s 4-GPU job within its guarantee needs 2 of them back.
/// Both peers take the small borrowed jobs, never a job within its team's guarantee. (Kueue
/// takes one from each team; kubetrain takes the two that lose least work, whatever team:
/// here they lose the same, see `kueue_fair_reclaim_takes_least_lost_work_not_biggest_
/// borrower_differs` in `peer_cases`.)
#[test]
fn kueue_fair_preempt_the_small_borrowed_jobs() {
    let mut jobs = vec![
        on("a/a3", "qa", 0, "n0", &[0, 1, 2, 3, 4, 5], false),
        on("a/a1", "qa", 0, "n0", &[6], true),
        on("a/a2", "qa", 0, "n0", &[7], true),
        on("b/b3", "qb", 0, "n0", &[8, 9, 10, 11, 12, 13], false),
        on("b/b1", "qb", 0, "n0", &[14], true),
        on("b/b2", "qb", 0, "n0", &[15], true),
    ];
    jobs.push(pjob("c/in", "qc", 1, 4, 0));
    let d = fair(6, jobs);
    let v = victims(&d);
    assert_eq!(v.len(), 2, "{d:?}");
    for x in &v {
        assert!(
            ["a/a1", "a/a2", "b/b1", "b/b2"].contains(&x.as_str()),
            "{x} is within its guarantee: {d:?}"
        );
        assert_eq!(reason_of(&d, x), Some(PreemptionReason::Reclaim));
    }
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can't preempt when it
/// would switch the imbalance": `a` at its guarantee, `b` borrowing 2, one GPU idle; `a`'s
/// 2-GPU job would borrow and evicts nobody.
#[test]
fn kueue_fair_cant_preempt_when_it_would_switch_the_imbalance() {
    let mut jobs = units("a", 3, 0, 3, 0);
    jobs.extend(units("b", 5, 3, 3, 0));
    jobs.push(pjob("a/in", "qa", 1, 2, 0));
    let d = fair(3, jobs);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "preempt huge workload if
/// there is no other option, as long as the target CQ gets a lower share": `b` borrows
/// the whole cluster with one 9-GPU job; `a`'s 2-GPU job within its guarantee reclaims it.
#[test]
fn kueue_fair_preempt_huge_workload_if_there_is_no_other_option() {
    let d = fair(
        3,
        vec![
            on("b/b1", "qb", 0, "n0", &[0, 1, 2, 3, 4, 5, 6, 7, 8], true),
            pjob("a/in", "qa", 1, 2, 0),
        ],
    );
    assert_eq!(victims(&d), strings(&["b/b1"]), "{d:?}");
    assert_eq!(reason_of(&d, "b/b1"), Some(PreemptionReason::Reclaim));
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can preempt a combination
/// of same CQ and highest user": `a` at its guarantee of 3 (one job of priority -1), `b`
/// borrowing 3; `a`'s 2-GPU job evicts its own lower-priority job and one of `b`'s borrowed
/// jobs, and `a` ends at 4, beyond its guarantee. Deliberate difference: a plan taking both
/// the queue's lower-priority jobs and other teams' bonus jobs is allowed only when the job
/// then ends within its VirtualCluster's guarantee (docs/reclaim.md §6, docs/concepts.md,
/// Queue, `priorityPreemption`), and bonus jobs never cause preemption (`sched` module docs,
/// step 4): nobody is evicted and the job waits.
#[test]
fn kueue_fair_combination_of_same_cq_and_borrower_differs() {
    let mut jobs = vec![
        on("a/a_low", "qa", -1, "n0", &[0], false),
        on("a/a2", "qa", 0, "n0", &[1], false),
        on("a/a3", "qa", 0, "n0", &[2], false),
    ];
    jobs.extend(units("b", 6, 3, 3, 0));
    jobs.push(pjob("a/in", "qa", 1, 2, 0));
    let d = fair(3, jobs);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "workloads under priority
/// threshold not capriciously preempted": `a` and `b` at their guarantees, `preemptible`
/// (no guarantee) borrows 3 with priority -3 jobs; `a`'s 2-GPU job would borrow, and
/// evicts none of them.
#[test]
fn kueue_fair_workloads_under_priority_threshold_not_capriciously_preempted() {
    let mut jobs = units("a", 3, 0, 3, 0);
    jobs.extend(units("b", 3, 3, 3, 0));
    for i in 0..3u32 {
        jobs.push(on(
            &format!("p/preemptible{}", i + 1),
            "qp",
            -3,
            "n0",
            &[6 + i],
            true,
        ));
    }
    jobs.push(pjob("a/in", "qa", 1, 2, 0));
    let d = fair(3, jobs);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

// ---------------------------------------------------------------------------------------
// KAI scheduler pkg/scheduler/actions/reclaim
// ---------------------------------------------------------------------------------------

/// KAI's two teams queue0 and queue1 (one queue each, `q0` and `q1`), guaranteed `g0` and
/// `g1` GPUs.
fn kai(nodes: Vec<Node>, g0: u32, g1: u32, jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("queue0", "A100", g0), vc("queue1", "A100", g1)],
        vec![pqueue("q0", "queue0"), pqueue("q1", "queue1")],
        jobs,
    ))
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "queue1 is under
/// deserved quota, queue0 is over deserved quota and will go below quota - reclaim": queue0
/// (10 deserved) runs a gang of 2 × 10 GPUs over two 16-GPU nodes; queue1's 10-GPU job
/// within its guarantee reclaims the whole gang, although queue0 then holds nothing: a gang
/// beyond its team's guarantee is bonus as a whole.
#[test]
fn kai_gang_beyond_its_quota_is_reclaimed_whole() {
    let ten: Vec<u32> = (0..10).collect();
    let d = kai(
        vec![node("n0", "A100", 16, None), node("n1", "A100", 16, None)],
        10,
        10,
        vec![
            gang_on("q0/job", "q0", TRAIN, &[("n0", &ten), ("n1", &ten)], true),
            pjob("q1/in", "q1", 1, 10, TRAIN),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/job"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/job"), Some(PreemptionReason::Reclaim));
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "queue1 is under
/// deserved quota, queue0 is over deserved quota but under fair share - reclaim": six
/// 3-GPU nodes, queue0 (2 deserved) runs a 2-GPU job on each and has three more waiting;
/// queue1 (2 deserved) asks for 2. Exactly one of queue0's borrowed jobs is reclaimed,
/// never the one within its guarantee, and queue0's waiting jobs stay waiting.
#[test]
fn kai_reclaim_takes_one_of_many_borrowed_jobs() {
    let nodes: Vec<Node> = (0..6)
        .map(|i| node(&format!("n{i}"), "A100", 3, None))
        .collect();
    let names: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
    let mut jobs: Vec<Job> = (0..6)
        .map(|i| on(&format!("q0/j{i}"), "q0", TRAIN, &names[i], &[0, 1], i > 0))
        .collect();
    for i in 6..9 {
        jobs.push(at(pjob(&format!("q0/j{i}"), "q0", 1, 2, TRAIN), i));
    }
    jobs.push(at(pjob("q1/in", "q1", 1, 2, TRAIN), 20));
    let d = kai(nodes, 2, 2, jobs);
    let v = victims(&d);
    assert_eq!(v.len(), 1, "{d:?}");
    assert_ne!(v[0], "q0/j0", "{d:?}");
    assert_eq!(reason_of(&d, &v[0]), Some(PreemptionReason::Reclaim));
    for i in 6..9 {
        assert!(d.admission(&format!("q0/j{i}")).is_none(), "{d:?}");
    }
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "queue1 is under
/// deserved quota, queue0 has exactly deserved quota - should consolidate q0 to node0 and
/// pipeline q1 to node1": node0 has 3 GPUs, node1 2; queue0 (3 deserved) runs 2 on node0
/// and 1 on node1; queue1 (2 deserved) asks for 2 on one node. KAI moves queue0's 1-GPU
/// job beside its other one and starts queue1's job on node1. Deliberate difference: a
/// consolidation moves only the waiting job's own team's jobs; "another team's guaranteed
/// work is never disturbed for a placement" (docs/reclaim.md §8), so nothing moves and
/// queue1's job waits for room.
#[test]
fn kai_consolidation_does_not_move_another_teams_guaranteed_job_differs() {
    let d = kai(
        vec![node("n0", "A100", 3, None), node("n1", "A100", 2, None)],
        3,
        2,
        vec![
            on("q0/j0", "q0", TRAIN, "n0", &[0, 1], false),
            on("q0/j1", "q0", TRAIN, "n1", &[0], false),
            pjob("q1/in", "q1", 1, 2, TRAIN),
        ],
    );
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(waits_with(&d, "q1/in", "NoFit"), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "Reclaim based on
/// releasing and idle resources": two 1-GPU nodes; queue0 (no guarantee) borrows 0.7 of
/// node0's GPU; queue1 (2 deserved) asks for a gang of 2 × 1 GPU: one replica takes the idle
/// node1, the other needs the share back, which is reclaimed.
#[test]
fn kai_reclaim_combines_idle_and_released_gpus() {
    let d = kai(
        vec![node("n0", "A100", 1, None), node("n1", "A100", 1, None)],
        0,
        2,
        vec![
            run(
                share_job("q0/running", "q0", 1, 700),
                &[("n0", &[0])],
                true,
                0,
                CKPT,
            ),
            pjob("q1/pending", "q1", 2, 1, TRAIN),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/running"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/running"), Some(PreemptionReason::Reclaim));
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "gang job fails to
/// allocate enough pods": four 1-GPU nodes borrowed by queue0; queue1's gang of 5 × 1 GPU
/// can never fit the cluster, so nothing is reclaimed.
#[test]
fn kai_gang_larger_than_the_cluster_reclaims_nothing() {
    let nodes: Vec<Node> = (0..4)
        .map(|i| node(&format!("n{i}"), "A100", 1, None))
        .collect();
    let mut jobs: Vec<Job> = (0..4)
        .map(|i| {
            on(
                &format!("q0/j{i}"),
                "q0",
                TRAIN,
                &format!("n{i}"),
                &[0],
                true,
            )
        })
        .collect();
    jobs.push(pjob("q1/gang", "q1", 5, 1, TRAIN));
    let d = kai(nodes, 0, 2, jobs);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q1/gang").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, cases "job reclaims
/// from job on two nodes" (queue0, 1 deserved, runs a gang of 2 × 1 GPU over two 1-GPU
/// nodes; queue1, 1 deserved, asks for 1) and "reclaim mpi job" (queue0, none deserved, runs
/// 2 × 1 GPU on one 2-GPU node; queue1, 2 deserved, asks for 2 on one replica): the borrowing
/// gang is reclaimed whole, both replicas, as one victim.
#[test]
fn kai_reclaim_takes_a_borrowing_gang_whole() {
    let d = kai(
        vec![node("n0", "A100", 1, None), node("n1", "A100", 1, None)],
        1,
        1,
        vec![
            gang_on("q0/gang", "q0", TRAIN, &[("n0", &[0]), ("n1", &[0])], true),
            pjob("q1/in", "q1", 1, 1, TRAIN),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/gang"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/gang"), Some(PreemptionReason::Reclaim));

    let d = kai(
        vec![node("n0", "A100", 2, None)],
        0,
        2,
        vec![
            gang_on("q0/mpi", "q0", TRAIN, &[("n0", &[0]), ("n0", &[1])], true),
            pjob("q1/in", "q1", 1, 2, BUILD),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/mpi"]), "{d:?}");
}

// ---------------------------------------------------------------------------------------
// KAI scheduler pkg/scheduler/actions/preempt
// ---------------------------------------------------------------------------------------

/// KAI-Scheduler pkg/scheduler/actions/preempt/preemptGang_test.go, cases "Don't preempt if
/// not all tasks can be allocated" (one 1-GPU node) and "Preempt if all tasks can be
/// allocated" (one 2-GPU node): queue0 (2 deserved) runs a 1-GPU train job; its build gang
/// of 2 × 1 GPU preempts it only where the whole gang then fits.
#[test]
fn kai_gang_preempts_only_when_it_then_fits_whole() {
    let world = |gpus: u32| {
        kai(
            vec![node("n0", "A100", gpus, None)],
            2,
            0,
            vec![
                on("q0/train", "q0", TRAIN, "n0", &[0], false),
                pjob("q0/build", "q0", 2, 1, BUILD),
            ],
        )
    };
    let d = world(1);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q0/build").is_none(), "{d:?}");
    let d = world(2);
    assert_eq!(victims(&d), strings(&["q0/train"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/train"), Some(PreemptionReason::Priority));
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preemptGang_test.go, case "don't preempt if
/// will go over quota": queue0 (3 deserved) runs a 1-GPU train job on a 4-GPU node; its
/// build gang of 2 × 2 GPUs would be beyond the guarantee and evicts nothing.
#[test]
fn kai_gang_does_not_preempt_beyond_its_quota() {
    let d = kai(
        vec![node("n0", "A100", 4, None)],
        3,
        0,
        vec![
            on("q0/train", "q0", TRAIN, "n0", &[0], false),
            pjob("q0/build", "q0", 2, 2, BUILD),
        ],
    );
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q0/build").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go, cases "2 train jobs running
/// require 2 GPUs, 1 build job with 2 GPUs pending - preempt" and "1 train requires 1 GPU for
/// queue0, 1 train that requires 2 GPU for queue1, 1 build job with 2 GPUs pending - preempt":
/// queue0 and queue1 (2 deserved each) share a full or nearly full 4-GPU node; queue0's
/// 2-GPU build job preempts queue0's train job, never queue1's.
#[test]
fn kai_preempt_takes_the_own_queues_train_job_not_the_other_teams() {
    for (own, other) in [(&[0u32, 1][..], &[2u32, 3][..]), (&[0][..], &[1, 2][..])] {
        let d = kai(
            vec![node("n0", "A100", 4, None)],
            2,
            2,
            vec![
                on("q0/train", "q0", TRAIN, "n0", own, false),
                on("q1/train", "q1", TRAIN, "n0", other, false),
                pjob("q0/build", "q0", 1, 2, BUILD),
            ],
        );
        assert_eq!(victims(&d), strings(&["q0/train"]), "{own:?}: {d:?}");
        assert_eq!(reason_of(&d, "q0/train"), Some(PreemptionReason::Priority));
    }
}

// ---------------------------------------------------------------------------------------
// KAI scheduler pkg/scheduler/actions/reclaim/reclaimDepartments_test.go
// ---------------------------------------------------------------------------------------

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimDepartments_test.go, case "Don't
/// reclaim if department will be overquota": department d1 (2 deserved) borrows with a
/// 3-GPU job; d2 (2 deserved) holds 1 (a build job of queue1) and queue1 asks for 2 more,
/// which would put d2 beyond its 2. Nothing is reclaimed.
#[test]
fn kai_department_does_not_reclaim_beyond_its_quota() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 4, None)],
        vec![vc("d1", "A100", 2), vc("d2", "A100", 2)],
        vec![
            queue("queue0", "d1"),
            shared(queue("queue1", "d2"), 50),
            shared(queue("queue2", "d2"), 50),
        ],
        vec![
            on("d1/job0", "queue0", TRAIN, "n0", &[0, 1, 2], true),
            on("d2/job1", "queue1", BUILD, "n0", &[3], false),
            pjob("d2/pending", "queue1", 1, 2, TRAIN),
        ],
    ));
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("d2/pending").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimDepartments_test.go, case "Reclaim
/// from different department and same department": a 4-GPU node; department d1 (none
/// deserved) borrows 2; d2 (4 deserved) holds 2 in queue1 (none deserved) and queue2 (all 4
/// deserved) asks for 4. KAI evicts both jobs: d1's borrowed one and queue1's, which uses
/// its department's quota beyond its own share. So does kubetrain, in one queue-share plan
/// that reclaims the other team's bonus job too (docs/reclaim.md §7); ported as a gap (no
/// plan combined the two, and the job waited with `QuotaExhausted`), fixed since.
#[test]
fn kai_reclaim_from_different_department_and_same_department() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 4, None)],
        vec![vc("d1", "A100", 0), vc("d2", "A100", 4)],
        vec![
            queue("queue0", "d1"),
            shared(queue("queue1", "d2"), 0),
            shared(queue("queue2", "d2"), 100),
        ],
        vec![
            on("d1/job0", "queue0", TRAIN, "n0", &[0, 1], true),
            on("d2/job1", "queue1", TRAIN, "n0", &[2, 3], false),
            pjob("d2/pending", "queue2", 1, 4, TRAIN),
        ],
    ));
    assert_eq!(victims(&d), strings(&["d1/job0", "d2/job1"]), "{d:?}");
    assert_eq!(reason_of(&d, "d1/job0"), Some(PreemptionReason::Reclaim));
    assert_eq!(reason_of(&d, "d2/job1"), Some(PreemptionReason::QueueShare));
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimDepartments_test.go, case "Reclaim
/// from overquota department with multiple departments": four departments of 4 deserved
/// on a 16-GPU node. d1's project2 (1 deserved) runs 4 × 1 GPU, using all of d1's quota; d2
/// runs 8 (4 borrowed), d3 its 4; d1's project1 (3 deserved) asks for 1 GPU (an inference
/// job) and d4 for 5. KAI reclaims one of d2's borrowed jobs for project1 and nothing for
/// d4. Deliberate difference: project1's job would put d1 beyond its guarantee, and bonus
/// work never causes a reclaim (`sched` module docs, step 4); within d1 the shares are firm
/// and project1 is below its own, so it takes its share back from project2, which uses 3
/// beyond its share (docs/reclaim.md §7, `QueueShare`). d4's 5-GPU job would be beyond its
/// guarantee and evicts nobody, as in KAI.
#[test]
fn kai_reclaim_for_a_project_within_a_full_department_differs() {
    let mut jobs: Vec<Job> = (0..4)
        .map(|i| {
            on(
                &format!("d1/p2-job{i}"),
                "d1_project2",
                TRAIN,
                "n0",
                &[i],
                false,
            )
        })
        .collect();
    jobs.extend((0..8).map(|i| {
        on(
            &format!("d2/job{i}"),
            "d2_project1",
            TRAIN,
            "n0",
            &[4 + i],
            i >= 4,
        )
    }));
    jobs.extend((0..4).map(|i| {
        on(
            &format!("d3/job{i}"),
            "d3_project1",
            TRAIN,
            "n0",
            &[12 + i],
            false,
        )
    }));
    jobs.push(pjob("d1/p1-pending", "d1_project1", 1, 1, INFERENCE));
    jobs.push(pjob("d4/job1", "d4_project1", 1, 5, TRAIN));
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 16, None)],
        vec![
            vc("d1", "A100", 4),
            vc("d2", "A100", 4),
            vc("d3", "A100", 4),
            vc("d4", "A100", 4),
        ],
        vec![
            shared(queue("d1_project1", "d1"), 75),
            shared(queue("d1_project2", "d1"), 25),
            queue("d2_project1", "d2"),
            queue("d3_project1", "d3"),
            queue("d4_project1", "d4"),
        ],
        jobs,
    ));
    let v = victims(&d);
    assert_eq!(v.len(), 1, "{d:?}");
    assert!(v[0].starts_with("d1/p2-job"), "{d:?}");
    assert_eq!(reason_of(&d, &v[0]), Some(PreemptionReason::QueueShare));
    assert!(d.admission("d4/job1").is_none(), "{d:?}");
}
