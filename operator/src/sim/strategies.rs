//! Setup B's queueing strategies side by side (issue 53): every tenant's queue admits its
//! jobs FIFO best effort, `Strict`, `Backfill`, shortest-predicted-first, or shortest-first
//! told the true durations (the oracle), on the same window and the same kubetrain policy
//! (lending, checkpoint-aware reclaim). Reported: mean and p99 JCT, the p99 wait (submission
//! to first start) of the jobs of 8 GPUs or more, whom a strict order protects and backfill
//! must not hurt, and the GPU allocation. The predictions come from a
//! [`super::predictions::PredictionSource`] (learned from the trace's own past, or the true
//! durations); the strategies that read predictions (backfill, shortest-predicted-first) are
//! as good as they are, the oracle row always has the true durations.

use std::fmt::Write as _;

use serde::Serialize;

use super::stats::percentile;
use super::tenants::{JobRecord, Policy, PolicyResult, Queueing, TenantConfig, Workload};
use super::windows::Spread;
use crate::sched::{Options, QueuePolicy, QueueingStrategy};

/// Jobs of at least this many GPUs are the large ones whose wait is reported.
pub const LARGE_GPUS: u32 = 8;

/// One queueing strategy of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Strategy {
    /// FIFO, best effort (the default queue).
    Fifo,
    Strict,
    Backfill,
    /// Shortest prediction first, best effort.
    ShortestPredicted,
    /// Shortest true duration first: the bound shortest-predicted-first approaches.
    ShortestOracle,
}

impl Strategy {
    pub const ALL: [Strategy; 5] = [
        Strategy::Fifo,
        Strategy::Strict,
        Strategy::Backfill,
        Strategy::ShortestPredicted,
        Strategy::ShortestOracle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Fifo => "FIFO (best effort)",
            Strategy::Strict => "Strict",
            Strategy::Backfill => "Backfill",
            Strategy::ShortestPredicted => "shortest-predicted-first",
            Strategy::ShortestOracle => "shortest-first (oracle)",
        }
    }

    /// The tenants' queues for this strategy: each job's prediction from `given` (in the
    /// order of the window's jobs), the oracle row's from `truth`.
    pub fn queueing(self, given: &[Option<i64>], truth: &[Option<i64>]) -> Queueing {
        let (policy, strategy) = match self {
            Strategy::Fifo => (QueuePolicy::Fifo, QueueingStrategy::BestEffort),
            Strategy::Strict => (QueuePolicy::Fifo, QueueingStrategy::Strict),
            Strategy::Backfill => (QueuePolicy::Fifo, QueueingStrategy::Backfill),
            Strategy::ShortestPredicted | Strategy::ShortestOracle => (
                QueuePolicy::ShortestPredictedFirst,
                QueueingStrategy::BestEffort,
            ),
        };
        let predictions = match self {
            Strategy::ShortestOracle => truth,
            _ => given,
        };
        Queueing {
            policy,
            strategy,
            predictions: predictions.to_vec(),
        }
    }
}

/// One strategy on one window.
#[derive(Clone, Debug, Serialize)]
pub struct StrategyResult {
    /// First day of the window, `YYYY-MM-DD`.
    pub start: String,
    pub strategy: Strategy,
    pub jobs: usize,
    pub unfinished: usize,
    pub avg_jct_s: f64,
    pub p99_jct_s: f64,
    /// Jobs of [`LARGE_GPUS`] or more that started, and the p99 of their waits.
    pub large_jobs: usize,
    pub p99_large_wait_s: f64,
    /// Mean allocated GPUs over capacity during the window (%).
    pub alloc_pct: f64,
    /// Jobs that did not start in the cycle they arrived in, and of them those the cycle
    /// gave a start estimate.
    pub waited: usize,
    pub estimated: usize,
    /// Median of |estimated start − first start| over the estimated jobs that started, s.
    pub median_estimate_error_s: f64,
}

