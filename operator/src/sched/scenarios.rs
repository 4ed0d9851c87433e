//! Scenario tests: each reads like the user story it checks.

use super::fixtures::*;
use super::*;

fn gpus_of(d: &Decisions, job: &str) -> Vec<(String, Vec<u32>)> {
    d.admission(job)
        .map(|a| {
            a.placement
                .iter()
                .map(|p| (p.node.clone(), p.gpus.iter().map(|g| g.0).collect()))
                .collect()
        })
        .unwrap_or_default()
}

/// Team A (16 GPUs guaranteed) lent its idle GPUs to team C; A now needs a whole node back.
/// C's bonus jobs on the node whose jobs lose the least work since their checkpoints go; C's
/// job within C's own guarantee is never touched.
#[test]
fn team_a_takes_back_lent_gpus_least_lost_work_first() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("team-a", "A100", 16), vc("team-c", "A100", 4)];
    let queues = vec![queue("qa", "team-a"), queue("qc", "team-c")];
    let now = 10_000;
    let jobs = vec![
        // C's guaranteed job and bonus jobs
        run(
            job("c/own", "qc", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            false,
            0,
            None,
        ),
        run(
            job("c/fresh-ckpt", "qc", 1, 4),
            &[("n0", &[4, 5, 6, 7])],
            true,
            0,
            Some(now - 10),
        ),
        run(
            job("c/old-a", "qc", 1, 4),
            &[("n1", &[0, 1, 2, 3])],
            true,
            0,
            Some(now - 5000),
        ),
        run(
            job("c/old-b", "qc", 1, 4),
            &[("n1", &[4, 5, 6, 7])],
            true,
            0,
            Some(now - 4000),
        ),
        job("a/train", "qa", 1, 8),
    ];
    let snap = snapshot(
        now,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs.clone(),
    );
    let d = schedule(&snap);
    assert!(d.admissions.is_empty(), "nothing is free: {d:?}");
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    let p = &d.preemptions[0];
    assert_eq!(p.beneficiary, "a/train");
    assert_eq!(p.reason, PreemptionReason::Reclaim);
    // n0 cannot be emptied (c/own is within C's guarantee); n1's two jobs must go
    assert_eq!(
        p.victims,
        vec!["c/old-a".to_string(), "c/old-b".to_string()]
    );
    assert_eq!(p.lost_gpu_seconds, 4 * 5000 + 4 * 4000);
    assert!(matches!(
        d.waiting_reason("a/train"),
        Some(WaitReason::WaitingForPreemption { .. })
    ));

    // next cycle: the victims are checkpointing; no new victims are chosen
    let mut jobs2 = jobs.clone();
    for j in &mut jobs2 {
        if j.id.starts_with("c/old") {
            j.running.as_mut().unwrap().preempting = true;
        }
    }
    let d2 = schedule(&snapshot(
        now + 5,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs2,
    ));
    assert!(d2.preemptions.is_empty(), "{d2:?}");
    match d2.waiting_reason("a/train") {
        Some(WaitReason::WaitingForPreemption { victims, .. }) => assert_eq!(victims.len(), 2),
        r => panic!("unexpected {r:?}"),
    }

    // once they are gone, A's job starts on n1, within A's guarantee
    let jobs3: Vec<Job> = jobs
        .into_iter()
        .filter(|j| !j.id.starts_with("c/old"))
        .collect();
    let d3 = schedule(&snapshot(now + 60, nodes, vcs, queues, jobs3));
    let a = d3.admission("a/train").expect("admitted");
    assert!(!a.bonus);
    assert!(a.placement.iter().all(|p| p.node == "n1"));
}

/// The fresher checkpoint loses less work, so it is the one preempted when either would do.
#[test]
fn reclaim_prefers_the_victim_with_the_freshest_checkpoint() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 8), vc("c", "A100", 0)];
    let queues = vec![queue("qa", "a"), queue("qc", "c")];
    let jobs = vec![
        run(
            job("c/stale", "qc", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            true,
            0,
            Some(100),
        ),
        run(
            job("c/fresh", "qc", 1, 4),
            &[("n0", &[4, 5, 6, 7])],
            true,
            0,
            Some(900),
        ),
        job("a/small", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(1000, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1);
    assert_eq!(d.preemptions[0].victims, vec!["c/fresh".to_string()]);
}

/// An 8-GPU job waits for a whole node while 1-GPU jobs are packed onto partly used nodes,
/// leaving the empty node whole for it.
#[test]
fn one_gpu_jobs_pack_and_leave_whole_nodes_for_big_jobs() {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    let vcs = vec![vc("t", "A100", 24)];
    let queues = vec![queue("q", "t")];
    let mut jobs = vec![
        run(
            job("t/r0", "q", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            false,
            0,
            None,
        ),
        run(
            job("t/r1", "q", 1, 6),
            &[("n1", &[0, 1, 2, 3, 4, 5])],
            false,
            0,
            None,
        ),
    ];
    for i in 0..4 {
        let mut j = job(&format!("t/small-{i}"), "q", 1, 1);
        j.queued_at = i;
        jobs.push(j);
    }
    let mut big = job("t/big", "q", 1, 8);
    big.queued_at = 10;
    jobs.push(big);
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs.clone(),
    ));
    for i in 0..4 {
        let g = gpus_of(&d, &format!("t/small-{i}"));
        assert_eq!(g.len(), 1);
        assert_ne!(
            g[0].0, "n2",
            "small jobs must not split the empty node: {d:?}"
        );
    }
    assert_eq!(gpus_of(&d, "t/big")[0].0, "n2");

    // with no whole node free, the big job waits and says why, the small ones still run
    // (the job that splits n2 is more important than the big one, so it does not move)
    let mut moving = jobs.clone();
    jobs.push(run(
        pjob("t/r2", "q", 1, 1, 5),
        &[("n2", &[0])],
        false,
        0,
        None,
    ));
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    match d.waiting_reason("t/big") {
        Some(
            r @ WaitReason::NoFit {
                largest_free_on_node,
                ..
            },
        ) => {
            assert_eq!(*largest_free_on_node, 7);
            assert!(r.to_string().contains("at most 7 on one node"), "{r}");
        }
        r => panic!("unexpected {r:?}"),
    }
    assert_eq!(d.admissions.len(), 4);

    // as important as the big job, it moves to one of the two GPUs left free elsewhere
    moving.push(run(job("t/r2", "q", 1, 1), &[("n2", &[0])], false, 0, None));
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        moving.clone(),
    ));
    assert_eq!(d.admissions.len(), 4);
    assert_eq!(victims(&d), strings(&["t/r2"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Consolidation);
    // an admin who turned consolidation off (`--consolidation=false`): it waits
    let off = Options {
        consolidation: false,
        ..Options::default()
    };
    let kept = schedule_with(
        &snapshot(
            100,
            nodes.clone(),
            vcs.clone(),
            queues.clone(),
            moving.clone(),
        ),
        &off,
    );
    assert!(kept.preemptions.is_empty(), "{kept:?}");
    assert!(
        matches!(kept.waiting_reason("t/big"), Some(WaitReason::NoFit { .. })),
        "{kept:?}"
    );
    assert!(
        matches!(
            d.waiting_reason("t/big"),
            Some(WaitReason::WaitingForPreemption {
                reason: PreemptionReason::Consolidation,
                ..
            })
        ),
        "{d:?}"
    );
}

/// Two 8-GPU jobs of one FIFO queue wait for a whole node, the first too unimportant to
/// move the 1-GPU job in the way, the second important enough: the first's failed search
/// does not stand for the second's, and the second moves it.
#[test]
fn a_consolidation_too_unimportant_for_one_job_is_still_tried_for_a_more_important_one() {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    let jobs = vec![
        run(
            pjob("t/in-the-way", "q", 1, 1, 1),
            &[("n0", &[0])],
            false,
            0,
            None,
        ),
        run(
            pjob("t/six", "q", 1, 6, 9),
            &[("n1", &[0, 1, 2, 3, 4, 5])],
            false,
            0,
            None,
        ),
        run(
            pjob("t/seven", "q", 1, 7, 9),
            &[("n2", &[0, 1, 2, 3, 4, 5, 6])],
            false,
            0,
            None,
        ),
        pjob("t/low", "q", 1, 8, 0),
        {
            let mut j = pjob("t/high", "q", 1, 8, 2);
            j.queued_at = 1;
            j
        },
    ];
    let d = schedule(&snapshot(
        100,
        nodes,
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["t/in-the-way"]), "{d:?}");
    assert_eq!(d.preemptions[0].beneficiary, "t/high");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Consolidation);
}

/// Fractions of one GPU share it up to 1000 milli; whole-GPU replicas avoid shared GPUs.
#[test]
fn gpu_shares_pack_and_never_exceed_one_gpu() {
    let nodes = vec![node("n0", "T4", 2, None)];
    let vcs = vec![vc("t", "T4", 2)];
    let queues = vec![queue("q", "t")];
    let mut jobs: Vec<Job> = (0..4)
        .map(|i| {
            let mut j = share_job(&format!("t/dbg-{i}"), "q", 1, 300);
            j.queued_at = i;
            j
        })
        .collect();
    let mut w = job("t/whole", "q", 1, 1);
    w.queued_at = 10;
    jobs.push(w);
    let d = schedule(&snapshot(0, nodes, vcs, queues, jobs));
    let gpu = |j: &str| d.admission(j).map(|a| a.placement[0].gpus[0].0);
    assert_eq!(gpu("t/dbg-0"), gpu("t/dbg-1"));
    assert_eq!(gpu("t/dbg-1"), gpu("t/dbg-2"));
    assert_ne!(
        gpu("t/dbg-3"),
        gpu("t/dbg-0"),
        "a fourth 300m share would exceed 1000m"
    );
    assert!(
        d.admission("t/whole").is_none(),
        "both GPUs hold shares: {d:?}"
    );
    assert_eq!(
        d.admission("t/dbg-0").unwrap().placement[0].share,
        Some(MilliGpu(300))
    );
}

/// A share goes to the GPU where it strands the least capacity for the workload's shapes,
/// which is not always the tightest one: when 400m shares are common, a 300m share leaves
/// a GPU with 400m free rather than one with 100m.
#[test]
fn a_share_goes_to_the_gpu_it_fragments_least() {
    let place = |waiting_400m: u32| {
        let nodes = vec![node("n0", "T4", 2, None)];
        let vcs = vec![vc("t", "T4", 2)];
        let queues = vec![queue("q", "t")];
        let mut jobs = vec![
            run(
                share_job("t/a", "q", 1, 600),
                &[("n0", &[0])],
                false,
                0,
                None,
            ),
            run(
                share_job("t/b", "q", 1, 300),
                &[("n0", &[1])],
                false,
                0,
                None,
            ),
            share_job("t/new", "q", 1, 300),
        ];
        let mut later = share_job("t/later", "q", waiting_400m, 400);
        later.queued_at = 1;
        if waiting_400m > 0 {
            jobs.push(later);
        }
        let d = schedule(&snapshot(1, nodes, vcs, queues, jobs));
        d.admission("t/new").map(|a| a.placement[0].gpus[0].0)
    };
    // rooms: GPU 0 400m, GPU 1 700m. With 600m and 300m shares the mix, filling GPU 0 to
    // 100m keeps 700m for a 600m share (best fit agrees).
    assert_eq!(place(0), Some(0));
    // with ten 400m replicas waiting, 400m + 400m left beats 100m + 700m
    assert_eq!(place(10), Some(1), "both GPUs keep room for a 400m share");
}

/// A replica without GPUs goes, among nodes the fragmentation score ties (here both: no
/// shape stops fitting), to one with no idle GPU: beside idle GPUs it would take the CPU
/// they need, and a GPU job arriving later would find the GPUs free but no CPU for them.
#[test]
fn a_cpu_only_replica_does_not_take_the_cpu_of_idle_gpus() {
    let mut nodes = vec![node("n0", "T4", 2, None), node("n1", "T4", 2, None)];
    for n in &mut nodes {
        n.allocatable.cpu_milli = 24_000;
    }
    let vcs = vec![vc("t", "T4", 4)];
    let queues = vec![queue("q", "t")];
    let mut full = job("t/full", "q", 1, 2);
    full.tasks[0].cpu_milli = 4_000;
    let full = run(full, &[("n1", &[0, 1])], false, 0, None);
    let mut cpu = job("t/cpu", "q", 1, 0);
    cpu.tasks[0].cpu_milli = 16_000;
    let d = schedule(&snapshot(
        1,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![full.clone(), cpu.clone()],
    ));
    let a = d.admission("t/cpu").expect("admitted");
    // n0 is first by name and would still hold every shape the cluster runs (8 cores
    // left), but its idle GPUs would keep only those 8
    assert_eq!(nodes_of(&d, "t/cpu"), vec!["n1".to_string()]);
    let cpu = run_admitted(cpu, a, 1);
    let mut gpu = job("t/gpu", "q", 1, 2);
    gpu.tasks[0].cpu_milli = 12_000;
    gpu.queued_at = 2;
    let d = schedule(&snapshot(2, nodes, vcs, queues, vec![full, cpu, gpu]));
    assert_eq!(nodes_of(&d, "t/gpu"), vec!["n0".to_string()], "{d:?}");
}

/// Among nodes that all have idle GPUs, a replica goes where the CPU it takes leaves the idle
/// GPUs enough CPU at the workload's typical CPU per GPU: each shape would still fit either
/// node once (the fragmentation of single shapes ties), but on the node with few cores per
/// GPU the cores taken are the ones its second GPU needs.
#[test]
fn a_replica_leaves_idle_gpus_the_cpu_the_workload_needs_per_gpu() {
    let mut nodes = vec![node("n0", "T4", 2, None), node("n1", "T4", 2, None)];
    nodes[0].allocatable.cpu_milli = 24_000;
    nodes[1].allocatable.cpu_milli = 64_000;
    let vcs = vec![vc("t", "T4", 4)];
    let queues = vec![queue("q", "t")];
    let mut cpu = job("t/cpu", "q", 1, 0);
    cpu.tasks[0].cpu_milli = 8_000;
    let mut jobs = vec![cpu];
    for i in 0..4 {
        let mut g = job(&format!("t/gpu-{i}"), "q", 1, 1);
        g.tasks[0].cpu_milli = 10_000;
        g.queued_at = 1 + i;
        jobs.push(g);
    }
    let d = schedule(&snapshot(1, nodes, vcs, queues, jobs));
    // on n0 (first by name) the 16 cores left would still hold one 10-core GPU replica, but
    // not two: one of its GPUs would stay idle
    assert_eq!(nodes_of(&d, "t/cpu"), vec!["n1".to_string()], "{d:?}");
    for i in 0..4 {
        assert!(
            d.admission(&format!("t/gpu-{i}")).is_some(),
            "gpu-{i}: {d:?}"
        );
    }
}

/// Idle GPUs are lent by weight: weight 3 gets three times what weight 1 gets.
#[test]
fn idle_gpus_are_lent_by_weighted_fair_share() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let mut light = vc("light", "A100", 0);
    let mut heavy = vc("heavy", "A100", 0);
    light.weight = 1;
    heavy.weight = 3;
    let queues = vec![queue("ql", "light"), queue("qh", "heavy")];
    let mut jobs = Vec::new();
    for i in 0..8 {
        jobs.push(job(&format!("l/{i}"), "ql", 1, 1));
        jobs.push(job(&format!("h/{i}"), "qh", 1, 1));
    }
    let d = schedule(&snapshot(0, nodes, vec![light, heavy], queues, jobs));
    let l = d
        .admissions
        .iter()
        .filter(|a| a.job.starts_with("l/"))
        .count();
    let h = d
        .admissions
        .iter()
        .filter(|a| a.job.starts_with("h/"))
        .count();
    assert_eq!((l, h), (2, 6));
    assert!(d.admissions.iter().all(|a| a.bonus));
    assert!(matches!(
        d.waiting_reason("l/7"),
        Some(WaitReason::QuotaExhausted { .. })
    ));
}

