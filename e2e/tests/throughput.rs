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
//! created pinned to a node (the ceiling of kubetrain's default binding mode); `reclaim_latency` fills every GPU with bonus (borrowed) jobs and
//! times a guaranteed job's arrival → its victims asked to checkpoint → its pod bound (which
//! the operator does only once the victims' pods are gone). Both print the resident memory
//! of the test process (VmRSS, and its peak VmHWM), which runs the operator in-process
//! together with the simulated-node agent and this client. The client has no QPS limit:
//! kube-rs has no client-side rate limiter, and neither the operator nor the bench sets one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kubetrain::api::TrainingJob;
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

/// The build profile, for the printed lines: a debug operator costs about three times the CPU.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// (VmRSS, VmHWM) of this process in MiB.
fn memory_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Write requests the API server has served so far, by "VERB resource[/subresource]", read
/// from its own `/metrics` (`apiserver_request_total`) through kubectl.
fn api_writes(s: &Scenario) -> BTreeMap<String, f64> {
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
        if !matches!(verb, "POST" | "PUT" | "PATCH" | "APPLY" | "DELETE") {
            continue;
        }
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

/// Writes per job between two `api_writes` readings, largest first, as one line.
fn writes_per_job(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    jobs: usize,
) -> String {
    let mut rows: Vec<(String, f64)> = after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (v - before.get(k).copied().unwrap_or(0.0)) / jobs as f64,
            )
        })
        .filter(|(_, v)| *v >= 0.01)
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = rows.iter().map(|(_, v)| v).sum();
    let rows: Vec<String> = rows.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
    format!("{total:.1} API writes per job ({})", rows.join(", "))
}

/// When a pod of each job was first seen bound to a node (`spec.nodeName`, set at creation
/// with `--binding direct`, by kube-scheduler's binding otherwise), and when a checkpoint
/// request first appeared, by job, from a watch of the namespace's pods labelled `label`.
#[derive(Default)]
struct Seen {
    bound: BTreeMap<String, Instant>,
    checkpoint: BTreeMap<String, Instant>,
}

fn watch_pods(pods: Api<Pod>) -> (Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    watch_bound(pods, "kubetrain.io/job")
}