impl StrategyResult {
    pub fn new(start: &str, strategy: Strategy, r: &PolicyResult) -> StrategyResult {
        let large: Vec<f64> = r
            .records
            .iter()
            .filter(|j| j.gpus >= LARGE_GPUS)
            .filter_map(|j| j.queue_delay())
            .map(|d| d as f64)
            .collect();
        let waited: Vec<&JobRecord> = r
            .records
            .iter()
            .filter(|j| j.estimate_at_submit.is_some())
            .collect();
        let estimated = waited
            .iter()
            .filter(|j| matches!(j.estimate_at_submit, Some(Some(_))))
            .count();
        let errors: Vec<f64> = waited
            .iter()
            .filter_map(|j| Some((j.estimate_at_submit??, j.first_start?)))
            .map(|(estimate, start)| (estimate - start).abs() as f64)
            .collect();
        StrategyResult {
            start: start.to_string(),
            strategy,
            jobs: r.jobs,
            unfinished: r.unfinished,
            avg_jct_s: r.avg_jct_s,
            p99_jct_s: r.p99_jct_s,
            large_jobs: large.len(),
            p99_large_wait_s: percentile(&large, 99.0),
            alloc_pct: r.alloc_rate_pct,
            waited: waited.len(),
            estimated,
            median_estimate_error_s: percentile(&errors, 50.0),
        }
    }
}

/// Runs `strategy` on a window as the kubetrain policy of Setup B, told the `given`
/// predictions (the oracle row: `truth`).
pub fn simulate(
    w: &Workload,
    cfg: &TenantConfig,
    private: &std::collections::BTreeMap<String, i64>,
    strategy: Strategy,
    given: &[Option<i64>],
    truth: &[Option<i64>],
) -> PolicyResult {
    super::tenants::simulate_queueing(
        w,
        cfg,
        Policy::Kubetrain,
        private,
        Options::default(),
        &strategy.queueing(given, truth),
    )
}

/// One strategy over every window: each figure's mean and spread.
#[derive(Clone, Debug, Serialize)]
pub struct StrategySummary {
    pub strategy: Strategy,
    pub windows: usize,
    pub avg_jct_h: Spread,
    pub p99_jct_h: Spread,
    pub p99_large_wait_h: Spread,
    pub alloc_pct: Spread,
    /// Share of the jobs that waited that got a start estimate at submission (%), and the
    /// median error of those estimates (h).
    pub estimated_pct: Spread,
    pub estimate_error_h: Spread,
}

pub fn summarize(results: &[StrategyResult]) -> Vec<StrategySummary> {
    Strategy::ALL
        .into_iter()
        .filter_map(|s| {
            let mine: Vec<&StrategyResult> = results.iter().filter(|r| r.strategy == s).collect();
            if mine.is_empty() {
                return None;
            }
            let of = |f: &dyn Fn(&StrategyResult) -> f64| {
                Spread::of(&mine.iter().map(|r| f(r)).collect::<Vec<f64>>())
            };
            Some(StrategySummary {
                strategy: s,
                windows: mine.len(),
                avg_jct_h: of(&|r| r.avg_jct_s / 3600.0),
                p99_jct_h: of(&|r| r.p99_jct_s / 3600.0),
                p99_large_wait_h: of(&|r| r.p99_large_wait_s / 3600.0),
                alloc_pct: of(&|r| r.alloc_pct),
                estimated_pct: of(&|r| 100.0 * r.estimated as f64 / r.waited.max(1) as f64),
                estimate_error_h: of(&|r| r.median_estimate_error_s / 3600.0),
            })
        })
        .collect()
}

/// Mean ± standard deviation (min–max) over the windows, one row per strategy.
pub fn summary_table(sums: &[StrategySummary]) -> String {
    let mut s = format!(
        "| strategy | windows | avg JCT, h | p99 JCT, h | p99 wait of jobs ≥ {LARGE_GPUS} GPUs, h | GPU allocation, % |\n| --- | --- | --- | --- | --- | --- |\n"
    );
    for x in sums {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            x.strategy.name(),
            x.windows,
            x.avg_jct_h.show(2),
            x.p99_jct_h.show(1),
            x.p99_large_wait_h.show(1),
            x.alloc_pct.show(1)
        );
    }
    s
}

/// The start estimates made when each job arrived (what `status.estimatedStartTime` said
/// then) against when it started, per strategy.
pub fn estimate_table(sums: &[StrategySummary]) -> String {
    let mut s = String::from(
        "| strategy | waiting jobs with an estimate at submission, % | median error of that estimate, h |\n| --- | --- | --- |\n",
    );
    for x in sums {
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            x.strategy.name(),
            x.estimated_pct.show(1),
            x.estimate_error_h.show(2)
        );
    }
    s
}

