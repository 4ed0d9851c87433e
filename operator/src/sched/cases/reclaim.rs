//! Reclaim: a team below its guarantee takes GPUs back from teams using them as bonus;
//! which borrowers and which of their jobs go (lowest priority, least lost work, youngest),
//! reclaim against priority preemption, and when nothing is reclaimed (free capacity,
//! overcommitted guarantees, asks that fit nowhere).
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// KAI's two teams of `reclaim_test.go`: queue0 and queue1 deserve `deserved` GPUs each, on
/// one node of `gpus`.
fn kai_two_teams(gpus: u32, deserved: u32, jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", gpus, None)],
        vec![
            vc("queue0", "A100", deserved),
            vc("queue1", "A100", deserved),
        ],
        vec![queue("queue0", "queue0"), pqueue("queue1", "queue1")],
        jobs,
    ))
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

/// The world of TestReclaim's first cases: q1 runs three 1-GPU jobs on the full 3-GPU node,
/// two of which may not be preempted (here: more important, so they fill q1's guarantee of
/// 2); q2 (guaranteed 1) has a 1-GPU job waiting.
fn overusing_queue_world(q2_closed: bool) -> Snapshot {
    let mut q2 = queue("q2", "q2");
    q2.terminating = q2_closed;
    snapshot(
        NOW,
        vec![node("n1", "A100", 3, None)],
        vec![vc("q1", "A100", 2), vc("q2", "A100", 1)],
        vec![queue("q1", "q1"), q2],
        vec![
            on("c1/preemptee1", "q1", 10, "n1", &[0], false),
            on("c1/preemptee2", "q1", 0, "n1", &[1], true),
            on("c1/preemptee3", "q1", 10, "n1", &[2], false),
            job("c1/preemptor1", "q2", 1, 1),
        ],
    )
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

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "2 jobs from queue0
/// running on node0 - 2 pending jobs from queue1 - reclaim": queue0 runs two 1-GPU jobs with
/// a guarantee of 1; queue1 (guarantee 1) has two 1-GPU jobs pending. One borrowed job is
/// reclaimed for queue1's first job; its second job would be beyond its guarantee and waits,
/// reclaiming nothing.
#[test]
fn kai_one_reclaim_per_missing_guarantee() {
    let d = kai_two_teams(
        2,
        1,
        vec![
            on_node(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on_node(
                pjob("q0/running_job1", "queue0", 1, 1, TRAIN),
                "node0",
                &[1],
                true,
            ),
            queued(pjob("q1/pending_job0", "queue1", 1, 1, TRAIN), 1),
            queued(pjob("q1/pending_job1", "queue1", 1, 1, TRAIN), 2),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/running_job1"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(d.preemptions[0].beneficiary, "q1/pending_job0");
    assert!(
        waits_with(&d, "q1/pending_job0", "WaitingForPreemption"),
        "{d:?}"
    );
    assert!(d.admission("q1/pending_job1").is_none(), "{d:?}");
    assert!(
        !waits_with(&d, "q1/pending_job1", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "2 jobs from queue0
/// running on node0 (1 train, 1 build)- 2 pending jobs from queue1 - reclaim train": the
/// borrower's lower-priority (train) job is reclaimed, not its build job, even when the build
/// job is the one that started as bonus (docs/concepts.md, "Which jobs are bonus follows
/// priority").
#[test]
fn kai_reclaim_takes_the_borrowers_train_job_not_its_build_job() {
    let d = kai_two_teams(
        2,
        1,
        vec![
            on_node(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on_node(
                pjob("q0/running_job1", "queue0", 1, 1, BUILD),
                "node0",
                &[1],
                true,
            ),
            queued(pjob("q1/pending_job0", "queue1", 1, 1, TRAIN), 1),
            queued(pjob("q1/pending_job1", "queue1", 1, 1, TRAIN), 2),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/running_job0"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "Queues are over
/// provisioned, ratio between queues are equal, yet don't reclaim since number of used GPUs is
/// equal to the deserved GPUs": two teams are guaranteed 2 GPUs each on a 2-GPU node;
/// queue0's two jobs are within its guarantee, so queue1's jobs, though within theirs, reclaim
/// nothing and wait.
#[test]
fn kai_overcommitted_guarantees_reclaim_nothing() {
    let d = kai_two_teams(
        2,
        2,
        vec![
            on_node(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on_node(
                pjob("q0/running_job1", "queue0", 1, 1, TRAIN),
                "node0",
                &[1],
                false,
            ),
            queued(pjob("q1/pending_job0", "queue1", 1, 1, TRAIN), 1),
            queued(pjob("q1/pending_job1", "queue1", 1, 1, TRAIN), 2),
        ],
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(d.waiting_reason("q1/pending_job0").is_some(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "1 train job of 2 GPUs
/// from queue0 running on node0 with deserved of 1, 2 pending jobs (1 build) from queue1 -
/// reclaim": a 2-GPU job of a team guaranteed 1 runs beyond the guarantee as a whole and is
/// reclaimed, for queue1's build job, which goes first in its Priority queue although the
/// train job is older; the train job waits.
#[test]
fn kai_reclaim_for_the_higher_priority_pending_job() {
    let d = kai_two_teams(
        2,
        1,
        vec![
            on_node(
                pjob("q0/running_job0", "queue0", 1, 2, TRAIN),
                "node0",
                &[0, 1],
                true,
            ),
            queued(pjob("q1/pending_job0", "queue1", 1, 1, TRAIN), 1),
            queued(pjob("q1/pending_job1", "queue1", 1, 1, BUILD), 2),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/running_job0"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(d.preemptions[0].beneficiary, "q1/pending_job1");
    assert!(d.admission("q1/pending_job0").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "Reclaim jobs according
/// to queue fair share": queue0 and queue1 (1 GPU deserved each) run three 1-GPU jobs each on
/// a 6-GPU node, the third of lower priority; the reclaimer (2 deserved) asks for 2 × 1 GPU.
/// It takes one GPU from each borrower: their lower-priority jobs.
#[test]
fn kai_reclaim_takes_each_borrowers_lowest_priority_job() {
    let mut jobs = Vec::new();
    for q in ["q0", "q1"] {
        let queue = if q == "q0" { "queue0" } else { "queue1" };
        let first = if q == "q0" { 0 } else { 3 };
        for (i, prio) in [TRAIN, TRAIN, TRAIN - 1].into_iter().enumerate() {
            let i = i as u32;
            jobs.push(on_node(
                pjob(&format!("{q}/running_job{i}"), queue, 1, 1, prio),
                "node0",
                &[first + i],
                i > 0,
            ));
        }
    }
    jobs.push(pjob("r/reclaimer", "reclaimer_queue", 2, 1, TRAIN));
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 6, None)],
        vec![
            vc("queue0", "A100", 1),
            vc("queue1", "A100", 1),
            vc("reclaimer_queue", "A100", 2),
        ],
        vec![
            queue("queue0", "queue0"),
            queue("queue1", "queue1"),
            queue("reclaimer_queue", "reclaimer_queue"),
        ],
        jobs,
    ));
    assert_eq!(
        victims(&d),
        strings(&["q0/running_job2", "q1/running_job2"]),
        "{d:?}"
    );
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Reclaim)
    );
}

/// YuniKorn pkg/scheduler/objects/preemption_test.go,
/// TestTryPreemptionOnNodeWithOGParentAndUGPreemptor: child1 (no guarantee) runs six 1-unit
/// allocations over two full 3-unit nodes, created a minute apart; child2 (guaranteed 1) asks
/// for 1. Exactly one is preempted: alloc1, the youngest (here the one that loses the least
/// work, having no checkpoint).
#[test]
fn yunikorn_preemption_takes_the_youngest_borrowed_job() {
    let mut jobs = Vec::new();
    for i in 1..=6u32 {
        let (n, g) = if i % 2 == 0 {
            ("node1", (i / 2) - 1)
        } else {
            ("node2", i / 2)
        };
        jobs.push(run(
            job(&format!("c1/alloc{i}"), "child1", 1, 1),
            &[(n, &[g])],
            true,
            NOW - 60 * i64::from(i),
            None,
        ));
    }
    jobs.push(job("c2/alloc7", "child2", 1, 1));
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 3, None),
            node("node2", "A100", 3, None),
        ],
        vec![vc("child1", "A100", 0), vc("child2", "A100", 1)],
        vec![queue("child1", "child1"), queue("child2", "child2")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["c1/alloc1"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(d.preemptions[0].lost_gpu_seconds, 60);
}

/// YuniKorn pkg/scheduler/objects/preemption_test.go,
/// TestTryPreemption_NodeWithCapacityLesserThanAsk: two full 5-unit nodes, child1 running one
/// 5-unit allocation on each (one beyond its guarantee of 5); child2 (guaranteed 6) asks for
/// 6 units in one allocation, more than any node has. Nothing is preempted; here the job can
/// never fit this cluster and says so.
#[test]
fn yunikorn_no_preemption_for_an_ask_larger_than_any_node() {
    let jobs = vec![
        on_node(
            job("c1/alloc1", "child1", 1, 5),
            "node1",
            &[0, 1, 2, 3, 4],
            false,
        ),
        on_node(
            job("c1/alloc2", "child1", 1, 5),
            "node2",
            &[0, 1, 2, 3, 4],
            true,
        ),
        job("c2/alloc3", "child2", 1, 6),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 5, None),
            node("node2", "A100", 5, None),
        ],
        vec![vc("child1", "A100", 5), vc("child2", "A100", 6)],
        vec![queue("child1", "child1"), queue("child2", "child2")],
        jobs,
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "c2/alloc3", "NeverFits"), "{d:?}");
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

/// Volcano reclaim_test.go, TestReclaim, case "Two Queue with one Queue overusing resource,
/// should reclaim": only q1's preemptable job (here its bonus job) is reclaimed.
#[test]
fn volcano_reclaim_takes_the_overusing_queues_preemptable_job() {
    let d = schedule(&overusing_queue_world(false));
    assert_eq!(victims(&d), strings(&["c1/preemptee2"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "c1/preemptee2"),
        Some(PreemptionReason::Reclaim)
    );
    assert!(
        waits_with(&d, "c1/preemptor1", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// Volcano reclaim_test.go, TestReclaim, cases "can not reclaim resources when queue is not
/// open (proportion plugin)" and "(capacity plugin)": the same world with q2 closed (here
/// terminating): q2's job reclaims nothing and says why.
#[test]
fn volcano_closed_queue_reclaims_nothing() {
    let d = schedule(&overusing_queue_world(true));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "c1/preemptor1", "QueueTerminating"), "{d:?}");
}

/// Volcano reclaim_test.go, TestReclaim, case "only commit evictions on the node where
/// reclaim succeeds": q1 (deserving 1 of 10) runs a 2-GPU job; q2 (deserving 9) asks for 3
/// while 8 GPUs are idle. It starts at once and nothing is reclaimed.
#[test]
fn volcano_no_reclaim_when_the_node_has_room() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 10, None)],
        vec![vc("q1", "A100", 1), vc("q2", "A100", 9)],
        vec![queue("q1", "q1"), queue("q2", "q2")],
        vec![
            on("c1/victim-n1", "q1", 0, "n1", &[0, 1], true),
            job("c1/preemptor1", "q2", 1, 3),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    let a = d.admission("c1/preemptor1").expect("admitted");
    assert!(!a.bonus, "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_OnSessionOpenWithoutHierarchy, case "case2:
/// Can reclaim from other queues when allocated < deserved": q3 and q4 deserve 2 each of two
/// 2-GPU nodes; q3 runs 2 on n1 (may not be preempted: here within its guarantee) and 2 on
/// n2 (bonus). q4's 2-GPU job reclaims the bonus job and is to start on n2.
#[test]
fn volcano_capacity_reclaims_from_a_queue_beyond_its_deserved() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None), node("n2", "A100", 2, None)],
        vec![vc("q3", "A100", 2), vc("q4", "A100", 2)],
        vec![queue("q3", "q3"), queue("q4", "q4")],
        vec![
            on("ns1/p5", "q3", 10, "n1", &[0, 1], false),
            on("ns1/p6", "q3", 0, "n2", &[0, 1], true),
            job("ns1/p7", "q4", 1, 2),
        ],
    ));
    assert_eq!(victims(&d), strings(&["ns1/p6"]), "{d:?}");
    assert_eq!(reason_of(&d, "ns1/p6"), Some(PreemptionReason::Reclaim));
    assert!(waits_with(&d, "ns1/p7", "WaitingForPreemption"), "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_OnSessionOpenWithoutHierarchy, case "case6:
/// Can not reclaim from other queues when allocated + req > deserved": q12 deserves 1 and
/// runs 1; q13 deserves nothing and runs 1 on the full 2-GPU node. q12's next 1-GPU job would
/// take it beyond its deserved: it reclaims nothing and waits.
#[test]
fn volcano_capacity_no_reclaim_beyond_deserved() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![
            limited(vc("q12", "A100", 1), 4),
            limited(vc("q13", "A100", 0), 2),
        ],
        vec![queue("q12", "q12"), queue("q13", "q13")],
        vec![
            on("ns1/p19", "q12", 0, "n1", &[0], false),
            on("ns1/p21", "q13", 0, "n1", &[1], true),
            job("ns1/p20", "q12", 1, 1),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "ns1/p20", "QuotaExhausted"), "{d:?}");
}
