//! `kubetrain-sim`: replays real traces through `kubetrain::sched` in simulated time.
//!
//! - `placement`: Setup A, the FGD protocol on the openb pod lists (allocation ratio at
//!   100 %/130 % arrived demand, fragmentation at 80/90 %), side by side with
//!   `fgd-baselines/fgd_summary.csv`.
//! - `tenants`: Setup B, a Philly window under four multi-tenant policies.
//! - `windows`: Setup B over several Philly windows, with each policy's mean and spread.
//! - `bench`: both, quick by default (`--full` for every trace, 10 seeds); `--docs docs`
//!   rewrites `docs/benchmarks.md` and `docs/img/*.svg` from the measured results.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use kubetrain::controller::workload::DEFAULT_HISTORY;
use kubetrain::sched::{Options, VictimSelection};
use kubetrain::sim::placement::{self, FgdRow, PlacementRun, PlacementSummary};
use kubetrain::sim::predictions::{self, PredictionSource, SpfWindow};
use kubetrain::sim::report::{MixRun, thousands};
use kubetrain::sim::strategies::{self, Strategy, StrategyResult};
use kubetrain::sim::tenants::{self, Policy, PolicyResult, TenantConfig, Workload};
use kubetrain::sim::{fgd, openb, philly, report, windows, write_text};

mod docs;
mod windows_run;

use docs::write_docs;
use windows_run::{run_windows, write_windows_doc};

#[derive(Parser)]
#[command(
    name = "kubetrain-sim",
    about = "Trace-driven simulator and benchmarks for kubetrain's scheduling core"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Setup A: placement quality, FGD protocol on openb.
    Placement(PlacementArgs),
    /// Setup B: multi-tenant quality on a Philly window.
    Tenants(TenantArgs),
    /// Setup B over several Philly windows: mean and spread per policy.
    Windows(WindowArgs),
    /// Setups A and B (quick unless --full), optionally rewriting docs/benchmarks.md.
    Bench(BenchArgs),
}

#[derive(Args, Clone)]
struct Common {
    /// Folder holding openb/, philly/ and fgd-baselines/.
    #[arg(long, default_value = "../shared/traces")]
    traces: PathBuf,
    /// Where JSON, CSV and markdown results go.
    #[arg(long, default_value = "target/sim")]
    out: PathBuf,
}

#[derive(Args, Clone)]
struct PlacementArgs {
    #[command(flatten)]
    common: Common,
    /// Pod lists by name (`default`, `gpuspec20`, ... or the file stem); `all` for every one.
    #[arg(long, value_delimiter = ',', default_value = "default")]
    workload: Vec<String>,
    /// Number of seeds, starting at --first-seed.
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    #[arg(long, default_value_t = 42)]
    first_seed: u64,
    /// Arrived demand to reach, % of the cluster's GPUs.
    #[arg(long, default_value_t = 130)]
    target: u32,
    /// Where the fragmentation score's shape mix comes from.
    #[arg(long, value_enum, default_value = "learned")]
    mix: placement::ShapeMix,
    /// With `--mix history`: arrivals the history keeps (the operator's `--workload-history`).
    #[arg(long, default_value_t = DEFAULT_HISTORY)]
    history: u32,
    /// Who places the pods: kubetrain's core, or the FGD peer (`sim::fgd`).
    #[arg(long, value_enum, default_value = "kubetrain")]
    placer: Placer,
    /// With `--placer fgd`: added to FGD's score before it is rounded down (0: as published).
    /// Moves where equal scores begin and end, to see how much a result rests on that.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    fgd_rounding: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Placer {
    Kubetrain,
    Fgd,
}

#[derive(Args, Clone)]
struct TenantArgs {
    #[command(flatten)]
    common: Common,
    /// First day of the window (UTC).
    #[arg(long, default_value = "2017-09-25")]
    window_start: String,
    #[arg(long, default_value_t = 28)]
    days: i64,
    /// Mean utilisation the cluster is sized for.
    #[arg(long, default_value_t = 0.85)]
    load: f64,
    #[arg(long, default_value_t = 16)]
    rack_nodes: u32,
    /// Seconds between periodic checkpoints.
    #[arg(long, default_value_t = 1800)]
    ckpt_interval: i64,
    /// Seconds a kubetrain victim takes to acknowledge a checkpoint request.
    #[arg(long, default_value_t = 60)]
    ack_delay: i64,
    /// Seconds between scheduling cycles.
    #[arg(long, default_value_t = 60)]
    tick: i64,
    /// Policies to run (strict-quota, lend-kill-restart, hived-like, kubetrain).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "strict-quota,lend-kill-restart,hived-like,kubetrain"
    )]
    policy: Vec<String>,
    /// Also run kubetrain with scattered (flavor-wide) and count-only victim selection, to
    /// measure what whole-domain selection is worth.
    #[arg(long)]
    ablation: bool,
}

