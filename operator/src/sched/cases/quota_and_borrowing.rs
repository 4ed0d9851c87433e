//! Quota and borrowing: jobs beyond a team's guarantee run as bonus while others'
//! guarantees are idle; VirtualCluster limits (a borrowing limit, a queue capability, an
//! ElasticQuota's max) cap admission and preemption; no over-admission.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// Kueue's `eng` cohort scaled down: two teams guaranteed 10 A100 each, on 20 A100.
fn eng_cohort(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 10, None), node("n1", "A100", 10, None)],
        vec![vc("alpha", "A100", 10), vc("beta", "A100", 10)],
        vec![queue("qa", "alpha"), queue("qb", "beta")],
        jobs,
    ))
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

/// Kueue pkg/scheduler/scheduler_test.go, case "cannot borrow if cohort was assigned and
/// would result in overadmission": a job within its team's guarantee is admitted, and the
/// other team's job that must borrow more than is idle after it waits; nothing is
/// overcommitted and nobody is preempted.
#[test]
fn kueue_cannot_borrow_if_it_would_overadmit() {
    let d = eng_cohort(vec![
        ones("alpha/new", "qa", 9, 0),
        ones("beta/new", "qb", 12, 0),
    ]);
    assert_eq!(admitted_and_bonus_gpus(&d, "alpha/"), (9, 0), "{d:?}");
    assert!(waits_with(&d, "beta/new", "QuotaExhausted"), "{d:?}");
    assert!(d.preemptions.is_empty());
}

/// Kueue pkg/scheduler/scheduler_test.go, case "can borrow if cohort was assigned and will
/// not result in overadmission": when the idle GPUs left after the guaranteed job cover the
/// borrower, both are admitted in the same cycle, the borrower as bonus.
#[test]
fn kueue_can_borrow_when_it_does_not_overadmit() {
    let d = eng_cohort(vec![
        ones("alpha/new", "qa", 9, 0),
        ones("beta/new", "qb", 11, 0),
    ]);
    assert_eq!(admitted_and_bonus_gpus(&d, "alpha/"), (9, 0), "{d:?}");
    assert_eq!(admitted_and_bonus_gpus(&d, "beta/"), (11, 11), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "single clusterQueue full": a ClusterQueue
/// without a cohort (here a VC whose limit is its guarantee) holding 8 of its 10 does not
/// admit a 3-GPU job, even with another team's GPUs idle; the limit is the reason given.
#[test]
fn kueue_single_cluster_queue_full() {
    let mut sales = vc("sales", "A100", 10);
    sales.limit_gpus = Some(10);
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 10, None), node("n1", "A100", 10, None)],
        vec![sales, vc("other", "A100", 10)],
        vec![queue("qs", "sales"), queue("qo", "other")],
        vec![
            running("sales/assigned", "qs", &[("n0", 0, 8)], false),
            ones("sales/new", "qs", 3, 0),
        ],
    ));
    assert!(waits_with(&d, "sales/new", "OverLimit"), "{d:?}");
    assert!(d.admissions.is_empty());
}

/// Kueue pkg/scheduler/scheduler_test.go, case "preemption while borrowing, workload waiting
/// for preemption should not block a borrowing workload in another CQ": team a, below its
/// guarantee, waits for a reclaim of c's borrowed node; meanwhile team b borrows the GPUs
/// that are idle elsewhere, in the same cycle.
#[test]
fn kueue_waiting_for_preemption_does_not_block_borrowing_elsewhere() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)],
        vec![vc("a", "A100", 4), vc("b", "", 0), vc("c", "A100", 2)],
        vec![queue("qa", "a"), queue("qb", "b"), queue("qc", "c")],
        vec![
            running("c/borrowed", "qc", &[("n0", 0, 4)], true),
            running("c/own", "qc", &[("n1", 0, 2)], false),
            job("a/whole", "qa", 1, 4),
            job("b/two", "qb", 1, 2),
        ],
    ));
    match d.waiting_reason("a/whole") {
        Some(WaitReason::WaitingForPreemption { reason, victims }) => {
            assert_eq!(*reason, PreemptionReason::Reclaim);
            assert_eq!(victims, &vec!["c/borrowed".to_string()]);
        }
        r => panic!("a/whole should wait for a reclaim, got {r:?}: {d:?}"),
    }
    let b = d.admission("b/two").expect("b borrows the idle GPUs");
    assert!(b.bonus);
    assert!(b.placement.iter().all(|p| p.node == "n1"), "{d:?}");
}

