//! `--scheduler-name`: the gang's pods are bound by the kube-scheduler profile the operator is
//! told to use (the test control plane's kube-scheduler runs a second profile,
//! `kubetrain-gpu-scheduler`; only that profile takes pods that name it).

use std::time::Duration;

use kubetrain::controller::pods::Binding;
use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::operator::{Operator, test_config};
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

fn with_profile(identity: &str, profile: &str) -> kubetrain::controller::Config {
    let mut config = test_config(identity);
    config.settings.pods.binding = Binding::Scheduler;
    config.settings.pods.scheduler_name = Some(profile.into());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gangs_pods_are_bound_by_the_named_scheduler_profile() {
    let cp = ControlPlane::shared();
    let s = Scenario::without_operator("profile", 1, 8, 1).await;
    let q = s.tenant("profile", 8, "FIFO", "");
    let op = Operator::start(cp, with_profile("profile-a", "kubetrain-gpu-scheduler"));
    s.cp.apply(&s.job("train", &q, 2, 4, &[("run-seconds", "600")], ""));
    s.wait_phase("train", "Running", T).await;
    let pods = s.cp.jsonpath(
        &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=train"],
        "{range .items[*]}{.spec.schedulerName}/{.spec.nodeName} {end}",
    );
    let node = s.job_status("train", "{.status.placement[0].node}");
    let expected = format!("kubetrain-gpu-scheduler/{node}");
    assert_eq!(
        pods.split_whitespace().collect::<Vec<_>>(),
        [expected.as_str(), expected.as_str()],
        "{pods}"
    );
    op.kill();
    s.finish().await;
}