/// Limits: the VC limit, the queue's maxShare and the per-user limit each stop admissions
/// with their own reason.
#[test]
fn limits_stop_admissions_with_their_own_reason() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut t = vc("t", "A100", 16);
    t.limit_gpus = Some(10);
    let mut q = queue("q", "t");
    q.user_limit = Some(3);
    let mut q2 = queue("q2", "t");
    q2.max_share = 20; // 2 GPUs of the limit of 10
    let mut jobs = Vec::new();
    for i in 0..5 {
        let mut j = job(&format!("t/alice-{i}"), "q", 1, 1);
        j.queued_at = i;
        jobs.push(j);
    }
    for i in 0..3 {
        let mut j = job(&format!("t/q2-{i}"), "q2", 1, 1);
        j.queued_at = i;
        j.user = format!("u{i}");
        jobs.push(j);
    }
    let mut big = job("t/bob-big", "q", 1, 8);
    big.user = "bob".into();
    big.queued_at = 100;
    jobs.push(big);
    let d = schedule(&snapshot(0, nodes, vec![t], vec![q, q2], jobs));
    assert!(
        matches!(
            d.waiting_reason("t/alice-3"),
            Some(WaitReason::UserLimit { .. })
        ),
        "{d:?}"
    );
    assert!(
        matches!(
            d.waiting_reason("t/q2-2"),
            Some(WaitReason::QueueMaxShare { .. })
        ),
        "{d:?}"
    );
    // 3 + 2 in use, 8 more would exceed the VC's limit of 10 now; but 8 is more than the
    // queue's userLimit of 3 for ever, and that is what bob is told
    assert!(
        matches!(
            d.waiting_reason("t/bob-big"),
            Some(WaitReason::UserLimit {
                limit_gpus: 3,
                needed_gpus: Gpus(8000),
                ..
            })
        ),
        "{d:?}"
    );
    assert_eq!(d.admissions.len(), 5);

    // without a userLimit, the VC's limit it exceeds now
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut t = vc("t", "A100", 16);
    t.limit_gpus = Some(10);
    let jobs = vec![
        run(
            job("t/five", "q", 1, 5),
            &[("n0", &[0, 1, 2, 3, 4])],
            false,
            0,
            None,
        ),
        job("t/six", "q", 1, 6),
    ];
    let d = schedule(&snapshot(0, nodes, vec![t], vec![queue("q", "t")], jobs));
    assert!(
        matches!(
            d.waiting_reason("t/six"),
            Some(WaitReason::OverLimit {
                limit_gpus: 10,
                in_use_gpus: Gpus(5000),
                ..
            })
        ),
        "{d:?}"
    );
}

/// A deleted queue admits nothing new, nor does any queue below it; its running job runs on,
/// and the team's other queue takes the room.
#[test]
fn a_terminating_queue_admits_nothing_new() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let mut old = queue("old", "t");
    old.terminating = true;
    let mut child = queue("child", "t");
    child.parent = Some("old".into());
    let jobs = vec![
        run(
            job("t/running", "old", 1, 2),
            &[("n0", &[0, 1])],
            false,
            0,
            None,
        ),
        job("t/old-next", "old", 1, 2),
        job("t/child-next", "child", 1, 2),
        job("t/new", "new", 1, 2),
    ];
    let d = schedule(&snapshot(
        10,
        nodes,
        vec![vc("t", "A100", 8)],
        vec![old, child, queue("new", "t")],
        jobs,
    ));
    for (j, closed) in [("t/old-next", "old"), ("t/child-next", "old")] {
        assert!(
            matches!(
                d.waiting_reason(j),
                Some(WaitReason::QueueTerminating { queue }) if queue == closed
            ),
            "{j}: {d:?}"
        );
    }
    assert_eq!(nodes_of(&d, "t/new"), ["n0"]);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert_eq!(d.admissions.len(), 1, "{d:?}");
}

/// A deleted VirtualCluster: none of its queues admits anything new, nothing is reclaimed
/// for it (another team's bonus job on its guarantee runs on), and its guaranteed job is not
/// preempted for the deletion. The same cluster with the VirtualCluster alive reclaims.
#[test]
fn a_terminating_virtual_cluster_admits_and_reclaims_nothing() {
    let decide = |terminating: bool| {
        let nodes = vec![node("n0", "A100", 8, None)];
        let mut gone = vc("gone", "A100", 4);
        gone.terminating = terminating;
        let jobs = vec![
            run(
                job("gone/running", "gone-q", 1, 2),
                &[("n0", &[0, 1])],
                false,
                0,
                None,
            ),
            run(
                job("other/own", "other-q", 1, 4),
                &[("n0", &[2, 3, 4, 5])],
                false,
                0,
                None,
            ),
            run(
                job("other/bonus", "other-q", 1, 2),
                &[("n0", &[6, 7])],
                true,
                0,
                None,
            ),
            job("gone/next", "gone-q", 1, 2),
        ];
        schedule(&snapshot(
            10,
            nodes,
            vec![gone, vc("other", "A100", 4)],
            vec![queue("gone-q", "gone"), queue("other-q", "other")],
            jobs,
        ))
    };
    let alive = decide(false);
    assert_eq!(victims(&alive), ["other/bonus"], "{alive:?}");
    let d = decide(true);
    assert!(
        matches!(
            d.waiting_reason("gone/next"),
            Some(WaitReason::VirtualClusterTerminating { virtual_cluster }) if virtual_cluster == "gone"
        ),
        "{d:?}"
    );
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admissions.is_empty(), "{d:?}");
}

/// Queue policies order admissions when only one job fits.
#[test]
fn queue_policies_pick_the_right_job() {
    let run_policy = |policy: QueuePolicy| {
        let nodes = vec![node("n0", "A100", 1, None)];
        let mut q = queue("q", "t");
        q.policy = policy;
        let mut a = job("t/old-low-long", "q", 1, 1);
        a.queued_at = 1;
        a.priority = 1;
        a.predicted_duration_seconds = Some(9000);
        let mut b = job("t/new-high-short", "q", 1, 1);
        b.queued_at = 2;
        b.priority = 5;
        b.predicted_duration_seconds = Some(60);
        let d = schedule(&snapshot(
            0,
            nodes,
            vec![vc("t", "A100", 1)],
            vec![q],
            vec![a, b],
        ));
        d.admissions[0].job.clone()
    };
    assert_eq!(run_policy(QueuePolicy::Fifo), "t/old-low-long");
    assert_eq!(run_policy(QueuePolicy::Priority), "t/new-high-short");
    assert_eq!(
        run_policy(QueuePolicy::ShortestPredictedFirst),
        "t/new-high-short"
    );
}

/// UserFair: the user holding fewer GPUs goes next, even if their job is newer.
#[test]
fn user_fair_serves_the_user_with_less() {
    let nodes = vec![node("n0", "A100", 2, None)];
    let mut q = queue("q", "t");
    q.policy = QueuePolicy::UserFair;
    let mut jobs = vec![run(
        job("t/heavy-running", "q", 1, 1),
        &[("n0", &[0])],
        false,
        0,
        None,
    )];
    let mut a = job("t/heavy-next", "q", 1, 1);
    a.queued_at = 1;
    let mut b = job("t/light", "q", 1, 1);
    b.user = "bob".into();
    b.queued_at = 2;
    jobs.push(a);
    jobs.push(b);
    let d = schedule(&snapshot(0, nodes, vec![vc("t", "A100", 2)], vec![q], jobs));
    assert_eq!(d.admissions.len(), 1);
    assert_eq!(d.admissions[0].job, "t/light");
}

/// With priority preemption on, a high-priority job preempts a lower one of its queue.
#[test]
fn priority_preemption_inside_a_queue() {
    let nodes = vec![node("n0", "A100", 4, None)];
    let mut q = queue("q", "t");
    q.priority_preemption = true;
    q.policy = QueuePolicy::Priority;
    let mut low = run(
        job("t/low", "q", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    low.priority = 1;
    let mut high = job("t/high", "q", 1, 4);
    high.priority = 10;
    let mut same = job("t/same", "q", 1, 4);
    same.priority = 1;
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vec![vc("t", "A100", 4)],
        vec![q.clone()],
        vec![low.clone(), high],
    ));
    assert_eq!(d.preemptions.len(), 1);
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(d.preemptions[0].victims, vec!["t/low".to_string()]);
    // equal priority never preempts
    let d = schedule(&snapshot(
        100,
        nodes,
        vec![vc("t", "A100", 4)],
        vec![q],
        vec![low, same],
    ));
    assert!(d.preemptions.is_empty());
}

/// Priority leads in a queue with priority preemption, whatever its policy: a FIFO (or
/// fair, or shortest-first) line that offered freed GPUs to an older lower-priority job
/// would see it preempted by the newer higher-priority one in the next cycle, requeued and
/// admitted again, over and over (an acceptance run saw 24 preemptions of one job in 2 s).
#[test]
fn a_queue_with_priority_preemption_offers_freed_gpus_to_the_higher_priority_job() {
    for policy in [
        QueuePolicy::Fifo,
        QueuePolicy::UserFair,
        QueuePolicy::ShortestPredictedFirst,
    ] {
        let nodes = vec![node("n0", "A100", 4, None)];
        let mut q = queue("q", "t");
        q.policy = policy;
        q.priority_preemption = true;
        let mut old = job("t/old", "q", 1, 4);
        old.queued_at = 10;
        old.priority = 0;
        old.predicted_duration_seconds = Some(60);
        let mut urgent = job("t/urgent", "q", 1, 4);
        urgent.queued_at = 20;
        urgent.priority = 5;
        urgent.predicted_duration_seconds = Some(6000);
        let d = schedule(&snapshot(
            100,
            nodes.clone(),
            vec![vc("t", "A100", 4)],
            vec![q.clone()],
            vec![old.clone(), urgent.clone()],
        ));
        assert_eq!(d.admissions.len(), 1, "{policy:?}");
        assert_eq!(d.admissions[0].job, "t/urgent", "{policy:?}");
        assert!(d.preemptions.is_empty(), "{policy:?}");

        // Without priority preemption the policy alone decides: the older (or shorter) job.
        q.priority_preemption = false;
        let d = schedule(&snapshot(
            100,
            nodes,
            vec![vc("t", "A100", 4)],
            vec![q],
            vec![old, urgent],
        ));
        assert_eq!(d.admissions[0].job, "t/old", "{policy:?}");
    }
}

/// A job stopped for a drain keeps its place while it returns: the lower-priority job behind
/// it does not take the GPUs it needs meanwhile (it used to, then was preempted by it a few
/// seconds later), and it is not admitted before it is back. Another queue is not held.
#[test]
fn a_returning_job_keeps_its_place_in_its_queue() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let mut q = queue("q", "t");
    q.policy = QueuePolicy::Priority;
    let other = queue("other", "t");
    let mut back = job("t/back", "q", 1, 8);
    back.priority = 10;
    back.returning = true;
    let mut low = job("t/low", "q", 1, 8);
    low.priority = 5;
    let elsewhere = job("t/elsewhere", "other", 1, 4);
    let d = schedule(&snapshot(
        100,
        nodes,
        vec![vc("t", "A100", 8)],
        vec![q, other],
        vec![back, low, elsewhere],
    ));
    assert!(d.admission("t/back").is_none(), "not before it is back");
    assert!(d.admission("t/low").is_none(), "behind it");
    assert!(
        d.admission("t/elsewhere").is_some(),
        "another queue goes on"
    );
    assert!(d.preemptions.is_empty());
    assert!(waits_with(&d, "t/back", "Returning"));
    assert!(waits_with(&d, "t/low", "BehindReturningJob"));
}

/// A team's job on its way back from a drain, within the team's guarantee, keeps its room
/// from another team's bonus job: lent in the gap, that job started and was reclaimed for it
/// seconds later (an acceptance run: an 8-GPU gang, checkpointed 9 s after it started).
/// Beyond its guarantee the returning job holds nothing: lending is what idle room is for.
#[test]
fn a_returning_job_within_its_guarantee_is_not_lent_its_room() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let tenants = |vision: u32| vec![vc("vision", "A100", vision), vc("nlp", "A100", 8)];
    let queues = || vec![queue("vq", "vision"), queue("nq", "nlp")];
    let jobs = || {
        let mut back = job("vision/back", "vq", 1, 8);
        back.returning = true;
        let nlp = run(
            job("nlp/own", "nq", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        );
        vec![back, nlp, job("nlp/borrow", "nq", 1, 8)]
    };
    let d = schedule(&snapshot(100, nodes.clone(), tenants(8), queues(), jobs()));
    assert!(
        d.admission("vision/back").is_none(),
        "not before it is back"
    );
    assert!(waits_with(&d, "vision/back", "Returning"));
    assert!(d.admission("nlp/borrow").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty());

    // no guarantee of its own to come back to: the room is lent
    let d = schedule(&snapshot(100, nodes, tenants(0), queues(), jobs()));
    assert!(waits_with(&d, "vision/back", "Returning"));
    assert!(d.admission("nlp/borrow").is_some_and(|a| a.bonus), "{d:?}");
}

/// Where its room is lent already, a returning job within its guarantee reclaims it while
/// it returns, so that the borrower's checkpoint overlaps the gap; it is still not admitted
/// before it is back.
#[test]
fn a_returning_job_reclaims_its_room_while_it_returns() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("vision", "A100", 12), vc("nlp", "A100", 4)];
    let queues = vec![queue("vq", "vision"), queue("nq", "nlp")];
    let mut back = job("vision/back", "vq", 2, 6);
    back.returning = true;
    let borrow = run(
        job("nlp/borrow", "nq", 1, 8),
        &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
        true,
        0,
        None,
    );
    let d = schedule(&snapshot(100, nodes, vcs, queues, vec![back, borrow]));
    assert!(
        d.admission("vision/back").is_none(),
        "not before it is back"
    );
    assert_eq!(victims(&d), strings(&["nlp/borrow"]));
    assert_eq!(reason_of(&d, "nlp/borrow"), Some(PreemptionReason::Reclaim));
    assert!(
        waits_with(&d, "vision/back", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// The cycle after a returning job reclaimed its room (e2e
/// `a_drained_job_keeps_its_room_from_other_teams_while_it_returns`): the borrower is still
/// checkpointing, not yet acknowledged, while the job waits out its drain's settle. Its
/// hold must not depend on the wait reason the cycle gives it: waiting `Returning` (which
/// names no victims), the reclaim looked unneeded and was withdrawn whenever the borrower
/// had not acknowledged by then, and the second borrower took the room the job came back
/// to (a loaded machine's timing). The job waits on its victim, and nothing is withdrawn.
#[test]
fn a_returning_job_keeps_waiting_on_the_borrower_it_reclaims() {
    let mut drained = node("n0", "A100", 8, None);
    drained.schedulable = false;
    drained.draining = true;
    let nodes = vec![
        drained,
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    let vcs = vec![vc("owner", "A100", 16), vc("borrower", "A100", 0)];
    let queues = vec![queue("oq", "owner"), queue("bq", "borrower")];
    for returning in [true, false] {
        let mut gang = job("owner/gang", "oq", 2, 8);
        gang.returning = returning;
        let early = asked(
            run(
                job("borrower/early", "bq", 1, 8),
                &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])],
                true,
                0,
                None,
            ),
            PreemptionReason::Reclaim,
            Some("owner/gang"),
            false,
        );
        let late = job("borrower/late", "bq", 1, 8);
        let d = schedule(&snapshot(
            100,
            nodes.clone(),
            vcs.clone(),
            queues.clone(),
            vec![gang, early, late],
        ));
        assert!(d.cancellations.is_empty(), "{d:?}");
        assert!(d.admission("owner/gang").is_none(), "not before it is back");
        assert!(d.admission("borrower/late").is_none(), "{d:?}");
        assert!(
            waits_with(&d, "owner/gang", "WaitingForPreemption"),
            "{d:?}"
        );
    }
}