/// scheduler-plugins pkg/capacityscheduling/capacity_scheduling_test.go, TestPreFilter, case
/// "pod subjects to ElasticQuota" (min 10, max 20, 3 used): a 5-GPU job fits under max and
/// starts; an 18-GPU job would take the team above max and waits on the limit, though the
/// cluster has the GPUs.
#[test]
fn capacity_scheduling_pod_subject_to_elastic_quota() {
    let mut ns1 = vc("ns1", "A100", 10);
    ns1.limit_gpus = Some(20);
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("n0", "A100", 10, None),
            node("n1", "A100", 10, None),
            node("n2", "A100", 10, None),
        ],
        vec![ns1, vc("ns-other", "A100", 20)],
        vec![queue("q1", "ns1"), queue("qo", "ns-other")],
        vec![
            running("ns1/used", "q1", &[("n0", 0, 3)], false),
            ones("ns1/p1", "q1", 5, 0),
            ones("ns1/p2", "q1", 18, 1),
        ],
    ));
    assert!(d.admission("ns1/p1").is_some_and(|a| !a.bonus), "{d:?}");
    assert!(waits_with(&d, "ns1/p2", "OverLimit"), "{d:?}");
}

/// scheduler-plugins pkg/capacityscheduling/capacity_scheduling_test.go, TestPreFilter, case
/// "the sum of used is bigger than the sum of min": ns1 borrows 8 beyond its min, so ns2's job
/// within its own min cannot start on free capacity; it gets its min back from ns1's borrowed
/// jobs (capacity scheduling's PostFilter preemption, here a reclaim), not from ns1's own.
#[test]
fn capacity_scheduling_sum_of_used_bigger_than_sum_of_min() {
    let mut ns1 = vc("ns1", "A100", 10);
    ns1.limit_gpus = Some(20);
    let mut ns2 = vc("ns2", "A100", 10);
    ns2.limit_gpus = Some(20);
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 10, None), node("n1", "A100", 10, None)],
        vec![ns1, ns2],
        vec![queue("q1", "ns1"), queue("q2", "ns2")],
        vec![
            running("ns1/own", "q1", &[("n0", 0, 10)], false),
            running("ns1/borrowed-a", "q1", &[("n1", 0, 4)], true),
            running("ns1/borrowed-b", "q1", &[("n1", 4, 4)], true),
            running("ns2/used", "q2", &[("n1", 8, 2)], false),
            ones("ns2/p1", "q2", 5, 0),
        ],
    ));
    assert!(d.admission("ns2/p1").is_none(), "{d:?}");
    match d.waiting_reason("ns2/p1") {
        Some(WaitReason::WaitingForPreemption { reason, victims }) => {
            assert_eq!(*reason, PreemptionReason::Reclaim);
            assert_eq!(
                victims,
                &vec!["ns1/borrowed-a".to_string(), "ns1/borrowed-b".to_string()]
            );
        }
        r => panic!("ns2/p1 should wait for a reclaim, got {r:?}: {d:?}"),
    }
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "1 job running on node0,
/// 3 pending jobs, not enough deserved GPUs for build job - allocate train job": as above but
/// the queue deserves only 1 GPU, so its running 2-GPU job already borrows. KAI never runs a
/// build job (non-preemptible) beyond deserved, so it skips it and starts the 2-GPU train
/// job instead. Deliberate difference: kubetrain has no non-preemptible class; any job beyond
/// its guarantee may borrow idle GPUs as bonus, preemptible by reclaim (docs/concepts.md,
/// "Guaranteed and bonus"), and a `Priority` queue offers its highest-priority job first
/// (docs/concepts.md, Queue, `policy`). So the build job borrows the two idle GPUs and both
/// train jobs wait.
#[test]
fn kai_build_job_beyond_deserved_borrows_differs() {
    let jobs = vec![
        on_places(
            pjob("q/running_job0", "queue1", 1, 2, TRAIN),
            &[("node0", &[0, 1])],
            false,
        ),
        queued(pjob("q/pending_job0", "queue1", 1, 4, TRAIN), 1),
        queued(pjob("q/pending_job1", "queue1", 1, 2, TRAIN), 2),
        queued(pjob("q/pending_job2", "queue1", 1, 2, BUILD), 3),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue1", "A100", 1)],
        vec![by_priority(queue("queue1", "queue1"))],
        jobs,
    ));
    let a = d
        .admission("q/pending_job2")
        .expect("the build job borrows");
    assert!(a.bonus, "{a:?}");
    assert!(d.admission("q/pending_job1").is_none(), "{d:?}");
    assert!(d.admission("q/pending_job0").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateGang_test.go, case "Don't allocate
/// gang interactive job if it will go over quota" (a gang of two 2-GPU build tasks, 3
/// deserved, 10 idle GPUs), and allocateFractionalGpu_test.go, case "1 shared gpu job running,
/// 1 pending interactive shared gpu job - queue will be overused, don't allocate" (a 0.6 build
/// share runs, a 0.5 build share waits, 1 deserved), and allocate_test.go, case "Attempt to
/// allocate inference over quota" (an inference job, priority 125, of a queue deserving
/// nothing, on one GPU deserved by another, idle, queue): KAI keeps non-preemptible jobs
/// within deserved, so none starts. Deliberate difference: kubetrain has no non-preemptible class;
/// a job beyond its VirtualCluster's guarantee borrows idle GPUs as bonus, preemptible by
/// reclaim (docs/concepts.md, "Guaranteed and bonus"; `sched` module docs, "Bonus phase").
#[test]
fn kai_build_jobs_over_quota_run_as_bonus_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 10, None)],
        vec![vc("queue0", "A100", 3)],
        vec![queue("queue0", "queue0")],
        vec![pjob("q/pending_job0", "queue0", 2, 2, BUILD)],
    ));
    let a = d.admission("q/pending_job0").expect("borrows");
    assert!(a.bonus && a.placement.len() == 2, "{a:?}");

    let mut running = share_job("q/running_shared_gpu_job0", "queue0", 1, 600);
    running.priority = BUILD;
    let mut pending = share_job("q/pending_shared_gpu_job1", "queue0", 1, 500);
    pending.priority = BUILD;
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 1)],
        vec![queue("queue0", "queue0")],
        vec![on_places(running, &[("node0", &[0])], false), pending],
    ));
    let a = d.admission("q/pending_shared_gpu_job1").expect("borrows");
    assert!(a.bonus, "{a:?}");
    assert_eq!(a.placement[0].gpus, vec![GpuIndex(1)], "{a:?}");

    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 1, None)],
        vec![vc("queue0", "A100", 0), vc("queue1", "A100", 1)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        vec![pjob("q/pending_job0", "queue0", 1, 1, 125)],
    ));
    assert!(d.admission("q/pending_job0").expect("borrows").bonus);
}

