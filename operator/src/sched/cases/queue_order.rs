//! Queue order: which job of a queue goes first (guaranteed before borrowing, priority,
//! timestamps, an evicted job's place in line), strict FIFO queues whose head blocks them,
//! and queues that do not block each other.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// A strict queue of team `t` (limit 8 on two 8-GPU nodes, 4 GPUs in use) and `jobs`.
fn strict_team(strict: QueueingStrategy, policy: QueuePolicy, jobs: Vec<Job>) -> Decisions {
    let mut t = vc("t", "A100", 8);
    t.limit_gpus = Some(8);
    let mut q = queue("q", "t");
    q.strategy = strict;
    q.policy = policy;
    let mut all = vec![running("t/r", "q", &[("n0", 0, 4)], false)];
    all.extend(jobs);
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)],
        vec![t],
        vec![q],
        all,
    ))
}

fn strict(mut q: Queue, policy: QueuePolicy) -> Queue {
    q.strategy = QueueingStrategy::Strict;
    q.policy = policy;
    q
}

/// Kueue pkg/scheduler/scheduler_test.go, TestEntryOrdering: workloads that fit their nominal
/// quota are admitted before workloads that borrow, whatever their priority or age. A younger
/// low-priority job within its team's guarantee takes the last idle GPUs; the other team's
/// older high-priority job, which would borrow, waits.
#[test]
fn kueue_entry_ordering_within_guarantee_before_borrowing() {
    let mut old = job("a/old", "qa", 1, 4);
    old.priority = 100;
    let mut new = job("b/new", "qb", 1, 4);
    new.queued_at = 50;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None)],
        vec![vc("a", "A100", 4), vc("b", "A100", 4)],
        vec![queue("qa", "a"), queue("qb", "b")],
        vec![running("a/r", "qa", &[("n0", 0, 4)], false), old, new],
    ));
    let a = d.admission("b/new").expect("admitted");
    assert!(!a.bonus);
    assert!(waits_with(&d, "a/old", "QuotaExhausted"), "{d:?}");
}

/// Kueue's BestEffortFIFO (pkg/cache/queue/cluster_queue_test.go, and the ClusterQueues of
/// pkg/scheduler/scheduler_test.go without a strategy): the head that does not fit does not
/// block the queue; each job of the queue gets its turn in order, and the smaller job behind
/// the head starts. kubetrain's default (`queueingStrategy: BestEffort`).
#[test]
fn kueue_best_effort_fifo_head_does_not_block_the_queue() {
    let d = strict_team(
        QueueingStrategy::BestEffort,
        QueuePolicy::Fifo,
        vec![ones("t/head", "q", 6, 0), ones("t/next", "q", 2, 1)],
    );
    assert!(waits_with(&d, "t/head", "OverLimit"), "{d:?}");
    assert_eq!(d.position("t/head"), Some(1));
    assert!(d.admission("t/next").is_some(), "{d:?}");
}

