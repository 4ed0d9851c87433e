//! Hierarchical queues: queues with shares inside one VirtualCluster (Volcano and YuniKorn
//! hierarchies, KAI departments), a parent's limit bounding its children, and reclaim
//! between siblings and across parents.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

const INFERENCE: i32 = 125;

/// Like [`on`], started at `started` and never checkpointed: the younger, the less it loses.
fn on_since(
    id: &str,
    queue: &str,
    prio: i32,
    node: &str,
    gpus: &[u32],
    bonus: bool,
    started: i64,
) -> Job {
    run(
        pjob(id, queue, 1, gpus.len() as u32, prio),
        &[(node, gpus)],
        bonus,
        started,
        None,
    )
}

fn child(q: Queue, parent: &str, share: u32) -> Queue {
    let mut q = shared(q, share);
    q.parent = Some(parent.into());
    q
}

/// Volcano capacity_test.go's project tree of Test_capacityPlugin_AncestorReclaimScenarios on
/// one 4-GPU node: project1 deserves 1 (may hold 2) and project2 deserves 3 (may hold 4),
/// each split into a `non-preemptable` child that deserves all of it and a `preemptable`
/// child that deserves nothing.
fn project_tree() -> (Vec<VirtualCluster>, Vec<Queue>) {
    let mut queues = Vec::new();
    for p in ["project1", "project2"] {
        queues.push(queue(&format!("{p}_root"), p));
        queues.push(child(
            queue(&format!("{p}_non-preemptable"), p),
            &format!("{p}_root"),
            100,
        ));
        queues.push(child(
            queue(&format!("{p}_preemptable"), p),
            &format!("{p}_root"),
            0,
        ));
    }
    (
        vec![
            limited(vc("project1", "A100", 1), 2),
            limited(vc("project2", "A100", 3), 4),
        ],
        queues,
    )
}

/// YuniKorn's two-level tree of the `UGParent` cases on one 2-unit node: `parent` (max 20)
/// has parent1 (guaranteed 10) with child1 and child2, and parent2 (no guarantee) with child3.
/// child1 runs two 1-unit allocations (two applications) on the full node, child2 asks for 1.
/// Shares are parts of parent1's 10: `None` leaves both children at the default (unset
/// guarantees, overlapping), `Some((c1, c2))` sets them.
fn ug_parent_world(shares: Option<(u32, u32)>) -> Snapshot {
    let (s1, s2) = shares.unwrap_or((100, 100));
    snapshot(
        NOW,
        vec![node("node1", "A100", 2, None)],
        vec![limited(vc("parent", "A100", 10), 20)],
        vec![
            shared(queue("parent1", "parent"), 100),
            shared(queue("parent2", "parent"), 0),
            child(queue("child1", "parent"), "parent1", s1),
            child(queue("child2", "parent"), "parent1", s2),
            child(queue("child3", "parent"), "parent2", 100),
        ],
        vec![
            on("app1/alloc1", "child1", 0, "node1", &[0], false),
            on("app2/alloc2", "child1", 0, "node1", &[1], false),
            job("app3/alloc3", "child2", 1, 1),
        ],
    )
}

