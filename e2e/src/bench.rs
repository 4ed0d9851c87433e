//! Setup C's results as records, and the side-by-side report made from them.
//!
//! Each run of `e2e/tests/throughput.rs` appends one JSON line to the file named by
//! `KUBETRAIN_BENCH_RECORD` (when set). `kubetrain-bench-report` reads that file and prints
//! every system of each size in one table, with the goals judged against the same
//! run's peers; `make bench` prints it, `make bench-docs` writes it into
//! `docs/benchmarks-control-plane.md` between the [`BEGIN`] and [`END`] markers. Keeping the
//! numbers as data is what lets the tables be regenerated rather than kept by hand.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The environment variable naming the file that runs append their records to.
pub const RECORD_ENV: &str = "KUBETRAIN_BENCH_RECORD";
/// The markers around the generated part of the control-plane benchmarks doc.
pub const BEGIN: &str = "<!-- setup-c:generated:begin (make bench-docs rewrites this part) -->";
pub const END: &str = "<!-- setup-c:generated:end -->";

/// What was measured: kubetrain in one binding mode, or a peer.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// kubetrain, pods created pinned and bound by kube-scheduler (the default).
    KubetrainScheduler,
    /// kubetrain with `--binding direct`.
    KubetrainDirect,
    /// batch/v1 Jobs through the job controller and kube-scheduler.
    StockJobs,
    /// The same Jobs admitted by Kueue.
    Kueue,
    /// Bare pods created pinned to a node: kube-scheduler's ceiling for the default mode.
    PinnedPods,
}

impl System {
    fn label(self) -> &'static str {
        match self {
            Self::KubetrainScheduler => "kubetrain, kube-scheduler binding (default)",
            Self::KubetrainDirect => "kubetrain, `--binding direct`",
            Self::StockJobs => "stock batch/v1 Jobs (job controller + kube-scheduler)",
            Self::Kueue => "Kueue (+ job controller + kube-scheduler)",
            Self::PinnedPods => "pods pinned by affinity (kube-scheduler's ceiling)",
        }
    }

    /// The name in a sentence.
    fn short(self) -> &'static str {
        match self {
            Self::KubetrainScheduler => "kubetrain with kube-scheduler binding",
            Self::KubetrainDirect => "kubetrain binding directly",
            Self::StockJobs => "stock Jobs",
            Self::Kueue => "Kueue",
            Self::PinnedPods => "pinned pods",
        }
    }
}

/// The size of a run: the same for every system it is compared with.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct Size {
    pub nodes: u32,
    /// Objects submitted (for pinned pods: pods, as many as the others bind).
    pub jobs: usize,
    /// Pods per job.
    pub gang: usize,
    /// How long each pod runs when the pods outnumber the GPUs; `None`: until the end.
    pub run_seconds: Option<usize>,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pods = if self.gang == 1 {
            "one-GPU jobs".to_string()
        } else {
            format!("gangs of {} one-GPU pods", self.gang)
        };
        write!(
            f,
            "{} nodes ({} GPUs) × {} {pods}",
            thousands(self.nodes as usize),
            thousands(self.nodes as usize * 8),
            thousands(self.jobs),
        )?;
        match self.run_seconds {
            Some(r) => write!(f, ", each pod running {r} s"),
            None => Ok(()),
        }
    }
}

/// One throughput run of one system.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Throughput {
    pub system: System,
    pub size: Size,
    pub submit_secs: f64,
    /// From the first submission to the last job bound.
    pub all_bound_secs: f64,
    pub jobs_bound: usize,
    pub jobs_per_sec: f64,
    pub pods_per_sec: f64,
    pub p50_secs: f64,
    pub p99_secs: f64,
    pub writes_per_job: f64,
    /// The largest writes per job, "VERB resource" and count, largest first.
    pub top_writes: Vec<(String, f64)>,
    /// CPU seconds of each control-plane component over the run.
    pub control_plane_cpu: Vec<(String, f64)>,
    /// The system's own process, where it has one: what it is, CPU seconds, peak RSS (MiB).
    pub own: Option<(String, f64, f64)>,
    /// Kueue: Workloads admitted per second.
    pub admitted_per_sec: Option<f64>,
    pub profile: String,
}

