//! Setup B over many Philly windows: one window's JCT difference between two policies flips
//! with a one-day shift of the window, so a claim about Setup B is made on the mean and the
//! spread over several windows, never on one. This module aggregates the per-window results
//! of [`super::tenants`] and writes them as markdown (`kubetrain-sim windows`, and the
//! generated `docs/benchmarks-philly-windows.md`).

use std::fmt::Write as _;

use serde::Serialize;

use super::tenants::{Policy, PolicyResult};

/// One window's result for one policy: the figures that are compared across windows.
#[derive(Clone, Debug, Serialize)]
pub struct WindowResult {
    /// First day of the window, `YYYY-MM-DD`.
    pub start: String,
    pub policy: Policy,
    pub name: String,
    pub jobs: usize,
    pub avg_jct_s: f64,
    pub p99_jct_s: f64,
    pub lost_gpu_hours: f64,
    pub preemptions: u64,
    pub tenants_with_anomaly: usize,
    pub tenants: usize,
}

impl WindowResult {
    pub fn new(start: &str, r: &PolicyResult) -> Self {
        WindowResult {
            start: start.to_string(),
            policy: r.policy,
            name: r.name.clone(),
            jobs: r.jobs,
            avg_jct_s: r.avg_jct_s,
            p99_jct_s: r.p99_jct_s,
            lost_gpu_hours: r.lost_gpu_hours,
            preemptions: r.preemptions,
            tenants_with_anomaly: r.tenants_with_anomaly,
            tenants: r.tenants.len(),
        }
    }
}

/// Mean, sample standard deviation, minimum and maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `mean ± sd (min–max)` with `digits` decimals, as the windows' tables print it.
    pub fn show(&self, digits: usize) -> String {
        format!(
            "{:.d$} ± {:.d$} ({:.d$}–{:.d$})",
            self.mean,
            self.sd,
            self.min,
            self.max,
            d = digits
        )
    }

    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread::default();
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = if xs.len() > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Spread {
            mean,
            sd: var.sqrt(),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// One policy over every window.
#[derive(Clone, Debug, Serialize)]
pub struct PolicySummary {
    pub name: String,
    pub windows: usize,
    pub avg_jct_h: Spread,
    pub p99_jct_h: Spread,
    pub lost_gpu_hours: Spread,
    pub preemptions: Spread,
    /// Windows in which this policy has the lowest average (p99) JCT of all policies run.
    pub best_avg_jct: usize,
    pub best_p99_jct: usize,
    /// Windows with at least one tenant whose sharing anomaly is positive.
    pub windows_with_anomaly: usize,
}

/// Per-policy summaries, in the order the policies first appear in `results`.
pub fn summarize(results: &[WindowResult]) -> Vec<PolicySummary> {
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    let best = |start: &str, key: &dyn Fn(&WindowResult) -> f64| -> Option<String> {
        results
            .iter()
            .filter(|r| r.start == start)
            .min_by(|a, b| key(a).total_cmp(&key(b)))
            .map(|r| r.name.clone())
    };
    names
        .iter()
        .map(|&name| {
            let mine: Vec<&WindowResult> = results.iter().filter(|r| r.name == name).collect();
            let col = |f: &dyn Fn(&WindowResult) -> f64| -> Vec<f64> {
                mine.iter().map(|r| f(r)).collect()
            };
            PolicySummary {
                name: name.to_string(),
                windows: mine.len(),
                avg_jct_h: Spread::of(&col(&|r| r.avg_jct_s / 3600.0)),
                p99_jct_h: Spread::of(&col(&|r| r.p99_jct_s / 3600.0)),
                lost_gpu_hours: Spread::of(&col(&|r| r.lost_gpu_hours)),
                preemptions: Spread::of(&col(&|r| r.preemptions as f64)),
                best_avg_jct: mine
                    .iter()
                    .filter(|r| best(&r.start, &|x| x.avg_jct_s).as_deref() == Some(name))
                    .count(),
                best_p99_jct: mine
                    .iter()
                    .filter(|r| best(&r.start, &|x| x.p99_jct_s).as_deref() == Some(name))
                    .count(),
                windows_with_anomaly: mine.iter().filter(|r| r.tenants_with_anomaly > 0).count(),
            }
        })
        .collect()
}

/// The summary table: mean ± standard deviation (min–max) per policy.
pub fn summary_table(sums: &[PolicySummary]) -> String {
    let mut s = String::from(
        "| policy | windows | avg JCT, h | p99 JCT, h | lost GPU-hours | preemptions | lowest avg / p99 JCT in | windows with an anomalous tenant |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for p in sums {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} |",
            p.name,
            p.windows,
            p.avg_jct_h.show(2),
            p.p99_jct_h.show(1),
            p.lost_gpu_hours.show(0),
            p.preemptions.show(0),
            p.best_avg_jct,
            p.best_p99_jct,
            p.windows_with_anomaly,
        );
    }
    s
}

