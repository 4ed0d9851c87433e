//! Setup B with predicted run times: each Philly job's prediction learned only from the
//! trace's own past, through the operator's own [`crate::predict`] predictor, and
//! shortest-predicted-first with those predictions set against shortest-first with the true
//! run times (the oracle).
//!
//! A job's past is every trace job (from before the window too) whose run ended before the
//! job was submitted, the end taken as the trace's `submit + duration`: the trace records
//! no start times, so this is the earliest the run could have ended, and a run still
//! queued in truth may be counted a little early. Never the job's own duration. In Philly
//! the identity available is the tenant (its virtual cluster) and the GPU count, so a job is
//! predicted from its tenant's runs of its size, else from every run of its size, else not
//! at all. The trace records no failures: every run counts.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;

use serde::Serialize;

use super::philly::PhillyJob;
use super::stats::{mean, percentile};
use super::tenants::{PolicyResult, Workload};
use crate::predict::{Identity, Outcome, Predictor, Settings};

/// Where a simulated job's predicted run time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PredictionSource {
    /// The job's true run time: what no scheduler knows, the bound to compare with.
    Oracle,
    /// Learned from the runs of the trace that ended before the job's submission.
    Learned,
}

impl PredictionSource {
    pub const ALL: [PredictionSource; 2] = [PredictionSource::Oracle, PredictionSource::Learned];

    pub fn name(self) -> &'static str {
        match self {
            PredictionSource::Oracle => "oracle",
            PredictionSource::Learned => "learned",
        }
    }

    pub fn from_name(s: &str) -> Option<PredictionSource> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// The identity of a Philly job: its tenant and GPU count.
fn identity(j: &PhillyJob) -> Identity {
    Identity {
        user: j.tenant.clone(),
        gpu_milli: u64::from(j.gpus) * 1000,
        ..Identity::default()
    }
}

/// Each of `jobs`' predicted run time, in their order, from `source`; `trace` is the whole
/// trace (sorted by submission, as [`super::philly::read_jobs`] returns it), the past the
/// learned predictions are drawn from.
pub fn predictions(
    trace: &[PhillyJob],
    jobs: &[PhillyJob],
    source: PredictionSource,
) -> Vec<Option<i64>> {
    match source {
        PredictionSource::Oracle => jobs.iter().map(|j| Some(j.duration)).collect(),
        PredictionSource::Learned => learned(trace, jobs),
    }
}

fn learned(trace: &[PhillyJob], jobs: &[PhillyJob]) -> Vec<Option<i64>> {
    let mut predictor = Predictor::new(Settings::default());
    // Runs submitted so far and not yet ended, by end.
    let mut running: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
    let mut submitted = 0;
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit);
    let mut out = vec![None; jobs.len()];
    for i in order {
        let now = jobs[i].submit;
        while let Some(t) = trace.get(submitted).filter(|t| t.submit < now) {
            running.push(Reverse((t.submit + t.duration, submitted)));
            submitted += 1;
        }
        while let Some(&Reverse((end, k))) = running.peek() {
            if end > now {
                break;
            }
            running.pop();
            let t = &trace[k];
            // Every Philly run of the table counts: it records no failures.
            let _ = predictor.record(&identity(t), Outcome::Succeeded, t.duration);
        }
        out[i] = predictor.predict(&identity(&jobs[i])).map(|p| p.seconds);
    }
    out
}

/// How good predictions are against the true run times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Accuracy {
    pub jobs: usize,
    /// Jobs with a prediction.
    pub predicted: usize,
    /// Median over the predicted jobs of |predicted − true| / true, in percent.
    pub median_ape_pct: f64,
}

impl Accuracy {
    pub fn of(jobs: &[PhillyJob], predictions: &[Option<i64>]) -> Accuracy {
        let errors: Vec<f64> = jobs
            .iter()
            .zip(predictions)
            .filter_map(|(j, p)| {
                let p = (*p)?;
                Some((p - j.duration).abs() as f64 / j.duration.max(1) as f64 * 100.0)
            })
            .collect();
        Accuracy {
            jobs: jobs.len(),
            predicted: errors.len(),
            median_ape_pct: percentile(&errors, 50.0),
        }
    }