/// A priority preemption that a limit needed is not withdrawn when its beneficiary, admitted
/// on the victim's credit against the limit, runs on other free GPUs: the victim goes on
/// leaving, or the team would stay above its limit for good (12 GPUs under a limit of 8 in an
/// acceptance run). Where the limit leaves room for both, the preemption is withdrawn as
/// before and the victim runs on.
#[test]
fn a_preemption_a_limit_needed_is_not_withdrawn() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut q = queue("q", "t");
    q.policy = QueuePolicy::Priority;
    q.priority_preemption = true;
    // the victim: the second of the two siblings by standing, or the first
    let jobs = |victim: usize| {
        let mut p1 = run(
            job("t/p-1", "q", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            false,
            0,
            None,
        );
        p1.priority = 10;
        let mut p2 = run(
            job("t/p-2", "q", 1, 4),
            &[("n0", &[4, 5, 6, 7])],
            false,
            0,
            None,
        );
        p2.priority = 10;
        let r = [&mut p1, &mut p2][victim]
            .running
            .as_mut()
            .expect("running");
        r.preempting = true;
        r.checkpoint_request = Some(CheckpointRequest {
            reason: PreemptionReason::Priority,
            beneficiary: Some("t/p-3".into()),
            withdrawable: true,
        });
        let mut p3 = run(
            job("t/p-3", "q", 1, 4),
            &[("n1", &[0, 1, 2, 3])],
            false,
            50,
            None,
        );
        p3.priority = 20;
        vec![p1, p2, p3]
    };
    let cases = [(8, false), (12, true), (16, true)];
    for (victim, (limit, withdrawn)) in [1, 0].into_iter().flat_map(|v| cases.map(|c| (v, c))) {
        let victim_id = ["t/p-1", "t/p-2"][victim];
        let mut v = vc("t", "A100", 8);
        v.limit_gpus = Some(limit);
        let d = schedule(&snapshot(
            100,
            nodes.clone(),
            vec![v],
            vec![q.clone()],
            jobs(victim),
        ));
        let cancelled: Vec<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
        if withdrawn {
            assert_eq!(cancelled, [victim_id], "limit {limit}");
        } else {
            assert!(cancelled.is_empty(), "limit {limit}: {cancelled:?}");
            // The victim leaves after all: its sibling keeps its standing (it was demoted
            // for as long as the victim checkpointed, and promoted when it left: Demoted,
            // then Promoted, in an acceptance run).
            assert!(d.demotions.is_empty(), "limit {limit}: {:?}", d.demotions);
        }
        assert!(d.admissions.is_empty(), "limit {limit}");
    }
}

/// A job leaving for a drain still counts against its team's limit: the job the limit holds
/// back does not start on idle GPUs the moment the drain begins, only to be preempted when
/// the drained job returns.
#[test]
fn a_drained_job_keeps_its_room_under_the_limit() {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    let mut q = queue("q", "t");
    q.policy = QueuePolicy::Priority;
    let world = |reason: PreemptionReason| {
        let mut drained = run(
            job("t/drained", "q", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        );
        drained.priority = 10;
        let r = drained.running.as_mut().expect("running");
        r.preempting = true;
        r.checkpoint_request = Some(CheckpointRequest {
            reason,
            beneficiary: reason.for_a_job().then(|| "t/other".to_string()),
            withdrawable: false,
        });
        let mut other = run(
            job("t/other", "q", 1, 8),
            &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        );
        other.priority = 10;
        let mut low = job("t/low", "q", 1, 8);
        low.priority = 5;
        vec![drained, other, low]
    };
    let mut v = vc("t", "A100", 16);
    v.limit_gpus = Some(16);
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vec![v.clone()],
        vec![q.clone()],
        world(PreemptionReason::Drain),
    ));
    assert!(d.admission("t/low").is_none(), "{:?}", d.admissions);
    assert!(waits_with(&d, "t/low", "OverLimit"));
    assert!(d.preemptions.is_empty(), "{:?}", d.preemptions);

    // The cycle that sees the drain begin asks the job to leave and, in the same breath,
    // keeps its room under the limit (an acceptance run: `low` was admitted in that cycle
    // and preempted for the drained job 17 s later).
    let mut draining = nodes.clone();
    draining[0].draining = true;
    let mut jobs = world(PreemptionReason::Drain);
    let r = jobs[0].running.as_mut().expect("running");
    r.preempting = false;
    r.checkpoint_request = None;
    let d = schedule(&snapshot(100, draining, vec![v], vec![q], jobs));
    assert_eq!(d.preemptions.len(), 1, "{:?}", d.preemptions);
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Drain);
    assert_eq!(d.preemptions[0].victims, ["t/drained"]);
    assert!(d.admission("t/low").is_none(), "{:?}", d.admissions);
    assert!(waits_with(&d, "t/low", "OverLimit"));
}

/// A victim that has not run its minimum runtime is spared while another set exists, and
/// when none does the reclaim waits for it, saying until when.
#[test]
fn minimum_runtime_protects_young_jobs() {
    let nodes = vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)];
    let vcs = vec![vc("a", "A100", 4), vc("c", "A100", 0)];
    let queues = vec![queue("qa", "a"), queue("qc", "c")];
    let young = |id: &str, n: &str| {
        let mut j = run(job(id, "qc", 1, 4), &[(n, &[0, 1, 2, 3])], true, 990, None);
        j.running.as_mut().unwrap().min_runtime_seconds = 600;
        j
    };
    // the young job loses less work (10 s) but is protected; the old one goes
    let jobs = vec![
        young("c/young", "n0"),
        run(
            job("c/old", "qc", 1, 4),
            &[("n1", &[0, 1, 2, 3])],
            true,
            0,
            Some(0),
        ),
        job("a/j", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(
        1000,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    assert_eq!(d.preemptions[0].victims, vec!["c/old".to_string()]);
    // both young: nobody is evicted yet
    let jobs = vec![
        young("c/y0", "n0"),
        young("c/y1", "n1"),
        job("a/j", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(1000, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty());
    assert!(
        matches!(
            d.waiting_reason("a/j"),
            Some(WaitReason::WaitingForMinRuntime { until: 1590, .. })
        ),
        "{d:?}"
    );
}

/// Bonus jobs of the VC itself are not reclaimed for it, and a VC at its guarantee cannot
/// reclaim: it only borrows idle GPUs.
#[test]
fn reclaim_only_below_guarantee_and_only_from_others() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 4), vc("c", "A100", 0)];
    let queues = vec![queue("qa", "a"), queue("qc", "c")];
    let jobs = vec![
        run(
            job("a/own", "qa", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            false,
            0,
            None,
        ),
        run(
            job("c/bonus", "qc", 1, 4),
            &[("n0", &[4, 5, 6, 7])],
            true,
            0,
            None,
        ),
        job("a/more", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(matches!(
        d.waiting_reason("a/more"),
        Some(WaitReason::QuotaExhausted { .. })
    ));
}

/// A bonus job that now fits its VC's guarantee is promoted and no longer a victim.
#[test]
fn bonus_jobs_within_guarantee_are_promoted() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 4), vc("c", "A100", 4)];
    let queues = vec![queue("qa", "a"), queue("qc", "c")];
    let jobs = vec![
        run(
            job("c/was-bonus", "qc", 1, 4),
            &[("n0", &[0, 1, 2, 3])],
            true,
            0,
            None,
        ),
        job("a/j", "qa", 1, 8),
    ];
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert_eq!(d.promotions, vec!["c/was-bonus".to_string()]);
    assert!(d.preemptions.is_empty());
}

/// A gang that must stay within one rack lands in one rack, and ranks are contiguous per node.
#[test]
fn rack_requirement_and_topology_ranks() {
    let nodes = vec![
        node("r0-a", "H100", 8, Some("r0")),
        node("r1-a", "H100", 8, Some("r1")),
        node("r1-b", "H100", 8, Some("r1")),
        node("r0-b", "H100", 8, Some("r0")),
    ];
    let mut jobs = vec![run(
        job("t/busy", "q", 1, 4),
        &[("r0-a", &[0, 1, 2, 3])],
        false,
        0,
        None,
    )];
    let mut gang = job("t/gang", "q", 16, 1);
    gang.topology.required = Some(TopologyLevel::Rack);
    jobs.push(gang);
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "H100", 32)],
        vec![queue("q", "t")],
        jobs,
    ));
    let a = d.admission("t/gang").expect("admitted");
    assert!(
        a.placement.iter().all(|p| p.node.starts_with("r1")),
        "{a:?}"
    );
    let mut by_rank = a.placement.clone();
    by_rank.sort_by_key(|p| p.rank);
    assert_eq!(
        by_rank.iter().map(|p| p.rank).collect::<Vec<_>>(),
        (0..16).collect::<Vec<_>>()
    );
    assert!(
        by_rank[..8].iter().all(|p| p.node == by_rank[0].node),
        "ranks 0..7 on one node"
    );
    assert!(by_rank[8..].iter().all(|p| p.node == by_rank[8].node));
    let gpus: Vec<u32> = by_rank[..8].iter().map(|p| p.gpus[0].0).collect();
    assert_eq!(
        gpus,
        (0..8).collect::<Vec<_>>(),
        "ranks follow GPU topology order"
    );
}

/// Rank 0, which MASTER_ADDR names, is the first task's first replica, as Kubeflow makes
/// the Master rank 0: a CPU-only launcher listed first, or a master that is not the largest
/// replica; and on its node the ranks still follow GPU topology order.
#[test]
fn rank_zero_is_the_first_tasks_first_replica() {
    let nodes = vec![node("n0", "H100", 8, None), node("n1", "H100", 8, None)];
    let with_first_task = |id: &str, first: Task| {
        let mut j = job(id, "q", 4, 2);
        j.tasks.insert(0, first);
        j
    };
    let launcher = Task {
        name: "launcher".into(),
        replicas: 1,
        cpu_milli: 1000,
        memory_bytes: GIB,
        gpus: GpuDemand::None,
        ..Default::default()
    };
    let master = Task {
        name: "master".into(),
        gpus: GpuDemand::Whole(1),
        ..launcher.clone()
    };
    for first in [launcher, master] {
        let name = first.name.clone();
        let d = schedule(&snapshot(
            0,
            nodes.clone(),
            vec![vc("t", "H100", 16)],
            vec![queue("q", "t")],
            vec![with_first_task("t/j", first)],
        ));
        let a = d.admission("t/j").expect("admitted");
        let mut by_rank = a.placement.clone();
        by_rank.sort_by_key(|p| p.rank);
        assert_eq!(
            (by_rank[0].task.as_str(), by_rank[0].index),
            (name.as_str(), 0),
            "{a:?}"
        );
        let workers: Vec<(u32, u32)> = by_rank
            .iter()
            .filter(|p| p.task == "worker" && p.node == by_rank[0].node)
            .map(|p| (p.index, p.gpus[0].0))
            .collect();
        let mut sorted = workers.clone();
        sorted.sort_by_key(|w| w.1);
        assert_eq!(workers, sorted, "ranks on a node follow its GPUs: {a:?}");
    }
    // One task: worker 0 is rank 0 and holds its node's first GPUs.
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "H100", 16)],
        vec![queue("q", "t")],
        vec![job("t/w", "q", 8, 1)],
    ));
    let a = d.admission("t/w").expect("admitted");
    let zero = a.placement.iter().find(|p| p.rank == 0).expect("rank 0");
    assert_eq!((zero.index, zero.gpus[0].0), (0, 0), "{a:?}");
}

/// A 64-GPU gang of 8 × 8 spans exactly 8 empty nodes.
#[test]
fn large_gang_takes_whole_nodes() {
    let nodes: Vec<Node> = (0..10)
        .map(|i| {
            node(
                &format!("n{i}"),
                "H100",
                8,
                Some(if i < 5 { "r0" } else { "r1" }),
            )
        })
        .collect();
    let jobs = vec![
        run(job("t/one", "q", 1, 1), &[("n0", &[0])], false, 0, None),
        job("t/gang", "q", 8, 8),
    ];
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "H100", 80)],
        vec![queue("q", "t")],
        jobs,
    ));
    let a = d.admission("t/gang").expect("admitted");
    let mut ns: Vec<&str> = a.placement.iter().map(|p| p.node.as_str()).collect();
    ns.sort();
    ns.dedup();
    assert_eq!(ns.len(), 8);
    assert!(!ns.contains(&"n0"));
}

/// Jobs that cannot be scheduled say so.
#[test]
fn invalid_and_never_fitting_jobs_say_why() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let mut typed = job("t/h100", "q", 1, 1);
    typed.gpu_types = vec![Flavor::new("H100")];
    let jobs = vec![
        job("t/lost", "nope", 1, 1),
        job("t/huge", "q", 1, 16),
        typed,
    ];
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        jobs,
    ));
    assert!(matches!(
        d.waiting_reason("t/lost"),
        Some(WaitReason::Invalid { .. })
    ));
    assert!(matches!(
        d.waiting_reason("t/huge"),
        Some(WaitReason::NeverFits { .. })
    ));
    assert!(matches!(
        d.waiting_reason("t/h100"),
        Some(WaitReason::NeverFits { .. })
    ));
    assert!(
        d.waiting_reason("t/lost")
            .unwrap()
            .to_string()
            .contains("queue nope does not exist")
    );
}

/// Cells: team A is guaranteed one whole node. Team B (GPUs only, no cells) may not break
/// the last clean node for a guaranteed job; it borrows it as bonus, and A reclaims it.
#[test]
fn node_cell_guarantee_stays_obtainable() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut a = vc("a", "A100", 8);
    a.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count: 1,
    }];
    let b = vc("b", "A100", 8);
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let jobs = vec![
        run(
            job("b/big", "qb", 1, 7),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6])],
            false,
            0,
            None,
        ),
        job("b/two", "qb", 1, 1 + 1),
    ];
    let d = schedule(&snapshot(
        0,
        nodes.clone(),
        vec![a.clone(), b.clone()],
        queues.clone(),
        jobs.clone(),
    ));
    let adm = d.admission("b/two").expect("borrowed");
    assert!(
        adm.bonus,
        "a guaranteed placement on n1 would break A's cell: {d:?}"
    );
    assert_eq!(adm.placement[0].node, "n1");

    // A then asks for its whole node: B's borrowed job on n1 is reclaimed
    let mut jobs2 = vec![
        jobs[0].clone(),
        run(job("b/two", "qb", 1, 2), &[("n1", &[0, 1])], true, 0, None),
    ];
    jobs2.push(job("a/node", "qa", 1, 8));
    let d = schedule(&snapshot(10, nodes, vec![a, b], queues, jobs2));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].victims, vec!["b/two".to_string()]);
}

/// Cordoned nodes and unhealthy GPUs get no new work; foreign pods' GPUs are respected.
#[test]
fn cordon_unhealthy_and_foreign_usage() {
    let mut cordoned = node("c", "A100", 8, None);
    cordoned.schedulable = false;
    let mut sick = node("s", "A100", 2, None);
    sick.unhealthy_gpus = vec![GpuIndex(0)];
    sick.foreign.gpus = 1;
    let jobs = vec![job("t/j", "q", 1, 1)];
    let d = schedule(&snapshot(
        0,
        vec![cordoned, sick],
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        jobs,
    ));
    assert!(d.admission("t/j").is_none(), "{d:?}");
    // It would fit the cordoned node's free GPUs: it waits for that node, not for room.
    let r = d.waiting_reason("t/j").expect("waits");
    assert_eq!(r.code(), "NodesUnavailable", "{r:?}");
    assert!(r.to_string().contains("(c)"), "{r}");
}