/// Every window, one row per window and policy.
pub fn window_table(results: &[WindowResult]) -> String {
    let mut s = String::from(
        "| window start | policy | jobs | avg JCT | p99 JCT | lost GPU-hours | preemptions | tenants with anomaly |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2} h | {:.1} h | {:.0} | {} | {} / {} |",
            r.start,
            r.name,
            r.jobs,
            r.avg_jct_s / 3600.0,
            r.p99_jct_s / 3600.0,
            r.lost_gpu_hours,
            r.preemptions,
            r.tenants_with_anomaly,
            r.tenants,
        );
    }
    s
}

/// The goals of Setup B, checked on the means: kubetrain has the best mean average and p99
/// JCT, loses at most half the GPU-hours hived-like loses, and no window has an anomalous
/// tenant. One line per goal, each saying met or missed with the numbers.
pub fn goals(sums: &[PolicySummary]) -> String {
    let find = |name: &str| sums.iter().find(|p| p.name == name);
    let Some(k) = find(Policy::Kubetrain.name()) else {
        return String::new();
    };
    let mut s = String::new();
    let verdict = |ok: bool| if ok { "met" } else { "missed" };
    for (what, get) in [
        (
            "best mean average JCT",
            (|p: &PolicySummary| p.avg_jct_h.mean) as fn(&PolicySummary) -> f64,
        ),
        ("best mean p99 JCT", |p: &PolicySummary| p.p99_jct_h.mean),
    ] {
        let best = sums
            .iter()
            .filter(|p| p.name != k.name)
            .min_by(|a, b| get(a).total_cmp(&get(b)));
        if let Some(b) = best {
            let _ = writeln!(
                s,
                "- {what}: {} (kubetrain {:.2} h, best other {} {:.2} h).",
                verdict(get(k) <= get(b)),
                get(k),
                b.name,
                get(b)
            );
        }
    }
    if let Some(h) = find(Policy::HivedLike.name()) {
        let ratio = if h.lost_gpu_hours.mean > 0.0 {
            k.lost_gpu_hours.mean / h.lost_gpu_hours.mean
        } else {
            f64::NAN
        };
        let _ = writeln!(
            s,
            "- lost GPU-hours at most 50 % of hived-like's: {} ({:.0} against {:.0}, {:.0} %).",
            verdict(ratio <= 0.5),
            k.lost_gpu_hours.mean,
            h.lost_gpu_hours.mean,
            ratio * 100.0
        );
    }
    let _ = writeln!(
        s,
        "- no anomalous tenant: {} ({} of {} windows have one).",
        verdict(k.windows_with_anomaly == 0),
        k.windows_with_anomaly,
        k.windows
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(start: &str, policy: Policy, avg_h: f64, p99_h: f64, lost: f64) -> WindowResult {
        WindowResult {
            start: start.into(),
            policy,
            name: policy.name().into(),
            jobs: 10,
            avg_jct_s: avg_h * 3600.0,
            p99_jct_s: p99_h * 3600.0,
            lost_gpu_hours: lost,
            preemptions: 3,
            tenants_with_anomaly: 0,
            tenants: 4,
        }
    }

    #[test]
    fn spread_is_mean_sample_sd_and_range() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((s.mean - 5.0).abs() < 1e-9);
        assert!((s.sd - 2.138_089_935).abs() < 1e-6);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert_eq!(Spread::of(&[3.0]).sd, 0.0);
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn counts_wins_per_window_and_checks_goals() {
        let k = Policy::Kubetrain;
        let h = Policy::HivedLike;
        let results = vec![
            row("2017-10-01", h, 5.0, 50.0, 100.0),
            row("2017-10-01", k, 4.0, 60.0, 40.0),
            row("2017-10-08", h, 5.0, 50.0, 100.0),
            row("2017-10-08", k, 6.0, 40.0, 40.0),
        ];
        let sums = summarize(&results);
        assert_eq!(sums.len(), 2);
        let ks = sums.iter().find(|p| p.name == k.name()).expect("kubetrain");
        assert_eq!((ks.best_avg_jct, ks.best_p99_jct), (1, 1));
        assert!((ks.avg_jct_h.mean - 5.0).abs() < 1e-9);
        let g = goals(&sums);
        // A tie on the mean average JCT counts as best; lost work 40 % of hived-like's.
        assert!(g.contains("best mean average JCT: met"), "{g}");
        assert!(g.contains("best mean p99 JCT: met"), "{g}");
        assert!(
            g.contains("50 % of hived-like's: met (40 against 100, 40 %)"),
            "{g}"
        );
        assert!(g.contains("no anomalous tenant: met"), "{g}");
        let table = summary_table(&sums);
        assert!(
            table.contains("| kubetrain | 2 | 5.00 ± 1.41 (4.00–6.00) |"),
            "{table}"
        );
    }
}
