//! Scenario tests for jobs that accept several GPU types (issue 56): the list is a set, the
//! job goes where it fits best among all its types, and it counts against the guarantee of
//! the type it runs on.

use super::fixtures::*;
use super::*;

fn types(names: &[&str]) -> Vec<Flavor> {
    names.iter().map(|n| Flavor::new(*n)).collect()
}

/// A team guaranteed GPUs of both types.
fn both(a100: u32, h100: u32) -> VirtualCluster {
    let mut t = vc("t", "A100", a100);
    t.guarantee.push(FlavorGuarantee {
        flavor: Flavor::new("H100"),
        gpus: h100,
        cells: vec![],
    });
    t
}

/// An A100 node with 2 GPUs left and an empty H100 node; a 2-GPU job that accepts either.
fn a100_nearly_full(listed: &[&str]) -> Snapshot {
    let mut j = job("t/flex", "q", 1, 2);
    j.gpu_types = types(listed);
    snapshot(
        0,
        vec![node("a", "A100", 8, None), node("h", "H100", 8, None)],
        vec![both(8, 8)],
        vec![queue("q", "t")],
        vec![
            run(
                job("t/six", "q", 1, 6),
                &[("a", &[0, 1, 2, 3, 4, 5])],
                false,
                0,
                None,
            ),
            j,
        ],
    )
}

/// Whichever order a user writes the types a job accepts in, the job goes to the same
/// place: the best fit among all of them (the last two A100 GPUs), not the first type
/// listed (which would break the whole H100 node that a 6-GPU job could still use).
#[test]
fn the_order_of_listed_gpu_types_never_changes_the_placement() {
    let written = schedule(&a100_nearly_full(&["H100", "A100"]));
    let a = written.admission("t/flex").expect("admitted");
    assert_eq!(a.flavor, Flavor::new("A100"), "{written:?}");
    assert_eq!(nodes_of(&written, "t/flex"), vec!["a".to_string()]);
    let reversed = schedule(&a100_nearly_full(&["A100", "H100"]));
    assert_eq!(written, reversed);
}

/// Quotas are per type and unchanged: a job that accepts several types counts against its
/// team's guarantee of the type it is placed on, and only that one.
#[test]
fn a_flexible_job_counts_against_the_guarantee_of_the_type_it_runs_on() {
    let mut s = a100_nearly_full(&["H100", "A100"]);
    let d = schedule(&s);
    let a = d.admission("t/flex").expect("admitted").clone();
    assert!(!a.bonus, "within the A100 guarantee: {d:?}");
    // the next cycle, with the job running
    let flex = s.jobs.iter_mut().find(|j| j.id == "t/flex").expect("job");
    *flex = run_admitted(flex.clone(), &a, 0);
    let team = schedule(&s).usage.virtual_clusters["t"].clone();
    assert_eq!(team.flavors[&Flavor::new("A100")].in_use_milli, 8000);
    assert_eq!(team.flavors[&Flavor::new("A100")].bonus_milli, 0);
    assert_eq!(team.flavors[&Flavor::new("H100")].in_use_milli, 0);
}

/// One node of a scarce type (V100) and two of a common one (T4). Waiting, in this order: a
/// job that runs on either, then one that runs only on V100 and one that runs only on T4,
/// each asking a whole node. Both types are as good a fit for the first job (a whole node
/// either way, each type the only one for one of the other jobs), but the rest of the
/// workload asks more of each V100 GPU than of each T4 GPU: the flexible job takes a T4 node
/// and leaves the V100 node to the job that can run nowhere else. All three start.
#[test]
fn a_flexible_job_leaves_the_scarce_type_to_the_job_that_needs_it() {
    let t = VirtualCluster {
        guarantee: ["V100", "T4"]
            .into_iter()
            .map(|f| FlavorGuarantee {
                flavor: Flavor::new(f),
                gpus: 16,
                cells: vec![],
            })
            .collect(),
        ..vc("t", "V100", 0)
    };
    let listed = |id: &str, at: i64, names: &[&str]| {
        let mut j = job(id, "q", 1, 8);
        j.gpu_types = types(names);
        j.queued_at = at;
        j
    };
    for written in [["V100", "T4"], ["T4", "V100"]] {
        let d = schedule(&snapshot(
            0,
            // the V100 node first in the cluster's order: a tie would take it
            vec![
                node("a-v100", "V100", 8, None),
                node("b-t4", "T4", 8, None),
                node("c-t4", "T4", 8, None),
            ],
            vec![t.clone()],
            vec![queue("q", "t")],
            vec![
                listed("t/flex", 0, &written),
                listed("t/v100-only", 1, &["V100"]),
                listed("t/t4-only", 2, &["T4"]),
            ],
        ));
        let flavor = |j: &str| d.admission(j).map(|a| a.flavor.to_string());
        assert_eq!(flavor("t/flex").as_deref(), Some("T4"), "{d:?}");
        assert_eq!(flavor("t/v100-only").as_deref(), Some("V100"), "{d:?}");
        assert_eq!(flavor("t/t4-only").as_deref(), Some("T4"), "{d:?}");
    }
}