/// YuniKorn pkg/scheduler/objects/queue_test.go, TestMaxHeadroomMax: `parent` (max 20) over
/// `leaf1` (max 10) and `leaf2` (no max), each using 5. Headroom: leaf1 min(10 − 5, 20 − 10)
/// = 5, leaf2 20 − 10 = 10. Here one team owed all 40 GPUs, `parent` a queue of `maxShare`
/// 50 % of the cluster and `leaf1` one of 25 %: a 6-GPU job of leaf1 and an 11-GPU job of
/// leaf2 wait for those caps; a 5-GPU job of each then both start, filling parent to 20.
#[test]
fn yunikorn_leaf_headroom_is_bounded_by_its_parent() {
    let world = |pending: Vec<Job>| {
        let parent = Queue {
            max_share: 50,
            ..queue("parent", "team")
        };
        let leaf1 = Queue {
            parent: Some("parent".into()),
            max_share: 25,
            ..queue("leaf1", "team")
        };
        let leaf2 = Queue {
            parent: Some("parent".into()),
            ..queue("leaf2", "team")
        };
        let mut jobs = vec![
            on_places(
                job("team/leaf1-run", "leaf1", 1, 5),
                &[("n0", &[0, 1, 2, 3, 4])],
                false,
            ),
            on_places(
                job("team/leaf2-run", "leaf2", 1, 5),
                &[("n1", &[0, 1, 2, 3, 4])],
                false,
            ),
        ];
        jobs.extend(pending);
        schedule(&snapshot(
            NOW,
            (0..4)
                .map(|i| node(&format!("n{i}"), "A100", 10, None))
                .collect(),
            vec![vc("team", "A100", 40)],
            vec![parent, leaf1, leaf2],
            jobs,
        ))
    };
    let d = world(vec![
        queued(job("team/leaf1-6", "leaf1", 6, 1), 1),
        queued(job("team/leaf2-11", "leaf2", 11, 1), 2),
    ]);
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "team/leaf1-6", "QueueMaxShare"), "{d:?}");
    assert!(waits_with(&d, "team/leaf2-11", "QueueMaxShare"), "{d:?}");

    let d = world(vec![
        queued(job("team/leaf1-5", "leaf1", 5, 1), 1),
        queued(job("team/leaf2-5", "leaf2", 5, 1), 2),
    ]);
    assert_eq!(
        admitted(&d),
        strings(&["team/leaf1-5", "team/leaf2-5"]),
        "{d:?}"
    );
}

/// Volcano pkg/scheduler/plugins/capacity/capacity_test.go,
/// Test_capacityPlugin_OnSessionOpenWithHierarchy, case "case4: Pod is not allocatable when
/// ancestor queue's real capability not enough": q3 (capability 4 of the 8-GPU node) has
/// children q31, q32, q33; q31 and q32 run 2 GPUs each, and q33's 3-GPU job waits on its
/// parent's cap (here q3's `maxShare`) although 4 GPUs are idle.
#[test]
fn volcano_ancestor_capability_blocks_the_child_queue() {
    let mut t = vc("t", "A100", 8);
    t.limit_gpus = Some(8);
    let mut q3 = queue("q3", "t");
    q3.max_share = 50;
    let child = |name: &str, share: u32| {
        let mut q = queue(name, "t");
        q.parent = Some("q3".into());
        q.share = share;
        q
    };
    let jobs = vec![
        on_node(job("ns1/p6", "q31", 1, 2), "n1", &[0, 1], false),
        on_node(job("ns1/p9", "q32", 1, 2), "n1", &[2, 3], false),
        job("ns1/p10", "q33", 1, 3),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 8, None)],
        vec![t],
        vec![q3, child("q31", 50), child("q32", 50), child("q33", 0)],
        jobs,
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("ns1/p10"),
            Some(WaitReason::QueueMaxShare { queue, max_gpus: Gpus(4000), .. }) if queue == "q3"
        ),
        "{d:?}"
    );
}

/// Volcano pkg/scheduler/plugins/capacity/capacity_test.go,
/// Test_capacityPlugin_OnSessionOpenWithHierarchy, case "case3: Can reclaim from other queues
/// when allocated < deserved": q3 (deserved 4) splits into q31 and q32 (2 each); q31 runs 4
/// (two 2-GPU jobs), q32 nothing; q4 (deserved 2) runs a 4-GPU job. The node is full. q32's
/// 2-GPU job is within its share of its team's guarantee, so Volcano evicts the q31 job beyond
/// q31's share (the preemptable p7) to give q32 its share back.
#[test]
fn volcano_queue_below_its_share_reclaims_from_its_sibling() {
    let mut a = vc("a", "A100", 4);
    a.limit_gpus = Some(4);
    let mut b = vc("b", "A100", 2);
    b.limit_gpus = Some(4);
    let mut q31 = queue("q31", "a");
    q31.share = 50;
    let mut q32 = queue("q32", "a");
    q32.share = 50;
    let jobs = vec![
        on_node(job("b/p5", "q4", 1, 4), "n1", &[0, 1, 2, 3], true),
        on_node(pjob("a/p6", "q31", 1, 2, 1), "n1", &[4, 5], false),
        on_node(pjob("a/p7", "q31", 1, 2, 0), "n1", &[6, 7], false),
        job("a/p8", "q32", 1, 2),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 8, None)],
        vec![a, b],
        vec![q31, q32, queue("q4", "b")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["a/p7"]), "{d:?}");
    assert!(waits_with(&d, "a/p8", "WaitingForPreemption"), "{d:?}");
}

