//! Setup C of the benchmark issue: control-plane throughput against the real API server.
//! Ignored in `make test`; `make bench` runs it. Sizes come from the environment:
//! `KUBETRAIN_BENCH_NODES` (default 100) and `KUBETRAIN_BENCH_JOBS` (default 1000), 1-GPU jobs.
//! Prints jobs admitted per second, pods bound per second, and submit → bound p50/p99.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by `make bench`"]
async fn submit_to_bound_throughput() {
    let nodes = env("KUBETRAIN_BENCH_NODES", 100) as u32;
    let jobs = env("KUBETRAIN_BENCH_JOBS", 1000);
    let s = Scenario::new("bench", nodes, 8, (nodes / 20).max(1)).await;
    let q = s.tenant("bench", nodes * 8, "FIFO", "");
    let client = s.cp.client().await.expect("client");
    let api: Api<TrainingJob> = Api::namespaced(client.clone(), &s.ns);
    let pods: Api<Pod> = Api::namespaced(client, &s.ns);
    let manifests: Vec<TrainingJob> = (0..jobs)
        .map(|i| {
            serde_yaml::from_str(&s.job(&format!("j{i}"), &q, 1, 1, &[], "")).expect("job manifest")
        })
        .collect();
    let start = Instant::now();
    let mut submitted: BTreeMap<String, Instant> = BTreeMap::new();
    let created: Vec<(String, Instant)> = futures::stream::iter(manifests)
        .map(|tj| {
            let api = api.clone();
            async move {
                let name = tj.metadata.name.clone().unwrap_or_default();
                let at = Instant::now();
                api.create(&PostParams::default(), &tj)
                    .await
                    .expect("create job");
                (name, at)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let submit_secs = start.elapsed().as_secs_f64();
    submitted.extend(created);
    let mut bound: BTreeMap<String, Instant> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while bound.len() < jobs && Instant::now() < deadline {
        let list = pods
            .list(&ListParams::default().labels("kubetrain.io/job"))
            .await
            .expect("list pods");
        let now = Instant::now();
        for p in list.items {
            if let Some(job) = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("kubetrain.io/job"))
            {
                bound.entry(job.clone()).or_insert(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let total = start.elapsed().as_secs_f64();
    let mut lat: Vec<f64> = bound
        .iter()
        .filter_map(|(j, b)| submitted.get(j).map(|s| b.duration_since(*s).as_secs_f64()))
        .collect();
    lat.sort_by(f64::total_cmp);
    let line = format!(
        "throughput: {nodes} nodes, {jobs} 1-GPU jobs: submitted in {submit_secs:.1}s, all bound in {total:.1}s; {:.0} jobs admitted/s = pods bound/s; submit→bound p50 {:.2}s p99 {:.2}s",
        bound.len() as f64 / total,
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
    s.timing(&line);
    println!("{line}");
    assert_eq!(bound.len(), jobs, "not every job was bound within 600 s");
    s.finish().await;
}