/// A job held by its node selector to one node is told of the GPUs free there, not of the
/// whole type's (an acceptance run: "22 GPUs are free, at most 8 on one node" for a job
/// that could use only a node with 6 free).
#[test]
fn no_fit_counts_the_nodes_the_job_may_use() {
    let mut n0 = node("n0", "A100", 8, None);
    n0.foreign.gpus = 2;
    let mut named = vec![n0, node("n1", "A100", 8, None)];
    for n in &mut named {
        let name = n.name.clone();
        n.labels.insert("name".into(), name);
    }
    let mut pinned = job("t/pinned", "q", 1, 7);
    pinned.tasks[0]
        .constraints
        .node_selector
        .insert("name".into(), "n0".into());
    let d = schedule(&snapshot(
        0,
        named,
        vec![vc("t", "A100", 16)],
        vec![queue("q", "t")],
        vec![pinned],
    ));
    let r = d.waiting_reason("t/pinned").expect("waits");
    assert!(
        matches!(
            r,
            WaitReason::NoFit {
                free_gpus: 6,
                largest_free_on_node: 6,
                on_allowed_nodes: true,
                ..
            }
        ),
        "{r:?}"
    );
    assert!(
        r.to_string()
            .contains("6 GPUs are free of the nodes its node selector, affinity and tolerations allow, at most 6 on one node"),
        "{r}"
    );
}

/// A cordon is maintenance: a job that fits only with a cordoned node waits for it
/// (`NodesUnavailable`, naming it) instead of being told it can never run; one larger than
/// every node together still never fits.
#[test]
fn a_job_that_needs_a_cordoned_node_waits_for_it() {
    let mut n1 = node("n1", "A100", 8, None);
    n1.schedulable = false;
    let nodes = vec![node("n0", "A100", 8, None), n1];
    let mut pinned = job("t/pinned", "q", 1, 8);
    pinned.tasks[0]
        .constraints
        .node_selector
        .insert("name".into(), "n1".into());
    let mut named = nodes;
    for n in &mut named {
        let name = n.name.clone();
        n.labels.insert("name".into(), name);
    }
    let jobs = vec![
        pinned,
        job("t/two-nodes", "q", 2, 8),
        job("t/three-nodes", "q", 3, 8),
    ];
    let d = schedule(&snapshot(
        0,
        named.clone(),
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        jobs,
    ));
    for id in ["t/pinned", "t/two-nodes"] {
        let r = d.waiting_reason(id).expect("waits");
        assert_eq!(r.code(), "NodesUnavailable", "{id}: {r:?}");
        assert!(r.to_string().contains("cordoned or not ready (n1)"), "{r}");
    }
    assert!(waits_with(&d, "t/three-nodes", "NeverFits"), "{d:?}");
    // every node cordoned: waiting for them, not "no node has GPUs of type " with no type
    for n in &mut named {
        n.schedulable = false;
    }
    let d = schedule(&snapshot(
        0,
        named,
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        vec![job("t/one", "q", 1, 8)],
    ));
    let r = d.waiting_reason("t/one").expect("waits");
    assert_eq!(r.code(), "NodesUnavailable", "{r:?}");
    assert!(r.to_string().contains("the 2 node(s)"), "{r}");
}

/// An 8-GPU job within its guarantee whose one fitting node is cordoned and empty, the
/// others full, waits for that node (`NodesUnavailable`, naming it): an acceptance run read
/// `NoFit`, "0 GPUs are free, at most 0 on one node", and looked for jobs to finish. A gang
/// that the free GPUs of schedulable nodes and the cordoned node hold together names it too;
/// with the cordoned node full as well, or room enough on schedulable nodes, it is `NoFit`.
#[test]
fn a_job_that_fits_only_a_cordoned_nodes_free_room_waits_for_that_node() {
    let mut cordoned = node("n2", "A100", 8, None);
    cordoned.schedulable = false;
    let busy = |id: &str, n: &str| {
        run(
            job(id, "q", 1, 8),
            &[(n, &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        )
    };
    let half = run(
        job("t/half", "q", 1, 4),
        &[("n1", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    let world = |cordoned: &Node, extra: Vec<Job>| {
        let mut jobs = vec![busy("t/full", "n0"), half.clone()];
        jobs.extend(extra);
        snapshot(
            0,
            vec![
                node("n0", "A100", 8, None),
                node("n1", "A100", 8, None),
                cordoned.clone(),
            ],
            vec![vc("t", "A100", 32)],
            vec![queue("q", "t")],
            jobs,
        )
    };
    let d = schedule(&world(
        &cordoned,
        vec![job("t/eight", "q", 1, 8), job("t/gang", "q", 3, 4)],
    ));
    for id in ["t/eight", "t/gang"] {
        let r = d.waiting_reason(id).expect("waits");
        assert_eq!(r.code(), "NodesUnavailable", "{id}: {r:?}");
        assert!(r.to_string().contains("cordoned or not ready (n2)"), "{r}");
    }
    // n1's 4 free GPUs hold the 4-GPU job: it starts, nobody waits for n2
    let d = schedule(&world(&cordoned, vec![job("t/four", "q", 1, 4)]));
    assert!(d.admission("t/four").is_some(), "{d:?}");
    // the cordoned node full too: the job waits for running jobs, as NoFit says
    let mut full = cordoned.clone();
    full.foreign.gpus = 8;
    let d = schedule(&world(&full, vec![job("t/eight", "q", 1, 8)]));
    let r = d.waiting_reason("t/eight").expect("waits");
    assert_eq!(r.code(), "NoFit", "{r:?}");
}

/// A CPU-only job that lists GPU types (say, a data-prep step that must stay off the H100
/// pool) runs on a node without GPUs or of a listed type, never on a type it left out.
#[test]
fn a_job_without_gpus_keeps_off_the_gpu_types_it_did_not_list() {
    // The A100 type comes first in name order, so a placement that ignored the list would
    // take it.
    let a100 = node("a", "A100", 8, None);
    let h100 = node("h", "H100", 8, None);
    let mut prep = job("t/prep", "q", 1, 0);
    prep.gpu_types = vec![Flavor::new("H100")];
    let d = schedule(&snapshot(
        0,
        vec![a100.clone(), h100],
        vec![vc("t", "H100", 8)],
        vec![queue("q", "t")],
        vec![prep.clone()],
    ));
    let admission = d.admission("t/prep").expect("admitted");
    assert!(
        admission.placement.iter().all(|r| r.node == "h"),
        "{admission:?}"
    );
    // Only the excluded type exists: the job waits, saying why.
    let d = schedule(&snapshot(
        0,
        vec![a100],
        vec![vc("t", "H100", 8)],
        vec![queue("q", "t")],
        vec![prep],
    ));
    assert!(d.admission("t/prep").is_none(), "{d:?}");
    assert!(matches!(
        d.waiting_reason("t/prep"),
        Some(WaitReason::NeverFits { .. })
    ));
}

/// Every reason reads as a sentence.
#[test]
fn reasons_are_sentences() {
    let r = WaitReason::OverLimit {
        virtual_cluster: "a".into(),
        limit_gpus: 8,
        in_use_gpus: Gpus(8000),
        needed_gpus: Gpus(1000),
    };
    assert!(r.to_string().ends_with('.'));
    assert_eq!(r.code(), "OverLimit");
}

/// A reason that blocks on a number does the arithmetic for the user: what is left, what
/// the job needs, and how much must be freed.
#[test]
fn reasons_do_the_arithmetic() {
    let quota = WaitReason::QuotaExhausted {
        virtual_cluster: "vision".into(),
        guaranteed_gpus: 16,
        in_use_gpus: Gpus(4000),
        needed_gpus: Gpus(16000),
        share_kept_by: None,
        required: None,
    }
    .to_string();
    assert!(
        quota.contains("12 of its 16 guaranteed GPUs left")
            && quota.contains("needs 16, 4 more than are left"),
        "{quota}"
    );
    let limit = WaitReason::OverLimit {
        virtual_cluster: "vision".into(),
        limit_gpus: 24,
        in_use_gpus: Gpus(20000),
        needed_gpus: Gpus(8000),
    }
    .to_string();
    assert!(
        limit.contains("so 4 are left; this job needs 8") && limit.contains("free 4"),
        "{limit}"
    );
    let user = WaitReason::UserLimit {
        user: "alice".into(),
        queue: "q".into(),
        limit_gpus: 8,
        in_use_gpus: Gpus(6000),
        needed_gpus: Gpus(4000),
    }
    .to_string();
    assert!(
        user.contains("so 2 are left; this job needs 4") && user.contains("free 2"),
        "{user}"
    );
}

/// A whole-node job placed while a rack-sized gang waits must not split the last whole rack:
/// among equally good nodes, take one in the rack with the fewest free GPUs.
#[test]
fn whole_node_job_keeps_a_whole_rack_free_for_a_rack_sized_gang() {
    let mut nodes = Vec::new();
    for i in 0..16 {
        let rack = if i < 8 { "rack-0" } else { "rack-1" };
        nodes.push(node(&format!("n-{i}"), "H100", 8, Some(rack)));
    }
    let jobs = vec![
        run(job("t/small", "q", 1, 1), &[("n-0", &[0])], false, 0, None),
        job("t/node", "q", 1, 8),
        job("t/pair", "q", 1, 2),
        job("t/rack", "q", 8, 8),
    ];
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "H100", 128)],
        vec![queue("q", "t")],
        jobs,
    ));
    let rack = d.admission("t/rack").expect("the 64-GPU gang is admitted");
    let racks: std::collections::BTreeSet<bool> = rack
        .placement
        .iter()
        .map(|p| p.node.trim_start_matches("n-").parse::<u32>().unwrap_or(0) < 8)
        .collect();
    assert_eq!(racks.len(), 1, "the gang spans racks: {:?}", rack.placement);
    let node = d.admission("t/node").expect("admitted");
    assert_eq!(node.placement.len(), 1);
}

/// The same across cycles: the whole-node job alone first, then the rack-sized gang.
#[test]
fn whole_node_job_alone_takes_a_node_in_the_fuller_rack() {
    let mut nodes = Vec::new();
    // Store order is arbitrary; names sort differently from rack order.
    for i in [9, 3, 15, 0, 12, 5, 8, 1, 14, 7, 10, 2, 13, 4, 11, 6] {
        let rack = if i < 8 { "rack-0" } else { "rack-1" };
        nodes.push(node(&format!("n-{i}"), "H100", 8, Some(rack)));
    }
    let jobs = vec![
        run(job("t/small", "q", 1, 1), &[("n-0", &[0])], false, 0, None),
        job("t/node", "q", 1, 8),
    ];
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "H100", 128)],
        vec![queue("q", "t")],
        jobs,
    ));
    let node = d.admission("t/node").expect("admitted");
    let idx: u32 = node.placement[0]
        .node
        .trim_start_matches("n-")
        .parse()
        .unwrap_or(99);
    assert!(idx < 8, "took {} in the empty rack", node.placement[0].node);
}

/// Whole-domain reclaim: victims come from the one node whose freeing loses the least
/// work, never two half-freed nodes that still cannot hold an 8-GPU job.
#[test]
fn reclaim_frees_one_whole_node_not_scattered_gpus() {
    let nodes = vec![node("a", "H100", 8, None), node("b", "H100", 8, None)];
    let mut jobs = Vec::new();
    for i in 0..4u32 {
        // On node a: checkpointed recently (little lost work); on b: never checkpointed.
        jobs.push(run(
            job(&format!("c/a{i}"), "qc", 1, 1),
            &[("a", &[i])],
            true,
            0,
            Some(990),
        ));
        jobs.push(run(
            job(&format!("c/b{i}"), "qc", 1, 1),
            &[("b", &[i])],
            true,
            0,
            None,
        ));
    }
    let mut big = job("o/big", "qo", 1, 8);
    big.topology.required = Some(TopologyLevel::Node);
    big.queued_at = 999;
    jobs.push(big);
    let d = schedule(&snapshot(
        1000,
        nodes,
        vec![vc("o", "H100", 8), vc("c", "H100", 0)],
        vec![queue("qo", "o"), queue("qc", "c")],
        jobs,
    ));
    let mut victims: Vec<&str> = d.victims().collect();
    victims.sort();
    assert_eq!(victims, vec!["c/a0", "c/a1", "c/a2", "c/a3"], "{d:?}");
    assert!(
        d.admission("o/big").is_none(),
        "admitted before the victims left"
    );
}

/// The ablation knob: with whole-domain selection team A's reclaim takes the node whose
/// victims lose the least work (five small victims, 64 GPU-s); the flavor-wide scattered
/// selection takes the cheapest victims wherever they run until the gang fits, which here
/// completes the other node first (two victims, 104 GPU-s). Both plans let the gang fit;
/// a count-only selection evicts jobs on both nodes and the gang still does not fit.
#[test]
fn whole_domain_reclaim_loses_less_than_scattered_selection() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("team-a", "A100", 16), vc("team-c", "A100", 0)];
    let queues = vec![queue("qa", "team-a"), queue("qc", "team-c")];
    let now = 10_000;
    let mut jobs: Vec<Job> = (0..4u32)
        .map(|g| {
            run(
                job(&format!("c/small-{g}"), "qc", 1, 1),
                &[("n0", &[g])],
                true,
                0,
                Some(now - 1),
            )
        })
        .collect();
    // lost work = GPUs × seconds since the checkpoint
    for (id, n, g, ago) in [
        ("c/big-n0", "n0", [4, 5, 6, 7], 15),
        ("c/x-n1", "n1", [0, 1, 2, 3], 12),
        ("c/y-n1", "n1", [4, 5, 6, 7], 14),
    ] {
        jobs.push(run(
            job(id, "qc", 1, 4),
            &[(n, &g)],
            true,
            0,
            Some(now - ago),
        ));
    }
    jobs.push(job("a/train", "qa", 1, 8));
    let snap = snapshot(now, nodes, vcs, queues, jobs);

    let d = schedule(&snap);
    assert_eq!(d.preemptions.len(), 1);
    let p = &d.preemptions[0];
    assert_eq!(p.beneficiary, "a/train");
    assert_eq!(p.lost_gpu_seconds, 64);
    let mut v: Vec<&str> = d.victims().collect();
    v.sort();
    assert_eq!(
        v,
        [
            "c/big-n0",
            "c/small-0",
            "c/small-1",
            "c/small-2",
            "c/small-3"
        ]
    );

    let scattered = Options {
        victims: VictimSelection::Scattered,
        ..Options::default()
    };
    let d = schedule_with(&snap, &scattered);
    assert_eq!(d.preemptions.len(), 1);
    assert_eq!(d.preemptions[0].lost_gpu_seconds, 104);
    let v: Vec<&str> = d.victims().collect();
    assert_eq!(v, ["c/x-n1", "c/y-n1"]);

    // count-only frees eight GPUs in number, four per node: five victims and the gang
    // still does not fit, so it waits and will ask for more
    let count = Options {
        victims: VictimSelection::CountOnly,
        ..Options::default()
    };
    let d = schedule_with(&snap, &count);
    assert_eq!(d.preemptions.len(), 1);
    assert_eq!(d.preemptions[0].lost_gpu_seconds, 52);
    let v: Vec<&str> = d.victims().collect();
    assert_eq!(
        v,
        ["c/small-0", "c/small-1", "c/small-2", "c/small-3", "c/x-n1"]
    );
    assert!(d.admission("a/train").is_none());
}

