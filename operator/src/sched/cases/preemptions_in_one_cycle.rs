//! Several preemptions in one cycle: room made for more than one job at once, skipping
//! targets another preemption already takes, and room in flight going to the highest
//! priority.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// A running gang of 1-GPU replicas, `n` of them on each `(node, first GPU, n)`.
fn gang_on_runs(id: &str, queue: &str, prio: i32, places: &[(&str, u32, u32)], bonus: bool) -> Job {
    let gpus: Vec<Vec<u32>> = places
        .iter()
        .flat_map(|&(_, first, n)| (first..first + n).map(|g| vec![g]))
        .collect();
    let nodes: Vec<&str> = places
        .iter()
        .flat_map(|&(node, _, n)| std::iter::repeat_n(node, n as usize))
        .collect();
    let at: Vec<(&str, &[u32])> = nodes
        .iter()
        .zip(gpus.iter())
        .map(|(n, g)| (*n, g.as_slice()))
        .collect();
    run(
        pjob(id, queue, at.len() as u32, 1, prio),
        &at,
        bonus,
        0,
        CKPT,
    )
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple CQs need preemption": other-alpha
/// (guaranteed 5, limit 10) runs a 10-GPU job that borrows 5; other-beta's 1-GPU job within
/// its guarantee reclaims it whole, and other-alpha's next job preempts nothing. Kueue has it
/// wait on its limit (the job being reclaimed still holds it). In kubetrain both teams use
/// none of their guarantee, so beta's job, waiting longer, goes first; once its reclaim
/// counts alpha's job as leaving, alpha's next job, within its guarantee, waits for the room
/// that job frees: the same outcome, said as what it waits for.
#[test]
fn kueue_multiple_cqs_need_preemption() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 5, None), node("n1", "A100", 5, None)],
        vec![
            limited(vc("other-alpha", "A100", 5), 10),
            limited(vc("other-beta", "A100", 5), 6),
        ],
        vec![queue("qa", "other-alpha"), pqueue("qb", "other-beta")],
        vec![
            gang_on_runs(
                "alpha/use-all",
                "qa",
                0,
                &[("n0", 0, 5), ("n1", 0, 5)],
                true,
            ),
            at(pjob("beta/preemptor", "qb", 1, 1, -1), 0),
            at(pjob("alpha/pending", "qa", 1, 1, 1), 1),
        ],
    ));
    assert_eq!(victims(&d), strings(&["alpha/use-all"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "alpha/use-all"),
        Some(PreemptionReason::Reclaim)
    );
    assert!(
        waits_with(&d, "beta/preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
    assert!(
        waits_with(&d, "alpha/pending", "WaitingForPreemption"),
        "{d:?}"
    );
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple preemptions without borrowing": two
/// teams, each full within its guarantee of 2, each with a high-priority 2-GPU job: both
/// preempt their own lower-priority job in the same cycle.
#[test]
fn kueue_multiple_preemptions_without_borrowing() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 4, None)],
        vec![vc("alpha", "A100", 2), vc("beta", "A100", 2)],
        vec![pqueue("qa", "alpha"), pqueue("qb", "beta")],
        vec![
            on("alpha/a1", "qa", 0, "n0", &[0, 1], false),
            on("beta/b1", "qb", 0, "n0", &[2, 3], false),
            pjob("alpha/preemptor", "qa", 1, 2, 100),
            pjob("beta/preemptor", "qb", 1, 2, 100),
        ],
    ));
    assert_eq!(victims(&d), strings(&["alpha/a1", "beta/b1"]), "{d:?}");
    assert!(
        d.preemptions
            .iter()
            .all(|p| p.reason == PreemptionReason::Priority)
    );
    assert!(waits_with(&d, "alpha/preemptor", "WaitingForPreemption"));
    assert!(waits_with(&d, "beta/preemptor", "WaitingForPreemption"));
}

