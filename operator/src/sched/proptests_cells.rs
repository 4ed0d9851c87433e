//! The promise of a cell guarantee as a property (issue 49): a job within its
//! VirtualCluster's cell guarantee starts within a bounded number of cycles once nothing of
//! other tenants holds its cells, however the team's own placements split them.

use proptest::prelude::*;

use super::fixtures::*;
use super::proptests::cases;
use super::scenarios_cells::{carry_out, node_cells};
use super::*;

/// Team t: `cells` 8-GPU node cells (all its guarantee) on n0..; team o holds `others`
/// more nodes with its own node cells, full of its guaranteed work. t's jobs arrive in
/// rounds (GPUs, priority) and are placed by the cycles themselves; between rounds some of
/// its running jobs end (by position), so its own placements split its cells the way
/// completions do. Then its whole-node job arrives, with `priority`.
/// One round: arrivals (GPUs, priority), and which running jobs end (by position).
type Round = (Vec<(u32, i32)>, Vec<bool>);

#[derive(Clone, Debug)]
struct CellWorld {
    cells: u32,
    others: u32,
    rounds: Vec<Round>,
    priority: i32,
}

fn cell_world() -> impl Strategy<Value = CellWorld> {
    let round = (
        prop::collection::vec((prop_oneof![Just(1u32), Just(2), Just(4)], 0i32..3), 0..6),
        prop::collection::vec(prop::bool::weighted(0.4), 8),
    );
    (
        2u32..4,
        1u32..3,
        prop::collection::vec(round, 1..5),
        0i32..3,
    )
        .prop_map(|(cells, others, rounds, priority)| CellWorld {
            cells,
            others,
            rounds,
            priority,
        })
}

/// The snapshot of a [`CellWorld`] once its rounds are played, t's whole-node job waiting
/// (and nothing else of t); None when the job would not be within t's guarantee.
fn cell_snapshot(w: &CellWorld) -> Option<Snapshot> {
    let n = w.cells + w.others;
    let nodes: Vec<Node> = (0..n)
        .map(|i| node(&format!("n{i}"), "A100", 8, None))
        .collect();
    let vcs = vec![
        node_cells("t", 8 * w.cells, w.cells),
        node_cells("o", 8 * w.others, w.others),
    ];
    let queues = vec![queue("qt", "t"), queue("qo", "o")];
    let all: Vec<u32> = (0..8).collect();
    let jobs = (w.cells..n)
        .map(|i| {
            run(
                job(&format!("o/{i}"), "qo", 1, 8),
                &[(&format!("n{i}"), &all)],
                false,
                0,
                None,
            )
        })
        .collect();
    let mut s = snapshot(1000, nodes, vcs, queues, jobs);
    for (r, (arrivals, ends)) in w.rounds.iter().enumerate() {
        let mut k = 0;
        s.jobs.retain(|j| {
            if !j.id.starts_with("t/") || j.running.is_none() {
                return true;
            }
            k += 1;
            !ends[k % ends.len()]
        });
        for (a, &(g, priority)) in arrivals.iter().enumerate() {
            let mut j = pjob(&format!("t/r{r}-{a}"), "qt", 1, g, priority);
            j.queued_at = s.now;
            s.jobs.push(j);
        }
        let d = schedule(&s);
        s = carry_out(&s, &d);
    }
    s.jobs.retain(|j| j.running.is_some());
    let used: u32 = s
        .jobs
        .iter()
        .filter(|j| j.id.starts_with("t/"))
        .map(|j| (j.gpu_milli() / 1000) as u32)
        .sum();
    if used + 8 > 8 * w.cells {
        return None;
    }
    let mut whole = pjob("t/whole", "qt", 1, 8, w.priority);
    whole.queued_at = s.now;
    s.jobs.push(whole);
    Some(s)
}

/// The cycles a job within its cell guarantee may wait: one to ask its team's jobs to move,
/// one for them to go; the rest is slack for a move made in two steps.
const CYCLES: usize = 5;

proptest! {
    #![proptest_config(cases(2_000))]

    /// Team t's whole-node job, within its cell guarantee, starts within [`CYCLES`] cycles
    /// (victims leave at once, nothing ends, team o's guaranteed work stays where it is):
    /// only t's own jobs move, each back within the guarantee.
    #[test]
    fn a_job_within_its_cell_guarantee_starts_within_a_few_cycles(w in cell_world()) {
        let Some(mut s) = cell_snapshot(&w) else {
            return Ok(());
        };
        for _ in 0..CYCLES {
            let d = schedule(&s);
            prop_assert!(d.victims().all(|v| v.starts_with("t/")), "{:?}", d);
            for a in &d.admissions {
                prop_assert!(!a.bonus, "{} admitted as bonus: {:?}", a.job, d);
            }
            if d.admission("t/whole").is_some() {
                return Ok(());
            }
            s = carry_out(&s, &d);
        }
        prop_assert!(false, "t/whole never started: {:?}", s);
    }
}