/// Guarantees promised beyond healthy capacity: vc1's whole-node H100 cell holds the only
/// schedulable H100 node, so vc0's guaranteed GPU cannot be placed within its guarantee. A
/// reclaim that needs no victims and waits on no leaving job would wait forever (found by
/// `beneficiary_fits_once_victims_are_gone`); the job runs as bonus instead.
#[test]
fn a_reclaim_with_nothing_to_wait_for_is_no_plan() {
    let mut n2 = node("n2", "A100", 8, None);
    n2.schedulable = false;
    let mut n3 = node("n3", "H100", 8, None);
    n3.schedulable = false;
    let mut vc1 = vc("vc1", "H100", 8);
    vc1.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count: 1,
    }];
    let snap = snapshot(
        2000,
        vec![
            node("n0", "H100", 8, None),
            node("n1", "A100", 1, None),
            n2,
            n3,
        ],
        vec![vc("vc0", "H100", 1), vc1],
        vec![queue("q0", "vc0"), queue("q1", "vc1")],
        vec![job("j", "q0", 1, 1)],
    );
    let d = schedule(&snap);
    assert!(d.preemptions.is_empty(), "{d:?}");
    let a = d
        .admission("j")
        .unwrap_or_else(|| panic!("not admitted: {d:?}"));
    assert!(a.bonus, "{a:?}");
}

fn gpu_taint() -> constraints::Taint {
    constraints::Taint {
        key: "nvidia.com/gpu".into(),
        value: "present".into(),
        effect: TaintEffect::NoSchedule,
    }
}

/// A managed GPU pool taints its nodes `nvidia.com/gpu:NoSchedule`: a job whose template
/// does not tolerate it never goes there and says which taint keeps it out; a job that
/// tolerates it runs there; an untainted node is used by both.
#[test]
fn tainted_gpu_nodes_take_only_pods_that_tolerate_the_taint() {
    let mut tainted = node("pool-a", "A100", 8, None);
    tainted.taints.push(gpu_taint());
    let mut tolerant = job("t/tolerant", "q", 1, 8);
    tolerant.tasks[0].constraints.tolerations.push(Toleration {
        key: "nvidia.com/gpu".into(),
        exists: true,
        ..Default::default()
    });
    let d = schedule(&snapshot(
        0,
        vec![tainted.clone()],
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        vec![job("t/plain", "q", 1, 8), tolerant.clone()],
    ));
    let reason = d
        .waiting_reason("t/plain")
        .expect("plain waits")
        .to_string();
    assert!(
        matches!(
            d.waiting_reason("t/plain"),
            Some(WaitReason::NeverFits { .. })
        ),
        "{reason}"
    );
    assert!(
        reason.contains("1 node has the taint nvidia.com/gpu=present:NoSchedule"),
        "{reason}"
    );
    assert_eq!(nodes_of(&d, "t/tolerant"), ["pool-a"]);

    // With an untainted node too, the plain job goes there, the tolerant one anywhere.
    let d = schedule(&snapshot(
        0,
        vec![tainted, node("open", "A100", 8, None)],
        vec![vc("t", "A100", 16)],
        vec![queue("q", "t")],
        vec![job("t/plain", "q", 1, 8), tolerant],
    ));
    assert_eq!(nodes_of(&d, "t/plain"), ["open"]);
    assert_eq!(nodes_of(&d, "t/tolerant"), ["pool-a"]);
}

/// A `nodeSelector` that matches one rack keeps a whole gang in that rack, even when
/// another rack is emptier; a selector no node matches waits with `NeverFits` naming it.
#[test]
fn a_node_selector_keeps_the_gang_on_the_nodes_it_selects() {
    let mut nodes = Vec::new();
    for (rack, n) in [("r1", 4), ("r2", 2)] {
        for i in 0..n {
            let mut x = node(&format!("{rack}-n{i}"), "A100", 8, Some(rack));
            x.labels.insert("kubetrain.io/rack".into(), rack.into());
            nodes.push(x);
        }
    }
    let mut j = job("t/r2", "q", 2, 8);
    j.tasks[0]
        .constraints
        .node_selector
        .insert("kubetrain.io/rack".into(), "r2".into());
    let mut nowhere = job("t/r9", "q", 1, 1);
    nowhere.tasks[0]
        .constraints
        .node_selector
        .insert("kubetrain.io/rack".into(), "r9".into());
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "A100", 48)],
        vec![queue("q", "t")],
        vec![j, nowhere],
    ));
    assert_eq!(nodes_of(&d, "t/r2"), ["r2-n0", "r2-n1"]);
    let reason = d.waiting_reason("t/r9").expect("r9 waits").to_string();
    assert!(
        reason.contains("6 nodes do not match nodeSelector kubetrain.io/rack=r9"),
        "{reason}"
    );
}

/// A required node affinity no node matches waits with `NeverFits` naming what the nodes
/// lack (as a selector's message names `key=value`), and says truthfully that the job is
/// placed once a node accepts it: it can run on this cluster, not on the cluster as it is.
#[test]
fn a_node_affinity_no_node_matches_is_named_in_the_wait() {
    let nodes = (0..3)
        .map(|i| {
            let mut n = node(&format!("n{i}"), "A100", 8, None);
            n.labels.insert("zone".into(), "a".into());
            n
        })
        .collect();
    let mut j = job("t/b", "q", 1, 8);
    j.tasks[0]
        .constraints
        .affinities
        .push(constraints::Affinity {
            source: "required node affinity".into(),
            terms: vec![constraints::Term {
                expressions: vec![
                    constraints::Requirement {
                        key: "zone".into(),
                        operator: constraints::SelectorOperator::In,
                        values: vec!["b".into(), "c".into()],
                    },
                    constraints::Requirement {
                        key: "zone".into(),
                        operator: constraints::SelectorOperator::Exists,
                        values: vec![],
                    },
                ],
                fields: vec![],
            }],
        });
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        vec![j],
    ));
    let r = d.waiting_reason("t/b").expect("waits");
    assert_eq!(r.code(), "NeverFits", "{r:?}");
    assert_eq!(
        r.to_string(),
        "The job cannot run on the cluster as it is: no node of the acceptable GPU types \
         takes the pods of task worker: 3 nodes do not match the required node affinity \
         (zone In [b, c]); change the task's nodeSelector, node affinity or tolerations, or \
         the nodes: the job is placed once a node accepts its pods."
    );
}

/// Tasks of one job may have different rules: the parameter server must be on the node
/// labelled for it, the workers on the nodes labelled for them; each replica lands on a
/// node its own task accepts (a job still runs on one GPU type).
#[test]
fn each_task_keeps_its_own_rules() {
    let mut ps_node = node("gpu-ps", "A100", 8, None);
    ps_node.labels.insert("role".into(), "ps".into());
    let mut worker_node = node("gpu-w", "A100", 8, None);
    worker_node.labels.insert("role".into(), "worker".into());
    let mut j = job("t/mixed", "q", 1, 8);
    j.tasks[0]
        .constraints
        .node_selector
        .insert("role".into(), "worker".into());
    let mut ps = j.tasks[0].clone();
    ps.name = "ps".into();
    ps.gpus = GpuDemand::None;
    ps.constraints
        .node_selector
        .insert("role".into(), "ps".into());
    j.tasks.push(ps);
    let d = schedule(&snapshot(
        0,
        vec![ps_node, worker_node],
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        vec![j],
    ));
    let a = d.admission("t/mixed").expect("admitted");
    for p in &a.placement {
        let want = if p.task == "ps" { "gpu-ps" } else { "gpu-w" };
        assert_eq!(p.node, want, "{:?}", a.placement);
    }
}

/// `kubectl drain` cordons a node: the gang with a replica there is asked to checkpoint and
/// leave (reason `Drain`, even before its minimum runtime), a job only on other nodes stays,
/// and nothing new goes to the drained node.
#[test]
fn a_draining_node_sends_its_jobs_back_to_the_queue_with_a_checkpoint() {
    let mut n0 = node("n0", "A100", 8, None);
    n0.schedulable = false;
    n0.draining = true;
    let nodes = vec![n0, node("n1", "A100", 8, None), node("n2", "A100", 8, None)];
    let mut gang = run(
        job("t/gang", "q", 2, 4),
        &[("n0", &[0, 1, 2, 3]), ("n1", &[0, 1, 2, 3])],
        false,
        0,
        Some(500),
    );
    gang.running.as_mut().unwrap().min_runtime_seconds = 10_000;
    let other = run(
        job("t/other", "q", 1, 4),
        &[("n1", &[4, 5, 6, 7])],
        false,
        0,
        None,
    );
    let d = schedule(&snapshot(
        1000,
        nodes,
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        vec![gang, other, job("t/new", "q", 1, 8)],
    ));
    assert_eq!(d.preemptions.len(), 1, "{:?}", d.preemptions);
    let p = &d.preemptions[0];
    assert_eq!(p.reason, PreemptionReason::Drain);
    assert_eq!(p.victims, ["t/gang"]);
    assert_eq!(p.beneficiary, super::Beneficiary::Node("n0".into()));
    assert_eq!(p.beneficiary.to_string(), "node n0");
    assert_eq!(p.lost_gpu_seconds, 8 * 500);
    assert_eq!(nodes_of(&d, "t/new"), ["n2"]);
}

/// A job of higher priority than the team's guaranteed jobs, admitted on idle GPUs beyond
/// the guarantee, takes its standing at once: admitted within the guarantee, and the
/// team's least important job demoted in the same cycle, as the next cycle would settle it
/// (an acceptance run saw `Promoted` on a job a second after its admission).
#[test]
fn an_admission_takes_its_standing_in_its_own_cycle() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let low = |id: &str, gpus: &[u32]| run(job(id, "q", 1, 4), &[("n0", gpus)], false, 0, None);
    let mut high = job("t/high", "q", 1, 4);
    high.priority = 10;
    let world = |jobs: Vec<Job>| {
        schedule(&snapshot(
            100,
            nodes.clone(),
            vec![vc("t", "A100", 8), vc("idle", "A100", 8)],
            vec![queue("q", "t"), queue("qi", "idle")],
            jobs,
        ))
    };
    let d = world(vec![
        low("t/low-1", &[0, 1, 2, 3]),
        low("t/low-2", &[4, 5, 6, 7]),
        high,
    ]);
    let a = d.admission("t/high").expect("admitted");
    assert!(!a.bonus, "{d:?}");
    assert_eq!(d.demotions.len(), 1, "{d:?}");
    let demoted = d.demotions[0].clone();
    assert!(d.promotions.is_empty(), "{d:?}");
    // the next cycle, with the admission running and the demotion marked, changes nothing
    let mut next = vec![low("t/low-1", &[0, 1, 2, 3]), low("t/low-2", &[4, 5, 6, 7])];
    for j in &mut next {
        if j.id == demoted {
            j.running.as_mut().expect("running").bonus = true;
        }
    }
    let mut high = run(
        job("t/high", "q", 1, 4),
        &[("n1", &[0, 1, 2, 3])],
        false,
        100,
        None,
    );
    high.priority = 10;
    next.push(high);
    let d = world(next);
    assert!(d.promotions.is_empty() && d.demotions.is_empty(), "{d:?}");
}

/// A rack cell and another team's node cell cannot both come out of one clean rack: the
/// rack set aside for the rack cell holds no node for the node cell. Counted per level, the
/// last clean rack also counted as two clean nodes, so a promotion that dirtied the last
/// clean node outside it passed, and both cells were lost for good, nothing reclaimable and
/// `GuaranteeAtRisk` silent (an acceptance run).
#[test]
fn a_rack_cell_and_a_node_cell_do_not_share_the_last_clean_rack() {
    let nodes = vec![
        node("n0", "A100", 8, Some("r0")),
        node("n1", "A100", 8, Some("r0")),
        node("n2", "A100", 8, Some("r1")),
        node("n3", "A100", 8, Some("r1")),
    ];
    let cells = |name: &str, gpus: u32, level: TopologyLevel| {
        let mut v = vc(name, "A100", gpus);
        v.guarantee[0].cells = vec![CellGuarantee { level, count: 1 }];
        v
    };
    let vcs = vec![
        cells("alpha", 16, TopologyLevel::Rack),
        cells("beta", 8, TopologyLevel::Node),
        vc("gamma", "A100", 8),
    ];
    let queues = vec![
        queue("aq", "alpha"),
        queue("bq", "beta"),
        queue("gq", "gamma"),
    ];
    let gamma = |id: &str, node: &str, gpus: &[u32], bonus: bool| {
        run(
            job(id, "gq", 1, gpus.len() as u32),
            &[(node, gpus)],
            bonus,
            0,
            None,
        )
    };
    let rack1_borrowed = || {
        vec![
            gamma("gamma/b2", "n2", &[0, 1, 2, 3, 4, 5, 6, 7], true),
            gamma("gamma/b3", "n3", &[0, 1, 2, 3, 4, 5, 6, 7], true),
        ]
    };

    // gamma's guaranteed job on n0, a bonus one on n1 within its guarantee: promoted, it
    // would dirty n1, the one clean node outside the rack alpha's cell needs
    let mut jobs = vec![
        gamma("gamma/k", "n0", &[0, 1, 2, 3], false),
        gamma("gamma/b1", "n1", &[0, 1, 2, 3], true),
    ];
    jobs.extend(rack1_borrowed());
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    assert!(d.promotions.is_empty(), "{d:?}");
    assert!(at_risk(&d, "alpha", "A100").is_none(), "{d:?}");
    assert!(at_risk(&d, "beta", "A100").is_none(), "{d:?}");

    // Both nodes of r0 dirty already (as that promotion left them): one of the two cells is
    // lost, and the status says so; the rack job takes r1 back by reclaim, not NoFit.
    let mut jobs = vec![
        gamma("gamma/k", "n0", &[0, 1, 2, 3], false),
        gamma("gamma/b1", "n1", &[0, 1, 2, 3], false),
    ];
    jobs.extend(rack1_borrowed());
    let mut big = job("alpha/big", "aq", 2, 8);
    big.topology.required = Some(TopologyLevel::Rack);
    jobs.push(big);
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert_eq!(victims(&d), strings(&["gamma/b2", "gamma/b3"]), "{d:?}");
    assert!(waits_with(&d, "alpha/big", "WaitingForPreemption"), "{d:?}");
    assert!(
        at_risk(&d, "alpha", "A100").is_some() || at_risk(&d, "beta", "A100").is_some(),
        "{d:?}"
    );
}

/// GPUs that pods kubetrain does not schedule hold are not obtainable by reclaim: a team
/// whose count guarantee needs them is at risk, and says why (an acceptance run: 6 of 8
/// guaranteed GPUs held, the last job waiting, and the status "Obtainable").
#[test]
fn gpus_held_by_pods_kubetrain_does_not_schedule_put_a_guarantee_at_risk() {
    let mut n1 = node("n1", "A100", 8, None);
    n1.foreign.gpus = 1;
    let nodes = vec![node("n0", "A100", 8, None), n1];
    let held = |id: &str, q: &str, node: &str, gpus: &[u32]| {
        run(
            job(id, q, 1, gpus.len() as u32),
            &[(node, gpus)],
            false,
            0,
            None,
        )
    };
    let d = schedule(&snapshot(
        100,
        nodes,
        vec![vc("a", "A100", 8), vc("b", "A100", 8)],
        vec![queue("qa", "a"), queue("qb", "b")],
        vec![
            held("a/all", "qa", "n0", &[0, 1, 2, 3, 4, 5, 6, 7]),
            held("b/six", "qb", "n1", &[0, 1, 2, 3, 4, 5]),
            job("b/two", "qb", 1, 2),
        ],
    ));
    assert!(at_risk(&d, "a", "A100").is_none(), "{d:?}");
    let risk = at_risk(&d, "b", "A100").expect("b at risk");
    assert_eq!((risk.obtainable_gpus, risk.foreign_gpus), (7, 1));
    assert!(
        risk.to_string()
            .contains("pods kubetrain does not schedule hold 1 of them"),
        "{risk}"
    );
}

