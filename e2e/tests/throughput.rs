//! Setup C of the benchmark issue: control-plane throughput against the real API server.
//! Ignored in `make test`; `make bench` runs it. Sizes come from the environment:
//! `KUBETRAIN_BENCH_NODES` (default 100, 8 GPUs each) and `KUBETRAIN_BENCH_JOBS` (default
//! 1000), 1-GPU jobs. When the jobs outnumber the GPUs they run `KUBETRAIN_BENCH_RUN_SECONDS`
//! (default 5) so every one gets its turn; otherwise they run until the end. Every job must be
//! bound within 600 s, or a fifth of a second per job when that is longer.
//!
//! `submit_to_bound_throughput` prints jobs admitted per second, pods bound per second and
//! submit → bound p50/p99 (in the binding mode of `KUBETRAIN_BINDING`); beside it, on the same
//! control plane and the same kind of simulated nodes, `stock_jobs_throughput` does the same
//! for batch/v1 Jobs through the job controller and kube-scheduler (no operator in the
//! process), and `pinned_pods_bind_rate` measures how fast kube-scheduler binds pods already
//! created pinned to a node (the ceiling of kubetrain's default binding mode), and
//! `kueue_jobs_throughput` runs the same Jobs through Kueue (`e2e/src/kueue.rs`: its manager
//! built from the Go module that `e2e/kueue/go.mod` pins, a ClusterQueue and LocalQueue equal
//! to the VirtualCluster and Queue kubetrain gets). Every run prints the API server's write
//! requests per job by verb and resource (`submit_to_bound_throughput` counts them once every
//! job shows `startedAt`, when its pods run until the end, so a job's whole way to Running is
//! in). `reclaim_latency` fills every GPU with bonus (borrowed) jobs and
//! times a guaranteed job's arrival → its victims asked to checkpoint → its pod bound (which
//! the operator does only once the victims' pods are gone). Both print the resident memory
//! of the test process (VmRSS, and its peak VmHWM), which runs the operator in-process
//! together with the simulated-node agent and this client. The client has no QPS limit:
//! kube-rs has no client-side rate limiter, and neither the operator nor the bench sets one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kubetrain::api::TrainingJob;
use kubetrain_e2e::bench::{self, Record, System};
use kubetrain_e2e::process;
use kubetrain_e2e::scenario::Scenario;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// When a quarter, half, three quarters and all of `times` had happened, in seconds after
/// `start`: where a run's time went (submitting, the pods' creation, their binding).
fn quartiles<'a>(start: Instant, times: impl IntoIterator<Item = &'a Instant>) -> String {
    let mut secs: Vec<f64> = times
        .into_iter()
        .map(|t| t.duration_since(start).as_secs_f64())
        .collect();
    if secs.is_empty() {
        return "-".into();
    }
    secs.sort_by(f64::total_cmp);
    let [a, b, c, d] = [0.25, 0.5, 0.75, 1.0].map(|q| pct(&secs, q));
    format!("{a:.1}/{b:.1}/{c:.1}/{d:.1}s")
}

/// The build profile, for the printed lines: a debug operator costs about three times the CPU.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Requests the API server has served so far, by "VERB resource[/subresource]", read from
/// its own `/metrics` (`apiserver_request_total`) through kubectl.
fn api_requests(s: &Scenario) -> BTreeMap<String, f64> {
    let text =
        s.cp.kubectl_ok(&["get", "--raw", "/metrics"])
            .unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let labels: BTreeMap<&str, &str> = labels
            .split("\",")
            .filter_map(|kv| kv.split_once("=\""))
            .map(|(k, v)| (k, v.trim_end_matches('"')))
            .collect();
        let verb = labels.get("verb").copied().unwrap_or_default();
        let resource = match labels.get("subresource").copied().unwrap_or_default() {
            "" => labels
                .get("resource")
                .copied()
                .unwrap_or_default()
                .to_string(),
            sub => format!(
                "{}/{sub}",
                labels.get("resource").copied().unwrap_or_default()
            ),
        };
        *out.entry(format!("{verb} {resource}")).or_default() +=
            value.parse::<f64>().unwrap_or(0.0);
    }
    out
}

/// The control plane's CPU seconds between two `ControlPlane::component_cpu` readings, by
/// component (what the run cost the cluster besides the test process).
fn cluster_cpu(before: &[(&str, f64)], after: &[(&str, f64)]) -> Vec<(String, f64)> {
    after
        .iter()
        .map(|(name, a)| {
            let b = before
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0.0, |(_, b)| *b);
            (name.to_string(), a - b)
        })
        .collect()
}