/// YuniKorn pkg/scheduler/objects/preemption_test.go,
/// TestTryPreemption_OnQueue_VictimsAvailable_LowerPriority: the parent queue's max is 18;
/// child1 (no guarantee) runs two 5-unit allocations on node1, child3 (no guarantee) one
/// 5-unit allocation of high priority on node2; child2 (guaranteed 15) asks for 10. The nodes
/// have room, the parent's max does not: child1's two allocations are preempted and child3's
/// high-priority one is spared. Here the parent is a VirtualCluster with a limit of 18 and a
/// guarantee of 15 that is child2's by share; its siblings use it.
#[test]
fn yunikorn_queue_below_its_guarantee_preempts_siblings_under_the_parent_max() {
    let mut parent = vc("parent", "A100", 15);
    parent.limit_gpus = Some(18);
    let child = |name: &str, share: u32| {
        let mut q = queue(name, "parent");
        q.share = share;
        q
    };
    let jobs = vec![
        run(
            job("p/alloc1", "child1", 1, 5),
            &[("node1", &[0, 1, 2, 3, 4])],
            false,
            NOW - 120,
            CKPT,
        ),
        run(
            job("p/alloc2", "child1", 1, 5),
            &[("node1", &[5, 6, 7, 8, 9])],
            false,
            NOW - 60,
            CKPT,
        ),
        run(
            pjob("p/alloc4", "child3", 1, 5, 1000),
            &[("node2", &[0, 1, 2, 3, 4])],
            false,
            NOW - 10,
            CKPT,
        ),
        job("p/alloc3", "child2", 1, 10),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 30, None),
            node("node2", "A100", 30, None),
        ],
        vec![parent],
        vec![child("child1", 0), child("child2", 100), child("child3", 0)],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["p/alloc1", "p/alloc2"]), "{d:?}");
    assert!(waits_with(&d, "p/alloc3", "WaitingForPreemption"), "{d:?}");
}

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

/// Volcano pkg/scheduler/plugins/drf/hdrf_test.go, case "rescaling test": queues root/sci
/// (weight 50) and root/eng (50) with eng/dev and eng/prod (50/50), each with ten 1-unit
/// jobs, on 10 units: sci gets half, and eng's half is split between dev and prod. Here the
/// weights are queue shares of one VirtualCluster's guarantee, with `eng` the parent of `dev`
/// and `prod` (Volcano's rescaling across CPU and memory has no GPU counterpart).
#[test]
fn volcano_hierarchical_shares_split_the_guarantee() {
    let mut sci = queue("sci", "t");
    sci.share = 50;
    let mut eng = queue("eng", "t");
    eng.share = 50;
    let mut dev = queue("dev", "t");
    dev.share = 50;
    dev.parent = Some("eng".into());
    let mut prod = queue("prod", "t");
    prod.share = 50;
    prod.parent = Some("eng".into());
    let mut jobs = Vec::new();
    for q in ["sci", "dev", "prod"] {
        for i in 0..10 {
            let mut j = job(&format!("t/{q}-{i}"), q, 1, 1);
            j.queued_at = i;
            jobs.push(j);
        }
    }
    let d = schedule(&snapshot(
        NOW,
        vec![node("n", "A100", 10, None)],
        vec![vc("t", "A100", 10)],
        vec![sci, eng, dev, prod],
        jobs,
    ));
    let count = |q: &str| {
        d.admissions
            .iter()
            .filter(|a| a.job.starts_with(&format!("t/{q}-")))
            .count()
    };
    assert_eq!(d.admissions.len(), 10, "{d:?}");
    assert_eq!(count("sci"), 5, "{:?}", d.admissions);
    assert_eq!(count("dev") + count("prod"), 5);
    assert!(
        count("dev").abs_diff(count("prod")) <= 1,
        "{:?}",
        d.admissions
    );
}

