//! The API as users meet it: `kubectl apply` of the samples and of invalid manifests,
//! printer columns and `kubectl explain`, against a real kube-apiserver.

use kubetrain_e2e::{ControlPlane, repo_root};

fn cp() -> &'static ControlPlane {
    ControlPlane::shared()
}

/// `kubectl apply -k config/samples`, one at a time: the tests run in parallel, and two
/// client-side applies creating the same object race (one gets AlreadyExists).
fn apply_samples(cp: &ControlPlane) -> String {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    cp.kubectl_ok(&["apply", "-k", "config/samples"])
        .expect("samples apply")
}

#[test]
fn every_sample_applies_and_reapplying_changes_nothing() {
    let cp = cp();
    let out = apply_samples(cp);
    assert!(out.contains("trainingjob.kubetrain.io/resnet50"), "{out}");
    // GitOps: the same manifests again leave every object unchanged (no new resourceVersion).
    // Only the samples' objects: other tests of this binary write their own meanwhile.
    let versions = || {
        cp.kubectl_ok(&[
            "get",
            "-k",
            "config/samples",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}",
        ])
        .expect("get versions")
    };
    let before = versions();
    assert!(before.contains("resnet50="), "{before}");
    let again = apply_samples(cp);
    for line in again.lines() {
        assert!(
            line.ends_with("unchanged"),
            "second apply changed something: {line}"
        );
    }
    assert_eq!(
        before,
        versions(),
        "re-applying the samples wrote to the objects"
    );
    let diff = cp
        .kubectl(&["diff", "-k", "config/samples"])
        .expect("kubectl diff runs");
    assert!(
        diff.success && diff.stdout.is_empty(),
        "kubectl diff after apply: {}{}",
        diff.stdout,
        diff.stderr
    );
}

/// The `kind/name` a manifest would create.
fn object_of(text: &str) -> String {
    let doc: serde_json::Value = serde_norway::from_str(text).expect("a manifest is YAML");
    let kind = doc["kind"].as_str().unwrap_or_default().to_lowercase();
    let name = doc["metadata"]["name"].as_str().unwrap_or_default();
    format!("{kind}/{name}")
}

#[test]
fn invalid_manifests_are_rejected_naming_the_field() {
    let cp = cp();
    let dir = repo_root().join("e2e/invalid");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("e2e/invalid exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 25,
        "expected the invalid samples, found {}",
        files.len()
    );
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} lacks a '# expect: ' first line", file.display()));
        let path = file.to_string_lossy();
        // Client-side apply (as users and GitOps tools run it) and server-side apply: since
        // kubectl 1.25 both are judged by the server (schema, CEL rules, strict fields).
        for args in [
            vec!["apply", "-f", &path],
            vec!["apply", "--server-side", "-f", &path],
        ] {
            let out = cp.kubectl(&args).expect("kubectl runs");
            assert!(
                !out.success,
                "{} was accepted by `kubectl {}`: {}",
                file.display(),
                args.join(" "),
                out.stdout
            );
            assert!(
                expect.split('|').any(|e| out.stderr.contains(e)),
                "{} (`kubectl {}`): the error does not name the field ({expect}):\n{}",
                file.display(),
                args.join(" "),
                out.stderr
            );
        }
        // Rejected whole: nothing of it reached the cluster.
        let object = object_of(&text);
        let get = cp
            .kubectl(&["get", "-n", "default", &object])
            .expect("kubectl runs");
        assert!(
            !get.success && get.stderr.contains("NotFound"),
            "{}: {object} exists after the rejected apply: {}{}",
            file.display(),
            get.stdout,
            get.stderr
        );
    }
}

/// Writes a job's status phase, as the operator would (no operator runs in these tests).
fn set_phase(cp: &ControlPlane, job: &str, phase: &str) {
    cp.kubectl_ok(&[
        "patch",
        "tj",
        job,
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        &format!("{{\"status\":{{\"phase\":\"{phase}\"}}}}"),
    ])
    .expect("status patch");
}