/// Kueue pkg/scheduler/scheduler_test.go, cases "admit in different cohorts" and "admit in
/// same cohort with no borrowing". `sales` (5 of type `default`, no cohort: a limit of 5) and
/// `eng-alpha` (5 `on-demand`, in cohort `eng` with `eng-beta`, 5 `on-demand` each, borrowing
/// limit 5): sales' 1-GPU job and alpha's 6-GPU job, which borrows 1 of beta's idle GPUs,
/// both start in one cycle; then alpha's and beta's 4-GPU jobs both start within their
/// guarantees.
#[test]
fn kueue_admit_in_different_cohorts_and_in_one_cohort() {
    let nodes = || {
        vec![
            node("default-0", "default", 5, None),
            node("on-demand-0", "on-demand", 10, None),
        ]
    };
    let vcs = || {
        vec![
            limited(vc("sales", "default", 5), 5),
            limited(vc("eng-alpha", "on-demand", 5), 10),
            limited(vc("eng-beta", "on-demand", 5), 10),
        ]
    };
    let queues = || {
        vec![
            queue("sales", "sales"),
            queue("eng-alpha", "eng-alpha"),
            queue("eng-beta", "eng-beta"),
        ]
    };
    let d = schedule(&snapshot(
        NOW,
        nodes(),
        vcs(),
        queues(),
        vec![
            typed(job("sales/new", "sales", 1, 1), &["default"]),
            typed(job("eng-alpha/new", "eng-alpha", 6, 1), &["on-demand"]),
        ],
    ));
    assert!(!d.admission("sales/new").expect("sales starts").bonus);
    let a = d.admission("eng-alpha/new").expect("alpha borrows");
    assert!(a.bonus && a.flavor == Flavor::new("on-demand"), "{a:?}");

    let d = schedule(&snapshot(
        NOW,
        nodes(),
        vcs(),
        queues(),
        vec![
            typed(job("eng-alpha/new", "eng-alpha", 4, 1), &["on-demand"]),
            typed(job("eng-beta/new", "eng-beta", 4, 1), &["on-demand"]),
        ],
    ));
    for j in ["eng-alpha/new", "eng-beta/new"] {
        assert!(!d.admission(j).expect("starts").bonus, "{d:?}");
    }
}

