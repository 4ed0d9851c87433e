//! Fair sharing: idle GPUs divided by weight and by turns, the team furthest below its
//! share goes first (DRF, Kueue's fair sharing, KAI's proportion), and fair-sharing
//! preemption that does not flip the imbalance.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// Two teams guaranteed nothing (a cohort's quota lent to ClusterQueues of nominal 0), with
/// `weight` each, on one type.
fn borrowers(nodes: Vec<Node>, weight: u32, jobs: Vec<Job>) -> Decisions {
    let mut b = vc("b", "", 0);
    b.weight = weight;
    let mut c = vc("c", "", 0);
    c.weight = weight;
    schedule(&snapshot(
        NOW,
        nodes,
        vec![b, c],
        vec![queue("qb", "b"), queue("qc", "c")],
        jobs,
    ))
}

/// KAI's "two queues" of resource_division_test.go: teams a and b guaranteed 2 GPUs each
/// with over-quota weights `wa` and `wb`, each asking for `ask` 1-GPU jobs, on `total` GPUs.
fn kai_two_queues(total: u32, wa: u32, wb: u32, ask: u32) -> Decisions {
    let mut a = vc("a", "A100", 2);
    a.weight = wa;
    let mut b = vc("b", "A100", 2);
    b.weight = wb;
    let mut jobs = Vec::new();
    for i in 0..ask {
        jobs.push(ones(&format!("a/j{i:02}"), "qa", 1, i64::from(i)));
        jobs.push(ones(&format!("b/j{i:02}"), "qb", 1, i64::from(i)));
    }
    schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", total, None)],
        vec![a, b],
        vec![queue("qa", "a"), queue("qb", "b")],
        jobs,
    ))
}

/// Whole GPUs (milli / 1000, shares counted as their fraction) admitted per VC prefix
/// (`team/…` job ids).
fn admitted_gpus(d: &Decisions, snap: &Snapshot, team: &str) -> u64 {
    d.admissions
        .iter()
        .filter(|a| a.job.starts_with(&format!("{team}/")))
        .map(|a| {
            snap.jobs
                .iter()
                .find(|j| j.id == a.job)
                .expect("job")
                .gpu_milli()
        })
        .sum::<u64>()
        / 1000
}

