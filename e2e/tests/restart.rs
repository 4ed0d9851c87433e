//! Crash safety and HA: the operator killed at awkward moments and replaced, and two
//! operators with leader failover. Nothing may be placed twice, no job lost, no running pod
//! restarted.

use std::time::{Duration, Instant};

use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::operator::{Operator, test_config};
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

fn pod_uids(s: &Scenario, job: &str) -> String {
    s.cp.jsonpath(
        &[
            "pods",
            "-n",
            &s.ns,
            "-l",
            &format!("kubetrain.io/job={job}"),
        ],
        "{range .items[*]}{.metadata.name}={.metadata.uid} {end}",
    )
}

// One test function: the scenarios share the single leader lease, so they run in sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_restarts_and_failover() {
    let cp = ControlPlane::shared();

    // 1. Killed while a job runs: the replacement adopts it without restarting any pod.
    let s = Scenario::without_operator("restart", 2, 8, 1).await;
    let q = s.tenant("restart", 16, "FIFO", "");
    let a = Operator::start(cp, test_config("replica-a"));
    s.cp.apply(&s.job("steady", &q, 2, 8, &[("run-seconds", "12")], ""));
    s.wait_phase("steady", "Running", T).await;
    let before = pod_uids(&s, "steady");
    a.kill();
    let b = Operator::start(cp, test_config("replica-b"));
    s.wait_phase("steady", "Succeeded", T).await;
    assert_eq!(
        before,
        pod_uids(&s, "steady"),
        "pods were recreated across the restart"
    );
    assert_eq!(s.job_status("steady", "{.status.retries}"), "0");

    // 2. Killed mid-reclaim (victim asked to checkpoint, never acknowledges).
    let owner = s.tenant("owner", 16, "FIFO", "");
    let borrower = s.tenant("borrower", 0, "FIFO", "");
    s.cp.apply(&s.job(
        "victim",
        &borrower,
        2,
        8,
        &[("run-seconds", "4"), ("checkpoint-delay-seconds", "never")],
        "  checkpoint:\n    gracePeriodSeconds: 4\n",
    ));
    s.wait_phase("victim", "Running", T).await;
    s.cp.apply(&s.job("claim", &owner, 2, 8, &[("run-seconds", "2")], ""));
    s.wait_phase("victim", "Preempting", T).await;
    b.kill();
    let c = Operator::start(cp, test_config("replica-c"));
    let deadline = Instant::now() + T;
    loop {
        let claim: usize = s.pods_of("claim").len();
        let victim_active = s.cp.jsonpath(
            &[
                "pods",
                "-n",
                &s.ns,
                "-l",
                "kubetrain.io/job=victim",
                "--field-selector=status.phase=Running",
            ],
            "{.items[*].metadata.name}",
        );
        assert!(
            claim == 0 || victim_active.is_empty(),
            "claim placed while the victim still runs: {victim_active}"
        );
        if s.job_status("claim", "{.status.phase}") == "Succeeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "claim never ran: {}",
            s.job_status("claim", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(
        s.job_status("victim", "{.status.preemptions}"),
        "1",
        "the preemption was counted once"
    );
    s.wait_phase("victim", "Succeeded", Duration::from_secs(90))
        .await;

    // 3. Two replicas: the standby takes over when the leader dies.
    let d = Operator::start(cp, test_config("replica-d"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let holder = cp.jsonpath(
        &[
            "lease",
            "kubetrain-operator",
            "-n",
            kubetrain_e2e::OPERATOR_NAMESPACE,
        ],
        "{.spec.holderIdentity}",
    );
    assert_eq!(holder, "replica-c", "the running leader keeps the lease");
    c.kill();
    s.cp.apply(&s.job("after", &q, 1, 8, &[("run-seconds", "1")], ""));
    s.wait_phase("after", "Succeeded", T).await;
    let holder = cp.jsonpath(
        &[
            "lease",
            "kubetrain-operator",
            "-n",
            kubetrain_e2e::OPERATOR_NAMESPACE,
        ],
        "{.spec.holderIdentity}",
    );
    assert_eq!(holder, "replica-d");

    // 4. The workload history survived every restart and failover above: each job is one
    // arrival, recorded by whichever leader saw it first (a leader that had not loaded the
    // ConfigMap would have saved only `after`, the one job it saw).
    let mut uids: Vec<String> =
        s.cp.jsonpath(
            &["trainingjobs", "-n", &s.ns],
            "{range .items[*]}{.metadata.uid} {end}",
        )
        .split_whitespace()
        .map(String::from)
        .collect();
    uids.sort();
    assert_eq!(uids.len(), 4, "steady, victim, claim, after");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = cp.jsonpath(
            &[
                "configmap",
                "kubetrain-workload-history",
                "-n",
                kubetrain_e2e::OPERATOR_NAMESPACE,
            ],
            "{.data.history\\.json}",
        );
        let stored: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let mut arrived: Vec<String> = stored["arrivals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|row| row[0].as_str().map(String::from))
            .filter(|uid| uids.contains(uid))
            .collect();
        arrived.sort();
        if arrived == uids {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the history holds {arrived:?}, not each of {uids:?} once: {text}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    d.kill();
    s.finish().await;
}