/// A reclaim lasts only as long as its beneficiary waits on it: its team's guarantee lowered
/// to nothing under it, the victims that have not acknowledged run on (an acceptance run saw
/// them checkpoint and leave anyway, and the beneficiary then borrow their room, or them
/// admitted back to it).
#[test]
fn a_reclaim_whose_beneficiary_no_longer_waits_on_it_is_withdrawn() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let world = |beta: u32| {
        let mut jobs: Vec<Job> = (0..4)
            .map(|i| {
                let mut j = run(
                    job(&format!("gamma/g{i}"), "gq", 1, 2),
                    &[("n0", &[2 * i, 2 * i + 1])],
                    true,
                    0,
                    None,
                );
                let r = j.running.as_mut().expect("running");
                r.preempting = true;
                r.checkpoint_request = Some(CheckpointRequest {
                    reason: PreemptionReason::Reclaim,
                    beneficiary: Some("beta/b".into()),
                    withdrawable: true,
                });
                j
            })
            .collect();
        jobs.push(job("beta/b", "bq", 1, 8));
        schedule(&snapshot(
            100,
            nodes.clone(),
            vec![vc("beta", "A100", beta), vc("gamma", "A100", 0)],
            vec![queue("bq", "beta"), queue("gq", "gamma")],
            jobs,
        ))
    };
    // still within its guarantee: it waits for them
    let d = world(8);
    assert!(d.cancellations.is_empty(), "{d:?}");
    assert!(waits_with(&d, "beta/b", "WaitingForPreemption"), "{d:?}");
    // its guarantee gone: they run on, and it does not borrow the room they held
    let d = world(0);
    let mut withdrawn: Vec<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
    withdrawn.sort();
    assert_eq!(
        withdrawn,
        ["gamma/g0", "gamma/g1", "gamma/g2", "gamma/g3"],
        "{d:?}"
    );
    assert!(d.admission("beta/b").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// A job larger than its team's limit can never start: like one larger than the cluster,
/// it takes no place in its queue, and the job behind it is next.
#[test]
fn a_job_larger_than_its_limit_takes_no_place_in_queue() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut v = vc("t", "A100", 8);
    v.limit_gpus = Some(8);
    let mut jobs = vec![
        run(
            job("t/runs", "q", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        ),
        job("t/huge", "q", 2, 8),
        job("t/next", "q", 1, 8),
    ];
    for (i, j) in jobs.iter_mut().enumerate() {
        j.queued_at = i as i64;
    }
    let d = schedule(&snapshot(100, nodes, vec![v], vec![queue("q", "t")], jobs));
    assert!(waits_with(&d, "t/huge", "ExceedsLimit"), "{d:?}");
    assert_eq!(d.position("t/huge"), None, "{d:?}");
    assert_eq!(d.position("t/next"), Some(1), "{d:?}");
}

/// A full cluster: each queue's waiting jobs are numbered in the order the cycle offers
/// them (the queue's policy), 1 next; a job the cycle admits takes no number.
#[test]
fn waiting_jobs_get_their_place_in_queue() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("team-a", "A100", 8)];
    let mut prio = queue("qp", "team-a");
    prio.policy = QueuePolicy::Priority;
    let queues = vec![queue("qa", "team-a"), prio];
    let mut jobs = vec![
        job("a/first", "qa", 1, 8),
        job("a/second", "qa", 1, 8),
        job("a/third", "qa", 1, 8),
        job("a/low", "qp", 1, 8),
        job("a/high", "qp", 1, 8),
    ];
    for (i, j) in jobs.iter_mut().enumerate() {
        j.queued_at = i as i64;
    }
    jobs[4].priority = 10;
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert_eq!(d.admissions.len(), 1, "{d:?}");
    let admitted = d.admissions[0].job.clone();
    assert_eq!(d.position(&admitted), None);
    let places: Vec<(String, Option<u32>)> = d
        .waiting
        .iter()
        .map(|w| (w.job.clone(), w.position))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    // FIFO in qa, priority first in qp, whichever queue the VC offered first
    let expect =
        |ids: &[&str]| -> Vec<u32> { ids.iter().map(|id| d.position(id).unwrap()).collect() };
    if admitted == "a/first" {
        assert_eq!(
            expect(&["a/second", "a/third", "a/high", "a/low"]),
            vec![1, 2, 1, 2],
            "{places:?}"
        );
    } else {
        assert_eq!(admitted, "a/high", "{d:?}");
        assert_eq!(
            expect(&["a/first", "a/second", "a/third", "a/low"]),
            vec![1, 2, 3, 1],
            "{places:?}"
        );
    }
}

/// A GPU the labeler reports unhealthy under a running job: the job is asked to checkpoint
/// and leave (reason `UnhealthyGpu`) while it still can; a job on healthy GPUs of the same
/// node stays.
#[test]
fn a_job_on_a_sick_gpu_checkpoints_and_leaves() {
    let mut n0 = node("n0", "A100", 8, None);
    n0.unhealthy_gpus.push(GpuIndex(2));
    let sick = run(
        job("t/sick", "q", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    let fine = run(
        job("t/fine", "q", 1, 4),
        &[("n0", &[4, 5, 6, 7])],
        false,
        0,
        None,
    );
    let d = schedule(&snapshot(
        100,
        vec![n0],
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        vec![sick, fine],
    ));
    assert_eq!(d.preemptions.len(), 1, "{:?}", d.preemptions);
    assert_eq!(d.preemptions[0].reason, PreemptionReason::UnhealthyGpu);
    assert_eq!(d.preemptions[0].victims, ["t/sick"]);
    let gpu = super::Beneficiary::Gpu {
        node: "n0".into(),
        index: 2,
    };
    assert_eq!(d.preemptions[0].beneficiary, gpu);
    assert_eq!(d.preemptions[0].beneficiary.to_string(), "GPU 2 of node n0");
}

/// Team t is capped at 6 GPUs and runs two low-priority 2-GPU experiments; a high-priority
/// 4-GPU job of the same queue (priority preemption on) arrives. Idle GPUs exist, but the
/// limit stops it: it must not wait `OverLimit` behind the experiments. The victim must free
/// the limit *and* the node together: `t/exp-cheap` loses less work, but its node also runs
/// another team's job, so only `t/exp-n1` makes room, and only it goes. A job larger than the
/// limit evicts nobody.
#[test]
fn a_limit_does_not_block_priority_preemption() {
    let nodes = vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)];
    let mut t = vc("t", "A100", 0);
    t.limit_gpus = Some(6);
    let vcs = vec![t, vc("o", "A100", 4)];
    let mut q = queue("q", "t");
    q.priority_preemption = true;
    q.policy = QueuePolicy::Priority;
    let queues = vec![q, queue("qo", "o")];
    let exp = |id: &str, n: &str, ckpt: i64| {
        let mut j = run(job(id, "q", 1, 2), &[(n, &[0, 1])], true, 0, Some(ckpt));
        j.priority = 1;
        j
    };
    let running = vec![
        exp("t/exp-cheap", "n0", 990),
        exp("t/exp-n1", "n1", 100),
        run(job("o/own", "qo", 1, 2), &[("n0", &[2, 3])], false, 0, None),
    ];
    let mut high = job("t/high", "q", 1, 4);
    high.priority = 10;
    let mut jobs = running.clone();
    jobs.push(high);
    let d = schedule(&snapshot(
        1000,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(d.preemptions[0].victims, vec!["t/exp-n1".to_string()]);
    assert!(
        matches!(
            d.waiting_reason("t/high"),
            Some(WaitReason::WaitingForPreemption { .. })
        ),
        "{d:?}"
    );

    // larger than the limit: no eviction can ever make it fit
    let mut huge = job("t/huge", "q", 2, 4);
    huge.priority = 10;
    let mut jobs = running.clone();
    jobs.push(huge);
    let d = schedule(&snapshot(
        1000,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs,
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(matches!(
        d.waiting_reason("t/huge"),
        Some(WaitReason::OverLimit { .. })
    ));
}

/// Alice may hold 4 GPUs in the queue and runs a low-priority 4-GPU job; her urgent job
/// preempts it, not Bob's cheaper job, which would free a node but not Alice's limit. Bob's
/// job is within no limit of hers, so it stays.
#[test]
fn a_user_limit_is_freed_by_the_users_own_lower_priority_job() {
    let nodes = vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)];
    let mut q = queue("q", "t");
    q.priority_preemption = true;
    q.user_limit = Some(4);
    let mut a_low = run(
        job("t/alice-low", "q", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        Some(0),
    );
    a_low.priority = 1;
    let mut b_low = run(
        job("t/bob-low", "q", 1, 4),
        &[("n1", &[0, 1, 2, 3])],
        false,
        0,
        Some(990),
    );
    b_low.priority = 0;
    b_low.user = "bob".into();
    let mut urgent = job("t/alice-urgent", "q", 1, 4);
    urgent.priority = 10;
    let d = schedule(&snapshot(
        1000,
        nodes,
        vec![vc("t", "A100", 8)],
        vec![q],
        vec![a_low, b_low, urgent],
    ));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].victims, vec!["t/alice-low".to_string()]);
}

/// Team A is guaranteed one whole node (a node cell). Team B, at its guarantee, borrowed A's
/// clean node n1 for `b/two`. Later B's big job finishes, so `b/two` would fit B's guarantee
/// by count. Promoting it would make n1 B's for good: no clean node left, no victim to
/// reclaim, and A's whole-node job would wait forever. So `b/two` stays bonus, and when A
/// asks for its node, `b/two` is reclaimed.
#[test]
fn a_borrowed_cell_is_not_promoted_away_from_its_owner() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut a = vc("a", "A100", 8);
    a.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count: 1,
    }];
    let vcs = vec![a, vc("b", "A100", 8)];
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let small = run(job("b/small", "qb", 1, 1), &[("n0", &[6])], false, 0, None);
    let big = run(
        job("b/big", "qb", 1, 6),
        &[("n0", &[0, 1, 2, 3, 4, 5])],
        false,
        0,
        None,
    );
    // B is at its guarantee: b/two borrows, on A's clean node
    let d = schedule(&snapshot(
        0,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![small.clone(), big, job("b/two", "qb", 1, 2)],
    ));
    let adm = d.admission("b/two").expect("borrowed");
    assert!(adm.bonus);
    assert_eq!(adm.placement[0].node, "n1");
    let two = run_admitted(job("b/two", "qb", 1, 2), adm, 10);

    // b/big finishes: b/two now fits B's guarantee by count, but n1 is A's only cell
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![small.clone(), two.clone()],
    ));
    assert!(d.promotions.is_empty(), "{d:?}");

    // A asks for its whole node: b/two is reclaimed
    let d = schedule(&snapshot(
        200,
        nodes,
        vcs,
        queues,
        vec![small, two, job("a/node", "qa", 1, 8)],
    ));
    assert!(d.promotions.is_empty(), "{d:?}");
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(d.preemptions[0].victims, vec!["b/two".to_string()]);
    assert!(matches!(
        d.waiting_reason("a/node"),
        Some(WaitReason::WaitingForPreemption { .. })
    ));
}

/// Team A (8 GPUs guaranteed, priority preemption on) runs a low-priority 4-GPU job on its
/// only node, where team C borrows the other 4. A's urgent whole-node job fits neither by
/// A's own low-priority job alone nor by reclaim alone, but with both gone A ends within its
/// guarantee: one plan takes both, and nothing more (C's job on the other type stays).
#[test]
fn own_lower_priority_jobs_and_borrowed_gpus_make_room_together() {
    let nodes = vec![node("n0", "A100", 8, None), node("h0", "H100", 4, None)];
    let mut q = queue("qa", "a");
    q.priority_preemption = true;
    let vcs = vec![vc("a", "A100", 8), vc("c", "A100", 0)];
    let queues = vec![q, queue("qc", "c")];
    let mut low = run(
        job("a/low", "qa", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        Some(900),
    );
    low.priority = 1;
    let borrowed = run(
        job("c/borrowed", "qc", 1, 4),
        &[("n0", &[4, 5, 6, 7])],
        true,
        0,
        Some(900),
    );
    let elsewhere = run(
        job("c/elsewhere", "qc", 1, 4),
        &[("h0", &[0, 1, 2, 3])],
        true,
        0,
        Some(999),
    );
    let mut urgent = job("a/urgent", "qa", 1, 8);
    urgent.priority = 10;
    urgent.gpu_types = vec![Flavor::new("A100")];
    let d = schedule(&snapshot(
        1000,
        nodes,
        vcs,
        queues,
        vec![low, borrowed, elsewhere, urgent],
    ));
    let mut victims: Vec<&str> = d.victims().collect();
    victims.sort();
    assert_eq!(victims, vec!["a/low", "c/borrowed"], "{d:?}");
    for p in &d.preemptions {
        match p.reason {
            PreemptionReason::Priority => assert_eq!(p.victims, vec!["a/low".to_string()]),
            PreemptionReason::Reclaim => {
                assert_eq!(p.victims, vec!["c/borrowed".to_string()])
            }
            r => panic!("unexpected {r:?}"),
        }
    }
    assert!(
        matches!(
            d.waiting_reason("a/urgent"),
            Some(WaitReason::WaitingForPreemption { victims, .. }) if victims.len() == 2
        ),
        "{d:?}"
    );
}

/// Marks a running job as asked to checkpoint and leave, as its pods would record it.
fn asked(mut j: Job, reason: PreemptionReason, beneficiary: Option<&str>, ack: bool) -> Job {
    let r = j.running.as_mut().expect("a running job");
    r.preempting = true;
    r.checkpoint_request = Some(CheckpointRequest {
        reason,
        beneficiary: beneficiary.map(str::to_string),
        withdrawable: !ack,
    });
    j
}

/// Team vision lent its node to nlp. Vision submits `vision/train`; nlp's bonus `nlp/sweep`
/// is asked to checkpoint. Vision deletes its job before the sweep acknowledges: the
/// preemption is withdrawn and the sweep runs on, still holding its GPUs, so nlp's next job
/// does not take them as if they were leaving.
#[test]
fn a_reclaim_is_withdrawn_when_the_owner_deletes_its_job() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("vision", "A100", 8), vc("nlp", "A100", 0)];
    let queues = vec![queue("qv", "vision"), queue("qn", "nlp")];
    let sweep = run(
        job("nlp/sweep", "qn", 1, 8),
        &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
        true,
        0,
        None,
    );
    let train = job("vision/train", "qv", 1, 8);
    let d = schedule(&snapshot(
        1000,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![sweep.clone(), train],
    ));
    assert_eq!(d.victims().collect::<Vec<_>>(), ["nlp/sweep"], "{d:?}");

    // vision deletes its job while the sweep is still checkpointing
    let sweep = asked(
        sweep,
        PreemptionReason::Reclaim,
        Some("vision/train"),
        false,
    );
    let next = job("nlp/next", "qn", 1, 8);
    let d = schedule(&snapshot(1010, nodes, vcs, queues, vec![sweep, next]));
    assert_eq!(
        d.cancellations,
        [Cancellation {
            job: "nlp/sweep".into(),
            beneficiary: "vision/train".into(),
            reason: PreemptionReason::Reclaim,
        }]
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        d.admissions.is_empty(),
        "the sweep still holds the node: {d:?}"
    );
    assert!(
        !matches!(
            d.waiting_reason("nlp/next"),
            Some(WaitReason::WaitingForPreemption { .. })
        ),
        "nothing is leaving: {d:?}"
    );
}