    /// Percent of the jobs with a prediction.
    pub fn coverage_pct(&self) -> f64 {
        if self.jobs == 0 {
            0.0
        } else {
            self.predicted as f64 * 100.0 / self.jobs as f64
        }
    }
}

/// One window: the learned predictions' accuracy, and shortest-predicted-first with each
/// source.
#[derive(Clone, Debug, Serialize)]
pub struct SpfWindow {
    /// First day, `YYYY-MM-DD`.
    pub start: String,
    pub accuracy: Accuracy,
    /// Mean and p99 JCT, seconds, by source.
    pub avg_jct_s: BTreeMap<&'static str, f64>,
    pub p99_jct_s: BTreeMap<&'static str, f64>,
}

impl SpfWindow {
    /// The window's row from its learned predictions and one SPF run per source.
    pub fn new(
        start: &str,
        w: &Workload,
        trace: &[PhillyJob],
        runs: &[(PredictionSource, &PolicyResult)],
    ) -> Self {
        let learned = predictions(trace, &w.jobs, PredictionSource::Learned);
        SpfWindow {
            start: start.to_string(),
            accuracy: Accuracy::of(&w.jobs, &learned),
            avg_jct_s: runs.iter().map(|(s, r)| (s.name(), r.avg_jct_s)).collect(),
            p99_jct_s: runs.iter().map(|(s, r)| (s.name(), r.p99_jct_s)).collect(),
        }
    }
}

fn hours(m: &BTreeMap<&'static str, f64>, source: PredictionSource) -> f64 {
    m.get(source.name()).copied().unwrap_or(0.0) / 3600.0
}

