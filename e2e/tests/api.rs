//! The API as users meet it: `kubectl apply` of the samples and of invalid manifests,
//! printer columns and `kubectl explain`, against a real kube-apiserver.

use kubetrain_e2e::{ControlPlane, repo_root};

fn cp() -> &'static ControlPlane {
    ControlPlane::shared()
}

#[test]
fn every_sample_applies_and_reapplying_changes_nothing() {
    let cp = cp();
    let out = cp
        .kubectl_ok(&["apply", "-k", "config/samples"])
        .expect("samples apply");
    assert!(out.contains("trainingjob.kubetrain.io/resnet50"), "{out}");
    // GitOps: the same manifests again leave every object unchanged (no new resourceVersion).
    let versions = || {
        cp.kubectl_ok(&[
            "get",
            "tj,q,vc",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}",
        ])
        .expect("get versions")
    };
    let before = versions();
    let again = cp
        .kubectl_ok(&["apply", "-k", "config/samples"])
        .expect("samples apply twice");
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
        files.len() >= 10,
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
        let out = cp
            .kubectl(&["apply", "-f", &file.to_string_lossy()])
            .expect("kubectl runs");
        assert!(
            !out.success,
            "{} was accepted: {}",
            file.display(),
            out.stdout
        );
        assert!(
            expect.split('|').any(|e| out.stderr.contains(e)),
            "{}: the error does not name the field ({expect}):\n{}",
            file.display(),
            out.stderr
        );
        // The server's own validation, not only kubectl's client-side check, rejects it.
        let server = cp
            .kubectl(&["apply", "--validate=false", "-f", &file.to_string_lossy()])
            .expect("kubectl runs");
        assert!(
            !server.success,
            "{} accepted by the server: {}",
            file.display(),
            server.stdout
        );
    }
}

#[test]
fn get_shows_printer_columns() {
    let cp = cp();
    cp.kubectl_ok(&["apply", "-k", "config/samples"])
        .expect("samples apply");
    let cases = [
        (
            "trainingjobs",
            vec!["NAME", "QUEUE", "PHASE", "GPUS", "RETRIES", "AGE"],
        ),
        (
            "queues",
            vec![
                "NAME",
                "VIRTUALCLUSTER",
                "POLICY",
                "PENDING",
                "RUNNING",
                "GPUS",
                "BONUS",
                "AGE",
            ],
        ),
        (
            "virtualclusters",
            vec!["NAME", "GUARANTEED", "INUSE", "BONUS", "LENT", "AGE"],
        ),
    ];
    for (kind, columns) in cases {
        let out = cp.kubectl_ok(&["get", kind, "-A"]).expect("kubectl get");
        let header: Vec<&str> = out
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let header: Vec<&str> = header.into_iter().filter(|h| *h != "NAMESPACE").collect();
        assert_eq!(header, columns, "{kind} columns:\n{out}");
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
}

/// `kubectl explain PATH`, retried: the server publishes each CRD's OpenAPI a moment after
/// the CRD is Established, and each CRD on its own schedule.
fn explain(cp: &ControlPlane, path: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        let out = cp.kubectl(&["explain", path]).expect("kubectl runs");
        if out.success {
            return out.stdout;
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
    let vc = explain(cp, "virtualcluster.spec.guarantee");
    assert!(vc.contains("always get back"), "{vc}");
}

#[test]
fn server_applies_defaults() {
    let cp = cp();
    cp.kubectl_ok(&["apply", "-k", "config/samples"])
        .expect("samples apply");
    let retries = cp
        .kubectl_ok(&["get", "tj", "bert-base", "-n", "team-nlp", "-o", "jsonpath={.spec.maxRetries} {.spec.checkpoint.gracePeriodSeconds} {.spec.backoff.initialSeconds}"])
        .expect("get");
    assert_eq!(retries, "3 300 10");
    let policy = cp
        .kubectl_ok(&["get", "vc", "nlp", "-o", "jsonpath={.spec.weight}"])
        .expect("get");
    assert_eq!(policy, "1");
}
