//! `kubectl kubetrain` against a real API server and the operator, run through kubectl
//! itself: kubectl must find `kubectl-kubetrain` on PATH and pass the arguments on.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// `kubectl kubetrain ARGS` with the built plugin first on PATH; (success, stdout, stderr).
fn plugin(cp: &ControlPlane, args: &[&str]) -> (bool, String, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_kubectl-kubetrain"));
    let dir = bin.parent().expect("the plugin's directory");
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let out = Command::new(cp.kubectl_path())
        .arg("kubetrain")
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", cp.kubeconfig())
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn plugin_ok(cp: &ControlPlane, args: &[&str]) -> String {
    let (ok, stdout, stderr) = plugin(cp, args);
    assert!(
        ok,
        "kubectl kubetrain {} failed:\n{stderr}\n{stdout}",
        args.join(" ")
    );
    stdout
}

/// The table row of `name` (first column), split on runs of spaces; the REASON column, being
/// words, comes out as several cells at the end.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

/// The job names of `jobs -o json` (its ages move between two calls).
fn job_names(json: &str) -> Vec<String> {
    let rows: serde_json::Value = serde_json::from_str(json).expect("jobs -o json parses");
    rows.as_array()
        .expect("a list")
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_string))
        .collect()
}

/// Polls `kubectl kubetrain ARGS` until `ready` accepts its output.
async fn until(cp: &ControlPlane, args: &[&str], ready: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let out = plugin_ok(cp, args);
        if ready(&out) {
            return out;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "kubectl kubetrain {} did not show what was expected in {T:?}:\n{out}",
                args.join(" ")
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_kubetrain_jobs_why_suspend_resume_vc() {
    // One node of 8 GPUs, all guaranteed to one team; one 8-GPU job fills it.
    let s = Scenario::new("plugin", 1, 8, 1).await;
    let cp = s.cp;
    let q = s.tenant("plugin", 8, "FIFO", "");
    cp.apply(&s.job("big", &q, 1, 8, &[], "  user: alice\n"));
    s.wait_phase("big", "Running", T).await;
    cp.apply(&s.job("w1", &q, 1, 8, &[], ""));
    s.wait_phase("w1", "Queued", T).await;
    cp.apply(&s.job("w2", &q, 1, 8, &[], ""));

    // jobs: the two waiting jobs are 1 and 2 in the queue, with the reason in one line.
    let ns = s.ns.as_str();
    let table = until(cp, &["jobs", "-n", ns], |t| {
        t.lines().any(|l| l.starts_with("w2 ") && l.contains(" 2 "))
            && t.lines().any(|l| l.starts_with("w1 ") && l.contains(" 1 "))
    })
    .await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME", "PHASE", "QUEUE", "POSITION", "START", "GPUS", "AGE", "REASON"
        ]
    );
    // `big` has no predicted duration: when the jobs behind it start is unknown.
    assert_eq!(
        row(&table, "big")[..6],
        ["big", "Running", &q, "-", "-", "8"]
    );
    assert_eq!(
        row(&table, "w1")[..6],
        ["w1", "Queued", &q, "1", "unknown", "8"]
    );
    assert_eq!(
        row(&table, "w2")[..6],
        ["w2", "Queued", &q, "2", "unknown", "8"]
    );
    assert!(
        row(&table, "w1")[7..]
            .join(" ")
            .starts_with("VirtualCluster"),
        "{table}"
    );
    // -A adds the namespace; --user keeps one user's jobs.
    let all = plugin_ok(cp, &["jobs", "-A"]);
    assert!(all.starts_with("NAMESPACE "), "{all}");
    assert!(
        all.lines()
            .any(|l| l.split_whitespace().take(3).eq([ns, "w1", "Queued"])),
        "{all}"
    );
    let alice = plugin_ok(cp, &["jobs", "-n", ns, "--user", "alice"]);
    assert_eq!(alice.lines().count(), 2, "{alice}");
    assert!(alice.contains("big"), "{alice}");
    // --mine: the user the API server names these credentials (kubectl auth whoami).
    let me = cp
        .kubectl_ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .expect("kubectl auth whoami");
    assert!(!me.is_empty());
    assert_eq!(
        job_names(&plugin_ok(cp, &["jobs", "-n", ns, "--mine", "-o", "json"])),
        job_names(&plugin_ok(
            cp,
            &["jobs", "-n", ns, "--user", &me, "-o", "json"]
        ))
    );
    // --as impersonates, as kubectl's: --mine is then that user (here given the admins'
    // group by --as-group), and a user with no binding may read nothing.
    let as_alice = [
        "jobs",
        "-n",
        ns,
        "--mine",
        "-o",
        "json",
        "--as",
        "alice",
        "--as-group",
        "system:masters",
    ];
    let alices = job_names(&plugin_ok(cp, &as_alice));
    assert_eq!(alices, ["big"]);
    assert_eq!(
        alices,
        job_names(&plugin_ok(
            cp,
            &["jobs", "-n", ns, "--user", "alice", "-o", "json"]
        ))
    );
    let (ok, _, stderr) = plugin(cp, &["jobs", "-n", ns, "--as", "nobody"]);
    assert!(!ok && stderr.contains("forbidden"), "{stderr}");

    // -o json parses, with the positions.
    let json = plugin_ok(cp, &["jobs", "-n", ns, "-o", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&json).expect("jobs -o json parses");
    let position = |name: &str| {
        rows.as_array()
            .expect("a list")
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["position"].clone())
    };
    assert_eq!(position("w1"), Some(1.into()), "{json}");
    assert_eq!(position("w2"), Some(2.into()), "{json}");
    assert_eq!(position("big"), Some(serde_json::Value::Null), "{json}");
    let yaml = plugin_ok(cp, &["jobs", "-n", ns, "-o", "yaml"]);
    let rows: serde_json::Value = serde_norway::from_str(&yaml).expect("jobs -o yaml parses");
    assert_eq!(rows.as_array().map(Vec::len), Some(3), "{yaml}");

    // queue: usage and the waiting jobs in order.
    let queue = plugin_ok(cp, &["queue", &q]);
    assert!(
        queue.contains(&format!("Queue {q} (VirtualCluster {q}, policy FIFO)")),
        "{queue}"
    );
    assert!(queue.contains("GPUs in use: 8 (0 bonus)"), "{queue}");
    let lines: Vec<&str> = queue
        .lines()
        .skip_while(|l| !l.starts_with("POSITION"))
        .collect();
    assert!(lines[1].starts_with(&format!("1          {ns}")), "{queue}");
    assert!(
        lines[1].contains(" w1 ") && lines[2].contains(" w2 "),
        "{queue}"
    );

    // why: the whole reason, what holds the job back and what lets it start.
    let why = plugin_ok(cp, &["why", "w2", "-n", ns]);
    let reason = s.job_status(
        "w2",
        "{.status.conditions[?(@.type==\"Admitted\")].message}",
    );
    assert!(!reason.is_empty());
    assert!(
        why.starts_with(&format!(
            "TrainingJob {ns}/w2: Queued in queue {q}, position 2\n"
        )),
        "{why}"
    );
    assert!(
        why.contains(&format!("Admitted:  QuotaExhausted: {reason}")),
        "{why}"
    );
    assert!(
        why.contains("Blocked by: the VirtualCluster's guarantee (in use, or smaller"),
        "{why}"
    );
    assert!(why.contains("Unblocks:  It starts when"), "{why}");
    let (ok, _, err) = plugin(cp, &["why", "nope", "-n", ns]);
    assert!(!ok && err.contains("TrainingJob nope not found"), "{err}");

    // vc: guarantee 8, 8 in use, nothing borrowed or lent.
    let vc = until(cp, &["vc", &q], |t| {
        t.lines().nth(1).is_some_and(|l| {
            l.split_whitespace().collect::<Vec<_>>()[2..] == ["8", "8", "0", "0", "-"]
        })
    })
    .await;
    assert_eq!(
        vc.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "VIRTUALCLUSTER",
            "GPU",
            "TYPE",
            "GUARANTEE",
            "IN",
            "USE",
            "BORROWED",
            "LENT",
            "LIMIT"
        ]
    );
    assert_eq!(row(&vc, &q)[1], s.flavor, "{vc}");
    let vcs: serde_json::Value =
        serde_json::from_str(&plugin_ok(cp, &["vc", &q, "-o", "json"])).expect("vc -o json");
    assert_eq!(vcs[0]["guarantee"], 8);

    // suspend a waiting job: it leaves the line (w2 moves up), resume brings it back.
    let out = plugin_ok(cp, &["suspend", "w1", "-n", ns]);
    assert_eq!(out, "trainingjob.kubetrain.io/w1 suspended\n");
    assert_eq!(s.job_status("w1", "{.spec.suspend}"), "true");
    s.wait_phase("w1", "Suspended", T).await;
    until(cp, &["jobs", "-n", ns], |t| {
        row(t, "w1")[3] == "-" && row(t, "w2")[3] == "1"
    })
    .await;
    let managers = cp.jsonpath(
        &["tj", "w1", "-n", ns, "--show-managed-fields"],
        "{.metadata.managedFields[*].manager}",
    );
    assert!(managers.contains("kubectl-kubetrain"), "{managers}");
    let out = plugin_ok(cp, &["resume", "w1", "-n", ns]);
    assert_eq!(out, "trainingjob.kubetrain.io/w1 resumed\n");
    assert_eq!(s.job_status("w1", "{.spec.suspend}"), "false");
    s.wait_phase("w1", "Queued", T).await;
    until(cp, &["jobs", "-n", ns], |t| {
        row(t, "w1")[3] == "1" && row(t, "w2")[3] == "2"
    })
    .await;

    // suspend the running job: it is checkpointed and stopped, and the first in line runs.
    plugin_ok(cp, &["suspend", "big", "-n", ns]);
    s.wait_phase("big", "Suspended", T).await;
    assert_eq!(
        s.job_status("big", "{.status.lastPreemption.outcome}"),
        "CheckpointSaved"
    );
    s.wait_phase("w1", "Running", T).await;
    let table = until(cp, &["jobs", "-n", ns], |t| row(t, "w2")[3] == "1").await;
    assert_eq!(row(&table, "w1")[3], "-", "{table}");
    assert_eq!(s.job_status("w1", "{.status.queuePosition}"), "");
    plugin_ok(cp, &["resume", "big", "-n", ns]);
    s.wait_phase("big", "Queued", T).await;

    // A finished job has nothing to suspend: said so, not "suspended".
    cp.apply(&s.job("done", &q, 1, 0, &[("run-seconds", "1")], ""));
    s.wait_phase("done", "Succeeded", T).await;
    let (ok, _, stderr) = plugin(cp, &["suspend", "done", "-n", ns]);
    assert!(
        !ok && stderr.contains("has finished (Succeeded)"),
        "{stderr}"
    );
    assert_eq!(s.job_status("done", "{.spec.suspend}"), "false");

    s.finish().await;
}