/// The same reclaim, but vision suspends its job instead (a suspended job is no longer in
/// the scheduler's snapshot): the sweep runs on.
#[test]
fn a_reclaim_is_withdrawn_when_the_owner_suspends_its_job() {
    let sweep = asked(
        run(
            job("nlp/sweep", "qn", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            true,
            0,
            None,
        ),
        PreemptionReason::Reclaim,
        Some("vision/train"),
        false,
    );
    // suspended: left out of the snapshot, like a deleted or finished job
    let d = schedule(&snapshot(
        1010,
        vec![node("n0", "A100", 8, None)],
        vec![vc("vision", "A100", 8), vc("nlp", "A100", 0)],
        vec![queue("qv", "vision"), queue("qn", "nlp")],
        vec![sweep],
    ));
    assert_eq!(d.cancellations.len(), 1, "{d:?}");
    assert_eq!(d.cancellations[0].job, "nlp/sweep");
}

/// A high-priority job preempts a low-priority one of its queue; before the victim
/// acknowledges, another job finishes and the high-priority job is placed there instead.
/// The victim is no longer needed to leave: its preemption is withdrawn.
#[test]
fn a_priority_preemption_is_withdrawn_when_its_job_runs_elsewhere() {
    let mut q = queue("q", "t");
    q.priority_preemption = true;
    let mut low = run(
        job("t/low", "q", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    low.priority = 0;
    let low = asked(low, PreemptionReason::Priority, Some("t/urgent"), false);
    let mut urgent = run(
        job("t/urgent", "q", 1, 4),
        &[("n1", &[0, 1, 2, 3])],
        false,
        1000,
        None,
    );
    urgent.priority = 10;
    let d = schedule(&snapshot(
        1010,
        vec![node("n0", "A100", 4, None), node("n1", "A100", 4, None)],
        vec![vc("t", "A100", 8)],
        vec![q],
        vec![low, urgent],
    ));
    assert_eq!(d.cancellations.len(), 1, "{d:?}");
    assert_eq!(d.cancellations[0].job, "t/low");
    assert_eq!(d.cancellations[0].reason, PreemptionReason::Priority);
}

/// A victim that already acknowledged its checkpoint is stopping: its preemption is not
/// withdrawn, even though its beneficiary is gone. Nor is a drain's or a sick GPU's, which
/// need the job gone whoever waits.
#[test]
fn acknowledged_drain_and_sick_gpu_preemptions_are_never_withdrawn() {
    let on = |id: &str, n: &str| run(job(id, "qn", 1, 4), &[(n, &[0, 1, 2, 3])], true, 0, None);
    let jobs = vec![
        asked(
            on("nlp/saved", "n0"),
            PreemptionReason::Reclaim,
            Some("vision/gone"),
            true,
        ),
        asked(
            on("nlp/drained", "n1"),
            PreemptionReason::Drain,
            None,
            false,
        ),
        asked(
            on("nlp/sick", "n2"),
            PreemptionReason::UnhealthyGpu,
            None,
            false,
        ),
    ];
    let nodes = ["n0", "n1", "n2"]
        .map(|n| node(n, "A100", 4, None))
        .to_vec();
    let d = schedule(&snapshot(
        1010,
        nodes,
        vec![vc("vision", "A100", 8), vc("nlp", "A100", 0)],
        vec![queue("qv", "vision"), queue("qn", "nlp")],
        jobs,
    ));
    assert!(d.cancellations.is_empty(), "{d:?}");
}

/// A job leaves a node whose GPU turned unhealthy; a team's guaranteed job fits only once it
/// is gone. The job waits on that preemption, and its reason says so: an unhealthy GPU, not
/// a reclaim it never asked for.
#[test]
fn the_wait_reason_names_the_kind_of_preemption_it_waits_on() {
    let mut n0 = node("n0", "A100", 8, None);
    n0.unhealthy_gpus.push(GpuIndex(7));
    let sick = asked(
        run(
            job("t/sick", "q", 1, 4),
            &[("n0", &[4, 5, 6, 7])],
            false,
            0,
            None,
        ),
        PreemptionReason::UnhealthyGpu,
        None,
        false,
    );
    let mut wide = job("t/wide", "q", 1, 6);
    wide.topology.required = Some(TopologyLevel::Node);
    let d = schedule(&snapshot(
        100,
        vec![n0],
        vec![vc("t", "A100", 8)],
        vec![queue("q", "t")],
        vec![sick, wide],
    ));
    match d.waiting_reason("t/wide") {
        Some(WaitReason::WaitingForPreemption { reason, victims }) => {
            assert_eq!(*reason, PreemptionReason::UnhealthyGpu);
            assert_eq!(victims, &["t/sick"]);
        }
        r => panic!("unexpected {r:?}: {d:?}"),
    }
}

/// Guarantees at risk: team a owns 2 nodes (16 A100 as 2 node cells), team b 1 node, on a
/// cluster of 3 nodes; team a runs on both of its nodes.
fn owner_of_two_nodes() -> (Vec<Node>, Vec<VirtualCluster>, Vec<Queue>, Vec<Job>) {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    let mut a = vc("a", "A100", 16);
    a.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count: 2,
    }];
    let b = vc("b", "A100", 8);
    let all: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let jobs = vec![
        run(job("a/one", "qa", 1, 8), &[("n0", all)], false, 0, None),
        run(job("a/two", "qa", 1, 8), &[("n1", all)], false, 0, None),
    ];
    (
        nodes,
        vec![a, b],
        vec![queue("qa", "a"), queue("qb", "b")],
        jobs,
    )
}

/// An owner of 2 nodes whose node's GPUs go unhealthy is told its guarantee is at risk,
/// with the numbers: its job there must leave, 16 of 24 GPUs are healthy and team b's 8
/// are set aside, so 8 GPUs and 1 node can be obtained. Team b, which holds none of its 8,
/// is told too: the 8 idle healthy GPUs are what both lack, and whoever claims them first
/// has them.
#[test]
fn an_owner_whose_gpus_go_unhealthy_is_told_its_guarantee_is_at_risk() {
    let (mut nodes, vcs, queues, jobs) = owner_of_two_nodes();
    let d = schedule(&snapshot(
        0,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs.clone(),
    ));
    assert_eq!(at_risk(&d, "a", "A100"), None, "all healthy: {d:?}");
    nodes[1].unhealthy_gpus = (0..8).map(GpuIndex).collect();
    let d = schedule(&snapshot(10, nodes, vcs, queues, jobs));
    let s = at_risk(&d, "a", "A100").expect("a's guarantee is at risk");
    assert_eq!(
        (s.guaranteed_gpus, s.obtainable_gpus, s.usable_gpus),
        (16, 8, 16)
    );
    assert_eq!(
        s.cells,
        vec![CellShortfall {
            level: TopologyLevel::Node,
            guaranteed: 2,
            obtainable: 1,
            usable: 2,
        }]
    );
    assert!(
        s.to_string()
            .starts_with("8 of 16 guaranteed A100 GPUs can be obtained now"),
        "{s}"
    );
    assert_eq!(s.cause(), ShortfallCause::CapacityLost);
    assert!(
        s.to_string().contains("16 of the 24 A100 GPUs are healthy"),
        "{s}"
    );
    let b = at_risk(&d, "b", "A100").expect("b competes for the same 8");
    assert_eq!((b.guaranteed_gpus, b.obtainable_gpus), (8, 0));
}

/// A node cordoned (or gone) is capacity lost as well: team a's 16 cannot all be had.
#[test]
fn a_cordoned_or_lost_node_puts_a_guarantee_at_risk() {
    let (mut nodes, vcs, queues, jobs) = owner_of_two_nodes();
    nodes[0].schedulable = false;
    let d = schedule(&snapshot(
        0,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        jobs.clone(),
    ));
    let s = at_risk(&d, "a", "A100").expect("cordoned");
    assert_eq!((s.obtainable_gpus, s.usable_gpus), (8, 16));
    assert_eq!((s.cells[0].obtainable, s.cells[0].usable), (1, 2));
    assert_eq!(s.cause(), ShortfallCause::CapacityLost);
    // the node gone altogether: the same numbers, but nothing tells a node gone from one
    // never there, so it reads as guarantees beyond the cluster's 16
    nodes.remove(0);
    let d = schedule(&snapshot(0, nodes, vcs, queues, jobs));
    let s = at_risk(&d, "a", "A100").expect("gone");
    assert_eq!((s.obtainable_gpus, s.usable_gpus), (8, 16));
    assert_eq!(s.cause(), ShortfallCause::GuaranteesExceedCapacity);
}

/// Guarantees beyond the cluster, with every GPU healthy: both teams are told, and why.
#[test]
fn guarantees_beyond_the_cluster_are_at_risk_for_that_reason() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 16), vc("b", "A100", 8)];
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let d = schedule(&snapshot(0, nodes, vcs, queues, vec![]));
    let s = at_risk(&d, "a", "A100").expect("a's 16 and b's 8 do not fit 16");
    assert_eq!(
        (s.obtainable_gpus, s.cluster_gpus, s.all_guaranteed_gpus),
        (8, 16, 24)
    );
    assert_eq!(s.cause(), ShortfallCause::GuaranteesExceedCapacity);
    assert!(
        s.to_string()
            .ends_with("add up to 24 A100 GPUs, more than the 16 in the cluster, and other VirtualClusters' guarantees take their part."),
        "{s}"
    );
    assert!(at_risk(&d, "b", "A100").is_some());
}

/// A replica asking for more CPU or memory than any node has can never run: it is told
/// so, naming the request, not that it waits for GPUs to free up (nodes here have 96 CPUs
/// and 1024 GiB).
#[test]
fn a_replica_larger_than_any_node_in_cpu_or_memory_never_fits() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 8)];
    let queues = vec![queue("qa", "a")];
    let mut cpu = job("a/cpu", "qa", 1, 1);
    cpu.tasks[0].cpu_milli = 200_000;
    let mut mem = job("a/mem", "qa", 1, 1);
    mem.tasks[0].memory_bytes = 2048 * GIB;
    let d = schedule(&snapshot(100, nodes, vcs, queues, vec![cpu, mem]));
    let said = |j: &str| match d.waiting_reason(j) {
        Some(WaitReason::NeverFits { message }) => message.clone(),
        r => panic!("{j}: NeverFits expected: {r:?}"),
    };
    assert!(
        said("a/cpu").starts_with("a replica requests 200 CPUs and no node"),
        "{}",
        said("a/cpu")
    );
    assert!(
        said("a/mem").starts_with("a replica requests 2048Gi of memory"),
        "{}",
        said("a/mem")
    );
    assert!(d.admissions.is_empty());
}

/// With guarantees beyond the cluster, a job within its team's guarantee that finds every
/// GPU held by another team's guaranteed work cannot reclaim it: its wait says so, not only
/// that it waits for room (an admin read a plain NoFit and looked for fragmentation).
#[test]
fn a_job_within_a_guarantee_at_risk_is_told_why_it_finds_no_room() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("a", "A100", 8), vc("b", "A100", 8)];
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let jobs = vec![
        run(
            job("a/held", "qa", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        ),
        job("b/waits", "qb", 1, 4),
    ];
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    match d.waiting_reason("b/waits") {
        Some(
            r @ WaitReason::NoFit {
                guarantee_at_risk, ..
            },
        ) => {
            assert_eq!(guarantee_at_risk.as_deref(), Some("b"));
            assert!(
                r.to_string()
                    .contains("within VirtualCluster b's guarantee"),
                "{r}"
            );
        }
        r => panic!("NoFit expected: {r:?}"),
    }
}

/// Capacity borrowed by others is not a risk: team b runs bonus jobs on all of team a's
/// idle nodes; reclaim gives them back, so nobody is told its guarantee is at risk. A
/// guaranteed job of b in the way of a's cells is, since reclaim cannot move it.
#[test]
fn capacity_borrowed_by_others_is_not_a_risk() {
    let (nodes, vcs, queues, _) = owner_of_two_nodes();
    let all: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let jobs = vec![
        run(job("b/own", "qb", 1, 8), &[("n2", all)], false, 0, None),
        run(job("b/x", "qb", 1, 8), &[("n0", all)], true, 0, None),
        run(job("b/y", "qb", 1, 8), &[("n1", all)], true, 0, None),
    ];
    let d = schedule(&snapshot(0, nodes, vcs, queues, jobs));
    assert_eq!(at_risk(&d, "a", "A100"), None, "{:?}", d.usage);
    assert_eq!(at_risk(&d, "b", "A100"), None);
}

/// Team C (8 GPUs guaranteed) runs a low-priority experiment within its guarantee and later
/// a high-priority production job, which borrowed team A's idle node. When A wants its GPUs
/// back, the victim is C's least important job, the experiment: which of C's jobs is bonus
/// follows priority, not the order they arrived in. The production job is promoted into C's
/// guarantee, the experiment demoted out of it, in the same cycle.
#[test]
fn reclaim_takes_the_borrowers_least_important_job_not_its_latest() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("team-a", "A100", 8), vc("team-c", "A100", 8)];
    let queues = vec![queue("qa", "team-a"), queue("qc", "team-c")];
    let now = 10_000;
    let mut experiment = job("c/experiment", "qc", 1, 8);
    experiment.priority = 0;
    let mut production = job("c/production", "qc", 1, 8);
    production.priority = 10;
    let jobs = vec![
        run(
            experiment,
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        ),
        run(
            production,
            &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
            true,
            5_000,
            None,
        ),
        job("a/train", "qa", 1, 8),
    ];
    let d = schedule(&snapshot(now, nodes, vcs, queues, jobs));
    assert_eq!(d.promotions, vec!["c/production".to_string()], "{d:?}");
    assert_eq!(d.demotions, vec!["c/experiment".to_string()], "{d:?}");
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(d.preemptions[0].victims, vec!["c/experiment".to_string()]);
    let c = &d.usage.virtual_clusters["team-c"].flavors[&Flavor::new("A100")];
    assert_eq!((c.in_use_milli, c.bonus_milli), (16_000, 8_000));
    assert_eq!(d.usage.queues["qc"].bonus_milli_gpus, 8_000);
}

/// Among jobs of equal priority a job keeps its standing: a bonus job that checkpointed a
/// moment ago (little work to lose) does not swap with a guaranteed one at every checkpoint,
/// which would move the victims of a reclaim in flight from one node to another.
#[test]
fn equal_priority_jobs_keep_their_standing_across_checkpoints() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let vcs = vec![vc("team-a", "A100", 8), vc("team-c", "A100", 8)];
    let queues = vec![queue("qa", "team-a"), queue("qc", "team-c")];
    let now = 10_000;
    let jobs = vec![
        // guaranteed, just checkpointed: little to lose
        run(
            job("c/first", "qc", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            Some(now - 5),
        ),
        // bonus, long since its checkpoint
        run(
            job("c/second", "qc", 1, 8),
            &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
            true,
            100,
            None,
        ),
    ];
    let d = schedule(&snapshot(now, nodes, vcs, queues, jobs));
    assert!(d.promotions.is_empty() && d.demotions.is_empty(), "{d:?}");
}

/// An admin shrinks team C's guarantee below what its guaranteed jobs hold: the least
/// important of them become bonus (reclaimable), so the numbers add up and the guarantee
/// is never exceeded.
#[test]
fn a_shrunk_guarantee_demotes_the_least_important_jobs() {
    let nodes = vec![node("n0", "A100", 8, None)];
    let vcs = vec![vc("team-c", "A100", 4)];
    let queues = vec![queue("qc", "team-c")];
    let mut low = job("c/low", "qc", 1, 4);
    low.priority = 1;
    let mut high = job("c/high", "qc", 1, 4);
    high.priority = 5;
    let jobs = vec![
        run(low, &[("n0", &[0, 1, 2, 3])], false, 0, None),
        run(high, &[("n0", &[4, 5, 6, 7])], false, 50, None),
    ];
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    assert_eq!(d.demotions, vec!["c/low".to_string()], "{d:?}");
    assert!(d.promotions.is_empty());
}