/// One reclaim run: a guaranteed job arriving in a cluster full of bonus jobs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Reclaim {
    pub nodes: u32,
    /// When the first victim was asked to checkpoint; `None`: no victim was asked.
    pub victims_asked_secs: Option<f64>,
    pub owner_bound_secs: f64,
    pub grace_period_secs: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Record {
    Throughput(Throughput),
    Reclaim(Reclaim),
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading or writing {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}, line {line}: not a Setup C record: {source}")]
    Parse {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{0} has no markers {BEGIN:?} … {END:?} to write between")]
    NoMarkers(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Appends `record` to the file of [`RECORD_ENV`], when it is set.
pub fn record(record: &Record) -> Result<(), Error> {
    use std::io::Write;
    let Some(path) = std::env::var_os(RECORD_ENV) else {
        return Ok(());
    };
    let path = Path::new(&path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let line = serde_json::to_string(record).expect("a record serializes");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io(path))?;
    writeln!(f, "{line}").map_err(io(path))
}

/// The records of a file that [`record`] wrote, in their order.
pub fn read(path: &Path) -> Result<Vec<Record>, Error> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| Error::Parse {
                path: path.display().to_string(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Replaces what lies between the markers of `doc` with `generated`.
pub fn splice(doc: &str, generated: &str, name: &str) -> Result<String, Error> {
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        return Err(Error::NoMarkers(name.to_string()));
    };
    if e < b {
        return Err(Error::NoMarkers(name.to_string()));
    }
    Ok(format!(
        "{}{BEGIN}\n\n{}\n{}",
        &doc[..b],
        generated.trim_end(),
        &doc[e..]
    ))
}

/// Where the report came from, for its heading.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    pub date: String,
    pub commit: Option<String>,
    pub cores: usize,
}

/// The goals, as the report judges them.
const GOAL_TIMES_BEST_PEER: f64 = 2.0;
const GOAL_DIRECT_PODS_PER_SEC: f64 = 500.0;
const GOAL_DIRECT_P99_SECS: f64 = 2.0;
const GOAL_SHARE_OF_PINNED: f64 = 0.8;
const RECLAIM_SLACK_SECS: f64 = 5.0;

/// The side-by-side report of `records`, as Markdown: one table per size, every run of that
/// size in it, and each goal judged from the same file's runs.
pub fn report(records: &[Record], from: &Provenance) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Latest run (generated by `make bench-docs`)\n\n{}, {}; release build, one system \
         after another on the same control plane binaries and simulated nodes, no client QPS \
         limit. Rates on this machine move by up to 2× between runs of the same build; \
         compare systems within a table.\n",
        from.date,
        match (&from.commit, from.cores) {
            (Some(c), n) => format!("commit `{c}`, {n} cores"),
            (None, n) => format!("{n} cores"),
        }
    );
    let mut sizes: Vec<Size> = Vec::new();
    for r in records {
        if let Record::Throughput(t) = r
            && !sizes.contains(&t.size)
        {
            sizes.push(t.size);
        }
    }
    for size in &sizes {
        let runs: Vec<&Throughput> = records
            .iter()
            .filter_map(|r| match r {
                Record::Throughput(t) if t.size == *size => Some(t),
                _ => None,
            })
            .collect();
        table(&mut out, size, &runs);
    }
    let reclaims: Vec<&Reclaim> = records
        .iter()
        .filter_map(|r| match r {
            Record::Reclaim(c) => Some(c),
            _ => None,
        })
        .collect();
    if !reclaims.is_empty() {
        let _ = writeln!(out, "### Reclaim\n");
        for c in reclaims {
            let goal = c.grace_period_secs + RECLAIM_SLACK_SECS;
            let _ = writeln!(
                out,
                "- {} nodes, every GPU held by a bonus job, then an 8-GPU guaranteed job: \
                 {}, the owner's pod bound after **{:.2} s**. Goal: within the grace period + \
                 5 s ({goal:.0} s): {}.",
                thousands(c.nodes as usize),
                c.victims_asked_secs
                    .map_or("no victim asked".into(), |a| format!(
                        "victims asked after {a:.2} s"
                    )),
                c.owner_bound_secs,
                verdict(c.owner_bound_secs <= goal),
            );
        }
    }
    out
}

fn table(out: &mut String, size: &Size, runs: &[&Throughput]) {
    let _ = writeln!(out, "### {size}\n");
    if let Some(r) = size.run_seconds {
        // More pods than GPUs: the last wave of pods waits for the ones before it to finish,
        // whatever the system; pinned pods ask for no GPU and are not held to it.
        let gpus = size.nodes as usize * 8;
        let pods = size.jobs * size.gang;
        let waits = pods.div_ceil(gpus).saturating_sub(1) * r;
        let _ = writeln!(
            out,
            "More pods than GPUs ({}): the last pods can be bound no sooner than {waits} s \
             after the first, so no system can bind more than {:.0} pods/s over the run.\n",
            thousands(gpus),
            pods as f64 / waits.max(1) as f64,
        );
    }
    let _ = writeln!(
        out,
        "| system | pods bound/s | jobs admitted/s | submit → bound p50 / p99 | submitting took | \
         all bound after | API writes per job (largest) | kube-apiserver CPU-s | own process |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    let mut ordered = runs.to_vec();
    ordered.sort_by_key(|t| t.system);
    for t in &ordered {
        let largest: Vec<String> = t
            .top_writes
            .iter()
            .take(4)
            .map(|(k, v)| format!("{k} {v:.2}"))
            .collect();
        let apiserver = t
            .control_plane_cpu
            .iter()
            .find(|(n, _)| n == "kube-apiserver")
            .map_or("–".to_string(), |(_, c)| format!("{c:.1}"));
        let own = t.own.as_ref().map_or("–".to_string(), |(what, cpu, rss)| {
            format!("{what}: {cpu:.1} CPU-s, peak {rss:.0} MiB")
        });
        let admitted = match t.admitted_per_sec {
            Some(w) => format!("{:.0} (Workloads {w:.0})", t.jobs_per_sec),
            None => format!("{:.0}", t.jobs_per_sec),
        };
        let _ = writeln!(
            out,
            "| {} | **{:.0}** | {admitted} | {:.2} / {:.2} s | {:.1} s | {:.1} s | {:.1} ({}) | {apiserver} | {own} |",
            t.system.label(),
            t.pods_per_sec,
            t.p50_secs,
            t.p99_secs,
            t.submit_secs,
            t.all_bound_secs,
            t.writes_per_job,
            largest.join(", "),
        );
    }
    let _ = writeln!(out);
    for line in goals(runs) {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out);
}

/// The mean pods bound per second of a system's runs, if it ran.
fn rate(runs: &[&Throughput], system: System) -> Option<f64> {
    let r: Vec<f64> = runs
        .iter()
        .filter(|t| t.system == system)
        .map(|t| t.pods_per_sec)
        .collect();
    (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64)
}

/// Each goal of the peers issue that this size's runs can judge, with the numbers.
fn goals(runs: &[&Throughput]) -> Vec<String> {
    let mut lines = Vec::new();
    let best = [System::StockJobs, System::Kueue]
        .into_iter()
        .filter_map(|p| rate(runs, p).map(|r| (p, r)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    for mode in [System::KubetrainScheduler, System::KubetrainDirect] {
        if let (Some(k), Some((peer, p))) = (rate(runs, mode), best) {
            let x = k / p;
            lines.push(format!(
                "{}: {x:.2}× the best peer's rate ({}, {p:.0} pods/s). Goal ≥ {GOAL_TIMES_BEST_PEER:.0}×: {}.",
                mode.short(),
                peer.short(),
                verdict(x >= GOAL_TIMES_BEST_PEER),
            ));
        }
    }
    for t in runs.iter().filter(|t| t.system == System::KubetrainDirect) {
        lines.push(format!(
            "{}: {:.0} pods/s, p99 {:.2} s. Goal ≥ {GOAL_DIRECT_PODS_PER_SEC:.0} pods/s and p99 ≤ {GOAL_DIRECT_P99_SECS:.0} s: {}.",
            t.system.short(),
            t.pods_per_sec,
            t.p99_secs,
            verdict(
                t.pods_per_sec >= GOAL_DIRECT_PODS_PER_SEC && t.p99_secs <= GOAL_DIRECT_P99_SECS
            ),
        ));
    }
    if let (Some(k), Some(pinned)) = (
        rate(runs, System::KubetrainScheduler),
        rate(runs, System::PinnedPods),
    ) {
        let share = k / pinned;
        lines.push(format!(
            "{}: {:.0} % of the rate at which kube-scheduler binds pinned pods ({pinned:.0} pods/s). Goal ≥ {:.0} %: {}.",
            System::KubetrainScheduler.short(),
            share * 100.0,
            GOAL_SHARE_OF_PINNED * 100.0,
            verdict(share >= GOAL_SHARE_OF_PINNED),
        ));
    }
    lines
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

/// `12345` as `12,345`, as the docs write numbers.
fn thousands(n: usize) -> String {
    kubetrain::sim::report::thousands(n as u64)
}

/// The writes per job of a run, for [`Throughput::top_writes`]: `(key, per job)`, largest
/// first, those under 0.01 left out.
pub fn per_job(counts: impl Iterator<Item = (String, f64)>, jobs: usize) -> Vec<(String, f64)> {
    let mut rows: Vec<(String, f64)> = counts
        .map(|(k, v)| (k, v / jobs.max(1) as f64))
        .filter(|(_, v)| *v >= 0.01)
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(system: System, pods_per_sec: f64, p99: f64) -> Record {
        Record::Throughput(Throughput {
            system,
            size: Size {
                nodes: 100,
                jobs: 1000,
                gang: 1,
                run_seconds: Some(5),
            },
            submit_secs: 2.0,
            all_bound_secs: 1000.0 / pods_per_sec,
            jobs_bound: 1000,
            jobs_per_sec: pods_per_sec,
            pods_per_sec,
            p50_secs: p99 / 2.0,
            p99_secs: p99,
            writes_per_job: 10.0,
            top_writes: vec![("APPLY trainingjobs/status".into(), 2.5)],
            control_plane_cpu: vec![("kube-apiserver".into(), 30.0)],
            own: None,
            admitted_per_sec: None,
            profile: "release".into(),
        })
    }

    #[test]
    fn goals_are_judged_against_the_best_peer_of_the_same_file() {
        let records = vec![
            run(System::KubetrainScheduler, 40.0, 5.0),
            run(System::KubetrainDirect, 90.0, 1.5),
            run(System::StockJobs, 30.0, 10.0),
            run(System::Kueue, 45.0, 20.0),
            run(System::PinnedPods, 60.0, 2.0),
        ];
        let text = report(&records, &Provenance::default());
        // The best peer is Kueue here (45), so 40/45 and 90/45.
        assert!(
            text.contains("0.89× the best peer's rate (Kueue, 45 pods/s)"),
            "{text}"
        );
        assert!(text.contains("2.00× the best peer's rate"), "{text}");
        assert!(text.contains("Goal ≥ 2×: met"), "{text}");
        assert!(text.contains("Goal ≥ 2×: **missed**"), "{text}");
        // 90 pods/s is under 500 even with a p99 under 2 s.
        assert!(
            text.contains("90 pods/s, p99 1.50 s. Goal ≥ 500 pods/s and p99 ≤ 2 s: **missed**")
        );
        // 40 of the pinned 60.
        assert!(text.contains("67 % of the rate"), "{text}");
        assert!(
            text.contains("### 100 nodes (800 GPUs) × 1,000 one-GPU jobs, each pod running 5 s")
        );
    }

    #[test]
    fn a_size_without_a_peer_judges_nothing_it_cannot() {
        let records = vec![run(System::KubetrainScheduler, 40.0, 5.0)];
        let text = report(&records, &Provenance::default());
        assert!(!text.contains("Goal"), "{text}");
    }

    #[test]
    fn records_round_trip_and_splice_keeps_the_rest_of_the_doc() {
        let dir = std::env::temp_dir().join(format!("kubetrain-bench-{}", std::process::id()));
        let path = dir.join("runs.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let r = run(System::StockJobs, 30.0, 10.0);
        let c = Record::Reclaim(Reclaim {
            nodes: 100,
            victims_asked_secs: Some(0.2),
            owner_bound_secs: 3.4,
            grace_period_secs: 30.0,
        });
        let text = [&r, &c]
            .iter()
            .map(|x| serde_json::to_string(x).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(read(&path).unwrap(), vec![r, c.clone()]);
        let doc = format!("# Title\n\nintro\n\n{BEGIN}\nold\n{END}\n\n## History\n");
        let new = splice(&doc, "new table\n", "doc").unwrap();
        assert_eq!(
            new,
            format!("# Title\n\nintro\n\n{BEGIN}\n\nnew table\n{END}\n\n## History\n")
        );
        assert!(matches!(
            splice("no markers", "x", "doc"),
            Err(Error::NoMarkers(_))
        ));
        let rep = report(&[c], &Provenance::default());
        assert!(
            rep.contains(
                "bound after **3.40 s**. Goal: within the grace period + 5 s (35 s): met."
            ),
            "{rep}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
