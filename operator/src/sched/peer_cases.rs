//! Test cases of peer schedulers (Kueue, Volcano, KAI scheduler) ported onto kubetrain's
//! model: each test names the peer's file and case it came from, and keeps the case's intent,
//! not its API. A ClusterQueue's nominal quota (a queue's deserved share) is a VirtualCluster
//! guarantee, cohort borrowing is bonus, a borrowing limit or queue capability is a VC limit,
//! `reclaimWithinCohort` is reclaim and `withinClusterQueue: LowerPriority` is priority
//! preemption inside a queue. CPUs of the peers' cases are GPUs here.
//!
//! Where kubetrain decides differently on purpose (documented in `docs/concepts.md`,
//! `docs/reclaim.md` or the code), the test asserts kubetrain's documented behaviour and says
//! so. Where a user would call kubetrain's decision wrong, the test keeps the peer's
//! expectation: the two KAI preempt cases below found the victim search's greedy order
//! (`reclaim::in_domain`), since fixed.

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Every running job of a case starts at 0 and checkpointed here, so they lose the same work
/// per GPU unless a case says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);

/// Kueue's `standalone` ClusterQueue (nominal 6, `withinClusterQueue: LowerPriority`): one
/// VC with a 6-GPU guarantee on one 6-GPU node, one queue with priority preemption, and
/// running jobs `(id, gpus on n0, priority)` within the guarantee.
fn standalone(running: &[(&str, &[u32], i32)], incoming: Job) -> Decisions {
    let mut jobs: Vec<Job> = running
        .iter()
        .map(|&(id, gpus, prio)| {
            run(
                pjob(id, "q", 1, gpus.len() as u32, prio),
                &[("n0", gpus)],
                false,
                0,
                CKPT,
            )
        })
        .collect();
    jobs.push(incoming);
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 6, None)],
        vec![vc("t", "A100", 6)],
        vec![pqueue("q", "t")],
        jobs,
    ))
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "preempt lowest priority": of
/// three equal jobs, a higher-priority job preempts only the lowest-priority one.
#[test]
fn kueue_preempt_lowest_priority() {
    let d = standalone(
        &[
            ("t/low", &[0, 1], -1),
            ("t/mid", &[2, 3], 0),
            ("t/high", &[4, 5], 1),
        ],
        pjob("t/in", "q", 1, 2, 1),
    );
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].beneficiary, "t/in");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(victims(&d), strings(&["t/low"]));
    assert!(matches!(
        d.waiting_reason("t/in"),
        Some(WaitReason::WaitingForPreemption { .. })
    ));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "preempt multiple": when one