/// Kueue's StrictFIFO (pkg/cache/queue/cluster_queue_test.go, TestStrictFIFO, and the `sales`
/// ClusterQueue of pkg/scheduler/scheduler_test.go): the head that does not fit blocks the
/// jobs behind it, which say which job they wait behind.
#[test]
fn kueue_strict_fifo_head_blocks_the_queue() {
    let d = strict_team(
        QueueingStrategy::Strict,
        QueuePolicy::Fifo,
        vec![ones("t/head", "q", 6, 0), ones("t/next", "q", 2, 1)],
    );
    assert!(waits_with(&d, "t/head", "OverLimit"), "{d:?}");
    assert!(waits_with(&d, "t/next", "BehindQueueHead"), "{d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    let w = d.waiting.iter().find(|w| w.job == "t/next").expect("waits");
    assert!(w.reason.to_string().contains("t/head"), "{w:?}");
    assert_eq!(d.position("t/next"), Some(2));
}

/// Kueue StrictFIFO orders by priority first (TestStrictFIFO, "w1.priority is higher than
/// w2.priority"): in a strict Priority queue the highest-priority job is the head, whatever
/// its age.
#[test]
fn kueue_strict_fifo_higher_priority_is_the_head() {
    let mut young = ones("t/urgent", "q", 6, 5);
    young.priority = 10;
    let d = strict_team(
        QueueingStrategy::Strict,
        QueuePolicy::Priority,
        vec![ones("t/old", "q", 2, 0), young],
    );
    assert!(waits_with(&d, "t/urgent", "OverLimit"), "{d:?}");
    assert!(waits_with(&d, "t/old", "BehindQueueHead"), "{d:?}");
}

/// A job larger than its limit by itself can never start until an admin raises the limit:
/// it holds back nobody, even in a strict queue (Kueue's StrictFIFO would block behind it for
/// ever).
#[test]
fn a_strict_queue_is_not_blocked_by_a_job_that_can_never_start() {
    let d = strict_team(
        QueueingStrategy::Strict,
        QueuePolicy::Fifo,
        vec![ones("t/huge", "q", 9, 0), ones("t/next", "q", 2, 1)],
    );
    assert!(waits_with(&d, "t/huge", "ExceedsLimit"), "{d:?}");
    assert!(d.admission("t/next").is_some(), "{d:?}");
}

/// A strict head beyond the guarantee that starts as bonus lets the jobs behind it go on in
/// the same cycle; a strict queue holds back only its own jobs, not its team's other queues.
#[test]
fn a_strict_head_that_starts_as_bonus_lets_the_queue_go_on() {
    let mut strict = queue("s", "t");
    strict.strategy = QueueingStrategy::Strict;
    strict.share = 50;
    let mut other = queue("o", "t");
    other.share = 50;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)],
        vec![vc("t", "A100", 4), vc("u", "A100", 12)],
        vec![strict, other, queue("uq", "u")],
        vec![
            ones("t/head", "s", 6, 0),
            ones("t/next", "s", 2, 1),
            ones("t/other", "o", 1, 2),
        ],
    ));
    assert!(d.admission("t/head").is_some_and(|a| a.bonus), "{d:?}");
    assert!(d.admission("t/next").is_some(), "{d:?}");
    assert!(d.admission("t/other").is_some(), "{d:?}");

    // with no idle GPUs to borrow, the head waits and holds back only its own queue
    let mut strict = queue("s", "t");
    strict.strategy = QueueingStrategy::Strict;
    strict.share = 50;
    let mut other = queue("o", "t");
    other.share = 50;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)],
        vec![vc("t", "A100", 4), vc("u", "A100", 12)],
        vec![strict, other, queue("uq", "u")],
        vec![
            running("u/big", "uq", &[("n1", 0, 8), ("n0", 4, 4)], false),
            ones("t/head", "s", 6, 0),
            ones("t/next", "s", 2, 1),
            ones("t/other", "o", 1, 2),
        ],
    ));
    assert!(d.admission("t/head").is_none(), "{d:?}");
    assert!(waits_with(&d, "t/next", "BehindQueueHead"), "{d:?}");
    assert!(d.admission("t/other").is_some(), "{d:?}");
}

