//! Topology and placement: HiveD cells and buddy packing, bad nodes, Kueue's topology-aware
//! scheduling (required and preferred racks and nodes), node packing, and preemption on
//! fragmented capacity.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// GPUs a job's admission takes on `node`, sorted.
fn gpus_on(d: &Decisions, job: &str, node: &str) -> Vec<u32> {
    let mut g: Vec<u32> = d
        .admission(job)
        .unwrap_or_else(|| panic!("{job} is not admitted: {d:?}"))
        .placement
        .iter()
        .filter(|p| p.node == node)
        .flat_map(|p| p.gpus.iter().map(|x| x.0))
        .collect();
    g.sort_unstable();
    g
}

/// A node with two NVLink groups of `half` GPUs each (0..half, half..2·half).
fn two_group_node(name: &str, flavor: &str, half: u32, rack: Option<&str>) -> Node {
    let mut n = node(name, flavor, 2 * half, rack);
    n.topology = Topology {
        groups: vec![
            GpuGroup {
                gpus: (0..half).map(GpuIndex).collect(),
                nvlink: true,
                numa_node: Some(0),
            },
            GpuGroup {
                gpus: (half..2 * half).map(GpuIndex).collect(),
                nvlink: true,
                numa_node: Some(1),
            },
        ],
    };
    n
}

/// Two racks of two 4-GPU nodes: rack r1 has 1 GPU free (7 held), rack r2 has 6 free.
fn two_racks() -> (Vec<Node>, Vec<Job>) {
    let nodes = vec![
        node("r1-n0", "A100", 4, Some("r1")),
        node("r1-n1", "A100", 4, Some("r1")),
        node("r2-n0", "A100", 4, Some("r2")),
        node("r2-n1", "A100", 4, Some("r2")),
    ];
    let held = vec![
        run(
            job("t/h1", "q", 1, 4),
            &[("r1-n0", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            job("t/h2", "q", 1, 3),
            &[("r1-n1", &[0, 1, 2])],
            false,
            0,
            CKPT,
        ),
        run(
            job("t/h3", "q", 1, 2),
            &[("r2-n1", &[0, 1])],
            false,
            0,
            CKPT,
        ),
    ];
    (nodes, held)
}

fn on_two_racks(incoming: Job) -> Decisions {
    let (nodes, mut jobs) = two_racks();
    jobs.push(incoming);
    schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 16)],
        vec![queue("q", "t")],
        jobs,
    ))
}

