//! GPU types (Kueue's ResourceFlavors): a job's type order, falling back to the next type,
//! preferring borrowing or preemption on one type over the other, and victims only on the
//! type the job will use.
//!
//! Each test names the peer, file and case it came from; the peers' sources and what was not
//! ported are in the module docs of `sched::cases`.

use super::*;

/// Kueue's `eng` cohort with two flavors: `alpha` is guaranteed 10 on-demand and 20 spot,
/// `beta` 10 on-demand; 20 GPUs of each type.
fn two_type_cohort(beta_on_demand: u32, job: Job) -> Decisions {
    let mut jobs = vec![job];
    if beta_on_demand > 0 {
        jobs.push(running(
            "beta/existing",
            "qb",
            &[("od0", 0, beta_on_demand)],
            false,
        ));
    }
    schedule(&snapshot(
        NOW,
        vec![
            node("od0", "on-demand", 10, None),
            node("od1", "on-demand", 10, None),
            node("sp0", "spot", 10, None),
            node("sp1", "spot", 10, None),
        ],
        vec![
            vc_types("alpha", &[("on-demand", 10), ("spot", 20)]),
            vc_types("beta", &[("on-demand", 10)]),
        ],
        vec![queue("qa", "alpha"), queue("qb", "beta")],
        jobs,
    ))
}

/// The world of Kueue's `PreemptionOverBorrowing` / `BorrowingOverPreemption` cases: a team
/// owed 5 `on-demand` (no borrowing) and nothing of `spot` (it may borrow 5), whose
/// priority -1 job fills `on-demand`; a lender owed 5 `spot`, idle. A priority-0 job of 5 GPUs
/// accepting `on-demand` then `spot` arrives.
fn pob_world() -> Decisions {
    schedule(&snapshot(
        NOW,
        vec![
            node("on-demand-0", "on-demand", 5, None),
            node("spot-0", "spot", 5, None),
        ],
        vec![
            limited(vc_types("pob-cq", &[("on-demand", 5)]), 10),
            vc_types("pob-lender", &[("spot", 5)]),
        ],
        vec![pqueue("pob-queue", "pob-cq"), queue("lender", "pob-lender")],
        vec![
            on_places(
                typed(
                    pjob("default/low", "pob-queue", 1, 5, -1),
                    &["on-demand", "spot"],
                ),
                &[("on-demand-0", &[0, 1, 2, 3, 4])],
                false,
            ),
            typed(
                pjob("default/high", "pob-queue", 1, 5, 0),
                &["on-demand", "spot"],
            ),
        ],
    ))
}

/// Kueue pkg/scheduler/scheduler_test.go, case "cannot borrow resource not listed in
/// clusterQueue": Kueue refuses a workload for a resource its ClusterQueue has no quota of.
/// Deliberate difference: in kubetrain any tenant borrows idle GPUs of any type, first the
/// GPUs nobody is guaranteed (docs/concepts.md, "lent"; `sched` module docs, step 4), so a
/// team guaranteed only A100 runs an H100 job as bonus on idle H100s.
#[test]
fn kueue_borrows_a_gpu_type_not_in_the_guarantee_differs() {
    let mut j = ones("alpha/h100", "qa", 1, 0);
    j.gpu_types = types(&["H100"]);
    let d = schedule(&snapshot(
        NOW,
        vec![node("a0", "A100", 4, None), node("h0", "H100", 4, None)],
        vec![vc("alpha", "A100", 4)],
        vec![queue("qa", "alpha")],
        vec![j],
    ));
    let a = d.admission("alpha/h100").expect("admitted as bonus");
    assert_eq!(a.flavor, Flavor::new("H100"));
    assert!(a.bonus);
}

/// Kueue pkg/scheduler/scheduler_test.go, case "not enough resources to borrow, fallback to
/// next flavor; WhenCanPreempt: TryNextFlavor": a job too large for its guarantee of the first
/// type, with too few idle GPUs of that type to borrow, runs within its guarantee of the
/// second type.
#[test]
fn kueue_not_enough_to_borrow_falls_back_to_the_next_type() {
    let mut j = ones("alpha/new", "qa", 12, 0);
    j.gpu_types = types(&["on-demand", "spot"]);
    let d = two_type_cohort(9, j);
    let a = d.admission("alpha/new").expect("admitted");
    assert_eq!(a.flavor, Flavor::new("spot"), "{d:?}");
    assert!(!a.bonus);
    assert!(d.preemptions.is_empty());
}

/// Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go, case "borrow try next flavor,
/// found the second flavor" (WhenCanBorrow: TryNextFlavor): a job that could borrow idle GPUs
/// of its first type instead runs within its guarantee of the second. kubetrain always
/// behaves so (the guaranteed phase tries every listed type within the guarantee before the
/// bonus phase borrows, `sched` module docs, steps 3 and 4); Kueue's default
/// (WhenCanBorrow: MayStopSearch, case "borrow before try next flavor") borrows on the
/// first type instead.
#[test]
fn kueue_borrow_try_next_flavor_found_the_second_flavor() {
    let mut j = ones("alpha/new", "qa", 12, 0);
    j.gpu_types = types(&["on-demand", "spot"]);
    // 20 on-demand GPUs idle: borrowing 2 on the first type would fit
    let d = two_type_cohort(0, j);
    let a = d.admission("alpha/new").expect("admitted");
    assert_eq!(a.flavor, Flavor::new("spot"), "{d:?}");
    assert!(!a.bonus);
}

/// Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go, case "borrow try next flavor,
/// found the first flavor": when the second type cannot hold the job at all, the job borrows
/// on the first, within the team's borrowing limit (here the VC limit).
#[test]
fn kueue_borrow_try_next_flavor_found_the_first_flavor() {
    let mut t = vc_types("t", &[("one", 10), ("two", 1)]);
    t.limit_gpus = Some(12);
    let mut j = ones("t/new", "q", 9, 0);
    j.gpu_types = types(&["one", "two"]);
    let d = schedule(&snapshot(
        NOW,
        vec![node("o0", "one", 11, None), node("w0", "two", 1, None)],
        vec![t, vc("secondary", "one", 1)],
        vec![queue("q", "t"), queue("qs", "secondary")],
        vec![running("t/used", "q", &[("o0", 0, 2)], false), j],
    ));
    let a = d.admission("t/new").expect("admitted");
    assert_eq!(a.flavor, Flavor::new("one"), "{d:?}");
    assert!(a.bonus, "9 more on top of 2 is beyond the guarantee of 10");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "can borrow if needs reclaim from cohort in
/// different flavor" (divided by ten): `eng-alpha` is owed 5 `on-demand` and 10 `spot`,
/// `eng-beta` 5 `on-demand` and no `spot`. Beta runs 5 `on-demand` (its own) and 1 `spot`
/// (borrowed). Alpha's 10-GPU job fits neither type without taking beta's spot GPU back;
/// beta's new 1-GPU job still borrows an idle `on-demand` GPU of alpha's. Kueue's alpha does
/// not reclaim (`reclaimWithinCohort: Never`), so its job just waits. Deliberate difference:
/// a guarantee is always obtainable within the borrowers' grace period (docs/concepts.md,
/// VirtualCluster, "Guarantee"), so alpha's job reclaims beta's borrowed `spot` job and waits
/// for it; beta's borrowing on the other type goes ahead all the same.
#[test]
fn kueue_borrow_while_another_team_reclaims_on_the_other_type_differs() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("on-demand-0", "on-demand", 10, None),
            node("spot-0", "spot", 10, None),
        ],
        vec![
            limited(vc_types("eng-alpha", &[("on-demand", 5), ("spot", 10)]), 20),
            vc_types("eng-beta", &[("on-demand", 5)]),
        ],
        vec![
            pqueue("eng-alpha", "eng-alpha"),
            pqueue("eng-beta", "eng-beta"),
        ],
        vec![
            queued(
                typed(
                    job("eng-alpha/can-reclaim", "eng-alpha", 10, 1),
                    &["on-demand", "spot"],
                ),
                1,
            ),
            queued(
                typed(
                    job("eng-beta/needs-to-borrow", "eng-beta", 1, 1),
                    &["on-demand", "spot"],
                ),
                2,
            ),
            on_places(
                job("eng-beta/user-on-demand", "eng-beta", 5, 1),
                &[
                    ("on-demand-0", &[0]),
                    ("on-demand-0", &[1]),
                    ("on-demand-0", &[2]),
                    ("on-demand-0", &[3]),
                    ("on-demand-0", &[4]),
                ],
                false,
            ),
            on_places(
                job("eng-beta/user-spot", "eng-beta", 1, 1),
                &[("spot-0", &[0])],
                true,
            ),
        ],
    ));
    let a = d
        .admission("eng-beta/needs-to-borrow")
        .expect("beta borrows");
    assert!(a.bonus && a.flavor == Flavor::new("on-demand"), "{a:?}");
    assert_eq!(victims(&d), strings(&["eng-beta/user-spot"]), "{d:?}");
    assert_eq!(
        reason_of(&d, "eng-beta/user-spot"),
        Some(PreemptionReason::Reclaim)
    );
    assert!(
        waits_with(&d, "eng-alpha/can-reclaim", "WaitingForPreemption"),
        "{d:?}"
    );
}