/// A running job's gang shape (task names, replicas) is refused a change at `kubectl apply`,
/// naming the field and the way out; its pod template may change (the next attempt runs it),
/// its status writes go on, and once it no longer runs the shape may change too. No operator
/// runs here: the test writes the status phase itself.
#[test]
fn a_running_jobs_tasks_cannot_change() {
    let cp = cp();
    let manifest = |replicas: u32, image: &str| {
        format!(
            "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: reshape\n  namespace: default\nspec:\n  queue: any\n  tasks:\n  - name: worker\n    replicas: {replicas}\n    template:\n      spec:\n        containers:\n        - name: trainer\n          image: {image}\n          resources:\n            limits:\n              nvidia.com/gpu: 1\n"
        )
    };
    let phase = |phase: &str| set_phase(cp, "reshape", phase);
    cp.apply(&manifest(2, "trainer:1"));
    // Admitted and starting holds GPUs as running does.
    for held in ["Starting", "Running"] {
        phase(held);
        let out = cp
            .kubectl_stdin(&["apply", "-f", "-"], &manifest(4, "trainer:1"))
            .expect("kubectl runs");
        assert!(!out.success, "a {held} gang was resized: {}", out.stdout);
        assert!(
            out.stderr.contains("spec.tasks") && out.stderr.contains("spec.suspend"),
            "{}",
            out.stderr
        );
    }
    cp.apply(&manifest(2, "trainer:2"));
    phase("Preempting");
    phase("Queued");
    cp.apply(&manifest(4, "trainer:2"));
    let replicas = cp.jsonpath(
        &["tj", "reshape", "-n", "default"],
        "{.spec.tasks[0].replicas}",
    );
    assert_eq!(replicas, "4");
    cp.kubectl_ok(&["delete", "tj", "reshape", "-n", "default"])
        .expect("delete");
}

/// A running job's queue and user are refused a change (its GPUs are charged to them), and
/// may change again once it no longer runs. No operator runs here: the test writes the
/// status phase itself.
#[test]
fn a_running_jobs_queue_and_user_cannot_change() {
    let cp = cp();
    let manifest = |queue: &str, user: &str| {
        format!(
            "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: charged\n  namespace: default\nspec:\n  queue: {queue}\n  user: {user}\n  tasks:\n  - name: worker\n    template:\n      spec:\n        containers:\n        - name: trainer\n          image: trainer:1\n"
        )
    };
    let phase = |phase: &str| set_phase(cp, "charged", phase);
    cp.apply(&manifest("vision", "alice"));
    phase("Running");
    for (changed, field) in [
        (manifest("nlp", "alice"), "spec.queue"),
        (manifest("vision", "bob"), "spec.user"),
    ] {
        let out = cp
            .kubectl_stdin(&["apply", "-f", "-"], &changed)
            .expect("kubectl runs");
        assert!(
            !out.success,
            "a running job's {field} changed: {}",
            out.stdout
        );
        assert!(
            out.stderr.contains(&format!("{field}: Forbidden"))
                && out.stderr.contains("spec.suspend"),
            "{}",
            out.stderr
        );
    }
    phase("Suspended");
    cp.apply(&manifest("nlp", "bob"));
    let spec = cp.jsonpath(
        &["tj", "charged", "-n", "default"],
        "{.spec.queue} {.spec.user}",
    );
    assert_eq!(spec, "nlp bob");
    cp.kubectl_ok(&["delete", "tj", "charged", "-n", "default"])
        .expect("delete");
}