/// Every window's figures.
pub fn window_table(results: &[StrategyResult]) -> String {
    let mut s = format!(
        "| window start | strategy | jobs | unfinished | avg JCT | p99 JCT | p99 wait ≥ {LARGE_GPUS} GPUs | GPU allocation |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} h | {:.1} h | {:.1} h | {:.1} % |",
            r.start,
            r.strategy.name(),
            r.jobs,
            r.unfinished,
            r.avg_jct_s / 3600.0,
            r.p99_jct_s / 3600.0,
            r.p99_large_wait_s / 3600.0,
            r.alloc_pct
        );
    }
    s
}

/// Issue 53's goals for backfill, judged on the means over the windows: the p99 wait of the
/// large jobs no worse than `Strict`'s, the GPU allocation within 1 point of FIFO's.
pub fn goals(sums: &[StrategySummary]) -> String {
    let get = |s: Strategy| sums.iter().find(|x| x.strategy == s);
    let (Some(fifo), Some(strict), Some(backfill)) = (
        get(Strategy::Fifo),
        get(Strategy::Strict),
        get(Strategy::Backfill),
    ) else {
        return "- goals: not judged (FIFO, Strict and Backfill must all run).\n".into();
    };
    let met = |ok: bool| if ok { "met" } else { "missed" };
    let wait_ok = backfill.p99_large_wait_h.mean <= strict.p99_large_wait_h.mean;
    let gap = fifo.alloc_pct.mean - backfill.alloc_pct.mean;
    let mut s = format!(
        "- Backfill's p99 wait of jobs ≥ {LARGE_GPUS} GPUs no worse than Strict's: {} ({:.1} h against {:.1} h).\n",
        met(wait_ok),
        backfill.p99_large_wait_h.mean,
        strict.p99_large_wait_h.mean
    );
    let _ = writeln!(
        s,
        "- Backfill's GPU allocation within 1 point of FIFO's: {} ({:.1} % against {:.1} %, {:+.1} points).",
        met(gap <= 1.0),
        backfill.alloc_pct.mean,
        fifo.alloc_pct.mean,
        -gap
    );
    if let (Some(spf), Some(oracle)) = (
        get(Strategy::ShortestPredicted),
        get(Strategy::ShortestOracle),
    ) {
        let _ = writeln!(
            s,
            "- shortest-predicted-first's mean JCT against the oracle's: {:.2} h against {:.2} h ({:+.1} %).",
            spf.avg_jct_h.mean,
            oracle.avg_jct_h.mean,
            100.0 * (spf.avg_jct_h.mean / oracle.avg_jct_h.mean.max(f64::MIN_POSITIVE) - 1.0)
        );
    }
    s
}