/// Kueue's `all` cohort of fair sharing: a, b and c guaranteed 3 GPUs each, on three
/// 3-GPU nodes; a and b preempt by priority.
fn fair_abc(jobs: Vec<Job>) -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![
            node("n0", "A100", 3, None),
            node("n1", "A100", 3, None),
            node("n2", "A100", 3, None),
        ],
        vec![vc("a", "A100", 3), vc("b", "A100", 3), vc("c", "A100", 3)],
        vec![pqueue("qa", "a"), pqueue("qb", "b"), queue("qc", "c")],
        jobs,
    ))
}

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

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "with fair sharing: nominal-first ordering
/// admits workload fitting within nominal despite higher CQ DRS": team a borrows heavily on
/// spot, team b little; b's older job would borrow on-demand, a's younger job fits a's
/// on-demand guarantee. Both do not fit: a's job is admitted, b's waits.
#[test]
fn kueue_fs_nominal_first_despite_a_higher_share() {
    let mut borrow = ones("b/borrow", "qb", 3, 0);
    borrow.gpu_types = types(&["on-demand"]);
    let mut nom = ones("a/nom", "qa", 9, 60);
    nom.gpu_types = types(&["on-demand"]);
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("od0", "on-demand", 6, None),
            node("od1", "on-demand", 6, None),
            node("sp0", "spot", 10, None),
            node("sp1", "spot", 10, None),
        ],
        vec![
            vc_types("a", &[("on-demand", 10), ("spot", 10)]),
            vc_types("b", &[("on-demand", 2), ("spot", 10)]),
        ],
        vec![queue("qa", "a"), queue("qb", "b")],
        vec![
            running("a/spot-heavy", "qa", &[("sp0", 0, 10), ("sp1", 0, 6)], true),
            running("b/light", "qb", &[("od0", 0, 1)], false),
            borrow,
            nom,
        ],
    ));
    let a = d.admission("a/nom").expect("admitted");
    assert!(!a.bonus);
    assert!(waits_with(&d, "b/borrow", "QuotaExhausted"), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "fair sharing two queues with high weight
/// schedules workload which borrows less": the team that borrows nothing gets the idle GPUs
/// before the team already borrowing, even though the latter's job has a far higher priority.
#[test]
fn kueue_fs_high_weight_schedules_workload_which_borrows_less() {
    let mut b1 = ones("b/b1", "qb", 4, 0);
    b1.priority = 9001;
    let d = borrowers(
        vec![node("n0", "A100", 8, None)],
        1000,
        vec![
            running("b/b0", "qb", &[("n0", 0, 4)], true),
            b1,
            ones("c/c1", "qc", 4, 0),
        ],
    );
    assert_eq!(admitted_and_bonus_gpus(&d, "c/"), (4, 4), "{d:?}");
    assert!(d.admission("b/b1").is_none());
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "fair sharing schedule workload with lowest
/// drf after admission": Kueue admits the job that leaves its team with the lowest share
/// *after* admission (b: 2 + 10 of 20 = 0.6 against c: 15 of 20 = 0.75). Deliberate
/// difference: kubetrain's teams take turns by the weighted dominant share they borrow
/// *now* (`sched` module docs, step 4; `tenants::bonus_share`), so c, which borrows nothing,
/// goes first and its 15-GPU job takes the idle GPUs.
#[test]
fn kueue_fs_turns_by_current_share_not_share_after_admission_differs() {
    let d = borrowers(
        vec![
            node("n0", "A100", 5, None),
            node("n1", "A100", 5, None),
            node("n2", "A100", 5, None),
            node("n3", "A100", 5, None),
        ],
        1,
        vec![
            running("b/b0", "qb", &[("n0", 0, 2)], true),
            ones("b/b1", "qb", 10, 0),
            ones("c/c1", "qc", 15, 0),
        ],
    );
    assert_eq!(admitted_and_bonus_gpus(&d, "c/"), (15, 15), "{d:?}");
    assert!(waits_with(&d, "b/b1", "QuotaExhausted"), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "fair sharing schedule earliest timestamp
/// first": of two teams borrowing equally little, each with a job for the same idle GPUs,
/// the job that has waited longer gets them.
#[test]
fn kueue_fs_schedule_earliest_timestamp_first() {
    let d = borrowers(
        vec![node("n0", "A100", 10, None)],
        1,
        vec![ones("b/b1", "qb", 10, 1), ones("c/c1", "qc", 10, 0)],
    );
    assert!(d.admission("c/c1").is_some(), "the older job goes: {d:?}");
    assert!(d.admission("b/b1").is_none());
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "fair sharing schedule highest priority
/// first": with equal shares, Kueue admits the higher-priority job of the two teams.
/// Deliberate difference: a job's priority orders it within its queue only (a `Priority`
/// queue, and priority preemption inside the queue; docs/user-guide.md, `priority`;
/// docs/concepts.md), never against another team's jobs, so the higher priority of c's job
/// does not make c's turn come first: the tie goes to the team listed first.
#[test]
fn kueue_fs_priority_is_not_compared_across_teams_differs() {
    let mut b1 = ones("b/b1", "qb", 10, 0);
    b1.priority = 99;
    let mut c1 = ones("c/c1", "qc", 10, 0);
    c1.priority = 101;
    let d = borrowers(vec![node("n0", "A100", 10, None)], 1, vec![b1, c1]);
    assert!(d.admission("b/b1").is_some(), "{d:?}");
    assert!(d.admission("c/c1").is_none());
}

/// KAI-Scheduler pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go,
/// "two queues", entry "allocates GPUs proportionally": 8 GPUs, 2 deserved each, the 4 left
/// over divided 1:3 by over-quota weight: 3 and 5.
#[test]
fn kai_divides_idle_gpus_by_weight() {
    let d = kai_two_queues(8, 1, 3, 6);
    assert_eq!(admitted_and_bonus_gpus(&d, "a/"), (3, 1), "{d:?}");
    assert_eq!(admitted_and_bonus_gpus(&d, "b/"), (5, 3), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go,
/// "two queues", entry "distributes remainder between queues based on largest remaining": 11
/// GPUs, 2 deserved each, weights 1:4 over the 7 left (1.4 and 5.6): KAI gives the remainder
/// GPU to the larger fraction, 3 and 8. Deliberate difference: kubetrain lends GPU by GPU
/// (job by job) to the team with the lowest weighted share borrowed now, a tie to the team
/// listed first (`sched` module docs, step 4, "every tie is broken by an index"), so the
/// lighter team wins the tie at 1 against 4 and ends with 4 against 7.
#[test]
fn kai_remainder_goes_by_turns_not_largest_fraction_differs() {
    let d = kai_two_queues(11, 1, 4, 10);
    assert_eq!(
        admitted_and_bonus_gpus(&d, "a/").0 + admitted_and_bonus_gpus(&d, "b/").0,
        11
    );
    assert_eq!(admitted_and_bonus_gpus(&d, "a/"), (4, 2), "{d:?}");
    assert_eq!(admitted_and_bonus_gpus(&d, "b/"), (7, 5), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "1 job running on node0
/// from queue0, 3 pending jobs from queue1 and 1 pending job from queue0 - allocate them
/// according to their the queue shares": two 2-GPU nodes, queue0 and queue1 deserve 1 GPU
/// each; queue0 runs one 1-GPU job. Of the three idle GPUs queue1 gets its deserved one and
/// the two teams split the remaining two, one each: queue0's job and two of queue1's three
/// start, queue1's last job waits.
#[test]
fn kai_idle_gpus_follow_the_queue_shares() {
    let jobs = vec![
        on_places(
            job("queue0/running_job0", "queue0", 1, 1),
            &[("node0", &[0])],
            false,
        ),
        queued(job("queue0/pending_job0", "queue0", 1, 1), 1),
        queued(job("queue1/pending_job1", "queue1", 1, 1), 2),
        queued(job("queue1/pending_job2", "queue1", 1, 1), 3),
        queued(job("queue1/pending_job3", "queue1", 1, 1), 4),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 2, None),
            node("node1", "A100", 2, None),
        ],
        vec![vc("queue0", "A100", 1), vc("queue1", "A100", 1)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    assert_eq!(
        admitted(&d),
        strings(&[
            "queue0/pending_job0",
            "queue1/pending_job1",
            "queue1/pending_job2"
        ]),
        "{d:?}"
    );
    assert!(
        waits_with(&d, "queue1/pending_job3", "QuotaExhausted"),
        "{d:?}"
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "Both queues has
/// exactly the same share - give priority to the created 1st (queue0)": both teams deserve 2
/// and run 2 on a 5-GPU node; each asks 1 more, queued at the same time. The one idle GPU
/// goes to queue0, created (here: listed) first.
#[test]
fn kai_exactly_equal_shares_go_to_the_first_queue() {
    let jobs = vec![
        on_places(
            job("queue0/running_job0", "queue0", 1, 2),
            &[("node0", &[0, 1])],
            false,
        ),
        on_places(
            job("queue1/running_job1", "queue1", 1, 2),
            &[("node0", &[2, 3])],
            false,
        ),
        queued(job("queue0/pending_job0", "queue0", 1, 1), 1),
        queued(job("queue1/pending_job1", "queue1", 1, 1), 1),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 5, None)],
        vec![vc("queue0", "A100", 2), vc("queue1", "A100", 2)],
        vec![queue("queue0", "queue0"), queue("queue1", "queue1")],
        jobs,
    ));
    assert_eq!(admitted(&d), strings(&["queue0/pending_job0"]), "{d:?}");
    assert!(
        waits_with(&d, "queue1/pending_job1", "QuotaExhausted"),
        "{d:?}"
    );
}

/// Volcano pkg/scheduler/actions/allocate/allocate_test.go, case "two Jobs on one node": two
/// queues of equal weight, each with a PodGroup of two 1-CPU pods and `minMember` 0 (so each
/// pod stands alone: here two 1-GPU jobs per team), on a 2-GPU node, nothing guaranteed.
/// Each team gets one GPU, not one team both.
#[test]
fn volcano_two_teams_split_one_node() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n1", "A100", 2, None)],
        vec![vc("c1", "A100", 0), vc("c2", "A100", 0)],
        vec![queue("c1", "c1"), queue("c2", "c2")],
        vec![
            queued(job("c1/pg1-p-1", "c1", 1, 1), 1),
            queued(job("c1/pg1-p-2", "c1", 1, 1), 2),
            queued(job("c2/pg2-p-1", "c2", 1, 1), 3),
            queued(job("c2/pg2-p-2", "c2", 1, 1), 4),
        ],
    ));
    assert_eq!(
        admitted(&d),
        strings(&["c1/pg1-p-1", "c2/pg2-p-1"]),
        "{d:?}"
    );
}

/// Volcano pkg/scheduler/plugins/drf/hdrf_test.go, case "blocking nodes test": four teams of
/// equal weight on one node of 30 CPUs and 30 GiB; pg1, pg2 and pg3's child pg31 ask CPU only,
/// pg3's child pg32 and pg4 ask memory only (30 one-unit pods each). Hierarchical DRF gives
/// pg1, pg2 and pg31 10 CPUs each, and pg32 and pg4 15 GiB each. Here CPU and memory are two
/// GPU types of 30 GPUs each, the pods 1-GPU jobs, and pg3 one team with two queues
/// (dominant-resource fairness over GPU types between teams of equal weight, `sched` module
/// docs, step 4): the same split.
#[test]
fn volcano_drf_over_two_gpu_types() {
    let mut jobs = vec![];
    let mut t = 0;
    for i in 0..30 {
        for (team, q, ty) in [
            ("pg1", "pg1", "cpu"),
            ("pg2", "pg2", "cpu"),
            ("pg3", "pg31", "cpu"),
            ("pg3", "pg32", "mem"),
            ("pg4", "pg4", "mem"),
        ] {
            t += 1;
            jobs.push(queued(
                typed(job(&format!("{team}/{q}-{i}"), q, 1, 1), &[ty]),
                t,
            ));
        }
    }
    let snap = snapshot(
        NOW,
        vec![
            node("cpu-0", "cpu", 30, None),
            node("mem-0", "mem", 30, None),
        ],
        ["pg1", "pg2", "pg3", "pg4"]
            .iter()
            .map(|n| vc(n, "cpu", 0))
            .collect(),
        vec![
            queue("pg1", "pg1"),
            queue("pg2", "pg2"),
            shared(queue("pg31", "pg3"), 50),
            shared(queue("pg32", "pg3"), 50),
            queue("pg4", "pg4"),
        ],
        jobs,
    );
    let d = schedule(&snap);
    let per_type = |team: &str, ty: &str| {
        d.admissions
            .iter()
            .filter(|a| a.job.starts_with(&format!("{team}/")) && a.flavor == Flavor::new(ty))
            .count()
    };
    assert_eq!(d.admissions.len(), 60, "{d:?}");
    assert_eq!(
        [
            per_type("pg1", "cpu"),
            per_type("pg2", "cpu"),
            per_type("pg3", "cpu")
        ],
        [10, 10, 10]
    );
    assert_eq!([per_type("pg3", "mem"), per_type("pg4", "mem")], [15, 15]);
    assert_eq!(admitted_gpus(&d, &snap, "pg3"), 25);
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
        let mut jobs = vec![on_node(
            job("ns-1/small-1", "q-1", 1, 1),
            "node-1",
            &[0],
            true,
        )];
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
            on_node(
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

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "queue0 has deserved
/// of 3, queue 1 has deserved of 2, they will both have a share of 1 if allocated their task,
/// yet for fair convergence - queue1 should allocate the task": 2 GPUs are idle; queue0 uses 2
/// of 3 and asks 1 more, queue1 uses 0 of 2 and asks 2. Both are within their guarantees;
/// the team using the smaller part of its guarantee goes first, even though queue0's job is
/// older, and queue0's job then finds no room.
#[test]
fn kai_guaranteed_turns_go_to_the_team_using_least_of_its_guarantee() {
    let jobs = vec![
        on_node(
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
        on_node(
            pjob("q0/running_job0", "queue0", 1, 2, TRAIN),
            "node0",
            &[0, 1],
            false,
        ),
        on_node(
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

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can reclaim from queue
/// using less, if taking the latest workload from user using the most isn't enough": a runs
/// 3 + 1 GPUs, b 2 + 3, c nothing; c's 3-GPU job takes Kueue's single victim a1 (3 GPUs).
/// Deliberate difference: reclaim victims are other teams' *bonus* jobs, and a team's
/// guarantee is filled by its most important jobs first, then by the work they would lose
/// (docs/concepts.md, "Guaranteed and bonus"): a1 is within a's guarantee, a's 1-GPU job and
/// b's 2-GPU job are the borrowed ones, and they share a node, so they go (the same lost work
/// as a1).
#[test]
fn kueue_fair_reclaim_takes_the_bonus_jobs_not_a_guaranteed_one_differs() {
    let d = fair_abc(vec![
        on("a/a1", "qa", 0, "n0", &[0, 1, 2], false),
        on("a/a2", "qa", 0, "n1", &[0], true),
        on("b/b1", "qb", 0, "n1", &[1, 2], true),
        on("b/b2", "qb", 0, "n2", &[0, 1, 2], false),
        job("c/in", "qc", 1, 3),
    ]);
    assert_eq!(victims(&d), strings(&["a/a2", "b/b1"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Reclaim)
    );
    let lost: u64 = d.preemptions.iter().map(|p| p.lost_gpu_seconds).sum();
    assert_eq!(lost, 3 * 1000, "as much work as a1 alone would lose");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "can preempt lower priority
/// workloads from same CQ": a runs four 1-GPU jobs (two of priority -1) and borrows one; b
/// borrows two; a's 2-GPU job preempts a's two low-priority jobs and runs borrowing. Deliberate
/// difference: a job that would run beyond its VirtualCluster's guarantee may displace only
/// jobs that run as bonus too (docs/concepts.md, Queue, `priorityPreemption`: otherwise the
/// new bonus job could be reclaimed at once, and both runs would be lost). Only one of a's
/// low-priority jobs is bonus, which frees too little, so the job waits and nobody is
/// preempted.
#[test]
fn kueue_fair_preempt_lower_priority_in_same_cq_while_borrowing_differs() {
    let d = fair_abc(vec![
        on("a/a1_low", "qa", -1, "n0", &[0], false),
        on("a/a2_low", "qa", -1, "n0", &[1], true),
        on("a/a3", "qa", 0, "n0", &[2], false),
        on("a/a4", "qa", 0, "n1", &[0], false),
        on("b/b1", "qb", 0, "n1", &[1], false),
        on("b/b2", "qb", 0, "n1", &[2], false),
        on("b/b3", "qb", 0, "n2", &[0], false),
        on("b/b4", "qb", 0, "n2", &[1], true),
        on("b/b5", "qb", 0, "n2", &[2], true),
        pjob("a/in", "qa", 1, 2, 0),
    ]);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("a/in").is_none(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "forced to preempt within
/// clusterqueue because borrowing workload too important": a (guaranteed 5) runs three
/// priority -1 jobs; b (guaranteed 3) borrows 1 with a priority-100 4-GPU job; one GPU is
/// idle. a's 4-GPU job takes a's three low-priority jobs, ending within a's guarantee;
/// reclaiming b's job alone would leave a beyond its guarantee.
#[test]
fn kueue_fair_forced_to_preempt_within_cq_because_borrower_too_important() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 8, None)],
        vec![vc("a", "A100", 5), vc("b", "A100", 3)],
        vec![pqueue("qa", "a"), queue("qb", "b")],
        vec![
            on("a/a1", "qa", -1, "n0", &[0], false),
            on("a/a2", "qa", -1, "n0", &[1], false),
            on("a/a3", "qa", -1, "n0", &[2], false),
            on("b/b1", "qb", 100, "n0", &[3, 4, 5, 6], true),
            pjob("a/in", "qa", 1, 4, 0),
        ],
    ));
    assert_eq!(victims(&d), strings(&["a/a1", "a/a2", "a/a3"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority)
    );
}

/// Kueue pkg/scheduler/preemption/preemption_fair_test.go, case "nominal first: workload
/// fitting within nominal can preempt despite high aggregate DRS": team a borrows five cheap
/// GPUs, yet its premium job within its premium guarantee takes back the premium GPU team b
/// borrows. Guarantees are per GPU type; borrowing of another type does not count.
#[test]
fn kueue_fair_nominal_first_can_reclaim_despite_borrowing_elsewhere() {
    let mut jobs = vec![
        on("a/a_prem1", "qa", 0, "p0", &[0], false),
        on("a/a_prem2", "qa", 0, "p0", &[1], false),
        on("b/b_prem1", "qb", 0, "p0", &[2], true),
    ];
    for g in 0..5u32 {
        jobs.push(on(&format!("a/a_cheap{g}"), "qa", 0, "c0", &[g], true));
    }
    jobs.push(typed(job("a/in", "qa", 1, 1), &["premium"]));
    let d = schedule(&snapshot(
        NOW,
        vec![node("p0", "premium", 3, None), node("c0", "cheap", 6, None)],
        vec![
            vc_types("a", &[("premium", 3)]),
            vc_types("b", &[("cheap", 6)]),
        ],
        vec![queue("qa", "a"), queue("qb", "b")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["b/b_prem1"]), "{d:?}");
    assert_eq!(reason_of(&d, "b/b_prem1"), Some(PreemptionReason::Reclaim));
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
