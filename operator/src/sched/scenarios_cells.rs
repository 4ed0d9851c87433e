//! Scenario tests of cell guarantees (`cells`), each the story of a team with whole
//! topology domains guaranteed: which of its jobs are bonus, and whether a job within its
//! cells can always start.

use super::fixtures::*;
use super::*;

/// `gpus` GPUs guaranteed to `name` on A100, `count` of them as whole node cells.
pub(super) fn node_cells(name: &str, gpus: u32, count: u32) -> VirtualCluster {
    let mut v = vc(name, "A100", gpus);
    v.guarantee[0].cells = vec![CellGuarantee {
        level: TopologyLevel::Node,
        count,
    }];
    v
}

/// Issue 49, story 1 (as HiveD's test configurations run): 4 nodes × 4 GPUs; vc1 is
/// guaranteed one node cell, `default` three. vc1's low-priority job runs guaranteed on n0;
/// its high-priority job then starts as bonus on another node (the guarantee is full). The
/// next cycle fills the guarantee by priority: the high-priority job is promoted and the
/// low-priority one demoted (its node no longer bound to vc1, so the promotion leaves three
/// clean nodes for `default`). When `default`'s 3-node gang arrives, its reclaim takes the
/// low-priority job, as it would with counts instead of cells.
#[test]
fn the_bonus_job_with_cells_is_the_least_important() {
    let nodes: Vec<Node> = (0..4)
        .map(|i| node(&format!("n{i}"), "A100", 4, None))
        .collect();
    let vcs = vec![node_cells("vc1", 4, 1), node_cells("default", 12, 3)];
    let queues = vec![queue("q1", "vc1"), queue("qd", "default")];
    let low = run(
        pjob("vc1/low", "q1", 1, 4, 1),
        &[("n0", &[0, 1, 2, 3])],
        false,
        0,
        None,
    );
    let d = schedule(&snapshot(
        100,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![low.clone(), pjob("vc1/high", "q1", 1, 4, 10)],
    ));
    let adm = d.admission("vc1/high").expect("high borrows a node");
    assert!(adm.bonus, "{d:?}");
    let high = run_admitted(pjob("vc1/high", "q1", 1, 4, 10), adm, 100);

    // the next cycle: the guarantee holds the high-priority job, the low one is bonus
    let d = schedule(&snapshot(
        200,
        nodes.clone(),
        vcs.clone(),
        queues.clone(),
        vec![low.clone(), high.clone()],
    ));
    assert_eq!(d.promotions, strings(&["vc1/high"]), "{d:?}");
    assert_eq!(d.demotions, strings(&["vc1/low"]), "{d:?}");

    // whether or not the change of standing was applied, default's gang takes the low job
    for (low, high) in [
        (low.clone(), high.clone()),
        (
            {
                let mut l = low.clone();
                l.running.as_mut().unwrap().bonus = true;
                l
            },
            {
                let mut h = high.clone();
                h.running.as_mut().unwrap().bonus = false;
                h
            },
        ),
    ] {
        let d = schedule(&snapshot(
            300,
            nodes.clone(),
            vcs.clone(),
            queues.clone(),
            vec![low, high, job("default/gang", "qd", 3, 4)],
        ));
        assert_eq!(victims(&d), strings(&["vc1/low"]), "{d:?}");
        assert_eq!(reason_of(&d, "vc1/low"), Some(PreemptionReason::Reclaim));
    }
}

/// The next cycle's snapshot, everything carried out at once: admissions run, victims are
/// back in their queue (their pods gone), changes of standing applied.
pub(super) fn carry_out(s: &Snapshot, d: &Decisions) -> Snapshot {
    let victims: Vec<&str> = d.victims().collect();
    let mut next = s.clone();
    next.now += 100;
    for j in &mut next.jobs {
        if let Some(a) = d.admission(&j.id) {
            *j = run_admitted(j.clone(), a, s.now);
        } else if victims.contains(&j.id.as_str()) {
            j.running = None;
            j.preemptions += 1;
        } else if let Some(r) = &mut j.running {
            r.bonus = (r.bonus || d.demotions.contains(&j.id)) && !d.promotions.contains(&j.id);
        }
    }
    next
}

/// Team a: 32 A100s as 2 node cells on 16-GPU nodes; team b the same; 4 nodes.
fn two_teams_of_two_cells() -> (Vec<Node>, Vec<VirtualCluster>, Vec<Queue>) {
    let nodes = (0..4)
        .map(|i| node(&format!("n{i}"), "A100", 16, None))
        .collect();
    let vcs = vec![node_cells("a", 32, 2), node_cells("b", 32, 2)];
    (nodes, vcs, vec![queue("qa", "a"), queue("qb", "b")])
}

