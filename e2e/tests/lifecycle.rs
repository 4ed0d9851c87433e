//! TrainingJob lifecycle against the real control plane, simulated nodes and the operator:
//! submit → queue → run → succeed; retry ≤ N then fail; gangs all or nothing; invalid
//! references recovered by a later apply; reclaim with a checkpoint.

use std::time::{Duration, Instant};

use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_queued_running_succeeded() {
    let s = Scenario::new("happy", 1, 8, 1).await;
    let q = s.tenant("happy", 8, "FIFO", "");
    let submitted = Instant::now();
    s.cp.apply(&s.job("train", &q, 2, 2, &[("run-seconds", "3")], ""));
    s.wait_phase("train", "Running", T).await;
    let running = submitted.elapsed();
    assert_eq!(
        s.pods_of("train").len(),
        2,
        "both replicas exist while running"
    );
    let placement = s.job_status("train", "{.status.placement[*].node}");
    assert_eq!(
        placement.split_whitespace().count(),
        2,
        "placement recorded: {placement}"
    );
    // The gang's disruption budget and headless Service while it runs; both go once it
    // has finished, while the job itself stays.
    let gang_objects = || {
        s.cp.kubectl_ok(&[
            "get",
            "poddisruptionbudgets,services",
            "-n",
            &s.ns,
            "-l",
            "kubetrain.io/job=train",
            "-o",
            "name",
        ])
        .expect("list budgets and Services")
    };
    let running_objects = gang_objects();
    assert!(
        running_objects.contains("poddisruptionbudget.policy/train")
            && running_objects.contains("service/train"),
        "{running_objects}"
    );
    assert_eq!(
        s.cp.jsonpath(&["pdb", "train", "-n", &s.ns], "{.spec.minAvailable}"),
        "2"
    );
    s.wait_phase("train", "Succeeded", T).await;
    kubetrain_e2e::ControlPlane::eventually(
        "the finished gang's budget and Service to go",
        T,
        || {
            let left = gang_objects();
            async move { left.trim().is_empty().then_some(()) }
        },
    )
    .await;
    assert_eq!(s.job_status("train", "{.metadata.name}"), "train");
    let conditions = s.job_status(
        "train",
        "{range .status.conditions[*]}{.type}={.status} {end}",
    );
    // Finished, it holds no GPUs and no longer says it is admitted.
    for c in ["Valid=True", "Admitted=False", "Succeeded=True"] {
        assert!(
            conditions.contains(c),
            "missing condition {c}: {conditions}"
        );
    }
    assert!(s.job_status("train", "{.status.finishedAt}").len() > 10);
    // Admitted in its first cycle, it may have no `Queued` Event: `Admitted` names the queue.
    let events = s.events("train");
    for r in ["Admitted", "Succeeded"] {
        assert!(
            events.iter().any(|e| e.0 == r),
            "missing event {r}: {events:?}"
        );
    }
    assert!(
        events
            .iter()
            .any(|e| e.0 == "Admitted" && e.1.contains(&format!("from queue {q}"))),
        "the Admitted Event names the queue: {events:?}"
    );
    // GitOps: applying the same manifest again changes nothing and restarts nothing.
    let rv = s.job_status("train", "{.metadata.resourceVersion}");
    let again =
        s.cp.apply(&s.job("train", &q, 2, 2, &[("run-seconds", "3")], ""));
    assert!(again.contains("unchanged"), "{again}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rv, s.job_status("train", "{.metadata.resourceVersion}"));
    s.timing(&format!(
        "happy_path: submit→running {:.2}s",
        running.as_secs_f64()
    ));
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_replica_is_retried_then_fails() {
    let s = Scenario::new("retry", 1, 8, 1).await;
    let q = s.tenant("retry", 8, "FIFO", "");
    let extra = "  maxRetries: 2\n  backoff:\n    initialSeconds: 1\n    maxSeconds: 1\n";
    s.cp.apply(&s.job(
        "crash",
        &q,
        2,
        1,
        &[("run-seconds", "1"), ("exit-code", "3")],
        extra,
    ));
    s.wait_phase("crash", "Failed", Duration::from_secs(90))
        .await;
    assert_eq!(s.job_status("crash", "{.status.retries}"), "2");
    let msg = s.job_status("crash", "{.status.message}");
    assert!(
        msg.contains("exit code 3") && msg.contains("No retries left"),
        "{msg}"
    );
    let reason = s.job_status(
        "crash",
        "{.status.conditions[?(@.type==\"Failed\")].reason}",
    );
    assert_eq!(reason, "RetriesExhausted");
    let events = s.event_reasons("crash");
    assert!(events.iter().any(|e| e == "Failed"), "{events:?}");
    // The troubleshooting guide's two commands: the story in the order it happened (by each
    // Event's first occurrence: the operator's events.k8s.io Events have no lastTimestamp),
    // and `kubectl events`, by last occurrence.
    let first = s.event_reasons("crash");
    let at = |reason: &str| {
        first
            .iter()
            .position(|r| r == reason)
            .unwrap_or_else(|| panic!("no {reason} in {first:?}"))
    };
    assert!(
        at("Admitted") < at("ReplicaFailed") && at("ReplicaFailed") < at("Failed"),
        "{first:?}"
    );
    let recent =
        s.cp.kubectl_ok(&["events", "-n", &s.ns, "--for", "trainingjob/crash"])
            .expect("kubectl events");
    assert!(recent.contains("No retries left"), "{recent}");
    // The replica that failed it stays, for `kubectl logs`, after the reconciles that
    // follow the failure (it used to be deleted with the gang).
    let failed = msg
        .split_whitespace()
        .nth(1)
        .expect("the message names the replica");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pod = s.cp.jsonpath(
        &["pod", failed, "-n", &s.ns],
        "{.status.phase},{.metadata.deletionTimestamp}",
    );
    assert_eq!(pod, "Failed,", "{failed} after the job failed ({msg})");
    // Each retry is an Event of its own that says its attempt and delay (the recorder
    // folds events of one reason and action into a series that keeps only the first note).
    // The delay runs from the replica's finishedAt, so it reads 0 s when the operator saw
    // the failure a second or more after it happened (a loaded machine).
    let notes: Vec<String> = s
        .events("crash")
        .into_iter()
        .filter(|(reason, _)| reason == "ReplicaFailed")
        .map(|(_, note)| note)
        .collect();
    for attempt in ["Retry 1 of 2 in ", "Retry 2 of 2 in "] {
        assert!(
            notes.iter().any(|n| n.contains(attempt)),
            "no Event says {attempt:?}: {notes:#?}"
        );
    }
    s.finish().await;
}

/// `podFailurePolicy`: a replica exits with a code a `FailJob` rule lists; the job fails at
/// once with `PodFailurePolicy`, its retries unused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fail_job_rule_fails_the_job_without_retries() {
    let s = Scenario::new("policy", 1, 8, 1).await;
    let q = s.tenant("policy", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "badconf",
        &q,
        2,
        1,
        &[("run-seconds", "1"), ("exit-code", "42")],
        "  maxRetries: 3\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n      \
         onExitCodes: {containerName: trainer, operator: In, values: [42]}\n",
    ));
    s.wait_phase("badconf", "Failed", Duration::from_secs(60))
        .await;
    let reason = s.job_status(
        "badconf",
        "{.status.conditions[?(@.type==\"Failed\")].reason}",
    );
    assert_eq!(reason, "PodFailurePolicy");
    assert_eq!(s.job_status("badconf", "{.status.retries}"), "0");
    let msg = s.job_status("badconf", "{.status.message}");
    assert!(
        msg.contains("exited with code 42") && msg.contains("podFailurePolicy rule 0: FailJob"),
        "{msg}"
    );
    s.finish().await;
}