/// Kueue pkg/scheduler/scheduler_test.go, case "two workloads can borrow the same resources
/// from the same flavor in the same cycle if fits in the cohort quota": three teams owed 10
/// GPUs each (borrowing limit 10) on 30 GPUs; cq1's 16-GPU job and cq2's 14-GPU job both
/// borrow cq3's idle GPUs in the same cycle (16 + 14 = 30).
#[test]
fn kueue_two_teams_borrow_in_the_same_cycle() {
    let d = schedule(&snapshot(
        NOW,
        (0..3)
            .map(|i| node(&format!("n{i}"), "A100", 10, None))
            .collect(),
        vec![
            limited(vc("cq1", "A100", 10), 20),
            limited(vc("cq2", "A100", 10), 20),
            limited(vc("cq3", "A100", 10), 20),
        ],
        vec![
            pqueue("cq1", "cq1"),
            pqueue("cq2", "cq2"),
            pqueue("cq3", "cq3"),
        ],
        vec![
            pjob("sales/wl1", "cq1", 16, 1, -1),
            pjob("sales/wl2", "cq2", 14, 1, -2),
        ],
    ));
    for j in ["sales/wl1", "sales/wl2"] {
        assert!(d.admission(j).expect("borrows").bonus, "{d:?}");
    }
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "capacity not blocked when lending clusterqueue
/// can reclaim (ReclaimWithinCohort=Any)": ClusterQueueA is owed 2 GPUs and runs 1; its
/// 2-GPU job would go beyond its guarantee and does not fit the one idle GPU.
/// ClusterQueueB (owed nothing) borrows that GPU for its 1-GPU job: A can take it back.
#[test]
fn kueue_lender_that_can_reclaim_does_not_block_borrowing() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "on-demand", 2, None)],
        vec![vc("a", "on-demand", 2), vc("b", "on-demand", 0)],
        vec![queue("a", "a"), queue("b", "b")],
        vec![
            on_places(job("a/a1-admitted", "a", 1, 1), &[("n0", &[0])], false),
            queued(job("a/a2-pending", "a", 1, 2), 1),
            queued(job("b/b1-pending", "b", 1, 1), 2),
        ],
    ));
    let b = d.admission("b/b1-pending").expect("b borrows");
    assert!(b.bonus, "{b:?}");
    assert!(d.admission("a/a2-pending").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Volcano pkg/scheduler/actions/preempt/preempt_test.go, case "preempt low priority job in
/// same queue but not pod with preemptable=false or higher priority": the queue's capability
/// (3, here the VC limit) is full with three 1-GPU jobs: one that may not be preempted (here a
/// job of another queue of the team), one of lower priority and one of the preemptor's own
/// priority. The higher-priority job preempts only the lower-priority one, although the node
/// has idle GPUs.
#[test]
fn volcano_capability_preemption_spares_equal_priority_and_unpreemptable_jobs() {
    let mut c1 = vc("c1", "A100", 3);
    c1.limit_gpus = Some(3);
    let jobs = vec![
        on_node(
            pjob("c1/preemptee1", "q-other", 1, 1, 10),
            "n1",
            &[0],
            false,
        ),
        on_node(pjob("c1/preemptee2", "q1", 1, 1, 10), "n1", &[1], false),
        on_node(
            pjob("c1/preemptee3", "q1", 1, 1, 100_000),
            "n1",
            &[2],
            false,
        ),
        pjob("c1/preemptor1", "q1", 1, 1, 100_000),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 12, None)],
        vec![c1],
        vec![pqueue("q1", "c1"), queue("q-other", "c1")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["c1/preemptee2"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(d.preemptions[0].beneficiary, "c1/preemptor1");
}

/// Volcano pkg/scheduler/actions/preempt/preempt_test.go, case "rollback evictions when
/// preemptor exceeds queue capability after evicting victims": a 4-GPU job of a queue whose
/// capability is 3 can never run there, so evicting its two lower-priority jobs would free
/// nothing it can use: nobody is preempted, and the job waits on the limit.
#[test]
fn volcano_job_larger_than_the_capability_evicts_nobody() {
    let mut c1 = vc("c1", "A100", 3);
    c1.limit_gpus = Some(3);
    let jobs = vec![
        on_node(pjob("c1/preemptee1", "q1", 1, 1, 10), "n1", &[0], false),
        on_node(pjob("c1/preemptee2", "q1", 1, 1, 10), "n1", &[1], false),
        pjob("c1/preemptor1", "q1", 1, 4, 100_000),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 10, None)],
        vec![c1],
        vec![pqueue("q1", "c1")],
        jobs,
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("c1/preemptor1"),
            Some(WaitReason::OverLimit { limit_gpus: 3, .. })
        ),
        "{d:?}"
    );
}

