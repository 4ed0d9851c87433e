//! `kubectl drain` of a node under a running gang: the gang's PodDisruptionBudget keeps the
//! drain from evicting it outright, kubetrain asks the job to checkpoint, stops it and
//! requeues it (a preemption, not a retry), and the drain then finishes. While it returns,
//! it keeps its place: a job behind it that would fit on the GPUs it needs waits for it, and
//! within its team's guarantee so does another team's job that would borrow them.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(90);

/// `kubectl drain NODE`, as an admin runs it, in the background.
fn start_drain(s: &Scenario, node: &str) -> Child {
    Command::new(s.cp.kubectl_path())
        .args([
            "drain",
            node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=120s",
        ])
        .env("KUBECONFIG", s.cp.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl drain")
}

/// The drain finishes on its own, successfully.
async fn drain_finishes(drain: Child) {
    let out = tokio::task::spawn_blocking(move || drain.wait_with_output())
        .await
        .expect("join")
        .expect("drain output");
    assert!(
        out.status.success(),
        "drain: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_asks_the_gang_to_checkpoint_then_finishes() {
    let s = Scenario::new("drain", 3, 8, 1).await;
    let q = s.tenant("drain", 24, "FIFO", "");
    s.cp.apply(&s.job("gang", &q, 2, 8, &[("checkpoint-delay-seconds", "2")], ""));
    s.wait_phase("gang", "Running", T).await;
    let deadline = tokio::time::Instant::now() + T;
    while s.job_status("gang", "{.status.startedAt}").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "gang never ran");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(
        s.cp.jsonpath(&["pdb", "gang", "-n", &s.ns], "{.spec.minAvailable}"),
        "2"
    );
    let node = s.cp.jsonpath(
        &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=gang"],
        "{.items[0].spec.nodeName}",
    );
    assert!(!node.is_empty());
    // Behind the gang in its queue, one node short of room until the drain frees the gang's
    // other node: it would take the two nodes the gang needs while the gang returns.
    s.cp.apply(&s.job("behind", &q, 2, 8, &[("run-seconds", "600")], ""));
    let deadline = tokio::time::Instant::now() + T;
    while s.job_status("behind", "{.status.phase}") != "Queued" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "behind never queued"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let drain = start_drain(&s, &node);

    // The job is asked to checkpoint because of the drain, saves it, and comes back on the
    // other two nodes without a retry.
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let preemptions = s.job_status("gang", "{.status.preemptions}");
        let started = s.job_status("gang", "{.status.startedAt}");
        if preemptions == "1"
            && !started.is_empty()
            && s.job_status("gang", "{.status.phase}") == "Running"
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gang: {}",
            s.job_status("gang", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let events = s.events("gang");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "Preempting" && m.contains("being drained") && m.contains(&node)),
        "{events:?}"
    );
    assert_eq!(
        s.job_status("gang", "{.status.lastPreemption.outcome}"),
        "CheckpointSaved"
    );
    assert_eq!(s.job_status("gang", "{.status.retries}"), "0");
    let nodes = s.cp.jsonpath(
        &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=gang"],
        "{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
    );
    assert!(!nodes.lines().any(|n| n == node), "{nodes}");
    // The job behind it kept waiting: it never ran, so the gang never had to take it back.
    assert_eq!(s.job_status("behind", "{.status.phase}"), "Queued");
    assert_eq!(s.job_status("behind", "{.status.preemptions}"), "0");
    assert!(s.pods_of("behind").is_empty());

    // The drain finishes on its own.
    drain_finishes(drain).await;
    let _ = s.cp.kubectl(&["uncordon", &node]);
    s.finish().await;
}

/// Another team's job waiting to borrow does not start on the room a drained job within its
/// guarantee comes back to: before, it started in the 10-s gap and was reclaimed seconds later
/// (an acceptance run). The borrower already on the room the job needs is reclaimed instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_job_keeps_its_room_from_other_teams_while_it_returns() {
    let s = Scenario::new("drainlend", 3, 8, 1).await;
    let owner = s.tenant("owner", 16, "FIFO", "");
    let borrower = s.tenant("borrower", 0, "FIFO", "");
    s.cp.apply(&s.job(
        "gang",
        &owner,
        2,
        8,
        &[("checkpoint-delay-seconds", "2")],
        "",
    ));
    s.wait_phase("gang", "Running", T).await;
    // the third node, borrowed; then a second borrower waits for room
    let borrow = |name: &str| {
        s.job(
            name,
            &borrower,
            1,
            8,
            &[("run-seconds", "600"), ("checkpoint-delay-seconds", "1")],
            "",
        )
    };
    s.cp.apply(&borrow("early"));
    s.wait_phase("early", "Running", T).await;
    assert_eq!(s.job_status("early", "{.status.bonus}"), "true");
    s.cp.apply(&borrow("late"));
    s.wait_phase("late", "Queued", T).await;
    let deadline = tokio::time::Instant::now() + T;
    while s.job_status("gang", "{.status.startedAt}").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "gang never ran");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let node = s.cp.jsonpath(
        &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=gang"],
        "{.items[0].spec.nodeName}",
    );
    assert!(!node.is_empty());

    let drain = start_drain(&s, &node);

    // The gang comes back on its other node and the borrowed one.
    let deadline = tokio::time::Instant::now() + T;
    while !(s.job_status("gang", "{.status.preemptions}") == "1"
        && s.job_status("gang", "{.status.phase}") == "Running")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gang: {}",
            s.job_status("gang", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        s.job_status("early", "{.status.lastPreemption.reason}"),
        "Reclaim"
    );
    // The second borrower never started, so was never taken back.
    let late = s.event_reasons("late");
    assert!(!late.iter().any(|r| r == "Admitted"), "{late:?}");
    assert_eq!(s.job_status("late", "{.status.preemptions}"), "0");
    assert!(s.pods_of("late").is_empty());

    drain_finishes(drain).await;
    let _ = s.cp.kubectl(&["uncordon", &node]);
    s.finish().await;
}
