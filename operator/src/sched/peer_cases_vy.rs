//! A sixth set of peer schedulers' test cases, ported onto kubetrain's model: Volcano's
//! preempt and reclaim actions, its capacity plugin (capability, deserved, hierarchical
//! queues and the ancestor reclaim levels), YuniKorn's guaranteed and max resources in queue
//! hierarchies, and KAI scheduler's consolidation. Sources: Volcano
//! `pkg/scheduler/actions/preempt/preempt_test.go` (TestPreempt, TestTopologyAwarePreempt),
//! `actions/reclaim/reclaim_test.go` (TestReclaim), `plugins/capacity/capacity_test.go`
//! (Test_capacityPlugin_OnSessionOpenWithoutHierarchy, `..._OnSessionOpenWithHierarchy`,
//! Test_capacityPlugin_AncestorReclaimScenarios); YuniKorn core
//! `pkg/scheduler/objects/preemption_test.go`; KAI scheduler
//! `pkg/scheduler/actions/consolidation/consolidation_test.go`. Read at Volcano `ed72c7c8`,
//! YuniKorn core `be3bb487` and KAI scheduler `72de64fc`. None repeats a case of the other
//! `peer_cases*` sets.
//!
//! Mapping, as in the other sets: a Volcano queue's `deserved` (with the proportion plugin, its
//! weight's part of the cluster) or a YuniKorn queue's guaranteed resources is a VirtualCluster
//! guarantee; `capability` (YuniKorn max) is a VC limit, or a queue's `maxShare` below the
//! VC; over-deserved use is bonus. A Volcano or YuniKorn queue hierarchy inside one team is
//! kubetrain Queues with `share` percentages inside one VirtualCluster: a child's deserved
//! (guaranteed) part of its parent's is its share, an unset deserved under siblings that set
//! theirs is 0 %, so the shares add up to at most 100 % and are firm (docs/reclaim.md §7); where
//! no child sets one they keep the default 100 % each and overlap. A pod that may not be
//! preempted (`preemptable=false`) is a job more important than the preemptor. A closed
//! Volcano queue is a terminating kubetrain queue. CPUs (and Volcano's scalar GPUs) of the
//! peers' cases are GPUs here. KAI's train and build jobs are priorities 50 and 100, and its
//! queues are VirtualClusters.
//!
//! Where kubetrain decides differently on purpose (a rule of `docs/concepts.md`,
//! `docs/reclaim.md` or the `sched` module docs), the test asserts kubetrain's behaviour,
//! cites the rule and ends in `_differs`. Where a user would call kubetrain's decision wrong,
//! the test keeps the peer's expectation and is `#[ignore]`d with the reason.

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Running jobs checkpointed here lose the same work per GPU unless a case says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);

/// A running job of one replica of `gpus.len()` GPUs on `node`, started at 0 and
/// checkpointed at [`CKPT`].
fn on(id: &str, queue: &str, prio: i32, node: &str, gpus: &[u32], bonus: bool) -> Job {
    run(
        pjob(id, queue, 1, gpus.len() as u32, prio),
        &[(node, gpus)],
        bonus,
        0,
        CKPT,
    )
}

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

fn limited(mut v: VirtualCluster, limit: u32) -> VirtualCluster {
    v.limit_gpus = Some(limit);
    v
}

fn child(q: Queue, parent: &str, share: u32) -> Queue {
    let mut q = shared(q, share);
    q.parent = Some(parent.into());
    q
}

// ---------------------------------------------------------------------------------------
// Volcano pkg/scheduler/actions/preempt/preempt_test.go
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Volcano pkg/scheduler/actions/reclaim/reclaim_test.go
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Volcano pkg/scheduler/plugins/capacity/capacity_test.go
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// YuniKorn pkg/scheduler/objects/preemption_test.go
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// KAI scheduler pkg/scheduler/actions/consolidation/consolidation_test.go
// ---------------------------------------------------------------------------------------

/// KAI's train and build priorities.
const TRAIN: i32 = 50;
const BUILD: i32 = 100;

/// KAI consolidation_test.go, case "2 jobs of 1 task running on different GPUs, 1 job of 3
/// gpus is pending - can't Consolidate": two 3-GPU jobs, one on each 4-GPU node, and a 3-GPU
/// job waiting with 2 GPUs free in all. No move can make room: nothing is evicted. (As in
/// `peer_cases_batch`, the team is guaranteed every GPU so that a move is allowed at all;
/// the job waits with `QuotaExhausted`, 2 of the 8 guaranteed GPUs being left.)
#[test]
fn kai_no_consolidation_when_the_free_gpus_are_too_few() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 4, None),
            node("node1", "A100", 4, None),
        ],
        vec![vc("queue0", "A100", 8)],
        vec![queue("queue0", "queue0")],
        vec![
            on(
                "q/running_job0",
                "queue0",
                TRAIN,
                "node0",
                &[0, 1, 2],
                false,
            ),
            on(
                "q/running_job1",
                "queue0",
                TRAIN,
                "node1",
                &[0, 1, 2],
                false,
            ),
            pjob("q/pending_job0", "queue0", 1, 3, TRAIN),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "q/pending_job0", "QuotaExhausted"), "{d:?}");
}

