//! Predicted run times against the real control plane, simulated nodes and the operator:
//! after a few runs of the same job, a new run is predicted from them, and says so in its
//! status and in `kubectl get tj -o wide`.

use std::time::Duration;

use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_run_is_predicted_from_the_runs_of_the_same_job() {
    let s = Scenario::new("predict", 1, 8, 1).await;
    let q = s.tenant("predict", 8, "ShortestPredictedFirst", "");
    // Three runs of `bert`, each numbered as users number them, each running about 4 s.
    for run in ["bert-1", "bert-2", "bert-3"] {
        s.cp.apply(&s.job(run, &q, 1, 1, &[("run-seconds", "4")], ""));
    }
    for run in ["bert-1", "bert-2", "bert-3"] {
        s.wait_phase(run, "Succeeded", T).await;
    }
    // The first of them had nothing to learn from.
    assert_eq!(
        s.job_status("bert-1", "{.status.prediction.source}"),
        "None"
    );

    s.cp.apply(&s.job("bert-4", &q, 1, 1, &[("run-seconds", "4")], ""));
    let source = ControlPlane::eventually("bert-4's prediction", T, || {
        let source = s.job_status("bert-4", "{.status.prediction.source}");
        async move { (!source.is_empty()).then_some(source) }
    })
    .await;
    assert_eq!(source, "History");
    assert_eq!(
        s.job_status("bert-4", "{.status.prediction.level}"),
        "NameAndImage",
        "same namespace, user, name without its run number, image and GPUs"
    );
    assert_eq!(s.job_status("bert-4", "{.status.prediction.runs}"), "3");
    let seconds: i64 = s
        .job_status("bert-4", "{.status.prediction.seconds}")
        .parse()
        .expect("seconds");
    assert!((1..=30).contains(&seconds), "predicted {seconds} s");
    let wide =
        s.cp.kubectl_ok(&["get", "tj", "bert-4", "-n", &s.ns, "-o", "wide"])
            .expect("kubectl get tj -o wide");
    assert!(
        wide.contains("PREDICTED") && wide.contains("History"),
        "{wide}"
    );
    // The user's own value wins.
    s.cp.apply(&s.job(
        "gpt-1",
        &q,
        1,
        1,
        &[("run-seconds", "4")],
        "  predictedDurationSeconds: 7200\n",
    ));
    let own = ControlPlane::eventually("gpt-1's prediction", T, || {
        let p = s.job_status(
            "gpt-1",
            "{.status.prediction.source}/{.status.prediction.seconds}",
        );
        async move { (p != "/").then_some(p) }
    })
    .await;
    assert_eq!(own, "User/7200");
    s.finish().await;
}