/// Kueue pkg/scheduler/scheduler_test.go, case "multiple preemptions skip preemption when
/// shared limited resource": two teams each run a 2-GPU job and want a 3-GPU one; one GPU is
/// idle, so only one of them can fit even if both preempt: Kueue preempts for one and skips
/// the other, "no wasteful preemption". In Kueue the 3-GPU jobs borrow the idle GPU; kubetrain
/// would refuse that outright (evicting guaranteed work for bonus work,
/// `peer_cases::kueue_preemption_only_within_nominal_quota`), so here each team is guaranteed
/// 3 (an overcommitted cluster) and the question is Kueue's: the idle GPU serves one plan.
#[test]
fn kueue_multiple_preemptions_skip_preemption_when_shared_limited_resource() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 5, None)],
        vec![vc("alpha", "A100", 3), vc("beta", "A100", 3)],
        vec![pqueue("qa", "alpha"), pqueue("qb", "beta")],
        vec![
            on("alpha/a1", "qa", 0, "n0", &[0, 1], false),
            on("beta/b1", "qb", 0, "n0", &[2, 3], false),
            at(pjob("alpha/preemptor", "qa", 1, 3, 100), 0),
            at(pjob("beta/pretending-preemptor", "qb", 1, 3, 99), 1),
        ],
    ));
    // alpha's job has waited longer (Kueue: it has the higher priority)
    assert_eq!(victims(&d), strings(&["alpha/a1"]), "one plan only: {d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(
        !waits_with(&d, "beta/pretending-preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/scheduler_fs_test.go, case "multiple preemptions skip overlapping
/// preemption targets": two teams below their guarantees both need GPUs that one borrower
/// holds. Kueue preempts it once, for the first, and skips the second. In kubetrain the
/// borrower is asked to leave once: the second team counts it as already leaving (`reclaim`
/// module docs, step 1) and waits for the same release, its room reserved too.
#[test]
fn kueue_fs_multiple_preemptions_skip_overlapping_targets() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("n0", "A100", 9, None)],
        vec![
            vc("alpha", "A100", 3),
            vc("beta", "A100", 3),
            vc("gamma", "", 0),
        ],
        vec![
            pqueue("qa", "alpha"),
            pqueue("qb", "beta"),
            queue("qg", "gamma"),
        ],
        vec![
            gang_on_runs("gamma/c1", "qg", 0, &[("n0", 0, 9)], true),
            at(pjob("alpha/preemptor", "qa", 1, 3, 100), 0),
            at(pjob("beta/pretending-preemptor", "qb", 1, 3, 99), 1),
        ],
    ));
    let all: Vec<&str> = d.victims().collect();
    assert_eq!(all, vec!["gamma/c1"], "asked to leave once: {d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(
        waits_with(&d, "alpha/preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
    assert!(
        waits_with(&d, "beta/pretending-preemptor", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testStatefulPreemption`, pod28–pod34: pod29
/// (priority 2) preempts pod28 (1); pod30 (1) cannot take the room while pod28 holds it;
/// pod33 (3) takes over the preemption in flight ("will cancel pod29 ... and continue to
/// preempt pod28"); once pod28 is gone the highest-priority job starts at once (pod34). Here:
/// the room pod28 frees goes to the highest-priority waiting job, nobody else is preempted,
/// the equal-priority job waits, and the next cycle, with pod28 gone, admits the highest.
#[test]
fn hived_stateful_preemption_room_in_flight_goes_to_the_highest_priority() {
    let nodes = vec![node("n0", "V100", 8, None), node("n1", "V100", 8, None)];
    let vcs = vec![vc("vc1", "V100", 16)];
    let queues = vec![pqueue("q", "vc1")];
    let pending = || {
        let mut p29 = pjob("vc1/pod29", "q", 1, 8, 2);
        p29.queued_at = 1;
        let mut p30 = pjob("vc1/pod30", "q", 1, 8, 1);
        p30.queued_at = 2;
        let mut p33 = pjob("vc1/pod33", "q", 1, 8, 3);
        p33.queued_at = 3;
        vec![p29, p30, p33]
    };
    // n1 holds a job of priority 2: pod29 may not preempt it, pod33 may.
    let other = run(
        pjob("vc1/other", "q", 1, 8, 2),
        &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
        false,
        0,
        Some(NOW - 10),
    );
    let mut jobs = vec![
        leaving(pjob("vc1/pod28", "q", 1, 8, 1), "n0", "vc1/pod29"),
        other.clone(),
    ];
    jobs.extend(pending());
    let d = schedule(&snapshot(
        NOW,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(d.cancellations.is_empty(), "{d:?}");
    assert!(
        victims(&d).iter().all(|v| v != "vc1/other"),
        "the leaving job's room is enough for one: {d:?}"
    );
    match d.waiting_reason("vc1/pod33") {
        Some(WaitReason::WaitingForPreemption { victims, .. }) => {
            assert_eq!(victims, &strings(&["vc1/pod28"]), "{d:?}")
        }
        r => panic!("pod33 waits on pod28: {r:?} {d:?}"),
    }
    assert!(d.preemptions.iter().all(|p| p.beneficiary != "vc1/pod30"));
    assert!(d.waiting_reason("vc1/pod29").is_some());
    assert!(d.waiting_reason("vc1/pod30").is_some());

    // pod28 has left: the highest-priority job starts on n0.
    let mut jobs = vec![other];
    jobs.extend(pending());
    let d = schedule(&snapshot(NOW + 60, nodes, vcs, queues, jobs));
    assert_eq!(d.admissions.len(), 1, "{d:?}");
    assert_eq!(d.admissions[0].job, "vc1/pod33");
    assert_eq!(nodes_of(&d, "vc1/pod33"), ["n0"]);
}