/// The table: per window the learned predictions' error and coverage and each source's
/// mean and p99 JCT, then the means over the windows and the goal (learned within 10 % of
/// the oracle's mean JCT).
pub fn spf_table(rows: &[SpfWindow]) -> String {
    use PredictionSource::{Learned, Oracle};
    let mut s = String::from(
        "| window start | jobs | predicted | median abs. error | SPF oracle avg / p99 JCT | SPF learned avg / p99 JCT | learned / oracle avg |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let ratio = |r: &SpfWindow| hours(&r.avg_jct_s, Learned) / hours(&r.avg_jct_s, Oracle);
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} % | {:.0} % | {:.2} h / {:.1} h | {:.2} h / {:.1} h | {:.3} |",
            r.start,
            r.accuracy.jobs,
            r.accuracy.coverage_pct(),
            r.accuracy.median_ape_pct,
            hours(&r.avg_jct_s, Oracle),
            hours(&r.p99_jct_s, Oracle),
            hours(&r.avg_jct_s, Learned),
            hours(&r.p99_jct_s, Learned),
            ratio(r),
        );
    }
    let col = |f: &dyn Fn(&SpfWindow) -> f64| mean(&rows.iter().map(f).collect::<Vec<_>>());
    let (oracle, learned) = (
        col(&|r| hours(&r.avg_jct_s, Oracle)),
        col(&|r| hours(&r.avg_jct_s, Learned)),
    );
    let _ = writeln!(
        s,
        "| mean of {} | {:.0} | {:.1} % | {:.0} % | {:.2} h / {:.1} h | {:.2} h / {:.1} h | {:.3} |",
        rows.len(),
        col(&|r| r.accuracy.jobs as f64),
        col(&|r| r.accuracy.coverage_pct()),
        col(&|r| r.accuracy.median_ape_pct),
        oracle,
        col(&|r| hours(&r.p99_jct_s, Oracle)),
        learned,
        col(&|r| hours(&r.p99_jct_s, Learned)),
        if oracle > 0.0 {
            learned / oracle
        } else {
            f64::NAN
        },
    );
    let within = oracle > 0.0 && learned <= oracle * 1.10;
    let _ = writeln!(
        s,
        "\n- shortest-predicted-first with learned predictions, mean JCT within 10 % of the oracle's: {} ({:.2} h against {:.2} h, {:+.1} %).",
        if within { "met" } else { "missed" },
        learned,
        oracle,
        if oracle > 0.0 {
            (learned / oracle - 1.0) * 100.0
        } else {
            f64::NAN
        },
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(submit: i64, duration: i64, gpus: u32, tenant: &str) -> PhillyJob {
        PhillyJob {
            submit,
            duration,
            gpus,
            tenant: tenant.into(),
        }
    }

    #[test]
    fn a_prediction_is_learned_only_from_runs_that_ended_before_the_submission() {
        let trace = vec![
            job(0, 100, 8, "a"),
            job(10, 500, 8, "a"),  // ends at 510
            job(20, 9000, 1, "b"), // ends at 9020
            job(600, 7, 8, "a"),   // the job predicted below; its own run never counts
            job(9100, 50, 8, "a"),
            job(9200, 50, 1, "a"),
        ];
        let jobs = trace[3..].to_vec();
        let got = predictions(&trace, &jobs, PredictionSource::Learned);
        // At 600: runs of 100 and 500 s of tenant a, 8 GPUs, have ended; b's has not.
        // At 9100: also the 7 s run: median of 7, 100, 500.
        // At 9200: no 1-GPU run of tenant a, so every 1-GPU run: b's 9000 s.
        assert_eq!(got, vec![Some(300), Some(100), Some(9000)]);
        let oracle = predictions(&trace, &jobs, PredictionSource::Oracle);
        assert_eq!(oracle, vec![Some(7), Some(50), Some(50)]);
    }

    #[test]
    fn a_job_with_no_past_of_its_size_has_no_prediction() {
        let trace = vec![job(0, 100, 8, "a"), job(50, 100, 4, "a")];
        let got = predictions(&trace, &trace, PredictionSource::Learned);
        assert_eq!(got, vec![None, None]);
        let acc = Accuracy::of(&trace, &got);
        assert_eq!((acc.predicted, acc.coverage_pct()), (0, 0.0));
    }

    #[test]
    fn accuracy_is_the_median_absolute_percentage_error_of_predicted_jobs() {
        let jobs = vec![
            job(0, 100, 1, "a"),
            job(0, 100, 1, "a"),
            job(0, 100, 1, "a"),
            job(0, 100, 1, "a"),
        ];
        let acc = Accuracy::of(&jobs, &[Some(110), Some(50), Some(400), None]);
        assert_eq!((acc.jobs, acc.predicted), (4, 3));
        assert!((acc.median_ape_pct - 50.0).abs() < 1e-9, "{acc:?}");
        assert!((acc.coverage_pct() - 75.0).abs() < 1e-9);
    }

    #[test]
    fn the_table_checks_the_goal_on_the_means() {
        let row = |start: &str, oracle: f64, learned: f64| SpfWindow {
            start: start.into(),
            accuracy: Accuracy {
                jobs: 10,
                predicted: 9,
                median_ape_pct: 80.0,
            },
            avg_jct_s: [("oracle", oracle * 3600.0), ("learned", learned * 3600.0)].into(),
            p99_jct_s: [("oracle", 36_000.0), ("learned", 72_000.0)].into(),
        };
        let t = spf_table(&[row("2017-10-01", 2.0, 2.1), row("2017-10-08", 2.0, 2.3)]);
        assert!(
            t.contains(
                "| mean of 2 | 10 | 90.0 % | 80 % | 2.00 h / 10.0 h | 2.20 h / 20.0 h | 1.100 |"
            ),
            "{t}"
        );
        assert!(t.contains("within 10 % of the oracle's: met"), "{t}");
        let t = spf_table(&[row("2017-10-01", 2.0, 2.5)]);
        assert!(t.contains("missed (2.50 h against 2.00 h, +25.0 %)"), "{t}");
    }
}
