//! A second set of peer schedulers' test cases, ported onto kubetrain's model: HiveD (VC
//! cells, buddy allocation, opportunistic jobs, stateful preemption, bad nodes), Volcano
//! (gang minMember, queues that do not block each other, hierarchical shares) and Kueue's
//! topology-aware scheduling (required and preferred rack and node levels). None overlaps
//! `peer_cases`.
//!
//! Mapping: a HiveD virtual cluster's cells are a VirtualCluster guarantee (with `cells`
//! where the case is about whole domains), an opportunistic (priority -1) HiveD job is a
//! bonus job, an affinity group is a gang (one job, every replica or none), a HiveD priority
//! is a job priority in a queue with priority preemption. A Volcano queue's deserved share is
//! a queue `share` (or a VirtualCluster guarantee across tenants), `minMember`/`minAvailable`
//! is every replica of a kubetrain job. A Kueue TAS `required`/`preferred` level is
//! `topology.required`/`preferred` (`kubernetes.io/hostname` is `Node`, the rack label is
//! `Rack`); a Kueue PodSet is a task. CPUs of the peers' cases are GPUs here.
//!
//! Where kubetrain decides differently on purpose (documented in `docs/` or the code), the
//! test asserts kubetrain's documented behaviour and says so (`_differs`).

use super::fixtures::*;
use super::*;

const NOW: i64 = 10_000;
/// Every running job of a case checkpointed here unless a case says otherwise.
const CKPT: Option<i64> = Some(NOW - 1000);

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

/// A guarantee of `gpus` GPUs of `flavor` of which `cells` whole domains of `level`.
fn cells_vc(
    name: &str,
    flavor: &str,
    gpus: u32,
    level: TopologyLevel,
    cells: u32,
) -> VirtualCluster {
    let mut v = vc(name, flavor, gpus);
    v.guarantee[0].cells = vec![CellGuarantee {
        level,
        count: cells,
    }];
    v
}

