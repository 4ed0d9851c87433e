//! More test cases of peer schedulers — Volcano (`pkg/scheduler/actions/{preempt,reclaim,
//! allocate}`, `plugins/capacity`), KAI scheduler (`pkg/scheduler/actions/{reclaim,preempt,
//! allocate,consolidation}`) and Apache YuniKorn (`pkg/scheduler/objects/preemption_test.go`) —
//! ported onto kubetrain's model, with the conventions of `peer_cases.rs`: a Volcano or KAI
//! queue's deserved quota (a YuniKorn queue's guaranteed resources) is a VirtualCluster
//! guarantee, over-quota use is bonus, a queue capability (YuniKorn max) is a VC limit or a
//! queue's `maxShare`, a PodGroup's minMember is a gang, KAI's train and build jobs are
//! priorities 50 and 100, and CPUs of the peers' cases are GPUs here. Read at Volcano
//! `ed72c7c8`, KAI scheduler `72de64fc`, YuniKorn core `be3bb487`.
//!
//! Where kubetrain decides differently on purpose the test asserts the documented behaviour
//! and its name ends in `_differs`. Where a user would call kubetrain's decision wrong, the
//! test keeps the peer's expectation and is `#[ignore]`d with the reason.

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Every running job of a case starts at 0 and checkpointed here, so they lose the same work
/// per GPU unless a case says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);
/// KAI's train and build priorities.
const TRAIN: i32 = 50;
const BUILD: i32 = 100;

/// `j` running on `node`'s `gpus` (one replica), bonus or not, checkpointed at [`CKPT`].
fn on(j: Job, node: &str, gpus: &[u32], bonus: bool) -> Job {
    run(j, &[(node, gpus)], bonus, 0, CKPT)
}

/// A share job of one replica with a priority.
fn share(id: &str, queue: &str, milli: u32, priority: i32) -> Job {
    let mut j = share_job(id, queue, 1, milli);
    j.priority = priority;
    j
}

/// `j` queued at `at`.
fn queued(mut j: Job, at: i64) -> Job {
    j.queued_at = at;
    j
}