/// Volcano pkg/scheduler/actions/preempt/preempt_test.go, case "only commit evictions on the
/// node where preemption succeeds": capability 6, 5 GPUs in use (1 on n1 of 3 GPUs, 4 on n2 of
/// 4), a 3-GPU job of higher priority. Evicting the 1-GPU job frees the node but not the
/// capability; the 4-GPU job frees both. Only it is preempted, not both.
#[test]
fn volcano_capability_preemption_evicts_only_where_the_job_then_fits() {
    let mut c1 = vc("c1", "A100", 6);
    c1.limit_gpus = Some(6);
    let jobs = vec![
        on_node(pjob("c1/preemptee1", "q1", 1, 1, 10), "n1", &[0], false),
        on_node(
            pjob("c1/preemptee2", "q1", 1, 4, 10),
            "n2",
            &[0, 1, 2, 3],
            false,
        ),
        pjob("c1/preemptor1", "q1", 1, 3, 100_000),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 3, None), node("n2", "A100", 4, None)],
        vec![c1],
        vec![pqueue("q1", "c1")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["c1/preemptee2"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
}

/// Volcano capacity_test.go, Test_capacityPlugin_OnSessionOpenWithoutHierarchy, cases
/// "case0: Pod allocatable when queue has not exceed capability" and "case1: Pod not
/// allocatable when queue exceed queue capability": two 2-GPU nodes, a queue running one
/// 1-GPU job. With a capability of 2 its next 1-GPU job starts; with 1.5 (here 1, whole GPUs)
/// it waits on the limit although three GPUs are idle.
#[test]
fn volcano_capability_admits_below_it_and_blocks_at_it() {
    let world = |limit: u32| {
        snapshot(
            NOW,
            vec![node("n1", "A100", 2, None), node("n2", "A100", 2, None)],
            vec![limited(vc("q", "A100", 0), limit)],
            vec![queue("q", "q")],
            vec![
                on("ns1/p1", "q", 0, "n1", &[0], true),
                job("ns1/p2", "q", 1, 1),
            ],
        )
    };
    let d = schedule(&world(2));
    assert!(d.admission("ns1/p2").is_some(), "{d:?}");
    let d = schedule(&world(1));
    assert!(waits_with(&d, "ns1/p2", "OverLimit"), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}