/// `activeDeadlineSeconds`: a gang that runs past it is stopped and fails for good, its
/// retries unused, and its pods are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_deadline_fails_and_is_not_retried() {
    let s = Scenario::new("deadline", 1, 8, 1).await;
    let q = s.tenant("deadline", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "slow",
        &q,
        2,
        1,
        &[("run-seconds", "600")],
        "  maxRetries: 2\n  activeDeadlineSeconds: 4\n",
    ));
    s.wait_phase("slow", "Failed", Duration::from_secs(60))
        .await;
    let reason = s.job_status("slow", "{.status.conditions[?(@.type==\"Failed\")].reason}");
    assert_eq!(reason, "DeadlineExceeded");
    assert_eq!(s.job_status("slow", "{.status.retries}"), "0");
    let msg = s.job_status("slow", "{.status.message}");
    assert!(msg.contains("activeDeadlineSeconds"), "{msg}");
    assert!(s.event_reasons("slow").iter().any(|e| e == "Failed"));
    // Its replicas were stopped: none is left running.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let phases = s.cp.jsonpath(
            &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=slow"],
            "{.items[*].status.phase}",
        );
        if !phases.contains("Running") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "replicas still running after the deadline: {phases}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_admission_rejection_is_retried_without_counting() {
    let s = Scenario::new("admit", 1, 8, 1).await;
    let q = s.tenant("admit", 8, "FIFO", "");
    // The kubelet refuses the first attempt's pods (as when a GPU failed between the
    // decision and the pod's arrival). With no retries allowed, only an infrastructure
    // retry lets the job run at all.
    s.cp.apply(&s.job(
        "refused",
        &q,
        2,
        4,
        &[("admission-reject", "OutOfnvidia.com/gpu")],
        "  maxRetries: 0\n",
    ));
    s.wait_phase("refused", "Running", Duration::from_secs(90))
        .await;
    assert_eq!(s.job_status("refused", "{.status.retries}"), "0");
    assert_eq!(
        s.job_status("refused", "{.status.infrastructureRetries}"),
        "1"
    );
    let events = s.event_reasons("refused");
    assert!(
        events.iter().any(|e| e == "InfrastructureFailure"),
        "{events:?}"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_killed_replica_counts_as_a_failure() {
    let s = Scenario::new("oom", 1, 8, 1).await;
    let q = s.tenant("oom", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "oom",
        &q,
        1,
        1,
        &[("run-seconds", "1"), ("oom-killed", "true")],
        "  maxRetries: 0\n",
    ));
    s.wait_phase("oom", "Failed", T).await;
    let msg = s.job_status("oom", "{.status.message}");
    assert!(msg.contains("OOMKilled"), "{msg}");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_is_never_partly_created() {
    let s = Scenario::new("gang", 4, 8, 2).await;
    let q = s.tenant("gang", 32, "FIFO", "");
    // Two 4 × 8-GPU gangs on 32 GPUs: the second waits whole until the first is done.
    s.cp.apply(&s.job("first", &q, 4, 8, &[("run-seconds", "4")], ""));
    s.cp.apply(&s.job("second", &q, 4, 8, &[("run-seconds", "2")], ""));
    let deadline = Instant::now() + Duration::from_secs(90);
    // A gang's pods are created (and deleted) concurrently, and the API server shows them
    // one by one: a list can catch some of them for a moment. A partial gang is one that
    // stays partial.
    let mut partial_since: std::collections::BTreeMap<&str, Instant> = Default::default();
    loop {
        for job in ["first", "second"] {
            let n = s.pods_of(job).len();
            if n == 0 || n == 4 {
                partial_since.remove(job);
                continue;
            }
            let since = *partial_since.entry(job).or_insert_with(Instant::now);
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "{job} has had {n} of 4 pods for 10 s: a partial gang"
            );
        }
        // The GPUs are what counts: a job's status may still say Running for a moment after
        // its pods finished, while the next gang already holds the GPUs.
        let active = s.cp.jsonpath(
            &["pods", "-n", &s.ns],
            "{range .items[*]}{.status.phase}{\"\\n\"}{end}",
        );
        let holding = active
            .lines()
            .filter(|p| *p == "Pending" || *p == "Running")
            .count();
        assert!(holding <= 4, "{holding} 8-GPU pods hold GPUs on 32 GPUs");
        if s.job_status("second", "{.status.phase}") == "Succeeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "second gang never ran: {}",
            s.job_status("second", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(s.job_status("first", "{.status.phase}"), "Succeeded");
    s.finish().await;
}

/// A gang whose image cannot be pulled stays `Starting` (not `Running`), and `kubectl get tj`
/// says why in its REASON column, the kubelet's word; the status names the pod. Fixing the
/// template starts it again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_whose_image_cannot_be_pulled_says_so_while_it_starts() {
    let s = Scenario::new("pull", 1, 8, 1).await;
    let q = s.tenant("pull", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "stuck",
        &q,
        2,
        1,
        &[("image-pull-error", "manifest unknown")],
        "",
    ));
    let deadline = Instant::now() + T;
    while s.job_status("stuck", "{.status.reason}") != "ImagePullBackOff" {
        assert!(
            Instant::now() < deadline,
            "no ImagePullBackOff: {}",
            s.job_status("stuck", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(s.job_status("stuck", "{.status.phase}"), "Starting");
    let message = s.job_status("stuck", "{.status.message}");
    assert!(
        message.contains("stuck-worker-0 is not running: ImagePullBackOff")
            && message.contains("manifest unknown"),
        "{message}"
    );
    let table =
        s.cp.kubectl_ok(&["get", "tj", "stuck", "-n", &s.ns])
            .expect("kubectl get tj");
    assert!(
        table.contains("Starting") && table.contains("ImagePullBackOff"),
        "{table}"
    );
    // The image is fixed in the template: the gang starts again with it at once, with no
    // retry counted, rather than after the start timeout.
    s.cp.kubectl_ok(&[
        "patch",
        "tj",
        "stuck",
        "-n",
        &s.ns,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/tasks/0/template/metadata/annotations/sim.kubetrain.io~1image-pull-error"}]"#,
    ])
    .expect("patch the template");
    s.wait_phase("stuck", "Running", T).await;
    assert_eq!(s.job_status("stuck", "{.status.retries}"), "0");
    let events = s.event_reasons("stuck");
    assert!(events.iter().any(|e| e == "TemplateChanged"), "{events:?}");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_queue_is_reported_and_recovered_by_a_later_apply() {
    let s = Scenario::new("gitops", 1, 8, 1).await;
    let queue = format!("late-{}", s.id);
    s.cp.apply(&s.job("early", &queue, 1, 1, &[("run-seconds", "1")], ""));
    let deadline = Instant::now() + T;
    loop {
        let reason = s.job_status("early", "{.status.conditions[?(@.type==\"Valid\")].reason}");
        if reason == "UnknownQueue" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no UnknownQueue condition: {}",
            s.job_status("early", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(s.job_status("early", "{.status.phase}"), "Pending");
    // `kubectl get tj` says why in its REASON column.
    let table =
        s.cp.kubectl_ok(&["get", "tj", "early", "-n", &s.ns])
            .expect("kubectl get tj");
    assert!(
        table.contains("REASON") && table.contains("UnknownQueue"),
        "{table}"
    );
    // The queue arrives later (another file of the same GitOps sync): the job recovers.
    let vc = format!("late-{}", s.id);
    s.cp.apply(&format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: {vc}\nspec:\n  namespaces: [{}]\n  guarantee:\n  - flavor: {}\n    gpus: 8\n---\napiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: {queue}\nspec:\n  virtualCluster: {vc}\n",
        s.ns, s.flavor
    ));
    s.wait_phase("early", "Succeeded", T).await;
    let valid = s.job_status("early", "{.status.conditions[?(@.type==\"Valid\")].status}");
    assert_eq!(valid, "True");
    s.finish().await;
}

/// What only the API server's Pod validation catches (a volumeMount naming no volume): the
/// job is `Valid=False` with the API server's message, holds nothing and blocks nobody of its
/// team, and runs once its spec is fixed. Retried each cycle, it held the team's guarantee
/// and a lower job of the team never started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_the_api_server_refuses_is_invalid_and_blocks_nobody() {
    let s = Scenario::new("refused", 1, 8, 1).await;
    let q = s.tenant("refused", 8, "Priority", "");
    let mount = "          volumeMounts:\n          - name: data\n            mountPath: /data\n";
    let bad = |volume: &str| {
        s.job(
            "bad",
            &q,
            1,
            8,
            &[("run-seconds", "1")],
            "  priority: 100\n",
        )
        .replace(
            "image: trainer:latest\n",
            &format!("image: trainer:latest\n{mount}"),
        ) + volume
    };
    s.cp.apply(&bad(""));
    s.cp.apply(&s.job("good", &q, 1, 8, &[("run-seconds", "3")], ""));
    let valid = |field: &str| {
        s.job_status(
            "bad",
            &format!("{{.status.conditions[?(@.type==\"Valid\")].{field}}}"),
        )
    };
    kubetrain_e2e::ControlPlane::eventually("bad to be InvalidTemplate", T, || {
        let reason = valid("reason");
        async move { (reason == "InvalidTemplate").then_some(()) }
    })
    .await;
    let message = valid("message");
    assert!(
        message.starts_with("the API server refused pod bad-worker-0: ")
            && message.contains("volumeMounts[0].name: Not found"),
        "{message}"
    );
    assert_eq!(valid("status"), "False");
    // The lower job of the team runs on the guarantee the refused one no longer takes.
    s.wait_phase("good", "Running", T).await;
    assert_eq!(s.job_status("bad", "{.status.phase}"), "Pending");
    assert!(s.pods_of("bad").is_empty(), "{:?}", s.pods_of("bad"));
    let failed: Vec<String> = s
        .events("bad")
        .into_iter()
        .filter(|(r, _)| r == "AdmissionFailed")
        .map(|(_, m)| m)
        .collect();
    assert!(
        !failed.is_empty()
            && failed
                .iter()
                .all(|m| m.contains("volumeMounts[0].name: Not found") && !m.contains("Status {")),
        "the Event quotes the API server: {failed:?}"
    );
    // The spec fixed, the job is tried again and runs (after good, which holds the GPUs).
    s.cp.apply(&bad(
        "        volumes:\n        - name: data\n          emptyDir: {}\n",
    ));
    s.wait_phase("good", "Succeeded", T).await;
    s.wait_phase("bad", "Succeeded", T).await;
    assert_eq!(valid("status"), "True");
    s.finish().await;
}

/// As the Job controller matches pods, a job's pods are those it controls. The pod a
/// deleted job of the same name left (`--cascade=orphan`) is neither adopted (the re-created
/// job went straight to Succeeded on it, with nothing run) nor deleted: the job stays queued
/// with a Warning naming the pod, and runs once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_job_does_not_adopt_the_pods_an_earlier_one_left() {
    let s = Scenario::new("orphan", 1, 8, 1).await;
    let q = s.tenant("orphan", 8, "FIFO", "");
    let manifest = s.job("ok1", &q, 1, 1, &[("run-seconds", "1")], "");
    s.cp.apply(&manifest);
    s.wait_phase("ok1", "Succeeded", T).await;
    let earlier = s.job_status("ok1", "{.metadata.uid}");
    s.cp.kubectl_ok(&["delete", "tj", "ok1", "-n", &s.ns, "--cascade=orphan"])
        .expect("delete, orphaning the pods");
    let pod = "ok1-worker-0";
    let get_pod = |path: &str| s.cp.jsonpath(&["pod", pod, "-n", &s.ns], path);
    let left = get_pod("{.metadata.uid}");
    assert!(!left.is_empty(), "the pod stays");
    kubetrain_e2e::ControlPlane::eventually("the pod to lose its owner", T, || {
        let owners = get_pod("{.metadata.ownerReferences}");
        async move { owners.is_empty().then_some(()) }
    })
    .await;
    s.cp.apply(&manifest);
    let uid = s.job_status("ok1", "{.metadata.uid}");
    assert_ne!(uid, earlier, "a new job");
    // The Events of this job, not of the earlier one of its name.
    let events = || -> Vec<(String, String)> {
        s.cp.jsonpath(
            &[
                "events",
                "-n",
                &s.ns,
                "--field-selector",
                &format!("involvedObject.uid={uid}"),
            ],
            "{range .items[*]}{.reason}{\"\\t\"}{.message}{\"\\n\"}{end}",
        )
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(r, m)| (r.to_string(), m.to_string()))
        .collect()
    };
    let warning = kubetrain_e2e::ControlPlane::eventually("an AdmissionFailed Event", T, || {
        let failed = events().into_iter().find(|(r, _)| r == "AdmissionFailed");
        async move { failed.map(|(_, m)| m) }
    })
    .await;
    assert!(
        warning.contains(&format!("pod {pod} already exists and is not this job's"))
            && warning.contains("delete it")
            && !warning.contains("Status {"),
        "{warning}"
    );
    s.wait_phase("ok1", "Queued", T).await;
    assert_eq!(
        get_pod("{.metadata.uid}"),
        left,
        "the operator leaves the pod alone"
    );
    // Deleted, the pod no longer stands in the way: the job runs on its own pod.
    s.cp.kubectl_ok(&["delete", "pod", pod, "-n", &s.ns])
        .expect("delete the pod");
    s.wait_phase("ok1", "Succeeded", T).await;
    assert!(
        events().iter().any(|(r, _)| r == "Admitted"),
        "{:?}",
        events()
    );
    let owner = get_pod("{.metadata.ownerReferences[0].uid}");
    assert_eq!(owner, uid, "the pod that ran is the new job's");
    s.finish().await;
}

/// The job's Service and disruption budget are the job's as its pods are. One another
/// controller owns (a job of the same name deleted a moment ago, whose garbage collection
/// would remove it under the new job) holds the admission back with a Warning naming it;
/// one left without an owner by a running job deleted with `--cascade=orphan` is adopted,
/// and goes with the new job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_job_adopts_an_orphaned_service_and_waits_for_a_foreign_one() {
    let s = Scenario::new("svcown", 1, 8, 1).await;
    let q = s.tenant("svcown", 8, "FIFO", "");
    let ns = s.ns.clone();
    // A Service of the job's name that a ConfigMap controls.
    s.cp.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: holder\n  namespace: {ns}\n"
    ));
    let holder =
        s.cp.jsonpath(&["cm", "holder", "-n", &ns], "{.metadata.uid}");
    s.cp.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: dist\n  namespace: {ns}\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: holder, uid: {holder}, controller: true}}\nspec:\n  clusterIP: None\n  selector: {{app: other}}\n"
    ));
    let manifest = s.job("dist", &q, 2, 1, &[("run-seconds", "600")], "");
    s.cp.apply(&manifest);
    let uid = s.job_status("dist", "{.metadata.uid}");
    let warning = kubetrain_e2e::ControlPlane::eventually("an AdmissionFailed Event", T, || {
        let notes = s.cp.jsonpath(
            &[
                "events",
                "-n",
                &ns,
                "--field-selector",
                &format!("involvedObject.uid={uid},reason=AdmissionFailed"),
            ],
            "{.items[*].message}",
        );
        async move { (!notes.is_empty()).then_some(notes) }
    })
    .await;
    assert!(
        warning.contains("Service dist already exists and is not this job's"),
        "{warning}"
    );
    // The pods that went out beside the Service are undone each time (the job's phase may
    // pass through Running while they exist).
    assert_eq!(
        s.cp.jsonpath(
            &["svc", "dist", "-n", &ns],
            "{.metadata.ownerReferences[0].uid}"
        ),
        holder,
        "the operator leaves the Service alone"
    );
    // Gone, it no longer stands in the way.
    s.cp.kubectl_ok(&["delete", "svc", "dist", "-n", &ns])
        .expect("delete the Service");
    s.wait_phase("dist", "Running", T).await;

    // Deleted while running, orphaning its objects, and applied again: the new job adopts
    // the Service and the budget the first one left.
    s.cp.kubectl_ok(&["delete", "tj", "dist", "-n", &ns, "--cascade=orphan"])
        .expect("delete, orphaning");
    let owner = |kind: &str| {
        s.cp.jsonpath(
            &[kind, "dist", "-n", &ns],
            "{.metadata.ownerReferences[*].uid}",
        )
    };
    kubetrain_e2e::ControlPlane::eventually(
        "the Service and budget to lose their owner",
        T,
        || {
            let orphaned = owner("svc").is_empty() && owner("pdb").is_empty();
            async move { orphaned.then_some(()) }
        },
    )
    .await;
    for pod in s.pods_of("dist") {
        s.cp.kubectl_ok(&[
            "delete",
            "pod",
            &pod,
            "-n",
            &ns,
            "--grace-period=0",
            "--force",
        ])
        .expect("delete an orphaned pod");
    }
    s.cp.apply(&manifest);
    let uid = s.job_status("dist", "{.metadata.uid}");
    s.wait_phase("dist", "Running", T).await;
    assert_eq!((owner("svc"), owner("pdb")), (uid.clone(), uid));
    s.finish().await;
}