/// Kueue pkg/cache/queue/cluster_queue_test.go, TestStrictFIFO, case "w1.priority equals
/// w2.priority and w1.create time is earlier than w2.create time but w1 was evicted": Kueue
/// orders an evicted workload by its eviction time, behind a younger one. Deliberate
/// difference: a preempted TrainingJob returns to its queue keeping its place in line
/// (docs/concepts.md, "Checkpoint-aware preemption", step 3), so it goes first.
#[test]
fn kueue_evicted_workload_keeps_its_place_in_line_differs() {
    let mut t = vc("t", "A100", 2);
    t.limit_gpus = Some(2);
    let mut w1 = job("t/w1", "q", 1, 2);
    w1.queued_at = 0;
    w1.preemptions = 1;
    let mut w2 = job("t/w2", "q", 1, 2);
    w2.queued_at = 5;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 2, None)],
        vec![t],
        vec![queue("q", "t")],
        vec![w2, w1],
    ));
    assert!(d.admission("t/w1").is_some(), "{d:?}");
    assert!(d.admission("t/w2").is_none());
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "1 job running on node0,
/// 3 pending jobs - only build job should be allocated": one queue deserving 2 GPUs runs a
/// 2-GPU train job on a 4-GPU node; a 4-GPU and a 2-GPU train job and a 2-GPU build job wait.
/// The higher-priority build job goes first and takes the two idle GPUs; both train jobs
/// wait (kubetrain: a queue with the `Priority` policy, the build job borrowing).
#[test]
fn kai_build_job_goes_first_in_its_queue() {
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
        vec![vc("queue1", "A100", 2)],
        vec![by_priority(queue("queue1", "queue1"))],
        jobs,
    ));
    assert_eq!(admitted(&d), strings(&["q/pending_job2"]), "{d:?}");
    assert!(d.admission("q/pending_job0").is_none(), "{d:?}");
    assert!(d.admission("q/pending_job1").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "Both queues have
/// deserved of 2, overall 4 gpus, queue0 will pass the deserved if its pending jobs will be
/// allocated - allocate a job from queue1": each team runs one 1-GPU job; queue0's older job
/// of 2 GPUs would take it beyond its guarantee, queue1's 1-GPU job stays within. Of the two
/// idle GPUs, queue1's job gets one, and queue0's job no longer fits.
#[test]
fn kai_job_within_deserved_before_one_going_beyond() {
    let jobs = vec![
        on_places(
            job("queue0/running_job0", "queue0", 1, 1),
            &[("node0", &[0])],
            false,
        ),
        on_places(
            job("queue1/running_job1", "queue1", 1, 1),
            &[("node0", &[1])],
            false,
        ),
        queued(job("queue0/pending_job0", "queue0", 1, 2), 1),
        queued(job("queue1/pending_job1", "queue1", 1, 1), 2),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue0", "A100", 2), vc("queue1", "A100", 2)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    let a = d.admission("queue1/pending_job1").expect("within deserved");
    assert!(!a.bonus, "{a:?}");
    assert!(d.admission("queue0/pending_job0").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "queue0 has no
/// deserved GPUs, queue1 has deserved - allocate jobs queue1": one GPU, two 1-GPU jobs; the
/// team with a guarantee gets it, even though the other team's job (here) is older.
#[test]
fn kai_team_with_a_guarantee_before_one_without() {
    let jobs = vec![
        queued(job("queue0/pending_job0", "queue0", 1, 1), 1),
        queued(job("queue1/pending_job1", "queue1", 1, 1), 2),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 1, None)],
        vec![vc("queue0", "A100", 0), vc("queue1", "A100", 1)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    let a = d
        .admission("queue1/pending_job1")
        .expect("guaranteed first");
    assert!(!a.bonus, "{a:?}");
    assert!(d.admission("queue0/pending_job0").is_none(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "in a hierarchical cohort, workload borrowing
/// less is scheduled first": 4 GPUs, owed to the `guaranteed` sub-cohort (here its team);
/// `best-effort` is owed nothing. Both ask 4 GPUs; the best-effort job has the higher
/// priority (3 against 0), yet the job within its team's guarantee starts and the
/// best-effort job waits.
#[test]
fn kueue_guaranteed_job_before_a_higher_priority_borrower() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "default", 4, None)],
        vec![
            vc("guaranteed", "default", 4),
            vc("best-effort", "default", 0),
        ],
        vec![
            by_priority(queue("guaranteed", "guaranteed")),
            by_priority(queue("best-effort", "best-effort")),
        ],
        vec![
            queued(pjob("guaranteed/guaranteed", "guaranteed", 1, 4, 0), 2),
            queued(pjob("best-effort/best-effort", "best-effort", 1, 4, 3), 1),
        ],
    ));
    assert!(!d.admission("guaranteed/guaranteed").expect("starts").bonus);
    assert!(d.admission("best-effort/best-effort").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

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

/// Volcano pkg/scheduler/actions/allocate/allocate_test.go, case "high priority queue should
/// not block others": a job of one queue that does not fit now (3 GPUs on one node, where
/// no node has more than 2 free) does not hold back a smaller job of another queue of the
/// same team, which starts on the free GPUs.
///
/// c1 is entitled to half of the guarantee (4) and uses none, while c2 with the new job uses
/// 5: one GPU beyond its share, less than any of its jobs holds, so nothing is taken back
/// (a queue-share preemption takes from a queue only what it uses beyond its share). But the
/// big job is within the team's guarantee and 3 GPUs are free, scattered: kubetrain moves
/// one of c2's running jobs (as KAI's consolidation would; Volcano's allocate action does
/// not), and the big job waits for it.
#[test]
fn volcano_a_blocked_queue_does_not_block_others() {
    let mut c1 = queue("c1", "t");
    c1.share = 50;
    let mut c2 = queue("c2", "t");
    c2.share = 50;
    let mut big = job("t/p1", "c1", 1, 3);
    big.queued_at = 1;
    let mut small = job("t/p2", "c2", 1, 1);
    small.queued_at = 2;
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 4, None), node("n2", "A100", 4, None)],
        vec![vc("t", "A100", 8)],
        vec![c1, c2],
        vec![
            run(
                job("t/running-1", "c2", 1, 2),
                &[("n1", &[0, 1])],
                false,
                0,
                CKPT,
            ),
            run(
                job("t/running-2", "c2", 1, 2),
                &[("n2", &[0, 1])],
                false,
                0,
                CKPT,
            ),
            big,
            small,
        ],
    ));
    assert!(d.admission("t/p2").is_some(), "{d:?}");
    assert!(d.admission("t/p1").is_none());
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Consolidation);
    assert!(
        d.preemptions[0].victims[0].starts_with("t/running-"),
        "{d:?}"
    );
    assert!(
        matches!(
            d.waiting_reason("t/p1"),
            Some(WaitReason::WaitingForPreemption {
                reason: PreemptionReason::Consolidation,
                ..
            })
        ),
        "{d:?}"
    );
}