/// Volcano capacity_test.go, Test_capacityPlugin_OnSessionOpenWithHierarchy, case "case12:
/// Can reclaim from other queues when allocated <= deserved on a single scalar dimension":
/// case12_queue1 deserves 2 GPUs of a 5-GPU node; its child queue11 deserves all 2, its child
/// queue12 nothing. queue12 runs two 2-GPU jobs (p18 may not be preempted: here it is more
/// important); queue11's 2-GPU job waits with 1 GPU idle. Volcano evicts p17 and starts p16.
///
/// kubetrain does not: a queue takes its share back only when the job then runs within its
/// VirtualCluster's guarantee beside all of the team's running jobs (docs/reclaim.md §7,
/// first rule), and with p18 (more important, so it fills the guarantee) still running the
/// team would hold 4 of its 2 guaranteed GPUs; p17 is bonus, p16 would be too. Bonus jobs
/// never cause preemption (`sched` module docs, phase 4), so nobody is evicted and p16 waits.
#[test]
fn volcano_child_share_is_not_taken_back_beyond_the_team_guarantee_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n3", "A100", 5, None)],
        vec![vc("case12_queue1", "A100", 2)],
        vec![
            queue("case12_queue1", "case12_queue1"),
            child(
                queue("case12_queue11", "case12_queue1"),
                "case12_queue1",
                100,
            ),
            child(queue("case12_queue12", "case12_queue1"), "case12_queue1", 0),
        ],
        vec![
            on("ns1/p17", "case12_queue12", 0, "n3", &[0, 1], true),
            on("ns1/p18", "case12_queue12", 10, "n3", &[2, 3], false),
            job("ns1/p16", "case12_queue11", 1, 2),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("ns1/p16").is_none(), "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_AncestorReclaimScenarios, case "case2:
/// Cross-parent reclaim pipelines project1 pending job when project2 child and parent are
/// both over deserved": project2's preemptable child runs four 1-GPU jobs (three of priority
/// 2, one of 1), one beyond project2's 3; project1's 1-GPU job reclaims the priority-1 one.
#[test]
fn volcano_cross_parent_reclaim_takes_the_lowest_priority_borrowed_job() {
    let (vcs, queues) = project_tree();
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 4, None)],
        vcs,
        queues,
        vec![
            on("ns1/p1", "project2_preemptable", 2, "n1", &[0], false),
            on("ns1/p2", "project2_preemptable", 2, "n1", &[1], false),
            on("ns1/p3", "project2_preemptable", 2, "n1", &[2], false),
            on("ns1/p4", "project2_preemptable", 1, "n1", &[3], true),
            job("ns1/p5", "project1_preemptable", 1, 1),
        ],
    ));
    assert_eq!(victims(&d), strings(&["ns1/p4"]), "{d:?}");
    assert_eq!(reason_of(&d, "ns1/p4"), Some(PreemptionReason::Reclaim));
    assert!(waits_with(&d, "ns1/p5", "WaitingForPreemption"), "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_AncestorReclaimScenarios, case "case3:
/// Cross-parent reclaim can evict sibling-queue victim first": project2's preemptable child
/// runs three 1-GPU jobs of priority 2 (all of project2's 3), project1's runs one; project2's
/// non-preemptable child (deserving all 3) has a 1-GPU job of priority 0 waiting. Volcano
/// evicts one of the preemptable child's jobs (p3) for it.
///
/// kubetrain evicts none: a queue-share victim is a job of no higher priority than the job
/// that takes its share back (docs/reclaim.md §7, "victims are jobs of its own
/// VirtualCluster, of no higher priority"; `sched` module docs, phase 5), and the three
/// jobs are of priority 2. With the waiting job at priority 2 as well, the youngest of them
/// is taken back, as Volcano does.
#[test]
fn volcano_cross_parent_reclaim_of_a_sibling_queue_differs() {
    let world = |prio: i32| {
        let (vcs, queues) = project_tree();
        snapshot(
            NOW,
            vec![node("n1", "A100", 4, None)],
            vcs,
            queues,
            vec![
                on_since("ns1/p1", "project2_preemptable", 2, "n1", &[0], false, 0),
                on_since("ns1/p2", "project2_preemptable", 2, "n1", &[1], false, 10),
                on_since(
                    "ns1/p3",
                    "project2_preemptable",
                    2,
                    "n1",
                    &[2],
                    false,
                    NOW - 60,
                ),
                on("ns1/p5", "project1_preemptable", 0, "n1", &[3], false),
                job("ns1/p4", "project2_preemptable", 1, 1),
                pjob("ns1/p6", "project2_non-preemptable", 1, 1, prio),
            ],
        )
    };
    let d = schedule(&world(0));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("ns1/p6").is_none(), "{d:?}");

    let d = schedule(&world(2));
    assert_eq!(victims(&d), strings(&["ns1/p3"]), "{d:?}");
    assert_eq!(reason_of(&d, "ns1/p3"), Some(PreemptionReason::QueueShare));
    assert!(waits_with(&d, "ns1/p6", "WaitingForPreemption"), "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_AncestorReclaimScenarios, cases "case5:
/// level 0 allows reclaim based on leaf-level deserved checks", "case6: level 1 allows
/// reclaim when parent-level check passes" and "case7: level 2 blocks reclaim when
/// grandparent-level check fails": grand-a deserves 2 (queue-a all of it), grand-b deserves 3
/// (parent-b 1 of it, queue-b all of parent-b's). queue-b runs a 2-GPU job on the only,
/// 2-GPU node: beyond its own deserved and its parent's, within grand-b's. queue-a's 2-GPU
/// job waits. Volcano reclaims at levels 0 and 1 (the default is 0), not at level 2.
///
/// kubetrain decides as level 2 does: reclaim takes other teams' bonus jobs only, and a job
/// is bonus when its VirtualCluster (here the grand queue) is beyond its guarantee, whatever
/// its queue's share (docs/concepts.md, "Guaranteed and bonus"; `sched` module docs, phase 3);
/// a share is taken back only from the job's own team (docs/reclaim.md §7).
#[test]
fn volcano_reclaim_judges_the_team_not_the_leaf_queue_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![
            limited(vc("grand-a", "A100", 2), 4),
            limited(vc("grand-b", "A100", 3), 4),
        ],
        vec![
            shared(queue("parent-a", "grand-a"), 100),
            child(queue("queue-a", "grand-a"), "parent-a", 100),
            shared(queue("parent-b", "grand-b"), 33),
            child(queue("queue-b", "grand-b"), "parent-b", 100),
        ],
        vec![
            on("ns1/p-victim", "queue-b", 0, "n1", &[0, 1], false),
            job("ns1/p-reclaimer", "queue-a", 1, 2),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("ns1/p-reclaimer").is_none(), "{d:?}");
}

/// Volcano capacity_test.go, Test_capacityPlugin_AncestorReclaimScenarios, case "case8:
/// level 1 blocks sibling reclaim when leaf deserved is unset and no ancestor gate applies":
/// queue-a and queue-b under one parent that deserves 4, neither deserving any part of it
/// (here two queues of the default overlapping shares). queue-b's 2-GPU job fills the only
/// node; queue-a's 2-GPU job takes nothing back.
#[test]
fn volcano_siblings_without_deserved_take_nothing_back() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![limited(vc("parent", "A100", 4), 4)],
        vec![queue("queue-a", "parent"), queue("queue-b", "parent")],
        vec![
            on("ns1/p-victim", "queue-b", 0, "n1", &[0, 1], false),
            job("ns1/p-reclaimer", "queue-a", 1, 2),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("ns1/p-reclaimer").is_none(), "{d:?}");
}