/// The section of `docs/benchmarks-philly-windows.md` on the strategies (empty when none
/// ran), with predictions from `source`.
pub fn markdown(results: &[StrategyResult], source: &str) -> String {
    if results.is_empty() {
        return String::new();
    }
    let sums = summarize(results);
    format!(
        "
## Queueing strategies

Every tenant's queue admits its jobs FIFO best effort (the default), `Strict`, `Backfill`,
shortest-predicted-first, or shortest-first told each job's true duration (the oracle), in
the same windows, all under the kubetrain policy. Predictions: {source}. Waits are from
submission to first start; the jobs of {LARGE_GPUS} GPUs or more are those a strict order
protects. GPU allocation is the mean allocated GPUs over capacity in the window.

{summary}
{goals}
### Start estimates

The estimate each job got in the cycle it arrived in, when it did not start in that cycle
(`sched::start_estimates`, what `status.estimatedStartTime` says then), against when it
first started. Jobs held back by a running job without a prediction, or by what the
estimate does not model, have none.

{estimates}
{table}",
        summary = summary_table(&sums),
        goals = goals(&sums),
        estimates = estimate_table(&sums),
        table = window_table(results),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(strategy: Strategy, wait_h: f64, alloc: f64) -> StrategyResult {
        StrategyResult {
            start: "2017-10-01".into(),
            strategy,
            jobs: 10,
            unfinished: 0,
            avg_jct_s: 3600.0,
            p99_jct_s: 7200.0,
            large_jobs: 2,
            p99_large_wait_s: wait_h * 3600.0,
            alloc_pct: alloc,
            waited: 4,
            estimated: 3,
            median_estimate_error_s: 1800.0,
        }
    }

    #[test]
    fn goals_compare_backfill_with_strict_and_fifo() {
        let sums = summarize(&[
            result(Strategy::Fifo, 9.0, 70.0),
            result(Strategy::Strict, 4.0, 66.0),
            result(Strategy::Backfill, 3.5, 69.5),
        ]);
        let g = goals(&sums);
        assert!(
            g.contains("no worse than Strict's: met (3.5 h against 4.0 h)"),
            "{g}"
        );
        assert!(g.contains("within 1 point of FIFO's: met"), "{g}");
        let sums = summarize(&[
            result(Strategy::Fifo, 9.0, 70.0),
            result(Strategy::Strict, 4.0, 66.0),
            result(Strategy::Backfill, 4.5, 68.0),
        ]);
        let g = goals(&sums);
        assert!(
            g.contains("Strict's: missed") && g.contains("FIFO's: missed"),
            "{g}"
        );
        assert!(summary_table(&sums).lines().count() == 5);
    }

    /// The oracle row has the true durations whatever the source; the others the source's.
    #[test]
    fn the_oracle_is_told_the_true_durations() {
        let w = Workload {
            jobs: vec![super::super::philly::PhillyJob {
                tenant: "t".into(),
                gpus: 8,
                submit: 0,
                duration: 4200,
            }],
            tenants: vec!["t".into()],
            guarantee_nodes: vec![1],
            share: vec![1.0],
            nodes: 1,
            mean_demand_gpus: 8.0,
            largest_job_gpus: 8,
        };
        let truth: Vec<Option<i64>> = w.jobs.iter().map(|j| Some(j.duration)).collect();
        let learned = [Some(600)];
        let q = Strategy::ShortestOracle.queueing(&learned, &truth);
        assert_eq!(q.predictions, [Some(4200)]);
        assert_eq!(q.policy, QueuePolicy::ShortestPredictedFirst);
        let q = Strategy::ShortestPredicted.queueing(&learned, &truth);
        assert_eq!(q.predictions, [Some(600)]);
        let q = Strategy::Backfill.queueing(&learned, &truth);
        assert_eq!(q.predictions, [Some(600)]);
        assert_eq!(
            (q.policy, q.strategy),
            (QueuePolicy::Fifo, QueueingStrategy::Backfill)
        );
    }

    /// A job that arrives behind a running one is told, in its first cycle, when that one's
    /// predicted end frees its GPUs; with true durations the estimate is exact.
    #[test]
    fn a_job_that_waits_records_the_estimate_of_its_first_cycle() {
        let cfg = TenantConfig {
            window_start: 0,
            window_days: 1,
            drain_days: 1,
            ..TenantConfig::default()
        };
        let job = |submit, duration| super::super::philly::PhillyJob {
            tenant: "t".into(),
            gpus: 8,
            submit,
            duration,
        };
        let w = Workload {
            jobs: vec![job(0, 3600), job(120, 600)],
            tenants: vec!["t".into()],
            guarantee_nodes: vec![1],
            share: vec![1.0],
            nodes: 1,
            mean_demand_gpus: 8.0,
            largest_job_gpus: 8,
        };
        let truth: Vec<Option<i64>> = w.jobs.iter().map(|j| Some(j.duration)).collect();
        let r = simulate(
            &w,
            &cfg,
            &Default::default(),
            Strategy::Fifo,
            &truth,
            &truth,
        );
        let second = &r.records[1];
        let (Some(Some(estimate)), Some(start)) = (second.estimate_at_submit, second.first_start)
        else {
            panic!("no estimate or no start: {second:?}");
        };
        assert_eq!(estimate, start, "{:?}", r.records);
        assert_eq!(
            r.records[0].estimate_at_submit, None,
            "the first started at once"
        );
        let row = StrategyResult::new("1970-01-01", Strategy::Fifo, &r);
        assert_eq!(
            (row.waited, row.estimated, row.median_estimate_error_s),
            (1, 1, 0.0)
        );
        // Without predictions nothing is estimated, and nothing is recorded.
        let none = vec![None; 2];
        let r = simulate(&w, &cfg, &Default::default(), Strategy::Fifo, &none, &none);
        assert!(r.records.iter().all(|j| j.estimate_at_submit.is_none()));
    }
}