/// KAI-Scheduler pkg/scheduler/actions/allocate/allocate_test.go, case "1 job running on
/// node0, 3 pending jobs - allocate them according to their order": one queue (2 deserved)
/// runs 2 GPUs on node0; its jobs of 4, 2 and 2 GPUs wait in that order on two 4-GPU nodes.
/// The 4-GPU job gets the empty node1, the first 2-GPU job the rest of node0 (not half of
/// node1), and the last waits.
#[test]
fn kai_jobs_allocated_in_order_keep_the_whole_node_for_the_large_one() {
    let jobs = vec![
        on_node(
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
        on_node(job("q/running_job0", "queue0", 1, 1), "node1", &[0], false),
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

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldSucceed`, pod1, pod2
/// ("buddy of pod1") and pod3 ("non-buddy of pod 1 & 2"): two 1-GPU jobs of a VC go to the
/// same GPU group of one node (buddy cells), and an 8-GPU job of the same VC takes the other
/// whole group of that node (GPUs 8–15), so the second 16-GPU node stays whole.
#[test]
fn hived_buddy_cells_pack_small_jobs_and_keep_a_node_whole() {
    let nodes = vec![
        two_group_node("n0", "V100", 8, None),
        two_group_node("n1", "V100", 8, None),
    ];
    let mut p1 = job("vc1/pod1", "q", 1, 1);
    p1.queued_at = 1;
    let mut p2 = job("vc1/pod2", "q", 1, 1);
    p2.queued_at = 2;
    let mut p3 = job("vc1/pod3", "q", 1, 8);
    p3.queued_at = 3;
    p3.topology.required = Some(TopologyLevel::GpuGroup);
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("vc1", "V100", 32)],
        vec![queue("q", "vc1")],
        vec![p1, p2, p3],
    ));
    assert_eq!(d.admissions.len(), 3, "{d:?}");
    let n = nodes_of(&d, "vc1/pod1");
    assert_eq!(n.len(), 1);
    let n = &n[0];
    assert_eq!(
        nodes_of(&d, "vc1/pod2"),
        [n.as_str()],
        "buddies share a node"
    );
    assert_eq!(nodes_of(&d, "vc1/pod3"), [n.as_str()], "{d:?}");
    let small: Vec<u32> = [gpus_on(&d, "vc1/pod1", n), gpus_on(&d, "vc1/pod2", n)].concat();
    let big = gpus_on(&d, "vc1/pod3", n);
    let group_of = |g: u32| g / 8;
    assert_eq!(
        group_of(small[0]),
        group_of(small[1]),
        "the two 1-GPU jobs share a GPU group: {small:?}"
    );
    assert!(
        big.iter().all(|&g| group_of(g) != group_of(small[0])),
        "{big:?}"
    );
    assert_eq!(big.len(), 8);
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldSucceed`, pod4
/// ("opportunistic pod (will stay away from the guaranteed pods)"): HiveD puts an
/// opportunistic job on a node with no guaranteed work, so that the owner's next job does not
/// have to preempt it. Deliberate difference: kubetrain places a single-node job (bonus or
/// not) where it adds the least fragmentation for the workload's shapes (docs/concepts.md,
/// "Topology": nodes fill one after another, the rest stay whole for large jobs), so the bonus
/// job packs beside the guaranteed one and the second node stays whole; the cell and reclaim
/// rules, not placement, protect the owner.
#[test]
fn hived_opportunistic_job_packs_beside_guaranteed_work_differs() {
    let nodes = vec![node("n0", "V100", 8, None), node("n1", "V100", 8, None)];
    let vcs = vec![vc("vc1", "V100", 16), vc("opp", "V100", 0)];
    let queues = vec![queue("q1", "vc1"), queue("qo", "opp")];
    let jobs = vec![
        run(
            job("vc1/guaranteed", "q1", 1, 1),
            &[("n0", &[0])],
            false,
            0,
            CKPT,
        ),
        job("opp/pod4", "qo", 1, 1),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    let a = d.admission("opp/pod4").expect("idle GPUs are lent");
    assert!(a.bonus, "{a:?}");
    assert_eq!(nodes_of(&d, "opp/pod4"), ["n0"], "{d:?}");
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldSucceed`, pod7
/// ("insufficient VC cells; should return PodWaitInfo"): a guaranteed job larger than its VC's
/// cells waits in HiveD even though the cluster is idle. Deliberate difference: kubetrain
/// runs a job beyond its VirtualCluster's guarantee as bonus on idle GPUs (docs/concepts.md,
/// "Guaranteed and bonus"), preemptible by reclaim.
#[test]
fn hived_job_beyond_its_cells_runs_as_bonus_differs() {
    let nodes = (0..4)
        .map(|i| node(&format!("n{i}"), "P100", 8, None))
        .collect();
    let vcs = vec![
        cells_vc("vc2", "P100", 8, TopologyLevel::Node, 1),
        vc("vc1", "P100", 24),
    ];
    let queues = vec![queue("q2", "vc2"), queue("q1", "vc1")];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vcs,
        queues,
        vec![job("vc2/pod7", "q2", 3, 8)],
    ));
    let a = d.admission("vc2/pod7").expect("idle GPUs are lent");
    assert!(a.bonus, "24 GPUs are beyond a guarantee of 8: {a:?}");
    assert_eq!(nodes_of(&d, "vc2/pod7").len(), 3);
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldFail`, pod13 ("invalid
/// VC"): a job whose VirtualCluster does not exist is refused as invalid, with the reason,
/// and takes nothing; so is a job naming a queue that does not exist.
#[test]
fn hived_invalid_virtual_cluster_is_invalid() {
    let nodes = vec![node("n0", "P100", 8, None)];
    let queues = vec![queue("q2", "vc2"), queue("qs", "surprise!")];
    let jobs = vec![job("x/pod13", "qs", 1, 1), job("x/noqueue", "nope", 1, 1)];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("vc2", "P100", 8)],
        queues,
        jobs,
    ));
    assert!(d.admissions.is_empty(), "{d:?}");
    for id in ["x/pod13", "x/noqueue"] {
        assert!(
            matches!(d.waiting_reason(id), Some(WaitReason::Invalid { .. })),
            "{id}: {d:?}"
        );
    }
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testBadNodes` (pod42, pod43, "doomed bad
/// cell"): a bad node dooms a VC's free cells only when the healthy nodes no longer cover
/// every VC's cells. Here two VCs have one node cell each on three nodes: one node with a
/// bad GPU leaves both guarantees obtainable; a second bad node puts the cells at risk (the
/// GPU counts stay obtainable); once the nodes are healthy again nothing is at risk. Where
/// HiveD dooms one VC's cell, kubetrain tells both VCs that contend for the last clean node
/// (`risk`, as `an_owner_whose_gpus_go_unhealthy_is_told_its_guarantee_is_at_risk` shows).
#[test]
fn hived_bad_nodes_doom_cells_only_when_healthy_nodes_run_out() {
    let vcs = vec![
        cells_vc("vc1", "V100", 8, TopologyLevel::Node, 1),
        cells_vc("vc2", "V100", 8, TopologyLevel::Node, 1),
    ];
    let queues = vec![queue("q1", "vc1"), queue("q2", "vc2")];
    let cluster = |bad: &[usize]| {
        let mut nodes: Vec<Node> = (0..3)
            .map(|i| node(&format!("n{i}"), "V100", 8, None))
            .collect();
        for &b in bad {
            nodes[b].unhealthy_gpus = vec![GpuIndex(3)];
        }
        schedule(&snapshot(NOW, nodes, vcs.clone(), queues.clone(), vec![]))
    };
    let d = cluster(&[1]);
    assert_eq!(at_risk(&d, "vc1", "V100"), None, "{:?}", d.usage);
    assert_eq!(at_risk(&d, "vc2", "V100"), None, "{:?}", d.usage);

    // Two bad nodes: one healthy node for two node cells. Each VC is told its cell is at
    // risk (the one clean node goes to whoever claims it first, so neither can count on it),
    // while its 8 GPUs stay obtainable as a count.
    let d = cluster(&[1, 2]);
    for v in ["vc1", "vc2"] {
        let r = at_risk(&d, v, "V100").unwrap_or_else(|| panic!("{v}: {:?}", d.usage));
        assert_eq!(r.obtainable_gpus, 8, "{r:?}");
        assert_eq!(r.cells.len(), 1, "{r:?}");
        assert_eq!(r.cells[0].level, TopologyLevel::Node);
        assert_eq!(r.cells[0].usable, 1, "{r:?}");
        assert_eq!(r.cells[0].obtainable, 0, "{r:?}");
    }

    let d = cluster(&[]);
    assert_eq!(at_risk(&d, "vc1", "V100"), None);
    assert_eq!(at_risk(&d, "vc2", "V100"), None);
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testSafeRelaxedBuddyAlloc` (pod44, pod45,
/// "Cannot split higher level cells when requested level cell is bad"), and Kueue
/// pkg/scheduler/scheduler_tas_test.go, "workload with unhealthyNode annotation; second pass;
/// required rack; fit": when the node that would complete a rack has a bad GPU, a gang that
/// requires a rack goes whole to another rack, never onto the bad GPU, and a whole-node job
/// of a VC with a node cell skips the bad node too.
#[test]
fn hived_kueue_bad_node_sends_the_gang_to_a_healthy_rack() {
    let mut nodes = vec![
        node("r1-n0", "V100", 8, Some("r1")),
        node("r1-n1", "V100", 8, Some("r1")),
        node("r2-n0", "V100", 8, Some("r2")),
        node("r2-n1", "V100", 8, Some("r2")),
        node("r3-n0", "V100", 8, Some("r3")),
    ];
    nodes[1].unhealthy_gpus = vec![GpuIndex(5)];
    let mut gang = job("vc1/pod45", "q", 2, 8);
    gang.topology.required = Some(TopologyLevel::Rack);
    gang.queued_at = 1;
    let mut whole = job("vc1/pod44", "q", 1, 8);
    whole.queued_at = 2;
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![cells_vc("vc1", "V100", 40, TopologyLevel::Node, 1)],
        vec![queue("q", "vc1")],
        vec![gang, whole],
    ));
    assert_eq!(nodes_of(&d, "vc1/pod45"), ["r2-n0", "r2-n1"], "{d:?}");
    let n = nodes_of(&d, "vc1/pod44");
    assert_eq!(n.len(), 1);
    assert_ne!(n[0], "r1-n1", "{d:?}");
}

/// Kueue pkg/cache/scheduler/tas_cache_test.go, case "rack required; multiple Pods fit in
/// some racks; BestFit": a gang that requires one rack goes whole to the rack where it fits.
#[test]
fn kueue_tas_rack_required_fits_in_some_racks() {
    let mut j = job("t/in", "q", 3, 1);
    j.topology.required = Some(TopologyLevel::Rack);
    let d = on_two_racks(j);
    let n = nodes_of(&d, "t/in");
    assert!(n.iter().all(|x| x.starts_with("r2-")), "{n:?}");
}

/// Kueue pkg/cache/scheduler/tas_cache_test.go, case "rack required; too many pods to fit in
/// any rack; BestFit": 7 GPUs are free in all, but no rack has 7, so a gang of 7 that
/// requires one rack waits with `NoFit` naming the rack requirement.
#[test]
fn kueue_tas_rack_required_too_many_pods_to_fit_in_any_rack() {
    let mut j = job("t/in", "q", 7, 1);
    j.topology.required = Some(TopologyLevel::Rack);
    let d = on_two_racks(j);
    assert!(d.admission("t/in").is_none(), "{d:?}");
    match d.waiting_reason("t/in") {
        Some(WaitReason::NoFit {
            required,
            free_gpus,
            ..
        }) => {
            assert_eq!(*required, Some(TopologyLevel::Rack));
            assert_eq!(*free_gpus, 7);
        }
        r => panic!("NoFit expected: {r:?}"),
    }
}

/// Kueue pkg/cache/scheduler/tas_cache_test.go, case "rack preferred; but only block can
/// accommodate the workload; BestFit": a gang that only prefers a rack and fits in none
/// still starts, over both racks.
#[test]
fn kueue_tas_rack_preferred_spreads_when_no_rack_fits() {
    let mut j = job("t/in", "q", 7, 1);
    j.topology.preferred = Some(TopologyLevel::Rack);
    let d = on_two_racks(j);
    let n = nodes_of(&d, "t/in");
    assert!(n.iter().any(|x| x.starts_with("r1-")), "{n:?}");
    assert!(n.iter().any(|x| x.starts_with("r2-")), "{n:?}");
    assert_eq!(d.admission("t/in").unwrap().placement.len(), 7);
}

/// Kueue pkg/cache/scheduler/tas_cache_test.go, case "rack preferred; ...", the case where a
/// rack can hold the gang: a gang that prefers a rack and fits in one is kept in it, not
/// spread over the free GPUs of both racks.
#[test]
fn kueue_tas_rack_preferred_stays_in_one_rack_when_it_fits() {
    let mut j = job("t/in", "q", 5, 1);
    j.topology.preferred = Some(TopologyLevel::Rack);
    let d = on_two_racks(j);
    let n = nodes_of(&d, "t/in");
    assert!(n.iter().all(|x| x.starts_with("r2-")), "{n:?}");
}

/// Kueue pkg/scheduler/scheduler_tas_test.go, case "scheduling workload with multiple PodSets
/// requesting higher level topology": a launcher (1) and 15 workers (1 each) that require one
/// rack fill the rack's two 8-GPU nodes exactly, 8 replicas a node. In kubetrain the
/// requirement holds for the whole job (all its tasks), which is what the case checks.
#[test]
fn kueue_tas_two_tasks_requiring_a_rack_fill_it_exactly() {
    let nodes = vec![
        node("x1", "A100", 8, Some("r1")),
        node("y1", "A100", 8, Some("r1")),
    ];
    let mut j = job("t/foo", "q", 1, 1);
    j.tasks[0].name = "launcher".into();
    let mut worker = j.tasks[0].clone();
    worker.name = "worker".into();
    worker.replicas = 15;
    j.tasks.push(worker);
    j.topology.required = Some(TopologyLevel::Rack);
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 16)],
        vec![queue("q", "t")],
        vec![j],
    ));
    let a = d.admission("t/foo").expect("the rack holds the job");
    assert_eq!(a.placement.len(), 16);
    for n in ["x1", "y1"] {
        assert_eq!(
            a.placement.iter().filter(|p| p.node == n).count(),
            8,
            "{a:?}"
        );
    }
}

