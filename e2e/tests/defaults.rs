//! Defaults a job takes from its surroundings: the VirtualCluster's `defaultQueue` when the job
//! names no queue, and the priority of the PriorityClass its templates name when it sets no
//! `spec.priority`.

use std::time::{Duration, Instant};

use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// A job manifest of the scenario's helper without its `queue:` line.
fn job_without_queue(s: &Scenario, name: &str, run_seconds: &str, extra_spec: &str) -> String {
    s.job(
        name,
        "UNSET",
        1,
        8,
        &[("run-seconds", run_seconds)],
        extra_spec,
    )
    .replace("  queue: UNSET\n", "")
}

/// The same manifest with `priorityClassName` in its pod template.
fn with_priority_class(manifest: &str, class: &str) -> String {
    manifest.replace(
        "      spec:\n        containers:",
        &format!("      spec:\n        priorityClassName: {class}\n        containers:"),
    )
}

/// The order in which jobs were admitted, as first seen (as in scheduling.rs).
async fn admission_order(s: &Scenario, jobs: &[&str]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < jobs.len() {
        for j in jobs {
            if !seen.iter().any(|n| n == j) && !s.job_status(j, "{.status.admittedAt}").is_empty() {
                seen.push(j.to_string());
            }
        }
        assert!(Instant::now() < deadline, "not all admitted: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

/// Waits until the job's `Valid` condition has `reason`; returns its message.
async fn wait_valid_reason(s: &Scenario, job: &str, reason: &str) -> String {
    let deadline = Instant::now() + T;
    loop {
        let now = s.job_status(job, "{.status.conditions[?(@.type==\"Valid\")].reason}");
        if now == reason {
            return s.job_status(job, "{.status.conditions[?(@.type==\"Valid\")].message}");
        }
        assert!(
            Instant::now() < deadline,
            "{job}: no Valid reason {reason}: {}",
            s.job_status(job, "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the VirtualCluster's `Ready` condition reads `status/reason`; returns its
/// message.
async fn wait_vc_ready(s: &Scenario, vc: &str, want: &str) -> String {
    let deadline = Instant::now() + T;
    let ready = "{.status.conditions[?(@.type==\"Ready\")]";
    loop {
        let now =
            s.cp.jsonpath(&["vc", vc], &format!("{ready}.status}}/{ready}.reason}}"));
        if now == want {
            return s.cp.jsonpath(&["vc", vc], &format!("{ready}.message}}"));
        }
        assert!(
            Instant::now() < deadline,
            "VirtualCluster {vc}: Ready {now}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_a_queue_runs_in_the_default_queue_and_get_shows_it() {
    let s = Scenario::new("dq", 1, 8, 1).await;
    let q = s.tenant("dq", 8, "FIFO", &format!("  defaultQueue: dq-{}\n", s.id));
    s.cp.apply(&job_without_queue(&s, "noq", "3", ""));
    s.wait_phase("noq", "Running", T).await;
    assert_eq!(s.job_status("noq", "{.status.queue}"), q);
    assert_eq!(
        s.job_status("noq", "{.status.conditions[?(@.type==\"Valid\")].status}"),
        "True"
    );
    // `kubectl get tj` prints the queue in effect.
    let table =
        s.cp.kubectl_ok(&["get", "tj", "noq", "-n", &s.ns])
            .expect("kubectl get tj");
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("QUEUE"), "{table}");
    assert!(
        table.lines().nth(1).is_some_and(|row| {
            row.split_whitespace().collect::<Vec<_>>()[..2] == ["noq", q.as_str()]
        }),
        "{table}"
    );
    s.wait_phase("noq", "Succeeded", T).await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_queue_without_a_default_is_invalid_until_the_tenant_sets_a_good_one() {
    let s = Scenario::new("noq", 1, 8, 1).await;
    let own = s.tenant("nodef", 8, "FIFO", "");
    s.cp.apply(&job_without_queue(&s, "lost", "1", ""));
    let msg = wait_valid_reason(&s, "lost", "NoQueue").await;
    assert!(msg.contains(&format!("namespace {}", s.ns)), "{msg}");
    assert_eq!(s.job_status("lost", "{.status.phase}"), "Pending");

    // A defaultQueue of another tenant: the VirtualCluster is not Ready, the job not valid.
    let other = format!("other-{}", s.id);
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: {other}\nspec:\n  namespaces: [elsewhere-{id}]\n---\napiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: {other}\nspec:\n  virtualCluster: {other}\n",
        id = s.id
    ));
    s.cp.kubectl_ok(&[
        "patch",
        "vc",
        &own,
        "--type=merge",
        "-p",
        &format!("{{\"spec\":{{\"defaultQueue\":\"{other}\"}}}}"),
    ])
    .expect("patch defaultQueue");
    let msg = wait_valid_reason(&s, "lost", "DefaultQueueInvalid").await;
    assert!(
        msg.contains(&format!("belongs to VirtualCluster {other}")),
        "{msg}"
    );
    wait_vc_ready(&s, &own, "False/DefaultQueueInvalid").await;

    // Its own queue: the job runs there.
    s.cp.kubectl_ok(&[
        "patch",
        "vc",
        &own,
        "--type=merge",
        "-p",
        &format!("{{\"spec\":{{\"defaultQueue\":\"{own}\"}}}}"),
    ])
    .expect("patch defaultQueue");
    s.wait_phase("lost", "Succeeded", T).await;
    assert_eq!(s.job_status("lost", "{.status.queue}"), own);
    wait_vc_ready(&s, &own, "True/Ready").await;

    // The other tenant claims this namespace too: both say so, naming each other.
    s.cp.kubectl_ok(&[
        "patch",
        "vc",
        &other,
        "--type=merge",
        "-p",
        &format!(
            "{{\"spec\":{{\"namespaces\":[\"elsewhere-{}\",\"{}\"]}}}}",
            s.id, s.ns
        ),
    ])
    .expect("patch namespaces");
    let msg = wait_vc_ready(&s, &own, "False/NamespaceConflict").await;
    assert!(
        msg.contains(&format!("{} is owned by {other} too", s.ns)),
        "{msg}"
    );
    let msg = wait_vc_ready(&s, &other, "False/NamespaceConflict").await;
    assert!(
        msg.contains(&format!("{} is owned by {own} too", s.ns)),
        "{msg}"
    );
    let _ = s.cp.kubectl(&["delete", "vc", &other, "--wait=false"]);
    let _ = s.cp.kubectl(&["delete", "queue", &other, "--wait=false"]);
    wait_vc_ready(&s, &own, "True/Ready").await;

    // A GPU type no node has (a typo) is not a guarantee anyone can use.
    let typo = format!("typo-{}", s.id);
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: {typo}\nspec:\n  guarantee:\n  - flavor: NoSuchGPU\n    gpus: 1\n"
    ));
    let msg = wait_vc_ready(&s, &typo, "False/UnknownGpuType").await;
    assert!(msg.contains("No node has GPU type NoSuchGPU"), "{msg}");
    // `kubectl get events` (and alerts on Warnings) see it too, not only `describe`.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let events = s.cp.jsonpath(
            &[
                "events",
                "-A",
                "--field-selector",
                &format!("involvedObject.kind=VirtualCluster,involvedObject.name={typo}"),
            ],
            "{range .items[*]}{.type}/{.reason}{\"\\n\"}{end}",
        );
        if events.lines().any(|l| l == "Warning/UnknownGpuType") {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "no Warning Event: {events:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // ... and only that: not also over-committed or at risk, as a real type would be.
    for condition in ["OverCommitted", "GuaranteeAtRisk"] {
        let said = s.cp.jsonpath(
            &["vc", &typo],
            &format!("{{.status.conditions[?(@.type==\"{condition}\")].status}}"),
        );
        assert_eq!(said, "False", "{condition}");
    }
    let _ = s.cp.kubectl(&["delete", "vc", &typo, "--wait=false"]);
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_priority_class_orders_jobs_and_a_missing_one_is_invalid() {
    let s = Scenario::new("pclass", 1, 8, 1).await;
    let q = s.tenant("pclass", 8, "Priority", "");
    let high = format!("high-{}", s.id);
    let missing = format!("missing-{}", s.id);

    // A template naming a class that does not exist: not valid, nothing created.
    s.cp.apply(&with_priority_class(
        &s.job("ghost", &q, 1, 8, &[("run-seconds", "1")], ""),
        &missing,
    ));
    let msg = wait_valid_reason(&s, "ghost", "UnknownPriorityClass").await;
    assert!(msg.contains(&missing), "{msg}");
    assert!(s.pods_of("ghost").is_empty());
    s.cp.kubectl_ok(&["delete", "tj", "ghost", "-n", &s.ns])
        .expect("delete ghost");

    s.cp.apply(&format!(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {high}\nvalue: 1000\n"
    ));
    // A blocker holds the node; an older job without priority waits, then one whose template
    // names `high`: it goes first.
    s.cp.apply(&s.job("blocker", &q, 1, 8, &[("run-seconds", "6")], ""));
    s.wait_phase("blocker", "Running", T).await;
    s.cp.apply(&s.job("older", &q, 1, 8, &[("run-seconds", "1")], ""));
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.cp.apply(&with_priority_class(
        &s.job("urgent", &q, 1, 8, &[("run-seconds", "1")], ""),
        &high,
    ));
    let deadline = Instant::now() + T;
    while s.job_status("urgent", "{.status.priority}").is_empty() {
        assert!(
            Instant::now() < deadline,
            "{}",
            s.job_status("urgent", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(s.job_status("urgent", "{.status.priority}"), "1000");
    assert_eq!(s.job_status("older", "{.status.priority}"), "0");
    assert_eq!(
        admission_order(&s, &["older", "urgent"]).await,
        vec!["urgent", "older"],
        "the job of PriorityClass {high} goes before the older one"
    );
    s.wait_phase("older", "Succeeded", T).await;
    let _ =
        s.cp.kubectl(&["delete", "priorityclass", &high, "--wait=false"]);
    s.finish().await;
}
