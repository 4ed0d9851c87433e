//! `windows`: Setup B over many Philly windows, the queueing strategies beside the policies,
//! and docs/benchmarks-philly-windows.md from them.

use super::*;

pub(super) struct WindowsOut {
    results: Vec<windows::WindowResult>,
    /// Learned predictions' error and shortest-predicted-first learned against the oracle,
    /// per window (with `--predictions learned`).
    spf: Vec<SpfWindow>,
    strategies: Vec<strategies::StrategyResult>,
    summaries: Vec<windows::PolicySummary>,
    args: WindowArgs,
}

/// Setup B in every window, the policies of one window in parallel; each window's cluster is
/// sized to that window's load, as `tenants` sizes it.
pub(super) fn run_windows(a: &WindowArgs) -> Result<WindowsOut> {
    let jobs = philly::read_jobs(&a.common.traces.join("philly/philly_jobs.csv"))?;
    let first = philly::parse_time(&a.first).with_context(|| format!("bad --first {}", a.first))?;
    let policies = parse_policies(&a.policy)?;
    let source = match a.predictions.as_str() {
        "none" => None,
        name => Some(
            PredictionSource::from_name(name)
                .with_context(|| format!("unknown --predictions {name}"))?,
        ),
    };
    let (mut results, mut spf, mut by_strategy) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..a.windows {
        let cfg = TenantConfig {
            window_start: first + i as i64 * a.step * 86_400,
            window_days: a.days,
            ..TenantConfig::default()
        };
        let start = philly::format_day(cfg.window_start);
        let w =
            tenants::prepare(&jobs, &cfg).with_context(|| format!("window starting {start}"))?;
        let private = tenants::private_delays(&w, &cfg);
        let t0 = Instant::now();
        let rs = parallel(&policies, &|&p| {
            tenants::simulate_with(&w, &cfg, p, &private, Options::default())
        });
        eprintln!(
            "windows: {start}, {} days, {} jobs, {} nodes: {} policies in {:.1} s",
            a.days,
            w.jobs.len(),
            w.nodes,
            rs.len(),
            t0.elapsed().as_secs_f64()
        );
        results.extend(rs.iter().map(|r| windows::WindowResult::new(&start, r)));
        if let Some(source) = source {
            let given = predictions::predictions(&jobs, &w.jobs, source);
            let truth = predictions::predictions(&jobs, &w.jobs, PredictionSource::Oracle);
            let all = Strategy::ALL;
            let rs = parallel(&all, &|&s| {
                strategies::simulate(&w, &cfg, &private, s, &given, &truth)
            });
            if source == PredictionSource::Learned {
                let run = |s: Strategy| &rs[all.iter().position(|x| *x == s).unwrap_or(0)];
                let runs = [
                    (PredictionSource::Oracle, run(Strategy::ShortestOracle)),
                    (PredictionSource::Learned, run(Strategy::ShortestPredicted)),
                ];
                spf.push(SpfWindow::new(&start, &w, &jobs, &runs));
            }
            by_strategy.extend(
                all.iter()
                    .zip(&rs)
                    .map(|(&s, r)| StrategyResult::new(&start, s, r)),
            );
        }
    }
    let summaries = windows::summarize(&results);
    let table = format!(
        "{}\n{}\n{}{}{}",
        windows::summary_table(&summaries),
        windows::goals(&summaries),
        windows::window_table(&results),
        spf_section(&spf),
        strategies::markdown(&by_strategy, &a.predictions)
    );
    write_text(&a.common.out.join("windows.md"), &table)?;
    write_text(
        &a.common.out.join("windows.json"),
        &serde_json::to_string_pretty(
            &serde_json::json!({ "summaries": summaries, "results": results, "spf": spf,
                "strategies": by_strategy }),
        )?,
    )?;
    println!("{table}");
    Ok(WindowsOut {
        results,
        spf,
        strategies: by_strategy,
        summaries,
        args: a.clone(),
    })
}

/// The learned predictions' section: their error per window and shortest-predicted-first
/// with them against the oracle (empty without learned predictions).
fn spf_section(spf: &[SpfWindow]) -> String {
    if spf.is_empty() {
        return String::new();
    }
    format!(
        "## Shortest-predicted-first: learned predictions against the oracle

Each job's prediction is learned only from the trace's own past, through the operator's own
predictor (`operator/src/predict/`): the runs that ended (by the trace's submission plus run
time) before the job was submitted, of the same tenant and GPU count, else of the same GPU
count, else none. The error is the median over the predicted jobs of |predicted − true| /
true; coverage is the share of jobs with a prediction. Both rows run kubetrain's policy with
every tenant's queue `ShortestPredictedFirst`: once with the learned predictions, once with
the true run times (the oracle). Jobs without a prediction wait behind those with one, in
FIFO order.

{}
",
        predictions::spf_table(spf)
    )
}

pub(super) fn write_windows_doc(docs: &Path, w: &WindowsOut) -> Result<()> {
    let path = docs.join("benchmarks-philly-windows.md");
    write_text(&path, &windows_markdown(w))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// docs/benchmarks-philly-windows.md, from a `windows` run.
fn windows_markdown(w: &WindowsOut) -> String {
    let a = &w.args;
    format!(
        "# Benchmarks — Setup B across Philly windows

Generated by `kubetrain-sim windows --docs docs` (which `make bench-docs` runs, through
`kubetrain-sim bench --full --docs docs`, for all four policies); do not edit by hand. [benchmarks.md](benchmarks.md) runs Setup B on one window;
a one-day shift of that window can reverse the sign of the JCT difference between two
policies, so Setup B is judged here, on the mean and the spread over {n} windows of {days}
days, starting {first} and every {step} days after, for {policies}. Each window's cluster is sized to that
window's load and its tenants' guarantees to their share of it, as in benchmarks.md
(30-minute checkpoints, 60 s acknowledgement for kubetrain's victims).

## Mean ± standard deviation (min–max) over the windows

{summary}
## Goals

{goals}
## Every window

{table}{spf}{strategies}",
        n = a.windows,
        policies = a.policy.join(", "),
        days = a.days,
        first = a.first,
        step = a.step,
        summary = windows::summary_table(&w.summaries),
        goals = windows::goals(&w.summaries),
        table = windows::window_table(&w.results),
        spf = spf_section(&w.spf),
        strategies = strategies::markdown(&w.strategies, &a.predictions),
    )
}