fn watch_bound(
    pods: Api<Pod>,
    label: &'static str,
) -> (Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(pods, watcher::Config::default().labels(label))
            .default_backoff()
            .applied_objects();
        futures::pin_mut!(stream);
        while let Some(Ok(p)) = stream.next().await {
            let now = Instant::now();
            let Some(job) = p.metadata.labels.as_ref().and_then(|l| l.get(label)) else {
                continue;
            };
            let mut seen = out.lock().unwrap_or_else(|e| e.into_inner());
            if p.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
                seen.bound.entry(job.clone()).or_insert(now);
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
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let jobs = env("KUBETRAIN_BENCH_JOBS", 1000);
    let gpus = nodes as usize * 8;
    let run_seconds = (jobs > gpus).then(|| env("KUBETRAIN_BENCH_RUN_SECONDS", 5));
    let s = Scenario::new("bench", nodes, 8, (nodes / 20).max(1)).await;
    let q = s.tenant("bench", nodes * 8, "FIFO", "");
    let client = s.cp.client().await.expect("client");
    let api: Api<TrainingJob> = Api::namespaced(client.clone(), &s.ns);
    let (seen, watch) = watch_pods(Api::namespaced(client, &s.ns));
    let run = run_seconds.map(|r| r.to_string());
    let sim: Vec<(&str, &str)> = run.iter().map(|r| ("run-seconds", r.as_str())).collect();
    let manifests: Vec<TrainingJob> = (0..jobs)
        .map(|i| {
            serde_norway::from_str(&s.job(&format!("j{i}"), &q, 1, 1, &sim, ""))
                .expect("job manifest")
        })
        .collect();
    let (rss_before, _) = memory_mib();
    let writes_before = api_writes(&s);
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
    let last = bound.values().max().copied().unwrap_or(start);
    let total = last.duration_since(start).as_secs_f64();
    let mut lat: Vec<f64> = bound
        .iter()
        .filter_map(|(j, b)| submitted.get(j).map(|s| b.duration_since(*s).as_secs_f64()))
        .collect();
    lat.sort_by(f64::total_cmp);
    let (rss, hwm) = memory_mib();
    // Writes still due to the last binds (status Running, Events) land within a few seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let writes = writes_per_job(&writes_before, &api_writes(&s), jobs);
    let line = format!(
        "throughput ({:?} binding): {nodes} nodes, {jobs} 1-GPU jobs{}: submitted in {submit_secs:.1}s, all bound in {total:.1}s; {:.0} jobs admitted/s = pods bound/s; submit→bound p50 {:.2}s p99 {:.2}s; test-process RSS {rss:.0} MiB (peak {hwm:.0} MiB, {rss_before:.0} MiB before submitting); {} profile",
        kubetrain_e2e::operator::binding(),
        run_seconds.map_or(String::new(), |r| format!(" running {r}s each")),
        bound.len() as f64 / total,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        profile(),
    );
    s.timing(&line);
    println!("{line}");
    let line = format!("throughput: {writes}, the simulated kubelet's included");
    s.timing(&line);
    println!("{line}");
    watch.abort();
    assert_eq!(
        bound.len(),
        jobs,
        "not every job was bound within {} s",
        limit.as_secs()
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn reclaim_latency() {
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
                "  checkpoint:\n    gracePeriodSeconds: 30\n",
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
    let (rss, hwm) = memory_mib();
    let line = format!(
        "reclaim: {nodes} nodes, {gpus} 1-GPU bonus jobs bound in {filled:.1}s; an 8-GPU guaranteed job: checkpoint requested after {:.2}s, victims gone and its pod bound after {:.2}s (the simulated jobs acknowledge 1 s after the request and stop within 2 s of deletion); test-process RSS {rss:.0} MiB (peak {hwm:.0} MiB); {} profile",
        asked.map_or(f64::NAN, |a| a.duration_since(submitted).as_secs_f64()),
        bound.duration_since(submitted).as_secs_f64(),
        profile(),
    );
    s.timing(&line);
    println!("{line}");
    watch.abort();
    s.finish().await;
}

/// Pods bound per second and submit → bound p50/p99, as one line for `make bench`.
fn bound_line(
    what: &str,
    nodes: u32,
    n: usize,
    start: Instant,
    submitted: &BTreeMap<String, Instant>,
    bound: &BTreeMap<String, Instant>,
    submit_secs: f64,
) -> String {
    let last = bound.values().max().copied().unwrap_or(start);
    let total = last.duration_since(start).as_secs_f64();
    let mut lat: Vec<f64> = bound
        .iter()
        .filter_map(|(j, b)| submitted.get(j).map(|s| b.duration_since(*s).as_secs_f64()))
        .collect();
    lat.sort_by(f64::total_cmp);
    format!(
        "{what}: {nodes} nodes, {n} pods: submitted in {submit_secs:.1}s, {} bound in {total:.1}s; {:.0} pods bound/s; submit→bound p50 {:.2}s p99 {:.2}s; {} profile",
        bound.len(),
        bound.len() as f64 / total,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        profile(),
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

/// One peer run: `n` objects of kind `K` (built from the scenario's node names), created at
/// once on a cluster of `nodes` simulated nodes with no operator in the process, timed until
/// the pod labelled `bench/job=<name>` of each one is bound; prints and records the line.
async fn peer_run<K>(name: &str, what: &str, make: impl Fn(usize, &[String]) -> serde_json::Value)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let n = env("KUBETRAIN_BENCH_JOBS", 1000);
    let s = Scenario::without_operator(name, nodes, 8, (nodes / 20).max(1)).await;
    let names = s.sim.node_names();
    let client = s.cp.client().await.expect("client");
    let api: Api<K> = Api::namespaced(client.clone(), &s.ns);
    let (seen, watch) = watch_bound(Api::namespaced(client, &s.ns), "bench/job");
    let objects: Vec<K> = (0..n)
        .map(|i| serde_json::from_value(make(i, &names)).expect("manifest"))
        .collect();
    let start = Instant::now();
    let submitted = create_all(&api, objects).await;
    let submit_secs = start.elapsed().as_secs_f64();
    wait_bound(&seen, n, Duration::from_secs(600)).await;
    let bound = seen.lock().unwrap_or_else(|e| e.into_inner()).bound.clone();
    let line = bound_line(what, nodes, n, start, &submitted, &bound, submit_secs);
    s.timing(&line);
    println!("{line}");
    watch.abort();
    assert_eq!(bound.len(), n, "{what}: not every pod was bound");
    s.finish().await;
}

/// The peer: batch/v1 Jobs of one 1-GPU pod each, through the pinned release's job
/// controller and kube-scheduler, on the same simulated nodes; no kubetrain in the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn stock_jobs_throughput() {
    peer_run::<k8s_openapi::api::batch::v1::Job>(
        "stockjobs",
        "stock batch/v1 Jobs of one 1-GPU pod (job controller + kube-scheduler)",
        |i, _| {
            serde_json::json!({
                "metadata": {"name": format!("j{i}")},
                "spec": {"backoffLimit": 0, "template": {
                    "metadata": {"labels": {"bench/job": format!("j{i}")}},
                    "spec": {"restartPolicy": "Never", "containers": [{
                        "name": "trainer", "image": "trainer:latest",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
            })
        },
    )
    .await;
}

/// The ceiling of `--binding scheduler`: pods created already pinned to a node by a required
/// affinity on `metadata.name`, as kubetrain creates them, bound by kube-scheduler alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn pinned_pods_bind_rate() {
    peer_run::<Pod>(
        "pinned",
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
}