/// Kueue pkg/scheduler/scheduler_test.go, case "use second flavor when the first has no
/// preemption candidates; WhenCanPreempt: MayStopSearch" (divided by ten): `other-alpha`, no
/// cohort, is owed 5 `on-demand` and 10 `spot`; its 5-GPU job fills `on-demand`. A new 2-GPU
/// job of the same priority finds no lower-priority job to preempt there and starts on `spot`.
#[test]
fn kueue_second_type_when_the_first_has_no_preemption_candidates() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("on-demand-0", "on-demand", 5, None),
            node("spot-0", "spot", 10, None),
        ],
        vec![limited(
            vc_types("other-alpha", &[("on-demand", 5), ("spot", 10)]),
            15,
        )],
        vec![pqueue("other", "other-alpha")],
        vec![
            on_places(
                typed(
                    job("eng-alpha/admitted", "other", 1, 5),
                    &["on-demand", "spot"],
                ),
                &[("on-demand-0", &[0, 1, 2, 3, 4])],
                false,
            ),
            typed(job("eng-alpha/new", "other", 1, 2), &["on-demand", "spot"]),
        ],
    ));
    let a = d.admission("eng-alpha/new").expect("starts");
    assert_eq!(a.flavor, Flavor::new("spot"), "{a:?}");
    assert!(!a.bonus, "{a:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "admit to second flavor when first needs
/// preemption; WhenCanPreempt: TryNextFlavor", and flavorassigner_test.go, case "preempt try
/// next flavor" (default fungibility): a team owed 1 `on-demand` and 1 `spot` runs a
/// priority-50 job on `on-demand`; its priority-100 job could preempt it, but `spot` is free,
/// so it starts there and preempts nobody. (Kueue's `WhenCanPreempt: MayStopSearch`, which
/// would preempt on the first type, is a knob kubetrain does not have: priority preemption
/// is tried only for jobs that start nowhere, `sched` module docs, step 5.)
#[test]
fn kueue_second_type_before_preempting_on_the_first() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("on-demand-0", "on-demand", 1, None),
            node("spot-0", "spot", 1, None),
        ],
        vec![limited(
            vc_types("preempt-attempts-cq", &[("on-demand", 1), ("spot", 1)]),
            2,
        )],
        vec![pqueue("lq", "preempt-attempts-cq")],
        vec![
            on_places(
                typed(
                    pjob("eng-alpha/blocker", "lq", 1, 1, 50),
                    &["on-demand", "spot"],
                ),
                &[("on-demand-0", &[0])],
                false,
            ),
            typed(
                pjob("eng-alpha/test-wl", "lq", 1, 1, 100),
                &["on-demand", "spot"],
            ),
        ],
    ));
    let a = d.admission("eng-alpha/test-wl").expect("starts");
    assert_eq!(a.flavor, Flavor::new("spot"), "{a:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "don't assign flavor if there are no candidates
/// for preemption": cq1 is owed nothing (it may borrow 1 `on-demand` and 1 `spot`); cq2 is
/// owed 1 of each and runs a priority-0 job on its `on-demand` GPU. cq1's priority-100 job
/// cannot take that GPU (it is within cq2's guarantee, and of another team), so it borrows
/// the idle `spot` GPU.
#[test]
fn kueue_no_type_where_nothing_can_be_preempted() {
    let d = schedule(&snapshot(
        NOW,
        vec![
            node("on-demand-0", "on-demand", 1, None),
            node("spot-0", "spot", 1, None),
        ],
        vec![
            limited(vc("cq1", "on-demand", 0), 2),
            vc_types("cq2", &[("on-demand", 1), ("spot", 1)]),
        ],
        vec![pqueue("lq1", "cq1"), queue("lq2", "cq2")],
        vec![
            on_places(
                typed(
                    pjob("eng-alpha/admitted", "lq2", 1, 1, 0),
                    &["on-demand", "spot"],
                ),
                &[("on-demand-0", &[0])],
                false,
            ),
            typed(
                pjob("eng-alpha/new", "lq1", 1, 1, 100),
                &["on-demand", "spot"],
            ),
        ],
    ));
    let a = d.admission("eng-alpha/new").expect("borrows spot");
    assert!(a.bonus && a.flavor == Flavor::new("spot"), "{a:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "BorrowingOverPreemption preference: borrow in
/// second flavor instead of preempting in first": the priority-0 job borrows the lender's
/// idle `spot` GPUs rather than preempting its own team's priority -1 job.
#[test]
fn kueue_borrow_in_the_second_type_over_preempting_in_the_first() {
    let d = pob_world();
    let a = d.admission("default/high").expect("borrows spot");
    assert!(a.bonus && a.flavor == Flavor::new("spot"), "{a:?}");
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/scheduler_test.go, case "PreemptionOverBorrowing preference: preempt in
/// first flavor instead of borrowing in second": the same world, with the ClusterQueue's
/// preference set to preempt its own priority -1 job on `on-demand` rather than borrow.
/// Deliberate difference: kubetrain has no such preference; jobs that find no room within the
/// guarantee borrow idle GPUs first (bonus phase), and priority preemption is only for jobs
/// still waiting after it (`sched` module docs, steps 4 and 5). So the job borrows `spot`.
#[test]
fn kueue_preemption_over_borrowing_preference_differs() {
    let d = pob_world();
    assert_eq!(
        d.admission("default/high").expect("borrows").flavor,
        Flavor::new("spot")
    );
    assert!(d.preemptions.is_empty(), "{d:?}");
}

/// Kueue pkg/scheduler/preemption/preemption_test.go, case "only preempt workloads using the
/// chosen flavor": a team guaranteed 3 GPUs of each of two types; the higher-priority job
/// asks for the second type, so only the lower-priority job on that type is preempted, never
/// the lowest-priority job, which runs on the other type and would free nothing useful.
#[test]
fn kueue_only_preempt_workloads_using_the_chosen_flavor() {
    let jobs = vec![
        on("t/low", "q", -1, "a0", &[0, 1], false),
        on("t/mid", "q", 0, "b0", &[0], false),
        on("t/high", "q", 1, "b0", &[1], false),
        typed(pjob("t/in", "q", 1, 2, 1), &["beta"]),
    ];
    let d = schedule(&snapshot(
        NOW,
        vec![node("a0", "alpha", 3, None), node("b0", "beta", 3, None)],
        vec![vc_types("t", &[("alpha", 3), ("beta", 3)])],
        vec![pqueue("q", "t")],
        jobs,
    ));
    assert_eq!(victims(&d), strings(&["t/mid"]), "{d:?}");
    assert_eq!(reason_of(&d, "t/mid"), Some(PreemptionReason::Priority));
}

/// Kueue pkg/scheduler/scheduler_test.go, case "prefer first preemption flavor when second
/// flavor requires both reclaim and cq priority preemption": a 6-GPU job of alpha needs one
/// own job preempted on on-demand, or its own job and beta's borrower on spot: the first
/// type, one victim.
#[test]
fn kueue_prefer_first_preemption_flavor_when_second_needs_reclaim_too() {
    let (snap, d) = two_types(vec![
        on("alpha/a1", "qa", 50, "od0", &[0, 1, 2, 3, 4], false),
        on("alpha/a2", "qa", 50, "sp0", &[0, 1, 2, 3, 4], false),
        on("beta/b1", "qb", 50, "sp0", &[5, 6, 7, 8, 9], true),
        typed(
            pjob("alpha/preemptor", "qa", 1, 6, 100),
            &["on-demand", "spot"],
        ),
    ]);
    assert_eq!(victims(&d), strings(&["alpha/a1"]), "{d:?}");
    assert_eq!(flavor_of_victims(&d, &snap), strings(&["on-demand"]));
}

/// Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go, TestReclaimBeforePriorityPreemption,
/// case "Select first flavor where priority based preemption is possible": the team's own
/// lower-priority jobs hold one GPU of each type, losing the same work; Kueue preempts on the
/// ClusterQueue's first flavor. kubetrain's list of types is a set (issue 56): the tie goes
/// to the cluster's order of the types (`due` first by name), whatever order the job lists
/// them in.
#[test]
fn kueue_priority_preemption_on_the_first_type_in_the_clusters_order() {
    let (mut snap, d) = uno_due_tre(
        vec![
            on("t/own-uno", "qt", -1, "u0", &[0], false),
            on("t/own-due", "qt", -1, "d0", &[0], false),
            on("t/own-tre", "qt", -1, "t0", &[0], false),
        ],
        0,
    );
    assert_eq!(victims(&d), strings(&["t/own-due"]), "{d:?}");
    assert_eq!(flavor_of_victims(&d, &snap), strings(&["due"]));
    for j in snap.jobs.iter_mut().filter(|j| j.id == "t/in") {
        j.gpu_types.reverse();
    }
    assert_eq!(schedule(&snap), d);
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