/// YuniKorn preemption_test.go, TestTryPreemption: `parent` (guaranteed 10, max 20) has
/// child1 and child2 (guaranteed 5, max 10 each). child1 runs two 5-unit allocations on the
/// full 10-unit node; child2 asks for 5. One of child1's allocations is preempted, not both.
/// (Which one is the mock plugin's choice in YuniKorn; here the one that loses least work.)
#[test]
fn yunikorn_queue_below_its_guarantee_preempts_one_of_two() {
    let mut c1 = shared(queue("child1", "parent"), 50);
    c1.max_share = 50;
    let mut c2 = shared(queue("child2", "parent"), 50);
    c2.max_share = 50;
    let d = schedule(&snapshot(
        NOW,
        vec![node("node1", "A100", 10, None)],
        vec![limited(vc("parent", "A100", 10), 20)],
        vec![c1, c2],
        vec![
            on_since(
                "p/alloc1",
                "child1",
                0,
                "node1",
                &[0, 1, 2, 3, 4],
                false,
                NOW - 60,
            ),
            on_since(
                "p/alloc2",
                "child1",
                0,
                "node1",
                &[5, 6, 7, 8, 9],
                false,
                NOW - 30,
            ),
            job("p/alloc3", "child2", 1, 5),
        ],
    ));
    assert_eq!(victims(&d), strings(&["p/alloc2"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "p/alloc2"),
        Some(PreemptionReason::QueueShare)
    );
    assert!(waits_with(&d, "p/alloc3", "WaitingForPreemption"), "{d:?}");
}

/// YuniKorn preemption_test.go, TestTryPreemptionOnQueue: `parent` may hold 10 (max), its
/// children are guaranteed 5 each; child1 runs a 5-unit allocation on each of two 10-unit
/// nodes and child2 asks for 5. The nodes have room, the parent's max does not: exactly one
/// of child1's allocations is preempted.
#[test]
fn yunikorn_parent_max_full_a_sibling_beyond_its_guarantee_gives_one_back() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 10, None),
            node("node2", "A100", 10, None),
        ],
        vec![limited(vc("parent", "A100", 10), 10)],
        vec![
            shared(queue("child1", "parent"), 50),
            shared(queue("child2", "parent"), 50),
        ],
        vec![
            on("p/alloc1", "child1", 0, "node1", &[0, 1, 2, 3, 4], false),
            on("p/alloc2", "child1", 0, "node2", &[0, 1, 2, 3, 4], false),
            job("p/alloc3", "child2", 1, 5),
        ],
    ));
    let v = victims(&d);
    assert_eq!(v.len(), 1, "{d:?}");
    assert!(v[0] == "p/alloc1" || v[0] == "p/alloc2", "{v:?}");
    assert_eq!(reason_of(&d, &v[0]), Some(PreemptionReason::QueueShare));
    assert!(waits_with(&d, "p/alloc3", "WaitingForPreemption"), "{d:?}");
}

