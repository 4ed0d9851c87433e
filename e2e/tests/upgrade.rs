//! `helm upgrade` from the previous release's chart (0.2.0, a copy under
//! `e2e/fixtures/chart-0.2.0`) to this one, with a job running, on the real control plane with
//! the cache's helm and kubectl:
//!
//! - the previous chart installs its CRDs from `crds/`, which Helm never upgrades; this chart
//!   has them as templates (`crds.install`), so the upgrade moves them: a field added to the
//!   TrainingJob CRD since 0.2.0 is refused before and kept after;
//! - the first upgrade adopts the CRDs the old chart left unowned (`--take-ownership`, as
//!   the admin guide says), and a plain upgrade without it fails naming them;
//! - the job running before the upgrade is the same object, with the same pods, after;
//! - on a cluster without the CRDs, a first install with the default tenant creates both,
//!   and the next upgrade adopts the tenant.
//!
//! Its own test binary: it replaces the CRDs the control plane starts with by 0.2.0's.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kubetrain_e2e::operator::{Operator, test_config};
use kubetrain_e2e::scenario::Scenario;
use kubetrain_e2e::{ControlPlane, KubectlOutput, repo_root};

const PREVIOUS: &str = "e2e/fixtures/chart-0.2.0";
const CHART: &str = "charts/kubetrain";
const NS: &str = "kubetrain-system";
const CRDS: [&str; 3] = [
    "trainingjobs.kubetrain.io",
    "queues.kubetrain.io",
    "virtualclusters.kubetrain.io",
];
const T: Duration = Duration::from_secs(60);