/// The GPU indices an admission takes on its node, replica by replica.
fn gpus_of(d: &Decisions, job: &str) -> Vec<(String, Vec<u32>)> {
    d.admission(job)
        .unwrap_or_else(|| panic!("{job} is not admitted: {d:?}"))
        .placement
        .iter()
        .map(|p| (p.node.clone(), p.gpus.iter().map(|g| g.0).collect()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Volcano
// ---------------------------------------------------------------------------------------

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
        on(
            pjob("c1/preemptee1", "q-other", 1, 1, 10),
            "n1",
            &[0],
            false,
        ),
        on(pjob("c1/preemptee2", "q1", 1, 1, 10), "n1", &[1], false),
        on(
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
        on(pjob("c1/preemptee1", "q1", 1, 1, 10), "n1", &[0], false),
        on(pjob("c1/preemptee2", "q1", 1, 1, 10), "n1", &[1], false),
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
        on(pjob("c1/preemptee1", "q1", 1, 1, 10), "n1", &[0], false),
        on(
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

/// Volcano pkg/scheduler/actions/allocate/allocate_test.go, TestFareShareAllocate, cases
/// "queue with low DRF share value has high priority, should allocate first" and "queue's DRF
/// share value will be updated and its priority will change before it is put back into the
/// priority queue". Two queues of equal weight and no deserved quota (here two teams without
/// a guarantee, so every GPU is borrowed) on a 5-GPU node where q-1 already runs 1. First
/// case: q-2 (borrowing nothing) goes first and its 3-GPU job takes the room q-1's older 2-GPU
/// job wanted. Second case: q-2's 2-GPU job goes first, then q-1's turn comes back (1 + 2
/// against 2 borrowed) before q-2's 1-GPU job, which finds no room left.
#[test]
fn volcano_drf_lowest_share_first_and_shares_updated_per_admission() {
    let decide = |pending: Vec<Job>| {
        let mut jobs = vec![on(job("ns-1/small-1", "q-1", 1, 1), "node-1", &[0], true)];
        jobs.extend(pending);
        schedule(&snapshot(
            NOW,
            vec![node("node-1", "A100", 5, None)],
            vec![vc("q-1", "A100", 0), vc("q-2", "A100", 0)],
            vec![queue("q-1", "q-1"), queue("q-2", "q-2")],
            jobs,
        ))
    };
    let d = decide(vec![
        queued(job("ns-1/large-1", "q-1", 1, 2), 1),
        queued(job("ns-1/large-2", "q-2", 1, 3), 2),
    ]);
    assert!(d.admission("ns-1/large-2").is_some(), "{d:?}");
    assert!(d.admission("ns-1/large-1").is_none(), "{d:?}");

    let d = decide(vec![
        queued(job("ns-1/large-1", "q-1", 1, 2), 1),
        queued(job("ns-1/large-2", "q-2", 1, 2), 2),
        queued(job("ns-1/small-2", "q-2", 1, 1), 3),
    ]);
    assert!(d.admission("ns-1/large-1").is_some(), "{d:?}");
    assert!(d.admission("ns-1/large-2").is_some(), "{d:?}");
    assert!(d.admission("ns-1/small-2").is_none(), "{d:?}");
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
        on(job("ns1/p6", "q31", 1, 2), "n1", &[0, 1], false),
        on(job("ns1/p9", "q32", 1, 2), "n1", &[2, 3], false),
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
        on(job("b/p5", "q4", 1, 4), "n1", &[0, 1, 2, 3], true),
        on(pjob("a/p6", "q31", 1, 2, 1), "n1", &[4, 5], false),
        on(pjob("a/p7", "q31", 1, 2, 0), "n1", &[6, 7], false),
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

// ---------------------------------------------------------------------------------------
// KAI scheduler
// ---------------------------------------------------------------------------------------

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
            on(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on(
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
            on(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on(
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
            on(
                pjob("q0/running_job0", "queue0", 1, 1, TRAIN),
                "node0",
                &[0],
                false,
            ),
            on(
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
            on(
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
            jobs.push(on(
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

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, cases "reclaim from job that
/// allocated more resources than its' fairShare (no remaining)" and "don't reclaim from job
/// that allocated resources within its' fairShare": queue0 (2 deserved, over-quota weight 1)
/// and queue1 (2 deserved, weight 2) on 10 GPUs, fair shares 4 and 6. KAI reclaims queue0's
/// 8-GPU job for queue1's 6-GPU job, which is beyond queue1's deserved 2 but within its fair
/// share. Deliberate difference: in kubetrain a job beyond its VirtualCluster's guarantee
/// only borrows idle GPUs and never causes preemption (`sched` module docs, step 4, "Bonus
/// jobs never cause preemption"; docs/concepts.md, "Guaranteed and bonus"), so it waits. In
/// the second case (queue0 at its fair share with 4, queue1 asking 7 of the 6 idle) both
/// schedulers leave the job waiting.
#[test]
fn kai_over_quota_fair_share_reclaim_differs() {
    let decide = |running: u32, asked: u32| {
        let mut q1 = vc("queue1", "A100", 2);
        q1.weight = 2;
        let gpus: Vec<u32> = (0..running).collect();
        let jobs = vec![
            on(
                pjob("q0/running_job0", "queue0", 1, running, TRAIN),
                "node0",
                &gpus,
                true,
            ),
            pjob("q1/pending_job0", "queue1", 1, asked, TRAIN),
        ];
        schedule(&snapshot(
            NOW,
            vec![node("node0", "A100", 10, None)],
            vec![vc("queue0", "A100", 2), q1],
            vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
            jobs,
        ))
    };
    let d = decide(8, 6);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "q1/pending_job0", "QuotaExhausted"), "{d:?}");
    let d = decide(4, 7);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("q1/pending_job0").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, cases "Reclaim based on
/// releasing resources without consolidation" (two 0.7-GPU borrowers, one on each 1-GPU node)
/// and "... with consolidation" (two 0.5-GPU borrowers): a team guaranteed 2 GPUs asks for 1
/// whole GPU, and exactly one of the borrowed shares is reclaimed for it, not both. (KAI moves
/// the second half-GPU job beside the first instead of stopping it; kubetrain stops it, and
/// it returns to its queue.)
#[test]
fn kai_fractional_reclaim_takes_one_share() {
    for milli in [700, 500] {
        let jobs = vec![
            run(
                share("q0/running-job0", "queue0", milli, TRAIN),
                &[("node0", &[0])],
                true,
                0,
                CKPT,
            ),
            run(
                share("q1/running-job1", "queue1", milli, TRAIN),
                &[("node1", &[0])],
                true,
                0,
                CKPT,
            ),
            pjob("q2/pending-job", "queue2", 1, 1, TRAIN),
        ];
        let d = schedule(&snapshot(
            NOW,
            vec![
                node("node0", "A100", 1, None),
                node("node1", "A100", 1, None),
            ],
            vec![
                vc("queue0", "A100", 0),
                vc("queue1", "A100", 0),
                vc("queue2", "A100", 2),
            ],
            vec![
                queue("queue0", "queue0"),
                queue("queue1", "queue1"),
                queue("queue2", "queue2"),
            ],
            jobs,
        ));
        let v = victims(&d);
        assert_eq!(v.len(), 1, "{milli}: {d:?}");
        assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
        assert!(
            waits_with(&d, "q2/pending-job", "WaitingForPreemption"),
            "{d:?}"
        );
    }
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "Reclaim based on
/// releasing and idle resources with fractions": queue1 (guarantee 2) runs a 0.3 share on
/// node1 and asks for a gang of 2 × 0.7; queue0 (no guarantee) borrows 0.7 of node0. One
/// replica fits beside queue1's own share, the other needs node0: only queue0's share is
/// reclaimed.
#[test]
fn kai_fractional_gang_reclaims_only_the_share_in_its_way() {
    let mut gang = share_job("q1/pending-job", "queue1", 2, 700);
    gang.priority = TRAIN;
    let jobs = vec![
        run(
            share("q0/running-job0", "queue0", 700, TRAIN),
            &[("node0", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            share("q1/running-job1", "queue1", 300, TRAIN),
            &[("node1", &[0])],
            false,
            0,
            CKPT,
        ),
        gang,
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 1, None),
            node("node1", "A100", 1, None),
        ],
        vec![vc("queue0", "A100", 0), vc("queue1", "A100", 2)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["q0/running-job0"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preemptGang_test.go, case "preempt gang job":
/// a team guaranteed 3 runs a gang of 2 × 2 GPUs (4, beyond its guarantee) on a 4-GPU node;
/// its higher-priority 2-GPU job preempts the whole gang (both replicas, one victim) and then
/// runs within the guarantee.
#[test]
fn kai_preempt_gang_job() {
    let jobs = vec![
        run(
            pjob("q0/running_job0", "queue0", 2, 2, TRAIN),
            &[("node0", &[0, 1]), ("node0", &[2, 3])],
            true,
            0,
            CKPT,
        ),
        pjob("q0/pending_job0", "queue0", 1, 2, BUILD),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue0", "A100", 3)],
        vec![pqueue("queue0", "queue0")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["q0/running_job0"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "queue0 has deserved
/// of 3, queue 1 has deserved of 2, they will both have a share of 1 if allocated their task,
/// yet for fair convergence - queue1 should allocate the task": 2 GPUs are idle; queue0 uses 2
/// of 3 and asks 1 more, queue1 uses 0 of 2 and asks 2. Both are within their guarantees;
/// the team using the smaller part of its guarantee goes first, even though queue0's job is
/// older, and queue0's job then finds no room.
#[test]
fn kai_guaranteed_turns_go_to_the_team_using_least_of_its_guarantee() {
    let jobs = vec![
        on(
            pjob("q0/running_job0", "queue0", 1, 2, TRAIN),
            "node0",
            &[0, 1],
            false,
        ),
        queued(pjob("q0/pending_job0", "queue0", 1, 1, TRAIN), 1),
        queued(pjob("q1/pending_job1", "queue1", 1, 2, TRAIN), 2),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue0", "A100", 3), vc("queue1", "A100", 2)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    let a = d.admission("q1/pending_job1").expect("queue1 goes first");
    assert!(!a.bonus);
    assert!(d.admission("q0/pending_job0").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "Both queues has the
/// same share, give the one with smaller job - allocate jobs queue1": queue0 uses 2 of its 4,
/// queue1 1 of its 2 (half each); 2 GPUs are idle; queue0 asks 2, queue1 asks 1 (and here has
/// also waited longer). KAI admits queue1's smaller job. kubetrain gives the tie to the team
/// listed first, whatever its job's size or wait, so queue0's job takes both GPUs and
/// queue1's job, within its guarantee, waits with nothing to reclaim.
#[test]
fn kai_equal_share_tie_goes_to_the_smaller_job() {
    let jobs = vec![
        on(
            pjob("q0/running_job0", "queue0", 1, 2, TRAIN),
            "node0",
            &[0, 1],
            false,
        ),
        on(
            pjob("q1/running_job1", "queue1", 1, 1, TRAIN),
            "node0",
            &[2],
            false,
        ),
        queued(pjob("q0/pending_job0", "queue0", 1, 2, TRAIN), 2),
        queued(pjob("q1/pending_job1", "queue1", 1, 1, TRAIN), 1),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 5, None)],
        vec![vc("queue0", "A100", 4), vc("queue1", "A100", 2)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    assert!(d.admission("q1/pending_job1").is_some(), "{d:?}");
    assert!(d.admission("q0/pending_job0").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "1 job running on
/// node0, 3 pending jobs - allocate them according to their order": one queue (2 deserved)
/// runs 2 GPUs on node0; its jobs of 4, 2 and 2 GPUs wait in that order on two 4-GPU nodes.
/// The 4-GPU job gets the empty node1, the first 2-GPU job the rest of node0 (not half of
/// node1), and the last waits.
#[test]
fn kai_jobs_allocated_in_order_keep_the_whole_node_for_the_large_one() {
    let jobs = vec![
        on(
            job("q/running_job0", "queue1", 1, 2),
            "node0",
            &[0, 1],
            false,
        ),
        queued(job("q/pending_job0", "queue1", 1, 4), 1),
        queued(job("q/pending_job1", "queue1", 1, 2), 2),
        queued(job("q/pending_job2", "queue1", 1, 2), 3),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 4, None),
            node("node1", "A100", 4, None),
        ],
        vec![vc("queue1", "A100", 2)],
        vec![queue("queue1", "queue1")],
        jobs,
    ));
    assert_eq!(nodes_of(&d, "q/pending_job0"), strings(&["node1"]), "{d:?}");
    assert_eq!(nodes_of(&d, "q/pending_job1"), strings(&["node0"]), "{d:?}");
    assert!(d.admission("q/pending_job2").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "Allocate task
/// according to nodepack - to the node with the least free GPUs" (KAI's default): with one
/// GPU used on node1, a 1-GPU job goes beside it and node0 stays whole.
#[test]
fn kai_nodepack_fills_the_partly_used_node() {
    let jobs = vec![
        on(job("q/running_job0", "queue0", 1, 1), "node1", &[0], false),
        job("q/pending_job0", "queue0", 1, 1),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 2, None),
            node("node1", "A100", 2, None),
        ],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        jobs,
    ));
    assert_eq!(nodes_of(&d, "q/pending_job0"), strings(&["node1"]), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, cases "1 shared
/// gpu job running, 1 pending interactive shared gpu job, allocate to same gpu" and "... -
/// even if multiple nodes, to check gpusharingorder plugin": a half-GPU job goes to the GPU
/// already half used, not to a fresh GPU. On one 2-GPU node kubetrain does so. Deliberate
/// difference with two 2-GPU nodes and the half-used GPU on node1: the snapshot's mix holds
/// only half shares, both places score the same, and a tie goes to the fixed node order
/// (`sched/frag.rs`: FGD's coarse score, ties to the lowest node index), so node0's GPU 0
/// opens. Preferring the partly used GPU at equal scores was tried: on Setup A it placed
/// 0.02 points fewer GPUs on average over the 23 openb lists and 0.08 fewer on gpushare40
/// (3 seeds), so the rule stays.
#[test]
fn kai_share_goes_to_the_half_used_gpu_on_its_node_differs() {
    let decide = |nodes: Vec<Node>| {
        let jobs = vec![
            run(
                share("q/running_shared_gpu_job0", "queue0", 500, BUILD),
                &[("node1", &[1])],
                false,
                0,
                CKPT,
            ),
            share("q/pending_shared_gpu_job1", "queue0", 500, BUILD),
        ];
        schedule(&snapshot(
            NOW,
            nodes,
            vec![vc("queue0", "A100", 2)],
            vec![queue("queue0", "queue0")],
            jobs,
        ))
    };
    let d = decide(vec![node("node1", "A100", 2, None)]);
    assert_eq!(
        gpus_of(&d, "q/pending_shared_gpu_job1"),
        vec![("node1".to_string(), vec![1])],
        "{d:?}"
    );
    let d = decide(vec![
        node("node0", "A100", 2, None),
        node("node1", "A100", 2, None),
    ]);
    assert_eq!(
        gpus_of(&d, "q/pending_shared_gpu_job1"),
        vec![("node0".to_string(), vec![0])],
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, case "1
/// interactive shared gpu job running, 4 pending interactive shared gpus pending - allocate 3
/// of the shared GPUs jobs": a 2-GPU node with 0.5 used on GPU 0; 0.6, 0.5, 0.5 and 0.3 wait in
/// that order. 0.6 takes GPU 1, 0.5 fills GPU 0, the second 0.5 fits nowhere, and 0.3 still
/// starts on GPU 1.
#[test]
fn kai_shares_fill_gpus_and_a_later_small_share_still_starts() {
    let jobs = vec![
        run(
            share("q/running0", "queue0", 500, BUILD),
            &[("node0", &[0])],
            false,
            0,
            CKPT,
        ),
        queued(share("q/pending0", "queue0", 600, BUILD), 1),
        queued(share("q/pending1", "queue0", 500, BUILD), 2),
        queued(share("q/pending2", "queue0", 500, BUILD), 3),
        queued(share("q/pending3", "queue0", 300, BUILD), 4),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        jobs,
    ));
    let g = |j: &str| gpus_of(&d, j)[0].1.clone();
    assert_eq!(g("q/pending0"), vec![1], "{d:?}");
    assert_eq!(g("q/pending1"), vec![0], "{d:?}");
    assert_eq!(g("q/pending3"), vec![1], "{d:?}");
    assert!(d.admission("q/pending2").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/consolidation/consolidation_test.go, case "2 jobs of 1
/// task running on different GPUs, two pending jobs, only first can be consolidated" (its
/// first pending job): two 2-GPU jobs run on two 4-GPU nodes, one on each, and a 3-GPU job
/// waits. KAI moves one running job beside the other (evicting it to be placed again) so the
/// 3-GPU job fits. Here the team is guaranteed all 8 GPUs, so the job is within its guarantee
/// with 4 GPUs idle, and kubetrain leaves it waiting (NoFit) for as long as both jobs run.
#[test]
fn kai_consolidation_makes_room_for_a_job_within_its_guarantee() {
    let jobs = vec![
        on(
            job("q/running_job0", "queue0", 1, 2),
            "node0",
            &[0, 1],
            false,
        ),
        on(
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

// ---------------------------------------------------------------------------------------
// Apache YuniKorn
// ---------------------------------------------------------------------------------------

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
        on(
            job("c1/alloc1", "child1", 1, 5),
            "node1",
            &[0, 1, 2, 3, 4],
            false,
        ),
        on(
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