/// Kueue pkg/scheduler/scheduler_tas_test.go, case "low priority workload is preempted even
/// though there is enough capacity, but fragmented": two 5-GPU nodes each hold a 4-GPU job
/// (priorities 2 and 1) that lose the same work; a priority-3 gang of 2 × 1 GPU that requires
/// one node would fit the 2 free GPUs only split over the nodes, so the lower-priority job is
/// preempted, not the mid-priority one (docs/concepts.md, "Checkpoint-aware preemption":
/// least lost work, then the lowest priority). This case found that of two candidate nodes
/// whose victim sets lost as much work the first node in order won, whatever the victims'
/// priorities (`reclaim::plan`; now `reclaim::set_key` breaks the tie).
#[test]
fn kueue_tas_fragmented_capacity_preempts_the_low_priority_job() {
    let nodes = vec![node("x1", "A100", 5, None), node("y1", "A100", 5, None)];
    let mut foo = pjob("t/foo", "q", 2, 1, 3);
    foo.topology.required = Some(TopologyLevel::Node);
    let jobs = vec![
        run(
            pjob("t/mid-priority-admitted", "q", 1, 4, 2),
            &[("x1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("t/low-priority-admitted", "q", 1, 4, 1),
            &[("y1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        foo,
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 10)],
        vec![pqueue("q", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["t/low-priority-admitted"]), "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert!(d.admission("t/foo").is_none());
}

/// Kueue pkg/scheduler/scheduler_tas_test.go, case "workload with equal priority awaits for
/// other workloads to complete": the same fragmented cluster, with every job of equal
/// priority: nobody is preempted and the gang waits for room on one node.
#[test]
fn kueue_tas_equal_priority_waits_for_room() {
    let nodes = vec![node("x1", "A100", 5, None), node("y1", "A100", 5, None)];
    let mut foo = pjob("t/foo", "q", 2, 1, 1);
    foo.topology.required = Some(TopologyLevel::Node);
    let jobs = vec![
        run(
            pjob("t/a", "q", 1, 4, 1),
            &[("x1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        run(
            pjob("t/b", "q", 1, 4, 1),
            &[("y1", &[0, 1, 2, 3])],
            false,
            0,
            CKPT,
        ),
        foo,
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("t", "A100", 10)],
        vec![pqueue("q", "t")],
        jobs,
    ));
    assert!(d.preemptions.is_empty(), "{d:?}");
    assert!(d.admission("t/foo").is_none());
    assert!(
        matches!(
            d.waiting_reason("t/foo"),
            Some(WaitReason::NoFit {
                required: Some(TopologyLevel::Node),
                ..
            })
        ),
        "{d:?}"
    );
}

/// The Kueue case above ("low priority workload is preempted even though there is enough
/// capacity, but fragmented") mapped onto reclaim: two bonus jobs of another team on two
/// nodes lose the same work; the owner's 4-GPU job should take back the node of the
/// lower-priority one (docs/concepts.md, "Checkpoint-aware preemption"); it took the first
/// node's job, the higher-priority one, before `reclaim::set_key`.
#[test]
fn kueue_tas_fragmented_tie_in_a_reclaim_takes_the_low_priority_borrower() {
    let nodes = vec![node("x1", "A100", 4, None), node("y1", "A100", 4, None)];
    let jobs = vec![
        run(
            pjob("b/mid", "qb", 1, 4, 2),
            &[("x1", &[0, 1, 2, 3])],
            true,
            0,
            CKPT,
        ),
        run(
            pjob("b/low", "qb", 1, 4, 1),
            &[("y1", &[0, 1, 2, 3])],
            true,
            0,
            CKPT,
        ),
        job("a/in", "qa", 1, 4),
    ];
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![vc("a", "A100", 8), vc("b", "A100", 0)],
        vec![queue("qa", "a"), queue("qb", "b")],
        jobs,
    ));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Reclaim);
    assert_eq!(victims(&d), strings(&["b/low"]), "{d:?}");
}