/// The workload an administrator supplies for the two scenarios below: of the 1-GPU jobs,
/// half run only on T4 and half anywhere, and one job in nine asks a whole 8-GPU node.
fn t4_bound_workload() -> Vec<WorkloadShape> {
    let shape = |gpus: u32, names: &[&str], count: u64| WorkloadShape {
        gpus: GpuDemand::Whole(gpus),
        cpu_milli: 1000,
        memory_bytes: GIB,
        gpu_types: types(names),
        count,
    };
    vec![shape(1, &["T4"], 4), shape(1, &[], 4), shape(8, &[], 1)]
}

/// One T4 node of two GPUs, one of them taken by a T4-only job; two empty 8-GPU G2 nodes.
/// Waiting, in this order: a 1-GPU job that runs on either type (its types written in
/// `listed` order), then a 1-GPU job that runs only on T4.
fn last_t4_gpu(listed: &[&str]) -> Snapshot {
    let t = VirtualCluster {
        guarantee: ["T4", "G2"]
            .into_iter()
            .map(|f| FlavorGuarantee {
                flavor: Flavor::new(f),
                gpus: 18,
                cells: vec![],
            })
            .collect(),
        ..vc("t", "T4", 0)
    };
    let on = |id: &str, at: i64, names: &[&str]| {
        let mut j = job(id, "q", 1, 1);
        j.gpu_types = types(names);
        j.queued_at = at;
        j
    };
    let mut s = snapshot(
        0,
        vec![
            node("a-t4", "T4", 2, None),
            node("b-g2", "G2", 8, None),
            node("c-g2", "G2", 8, None),
        ],
        vec![t],
        vec![queue("q", "t")],
        vec![
            run(
                on("t/running", 0, &["T4"]),
                &[("a-t4", &[0])],
                false,
                0,
                None,
            ),
            on("t/flex", 1, listed),
            on("t/t4-only", 2, &["T4"]),
        ],
    );
    s.workload = t4_bound_workload();
    s
}

/// Scarcity outweighs a tighter fit. By fragmentation alone the flexible job fits best on the
/// last T4 GPU (it fills the T4 node, where breaking a G2 node leaves seven GPUs the 8-GPU
/// jobs cannot use). But the workload asks far more of each T4 GPU than of each G2 GPU (half
/// its 1-GPU jobs can run only on the two T4 GPUs), so taking a T4 GPU costs the flexible job
/// more than breaking a G2 node: it goes to G2, and the job that can run only on T4 starts on
/// the GPU left for it. Written either way round, the types place the same.
#[test]
fn a_flexible_job_leaves_the_last_scarce_gpu_to_the_job_bound_to_it() {
    let d = schedule(&last_t4_gpu(&["T4", "G2"]));
    let flavor = |j: &str| d.admission(j).map(|a| a.flavor.to_string());
    assert_eq!(flavor("t/flex").as_deref(), Some("G2"), "{d:?}");
    assert_eq!(nodes_of(&d, "t/t4-only"), vec!["a-t4".to_string()], "{d:?}");
    assert_eq!(d, schedule(&last_t4_gpu(&["G2", "T4"])));
}

/// Without jobs bound to a type, scarcity costs nothing: with the same workload but every
/// 1-GPU job accepting any type, the flexible job takes the last T4 GPU, its tightest fit.
#[test]
fn without_bound_jobs_the_tightest_fit_wins() {
    let mut s = last_t4_gpu(&["T4", "G2"]);
    for w in &mut s.workload {
        w.gpu_types.clear();
    }
    s.jobs.retain(|j| j.id != "t/t4-only");
    let d = schedule(&s);
    assert_eq!(nodes_of(&d, "t/flex"), vec!["a-t4".to_string()], "{d:?}");
}