/// Watches the namespace's pods and returns every moment two present pods (not yet
/// Succeeded or Failed: their containers may still run) held the same GPU of one node.
fn watch_gpu_overlaps(
    client: kube::Client,
    ns: &str,
) -> (
    tokio::task::JoinHandle<Vec<String>>,
    tokio::sync::oneshot::Sender<()>,
) {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::ResourceExt;
    use kube::runtime::watcher;
    let api: kube::Api<Pod> = kube::Api::namespaced(client, ns);
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut present: std::collections::BTreeMap<String, Pod> = Default::default();
        let mut overlaps = Vec::new();
        let mut events = watcher(api, watcher::Config::default()).boxed();
        loop {
            let event = tokio::select! {
                _ = &mut stopped => break,
                e = events.next() => e,
            };
            match event {
                Some(Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p))) => {
                    present.insert(p.name_any(), p);
                }
                Some(Ok(watcher::Event::Delete(p))) => {
                    present.remove(&p.name_any());
                }
                Some(_) => continue,
                None => break,
            }
            let mut holders: std::collections::BTreeMap<(String, String), Vec<String>> =
                Default::default();
            for (name, p) in &present {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if matches!(phase, Some("Succeeded" | "Failed")) {
                    continue;
                }
                let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
                let gpus = p.annotations().get("kubetrain.io/gpus").cloned();
                if let (Some(node), Some(gpus)) = (node, gpus) {
                    for g in gpus.split(',').filter(|g| !g.is_empty()) {
                        holders
                            .entry((node.clone(), g.to_string()))
                            .or_default()
                            .push(name.clone());
                    }
                }
            }
            for ((node, gpu), pods) in holders {
                if pods.len() > 1 {
                    overlaps.push(format!("{node} GPU {gpu}: {pods:?}"));
                }
            }
        }
        overlaps
    });
    (task, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_job_removes_its_pods_and_frees_its_gpus() {
    let s = Scenario::new("delete", 1, 8, 1).await;
    let q = s.tenant("delete", 8, "FIFO", "");
    s.cp.apply(&s.job("big", &q, 1, 8, &[], ""));
    s.wait_phase("big", "Running", T).await;
    // Eight one-GPU jobs wait for big's GPUs (the acceptance run's case).
    for i in 0..8 {
        s.cp.apply(&s.job(&format!("next-{i}"), &q, 1, 1, &[("run-seconds", "1")], ""));
    }
    s.cp.apply(&s.job("next", &q, 1, 8, &[("run-seconds", "1")], ""));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        s.job_status("next", "{.status.phase}"),
        "Queued",
        "no room while big runs"
    );
    let client = s.cp.client().await.expect("client");
    let (watch, stop) = watch_gpu_overlaps(client, &s.ns);
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.cp.kubectl_ok(&["delete", "tj", "big", "-n", &s.ns, "--wait=false"])
        .expect("delete");
    // big's pod terminates with its containers still holding the GPUs; nothing may start
    // on them until it is gone.
    for i in 0..8 {
        s.wait_phase(&format!("next-{i}"), "Succeeded", T).await;
    }
    s.wait_phase("next", "Succeeded", T).await;
    // `next` waited in its queue, so it has a `Queued` Event besides `Admitted`.
    let events = s.event_reasons("next");
    for r in ["Queued", "Admitted", "Succeeded"] {
        assert!(
            events.iter().any(|e| e == r),
            "missing event {r} of next: {events:?}"
        );
    }
    let deadline = Instant::now() + T;
    while !s.pods_of("big").is_empty() {
        assert!(Instant::now() < deadline, "pods of the deleted job remain");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = stop.send(());
    let overlaps = watch.await.expect("watch task");
    assert!(
        overlaps.is_empty(),
        "GPUs held by two present pods at once: {overlaps:#?}"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhealthy_gpu_restarts_the_job_without_counting_a_retry() {
    let s = Scenario::new("gpufault", 1, 8, 1).await;
    let q = s.tenant("gpufault", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "victim",
        &q,
        1,
        4,
        &[("run-seconds", "20")],
        "  maxRetries: 0\n",
    ));
    s.wait_phase("victim", "Running", T).await;
    let node = s.job_status("victim", "{.status.placement[0].node}");
    let gpu: u32 = s
        .job_status("victim", "{.status.placement[0].gpus[0]}")
        .parse()
        .expect("a GPU index");
    let before = s.job_status("victim", "{.metadata.uid}");
    s.sim
        .set_gpu_unhealthy(&node, gpu, "XID 79")
        .await
        .expect("fault injected");
    // Not the user's fault: asked to checkpoint while it still can, then restarted on
    // healthy GPUs as a preemption, retries untouched, even with maxRetries 0.
    let deadline = Instant::now() + T;
    loop {
        let infra = s.job_status("victim", "{.status.preemptions}");
        let phase = s.job_status("victim", "{.status.phase}");
        let gpus = s.job_status("victim", "{.status.placement[0].gpus[*]}");
        if infra == "1"
            && phase == "Running"
            && !gpus.split_whitespace().any(|g| g == gpu.to_string())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not restarted on healthy GPUs: {}",
            s.job_status("victim", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(s.job_status("victim", "{.status.retries}"), "0");
    assert_eq!(before, s.job_status("victim", "{.metadata.uid}"));
    let events = s.events("victim");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "Preempting" && m.contains(&format!("GPU {gpu} of node {node}"))),
        "{events:?}"
    );
    assert_eq!(
        s.job_status("victim", "{.status.lastPreemption.reason}"),
        "UnhealthyGpu"
    );
    s.finish().await;
}

/// A node that stops being Ready under a running job is an infrastructure failure: the
/// controller-manager taints it, the operator restarts the whole gang on a healthy node
/// without counting a retry (even with maxRetries 0), and nothing is placed on the sick node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_not_ready_restarts_the_job_on_another_node() {
    use kubetrain_e2e::simnode::NodeFault;
    let s = Scenario::new("nodefault", 2, 8, 1).await;
    let q = s.tenant("nodefault", 16, "FIFO", "");
    s.cp.apply(&s.job(
        "victim",
        &q,
        1,
        8,
        &[("run-seconds", "600")],
        "  maxRetries: 0\n",
    ));
    s.wait_phase("victim", "Running", T).await;
    let sick = s.job_status("victim", "{.status.placement[0].node}");
    let before = s.job_status("victim", "{.metadata.uid}");
    s.sim
        .set_node_fault(&sick, NodeFault::NotReady)
        .await
        .expect("fault injected");
    // the taint comes after the controller-manager's grace period, then the restart
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let infra = s.job_status("victim", "{.status.infrastructureRetries}");
        let phase = s.job_status("victim", "{.status.phase}");
        let node = s.job_status("victim", "{.status.placement[0].node}");
        if infra == "1" && phase == "Running" && !node.is_empty() && node != sick {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not restarted on the healthy node: {}",
            s.job_status("victim", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(s.job_status("victim", "{.status.retries}"), "0");
    assert_eq!(before, s.job_status("victim", "{.metadata.uid}"));
    let reasons = s.event_reasons("victim");
    assert!(
        reasons.iter().any(|e| e == "InfrastructureFailure"),
        "events: {reasons:?}"
    );
    // every pod of the job now runs on the healthy node
    let on_sick = s.cp.jsonpath(
        &["pods", "-n", &s.ns, "-l", "kubetrain.io/job=victim"],
        "{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
    );
    assert!(
        !on_sick.lines().any(|n| n == sick),
        "a pod is still bound to {sick}: {on_sick}"
    );
    s.sim.restore_node(&sick).await.expect("restore");
    s.finish().await;
}

/// Most nodes of a zone stop reporting at once (5 of 6 here, in a zone of their own): the
/// node lifecycle controller judges the zone disrupted and holds its NoExecute taints back
/// (it may taint the first one or two before the zone tips). kubetrain follows it: a job on
/// a node tainted is stopped and placed again without counting a retry; a job on a node not
/// tainted runs on, its `Running` condition saying `NodeNotReady`, and reads
/// `AllReplicasRunning` again once its node is back, nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn most_of_a_zone_not_ready_marks_its_jobs_and_stops_only_those_kubernetes_gives_up_on() {
    use kubetrain_e2e::simnode::NodeFault;
    let s = Scenario::in_own_zone("zoneout", 6, 8).await;
    let q = s.tenant("zoneout", 48, "FIFO", "");
    let jobs: Vec<String> = (0..6).map(|i| format!("j{i}")).collect();
    for j in &jobs {
        s.cp.apply(&s.job(j, &q, 1, 8, &[("run-seconds", "900")], "  maxRetries: 0\n"));
    }
    for j in &jobs {
        s.wait_phase(j, "Running", T).await;
    }
    let node_of = |j: &str| s.job_status(j, "{.status.placement[0].node}");
    let uid_of = |j: &str| s.job_status(j, "{.metadata.uid}");
    let placed: Vec<(String, String, String)> = jobs
        .iter()
        .map(|j| (j.clone(), node_of(j), uid_of(j)))
        .collect();
    let silent: Vec<&(String, String, String)> = placed.iter().take(5).collect();
    for (_, node, _) in &silent {
        s.sim
            .set_node_fault(node, NodeFault::Unreachable)
            .await
            .expect("fault injected");
    }
    let ready = |n: &str| {
        s.cp.jsonpath(
            &["node", n],
            "{.status.conditions[?(@.type==\"Ready\")].status}",
        )
    };
    let tainted = |n: &str| {
        s.cp.jsonpath(
            &["node", n],
            "{.spec.taints[?(@.effect==\"NoExecute\")].key}",
        )
        .contains("node.kubernetes.io/")
    };
    // Every silent node goes Unknown once the controller's grace period (50 s) has passed.
    let deadline = Instant::now() + Duration::from_secs(150);
    while silent.iter().any(|(_, n, _)| ready(n) != "Unknown") {
        assert!(
            Instant::now() < deadline,
            "the silent nodes never went Unknown"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // Time for the controller to taint what it will, and for the operator to act on it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut marked;
    loop {
        let mut settled = true;
        marked = 0;
        for (j, n, uid) in &silent {
            let reason = s.job_status(j, "{.status.conditions[?(@.type==\"Running\")].reason}");
            if tainted(n) {
                settled &= s.job_status(j, "{.status.infrastructureRetries}") == "1";
            } else {
                settled &=
                    s.job_status(j, "{.status.phase}") == "Running" && reason == "NodeNotReady";
                marked += usize::from(reason == "NodeNotReady");
            }
            assert_eq!(&uid_of(j), uid, "job {j} was replaced");
            assert_eq!(s.job_status(j, "{.status.retries}"), "0", "job {j}");
        }
        if settled && Instant::now() > deadline - Duration::from_secs(40) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "jobs on silent nodes not as expected: {:?}",
            silent
                .iter()
                .map(|(j, n, _)| (j, tainted(n), s.job_status(j, "{.status}")))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(
        marked >= 1,
        "the node lifecycle controller tainted every silent node: no zone disruption to test"
    );
    let (healthy_job, _, _) = &placed[5];
    assert_eq!(
        s.job_status(
            healthy_job,
            "{.status.conditions[?(@.type==\"Running\")].reason}"
        ),
        "AllReplicasRunning"
    );
    // The zone comes back: the marked jobs run on, nothing lost.
    let untainted: Vec<&(String, String, String)> = silent
        .iter()
        .copied()
        .filter(|(_, n, _)| !tainted(n))
        .collect();
    for (j, _, _) in &untainted {
        let reasons = s.event_reasons(j);
        assert!(
            reasons.iter().any(|r| r == "NodeNotReady"),
            "{j}: {reasons:?}"
        );
        assert!(
            !reasons.iter().any(|r| r == "InfrastructureFailure"),
            "{j}: {reasons:?}"
        );
    }
    for (_, node, _) in &silent {
        s.sim.restore_node(node).await.expect("restore");
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    for (j, _, uid) in untainted {
        loop {
            let reason = s.job_status(j, "{.status.conditions[?(@.type==\"Running\")].reason}");
            if reason == "AllReplicasRunning" {
                break;
            }
            assert!(Instant::now() < deadline, "{j} still {reason}");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(s.job_status(j, "{.status.phase}"), "Running");
        assert_eq!(&uid_of(j), uid);
        assert_eq!(s.job_status(j, "{.status.infrastructureRetries}"), "0");
    }
    s.finish().await;
}

/// A gang stopped while its job goes on (a retry) or ends leaves no `NoPods` Event: the
/// disruption controller posts one whenever a budget's pods are all gone, so the operator
/// deletes the gang's budget before its pods (and admission makes it again for the next
/// attempt). Every retried, preempted or suspended gang used to post one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_gang_leaves_no_no_pods_event() {
    let s = Scenario::new("nopods", 1, 8, 1).await;
    let q = s.tenant("nopods", 8, "FIFO", "");
    let extra = "  maxRetries: 1\n  backoff:\n    initialSeconds: 1\n    maxSeconds: 1\n";
    s.cp.apply(&s.job(
        "crash",
        &q,
        2,
        1,
        &[("run-seconds", "2"), ("exit-code", "3")],
        extra,
    ));
    // The budget is there while the gang runs (else the check below would prove nothing).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !s
        .cp
        .kubectl(&["get", "pdb", "crash", "-n", &s.ns])
        .map(|o| o.success)
        .unwrap_or(false)
    {
        assert!(Instant::now() < deadline, "the gang never had its budget");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.wait_phase("crash", "Failed", Duration::from_secs(90))
        .await;
    assert_eq!(s.job_status("crash", "{.status.retries}"), "1");
    // The disruption controller syncs a budget on each change of its pods, at once; give it
    // a few seconds after the last one.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let no_pods = s.cp.jsonpath(
        &[
            "events",
            "-n",
            &s.ns,
            "--field-selector",
            "involvedObject.kind=PodDisruptionBudget,reason=NoPods",
        ],
        "{range .items[*]}{.involvedObject.name}: {.message} (x{.count}){\"\\n\"}{end}",
    );
    assert!(no_pods.is_empty(), "NoPods Events:\n{no_pods}");
    s.finish().await;
}

/// kube-scheduler's own preemption (a pod of another workload, of a higher PriorityClass,
/// that fits nowhere else) evicts a training pod outside the checkpoint protocol. kubetrain
/// restarts the whole gang without counting a retry, as for any pod the platform stopped
/// (its `DisruptionTarget`, `PreemptionByScheduler`, or its removal); the job waits while the
/// other pod holds the GPUs (kubetrain counts them as foreign) and runs again once they are
/// free. The admin guide says how to keep training pods out of kube-scheduler's preemption.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_preempted_by_kube_scheduler_restarts_the_gang_without_counting_a_retry() {
    let s = Scenario::new("kspreempt", 1, 8, 1).await;
    let q = s.tenant("kspreempt", 8, "FIFO", "");
    s.cp.apply(&s.job(
        "victim",
        &q,
        1,
        8,
        &[("run-seconds", "900")],
        "  maxRetries: 0\n",
    ));
    s.wait_phase("victim", "Running", T).await;
    let node = s.job_status("victim", "{.status.placement[0].node}");
    let uid = s.job_status("victim", "{.metadata.uid}");
    let class = format!("urgent-{}", s.id);
    s.cp.apply(&format!(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {class}\nvalue: 100000\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: urgent\n  namespace: {ns}\nspec:\n  priorityClassName: {class}\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      limits:\n        nvidia.com/gpu: 8\n",
        ns = s.ns
    ));
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if s.job_status("victim", "{.status.infrastructureRetries}") == "1" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the preempted gang was not restarted: {}",
            s.job_status("victim", "{.status}")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(s.job_status("victim", "{.status.retries}"), "0");
    assert_eq!(s.job_status("victim", "{.metadata.uid}"), uid);
    // The Event names kube-scheduler's reason when the operator saw the pod's
    // `DisruptionTarget` before the pod went; a pod deleted at once reads as removed.
    let events = s.events("victim");
    assert!(
        events.iter().any(|(r, m)| r == "InfrastructureFailure"
            && (m.contains("PreemptionByScheduler") || m.contains("the pod was removed"))),
        "{events:?}"
    );
    // The other workload's pod runs on the GPUs; the job waits for them, then runs again.
    let bound = |pod: &str| {
        s.cp.jsonpath(&["pod", pod, "-n", &s.ns], "{.spec.nodeName}")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while bound("urgent") != node {
        assert!(Instant::now() < deadline, "the urgent pod was never bound");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_ne!(s.job_status("victim", "{.status.phase}"), "Running");
    s.cp.kubectl_ok(&["delete", "pod", "urgent", "-n", &s.ns, "--wait=false"])
        .expect("delete the urgent pod");
    s.wait_phase("victim", "Running", Duration::from_secs(120))
        .await;
    assert_eq!(s.job_status("victim", "{.status.retries}"), "0");
    s.cp.kubectl_ok(&["delete", "priorityclass", &class, "--wait=false"])
        .expect("delete the class");
    s.finish().await;
}