/// [`cluster_cpu`] as one line.
fn cluster_cpu_line(cpu: &[(String, f64)]) -> String {
    let parts: Vec<String> = cpu.iter().map(|(n, c)| format!("{n} {c:.1}")).collect();
    format!("control plane CPU-s {}", parts.join(", "))
}

/// The API requests per job between two [`api_requests`] readings.
struct Requests {
    writes: Vec<(String, f64)>,
    reads: Vec<(String, f64)>,
}

impl Requests {
    fn between(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, jobs: usize) -> Self {
        Self {
            writes: bench::per_job(requests_of(before, after, WRITES), jobs),
            reads: bench::per_job(requests_of(before, after, READS), jobs),
        }
    }

    fn writes_per_job(&self) -> f64 {
        self.writes.iter().map(|(_, v)| v).sum()
    }
}

impl std::fmt::Display for Requests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = |r: &[(String, f64)]| {
            r.iter()
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "{:.1} API writes per job ({}) and {:.1} reads ({})",
            self.writes_per_job(),
            rows(&self.writes),
            self.reads.iter().map(|(_, v)| v).sum::<f64>(),
            rows(&self.reads),
        )
    }
}

const WRITES: &[&str] = &["POST", "PUT", "PATCH", "APPLY", "DELETE"];
/// A WATCH counts once when it starts, however many events it then carries.
const READS: &[&str] = &["GET", "LIST", "WATCH"];

/// The requests of the given verbs served between two [`api_requests`] readings.
fn requests_of<'a>(
    before: &'a BTreeMap<String, f64>,
    after: &'a BTreeMap<String, f64>,
    verbs: &'a [&str],
) -> impl Iterator<Item = (String, f64)> + 'a {
    after
        .iter()
        .filter(|(k, _)| verbs.iter().any(|v| k.split(' ').next() == Some(*v)))
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
}

/// The Events of the run's namespace by reason, per job, as one line: which writers the
/// `POST events` of [`writes_per_job`] come from. An Event counts once per occurrence (its
/// `count`, or its series' count), so aggregated repeats are counted too.
async fn events_per_job(s: &Scenario, jobs: usize) -> String {
    let Ok(client) = s.cp.client().await else {
        return "Events by reason: no client".into();
    };
    let api: Api<Event> = Api::namespaced(client, &s.ns);
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    let mut lp = ListParams::default().limit(500);
    loop {
        let Ok(page) = api.list(&lp).await else {
            return "Events by reason: list failed".into();
        };
        for e in &page.items {
            let n = e
                .series
                .as_ref()
                .and_then(|x| x.count)
                .or(e.count)
                .unwrap_or(1)
                .max(1);
            *by.entry(e.reason.clone().unwrap_or_default()).or_default() += f64::from(n);
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => break,
        }
    }
    let rows = bench::per_job(by.into_iter(), jobs);
    let total: f64 = rows.iter().map(|(_, v)| v).sum();
    let rows: Vec<String> = rows.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
    format!("{total:.2} Events per job by reason ({})", rows.join(", "))
}

/// When every pod of each job (its gang: `KUBETRAIN_BENCH_GANG` pods, 1 by default) was first
/// seen bound to a node (`spec.nodeName`, set at creation with `--binding direct`, by
/// kube-scheduler's binding otherwise), and when a checkpoint request first appeared, by job,
/// from a watch of the namespace's pods labelled `label`.
#[derive(Default)]
struct Seen {
    bound: BTreeMap<String, Instant>,
    checkpoint: BTreeMap<String, Instant>,
    /// Pods seen bound, by job, until the whole gang is.
    partial: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// By job: when a pod of it was first seen created, acknowledging a checkpoint, being
    /// deleted, and gone (the reclaim's timeline).
    created: BTreeMap<String, Instant>,
    acknowledged: BTreeMap<String, Instant>,
    deleting: BTreeMap<String, Instant>,
    gone: BTreeMap<String, Instant>,
}

/// How long each pod runs (`KUBETRAIN_BENCH_RUN_SECONDS`, 5 by default) when the pods
/// outnumber the GPUs, so every one gets its turn; `None`: they run until the end.
fn run_seconds(pods: usize, gpus: usize) -> Option<usize> {
    (pods > gpus).then(|| env("KUBETRAIN_BENCH_RUN_SECONDS", 5))
}