/// The cache's helm against `cp`, its config, cache and data private to this process.
fn helm(cp: &ControlPlane, args: &[&str]) -> KubectlOutput {
    let cache = kubetrain_e2e::cache_dir().expect("KUBETRAIN_CACHE or HOME");
    let bin = cache.join("bin/helm");
    assert!(
        bin.exists(),
        "{} missing: run `bash e2e/scripts/install-helm.sh` (make test does)",
        bin.display()
    );
    let home: PathBuf =
        std::env::temp_dir().join(format!("kubetrain-helm-upgrade-{}", std::process::id()));
    let out = Command::new(&bin)
        .args(args)
        .current_dir(repo_root())
        .env("KUBECONFIG", cp.kubeconfig())
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .stdin(Stdio::null())
        .output()
        .expect("helm runs");
    KubectlOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn helm_ok(cp: &ControlPlane, args: &[&str]) -> String {
    let out = helm(cp, args);
    assert!(
        out.success,
        "helm {} failed:\n{}{}",
        args.join(" "),
        out.stdout,
        out.stderr
    );
    out.stdout
}

/// Whether the API server takes `yaml` with strict field validation (a dry run): an unknown
/// field is an error, not a warning and a silent prune.
fn accepted(cp: &ControlPlane, yaml: &str) -> KubectlOutput {
    cp.kubectl_stdin(
        &["apply", "--dry-run=server", "--validate=strict", "-f", "-"],
        yaml,
    )
    .expect("kubectl runs")
}

/// How many of a job's pods run.
fn running_pods(s: &Scenario, job: &str) -> usize {
    s.cp.jsonpath(
        &[
            "pods",
            "-n",
            &s.ns,
            "-l",
            &format!("kubetrain.io/job={job}"),
            "--field-selector=status.phase=Running",
        ],
        "{.items[*].metadata.name}",
    )
    .split_whitespace()
    .count()
}

/// The uid of a job and the `name=uid` of its pods.
fn identity(s: &Scenario, job: &str) -> (String, String) {
    let uid = s.job_status(job, "{.metadata.uid}");
    let pods = s.cp.jsonpath(
        &[
            "pods",
            "-n",
            &s.ns,
            "-l",
            &format!("kubetrain.io/job={job}"),
        ],
        "{range .items[*]}{.metadata.name}={.metadata.uid} {end}",
    );
    (uid, pods)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_upgrade_from_the_previous_release_moves_the_crds_and_keeps_the_jobs() {
    let cp = ControlPlane::shared();
    // A cluster as 0.2.0's `helm install` leaves it: the control plane starts with this
    // version's CRDs, so take them away and let the old chart's crds/ install its own.
    let mut del = vec!["delete", "crd", "--wait"];
    del.extend_from_slice(&CRDS);
    cp.kubectl_ok(&del).expect("delete the current CRDs");
    helm_ok(
        cp,
        &[
            "install",
            "kubetrain",
            PREVIOUS,
            "--namespace",
            NS,
            "--create-namespace",
        ],
    );
    let version = cp.jsonpath(
        &["deploy/kubetrain-operator", "-n", NS],
        "{.metadata.labels.app\\.kubernetes\\.io/version}",
    );
    assert_eq!(version, "0.2.0", "the previous release is installed");

    // The old chart's CRDs belong to no release: a plain upgrade refuses to adopt them, and
    // changes nothing (checked before the test's operator applies config/rbac, whose newer
    // objects would be refused first).
    let plain = helm(cp, &["upgrade", "kubetrain", CHART, "--namespace", NS]);
    assert!(
        !plain.success
            && plain.stderr.contains("CustomResourceDefinition")
            && plain.stderr.contains("cannot be imported"),
        "a plain upgrade over unowned CRDs should fail naming them:\n{}{}",
        plain.stdout,
        plain.stderr
    );
    let history = helm_ok(cp, &["history", "kubetrain", "--namespace", NS]);
    assert_eq!(history.lines().count(), 2, "one revision:\n{history}");

    // A job running under the old CRDs. The operator in the test process is this version
    // (no 0.2.0 binary is built here), and the status it writes needs this version's CRD:
    // before the upgrade the job runs as its pods say; after it, its phase says so too. A
    // real upgrade keeps 0.2.0's operator until the Deployment rolls, after the CRDs (Helm
    // applies CRDs first); the test replaces its operator after the upgrade likewise.
    let s = Scenario::without_operator("upgrade", 2, 8, 1).await;
    let old = Operator::start(cp, test_config("before-the-upgrade"));
    let q = s.tenant("upgrade", 16, "FIFO", "");
    s.cp.apply(&s.job("before", &q, 2, 8, &[("run-seconds", "600")], ""));
    let deadline = Instant::now() + T;
    while running_pods(&s, "before") < 2 {
        assert!(
            Instant::now() < deadline,
            "the job's 2 pods are not running"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let before = identity(&s, "before");

    // activeDeadlineSeconds came after 0.2.0: its CRD has no such field.
    let newer = s.job(
        "after",
        &q,
        1,
        8,
        &[("run-seconds", "600")],
        "  activeDeadlineSeconds: 3600\n",
    );
    let refused = accepted(cp, &newer);
    assert!(
        !refused.success && refused.stderr.contains("activeDeadlineSeconds"),
        "0.2.0's CRD should not know spec.activeDeadlineSeconds:\n{}{}",
        refused.stdout,
        refused.stderr
    );

    // Adopted with --take-ownership, as the admin guide says (here also the objects of
    // config/rbac the test's operator applied).
    helm_ok(
        cp,
        &[
            "upgrade",
            "kubetrain",
            CHART,
            "--namespace",
            NS,
            "--take-ownership",
        ],
    );
    // The Deployment rolls to the new operator after the CRDs: so does the test's.
    old.kill();
    let _new = Operator::start(cp, test_config("after-the-upgrade"));
    let manifest = helm_ok(cp, &["get", "manifest", "kubetrain", "--namespace", NS]);
    for crd in CRDS {
        assert!(
            manifest.contains(&format!("name: {crd}")),
            "{crd} is not an object of the release after the upgrade"
        );
    }

    // The new field is accepted once the API server serves the new schema, and kept.
    let deadline = Instant::now() + T;
    loop {
        let out = accepted(cp, &newer);
        if out.success {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "spec.activeDeadlineSeconds still refused after the upgrade:\n{}",
            out.stderr
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    s.cp.apply(&newer);
    assert_eq!(
        s.job_status("after", "{.spec.activeDeadlineSeconds}"),
        "3600"
    );

    // Nothing lost: the same job, the same pods, running.
    s.wait_phase("before", "Running", T).await;
    assert_eq!(
        identity(&s, "before"),
        before,
        "the job or its pods changed"
    );
    assert_eq!(s.job_status("before", "{.status.retries}"), "0");

    // A second upgrade needs nothing more; uninstall keeps the CRDs and with them the jobs.
    helm_ok(cp, &["upgrade", "kubetrain", CHART, "--namespace", NS]);
    helm_ok(cp, &["uninstall", "kubetrain", "--namespace", NS, "--wait"]);
    for crd in CRDS {
        cp.kubectl_ok(&["get", "crd", crd])
            .expect("the CRD is kept on uninstall");
    }
    assert_eq!(identity(&s, "before").0, before.0, "the job is kept");
    s.finish().await;
    // The test's tenant goes with the CRDs below: without the finalizers, which wait for
    // the operator's account of jobs on nodes that are gone with the scenario.
    for kind in ["queue", "vc"] {
        cp.kubectl_ok(&[
            "patch",
            kind,
            &q,
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .expect("drop the test tenant's finalizer");
    }
    first_install_makes_the_default_tenant(cp);
}

/// On a cluster without the CRDs, `helm install --set defaultTenant.enabled=true` creates
/// the CRDs and the tenant in one go (the tenant is a post-install hook, as Helm cannot map
/// kinds whose CRDs it has not made yet), and the next upgrade adopts the tenant.
fn first_install_makes_the_default_tenant(cp: &ControlPlane) {
    let mut del = vec!["delete", "crd", "--wait"];
    del.extend_from_slice(&CRDS);
    cp.kubectl_ok(&del).expect("delete the CRDs");
    let tenant = [
        "--set",
        "defaultTenant.enabled=true",
        "--set",
        "defaultTenant.virtualCluster=first-vc",
        "--set",
        "defaultTenant.queue=first-queue",
    ];
    let mut install = vec!["install", "kubetrain", CHART, "--namespace", NS];
    install.extend_from_slice(&tenant);
    helm_ok(cp, &install);
    for o in ["vc/first-vc", "queue/first-queue"] {
        cp.kubectl_ok(&["get", o])
            .unwrap_or_else(|e| panic!("{o} after the first install: {e}"));
    }
    let mut upgrade = vec!["upgrade", "kubetrain", CHART, "--namespace", NS];
    upgrade.extend_from_slice(&tenant);
    helm_ok(cp, &upgrade);
    let manifest = helm_ok(cp, &["get", "manifest", "kubetrain", "--namespace", NS]);
    for name in ["name: first-vc", "name: first-queue"] {
        assert!(
            manifest.contains(name),
            "{name} is not an object of the release after the upgrade"
        );
    }
    let hook = cp.jsonpath(
        &["vc", "first-vc"],
        "{.metadata.annotations.helm\\.sh/hook}",
    );
    assert_eq!(hook, "", "the adopted tenant is no hook any more");
    helm_ok(cp, &["uninstall", "kubetrain", "--namespace", NS, "--wait"]);
    cp.kubectl_ok(&["get", "vc", "first-vc"])
        .expect("the tenant is kept on uninstall");
}