/// A queue with jobs running cannot move to another VirtualCluster (its jobs are charged to
/// the first); once none runs, it can.
#[test]
fn a_busy_queues_virtual_cluster_cannot_change() {
    let cp = cp();
    let manifest = |vc: &str| {
        format!(
            "apiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: movable\nspec:\n  virtualCluster: {vc}\n"
        )
    };
    let running = |n: u32| {
        cp.kubectl_ok(&[
            "patch",
            "queue",
            "movable",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!("{{\"status\":{{\"running\":{n}}}}}"),
        ])
        .expect("status patch")
    };
    cp.apply(&manifest("team-a"));
    running(1);
    let out = cp
        .kubectl_stdin(&["apply", "-f", "-"], &manifest("team-b"))
        .expect("kubectl runs");
    assert!(!out.success, "a busy queue moved: {}", out.stdout);
    assert!(
        out.stderr.contains("spec.virtualCluster") && out.stderr.contains("running"),
        "{}",
        out.stderr
    );
    running(0);
    cp.apply(&manifest("team-b"));
    let vc = cp.jsonpath(&["queue", "movable"], "{.spec.virtualCluster}");
    assert_eq!(vc, "team-b");
    cp.kubectl_ok(&["delete", "queue", "movable"])
        .expect("delete");
}

/// The control plane the tests run against, printed once so a test log names it.
#[test]
fn server_is_the_pinned_release() {
    let cp = cp();
    let version = cp.kubectl_ok(&["version"]).expect("kubectl version");
    eprintln!("{version}");
    let go_mod = std::fs::read_to_string(repo_root().join("e2e/k8s/go.mod")).expect("go.mod");
    let pinned = go_mod
        .lines()
        .filter_map(|l| l.trim().strip_prefix("k8s.io/kubernetes "))
        .map(|rest| rest.split_whitespace().next().unwrap_or_default())
        .next()
        .expect("go.mod requires k8s.io/kubernetes");
    assert!(
        version.contains(&format!("Server Version: {pinned}")),
        "the server is not {pinned}:\n{version}"
    );
    assert!(
        version.contains(&format!("Client Version: {pinned}")),
        "kubectl is not {pinned}:\n{version}"
    );
}

#[test]
fn get_shows_printer_columns() {
    let cp = cp();
    apply_samples(cp);
    let cases = [
        (
            "trainingjobs",
            vec!["NAME", "QUEUE", "PHASE", "REASON", "GPUS", "RETRIES", "AGE"],
        ),
        (
            "queues",
            vec![
                "NAME",
                "VIRTUALCLUSTER",
                "READY",
                "POLICY",
                "STOP",
                "PENDING",
                "STARTING",
                "RUNNING",
                "GPUS",
                "BONUS",
                "OLDESTPENDING",
                "AGE",
            ],
        ),
        (
            "virtualclusters",
            vec![
                "NAME",
                "READY",
                "GUARANTEED",
                "INUSE",
                "BORROWED",
                "LENT",
                "AGE",
            ],
        ),
    ];
    for (kind, columns) in cases {
        let out = cp.kubectl_ok(&["get", kind, "-A"]).expect("kubectl get");
        let header: Vec<&str> = columns_of(&out)
            .into_iter()
            .filter(|h| *h != "NAMESPACE")
            .collect();
        assert_eq!(header, columns, "{kind} columns:\n{out}");
    }
    // A queue's Bonus and a VirtualCluster's Borrowed count different things (the GPUs of
    // jobs running as bonus; what the tenant holds beyond its guarantee), and say so.
    for (crd, column, says) in [
        ("queues.kubetrain.io", "Bonus", "jobs that run as bonus"),
        (
            "virtualclusters.kubetrain.io",
            "Borrowed",
            "beyond its guarantee",
        ),
    ] {
        let description = cp.jsonpath(
            &["crd", crd],
            &format!(
                "{{.spec.versions[0].additionalPrinterColumns[?(@.name==\"{column}\")].description}}"
            ),
        );
        assert!(
            description.contains(says),
            "{crd} column {column}: {description:?}"
        );
    }
    // -o wide adds the limit and the two conditions an admin watches.
    let wide = cp
        .kubectl_ok(&["get", "vc", "-o", "wide"])
        .expect("kubectl get vc -o wide");
    let header = columns_of(&wide);
    for column in ["LIMIT", "ATRISK", "ABOVELIMIT", "OVERCOMMITTED"] {
        assert!(header.contains(&column), "{column} missing:\n{wide}");
    }
    let wide = cp
        .kubectl_ok(&["get", "queues", "-o", "wide"])
        .expect("kubectl get queues -o wide");
    let header = columns_of(&wide);
    for column in ["STRATEGY", "MAXSHARE", "ABOVELIMIT"] {
        assert!(header.contains(&column), "{column} missing:\n{wide}");
    }
    let queues = cp.kubectl_ok(&["get", "q"]).expect("short name q");
    for q in ["vision-research", "vision-dev", "nlp-training"] {
        assert!(
            queues.contains(q),
            "{q} missing from `kubectl get q`:\n{queues}"
        );
    }
    assert!(queues.contains("ShortestPredictedFirst"), "{queues}");
    let all = cp
        .kubectl_ok(&["get", "kubetrain", "-A"])
        .expect("category kubetrain");
    for kind in [
        "trainingjob.kubetrain.io/resnet50",
        "queue.kubetrain.io/nlp-training",
        "virtualcluster.kubetrain.io/vision",
    ] {
        assert!(
            all.contains(kind),
            "{kind} missing from `kubectl get kubetrain`:\n{all}"
        );
    }
    let tj = cp
        .kubectl_ok(&["get", "tj", "-n", "team-vision"])
        .expect("short name tj");
    assert!(tj.contains("resnet50"), "{tj}");
    // -o wide adds where the job runs and how it stands.
    let wide = cp
        .kubectl_ok(&["get", "tj", "-n", "team-vision", "-o", "wide"])
        .expect("get -o wide");
    let header = columns_of(&wide);
    for column in ["PRIORITY", "BONUS", "PREEMPTIONS", "NODES"] {
        assert!(header.contains(&column), "-o wide lacks {column}:\n{wide}");
    }
}

