//! Gangs: a job's replicas start all together or not at all, across nodes if need be; a
//! gang reclaims or preempts only when it then fits whole and within its quota, and a gang
//! victim goes whole.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// A running gang of `places.len()` replicas, each of `places[i].1.len()` GPUs.
fn gang_on(id: &str, queue: &str, prio: i32, places: &[(&str, &[u32])], bonus: bool) -> Job {
    let per = places[0].1.len() as u32;
    run(
        pjob(id, queue, places.len() as u32, per, prio),
        places,
        bonus,
        0,
        CKPT,
    )
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, case "If can't allocate
/// all tasks, dont' reclaim": a gang that would still not fit once every reclaimable job is
/// gone evicts nobody. (A second 1-GPU node, held within another team's guarantee, keeps the
/// gang from being one that never fits this cluster.)
#[test]
fn kai_gang_does_not_reclaim_when_it_cannot_fit_whole() {
    let nodes = vec![
        node("node0", "A100", 1, None),
        node("node1", "A100", 1, None),
    ];
    let vcs = vec![
        vc("queue0", "A100", 0),
        vc("queue1", "A100", 2),
        vc("other", "A100", 1),
    ];
    let queues = vec![
        queue("queue0", "queue0"),
        queue("queue1", "queue1"),
        queue("other", "other"),
    ];
    let jobs = vec![
        run(
            job("q0/running_job0", "queue0", 1, 1),
            &[("node0", &[0])],
            true,
            0,
            CKPT,
        ),
        run(
            job("o/own", "other", 1, 1),
            &[("node1", &[0])],
            false,
            0,
            CKPT,
        ),
        job("q1/pending_job0", "queue1", 2, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("q1/pending_job0").is_none());
    assert!(d.waiting_reason("q1/pending_job0").is_some());
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, case "dont reclaim if
/// will go over quota": a gang larger than its team's guarantee reclaims nothing from a
/// borrower holding the whole node.
#[test]
fn kai_gang_does_not_reclaim_beyond_quota() {
    let nodes = vec![node("node0", "A100", 10, None)];
    let vcs = vec![vc("queue0", "A100", 0), vc("queue1", "A100", 2)];
    let queues = vec![queue("queue0", "queue0"), queue("queue1", "queue1")];
    let jobs = vec![
        run(
            job("q0/running_job0", "queue0", 1, 10),
            &[("node0", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9])],
            true,
            0,
            CKPT,
        ),
        job("q1/pending_job0", "queue1", 2, 2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(
        matches!(
            d.waiting_reason("q1/pending_job0"),
            Some(WaitReason::QuotaExhausted { .. })
        ),
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateGang_test.go, cases "Allocate train
/// gang job" and "Allocate build gang job on 2 nodes": a gang of two 1-GPU tasks starts whole
/// on a 2-GPU node although its queue deserves only 1 (it borrows the rest: bonus), and a gang
/// within its 2 deserved GPUs starts across two 1-GPU nodes.
#[test]
fn kai_gang_starts_whole_over_quota_and_across_nodes() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 1)],
        vec![queue("queue0", "queue0")],
        vec![pjob("q/pending_job0", "queue0", 2, 1, TRAIN)],
    ));
    let a = d.admission("q/pending_job0").expect("the gang starts");
    assert_eq!(a.placement.len(), 2, "{a:?}");
    assert!(a.bonus, "2 GPUs are beyond a guarantee of 1: {a:?}");

    let d = schedule(&snapshot(
        NOW,
        vec![
            node("node0", "A100", 1, None),
            node("node1", "A100", 1, None),
        ],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        vec![pjob("q/pending_job0", "queue0", 2, 1, BUILD)],
    ));
    assert!(!d.admission("q/pending_job0").expect("starts").bonus);
    assert_eq!(
        nodes_of(&d, "q/pending_job0"),
        strings(&["node0", "node1"]),
        "{d:?}"
    );
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateGang_test.go, case "Don't allocate
/// gang job if not all tasks are allocatable": two 2-GPU tasks on the only, 2-GPU, node. One
/// task would fit; the gang starts none, and preempts nobody.
#[test]
fn kai_gang_not_started_when_not_all_tasks_fit() {
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 2, None)],
        vec![vc("queue0", "A100", 2)],
        vec![queue("queue0", "queue0")],
        vec![pjob("q/pending_job0", "queue0", 2, 2, BUILD)],
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(waits_with(&d, "q/pending_job0", "NeverFits"), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocateGang_test.go, case "Pipeline if
/// resource aren't currently allocatable": a 1-GPU job of the queue is releasing its GPU on
/// a 4-GPU node; a gang of two 2-GPU tasks needs that GPU too. Nothing binds now (KAI
/// pipelines the gang onto the releasing GPU); the gang is placed whole once the GPU is free,
/// and the leaving job is not asked to leave again.
#[test]
fn kai_gang_waits_for_a_releasing_gpu() {
    let mut leaving = on_places(
        pjob("q/running_job0", "queue0", 1, 1, TRAIN),
        &[("node0", &[0])],
        false,
    );
    leaving.running.as_mut().expect("running").preempting = true;
    let d = schedule(&snapshot(
        NOW,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue0", "A100", 3)],
        vec![queue("queue0", "queue0")],
        vec![leaving, pjob("q/pending_job0", "queue0", 2, 2, TRAIN)],
    ));
    assert!(d.admission("q/pending_job0").is_none(), "{d:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");

    // The next cycle, the GPU released: the gang starts whole.
    let d = schedule(&snapshot(
        NOW + 60,
        vec![node("node0", "A100", 4, None)],
        vec![vc("queue0", "A100", 3)],
        vec![queue("queue0", "queue0")],
        vec![pjob("q/pending_job0", "queue0", 2, 2, TRAIN)],
    ));
    assert_eq!(
        d.admission("q/pending_job0")
            .expect("starts")
            .placement
            .len(),
        2
    );
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

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "queue1 is under
/// deserved quota, queue0 is over deserved quota and will go below quota - reclaim": queue0
/// (10 deserved) runs a gang of 2 × 10 GPUs over two 16-GPU nodes; queue1's 10-GPU job
/// within its guarantee reclaims the whole gang, although queue0 then holds nothing: a gang
/// beyond its team's guarantee is bonus as a whole.
#[test]
fn kai_gang_beyond_its_quota_is_reclaimed_whole() {
    let ten: Vec<u32> = (0..10).collect();
    let d = kai(
        vec![node("n0", "A100", 16, None), node("n1", "A100", 16, None)],
        10,
        10,
        vec![
            gang_on("q0/job", "q0", TRAIN, &[("n0", &ten), ("n1", &ten)], true),
            pjob("q1/in", "q1", 1, 10, TRAIN),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/job"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/job"), Some(PreemptionReason::Reclaim));
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaim_test.go, case "gang job fails to
/// allocate enough pods": four 1-GPU nodes borrowed by queue0; queue1's gang of 5 × 1 GPU
/// can never fit the cluster, so nothing is reclaimed.
#[test]
fn kai_gang_larger_than_the_cluster_reclaims_nothing() {
    let nodes: Vec<Node> = (0..4)
        .map(|i| node(&format!("n{i}"), "A100", 1, None))
        .collect();
    let mut jobs: Vec<Job> = (0..4)
        .map(|i| {
            on(
                &format!("q0/j{i}"),
                "q0",
                TRAIN,
                &format!("n{i}"),
                &[0],
                true,
            )
        })
        .collect();
    jobs.push(pjob("q1/gang", "q1", 5, 1, TRAIN));
    let d = kai(nodes, 0, 2, jobs);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q1/gang").is_none(), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/reclaim/reclaimGang_test.go, cases "job reclaims
/// from job on two nodes" (queue0, 1 deserved, runs a gang of 2 × 1 GPU over two 1-GPU
/// nodes; queue1, 1 deserved, asks for 1) and "reclaim mpi job" (queue0, none deserved, runs
/// 2 × 1 GPU on one 2-GPU node; queue1, 2 deserved, asks for 2 on one replica): the borrowing
/// gang is reclaimed whole, both replicas, as one victim.
#[test]
fn kai_reclaim_takes_a_borrowing_gang_whole() {
    let d = kai(
        vec![node("n0", "A100", 1, None), node("n1", "A100", 1, None)],
        1,
        1,
        vec![
            gang_on("q0/gang", "q0", TRAIN, &[("n0", &[0]), ("n1", &[0])], true),
            pjob("q1/in", "q1", 1, 1, TRAIN),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/gang"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/gang"), Some(PreemptionReason::Reclaim));

    let d = kai(
        vec![node("n0", "A100", 2, None)],
        0,
        2,
        vec![
            gang_on("q0/mpi", "q0", TRAIN, &[("n0", &[0]), ("n0", &[1])], true),
            pjob("q1/in", "q1", 1, 2, BUILD),
        ],
    );
    assert_eq!(victims(&d), strings(&["q0/mpi"]), "{d:?}");
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preemptGang_test.go, cases "Don't preempt if
/// not all tasks can be allocated" (one 1-GPU node) and "Preempt if all tasks can be
/// allocated" (one 2-GPU node): queue0 (2 deserved) runs a 1-GPU train job; its build gang
/// of 2 × 1 GPU preempts it only where the whole gang then fits.
#[test]
fn kai_gang_preempts_only_when_it_then_fits_whole() {
    let world = |gpus: u32| {
        kai(
            vec![node("n0", "A100", gpus, None)],
            2,
            0,
            vec![
                on("q0/train", "q0", TRAIN, "n0", &[0], false),
                pjob("q0/build", "q0", 2, 1, BUILD),
            ],
        )
    };
    let d = world(1);
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q0/build").is_none(), "{d:?}");
    let d = world(2);
    assert_eq!(victims(&d), strings(&["q0/train"]), "{d:?}");
    assert_eq!(reason_of(&d, "q0/train"), Some(PreemptionReason::Priority));
}

/// KAI-Scheduler pkg/scheduler/actions/preempt/preemptGang_test.go, case "don't preempt if
/// will go over quota": queue0 (3 deserved) runs a 1-GPU train job on a 4-GPU node; its
/// build gang of 2 × 2 GPUs would be beyond the guarantee and evicts nothing.
#[test]
fn kai_gang_does_not_preempt_beyond_its_quota() {
    let d = kai(
        vec![node("n0", "A100", 4, None)],
        3,
        0,
        vec![
            on("q0/train", "q0", TRAIN, "n0", &[0], false),
            pjob("q0/build", "q0", 2, 2, BUILD),
        ],
    );
    assert!(victims(&d).is_empty(), "{d:?}");
    assert!(d.admission("q0/build").is_none(), "{d:?}");
}

/// Volcano pkg/scheduler/actions/allocate/allocate_test.go, case "master's min member can
/// not be allocated, break from allocating": a gang whose master task needs two replicas on
/// the master node, where only one GPU is free, starts none of its replicas (and waits with
/// `NoFit`, within its guarantee), even though its workers would fit on the worker node.
#[test]
fn volcano_gang_starts_nothing_when_one_task_cannot_be_placed() {
    let mut m0 = node("m0", "A100", 2, None);
    m0.labels.insert("role".into(), "master".into());
    let mut w0 = node("w0", "A100", 3, None);
    w0.labels.insert("role".into(), "worker".into());
    let mut held = job("c1/other", "q", 1, 1);
    held.tasks[0]
        .constraints
        .node_selector
        .insert("role".into(), "master".into());
    let mut j = job("c1/pg1", "q", 2, 1);
    j.tasks[0].name = "master".into();
    j.tasks[0]
        .constraints
        .node_selector
        .insert("role".into(), "master".into());
    let mut worker = j.tasks[0].clone();
    worker.name = "worker".into();
    worker.constraints.node_selector = [("role".to_string(), "worker".to_string())]
        .into_iter()
        .collect();
    j.tasks.push(worker);
    let d = schedule(&snapshot(
        NOW,
        vec![m0, w0],
        vec![vc("c1", "A100", 5)],
        vec![queue("q", "c1")],
        vec![run(held, &[("m0", &[0])], false, 0, CKPT), j],
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    assert!(d.preemptions.is_empty());
    assert!(
        matches!(d.waiting_reason("c1/pg1"), Some(WaitReason::NoFit { .. })),
        "{d:?}"
    );
}