/// YuniKorn preemption_test.go, TestTryPreemption_OnQueue_VictimsOnDifferentNodes: `parent`
/// may hold 18; child1 (no guarantee) runs 5 units on node1 and 5 on node2, child3 (no
/// guarantee) 5 on node2; child2 (guaranteed 15) asks for 10 with both 30-unit nodes nearly
/// idle. Two allocations must go for the max; YuniKorn takes two, never all three.
#[test]
fn yunikorn_parent_max_preempts_two_of_three_not_all() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 30, None),
            node("node2", "A100", 30, None),
        ],
        vec![limited(vc("parent", "A100", 15), 18)],
        vec![
            shared(queue("child1", "parent"), 0),
            shared(queue("child2", "parent"), 100),
            shared(queue("child3", "parent"), 0),
        ],
        vec![
            on("p/alloc1", "child1", 0, "node1", &[0, 1, 2, 3, 4], false),
            on("p/alloc2", "child1", 0, "node2", &[0, 1, 2, 3, 4], false),
            on("p/alloc4", "child3", 0, "node2", &[5, 6, 7, 8, 9], false),
            job("p/alloc3", "child2", 1, 10),
        ],
    ));
    assert_eq!(victims(&d).len(), 2, "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::QueueShare),
        "{d:?}"
    );
    assert!(waits_with(&d, "p/alloc3", "WaitingForPreemption"), "{d:?}");
}