/// lower-priority job is not enough, both lower-priority jobs go, never the equal-priority one.
#[test]
fn kueue_preempt_multiple() {
    let d = standalone(
        &[
            ("t/low", &[0, 1], -1),
            ("t/mid", &[2, 3], 0),
            ("t/high", &[4, 5], 1),
        ],
        pjob("t/in", "q", 1, 3, 1),
    );
    assert_eq!(victims(&d), strings(&["t/low", "t/mid"]), "{d:?}");
    assert!(d.admission("t/in").is_none());
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "no preemption for low priority":
/// a job preempts nobody of equal or higher priority, and waits.
#[test]
fn kueue_no_preemption_for_low_priority() {
    let d = standalone(
        &[("t/low", &[0, 1, 2], -1), ("t/mid", &[3, 4, 5], 0)],
        pjob("t/in", "q", 1, 1, -1),
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/in").is_none());
    assert!(d.waiting_reason("t/in").is_some());
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "not enough low priority
/// workloads": when all the lower-priority jobs together free too little, nobody is preempted.
#[test]
fn kueue_not_enough_low_priority_workloads() {
    let d = standalone(
        &[("t/low", &[0, 1, 2], -1), ("t/mid", &[3, 4, 5], 0)],
        pjob("t/in", "q", 1, 4, 0),
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/in").is_none());
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "some free quota, preempt low
/// priority": free capacity counts, so one small victim is enough.
#[test]
fn kueue_some_free_quota_preempt_low_priority() {
    let d = standalone(
        &[
            ("t/low", &[0], -1),
            ("t/mid", &[1], 0),
            ("t/high", &[2, 3, 4], 1),
        ],
        pjob("t/in", "q", 1, 2, 1),
    );
    assert_eq!(victims(&d), strings(&["t/low"]), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "minimal set excludes low
/// priority": the victim set is minimal, so the low-priority job that does not help is spared
/// once the larger one alone makes room.
#[test]
fn kueue_minimal_set_excludes_low_priority() {
    let d = standalone(
        &[
            ("t/low", &[0], -1),
            ("t/mid", &[1, 2], 0),
            ("t/high", &[3, 4, 5], 1),
        ],
        pjob("t/in", "q", 1, 2, 1),
    );
    assert_eq!(victims(&d), strings(&["t/mid"]), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "reclaim quota from borrower":
/// a team below its guarantee reclaims the other team's borrowed job, not its own
/// lower-priority job and not the borrower's job within its guarantee.
#[test]
fn kueue_reclaim_quota_from_borrower() {
    let nodes = vec![node("n0", "A100", 6, None), node("n1", "A100", 6, None)];
    let vcs = vec![vc("c1", "A100", 6), vc("c2", "A100", 6)];
    let queues = vec![pqueue("q1", "c1"), queue("q2", "c2")];
    let jobs = vec![
        run(
            pjob("c1/low", "q1", 1, 3, -1),
            &[("n0", &[0, 1, 2])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("c2/mid", "q2", 1, 3, 0),
            &[("n0", &[3, 4, 5])],
            true,
            0,
            CKPT,
        ),
        run(
            pjob("c2/high", "q2", 1, 6, 1),
            &[("n1", &[0, 1, 2, 3, 4, 5])],
            false,
            0,
            CKPT,
        ),
        pjob("c1/in", "q1", 1, 3, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(victims(&d), strings(&["c2/mid"]));
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "not enough workloads borrowing":
/// a job that would still be beyond its team's guarantee after a reclaim reclaims nothing
/// (it may only borrow idle GPUs), even though the other team borrows.
#[test]
fn kueue_not_enough_workloads_borrowing() {
    let nodes = vec![
        node("n0", "A100", 4, None),
        node("n1", "A100", 4, None),
        node("n2", "A100", 4, None),
    ];
    let vcs = vec![vc("c1", "A100", 6), vc("c2", "A100", 6)];
    let queues = vec![pqueue("q1", "c1"), queue("q2", "c2")];
    let jobs = vec![
        run(
            pjob("c1/high", "q1", 1, 4, 1),
            &[("n0", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("c2/low-1", "q2", 1, 4, -1),
            &[("n1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("c2/low-2", "q2", 1, 4, -1),
            &[("n2", &[0, 1, 2, 3])],
            true,
            0,
            CKPT,
        ),
        pjob("c1/in", "q1", 1, 4, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("c1/in"),
            Some(WaitReason::QuotaExhausted { .. })
        ),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/scheduler_test.go, case "A workload is only eligible to do
/// preemptions if it fits fully within nominal quota". The team's own lower-priority job
/// runs within the guarantee; the higher-priority job would run beyond it, as bonus. Evicting
/// guaranteed work for bonus work is refused: the bonus job could be reclaimed at once, and
/// both would have lost their run. The job runs on idle GPUs when there are enough, else
/// waits. (kubetrain once preempted here.)
#[test]
fn kueue_preemption_only_within_nominal_quota() {
    let nodes = vec![node("n0", "A100", 4, None)];
    let vcs = vec![vc("alpha", "A100", 2), vc("beta", "A100", 2)];
    let queues = vec![pqueue("qa", "alpha"), queue("qb", "beta")];
    let jobs = vec![
        run(
            pjob("alpha/a1", "qa", 1, 1, -1),
            &[("n0", &[0])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("beta/b1", "qb", 1, 1, -1),
            &[("n0", &[1])],
            false,
            0,
            CKPT,
        ),
        pjob("alpha/in", "qa", 1, 3, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(d.waiting_reason("alpha/in").is_some(), "{d:?}");
}

/// The same team, its lower-priority job running as bonus beyond the guarantee: a
/// higher-priority job that would run as bonus too may take its place (bonus for bonus,
/// nothing guaranteed is lost), as priority orders a queue's jobs.
#[test]
fn a_bonus_job_may_displace_lower_priority_bonus_work_of_its_queue() {
    let nodes = vec![node("n0", "A100", 4, None)];
    let vcs = vec![vc("alpha", "A100", 1), vc("beta", "A100", 1)];
    let queues = vec![pqueue("qa", "alpha"), queue("qb", "beta")];
    let jobs = vec![
        run(
            pjob("alpha/a0", "qa", 1, 1, -1),
            &[("n0", &[0])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("alpha/a1", "qa", 1, 2, -1),
            &[("n0", &[1, 2])],
            true,
            0,
            CKPT,
        ),
        run(
            pjob("beta/b1", "qb", 1, 1, -1),
            &[("n0", &[3])],
            false,
            0,
            CKPT,
        ),
        pjob("alpha/in", "qa", 1, 2, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(victims(&d), strings(&["alpha/a1"]));
}

/// The other side of Kueue's rule: a job beyond the guarantee *now* may evict its queue's
/// guaranteed lower-priority jobs when it then runs within the guarantee.
#[test]
fn kueue_preemption_that_ends_within_nominal_quota_goes_ahead() {
    let nodes = vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)];
    let vcs = vec![vc("alpha", "A100", 4), vc("beta", "A100", 4)];
    let queues = vec![pqueue("qa", "alpha"), queue("qb", "beta")];
    let jobs = vec![
        run(
            pjob("alpha/a1", "qa", 1, 2, -1),
            &[("n0", &[0, 1])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("alpha/a2", "qa", 1, 2, -1),
            &[("n0", &[2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("beta/b1", "qb", 1, 4, -1),
            &[("n1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        pjob("alpha/in", "qa", 1, 4, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(victims(&d), strings(&["alpha/a1", "alpha/a2"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/scheduler_test.go, case "prefer reclamation over cq priority based
/// preemption": a job within its guarantee on two GPU types takes back the type another team
/// borrows rather than preempting its own lower-priority job on the other type.
#[test]
fn kueue_prefer_reclamation_over_priority_preemption() {
    let nodes = vec![
        node("od0", "on-demand", 10, None),
        node("sp0", "spot", 10, None),
    ];
    let mut alpha = vc("alpha", "on-demand", 10);
    alpha.guarantee.push(FlavorGuarantee {
        flavor: Flavor::new("spot"),
        gpus: 10,
        cells: vec![],
    });
    let vcs = vec![alpha, vc("beta", "spot", 0)];
    let queues = vec![pqueue("qa", "alpha"), queue("qb", "beta")];
    let mut a1 = pjob("alpha/a1", "qa", 1, 5, 50);
    a1.gpu_types = vec![Flavor::new("on-demand")];
    let mut b1 = pjob("beta/b1", "qb", 1, 5, 50);
    b1.gpu_types = vec![Flavor::new("spot")];
    let jobs = vec![
        run(a1, &[("od0", &[0, 1, 2, 3, 4])], false, 0, CKPT),
        run(b1, &[("sp0", &[0, 1, 2, 3, 4])], true, 0, CKPT),
        pjob("alpha/preemptor", "qa", 1, 6, 100),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(victims(&d), strings(&["beta/b1"]));
}

/// Kueue pkg/scheduler/scheduler_test.go, case "only one workload can borrow one resources
/// from the same flavor in the same cycle if cohort quota cannot fit": two teams' jobs that
/// each need more than the idle GPUs left after the other are not both admitted in one cycle,
/// and borrowing evicts nobody.
#[test]
fn kueue_only_one_workload_borrows_when_both_cannot_fit() {
    let nodes = vec![
        node("n0", "A100", 10, None),
        node("n1", "A100", 10, None),
        node("n2", "A100", 10, None),
    ];
    let vcs = vec![
        vc("cq1", "A100", 10),
        vc("cq2", "A100", 10),
        vc("cq3", "A100", 10),
    ];
    let queues = vec![
        pqueue("lq1", "cq1"),
        pqueue("lq2", "cq2"),
        pqueue("lq3", "cq3"),
    ];
    let jobs = vec![
        pjob("cq1/wl1", "lq1", 2, 8, -1),
        pjob("cq2/wl2", "lq2", 2, 8, -2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.admissions.len(), 1, "{d:?}");
    assert!(
        d.admissions[0].bonus,
        "16 GPUs are beyond a guarantee of 10"
    );
    assert!(d.preemptions.is_empty());
    let other = if d.admissions[0].job == "cq1/wl1" {
        "cq2/wl2"
    } else {
        "cq1/wl1"
    };
    assert!(d.waiting_reason(other).is_some(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "reclaim nominal from user
/// using the most": the team below its guarantee takes back a GPU from the team that
/// borrows, never from the team at its guarantee.
#[test]
fn kueue_fair_reclaim_nominal_from_the_borrower() {
    let nodes = vec![
        node("n0", "A100", 3, None),
        node("n1", "A100", 3, None),
        node("n2", "A100", 3, None),
    ];
    let vcs = vec![vc("a", "A100", 3), vc("b", "A100", 3), vc("c", "A100", 3)];
    let queues = vec![queue("qa", "a"), queue("qb", "b"), queue("qc", "c")];
    let one = |id: &str, q: &str, n: &str, g: u32, bonus: bool| {
        run(job(id, q, 1, 1), &[(n, &[g])], bonus, 0, CKPT)
    };
    let jobs = vec![
        one("a/a1", "qa", "n0", 0, false),
        one("a/a2", "qa", "n0", 1, false),
        one("a/a3", "qa", "n0", 2, false),
        one("b/b1", "qb", "n1", 0, false),
        one("b/b2", "qb", "n1", 1, false),
        one("b/b3", "qb", "n1", 2, false),
        one("b/b4", "qb", "n2", 0, true),
        one("b/b5", "qb", "n2", 1, true),
        one("c/c1", "qc", "n2", 2, false),
        job("c/incoming", "qc", 1, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    let v = victims(&d);
    assert_eq!(v.len(), 1);
    assert!(v[0] == "b/b4" || v[0] == "b/b5", "{v:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "reclaim borrowable quota
/// from user using the most": with fair sharing, Kueue preempts the bigger borrower so that a
/// team at its nominal quota can borrow. Deliberate difference: in kubetrain bonus jobs never
/// cause preemption (docs/architecture.md and `sched` module docs, step 4); a team at its
/// guarantee only borrows idle GPUs, and waits with `QuotaExhausted` when there are none.
#[test]
fn kueue_fair_borrowing_never_preempts_differs() {
    let nodes = vec![
        node("n0", "A100", 3, None),
        node("n1", "A100", 3, None),
        node("n2", "A100", 3, None),
    ];
    let vcs = vec![vc("a", "A100", 3), vc("b", "A100", 3), vc("c", "A100", 3)];
    let queues = vec![pqueue("qa", "a"), queue("qb", "b"), queue("qc", "c")];
    let one = |id: &str, q: &str, n: &str, g: u32, bonus: bool| {
        run(job(id, q, 1, 1), &[(n, &[g])], bonus, 0, CKPT)
    };
    let jobs = vec![
        one("a/a1", "qa", "n0", 0, false),
        one("a/a2", "qa", "n0", 1, false),
        one("a/a3", "qa", "n0", 2, false),
        one("b/b1", "qb", "n1", 0, false),
        one("b/b2", "qb", "n1", 1, false),
        one("b/b3", "qb", "n1", 2, false),
        one("b/b4", "qb", "n2", 0, true),
        one("b/b5", "qb", "n2", 1, true),
        one("c/c1", "qc", "n2", 2, false),
        job("a/incoming", "qa", 1, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("a/incoming"),
            Some(WaitReason::QuotaExhausted { .. })
        ),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "old workloads last" (victim
/// candidate order): of two otherwise equal victims, the most recently started one goes
/// (the same work lost, docs/reclaim.md §2: "then to the most recently started job").
#[test]
fn kueue_old_workloads_last() {
    let nodes = vec![node("n0", "A100", 2, None)];
    let vcs = vec![vc("a", "A100", 2), vc("c", "A100", 0)];
    let queues = vec![queue("qa", "a"), queue("qc", "c")];
    let jobs = vec![
        run(job("c/older", "qc", 1, 1), &[("n0", &[0])], true, 100, CKPT),
        run(
            job("c/younger", "qc", 1, 1),
            &[("n0", &[1])],
            true,
            200,
            CKPT,
        ),
        job("a/in", "qa", 1, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(victims(&d), strings(&["c/younger"]), "{d:?}");
}

/// Volcano pkg/scheduler/actions/preempt/preempt_test.go, case "preempt enough tasks to fit
/// large task of different job": a large high-priority job preempts just enough lower-priority
/// jobs, never one it may not preempt (Volcano's `preemptable=false` pod is here a job of
/// another queue of the same team).
#[test]
fn volcano_preempt_enough_tasks_to_fit_large_task() {
    let nodes = vec![node("n1", "A100", 6, None)];
    let vcs = vec![vc("c1", "A100", 6)];
    let queues = vec![pqueue("q1", "c1"), queue("q-other", "c1")];
    let jobs = vec![
        run(
            pjob("c1/preemptee1", "q1", 1, 1, 10),
            &[("n1", &[0])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("c1/preemptee2", "q1", 1, 1, 10),
            &[("n1", &[1])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("c1/preemptee3", "q-other", 1, 1, 10),
            &[("n1", &[2])],
            false,
            0,
            CKPT,
        ),
        pjob("c1/preemptor1", "q1", 1, 5, 100_000),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(
        victims(&d),
        strings(&["c1/preemptee1", "c1/preemptee2"]),
        "{d:?}"
    );
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
}

/// Volcano pkg/scheduler/actions/preempt/preempt_test.go, cases "preempt low priority job in
/// same queue" and "preempt low priority job in same queue: allocatable and has enough
/// resource, don't preempt": with the queue's capability (here the VC limit) full, a
/// higher-priority job preempts a lower one even with idle GPUs on the node; with room under
/// the capability it is admitted and nobody is preempted.
#[test]
fn volcano_preempt_within_capability_only_when_needed() {
    let decide = |limit: u32| {
        let mut t = vc("c1", "A100", 12);
        t.limit_gpus = Some(limit);
        let jobs = vec![
            run(
                pjob("c1/preemptee1", "q1", 1, 3, 10),
                &[("n1", &[0, 1, 2])],
                false,
                0,
                CKPT,
            ),
            pjob("c1/preemptor1", "q1", 1, 3, 100_000),
        ];
        schedule(&snapshot(
            NOW,
            vec![node("n1", "A100", 12, None)],
            vec![t],
            vec![pqueue("q1", "c1")],
            jobs,
        ))
    };
    let d = decide(4);
    assert_eq!(victims(&d), strings(&["c1/preemptee1"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    let d = decide(6);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("c1/preemptor1").is_some(), "{d:?}");
}

/// Volcano pkg/scheduler/actions/reclaim/reclaim_test.go, case "Node available resources
/// should be included in reclaimed resources": the GPUs already free on the node count, so
/// only the shortfall is reclaimed (one borrower, not two).
#[test]
fn volcano_reclaim_counts_free_capacity() {
    let nodes = vec![node("n1", "A100", 3, None)];
    let vcs = vec![
        vc("q1", "A100", 0),
        vc("q2", "A100", 0),
        vc("q3", "A100", 3),
    ];
    let queues = vec![queue("q1", "q1"), queue("q2", "q2"), queue("q3", "q3")];
    let jobs = vec![
        run(
            job("c1/preemptee1-1", "q1", 1, 1),
            &[("n1", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            job("c1/preemptee2-1", "q2", 1, 1),
            &[("n1", &[1])],
            true,
            0,
            CKPT,
        ),
        job("c1/preemptor1", "q3", 1, 2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(victims(&d).len(), 1, "{d:?}");
}

/// Volcano pkg/scheduler/actions/reclaim/reclaim_test.go, case "sort reclaimees when
/// reclaiming from overusing queue": of borrowers losing the same work, the lowest-priority
/// job is reclaimed first.
#[test]
fn volcano_reclaim_sorts_reclaimees_by_priority() {
    let nodes = vec![node("n1", "A100", 4, None)];
    let vcs = vec![
        vc("q1", "A100", 0),
        vc("q2", "A100", 0),
        vc("q3", "A100", 1),
    ];
    let queues = vec![queue("q1", "q1"), queue("q2", "q2"), queue("q3", "q3")];
    let b = |id: &str, q: &str, g: u32, prio: i32| {
        run(pjob(id, q, 1, 1, prio), &[("n1", &[g])], true, 0, CKPT)
    };
    let jobs = vec![
        b("c1/pg1-1", "q1", 0, 500),
        b("c1/pg1-2", "q1", 1, 500),
        b("c1/pg2-1", "q2", 2, 100),
        b("c1/pg2-2", "q2", 3, 100),
        pjob("c1/pg3", "q3", 1, 1, 1000),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    let v = victims(&d);
    assert_eq!(v.len(), 1, "{d:?}");
    assert!(
        v[0].starts_with("c1/pg2-"),
        "low priority goes first: {v:?}"
    );
}

/// Volcano pkg/scheduler/plugins/capacity/capacity_test.go, case "case10: PreemptiveFn
/// respects capability — no reclaim when futureUsed would exceed capability": a team below
/// its guarantee whose limit (capability) the job would exceed reclaims nothing and waits on
/// the limit.
#[test]
fn volcano_capacity_no_reclaim_beyond_capability() {
    let nodes = vec![node("n9", "A100", 8, None)];
    let mut a = vc("a", "A100", 8);
    a.limit_gpus = Some(4);
    let vcs = vec![a, vc("b", "A100", 0)];
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let jobs = vec![
        run(
            job("a/running", "qa", 1, 2),
            &[("n9", &[0, 1])],
            false,
            0,
            CKPT,
        ),
        run(
            job("b/borrower", "qb", 1, 6),
            &[("n9", &[2, 3, 4, 5, 6, 7])],
            true,
            0,
            CKPT,
        ),
        job("a/in", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("a/in"),
            Some(WaitReason::OverLimit { limit_gpus: 4, .. })
        ),
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, case "If can't allocate
/// all tasks, dont' reclaim": a gang that would still not fit once every reclaimable job is
/// gone evicts nobody. (A second 1-GPU node, held within another team's guarantee, keeps the
/// gang from being one that never fits this cluster.)
#[test]
fn kai_gang_does_not_reclaim_when_it_cannot_fit_whole() {
    let nodes = vec![
        node("node0", "A100", 1, None),
        node("node1", "A100", 1, None),
    ];
    let vcs = vec![
        vc("queue0", "A100", 0),
        vc("queue1", "A100", 2),
        vc("other", "A100", 1),
    ];
    let queues = vec![
        queue("queue0", "queue0"),
        queue("queue1", "queue1"),
        queue("other", "other"),
    ];
    let jobs = vec![
        run(
            job("q0/running_job0", "queue0", 1, 1),
            &[("node0", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            job("o/own", "other", 1, 1),
            &[("node1", &[0])],
            false,
            0,
            CKPT,
        ),
        job("q1/pending_job0", "queue1", 2, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("q1/pending_job0").is_none());
    assert!(d.waiting_reason("q1/pending_job0").is_some());
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, case "dont reclaim if
/// will go over quota": a gang larger than its team's guarantee reclaims nothing from a
/// borrower holding the whole node.
#[test]
fn kai_gang_does_not_reclaim_beyond_quota() {
    let nodes = vec![node("node0", "A100", 10, None)];
    let vcs = vec![vc("queue0", "A100", 0), vc("queue1", "A100", 2)];
    let queues = vec![queue("queue0", "queue0"), queue("queue1", "queue1")];
    let jobs = vec![
        run(
            job("q0/running_job0", "queue0", 1, 10),
            &[("node0", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9])],
            true,
            0,
            CKPT,
        ),
        job("q1/pending_job0", "queue1", 2, 2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("q1/pending_job0"),
            Some(WaitReason::QuotaExhausted { .. })
        ),
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go, case "3 train job running, 1
/// build job pending for the same queue - no need to preempt both": two half-GPU jobs share
/// GPU 0 and a whole-GPU job holds GPU 1; a 1-GPU job of higher priority preempts the one
/// whole-GPU job, not both shares (the same work is lost either way: fewer victims wins).
#[test]
fn kai_no_need_to_preempt_both_shares() {
    let nodes = vec![node("node0", "A100", 2, None)];
    let mut s0 = share_job("q/running_job0", "queue0", 1, 500);
    s0.priority = 50;
    let mut s2 = share_job("q/running_job2", "queue0", 1, 500);
    s2.priority = 50;
    let jobs = vec![
        run(s0, &[("node0", &[0])], false, 0, CKPT),
        run(
            pjob("q/running_job1", "queue0", 1, 1, 50),
            &[("node0", &[1])],
            false,
            0,
            CKPT,
        ),
        run(s2, &[("node0", &[0])], false, 0, CKPT),
        pjob("q/pending_job0", "queue0", 1, 1, 100),
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 2)],
        vec![pqueue("queue0", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["q/running_job1"]), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go, case "3 train job running, 1
/// build job pending for the same queue - no need to preempt both", with unequal checkpoints:
/// three 1-GPU jobs that each lose 400 GPU-seconds, or one 3-GPU job that loses 900, can make
/// room for a 3-GPU job. kubetrain promises the victims that lose the least work
/// (docs/concepts.md, "Checkpoint-aware preemption"), so the 3-GPU job alone should go.
#[test]
fn kai_one_victim_losing_less_beats_several_cheap_ones() {
    let nodes = vec![node("node0", "A100", 6, None)];
    let small = |id: &str, g: u32| {
        run(
            pjob(id, "queue0", 1, 1, 50),
            &[("node0", &[g])],
            false,
            0,
            Some(NOW - 400),
        )
    };
    let jobs = vec![
        small("q/small-a", 0),
        small("q/small-b", 1),
        small("q/small-c", 2),
        run(
            pjob("q/big", "queue0", 1, 3, 50),
            &[("node0", &[3, 4, 5])],
            false,
            0,
            Some(NOW - 300),
        ),
        pjob("q/pending", "queue0", 1, 3, 100),
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 6)],
        vec![pqueue("queue0", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["q/big"]), "{d:?}");
    assert_eq!(d.preemptions[0].lost_gpu_seconds, 900);
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "reclaim nominal from user
/// using the most", with two borrowers: Kueue takes the GPU back from the team borrowing the
/// most. Deliberate difference: kubetrain chooses reclaim victims by the work they lose, then
/// priority, then age (docs/concepts.md, "Checkpoint-aware preemption"; docs/reclaim.md §2),
/// not by how much their team borrows, so the smaller borrower's job that checkpointed just
/// now goes.
#[test]
fn kueue_fair_reclaim_takes_least_lost_work_not_biggest_borrower_differs() {
    let nodes = vec![
        node("n0", "A100", 3, None),
        node("n1", "A100", 3, None),
        node("n2", "A100", 3, None),
    ];
    let vcs = vec![vc("a", "A100", 2), vc("b", "A100", 3), vc("c", "A100", 4)];
    let queues = vec![queue("qa", "a"), queue("qb", "b"), queue("qc", "c")];
    let one = |id: &str, q: &str, n: &str, g: u32, bonus: bool, ckpt: i64| {
        run(job(id, q, 1, 1), &[(n, &[g])], bonus, 0, Some(ckpt))
    };
    let jobs = vec![
        // a borrows one GPU (a3), b borrows two (b4, b5); c holds 1 of its 4
        one("a/a1", "qa", "n0", 0, false, NOW - 1000),
        one("a/a2", "qa", "n0", 1, false, NOW - 1000),
        one("a/a3", "qa", "n0", 2, true, NOW - 10),
        one("b/b1", "qb", "n1", 0, false, NOW - 1000),
        one("b/b2", "qb", "n1", 1, false, NOW - 1000),
        one("b/b3", "qb", "n1", 2, false, NOW - 1000),
        one("b/b4", "qb", "n2", 0, true, NOW - 1000),
        one("b/b5", "qb", "n2", 1, true, NOW - 1000),
        one("c/c1", "qc", "n2", 2, false, NOW - 1000),
        job("c/incoming", "qc", 1, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(victims(&d), strings(&["a/a3"]), "{d:?}");
    assert_eq!(d.preemptions[0].lost_gpu_seconds, 10);
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "with fair sharing: schedule workload with
/// lowest share first": of two jobs that would borrow the last idle GPU, the team that borrows
/// nothing yet gets it, even though the borrowing team's job is older.
#[test]
fn kueue_fs_schedule_workload_with_lowest_share_first() {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 6, None),
    ];
    // 22 GPUs: 10 guaranteed to each team, 2 to nobody (Kueue's eng-shared)
    let vcs = vec![vc("eng-alpha", "A100", 10), vc("eng-beta", "A100", 10)];
    let queues = vec![queue("qa", "eng-alpha"), queue("qb", "eng-beta")];
    let mut older = job("eng-beta/older_new", "qb", 1, 1);
    older.queued_at = NOW - 60;
    let mut new = job("eng-alpha/new", "qa", 1, 1);
    new.queued_at = NOW;
    let jobs = vec![
        run(
            job("eng-alpha/nominal-8", "qa", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            CKPT,
        ),
        run(
            job("eng-alpha/nominal-2", "qa", 1, 2),
            &[("n2", &[0, 1])],
            false,
            0,
            CKPT,
        ),
        run(
            job("eng-beta/nominal-8", "qb", 1, 8),
            &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            CKPT,
        ),
        run(
            job("eng-beta/nominal-2", "qb", 1, 2),
            &[("n2", &[2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            job("eng-beta/borrowing", "qb", 1, 1),
            &[("n2", &[4])],
            true,
            0,
            CKPT,
        ),
        older,
        new,
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    let a = d
        .admission("eng-alpha/new")
        .expect("the team borrowing less goes first");
    assert!(a.bonus);
    assert!(d.admission("eng-beta/older_new").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty());
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "reclaim from multiple
/// queues running on multiple nodes for a job with multiple tasks": a 3-replica gang within
/// its guarantee reclaims over two nodes every borrowed GPU it needs, from two teams, and
/// spares the job within its team's guarantee.
#[test]
fn kai_reclaim_from_multiple_queues_on_multiple_nodes() {
    let nodes = vec![
        node("node0", "A100", 2, None),
        node("node1", "A100", 2, None),
    ];
    let vcs = vec![
        vc("queue0", "A100", 0),
        vc("queue1", "A100", 1),
        vc("queue2", "A100", 3),
    ];
    let queues = vec![
        queue("queue0", "queue0"),
        queue("queue1", "queue1"),
        queue("queue2", "queue2"),
    ];
    let jobs = vec![
        run(
            job("q0/job0", "queue0", 1, 1),
            &[("node0", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            job("q1/job1", "queue1", 1, 1),
            &[("node0", &[1])],
            false,
            0,
            CKPT,
        ),
        run(
            job("q0/job2", "queue0", 1, 1),
            &[("node1", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            job("q1/job3", "queue1", 1, 1),
            &[("node1", &[1])],
            true,
            0,
            CKPT,
        ),
        job("q2/pending_job", "queue2", 3, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(
        victims(&d),
        strings(&["q0/job0", "q0/job2", "q1/job3"]),
        "{d:?}"
    );
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Reclaim)
    );
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go, case "1 train job running, 1
/// build job pending for the different queue - don't preempt": a higher-priority job does not
/// preempt another team's job that is within that team's guarantee; it waits.
#[test]
fn kai_no_preemption_across_queues() {
    let nodes = vec![node("node0", "A100", 1, None)];
    let vcs = vec![vc("queue0", "A100", 1), vc("queue1", "A100", 1)];
    let queues = vec![pqueue("queue0", "queue0"), pqueue("queue1", "queue1")];
    let jobs = vec![
        run(
            pjob("q0/running_job0", "queue0", 1, 1, 50),
            &[("node0", &[0])],
            false,
            0,
            CKPT,
        ),
        pjob("q1/pending_job0", "queue1", 1, 1, 100),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("q1/pending_job0").is_none());
    assert!(d.waiting_reason("q1/pending_job0").is_some());
}
