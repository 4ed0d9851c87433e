//! Fractional GPUs: shares (milli-GPUs) beside whole GPUs, shares borrowing over quota,
//! which share a reclaim takes, and where a new share lands.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// The GPU indices an admission takes on its node, replica by replica.
fn gpus_of(d: &Decisions, job: &str) -> Vec<(String, Vec<u32>)> {
    d.admission(job)
        .unwrap_or_else(|| panic!("{job} is not admitted: {d:?}"))
        .placement
        .iter()
        .map(|p| (p.node.clone(), p.gpus.iter().map(|g| g.0).collect()))
        .collect()
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preempt_test.go, case "3 train job running, 1
/// build job pending for the same queue - no need to preempt both": two half-GPU jobs share
/// GPU 0 and a whole-GPU job holds GPU 1; a 1-GPU job of higher priority preempts the one
/// whole-GPU job, not both shares (the same work is lost either way: fewer victims wins).
#[test]
fn kai_no_need_to_preempt_both_shares() {
    let nodes = vec![node("node0", "A100", 2, None)];
    let mut s0 = share_job("q/running_job0", "queue0", 1, 500);
    s0.priority = 50;
    let mut s2 = share_job("q/running_job2", "queue0", 1, 500);
    s2.priority = 50;
    let jobs = vec![
        run(s0, &[("node0", &[0])], false, 0, CKPT),
        run(
            pjob("q/running_job1", "queue0", 1, 1, 50),
            &[("node0", &[1])],
            false,
            0,
            CKPT,
        ),
        run(s2, &[("node0", &[0])], false, 0, CKPT),
        pjob("q/pending_job0", "queue0", 1, 1, 100),
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 2)],
        vec![pqueue("queue0", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["q/running_job1"]), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, cases "1 whole
/// gpu job running, 1 pending interactive shared gpu job - allocate" and "1 shared gpu
/// interactive job running, 1 pending whole gpu job - allocate": on a 2-GPU node, a half-GPU
/// share starts on the GPU a whole-GPU job leaves free, and a whole-GPU job starts on the GPU
/// a half-GPU share leaves untouched (never on the half-used one).
#[test]
fn kai_shares_and_whole_gpus_side_by_side() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        vec![
            on_places(
                pjob("q/running_job0", "queue0", 1, 1, TRAIN),
                &[("node0", &[0])],
                false,
            ),
            share_job("q/pending_shared_gpu_job1", "queue0", 1, 500),
        ],
    ));
    let a = d.admission("q/pending_shared_gpu_job1").expect("starts");
    assert_eq!(a.placement[0].gpus, vec![GpuIndex(1)], "{a:?}");

    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        vec![
            on_places(
                share_job("q/running_shared_gpu_job0", "queue0", 1, 500),
                &[("node0", &[1])],
                false,
            ),
            pjob("q/pending_whole_gpu_job1", "queue0", 1, 1, TRAIN),
        ],
    ));
    let a = d.admission("q/pending_whole_gpu_job1").expect("starts");
    assert_eq!(a.placement[0].gpus, vec![GpuIndex(0)], "{a:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, both cases
/// "Allow allocation of fractional training when over quota with fractional jobs": the queue
/// deserves 1 GPU and already uses it (two 0.5 shares on GPU 0, or one whole GPU 0); a 0.5
/// train share still starts, over quota, on GPU 1. Which of the queue's jobs is the one over
/// quota follows priority in kubetrain, at once: beside the build job (priority 100) the
/// train share is; beside the two shares of priority 0 it is within the guarantee and one
/// of them is demoted, as KAI would reclaim the least important first.
#[test]
fn kai_fractional_job_over_quota_borrows() {
    for (over_quota, running) in [
        (
            false,
            vec![
                on_places(
                    share_job("q/running_job0", "queue0", 1, 500),
                    &[("node0", &[0])],
                    false,
                ),
                on_places(
                    share_job("q/running_job1", "queue0", 1, 500),
                    &[("node0", &[0])],
                    false,
                ),
            ],
        ),
        (
            true,
            vec![on_places(
                pjob("q/running_job0", "queue0", 1, 1, BUILD),
                &[("node0", &[0])],
                false,
            )],
        ),
    ] {
        let mut jobs = running;
        let mut pending = share_job("q/pending_job0", "queue0", 1, 500);
        pending.priority = TRAIN;
        jobs.push(pending);
        let d = schedule(&snapshot(
            NOW,
            vec![node("node0", "A100", 2, None)],
            vec![vc("queue0", "A100", 1)],
            vec![queue("queue0", "queue0")],
            jobs,
        ));
        let a = d.admission("q/pending_job0").expect("borrows");
        assert_eq!(a.bonus, over_quota, "{a:?}");
        assert_eq!(d.demotions.len(), usize::from(!over_quota), "{d:?}");
        assert_eq!(a.placement[0].gpus, vec![GpuIndex(1)], "{a:?}");
    }
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, cases "allocate
/// job with multiple pods but does not allow it because department to go over allowance" and
/// "... because project goes over allowance": a gang of three 0.5 shares (1.5 GPUs) on an
/// idle 4-GPU node, its department (here the VirtualCluster, the project being its queue
/// with the default `maxShare` of 100 % of the VC's limit) capped at 1 GPU. It starts no
/// replica and waits, larger than the limit itself (`ExceedsLimit`).
#[test]
fn kai_fractional_gang_over_the_department_limit_waits() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![limited(vc("department-a", "A100", 1), 1)],
        vec![queue("queue0", "department-a")],
        vec![share_job("q/pending_job0", "queue0", 3, 500)],
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "q/pending_job0", "ExceedsLimit"), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go, case "Pipeline
/// fractional interactive gpu task when a task is evicting - dont allocate a new gpu": on a
/// 2-GPU node, GPU 0 holds a running 0.5 share and a 0.5 share that is leaving; KAI
/// pipelines the pending 0.5 share onto GPU 0 (it waits for the leaving share) and keeps
/// GPU 1 whole. Deliberate difference: kubetrain places a job on free capacity only, and waits
/// for capacity being released only when it planned the release itself (a reclaim's
/// reserved room; `sched` module docs, steps 1 and 3): the share starts at once on GPU 1.
#[test]
fn kai_share_does_not_wait_for_a_leaving_share_differs() {
    let mut leaving = on_places(
        share_job("q/releasing_job0", "queue0", 1, 500),
        &[("node0", &[0])],
        false,
    );
    leaving.running.as_mut().expect("running").preempting = true;
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        vec![
            on_places(
                share_job("q/running_job0", "queue0", 1, 500),
                &[("node0", &[0])],
                false,
            ),
            leaving,
            share_job("q/pending_job0", "queue0", 1, 500),
        ],
    ));
    let a = d.admission("q/pending_job0").expect("starts now");
    assert_eq!(a.placement[0].gpus, vec![GpuIndex(1)], "{a:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
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