/// YuniKorn preemption_test.go, TestTryPreemption_VictimsAvailable_InsufficientResource:
/// `parent` may hold 8; child1 (no guarantee) runs 2 units on each of two 10-unit nodes;
/// child2 (guaranteed 5) asks for 5. YuniKorn preempts nothing: the victims hold 4 units,
/// less than the ask, so it judges that preemption would not help (PreemptionShortfall).
///
/// kubetrain takes child2's guarantee back from child1, which uses 4 beyond its share of
/// none: a queue below its share takes it back from siblings beyond theirs, and the job must
/// end within its VirtualCluster's guarantee beside all of the team's running jobs
/// (docs/reclaim.md §7), so both of child1's jobs go (5 + 2 would exceed the guarantee of
/// 5; the max of 8 alone would have needed one).
#[test]
fn yunikorn_victims_smaller_than_the_ask_still_give_a_guarantee_back_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node1", "A100", 10, None),
            node("node2", "A100", 10, None),
        ],
        vec![limited(vc("parent", "A100", 5), 8)],
        vec![
            shared(queue("child1", "parent"), 0),
            shared(queue("child2", "parent"), 100),
        ],
        vec![
            on("p/alloc1", "child1", 0, "node1", &[0, 1], false),
            on("p/alloc2", "child1", 0, "node2", &[0, 1], false),
            job("p/alloc3", "child2", 1, 5),
        ],
    ));
    assert_eq!(victims(&d), strings(&["p/alloc1", "p/alloc2"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::QueueShare),
        "{d:?}"
    );
}

/// YuniKorn preemption_test.go,
/// TestTryPreemption_OnNode_UGParent_With_UGPreemptorChild_GNotSetOnVictimChild_As_Siblings
/// (child1 no guarantee, child2 guaranteed 1) and
/// TestTryPreemption_OnNode_UGParent_With_UGPreemptorChild_OGVictimChild_As_Siblings (both
/// guaranteed 1): child2 is below its guarantee and child1 beyond its own, so one of child1's
/// allocations is preempted, and only one.
#[test]
fn yunikorn_under_guaranteed_child_preempts_one_of_its_siblings_jobs() {
    for shares in [(0, 10), (10, 10)] {
        let d = schedule(&ug_parent_world(Some(shares)));
        let v = victims(&d);
        assert_eq!(v.len(), 1, "{shares:?}: {d:?}");
        assert_eq!(
            reason_of(&d, &v[0]),
            Some(PreemptionReason::QueueShare),
            "{shares:?}"
        );
        assert!(
            waits_with(&d, "app3/alloc3", "WaitingForPreemption"),
            "{shares:?}: {d:?}"
        );
    }
}

/// YuniKorn preemption_test.go, TestTryPreemption_OnNode_UGParent_With_GNotSetOnBothChilds:
/// neither child has a guarantee of its own (only parent1 does), so child2 takes nothing
/// from child1: it would lead to a preemption loop.
#[test]
fn yunikorn_children_without_guarantees_do_not_preempt_each_other() {
    let d = schedule(&ug_parent_world(None));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("app3/alloc3").is_none(), "{d:?}");
}
