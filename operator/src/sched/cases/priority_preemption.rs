//! Priority preemption inside a team: which lower-priority jobs of the preemptor's own
//! queue (or VirtualCluster) go, the smallest set that makes room, no preemption where idle
//! GPUs fit, where the queue does not allow it or across queues, and preemption only while
//! the preemptor stays within its guarantee.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

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

fn limited_opt(mut v: VirtualCluster, limit: Option<u32>) -> VirtualCluster {
    v.limit_gpus = limit;
    v
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
                limited_opt(vc("c1", "A100", 6), limit),
                limited_opt(vc("c2", "A100", 6), limit),
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

/// HiveD pkg/algorithm/hived_algorithm_test.go, `expectedPreemptInfos`, pod16/pod17 preempt
/// pod5/pod6 ("trigger preemption"): a higher-priority 2-node gang of a VC with node cells
/// preempts the VC's lower-priority 2-node gang as a whole (both replicas, one victim job),
/// and never the other VC's guaranteed job.
#[test]
fn hived_higher_priority_gang_preempts_lower_priority_gang_in_the_vc() {
    let nodes = (0..3)
        .map(|i| node(&format!("n{i}"), "V100", 8, None))
        .collect();
    let vcs = vec![
        cells_vc("vc1", "V100", 16, TopologyLevel::Node, 2),
        vc("vc2", "V100", 8),
    ];
    let queues = vec![pqueue("q1", "vc1"), queue("q2", "vc2")];
    let all8: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let jobs = vec![
        run(
            pjob("vc1/group5", "q1", 2, 8, 1),
            &[("n0", all8), ("n1", all8)],
            false,
            0,
            CKPT,
        ),
        run(job("vc2/own", "q2", 1, 8), &[("n2", all8)], false, 0, CKPT),
        pjob("vc1/group11", "q1", 2, 8, 2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(victims(&d), strings(&["vc1/group5"]));
    assert!(matches!(
        d.waiting_reason("vc1/group11"),
        Some(WaitReason::WaitingForPreemption { .. })
    ));
}

/// Volcano preempt_test.go, TestPreempt, case "do not preempt if there are enough idle
/// resources": a higher-priority job whose GPUs are idle starts on them; the lower-priority
/// jobs of its queue keep running.
#[test]
fn volcano_no_preemption_when_idle_gpus_fit() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 10, None)],
        vec![vc("q1", "A100", 10)],
        vec![pqueue("q1", "q1")],
        vec![
            on("c1/preemptee1", "q1", 0, "n1", &[0], false),
            on("c1/preemptee2", "q1", 0, "n1", &[1], false),
            pjob("c1/preemptor1", "q1", 1, 1, 100),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("c1/preemptor1").is_some(), "{d:?}");
}

/// Volcano preempt_test.go, TestPreempt, case "can not preempt resources when task
/// preemption policy is never": the preemptor may not preempt (here its queue has no priority
/// preemption), so on the full 1-GPU node nobody is evicted and it waits.
#[test]
fn volcano_no_priority_preemption_in_a_queue_that_does_not_allow_it() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 1, None)],
        vec![vc("q1", "A100", 1)],
        vec![queue("q1", "q1")],
        vec![
            on("c1/preemptee1", "q1", 10, "n1", &[0], false),
            pjob("c1/preemptor1", "q1", 1, 1, 100_000),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("c1/preemptor1").is_none(), "{d:?}");
}

/// Volcano preempt_test.go, TestPreempt, case "multi-queue: preemptorTasks must not be
/// overwritten by intra-job preemption of another queue": q1 runs a job and has nothing
/// waiting; q2 runs a low-priority job and its high-priority job waits on the full 2-GPU
/// node. q2's own low-priority job is preempted, q1's is not (each queue deserves one GPU,
/// here a VirtualCluster guaranteed 1).
#[test]
fn volcano_priority_preemption_stays_in_the_preemptors_queue() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![vc("q1", "A100", 1), limited(vc("q2", "A100", 1), 4)],
        vec![queue("q1", "q1"), pqueue("q2", "q2")],
        vec![
            on("c1/q1-runner1", "q1", 0, "n1", &[0], false),
            on("c1/q2-preemptee1", "q2", 10, "n1", &[1], false),
            pjob("c1/q2-preemptor1", "q2", 1, 1, 100_000),
        ],
    ));
    assert_eq!(victims(&d), strings(&["c1/q2-preemptee1"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "c1/q2-preemptee1"),
        Some(PreemptionReason::Priority)
    );
    assert!(
        waits_with(&d, "c1/q2-preemptor1", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// Volcano preempt_test.go, TestTopologyAwarePreempt, case "preemption with priority
/// queues": q1 and q2 each deserve and may hold one GPU (guarantee and limit 1); q2 (of
/// higher queue priority) runs a high-priority job, q1 a low-priority one, on the full 2-GPU
/// node. q1's high-priority job preempts q1's low-priority job, not q2's.
#[test]
fn volcano_priority_queues_preempt_the_own_queues_low_priority_job() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![
            limited(vc("q1", "A100", 1), 1),
            limited(vc("q2", "A100", 1), 1),
        ],
        vec![pqueue("q1", "q1"), pqueue("q2", "q2")],
        vec![
            on("c1/preemptee2", "q2", 100_000, "n1", &[0], false),
            on("c1/preemptee1", "q1", 10, "n1", &[1], false),
            pjob("c1/preemptor1", "q1", 1, 1, 100_000),
        ],
    ));
    assert_eq!(victims(&d), strings(&["c1/preemptee1"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "c1/preemptee1"),
        Some(PreemptionReason::Priority)
    );
}