#[derive(Args, Clone)]
struct WindowArgs {
    #[command(flatten)]
    common: Common,
    /// First day of the first window (UTC).
    #[arg(long, default_value = "2017-09-24")]
    first: String,
    /// Number of windows.
    #[arg(long, default_value_t = 8)]
    windows: usize,
    /// Days between two windows' starts.
    #[arg(long, default_value_t = 7)]
    step: i64,
    /// Length of each window, days.
    #[arg(long, default_value_t = 28)]
    days: i64,
    /// Policies to run (strict-quota, lend-kill-restart, hived-like, kubetrain).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "strict-quota,lend-kill-restart,hived-like,kubetrain"
    )]
    policy: Vec<String>,
    /// Also compare the queueing strategies (FIFO, Strict, Backfill, shortest-predicted-first,
    /// the oracle), with predictions from this source: `learned` (from the trace's own past,
    /// through the operator's predictor; also reports their error), `oracle` (the true
    /// durations), or `none` to skip them.
    #[arg(long, default_value = "learned")]
    predictions: String,
    /// Rewrite <docs>/benchmarks-philly-windows.md (as `bench --full --docs` does).
    #[arg(long)]
    docs: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct BenchArgs {
    #[command(flatten)]
    common: Common,
    /// Every openb trace with 10 seeds and a 28-day Philly window (instead of `default` with
    /// 3 seeds and 14 days).
    #[arg(long)]
    full: bool,
    /// Rewrite <docs>/benchmarks.md and <docs>/img/*.svg.
    #[arg(long)]
    docs: Option<PathBuf>,
    /// With `--full`, leave out the Philly windows (about an hour on 2 cores), and with them
    /// the rewrite of <docs>/benchmarks-philly-windows.md; `kubetrain-sim windows --docs`
    /// runs them alone.
    #[arg(long)]
    no_windows: bool,
}

const WORKLOADS: [&str; 9] = [
    "default",
    "cpu050",
    "cpu100",
    "gpushare40",
    "gpushare60",
    "gpuspec10",
    "gpuspec20",
    "multigpu20",
    "multigpu30",
];

fn workload_names(list: &[String]) -> Vec<String> {
    if list.iter().any(|w| w == "all") {
        return WORKLOADS
            .iter()
            .map(|w| format!("openb_pod_list_{w}"))
            .collect();
    }
    list.iter()
        .map(|w| {
            if w.starts_with("openb_pod_list_") {
                w.clone()
            } else {
                format!("openb_pod_list_{w}")
            }
        })
        .collect()
}

/// Run `f` over `items` on all cores, results in item order.
fn parallel<T: Sync, R: Send>(items: &[T], f: &(dyn Fn(&T) -> R + Sync)) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    out.sort_by_key(|x| x.0);
    out.into_iter().map(|x| x.1).collect()
}

struct PlacementOut {
    sums: Vec<PlacementSummary>,
    fgd: Vec<FgdRow>,
    /// The same runs with the mix learned online from a rolling history of arrivals, as
    /// the operator learns it by default (`bench` only).
    history: Vec<PlacementSummary>,
    /// The same runs with the trace's shape distribution supplied (`bench` only).
    supplied: Vec<PlacementSummary>,
    /// FGD placing the same seeds in this harness (`bench` only).
    peer: Vec<PlacementSummary>,
}