/// `hold` and `release` set the queue's `spec.stopPolicy` as the plugin (field manager
/// `kubectl-kubetrain`): a held queue admits nothing and `why` and `queue` say so; `--drain`
/// sends the running job back to the queue with a checkpoint; `release` lets both run. A
/// queue that does not exist is an error, not a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_kubetrain_hold_and_release_a_queue() {
    let s = Scenario::new("plughold", 1, 8, 1).await;
    let cp = s.cp;
    let ns = s.ns.as_str();
    let q = s.tenant("plughold", 8, "FIFO", "");
    cp.apply(&s.job("big", &q, 1, 4, &[], ""));
    s.wait_phase("big", "Running", T).await;

    let out = plugin_ok(cp, &["hold", &q]);
    assert_eq!(
        out,
        format!("queue.kubetrain.io/{q} held: it admits no new jobs; admitted jobs run on\n")
    );
    assert_eq!(cp.jsonpath(&["queue", &q], "{.spec.stopPolicy}"), "Hold");
    let managers = cp.jsonpath(
        &["queue", &q, "--show-managed-fields"],
        "{.metadata.managedFields[*].manager}",
    );
    assert!(managers.contains("kubectl-kubetrain"), "{managers}");
    cp.apply(&s.job("next", &q, 1, 4, &[], ""));
    let why = until(cp, &["why", "next", "-n", ns], |t| t.contains("QueueHeld")).await;
    assert!(why.contains("held by its stopPolicy"), "{why}");
    until(cp, &["queue", &q], |t| {
        t.contains("Held by stopPolicy Hold")
    })
    .await;
    assert_eq!(s.job_status("big", "{.status.phase}"), "Running");

    plugin_ok(cp, &["hold", &q, "--drain"]);
    assert_eq!(
        cp.jsonpath(&["queue", &q], "{.spec.stopPolicy}"),
        "HoldAndDrain"
    );
    s.wait_phase("big", "Queued", T).await;
    assert_eq!(
        s.job_status("big", "{.status.lastPreemption.reason}"),
        "QueueHold"
    );

    let out = plugin_ok(cp, &["release", &q, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("release -o json");
    assert_eq!(v["stopPolicy"], "None", "{out}");
    s.wait_phase("big", "Running", T).await;
    s.wait_phase("next", "Running", T).await;

    let (ok, _, stderr) = plugin(cp, &["hold", "no-such-queue"]);
    assert!(
        !ok && stderr.contains("queue no-such-queue not found"),
        "{stderr}"
    );
    s.finish().await;
}