/// The operator's and the simulated nodes' logs on stderr, when `RUST_LOG` asks for them
/// (they run in this process, which has no subscriber otherwise).
fn log_to_stderr() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Pods per job in the runs that take it from the environment.
fn gang() -> usize {
    env("KUBETRAIN_BENCH_GANG", 1).max(1)
}

/// The size every system of this run is measured at, from the environment: the key that
/// puts kubetrain and its peers side by side in the report.
fn bench_size() -> bench::Size {
    let nodes = env("KUBETRAIN_BENCH_NODES", 100);
    let jobs = env("KUBETRAIN_BENCH_JOBS", 1000);
    bench::Size {
        nodes: nodes as u32,
        jobs,
        gang: gang(),
        run_seconds: run_seconds(jobs * gang(), nodes * 8),
    }
}

fn watch_pods(pods: Api<Pod>) -> (Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    watch_bound(pods, "kubetrain.io/job", gang())
}

fn watch_bound(
    pods: Api<Pod>,
    label: &'static str,
    per_job: usize,
) -> (Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(pods, watcher::Config::default().labels(label)).default_backoff();
        futures::pin_mut!(stream);
        while let Some(Ok(event)) = stream.next().await {
            let now = Instant::now();
            let (p, deleted) = match event {
                watcher::Event::Apply(p) | watcher::Event::InitApply(p) => (p, false),
                watcher::Event::Delete(p) => (p, true),
                _ => continue,
            };
            let Some(job) = p.metadata.labels.as_ref().and_then(|l| l.get(label)) else {
                continue;
            };
            let mut seen = out.lock().unwrap_or_else(|e| e.into_inner());
            seen.created.entry(job.clone()).or_insert(now);
            if deleted {
                seen.gone.entry(job.clone()).or_insert(now);
                continue;
            }
            if p.metadata.deletion_timestamp.is_some() {
                seen.deleting.entry(job.clone()).or_insert(now);
            }
            if p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kubetrain.io/checkpoint-done"))
            {
                seen.acknowledged.entry(job.clone()).or_insert(now);
            }
            if p.spec.as_ref().is_some_and(|s| s.node_name.is_some())
                && !seen.bound.contains_key(job)
            {
                let pods = seen.partial.entry(job.clone()).or_default();
                pods.insert(p.metadata.name.clone().unwrap_or_default());
                if pods.len() >= per_job {
                    seen.partial.remove(job);
                    seen.bound.insert(job.clone(), now);
                }
            }
            if p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kubetrain.io/checkpoint-requested"))
            {
                seen.checkpoint.entry(job.clone()).or_insert(now);
            }
        }
    });
    (seen, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn submit_to_bound_throughput() {
    log_to_stderr();
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let jobs = env("KUBETRAIN_BENCH_JOBS", 1000);
    let gpus = nodes as usize * 8;
    let gang = gang();
    let run_seconds = run_seconds(jobs * gang, gpus);
    let s = Scenario::new("bench", nodes, 8, (nodes / 20).max(1)).await;
    let q = s.tenant("bench", nodes * 8, "FIFO", "");
    let client = s.cp.client().await.expect("client");
    let api: Api<TrainingJob> = Api::namespaced(client.clone(), &s.ns);
    let (seen, watch) = watch_pods(Api::namespaced(client, &s.ns));
    let run = run_seconds.map(|r| r.to_string());
    let sim: Vec<(&str, &str)> = run.iter().map(|r| ("run-seconds", r.as_str())).collect();
    let manifests: Vec<TrainingJob> = (0..jobs)
        .map(|i| {
            serde_norway::from_str(&s.job(&format!("j{i}"), &q, gang as u32, 1, &sim, ""))
                .expect("job manifest")
        })
        .collect();
    let (rss_before, _) = process::memory_mib(std::process::id());
    let (cpu_before, _) = process::usage(std::process::id());
    let writes_before = api_requests(&s);
    let cpu_cluster_before = s.cp.component_cpu();
    let start = Instant::now();
    let submitted = create_all(&api, manifests).await;
    let submit_secs = start.elapsed().as_secs_f64();
    // Generous: 10,000 jobs on this 2-core machine take several minutes.
    let limit = Duration::from_secs(600.max(jobs as u64 / 5));
    let deadline = Instant::now() + limit;
    loop {
        let n = seen.lock().unwrap_or_else(|e| e.into_inner()).bound.len();
        if n >= jobs || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let bound = seen.lock().unwrap_or_else(|e| e.into_inner()).bound.clone();
    let timed = Timed {
        start,
        submit_secs,
        submitted: &submitted,
        bound: &bound,
    };
    let (rss, hwm) = process::memory_mib(std::process::id());
    let cpu = process::usage(std::process::id()).0 - cpu_before;
    let created = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .created
        .clone();
    // The writes of a job's way to Running (its status once every replica runs, the Events)
    // land after its binding: count them all, so that a faster run does not seem to write
    // less. Without a run time the pods run until the end, so every job reaches startedAt.
    let settled = if run_seconds.is_none() {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let started = api
                .list(&Default::default())
                .await
                .map(|l| {
                    l.items
                        .iter()
                        .filter(|j| j.status.as_ref().is_some_and(|s| s.started_at.is_some()))
                        .count()
                })
                .unwrap_or(0);
            if started >= jobs || Instant::now() > deadline {
                break started;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    } else {
        0
    };
    // The last Events land within a few seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = Requests::between(&writes_before, &api_requests(&s), jobs);
    let cluster = cluster_cpu(&cpu_cluster_before, &s.cp.component_cpu());
    let system = match kubetrain_e2e::operator::binding() {
        kubetrain::controller::pods::Binding::Direct => System::KubetrainDirect,
        kubetrain::controller::pods::Binding::Scheduler => System::KubetrainScheduler,
    };
    let own = (
        "test process (operator, simulated kubelets, client)",
        cpu,
        hwm,
    );
    let result = timed.record(system, bench_size(), gang, &requests, cluster, Some(own));
    let line = format!(
        "throughput ({:?} binding): {nodes} nodes, {jobs} jobs of {gang} 1-GPU pod(s){}: submitted in {submit_secs:.1}s, all bound in {:.1}s; {:.0} jobs admitted/s, {:.0} pods bound/s; submit→bound p50 {:.2}s p99 {:.2}s; 25/50/75/100 % submitted by {}, first pod created by {}, bound by {}; test process (operator, simulated kubelets and client) {cpu:.1} CPU-s during the run, RSS {rss:.0} MiB (peak {hwm:.0} MiB, {rss_before:.0} MiB before submitting); {} profile",
        kubetrain_e2e::operator::binding(),
        run_seconds.map_or(String::new(), |r| format!(" running {r}s each")),
        result.all_bound_secs,
        result.jobs_per_sec,
        result.pods_per_sec,
        result.p50_secs,
        result.p99_secs,
        quartiles(start, submitted.values()),
        quartiles(start, created.values()),
        quartiles(start, bound.values()),
        profile(),
    );
    s.timing(&line);
    println!("{line}");
    let events = events_per_job(&s, jobs).await;
    let line = format!(
        "throughput: {requests}, the simulated kubelet's included{}; {events}; {}",
        if run_seconds.is_none() {
            format!(", counted once {settled} of {jobs} jobs showed startedAt")
        } else {
            String::new()
        },
        cluster_cpu_line(&result.control_plane_cpu),
    );
    s.timing(&line);
    println!("{line}");
    watch.abort();
    assert_eq!(
        bound.len(),
        jobs,
        "not every job was bound within {} s",
        limit.as_secs()
    );
    bench::record(&Record::Throughput(result)).expect("record the run");
    s.finish().await;
}

/// The bonus jobs' checkpoint grace period in `reclaim_latency`: the goal is the owner bound
/// within it + 5 s.
const RECLAIM_GRACE_SECONDS: u32 = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn reclaim_latency() {
    log_to_stderr();
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let gpus = nodes as usize * 8;
    let s = Scenario::new("reclaimbench", nodes, 8, (nodes / 20).max(1)).await;
    let owner = s.tenant("owner", nodes * 8, "FIFO", "");
    let borrower = s.tenant("borrower", 0, "FIFO", "");
    let client = s.cp.client().await.expect("client");
    let api: Api<TrainingJob> = Api::namespaced(client.clone(), &s.ns);
    let (seen, watch) = watch_pods(Api::namespaced(client, &s.ns));
    // Every GPU borrowed by 1-GPU bonus jobs that acknowledge a checkpoint after 1 s.
    let manifests: Vec<TrainingJob> = (0..gpus)
        .map(|i| {
            serde_norway::from_str(&s.job(
                &format!("b{i}"),
                &borrower,
                1,
                1,
                &[("checkpoint-delay-seconds", "1")],
                &format!("  checkpoint:\n    gracePeriodSeconds: {RECLAIM_GRACE_SECONDS}\n"),
            ))
            .expect("job manifest")
        })
        .collect();
    let start = Instant::now();
    create_all(&api, manifests).await;
    let deadline = Instant::now() + Duration::from_secs(600);
    while seen.lock().unwrap_or_else(|e| e.into_inner()).bound.len() < gpus {
        assert!(
            Instant::now() < deadline,
            "the bonus jobs were not all bound"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let filled = start.elapsed().as_secs_f64();
    // Let the job statuses settle (Running, bonus) before the owner arrives.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let own: TrainingJob =
        serde_norway::from_str(&s.job("own", &owner, 1, 8, &[], "")).expect("job manifest");
    let submitted = Instant::now();
    api.create(&PostParams::default(), &own)
        .await
        .expect("create job");
    let limit = Duration::from_secs(120.max(gpus as u64 / 20));
    let deadline = submitted + limit;
    let (asked, bound) = loop {
        {
            let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(b) = seen.bound.get("own") {
                break (seen.checkpoint.values().min().copied(), *b);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the owner was not bound in {} s; victims asked to checkpoint: {}",
            limit.as_secs(),
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .checkpoint
                .len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Where the time went, from the watch: each victim's checkpoint request, acknowledgement,
    // deletion and disappearance, then the owner's pod created and bound (seconds after the
    // owner's submission; the latest victim's for each stage).
    let timeline = {
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let victims: Vec<&String> = seen.checkpoint.keys().collect();
        let at = |m: &BTreeMap<String, Instant>| {
            let t: Vec<f64> = victims
                .iter()
                .filter_map(|v| m.get(*v))
                .map(|i| i.saturating_duration_since(submitted).as_secs_f64())
                .collect();
            format!(
                "{}/{} by {:.2}s",
                t.len(),
                victims.len(),
                t.iter().copied().fold(f64::NAN, f64::max)
            )
        };
        let own = |m: &BTreeMap<String, Instant>| {
            m.get("own").map_or(f64::NAN, |i| {
                i.saturating_duration_since(submitted).as_secs_f64()
            })
        };
        format!(
            "reclaim timeline: victims asked {}, acknowledged {}, deleting {}, gone {}; the owner's pod created {:.2}s, bound {:.2}s",
            at(&seen.checkpoint),
            at(&seen.acknowledged),
            at(&seen.deleting),
            at(&seen.gone),
            own(&seen.created),
            own(&seen.bound),
        )
    };
    s.timing(&timeline);
    println!("{timeline}");
    let (rss, hwm) = process::memory_mib(std::process::id());
    let line = format!(
        "reclaim: {nodes} nodes, {gpus} 1-GPU bonus jobs bound in {filled:.1}s; an 8-GPU guaranteed job: checkpoint requested after {:.2}s, victims gone and its pod bound after {:.2}s (the simulated jobs acknowledge 1 s after the request and stop within 2 s of deletion); test-process RSS {rss:.0} MiB (peak {hwm:.0} MiB); {} profile",
        asked.map_or(f64::NAN, |a| a.duration_since(submitted).as_secs_f64()),
        bound.duration_since(submitted).as_secs_f64(),
        profile(),
    );
    s.timing(&line);
    println!("{line}");
    watch.abort();
    bench::record(&Record::Reclaim(bench::Reclaim {
        nodes,
        victims_asked_secs: asked.map(|a| a.duration_since(submitted).as_secs_f64()),
        owner_bound_secs: bound.duration_since(submitted).as_secs_f64(),
        grace_period_secs: RECLAIM_GRACE_SECONDS as f64,
    }))
    .expect("record the run");
    s.finish().await;
}

/// A run's clock: when it started, how long submitting took, and when each object was
/// submitted and bound.
struct Timed<'a> {
    start: Instant,
    submit_secs: f64,
    submitted: &'a BTreeMap<String, Instant>,
    bound: &'a BTreeMap<String, Instant>,
}

impl Timed<'_> {
    /// The run's numbers as its record; `pods` per bound object.
    fn record(
        &self,
        system: System,
        size: bench::Size,
        pods: usize,
        requests: &Requests,
        control_plane_cpu: Vec<(String, f64)>,
        own: Option<(&str, f64, f64)>,
    ) -> bench::Throughput {
        let last = self.bound.values().max().copied().unwrap_or(self.start);
        let total = last.duration_since(self.start).as_secs_f64();
        let mut lat: Vec<f64> = self
            .bound
            .iter()
            .filter_map(|(j, b)| {
                self.submitted
                    .get(j)
                    .map(|s| b.duration_since(*s).as_secs_f64())
            })
            .collect();
        lat.sort_by(f64::total_cmp);
        bench::Throughput {
            system,
            size,
            submit_secs: self.submit_secs,
            all_bound_secs: total,
            jobs_bound: self.bound.len(),
            jobs_per_sec: self.bound.len() as f64 / total,
            pods_per_sec: (self.bound.len() * pods) as f64 / total,
            p50_secs: pct(&lat, 0.5),
            p99_secs: pct(&lat, 0.99),
            writes_per_job: requests.writes_per_job(),
            top_writes: requests.writes.clone(),
            control_plane_cpu,
            own: own.map(|(what, cpu, rss)| (what.to_string(), cpu, rss)),
            admitted_per_sec: None,
            profile: profile().to_string(),
        }
    }
}

/// A peer run's rates and latencies, as one line for `make bench`.
fn bound_line(what: &str, pc: &PeerCluster, timed: &Timed, t: &bench::Throughput) -> String {
    format!(
        "{what}: {} nodes, {} objects: submitted in {:.1}s, {} with all {} pod(s) bound in {:.1}s; {:.0} objects/s, {:.0} pods bound/s; submit→bound p50 {:.2}s p99 {:.2}s; 25/50/75/100 % submitted by {}, bound by {}; {} profile",
        pc.nodes,
        pc.n,
        t.submit_secs,
        t.jobs_bound,
        pc.per_job,
        t.all_bound_secs,
        t.jobs_per_sec,
        t.pods_per_sec,
        t.p50_secs,
        t.p99_secs,
        quartiles(timed.start, timed.submitted.values()),
        quartiles(timed.start, timed.bound.values()),
        t.profile,
    )
}

/// Waits until `n` entries are bound or the limit passes.
async fn wait_bound(seen: &Arc<Mutex<Seen>>, n: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    while seen.lock().unwrap_or_else(|e| e.into_inner()).bound.len() < n
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates the objects, 32 at a time (the same client settings as for TrainingJobs: no QPS
/// limit); returns when each was submitted, by name.
async fn create_all<K>(api: &Api<K>, objects: Vec<K>) -> BTreeMap<String, Instant>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    futures::stream::iter(objects)
        .map(|o| {
            let api = api.clone();
            async move {
                let name = o.meta().name.clone().unwrap_or_default();
                let at = Instant::now();
                api.create(&PostParams::default(), &o)
                    .await
                    .expect("create");
                (name, at)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await
}

/// A peer's cluster: `KUBETRAIN_BENCH_NODES` simulated nodes with no operator in the process.
struct PeerCluster {
    s: Scenario,
    nodes: u32,
    /// The objects to create (`KUBETRAIN_BENCH_JOBS`).
    n: usize,
    /// Pods of each object that must be bound.
    per_job: usize,
}

async fn peer_cluster(name: &str, per_job: usize) -> PeerCluster {
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let n = env("KUBETRAIN_BENCH_JOBS", 1000);
    let s = Scenario::without_operator(name, nodes, 8, (nodes / 20).max(1)).await;
    PeerCluster {
        s,
        nodes,
        n,
        per_job,
    }
}

/// One peer run on `pc`: `n` objects of kind `K` (built from the scenario's node names),
/// created at once and timed until the pod labelled `bench/job=<name>` of each one is bound;
/// prints the lines and the API writes per object. Returns when the run started, when each
/// object was submitted, and the run's record (for the caller to complete and record).
async fn peer_measure<K>(
    pc: &PeerCluster,
    system: System,
    what: &str,
    make: impl Fn(usize, &[String]) -> serde_json::Value,
) -> (Instant, BTreeMap<String, Instant>, bench::Throughput)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let (s, n) = (&pc.s, pc.n);
    let names = s.sim.node_names();
    let client = s.cp.client().await.expect("client");
    let api: Api<K> = Api::namespaced(client.clone(), &s.ns);
    let (seen, watch) = watch_bound(Api::namespaced(client, &s.ns), "bench/job", pc.per_job);
    let objects: Vec<K> = (0..n)
        .map(|i| serde_json::from_value(make(i, &names)).expect("manifest"))
        .collect();
    let writes_before = api_requests(s);
    let cpu_cluster_before = s.cp.component_cpu();
    let start = Instant::now();
    let submitted = create_all(&api, objects).await;
    let submit_secs = start.elapsed().as_secs_f64();
    wait_bound(&seen, n, Duration::from_secs(600.max(n as u64 / 5))).await;
    let bound = seen.lock().unwrap_or_else(|e| e.into_inner()).bound.clone();
    watch.abort();
    // The last Events land within a few seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = Requests::between(&writes_before, &api_requests(s), n);
    let cpu = cluster_cpu(&cpu_cluster_before, &s.cp.component_cpu());
    let timed = Timed {
        start,
        submit_secs,
        submitted: &submitted,
        bound: &bound,
    };
    let result = timed.record(system, bench_size(), pc.per_job, &requests, cpu, None);
    let line = bound_line(what, pc, &timed, &result);
    s.timing(&line);
    println!("{line}");
    let line = format!(
        "{what}: {requests}; {}; {}",
        events_per_job(s, n).await,
        cluster_cpu_line(&result.control_plane_cpu),
    );
    s.timing(&line);
    println!("{line}");
    assert_eq!(bound.len(), n, "{what}: not every pod was bound");
    (start, submitted, result)
}

/// One peer run on a fresh cluster, with nothing but the pinned Kubernetes release.
async fn peer_run<K>(
    name: &str,
    system: System,
    what: &str,
    per_job: usize,
    make: impl Fn(usize, &[String]) -> serde_json::Value,
) where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let pc = peer_cluster(name, per_job).await;
    let (_, _, result) = peer_measure::<K>(&pc, system, what, make).await;
    bench::record(&Record::Throughput(result)).expect("record the run");
    pc.s.finish().await;
}

/// A batch/v1 Job of `pods` 1-GPU pods at once labelled `bench/job=<name>`, each running
/// `run_seconds` on the simulated nodes (until the end when `None`), as kubetrain's jobs do.
fn stock_job(name: &str, pods: usize, run_seconds: Option<usize>) -> serde_json::Value {
    let annotations = match run_seconds {
        Some(r) => serde_json::json!({"sim.kubetrain.io/run-seconds": r.to_string()}),
        None => serde_json::json!({}),
    };
    serde_json::json!({
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "parallelism": pods, "completions": pods, "template": {
            "metadata": {"labels": {"bench/job": name}, "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "trainer", "image": "trainer:latest",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
    })
}

/// The peers' Jobs: `KUBETRAIN_BENCH_GANG` pods each, running as kubetrain's do.
fn peer_job(i: usize) -> serde_json::Value {
    let nodes = env("KUBETRAIN_BENCH_NODES", 100);
    let jobs = env("KUBETRAIN_BENCH_JOBS", 1000);
    stock_job(
        &format!("j{i}"),
        gang(),
        run_seconds(jobs * gang(), nodes * 8),
    )
}

/// The peer: batch/v1 Jobs of one 1-GPU pod each, through the pinned release's job
/// controller and kube-scheduler, on the same simulated nodes; no kubetrain in the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn stock_jobs_throughput() {
    peer_run::<k8s_openapi::api::batch::v1::Job>(
        "stockjobs",
        System::StockJobs,
        &format!(
            "stock batch/v1 Jobs of {} 1-GPU pod(s) (job controller + kube-scheduler)",
            gang()
        ),
        gang(),
        |i, _| peer_job(i),
    )
    .await;
}

/// The ceiling of `--binding scheduler`: pods created already pinned to a node by a required
/// affinity on `metadata.name`, as kubetrain creates them, bound by kube-scheduler alone; as
/// many as the other runs bind (`KUBETRAIN_BENCH_JOBS` × `KUBETRAIN_BENCH_GANG`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn pinned_pods_bind_rate() {
    let mut pc = peer_cluster("pinned", 1).await;
    pc.n *= gang();
    let (_, _, result) = peer_measure::<Pod>(
        &pc,
        System::PinnedPods,
        "pods pinned by node affinity, no GPU request (kube-scheduler only)",
        |i, names| {
            let node = &names[i % names.len()];
            serde_json::json!({
                "metadata": {"name": format!("p{i}"), "labels": {"bench/job": format!("p{i}")}},
                "spec": {"restartPolicy": "Never",
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
                    "containers": [{"name": "trainer", "image": "trainer:latest"}]}
            })
        },
    )
    .await;
    bench::record(&Record::Throughput(result)).expect("record the run");
    pc.s.finish().await;
}

/// The peer Kueue: the same batch/v1 Jobs, created suspended in a LocalQueue of a ClusterQueue
/// whose nominal quota is every GPU (the equal of kubetrain's VirtualCluster and Queue), and
/// admitted by Kueue's manager (built from its Go module, run without webhooks as its own
/// performance harness runs it, no client rate limit) before the job controller creates their
/// pods and kube-scheduler binds them. Prints, besides the peers' lines, Workloads admitted per
/// second and the manager's CPU seconds and peak RSS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn kueue_jobs_throughput() {
    let pc = peer_cluster("kueuejobs", gang()).await;
    let kueue = kubetrain_e2e::kueue::Kueue::start(pc.s.cp).expect("start Kueue");
    kueue
        .queue(pc.s.cp, &pc.s.ns, "bench", pc.nodes * 8)
        .expect("Kueue queues");
    let (cpu_before, _) = kueue.usage();
    let client = pc.s.cp.client().await.expect("client");
    let (admitted, watch) =
        watch_admitted(Api::namespaced_with(client, &pc.s.ns, &workload_resource()));
    let what = format!(
        "batch/v1 Jobs of {} 1-GPU pod(s) through Kueue (Kueue + job controller + kube-scheduler)",
        gang()
    );
    let what = what.as_str();
    let (start, submitted, mut result) =
        peer_measure::<k8s_openapi::api::batch::v1::Job>(&pc, System::Kueue, what, |i, _| {
            let mut job = peer_job(i);
            job["metadata"]["labels"] = serde_json::json!({"kueue.x-k8s.io/queue-name": "bench"});
            job["spec"]["suspend"] = serde_json::json!(true);
            job
        })
        .await;
    let (cpu, hwm) = kueue.usage();
    let admitted = admitted.lock().unwrap_or_else(|e| e.into_inner()).clone();
    watch.abort();
    let last = admitted.values().max().copied().unwrap_or(start);
    let admitted_per_sec = admitted.len() as f64 / last.duration_since(start).as_secs_f64();
    let mut lat: Vec<f64> = admitted
        .iter()
        .filter_map(|(j, a)| submitted.get(j).map(|s| a.duration_since(*s).as_secs_f64()))
        .collect();
    lat.sort_by(f64::total_cmp);
    let line = format!(
        "{what}: {} Workloads admitted in {:.1}s, {:.0} admitted/s, submit→admitted p50 {:.2}s p99 {:.2}s; Kueue manager {:.1} CPU-s during the run, peak RSS {hwm:.0} MiB (log {})",
        admitted.len(),
        last.duration_since(start).as_secs_f64(),
        admitted_per_sec,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        cpu - cpu_before,
        kueue.log().display(),
    );
    pc.s.timing(&line);
    println!("{line}");
    result.admitted_per_sec = Some(admitted_per_sec);
    result.own = Some(("Kueue manager".into(), cpu - cpu_before, hwm));
    bench::record(&Record::Throughput(result)).expect("record the run");
    drop(kueue);
    pc.s.finish().await;
}

fn workload_resource() -> kube::discovery::ApiResource {
    kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
        "kueue.x-k8s.io",
        "v1beta2",
        "Workload",
    ))
}

/// When each Job's Workload was first seen admitted (`status.admission` set), by Job name.
fn watch_admitted(
    workloads: Api<kube::api::DynamicObject>,
) -> (
    Arc<Mutex<BTreeMap<String, Instant>>>,
    tokio::task::JoinHandle<()>,
) {
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(workloads, watcher::Config::default())
            .default_backoff()
            .applied_objects();
        futures::pin_mut!(stream);
        while let Some(Ok(w)) = stream.next().await {
            let now = Instant::now();
            let admitted = w
                .data
                .get("status")
                .and_then(|s| s.get("admission"))
                .is_some();
            let job = w
                .metadata
                .owner_references
                .as_ref()
                .and_then(|o| o.first())
                .map(|o| o.name.clone());
            if let (true, Some(job)) = (admitted, job) {
                out.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(job)
                    .or_insert(now);
            }
        }
    });
    (seen, task)
}