fn run_placement(a: &PlacementArgs) -> Result<PlacementOut> {
    let dir = &a.common.traces;
    let nodes = openb::read_nodes(&dir.join("openb/openb_node_list_gpu_node.csv"))?;
    let fgd = placement::read_fgd(&dir.join("fgd-baselines/fgd_summary.csv")).unwrap_or_else(|e| {
        eprintln!("warning: no FGD baselines ({e})");
        Vec::new()
    });
    let mut sums = Vec::new();
    let mut all_runs: Vec<PlacementRun> = Vec::new();
    for w in workload_names(&a.workload) {
        let pods = openb::read_pods(&dir.join(format!("openb/{w}.csv")))?;
        let seeds: Vec<u64> = (a.first_seed..a.first_seed + a.seeds).collect();
        let t0 = Instant::now();
        let runs = parallel(&seeds, &|&seed| match a.placer {
            Placer::Kubetrain => placement::run(
                &w,
                &nodes,
                &pods,
                seed,
                a.target,
                placement::MixSettings {
                    mix: a.mix,
                    history: a.history,
                },
            ),
            Placer::Fgd => fgd::run(&w, &nodes, &pods, seed, a.target, a.fgd_rounding),
        });
        let Some(sum) = placement::summarize(&runs) else {
            bail!("no seeds to run")
        };
        eprintln!(
            "placement {w}: {} seeds, alloc@100 {:.2} %, alloc@130 {:.2} %, frag ratio@90 {:.1} % ({:.1} s)",
            sum.seeds,
            sum.alloc_100,
            sum.alloc_130,
            sum.frag_ratio_90,
            t0.elapsed().as_secs_f64()
        );
        sums.push(sum);
        all_runs.extend(runs);
    }
    let out = &a.common.out;
    write_text(
        &out.join("placement.json"),
        &serde_json::to_string_pretty(&serde_json::json!({ "summaries": sums, "runs": all_runs }))?,
    )?;
    let table = report::placement_table(&sums, &fgd);
    write_text(&out.join("placement.md"), &table)?;
    println!("{table}");
    Ok(PlacementOut {
        sums,
        fgd,
        history: Vec::new(),
        supplied: Vec::new(),
        peer: Vec::new(),
    })
}

impl PlacementOut {
    /// kubetrain's runs by shape mix, the snapshot's first; the mixes not run left out.
    fn mixes(&self) -> Vec<MixRun<'_>> {
        [
            ("snapshot", &self.sums),
            ("history", &self.history),
            ("supplied", &self.supplied),
        ]
        .into_iter()
        .filter(|(_, sums)| !sums.is_empty())
        .map(|(label, sums)| MixRun { label, sums })
        .collect()
    }
}

struct TenantOut {
    cfg: TenantConfig,
    workload: Workload,
    results: Vec<PolicyResult>,
    /// kubetrain with the other victim selections, when asked for.
    ablation: Vec<PolicyResult>,
    private_s: f64,
}

fn run_tenants(a: &TenantArgs) -> Result<TenantOut> {
    let jobs = philly::read_jobs(&a.common.traces.join("philly/philly_jobs.csv"))?;
    let cfg = TenantConfig {
        window_start: philly::parse_time(&a.window_start)
            .with_context(|| format!("bad --window-start {}", a.window_start))?,
        window_days: a.days,
        load: a.load,
        rack_nodes: a.rack_nodes,
        ckpt_interval: a.ckpt_interval,
        ack_delay: a.ack_delay,
        tick: a.tick,
        ..TenantConfig::default()
    };
    let policies = parse_policies(&a.policy)?;
    let w = tenants::prepare(&jobs, &cfg)?;
    eprintln!(
        "tenants: {} jobs from {} over {} days, {} tenants, mean demand {:.0} GPUs -> {} nodes ({} GPUs) in racks of {}",
        w.jobs.len(),
        a.window_start,
        a.days,
        w.tenants.len(),
        w.mean_demand_gpus,
        w.nodes,
        w.nodes * 8,
        cfg.rack_nodes
    );
    let t0 = Instant::now();
    let private = tenants::private_delays(&w, &cfg);
    let private_s = t0.elapsed().as_secs_f64();
    eprintln!("tenants: private clusters simulated in {private_s:.1} s");
    let mut runs: Vec<(Policy, Options)> =
        policies.iter().map(|&p| (p, Options::default())).collect();
    let ablate = a.ablation && policies.contains(&Policy::Kubetrain);
    if ablate {
        for victims in [VictimSelection::Scattered, VictimSelection::CountOnly] {
            runs.push((
                Policy::Kubetrain,
                Options {
                    victims,
                    ..Options::default()
                },
            ));
        }
    }
    let mut results = parallel(&runs, &|&(p, o)| {
        let r = tenants::simulate_with(&w, &cfg, p, &private, o);
        eprintln!(
            "tenants {} ({} victims): {} cycles in {:.1} s",
            r.name,
            tenants::victims_label(o.victims),
            r.cycles,
            r.seconds
        );
        r
    });
    let ablation = results.split_off(policies.len());
    let out = &a.common.out;
    for r in &results {
        write_text(
            &out.join(format!("jobs-{}.csv", r.name)),
            &report::jobs_csv(&r.records),
        )?;
    }
    write_text(
        &out.join("tenants.json"),
        &serde_json::to_string_pretty(
            &serde_json::json!({ "config": cfg, "workload": w, "results": results }),
        )?,
    )?;
    let mut table = format!(
        "{}\n{}",
        report::tenants_table(&results),
        report::tenant_detail_table(&results)
    );
    if let Some(k) = results.iter().find(|r| r.policy == Policy::Kubetrain)
        && !ablation.is_empty()
    {
        let mut rows = vec![k];
        rows.extend(&ablation);
        table.push('\n');
        table.push_str(&report::reclaim_table(&rows));
        write_text(
            &out.join("ablation-victims.json"),
            &serde_json::to_string_pretty(&ablation)?,
        )?;
    }
    write_text(&out.join("tenants.md"), &table)?;
    println!("{table}");
    Ok(TenantOut {
        cfg,
        workload: w,
        results,
        ablation,
        private_s,
    })
}