/// The column names of a `kubectl get` table.
fn columns_of(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

/// `kubectl explain PATH`, retried: the server publishes each CRD's OpenAPI a moment after
/// the CRD is Established, and each CRD on its own schedule.
fn explain(cp: &ControlPlane, path: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        let out = cp.kubectl(&["explain", path]).expect("kubectl runs");
        if out.success {
            // kubectl wraps descriptions at its own width; compare words, not lines.
            return out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        last = out.stderr;
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("`kubectl explain {path}` kept failing: {last}");
}

#[test]
fn explain_shows_field_docs() {
    let cp = cp();
    let tasks = explain(cp, "trainingjob.spec.tasks");
    for needle in [
        "number of identical replicas",
        "replicas",
        "gpuShare",
        "template",
        "fraction of one GPU",
    ] {
        assert!(
            tasks.contains(needle),
            "`kubectl explain trainingjob.spec.tasks` lacks {needle:?}:\n{tasks}"
        );
    }
    // Every field shows its type, optional ones too (kubectl 1.20 printed `<>` for them).
    for (field, ty) in [
        ("replicas", "<integer>"),
        ("gpuShare", "<integer>"),
        ("requiredForCompletion", "<boolean>"),
        ("template", "<Object>"),
    ] {
        assert!(
            tasks.contains(&format!("{field} {ty}")),
            "`kubectl explain trainingjob.spec.tasks` does not show {field} as {ty}:\n{tasks}"
        );
    }
    assert!(!tasks.contains("<>"), "a field without a type:\n{tasks}");
    // The typed pod template is explained like a pod's.
    let resources = explain(
        cp,
        "trainingjob.spec.tasks.template.spec.containers.resources",
    );
    assert!(resources.contains("limits <map[string]"), "{resources}");
    let vc = explain(cp, "virtualcluster.spec.guarantee");
    assert!(vc.contains("always get back"), "{vc}");
}

#[test]
fn server_applies_defaults() {
    let cp = cp();
    apply_samples(cp);
    let retries = cp
        .kubectl_ok(&["get", "tj", "bert-base", "-n", "team-nlp", "-o", "jsonpath={.spec.maxRetries} {.spec.checkpoint.gracePeriodSeconds} {.spec.backoff.initialSeconds}"])
        .expect("get");
    assert_eq!(retries, "3 300 10");
    let policy = cp
        .kubectl_ok(&["get", "vc", "nlp", "-o", "jsonpath={.spec.weight}"])
        .expect("get");
    assert_eq!(policy, "1");
}
