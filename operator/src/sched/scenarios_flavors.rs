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