/// The policies named by `--policy`.
fn parse_policies(names: &[String]) -> Result<Vec<Policy>> {
    names
        .iter()
        .map(|p| Policy::from_name(p).with_context(|| format!("unknown policy {p}")))
        .collect()
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Placement(a) => {
            run_placement(&a)?;
        }
        Cmd::Tenants(a) => {
            run_tenants(&a)?;
        }
        Cmd::Windows(a) => {
            let w = run_windows(&a)?;
            if let Some(docs) = &a.docs {
                write_windows_doc(docs, &w)?;
            }
        }
        Cmd::Bench(b) => {
            let t0 = Instant::now();
            let pa = PlacementArgs {
                common: b.common.clone(),
                workload: vec![if b.full {
                    "all".into()
                } else {
                    "default".into()
                }],
                seeds: if b.full { 10 } else { 3 },
                first_seed: 42,
                target: 130,
                mix: placement::ShapeMix::Learned,
                history: DEFAULT_HISTORY,
                placer: Placer::Kubetrain,
                fgd_rounding: 0.0,
            };
            let mut p = run_placement(&pa)?;
            // the same runs with the mix learned online, as the operator does in a cluster
            p.history = run_placement(&PlacementArgs {
                mix: placement::ShapeMix::History,
                ..pa.clone()
            })?
            .sums;
            // the same runs with the trace's shape distribution supplied, as FGD gets it
            p.supplied = run_placement(&PlacementArgs {
                mix: placement::ShapeMix::Supplied,
                ..pa.clone()
            })?
            .sums;
            // FGD itself on the same seeds, in this harness
            p.peer = run_placement(&PlacementArgs {
                placer: Placer::Fgd,
                ..pa
            })?
            .sums;
            let ta = TenantArgs {
                common: b.common.clone(),
                window_start: "2017-09-25".into(),
                days: if b.full { 28 } else { 14 },
                load: 0.85,
                rack_nodes: 16,
                ckpt_interval: 1800,
                ack_delay: 60,
                tick: 60,
                policy: Policy::ALL.iter().map(|p| p.name().to_string()).collect(),
                ablation: true,
            };
            let t = run_tenants(&ta)?;
            // Windows are judged only in full; the quick form keeps `make bench` short.
            let w = if b.full && !b.no_windows {
                Some(run_windows(&WindowArgs {
                    common: b.common.clone(),
                    first: "2017-09-24".into(),
                    windows: 8,
                    step: 7,
                    days: 28,
                    policy: Policy::ALL.iter().map(|p| p.name().to_string()).collect(),
                    predictions: "learned".into(),
                    docs: None,
                })?)
            } else {
                None
            };
            let total = t0.elapsed().as_secs_f64();
            eprintln!("bench: {total:.0} s");
            if let Some(docs) = &b.docs {
                write_docs(docs, b.full, &p, &t, total)?;
                if let Some(w) = &w {
                    write_windows_doc(docs, w)?;
                }
            }
        }
    }
    Ok(())
}