/// Team A is guaranteed one whole node (a node cell), team B 8 GPUs by count, on a cluster
/// of two 8-GPU nodes: the only way to keep both is a node each. B runs 4 GPUs on n0. A's
/// small guaranteed job must not pack into B's node: the free node n1 would then be all
/// A's cell, and B's next job, within its guarantee, would find no room anywhere.
#[test]
fn a_cell_owner_does_not_pack_into_the_node_a_count_guarantee_needs() {
    let nodes = vec![node("n0", "A100", 8, None), node("n1", "A100", 8, None)];
    let mut a = vc("a", "A100", 8);
    a.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count: 1,
    }];
    let vcs = vec![a, vc("b", "A100", 8)];
    let queues = vec![queue("qa", "a"), queue("qb", "b")];
    let b_first = run(
        job("b/first", "qb", 1, 4),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    let d = schedule(&snapshot(
        10,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![b_first.clone(), job("a/small", "qa", 1, 2)],
    ));
    let adm = d.admission("a/small").expect("admitted");
    assert!(!adm.bonus);
    assert_eq!(adm.placement[0].node, "n1", "{d:?}");
    let a_small = run_admitted(job("a/small", "qa", 1, 2), adm, 10);
    // B's next job fits what is left of its guarantee, on n0
    let d = schedule(&snapshot(
        20,
        nodes,
        vcs,
        queues,
        vec![b_first, a_small, job("b/second", "qb", 1, 4)],
    ));
    let adm = d
        .admission("b/second")
        .expect("B within its guarantee is admitted");
    assert!(!adm.bonus);
    assert_eq!(adm.placement[0].node, "n0");
}

// ---------------------------------------------------------------------------------------
// Queue shares taken back
// ---------------------------------------------------------------------------------------

const SHARE_NOW: i64 = 10_000;

/// Team t (8 GPUs guaranteed, one 8-GPU node) splits into queues `research` and `dev` with
/// the given shares. dev runs four 2-GPU jobs of `dev_priority` (the node is full), each
/// checkpointed at a different time, so the one saved last (dev/d4) loses the least work.
/// `pending` are the jobs waiting.
fn share_world(shares: (u32, u32), dev_priority: [i32; 4], pending: Vec<Job>) -> Snapshot {
    let mut research = queue("research", "t");
    research.share = shares.0;
    let mut dev = queue("dev", "t");
    dev.share = shares.1;
    let mut jobs: Vec<Job> = (0..4u32)
        .map(|i| {
            run(
                pjob(
                    &format!("t/d{}", i + 1),
                    "dev",
                    1,
                    2,
                    dev_priority[i as usize],
                ),
                &[("n1", &[2 * i, 2 * i + 1])],
                false,
                0,
                Some(SHARE_NOW - 4000 + 1000 * i64::from(i)),
            )
        })
        .collect();
    jobs.extend(pending);
    snapshot(
        SHARE_NOW,
        vec![node("n1", "A100", 8, None)],
        vec![vc("t", "A100", 8)],
        vec![research, dev],
        jobs,
    )
}

fn waits_on_share(d: &Decisions, job: &str) -> bool {
    matches!(
        d.waiting_reason(job),
        Some(WaitReason::WaitingForPreemption {
            reason: PreemptionReason::QueueShare,
            ..
        })
    )
}

/// research (50 %) uses nothing of its 4 GPUs while dev uses all 8: research's job takes its
/// share back from dev's job that loses the least work, and waits for it.
#[test]
fn a_queue_below_its_share_takes_it_back_from_a_sibling_beyond_its_own() {
    let d = schedule(&share_world(
        (50, 50),
        [0; 4],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::QueueShare);
    assert_eq!(d.preemptions[0].beneficiary, "t/r1");
    assert_eq!(victims(&d), strings(&["t/d4"]), "{d:?}");
    assert!(waits_on_share(&d, "t/r1"), "{d:?}");
}

/// With the default shares (100 % each) every queue may use the whole guarantee: the shares
/// overlap, so they only order admission and nothing is taken back.
#[test]
fn overlapping_shares_only_order_admission() {
    let d = schedule(&share_world(
        (100, 100),
        [0; 4],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/r1").is_none());
    assert!(
        matches!(
            d.waiting_reason("t/r1"),
            Some(WaitReason::QuotaExhausted {
                share_kept_by: None,
                ..
            })
        ),
        "no share to keep: {d:?}"
    );
    // 60 + 50 = 110 %: overlapping too
    let d = schedule(&share_world(
        (60, 50),
        [0; 4],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// A sibling's more important jobs keep running: a share is taken back only from jobs of no
/// higher priority than the job that needs it, and the waiting job is told so.
#[test]
fn a_share_is_not_taken_back_from_more_important_jobs() {
    let d = schedule(&share_world(
        (50, 50),
        [5; 4],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    let reason = d.waiting_reason("t/r1").expect("waits");
    assert!(
        matches!(reason, WaitReason::QuotaExhausted { share_kept_by: Some(q), .. } if q == "dev"),
        "{reason:?}"
    );
    assert!(
        reason.to_string().contains(
            "queue dev uses more than its own share with jobs of higher priority than this one"
        ),
        "{reason}"
    );
    // one of them as important as the job: that one goes, although d4 would lose less
    let d = schedule(&share_world(
        (50, 50),
        [5, 0, 5, 5],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert_eq!(victims(&d), strings(&["t/d2"]), "{d:?}");
}

/// A share is taken from a sibling only while the sibling is beyond its own: dev (4 GPUs of
/// share) uses 6 when research runs 2 of its own, so research's job of 4 more would need two
/// of dev's jobs, and the second would put dev below its share: nothing is taken. A job of 2
/// more (research then at its share exactly) takes one.
#[test]
fn a_share_is_taken_back_only_while_the_sibling_is_beyond_its_own() {
    let mut w = share_world((50, 50), [0; 4], vec![job("t/r2", "research", 1, 4)]);
    // research already runs d1's GPUs: dev is down to three jobs
    w.jobs[0].queue = "research".into();
    w.jobs[0].id = "t/r1".into();
    let d = schedule(&w);
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/r2").is_none());

    let mut w = share_world((50, 50), [0; 4], vec![job("t/r2", "research", 1, 2)]);
    w.jobs[0].queue = "research".into();
    w.jobs[0].id = "t/r1".into();
    let d = schedule(&w);
    assert_eq!(victims(&d), strings(&["t/d4"]), "{d:?}");
    assert!(waits_on_share(&d, "t/r2"), "{d:?}");
}

/// Once research has its share, dev's preempted job waits for room like any other: it is
/// beyond dev's share, so it takes nothing back in turn, and no cycle undoes the last.
#[test]
fn a_share_reclaim_victim_does_not_take_it_back_in_turn() {
    let first = schedule(&share_world(
        (50, 50),
        [0; 4],
        vec![job("t/r1", "research", 1, 2)],
    ));
    assert_eq!(victims(&first), strings(&["t/d4"]), "{first:?}");
    // d4 is gone and back in its queue: r1 starts on its GPUs
    let mut w = share_world((50, 50), [0; 4], vec![job("t/r1", "research", 1, 2)]);
    w.jobs[3].running = None;
    let second = schedule(&w);
    let a = second.admission("t/r1").expect("r1 starts").clone();
    assert!(!a.bonus, "{second:?}");
    assert!(second.preemptions.is_empty(), "{second:?}");
    // r1 runs, d4 waits: nothing is taken back
    w.jobs.pop();
    w.jobs
        .push(run_admitted(job("t/r1", "research", 1, 2), &a, SHARE_NOW));
    let third = schedule(&w);
    assert!(third.preemptions.is_empty(), "{third:?}");
    assert!(third.admission("t/d4").is_none(), "{third:?}");
}

/// Hierarchy: the team's guarantee splits 50/50 between `vision` and `nlp`, and vision's
/// half between its children 50/50 too. vision-a uses nothing while nlp holds most of the
/// node: vision-a's job takes back from nlp (beyond its half), not from vision-b's job,
/// which would lose less but is within vision's half.
#[test]
fn a_share_is_taken_back_where_the_queue_lines_part() {
    let mut vision = queue("vision", "t");
    vision.share = 50;
    let mut nlp = queue("nlp", "t");
    nlp.share = 50;
    let mut a = queue("vision-a", "t");
    a.parent = Some("vision".into());
    a.share = 50;
    let mut b = queue("vision-b", "t");
    b.parent = Some("vision".into());
    b.share = 50;
    let jobs = vec![
        run(
            job("t/b1", "vision-b", 1, 2),
            &[("n1", &[0, 1])],
            false,
            0,
            Some(SHARE_NOW - 10),
        ),
        run(
            job("t/n1", "nlp", 1, 2),
            &[("n1", &[2, 3])],
            false,
            0,
            Some(SHARE_NOW - 4000),
        ),
        run(
            job("t/n2", "nlp", 1, 2),
            &[("n1", &[4, 5])],
            false,
            0,
            Some(SHARE_NOW - 3000),
        ),
        run(
            job("t/n3", "nlp", 1, 2),
            &[("n1", &[6, 7])],
            false,
            0,
            Some(SHARE_NOW - 4000),
        ),
        job("t/a1", "vision-a", 1, 2),
    ];
    let d = schedule(&snapshot(
        SHARE_NOW,
        vec![node("n1", "A100", 8, None)],
        vec![vc("t", "A100", 8)],
        vec![vision, nlp, a, b],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["t/n2"]), "{d:?}");
    assert!(waits_on_share(&d, "t/a1"), "{d:?}");
}

/// A job that can never fit is told what it is too large for: a replica larger than every
/// node, more GPUs than the type has, or more than one domain of its required level holds.
#[test]
fn a_never_fitting_job_is_told_what_it_is_too_large_for() {
    let nodes = vec![
        node("n0", "A100", 8, Some("r0")),
        node("n1", "A100", 8, Some("r0")),
        node("n2", "A100", 8, Some("r1")),
    ];
    let mut racked = job("t/racked", "q", 3, 8);
    racked.topology.required = Some(TopologyLevel::Rack);
    let jobs = vec![job("t/fat", "q", 1, 16), job("t/many", "q", 4, 8), racked];
    let d = schedule(&snapshot(
        0,
        nodes,
        vec![vc("t", "A100", 24)],
        vec![queue("q", "t")],
        jobs,
    ));
    let says = |id: &str| {
        let r = d.waiting_reason(id).expect("waits");
        assert_eq!(r.code(), "NeverFits", "{id}: {r}");
        r.to_string()
    };
    assert!(
        says("t/fat").contains(
            "a replica needs 16 GPUs and no node of the acceptable GPU types has more than 8"
        ),
        "{}",
        says("t/fat")
    );
    assert!(
        says("t/many")
            .contains("the job needs 32 GPUs and no acceptable GPU type has more than 24"),
        "{}",
        says("t/many")
    );
    assert!(
        says("t/racked").contains("within one rack (topology.required) and no rack of the acceptable GPU types has more than 16"),
        "{}",
        says("t/racked")
    );
}

/// A deleted job's pods, terminating, hold GPUs its team needs again: the team's waiting job
/// waits for them, and another team's bonus job is not reclaimed for room that comes free a
/// second later (an acceptance run saw the bonus job stopped and restarted for nothing, 4
/// deletions out of 4). Pods that stay, or are stuck terminating, still make it reclaim.
#[test]
fn a_deleted_jobs_terminating_pods_are_waited_for_not_reclaimed_around() {
    let orphan = |leaving: Option<&str>| Held {
        gpus: (0..4).map(GpuIndex).collect(),
        cpu_milli: 1000,
        memory_bytes: 1 << 30,
        leaving: leaving.map(str::to_string),
        ..Default::default()
    };
    let case = |held: Held| {
        let mut n0 = node("n0", "A100", 8, None);
        n0.held = vec![held];
        let nodes = vec![n0, node("n1", "A100", 8, None)];
        let vcs = vec![vc("alpha", "A100", 4), vc("beta", "A100", 8)];
        let queues = vec![queue("qa", "alpha"), queue("qb", "beta")];
        let jobs = vec![
            run(
                job("beta/kept", "qb", 1, 4),
                &[("n0", &[4, 5, 6, 7])],
                false,
                0,
                None,
            ),
            run(
                job("alpha/own", "qa", 1, 4),
                &[("n1", &[0, 1, 2, 3])],
                false,
                0,
                None,
            ),
            run(
                job("alpha/x1", "qa", 1, 4),
                &[("n1", &[4, 5, 6, 7])],
                true,
                0,
                None,
            ),
            job("beta/waiting", "qb", 1, 4),
        ];
        schedule(&snapshot(100, nodes, vcs, queues, jobs))
    };
    let d = case(orphan(Some("beta/deleted")));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        d.admissions.is_empty(),
        "not before the pods are gone: {d:?}"
    );
    assert!(waits_with(&d, "beta/waiting", "WaitingForTerminatingPods"));
    assert!(
        d.waiting_reason("beta/waiting")
            .is_some_and(|r| r.to_string().contains("beta/deleted")),
        "{d:?}"
    );
    // Pods that stay (an invalid job's, or stuck terminating): the bonus job is reclaimed.
    let d = case(orphan(None));
    assert_eq!(victims(&d), strings(&["alpha/x1"]), "{d:?}");
    assert!(waits_with(&d, "beta/waiting", "WaitingForPreemption"));
}

/// In a queue with priority preemption, a job that can start only by preempting keeps the
/// room its plan needs from the lower-priority jobs behind it: an acceptance run saw the
/// lower-priority job started on the free half of the node the higher-priority one needed,
/// then preempted for it in the next cycle (a pod created and deleted, a preemption counted).
/// With the team's guarantee of 16 the plan leaves the job within it and is made in phase 1;
/// with none, the job borrows and its plan is made at its turn in phase 2.
#[test]
fn a_priority_plan_keeps_its_room_from_the_jobs_behind_it() {
    let nodes = vec![
        node("n0", "A100", 8, None),
        node("n1", "A100", 8, None),
        node("n2", "A100", 8, None),
    ];
    for (guarantee, policy) in [
        (16, QueuePolicy::Priority),
        (16, QueuePolicy::Fifo),
        (0, QueuePolicy::Priority),
        (0, QueuePolicy::Fifo),
    ] {
        let case = format!("guarantee {guarantee}, {policy:?}");
        let vcs = vec![vc("alpha", "A100", guarantee), vc("beta", "A100", 8)];
        let mut qa = queue("qa", "alpha");
        qa.policy = policy;
        qa.priority_preemption = true;
        let queues = vec![qa, queue("qb", "beta")];
        let bonus = guarantee == 0;
        let mut d1 = run(
            job("alpha/d1", "qa", 1, 8),
            &[("n0", &[0, 1, 2, 3, 4, 5, 6, 7])],
            bonus,
            0,
            None,
        );
        d1.priority = 5;
        let x = run(
            job("alpha/x", "qa", 1, 4),
            &[("n1", &[0, 1, 2, 3])],
            bonus,
            0,
            None,
        );
        let b1 = run(
            job("beta/b1", "qb", 1, 8),
            &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])],
            false,
            0,
            None,
        );
        let mut lo = job("alpha/f-lo", "qa", 1, 4);
        lo.queued_at = 10;
        let mut hi = job("alpha/f-hi", "qa", 1, 8);
        hi.priority = 3;
        hi.queued_at = 20;
        let jobs = vec![d1, x, b1, lo, hi];
        let d = schedule(&snapshot(100, nodes.clone(), vcs, queues, jobs));
        assert!(d.admission("alpha/f-lo").is_none(), "{case}: {d:?}");
        assert_eq!(victims(&d), strings(&["alpha/x"]), "{case}: {d:?}");
        assert_eq!(d.preemptions[0].beneficiary, "alpha/f-hi", "{case}");
        assert_eq!(
            d.preemptions[0].reason,
            PreemptionReason::Priority,
            "{case}"
        );
    }
}
