//! Holding a queue (`spec.stopPolicy`, as Kueue's, issue 55 item 10) the way an admin does
//! it: `kubectl patch` on the real API server, with the operator and simulated nodes.

use std::time::{Duration, Instant};

use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// Polls `what` until `ready` accepts it, failing with its last value after `T`.
async fn until(what: &str, read: impl Fn() -> String, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + T;
    loop {
        let now = read();
        if ready(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "{what} is still {now:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn patch_stop(s: &Scenario, queue: &str, policy: &str) -> kubetrain_e2e::KubectlOutput {
    let patch = format!("{{\"spec\":{{\"stopPolicy\":\"{policy}\"}}}}");
    s.cp.kubectl(&["patch", "queue", queue, "--type", "merge", "-p", &patch])
        .expect("kubectl runs")
}

/// `Hold`: the running job runs on, a new job waits `QueueHeld`, the queue reads
/// `Ready=False` (`Held`) and `kubectl get queues` shows the policy; a policy the API does not
/// know is refused naming the field. `None` again: the new job runs. `HoldAndDrain`: both
/// running jobs checkpoint and go back to the queue (`lastPreemption.reason: QueueHold`),
/// where they wait `QueueHeld` until the hold is lifted, and then run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_queue_admits_nothing_and_hold_and_drain_sends_its_jobs_back() {
    let s = Scenario::new("qhold", 1, 8, 1).await;
    let q = s.tenant("qhold", 8, "FIFO", "");
    let admitted = "{.status.conditions[?(@.type==\"Admitted\")].reason}";
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}/{.status.conditions[?(@.type==\"Ready\")].reason}";
    let queue_ready = || s.cp.jsonpath(&["queue", &q], ready);
    s.cp.apply(&s.job("running", &q, 1, 4, &[], ""));
    s.wait_phase("running", "Running", T).await;

    let out = patch_stop(&s, &q, "Hold");
    assert!(out.success, "{}", out.stderr);
    let bad = patch_stop(&s, &q, "Pause");
    assert!(!bad.success, "an unknown stopPolicy is refused");
    assert!(
        bad.stderr.contains("spec.stopPolicy") && bad.stderr.contains("Unsupported value"),
        "{}",
        bad.stderr
    );
    until("the queue's Ready", queue_ready, |r| r == "False/Held").await;
    let table = s.cp.kubectl_ok(&["get", "queue", &q]).expect("get queue");
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let stop = header
        .iter()
        .position(|h| *h == "STOP")
        .expect("a STOP column");
    assert_eq!(row.get(stop), Some(&"Hold"), "{table}");

    s.cp.apply(&s.job("new", &q, 1, 2, &[], ""));
    until(
        "new's Admitted reason",
        || s.job_status("new", admitted),
        |r| r == "QueueHeld",
    )
    .await;
    let message = s.job_status(
        "new",
        "{.status.conditions[?(@.type==\"Admitted\")].message}",
    );
    assert!(
        message.contains(&format!("Queue {q} is held (stopPolicy: Hold)")),
        "{message}"
    );
    assert_eq!(s.job_status("new", "{.status.phase}"), "Queued");
    assert_eq!(s.job_status("running", "{.status.phase}"), "Running");
    // The same wait as fields, kept by the API server's schema (`status.waiting`).
    assert_eq!(
        s.job_status("new", "{.status.waiting.code}/{.status.waiting.queue}"),
        format!("QueueHeld/{q}")
    );

    assert!(patch_stop(&s, &q, "None").success);
    s.wait_phase("new", "Running", T).await;
    assert_eq!(
        s.job_status("new", "{.status.waiting}"),
        "",
        "cleared once admitted"
    );
    until("the queue's Ready", queue_ready, |r| r == "True/Ready").await;

    assert!(patch_stop(&s, &q, "HoldAndDrain").success);
    until("the queue's Ready", queue_ready, |r| {
        r == "False/HeldAndDraining"
    })
    .await;
    for job in ["running", "new"] {
        until(
            &format!("{job}'s Admitted reason"),
            || s.job_status(job, admitted),
            |r| r == "QueueHeld",
        )
        .await;
        assert_eq!(s.job_status(job, "{.status.phase}"), "Queued");
        assert_eq!(
            s.job_status(job, "{.status.lastPreemption.reason}"),
            "QueueHold"
        );
        assert_eq!(
            s.job_status(job, "{.status.lastPreemption.outcome}"),
            "CheckpointSaved"
        );
        assert!(s.pods_of(job).is_empty(), "{job}: {:?}", s.pods_of(job));
        // A preemption is no failure: the retry budget is untouched.
        assert_eq!(s.job_status(job, "{.status.retries}"), "0");
        assert_eq!(s.job_status(job, "{.status.preemptions}"), "1");
    }

    assert!(patch_stop(&s, &q, "None").success);
    s.wait_phase("running", "Running", T).await;
    s.wait_phase("new", "Running", T).await;
    s.finish().await;
}
