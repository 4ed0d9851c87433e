//! Consolidation: moving running jobs to make room for a waiting one (KAI's consolidation
//! action), and which jobs may be moved.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// KAI-Scheduler pkg/scheduler/actions/consolidation/consolidation_test.go, case "2 jobs of 1
/// task running on different GPUs, two pending jobs, only first can be consolidated" (its
/// first pending job): two 2-GPU jobs run on two 4-GPU nodes, one on each, and a 3-GPU job
/// waits. KAI moves one running job beside the other (evicting it to be placed again) so the
/// 3-GPU job fits. Here the team is guaranteed all 8 GPUs, so the job is within its guarantee
/// with 4 GPUs idle, and kubetrain leaves it waiting (NoFit) for as long as both jobs run.
#[test]
fn kai_consolidation_makes_room_for_a_job_within_its_guarantee() {
    let jobs = vec![
        on_node(
            job("q/running_job0", "queue0", 1, 2),
            "node0",
            &[0, 1],
            false,
        ),
        on_node(
            job("q/running_job1", "queue0", 1, 2),
            "node1",
            &[0, 1],
            false,
        ),
        job("q/pending_job0", "queue0", 1, 3),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 4, None),
            node("node1", "A100", 4, None),
        ],
        vec![vc("queue0", "A100", 8)],
        vec![queue("queue0", "queue0")],
        jobs,
    ));
    let v = victims(&d);
    assert_eq!(v.len(), 1, "one running job moves: {d:?}");
    assert!(v[0].starts_with("q/running_job"), "{v:?}");
    assert!(
        waits_with(&d, "q/pending_job0", "WaitingForPreemption"),
        "{d:?}"
    );
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