/// Team a's three 1-GPU jobs on n0 (priority 10).
fn three_small_on_n0() -> Vec<Job> {
    (0..3)
        .map(|i| {
            run(
                pjob(&format!("a/s{i}"), "qa", 1, 1, 10),
                &[("n0", &[i])],
                false,
                0,
                None,
            )
        })
        .collect()
}

/// Buddy packing: a team's guaranteed job goes first into a cell domain the team already
/// uses (n0, 13 GPUs free) before it binds a clean node, so that its other cell stays whole
/// for a job that needs all of it.
#[test]
fn guaranteed_work_packs_into_the_cells_its_team_already_uses() {
    let (nodes, vcs, queues) = two_teams_of_two_cells();
    let mut jobs = three_small_on_n0();
    jobs.push(pjob("a/eight", "qa", 1, 8, 10));
    let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
    let adm = d.admission("a/eight").expect("admitted");
    assert!(!adm.bonus, "{d:?}");
    assert_eq!(nodes_of(&d, "a/eight"), strings(&["n0"]), "{d:?}");
}

/// Issue 49, story 2: team a's own placements split both its cells (three 1-GPU jobs on
/// n0, a more important 8-GPU job on n1), team b holds the other two nodes with its own
/// cells. a's 16-GPU job is within its guarantee (11 + 16 ≤ 32) and needs a whole node: a
/// moves its own work together by the checkpoint protocol (each moved job keeps its
/// standing), and the job starts within a few cycles instead of waiting `NoFit` for ever.
#[test]
fn a_job_within_its_cells_starts_once_its_team_moves_its_own_work_together() {
    let (nodes, vcs, queues) = two_teams_of_two_cells();
    let mut jobs = three_small_on_n0();
    jobs.push(run(
        pjob("a/eight", "qa", 1, 8, 10),
        &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])],
        false,
        0,
        None,
    ));
    let all: Vec<u32> = (0..16).collect();
    for (name, n) in [("b/x", "n2"), ("b/y", "n3")] {
        jobs.push(run(job(name, "qb", 1, 16), &[(n, &all)], false, 0, None));
    }
    jobs.push(pjob("a/big", "qa", 1, 16, 5));
    let mut s = snapshot(1000, nodes, vcs, queues, jobs);
    let mut started = false;
    for _ in 0..4 {
        let d = schedule(&s);
        assert!(
            d.victims().all(|v| v.starts_with("a/")),
            "only a's own work moves: {d:?}"
        );
        for a in &d.admissions {
            if a.job != "a/big" {
                assert!(!a.bonus, "a moved job keeps its standing: {d:?}");
            }
        }
        if d.admission("a/big").is_some() {
            started = true;
            break;
        }
        s = carry_out(&s, &d);
    }
    assert!(started, "a/big never started: {s:?}");
}

/// Found by the history property (a random seed): team a (14 GPUs by count) fills two of
/// three 8-GPU nodes with priority-0 jobs (3 × 1, 2 and 8 × 1 GPUs); team b's one node cell
/// needs the third, clean node, where a's priority-1 4-GPU job then borrows. Filled by
/// counts, the 8-GPU job stays guaranteed and the 3-GPU one is demoted, but its node stays
/// bound by its neighbour, so the promotion finds no clean node for b. The 8-GPU job alone
/// on its node is demoted instead: its node is clean for b, the third node a's.
#[test]
fn a_refused_promotion_displaces_a_lower_priority_job_whose_node_comes_clean() {
    let nodes: Vec<Node> = (0..3)
        .map(|i| node(&format!("n{i}"), "A100", 8, None))
        .collect();
    let vcs = vec![vc("a", "A100", 14), node_cells("b", 8, 1)];
    let mut qa = queue("qa", "a");
    qa.policy = QueuePolicy::Priority;
    let queues = vec![qa, queue("qb", "b")];
    let mut s = snapshot(
        1000,
        nodes,
        vcs,
        queues,
        vec![
            job("a/three", "qa", 3, 1),
            job("a/two", "qa", 1, 2),
            job("a/eight", "qa", 8, 1),
        ],
    );
    let d = schedule(&s);
    assert_eq!(d.admissions.len(), 3, "{d:?}");
    s = carry_out(&s, &d);
    s.jobs.push(pjob("a/urgent", "qa", 1, 4, 1));
    let d = schedule(&s);
    assert!(d.admission("a/urgent").is_some_and(|a| a.bonus), "{d:?}");
    s = carry_out(&s, &d);
    let d = schedule(&s);
    assert_eq!(d.promotions, strings(&["a/urgent"]), "{d:?}");
    assert_eq!(d.demotions, strings(&["a/eight"]), "{d:?}");
}