// ---------------------------------------------------------------------------------------
// HiveD
// ---------------------------------------------------------------------------------------

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

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldFail`, pod10 ("use a GPU
/// type that the VC does not have; should User Error Panic"). Deliberate difference for a type
/// the cluster has: kubetrain lends it as bonus (docs/concepts.md, "Guaranteed and bonus": a
/// guarantee is per GPU type, the rest is lent). A type no node of the cluster has can never
/// run, and the job waits with `NeverFits` (HiveD's user error).
#[test]
fn hived_gpu_type_the_vc_does_not_have() {
    let nodes = vec![node("p0", "P100", 8, None), node("v0", "V100", 8, None)];
    let vcs = vec![vc("vc2", "P100", 8), vc("vc1", "V100", 8)];
    let queues = vec![queue("q2", "vc2"), queue("q1", "vc1")];
    let mut lent = job("vc2/pod10", "q2", 1, 1);
    lent.gpu_types = vec![Flavor::new("V100")];
    let mut nowhere = job("vc2/pod10-h100", "q2", 1, 1);
    nowhere.gpu_types = vec![Flavor::new("H100")];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, vec![lent, nowhere]));
    let a = d.admission("vc2/pod10").expect("an idle V100 is lent");
    assert!(a.bonus, "{a:?}");
    assert_eq!(a.flavor, Flavor::new("V100"));
    assert!(
        matches!(
            d.waiting_reason("vc2/pod10-h100"),
            Some(WaitReason::NeverFits { .. })
        ),
        "{d:?}"
    );
}

/// HiveD pkg/algorithm/hived_algorithm_test.go, `testCasesThatShouldSucceed`, pod8 and pod9
/// ("any GPU type; heterogeneous affinity group", members of 7 and 5 GPUs): a gang of two
/// tasks of different sizes that accepts any GPU type is placed whole, on one type where both
/// tasks fit (not on the type whose nodes are too small for the 7-GPU replica).
#[test]
fn hived_heterogeneous_gang_any_type_lands_whole_on_one_type() {
    let mut nodes: Vec<Node> = (0..4)
        .map(|i| node(&format!("k{i}"), "K80", 4, None))
        .collect();
    nodes.push(node("a0", "A100", 8, None));
    nodes.push(node("a1", "A100", 8, None));
    let mut g = vc("vc2", "A100", 16);
    g.guarantee.push(FlavorGuarantee {
        flavor: Flavor::new("K80"),
        gpus: 16,
        cells: vec![],
    });
    let mut j = job("vc2/group9", "q", 1, 7);
    j.tasks.push(Task {
        name: "small".into(),
        replicas: 1,
        cpu_milli: 1000,
        memory_bytes: GIB,
        gpus: GpuDemand::Whole(5),
        ..Default::default()
    });
    let d = schedule(&snapshot(
        NOW,
        nodes,
        vec![g],
        vec![queue("q", "vc2")],
        vec![j],
    ));
    let a = d.admission("vc2/group9").expect("the gang fits on A100");
    assert_eq!(a.flavor, Flavor::new("A100"));
    assert!(!a.bonus);
    assert_eq!(a.placement.len(), 2);
    assert_eq!(nodes_of(&d, "vc2/group9"), ["a0", "a1"]);
    let big = a.placement.iter().find(|p| p.task == "worker").unwrap();
    let small = a.placement.iter().find(|p| p.task == "small").unwrap();
    assert_eq!(big.gpus.len(), 7);
    assert_eq!(small.gpus.len(), 5);
    assert_ne!(big.node, small.node);
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

/// HiveD pkg/algorithm/hived_algorithm_test.go, `expectedPreemptInfos`, pod16/pod17 preempt
/// pod5/pod6 ("trigger preemption"): a higher-priority 2-node gang of a VC with node cells
/// preempts the VC's lower-priority 2-node gang as a whole (both replicas, one victim job),
/// and never the other VC's guaranteed job.
#[test]
fn hived_higher_priority_gang_preempts_lower_priority_gang_in_the_vc() {
    let nodes = (0..3)
        .map(|i| node(&format!("n{i}"), "V100", 8, None))
        .collect();
    let vcs = vec![
        cells_vc("vc1", "V100", 16, TopologyLevel::Node, 2),
        vc("vc2", "V100", 8),
    ];
    let queues = vec![pqueue("q1", "vc1"), queue("q2", "vc2")];
    let all8: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
    let jobs = vec![
        run(
            pjob("vc1/group5", "q1", 2, 8, 1),
            &[("n0", all8), ("n1", all8)],
            false,
            0,
            CKPT,
        ),
        run(job("vc2/own", "q2", 1, 8), &[("n2", all8)], false, 0, CKPT),
        pjob("vc1/group11", "q1", 2, 8, 2),
    ];
    let d = schedule(&snapshot(NOW, nodes, vcs, queues, jobs));
    assert_eq!(d.preemptions.len(), 1, "{d:?}");
    assert_eq!(d.preemptions[0].reason, PreemptionReason::Priority);
    assert_eq!(victims(&d), strings(&["vc1/group5"]));
    assert!(matches!(
        d.waiting_reason("vc1/group11"),
        Some(WaitReason::WaitingForPreemption { .. })
    ));
}

/// `j` running on all of `node`'s 8 GPUs, already asked to leave for `beneficiary`.
fn leaving(j: Job, node: &str, beneficiary: &str) -> Job {
    let mut j = run(j, &[(node, &[0, 1, 2, 3, 4, 5, 6, 7])], false, 0, CKPT);
    let r = j.running.as_mut().unwrap();
    r.preempting = true;
    r.checkpoint_request = Some(CheckpointRequest {
        reason: PreemptionReason::Priority,
        beneficiary: Some(beneficiary.into()),
        withdrawable: true,
    });
    j
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

// ---------------------------------------------------------------------------------------
// Volcano
// ---------------------------------------------------------------------------------------

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

/// Volcano pkg/scheduler/plugins/drf/hdrf_test.go, case "rescaling test": queues root/sci
/// (weight 50) and root/eng (50) with eng/dev and eng/prod (50/50), each with ten 1-unit
/// jobs, on 10 units: sci gets half, and eng's half is split between dev and prod. Here the
/// weights are queue shares of one VirtualCluster's guarantee, with `eng` the parent of `dev`
/// and `prod` (Volcano's rescaling across CPU and memory has no GPU counterpart).
#[test]
fn volcano_hierarchical_shares_split_the_guarantee() {
    let mut sci = queue("sci", "t");
    sci.share = 50;
    let mut eng = queue("eng", "t");
    eng.share = 50;
    let mut dev = queue("dev", "t");
    dev.share = 50;
    dev.parent = Some("eng".into());
    let mut prod = queue("prod", "t");
    prod.share = 50;
    prod.parent = Some("eng".into());
    let mut jobs = Vec::new();
    for q in ["sci", "dev", "prod"] {
        for i in 0..10 {
            let mut j = job(&format!("t/{q}-{i}"), q, 1, 1);
            j.queued_at = i;
            jobs.push(j);
        }
    }
    let d = schedule(&snapshot(
        NOW,
        vec![node("n", "A100", 10, None)],
        vec![vc("t", "A100", 10)],
        vec![sci, eng, dev, prod],
        jobs,
    ));
    let count = |q: &str| {
        d.admissions
            .iter()
            .filter(|a| a.job.starts_with(&format!("t/{q}-")))
            .count()
    };
    assert_eq!(d.admissions.len(), 10, "{d:?}");
    assert_eq!(count("sci"), 5, "{:?}", d.admissions);
    assert_eq!(count("dev") + count("prod"), 5);
    assert!(
        count("dev").abs_diff(count("prod")) <= 1,
        "{:?}",
        d.admissions
    );
}

// ---------------------------------------------------------------------------------------
// Kueue topology-aware scheduling
// ---------------------------------------------------------------------------------------

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