/// KAI consolidation_test.go, case "3 jobs are running on different GPUs, 1 job pending -
/// Consolidate and verify not all preemptors are evicted as well": node0 runs a 3-GPU job,
/// node1 a 1-GPU and a 2-GPU job; a 2-GPU job waits with one GPU free on each node. Only the
/// 1-GPU job moves (to node0), and the 2-GPU job is to start on node1.
#[test]
fn kai_consolidation_moves_only_the_job_in_the_way() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 4, None),
            node("node1", "A100", 4, None),
        ],
        vec![vc("queue0", "A100", 8)],
        vec![queue("queue0", "queue0")],
        vec![
            on(
                "q/running_job0",
                "queue0",
                TRAIN,
                "node0",
                &[0, 1, 2],
                false,
            ),
            on("q/running_job1", "queue0", TRAIN, "node1", &[0], false),
            on("q/running_job2", "queue0", TRAIN, "node1", &[1, 2], false),
            pjob("q/pending_job0", "queue0", 1, 2, TRAIN),
        ],
    ));
    assert_eq!(victims(&d), strings(&["q/running_job1"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "q/running_job1"),
        Some(PreemptionReason::Consolidation)
    );
    assert!(
        waits_with(&d, "q/pending_job0", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// KAI consolidation_test.go, case "2 build jobs are running on different GPUs - never
/// consoliate": two 1-GPU build jobs, one on each 2-GPU node, and a 2-GPU build job waiting.
/// KAI never moves build jobs (they are not preemptible).
///
/// kubetrain has no class of unpreemptible jobs: a consolidation moves smaller jobs of the
/// team of no higher priority than the waiting job (docs/reclaim.md §8; `sched` module docs,
/// phase 5), and build jobs are all of one priority here, so one of them moves.
#[test]
fn kai_build_jobs_are_moved_like_any_other_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 2, None),
            node("node1", "A100", 2, None),
        ],
        vec![vc("queue0", "A100", 4)],
        vec![queue("queue0", "queue0")],
        vec![
            on("q/running_job0", "queue0", BUILD, "node0", &[0], false),
            on("q/running_job1", "queue0", BUILD, "node1", &[0], false),
            pjob("q/pending_job0", "queue0", 1, 2, BUILD),
        ],
    ));
    let v = victims(&d);
    assert_eq!(v.len(), 1, "{d:?}");
    assert_eq!(reason_of(&d, &v[0]), Some(PreemptionReason::Consolidation));
    // A more important running job is not moved.
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 2, None),
            node("node1", "A100", 2, None),
        ],
        vec![vc("queue0", "A100", 4)],
        vec![queue("queue0", "queue0")],
        vec![
            on("q/running_job0", "queue0", BUILD, "node0", &[0], false),
            on("q/running_job1", "queue0", BUILD, "node1", &[0], false),
            pjob("q/pending_job0", "queue0", 1, 2, TRAIN),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// KAI consolidation_test.go, case "2 queues with different share, pending job will attempt
/// to reallocate before the reallocated jobs - 1 running job from queue0, 2 running jobs from
/// queue1, 1 pending job from queue0 - consolidate": queue0 and queue1 deserve 1 GPU each of
/// two 4-GPU nodes; node0 runs queue0's 2-GPU job and queue1's 1-GPU job, node1 queue1's
/// 3-GPU job. queue0's 2-GPU job waits with one GPU free on each node. KAI moves queue1's
/// 1-GPU job to node1 and starts queue0's job on node0.
///
/// kubetrain moves only the waiting job's own team's jobs, and only for a job within its
/// team's guarantee (docs/reclaim.md §8: "Only the team's own jobs move: another team's
/// guaranteed work is never disturbed for a placement"); queue0's job would run beyond its
/// guarantee of 1, as bonus, and bonus jobs never cause preemption (`sched` module docs,
/// phase 4). Nothing moves and the job waits.
#[test]
fn kai_consolidation_across_teams_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 4, None),
            node("node1", "A100", 4, None),
        ],
        vec![vc("queue0", "A100", 1), vc("queue1", "A100", 1)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        vec![
            on("q0/running_job0", "queue0", TRAIN, "node0", &[0, 1], false),
            on("q1/running_job1", "queue1", TRAIN, "node0", &[2], false),
            on(
                "q1/running_job2",
                "queue1",
                TRAIN,
                "node1",
                &[0, 1, 2],
                true,
            ),
            pjob("q0/pending_job0", "queue0", 1, 2, TRAIN),
        ],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("q0/pending_job0").is_none(), "{d:?}");
}
