//! Start estimates (issue 53): a job waiting behind a running job with a predicted duration
//! shows when it is expected to start, the way users look: `kubectl get tj -o wide`.

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// `long` fills the node and is predicted to run an hour; `next`, waiting for its GPUs, is
/// estimated to start when `long` is predicted to end: `kubectl get tj -o wide` shows it,
/// and `status.estimatedStartTime` is `long`'s admission plus its prediction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waiting_behind_a_predicted_run_shows_its_estimated_start() {
    let s = Scenario::new("estimate", 1, 8, 1).await;
    let q = s.tenant("estimate", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "long",
        &q,
        1,
        8,
        &[("run-seconds", "600")],
        "  predictedDurationSeconds: 3600\n",
    ));
    s.wait_phase("long", "Running", T).await;
    s.cp.apply(&s.job("next", &q, 1, 8, &[("run-seconds", "1")], ""));
    let deadline = Instant::now() + T;
    let estimate = loop {
        let e = s.job_status("next", "{.status.estimatedStartTime}");
        if !e.is_empty() {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "next: {}",
            s.job_status("next", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let wide =
        s.cp.kubectl_ok(&["get", "tj", "next", "-n", &s.ns, "-o", "wide"])
            .expect("get tj -o wide");
    assert!(
        wide.contains("ESTIMATED START") && wide.contains(&estimate),
        "{wide}"
    );
    let admitted: Timestamp = s
        .job_status("long", "{.status.admittedAt}")
        .parse()
        .expect("admittedAt");
    let estimate: Timestamp = estimate.parse().expect("estimatedStartTime");
    assert_eq!(
        estimate.as_second() - admitted.as_second(),
        3600,
        "estimated {estimate}, long admitted {admitted}"
    );
    s.finish().await;
}
