//! The Helm chart `charts/kubetrain` and the release artifacts, with the helm that
//! `e2e/scripts/install-helm.sh` builds from `e2e/helm/go.mod`, the cache's kubectl and the
//! real kube-apiserver:
//!
//! - `helm lint` passes, with the defaults and with every optional part on;
//! - the values (images, replicas, priority classes, node selectors, tolerations, resources,
//!   the disruption budget, the operator's flags, the toggles) reach the objects;
//! - `imagePullSecrets` reach every pod kubetrain runs, in Helm and with kustomize's
//!   component; the optional default tenant renders a VirtualCluster and its Queue;
//! - `helm template | kubectl apply --dry-run=server` passes against the API server;
//! - a real `helm install` creates every object it renders, `helm uninstall` removes them;
//! - the chart's RBAC is kustomize's (`config/default`), rule for rule: both read the same
//!   files under `charts/kubetrain/files/rbac/`;
//! - the chart's CRDs are what crdgen writes, and its copies of the dashboard, the alert rules
//!   and the Argo CD health scripts equal those in `config/`;
//! - one version: the workspace's is the chart's version and appVersion and the image tag of
//!   `config/default`; `e2e/scripts/release.sh` (`make release`) renders `install.yaml`,
//!   which applies server-side, and packages the chart; its check (`check-release.sh`)
//!   names each place that disagrees on the version, and refuses unreleased changes;
//! - the CRDs are kept objects of the release (`e2e/tests/upgrade.rs` upgrades to them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kubetrain_e2e::{ControlPlane, repo_root};
use serde_json::{Value, json};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const CHART: &str = "charts/kubetrain";

/// Values that turn every optional part of the chart on.
const ALL_ON: &[&str] = &[
    "--set",
    "serviceMonitor.enabled=true",
    "--set",
    "prometheusRule.enabled=true",
    "--set",
    "grafanaDashboard.enabled=true",
    "--set",
    "argocd.healthChecks.enabled=true",
    "--set",
    "userPolicy.enabled=true",
];

/// Tests that install or delete cluster-wide objects of fixed names (ClusterRoles, ...) take
/// turns.
static CLUSTER_WIDE: Mutex<()> = Mutex::new(());

fn cache_bin() -> PathBuf {
    kubetrain_e2e::cache_dir()
        .expect("KUBETRAIN_CACHE or HOME")
        .join("bin")
}

struct Out {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Runs the cached helm in the repository root, against `cp` when given. Helm's own config,
/// cache and data directories are private to this test process.
fn helm(cp: Option<&ControlPlane>, args: &[&str]) -> Out {
    let bin = cache_bin().join("helm");
    assert!(
        bin.exists(),
        "{} missing: run `bash e2e/scripts/install-helm.sh` (make test does)",
        bin.display()
    );
    let home = std::env::temp_dir().join(format!("kubetrain-helm-{}", std::process::id()));
    let mut cmd = Command::new(&bin);
    cmd.args(args)
        .current_dir(repo_root())
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .stdin(Stdio::null());
    match cp {
        Some(cp) => cmd.env("KUBECONFIG", cp.kubeconfig()),
        // Nothing here may reach a cluster.
        None => cmd.env("KUBECONFIG", home.join("no-kubeconfig")),
    };
    let out = cmd.output().expect("helm runs");
    Out {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn helm_ok(cp: Option<&ControlPlane>, args: &[&str]) -> String {
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

/// kubectl without a cluster (kustomize), from the cache.
fn kubectl_local(args: &[&str]) -> String {
    let out = Command::new(cache_bin().join("kubectl"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A multi-document YAML stream as JSON objects (empty documents dropped).
fn docs(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| {
            let v: serde_norway::Value = serde::Deserialize::deserialize(doc).expect("valid YAML");
            serde_json::to_value(v).expect("YAML is JSON")
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn list(objs: &[&Value]) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": objs}).to_string()
}

fn read(path: &str) -> String {
    let p = repo_root().join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Minimal CRDs of the Prometheus Operator's ServiceMonitor and PrometheusRule (any spec),
/// and the `argocd` namespace, so that the chart's optional objects can be applied here.
fn optional_kinds(cp: &ControlPlane) {
    static DONE: Mutex<bool> = Mutex::new(false);
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return;
    }
    let crd = |plural: &str, kind: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.monitoring.coreos.com")},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                }],
            },
        })
    };
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}});
    let objs = [
        crd("servicemonitors", "ServiceMonitor"),
        crd("prometheusrules", "PrometheusRule"),
        ns,
    ];
    let out = cp
        .kubectl_stdin(
            &["apply", "--server-side", "-f", "-"],
            &list(&objs.iter().collect::<Vec<_>>()),
        )
        .expect("kubectl runs");
    assert!(out.success, "stub CRDs: {}", out.stderr);
    cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/servicemonitors.monitoring.coreos.com",
        "crd/prometheusrules.monitoring.coreos.com",
    ])
    .expect("stub CRDs established");
    *done = true;
}

#[test]
fn chart_passes_helm_lint() {
    let out = helm_ok(None, &["lint", "--strict", CHART]);
    assert!(out.contains("0 chart(s) failed"), "{out}");
    let mut args = vec!["lint", "--strict", CHART];
    args.extend_from_slice(ALL_ON);
    let out = helm_ok(None, &args);
    assert!(out.contains("0 chart(s) failed"), "{out}");
}

#[test]
fn one_version_everywhere() {
    let chart = read(&format!("{CHART}/Chart.yaml"));
    let chart: Value = serde_norway::from_str(&chart).expect("Chart.yaml");
    assert_eq!(
        chart["version"], VERSION,
        "Chart.yaml version vs Cargo.toml"
    );
    assert_eq!(
        chart["appVersion"], VERSION,
        "Chart.yaml appVersion vs Cargo.toml"
    );
    // The images config/default installs are tagged with the version too.
    let objs = docs(&kubectl_local(&["kustomize", "config/default"]));
    let mut images = 0;
    for o in &objs {
        for c in o["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let image = c["image"].as_str().expect("image");
            assert!(
                image.ends_with(&format!(":{VERSION}")),
                "{} {}: image {image} is not tagged {VERSION}",
                o["kind"],
                o["metadata"]["name"]
            );
            images += 1;
        }
    }
    assert_eq!(images, 2, "the operator and the labeler");
    // And the chart's defaults (appVersion).
    let rendered = docs(&helm_ok(None, &["template", "kubetrain", CHART]));
    for o in rendered
        .iter()
        .filter(|o| o["kind"] == "Deployment" || o["kind"] == "DaemonSet")
    {
        let image = o["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .expect("image");
        assert!(image.ends_with(&format!(":{VERSION}")), "{image}");
    }
}

#[test]
fn chart_crds_match_crdgen() {
    for (plural, crd) in kubetrain::api::crds() {
        let want = kubetrain::api::crd_yaml(&crd).expect("CRD YAML");
        let path = format!("{CHART}/files/crds/{plural}.yaml");
        assert!(
            read(&path) == want,
            "{path} differs from the Rust types: run `make crds`"
        );
    }
}

/// The chart's files are the only copies: kustomize's overlays point at them.
#[test]
fn chart_copies_equal_config() {
    for (dir, file) in [
        ("config/grafana", "kubetrain-dashboard.json"),
        ("config/prometheus", "rules.yaml"),
    ] {
        assert!(
            !std::path::Path::new(&format!("{}/{dir}/{file}", repo_root().display())).exists(),
            "{dir}/{file} is a second copy of the chart's files/: remove it"
        );
    }
    // The rendered optional objects carry them unchanged.
    let mut args = vec!["template", "kubetrain", CHART];
    args.extend_from_slice(ALL_ON);
    let objs = docs(&helm_ok(None, &args));
    let find = |kind: &str, name: &str| {
        objs.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("the chart renders no {kind} {name}"))
    };
    // kustomize's overlays render the same objects from the same files.
    let from_kustomize = |dir: &str, kind: &str| -> Value {
        docs(&kubectl_local(&["kustomize", dir]))
            .into_iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("kubectl kustomize {dir} renders no {kind}"))
    };
    let dashboard = find("ConfigMap", "kubetrain-grafana-dashboard");
    assert_eq!(
        dashboard["data"]["kubetrain-dashboard.json"]
            .as_str()
            .map(str::trim_end),
        from_kustomize("config/grafana", "ConfigMap")["data"]["kubetrain-dashboard.json"]
            .as_str()
            .map(str::trim_end)
    );
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let argocd = find("ConfigMap", "argocd-cm");
    assert_eq!(argocd["metadata"]["namespace"], "argocd");
    let kustomize_cm: Value =
        serde_norway::from_str(&read("config/argocd/argocd-cm.yaml")).expect("argocd-cm.yaml");
    for kind in ["TrainingJob", "Queue", "VirtualCluster"] {
        let key = format!("resource.customizations.health.kubetrain.io_{kind}");
        assert_eq!(
            argocd["data"][&key].as_str().map(str::trim_end),
            kustomize_cm["data"][&key].as_str().map(str::trim_end),
            "{key}"
        );
    }
    let rule = find("PrometheusRule", "kubetrain");
    let original = from_kustomize("config/prometheus", "PrometheusRule");
    assert_eq!(
        rule["spec"], original["spec"],
        "Helm must not touch the alerts' {{{{ }}}} templates"
    );
    find("ServiceMonitor", "kubetrain-operator");
    // The admission policy: the same rules, bound with the release's parameters.
    let policy = find("ValidatingAdmissionPolicy", "kubetrain-user-is-submitter");
    assert_eq!(
        policy["spec"],
        from_kustomize("config/policies", "ValidatingAdmissionPolicy")["spec"]
    );
    let binding = find(
        "ValidatingAdmissionPolicyBinding",
        "kubetrain-user-is-submitter",
    );
    let kustomize_binding = from_kustomize("config/policies", "ValidatingAdmissionPolicyBinding");
    assert_eq!(
        binding["spec"]["policyName"],
        kustomize_binding["spec"]["policyName"]
    );
    assert_eq!(binding["spec"]["paramRef"]["namespace"], "default");
    let params = find("ConfigMap", "kubetrain-user-policy");
    assert_eq!(
        params["data"],
        from_kustomize("config/policies", "ConfigMap")["data"],
        "values.yaml's defaults are the kustomize ConfigMap's"
    );
}

#[test]
fn chart_values_reach_the_objects() {
    let rendered = docs(&helm_ok(
        None,
        &[
            "template",
            "kubetrain",
            CHART,
            "--set",
            "operator.image.repository=registry.example.com/kt/operator",
            "--set",
            "operator.image.tag=dev",
            "--set",
            "operator.image.pullPolicy=Always",
            "--set",
            "operator.replicas=3",
            "--set",
            "operator.priorityClassName=system-cluster-critical",
            "--set",
            "operator.gpuBinding=device-plugin",
            "--set",
            "operator.resync=30s",
            "--set",
            "operator.leaderElection.leaseDuration=30s",
            "--set",
            "operator.masterPort=29500",
            "--set",
            "operator.workloadHistory=500",
            "--set",
            "operator.podDisruptionBudget.minAvailable=2",
            "--set",
            "operator.nodeSelector.pool=system",
            "--set",
            "operator.tolerations[0].key=dedicated",
            "--set",
            "operator.tolerations[0].operator=Exists",
            "--set",
            "operator.resources.limits.memory=4Gi",
            "--set",
            "nodeLabeler.image.tag=labeler-dev",
            "--set",
            "nodeLabeler.priorityClassName=system-node-critical",
            "--set",
            "nodeLabeler.runtimeClassName=",
        ],
    ));
    let find = |kind: &str| {
        rendered
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    let d = find("Deployment");
    assert_eq!(d["spec"]["replicas"], 3);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["priorityClassName"], "system-cluster-critical");
    assert_eq!(
        pod["nodeSelector"],
        json!({"kubernetes.io/os": "linux", "pool": "system"})
    );
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "dedicated", "operator": "Exists"}])
    );
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example.com/kt/operator:dev");
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["resources"]["limits"]["memory"], "4Gi");
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "--gpu-binding=device-plugin",
        "--resync=30s",
        "--leader-elect-lease-duration=30s",
        "--leader-elect-renew-deadline=10s",
        "--master-port=29500",
        "--workload-history=500",
    ] {
        assert!(args.contains(&want), "{want} not in {args:?}");
    }
    assert!(
        !args.iter().any(|a| a.starts_with("--workload-shapes")),
        "no shapes given, none passed: {args:?}"
    );

    // Supplied workload shapes: a ConfigMap, mounted, and the flag naming the file in it.
    let shapes = docs(&helm_ok(
        None,
        &[
            "template",
            "kubetrain",
            CHART,
            "--set-json",
            r#"operator.workloadShapes=[{"gpus":8,"cpu":"64","memory":"512Gi","count":30},{"gpus":"500m","count":70}]"#,
        ],
    ));
    let cm = shapes
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "kubetrain-workload-shapes")
        .expect("the shapes' ConfigMap");
    let listed: Value =
        serde_norway::from_str(cm["data"]["shapes.yaml"].as_str().expect("shapes.yaml"))
            .expect("YAML");
    assert_eq!(listed[1]["gpus"], "500m", "{listed}");
    let pod = &shapes
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment")["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["configMap"]["name"],
        "kubetrain-workload-shapes"
    );
    let c = &pod["containers"][0];
    let mount = c["volumeMounts"][0]["mountPath"].as_str().expect("mounted");
    let flag = format!("--workload-shapes={mount}/shapes.yaml");
    assert!(
        c["args"]
            .as_array()
            .expect("args")
            .iter()
            .any(|a| a == &flag),
        "{flag} not in {}",
        c["args"]
    );
    assert_eq!(find("PodDisruptionBudget")["spec"]["minAvailable"], 2);
    let ds = &find("DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(ds["priorityClassName"], "system-node-critical");
    assert!(ds.get("runtimeClassName").is_none(), "{ds}");
    assert!(
        ds["containers"][0]["image"]
            .as_str()
            .is_some_and(|i| i.ends_with(":labeler-dev"))
    );

    // Without the labeler and the budget, their objects (and the labeler's RBAC) are gone.
    let off = docs(&helm_ok(
        None,
        &[
            "template",
            "kubetrain",
            CHART,
            "--set",
            "nodeLabeler.enabled=false",
            "--set",
            "operator.podDisruptionBudget.enabled=false",
        ],
    ));
    for o in &off {
        assert_ne!(o["kind"], "DaemonSet");
        assert_ne!(o["kind"], "PodDisruptionBudget");
        assert_ne!(
            o["metadata"]["name"], "kubetrain-node-labeler",
            "{}",
            o["kind"]
        );
    }
}

/// A private registry's pull secret reaches every pod kubetrain runs: the operator's and the
/// labeler's directly, the GPU reservation pods' through their ServiceAccount (the operator
/// creates those pods); and the optional default tenant is a VirtualCluster whose
/// defaultQueue is the chart's Queue, kept on uninstall.
#[test]
fn chart_sets_pull_secrets_and_a_default_tenant() {
    let objs = docs(&helm_ok(
        None,
        &[
            "template",
            "kubetrain",
            CHART,
            "--set",
            "imagePullSecrets[0].name=regcred",
            "--set",
            "defaultTenant.enabled=true",
            "--set",
            "defaultTenant.namespaces[0]=team-a",
            "--set",
            "defaultTenant.guarantee[0].flavor=A100",
            "--set",
            "defaultTenant.guarantee[0].gpus=8",
        ],
    ));
    let find = |kind: &str, name: &str| {
        objs.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("the chart renders no {kind} {name}"))
    };
    let secrets = json!([{"name": "regcred"}]);
    for (kind, name) in [
        ("Deployment", "kubetrain-operator"),
        ("DaemonSet", "kubetrain-node-labeler"),
    ] {
        assert_eq!(
            find(kind, name)["spec"]["template"]["spec"]["imagePullSecrets"],
            secrets,
            "{kind} {name}"
        );
    }
    assert_eq!(
        find("ServiceAccount", "kubetrain-gpu-reservation")["imagePullSecrets"],
        secrets
    );
    let vc = find("VirtualCluster", "default");
    assert_eq!(vc["spec"]["namespaces"], json!(["team-a"]));
    assert_eq!(vc["spec"]["defaultQueue"], "default");
    assert_eq!(
        vc["spec"]["guarantee"],
        json!([{"flavor": "A100", "gpus": 8}])
    );
    let queue = find("Queue", "default");
    assert_eq!(queue["spec"]["virtualCluster"], "default");
    for o in [vc, queue] {
        assert_eq!(
            o["metadata"]["annotations"]["helm.sh/resource-policy"],
            "keep"
        );
    }
    // Off by default: nothing of either.
    let plain = docs(&helm_ok(None, &["template", "kubetrain", CHART]));
    assert!(
        plain
            .iter()
            .all(|o| o["kind"] != "VirtualCluster" && o.get("imagePullSecrets").is_none()),
        "the defaults render a tenant or pull secrets"
    );
}

/// kustomize's optional component puts the registry's pull secret on the three
/// ServiceAccounts whose pods pull kubetrain's images.
#[test]
fn kustomize_component_sets_pull_secrets() {
    let dir = repo_root().join("target/kustomize-pull-secrets");
    std::fs::create_dir_all(&dir).expect("overlay dir");
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources: [../../config/default]\n\
         components: [../../config/components/image-pull-secrets]\n",
    )
    .expect("overlay");
    let objs = docs(&kubectl_local(&[
        "kustomize",
        "target/kustomize-pull-secrets",
    ]));
    let accounts: BTreeMap<&str, &Value> = objs
        .iter()
        .filter(|o| o["kind"] == "ServiceAccount")
        .filter_map(|o| Some((o["metadata"]["name"].as_str()?, &o["imagePullSecrets"])))
        .collect();
    for name in [
        "kubetrain-operator",
        "kubetrain-node-labeler",
        "kubetrain-gpu-reservation",
    ] {
        assert_eq!(
            accounts.get(name).copied(),
            Some(&json!([{"name": "kubetrain-registry"}])),
            "ServiceAccount {name}: {accounts:?}"
        );
    }
}

/// name → rules of every ClusterRole and Role in `objs`.
fn roles(objs: &[Value]) -> BTreeMap<String, Value> {
    objs.iter()
        .filter(|o| o["kind"] == "ClusterRole" || o["kind"] == "Role")
        .map(|o| {
            (
                format!(
                    "{} {}",
                    o["kind"].as_str().unwrap_or_default(),
                    o["metadata"]["name"].as_str().unwrap_or_default()
                ),
                o["rules"].clone(),
            )
        })
        .collect()
}

#[test]
fn chart_rbac_equals_kustomize() {
    let kustomize = docs(&kubectl_local(&["kustomize", "config/default"]));
    let chart = docs(&helm_ok(
        None,
        &[
            "template",
            "kubetrain",
            CHART,
            "--namespace",
            "kubetrain-system",
        ],
    ));
    let (k, h) = (roles(&kustomize), roles(&chart));
    assert_eq!(
        k.keys().collect::<Vec<_>>(),
        h.keys().collect::<Vec<_>>(),
        "the same roles"
    );
    assert!(k.contains_key("ClusterRole kubetrain-operator"), "{k:?}");
    assert!(
        k.contains_key("Role kubetrain-operator-leader-election"),
        "{k:?}"
    );
    assert!(
        k.contains_key("ClusterRole kubetrain-node-labeler"),
        "{k:?}"
    );
    for (name, rules) in &k {
        assert_eq!(
            rules, &h[name],
            "{name}: helm's rules differ from kustomize's"
        );
    }
    // Aggregation labels, bindings and service accounts match as well.
    let by_name = |objs: &[Value], kind: &str, name: &str| {
        objs.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    };
    for name in ["kubetrain-trainingjob-editor", "kubetrain-viewer"] {
        let (kl, hl) = (
            by_name(&kustomize, "ClusterRole", name)["metadata"]["labels"].clone(),
            by_name(&chart, "ClusterRole", name)["metadata"]["labels"].clone(),
        );
        for (label, value) in kl.as_object().expect("labels") {
            if label.starts_with("rbac.authorization.k8s.io/") {
                assert_eq!(&hl[label], value, "{name}: {label}");
            }
        }
    }
    for (kind, name) in [
        ("ClusterRoleBinding", "kubetrain-operator"),
        ("RoleBinding", "kubetrain-operator-leader-election"),
        ("ClusterRoleBinding", "kubetrain-node-labeler"),
    ] {
        let (kb, hb) = (by_name(&kustomize, kind, name), by_name(&chart, kind, name));
        assert_eq!(kb["roleRef"], hb["roleRef"], "{kind} {name}");
        assert_eq!(kb["subjects"], hb["subjects"], "{kind} {name}");
    }
}

#[test]
fn chart_template_passes_a_server_side_dry_run() {
    let cp = ControlPlane::shared();
    optional_kinds(cp);
    let ns = "kubetrain-dry-run";
    let ns_obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    cp.kubectl_stdin(&["apply", "-f", "-"], &ns_obj.to_string())
        .expect("kubectl runs");
    let mut args = vec!["template", "kubetrain", CHART, "--namespace", ns];
    args.extend_from_slice(ALL_ON);
    // The default tenant's objects pass the CRDs' schema and CEL rules (dry run: nothing
    // is kept).
    args.extend_from_slice(&[
        "--set",
        "defaultTenant.enabled=true",
        "--set",
        "defaultTenant.virtualCluster=dry-run-tenant",
        "--set",
        "defaultTenant.queue=dry-run-queue",
        "--set",
        "defaultTenant.guarantee[0].flavor=A100",
        "--set",
        "defaultTenant.guarantee[0].gpus=8",
    ]);
    let rendered = helm_ok(None, &args);
    let out = cp
        .kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &rendered)
        .expect("kubectl runs");
    assert!(
        out.success,
        "server-side dry-run of the chart failed:\n{}{}",
        out.stdout, out.stderr
    );
    for what in [
        "deployment.apps/kubetrain-operator",
        "daemonset.apps/kubetrain-node-labeler",
        "poddisruptionbudget.policy/kubetrain-operator",
        "clusterrole.rbac.authorization.k8s.io/kubetrain-operator",
        "servicemonitor.monitoring.coreos.com/kubetrain-operator",
        "prometheusrule.monitoring.coreos.com/kubetrain",
        "configmap/kubetrain-grafana-dashboard",
        "configmap/argocd-cm",
        "virtualcluster.kubetrain.io/dry-run-tenant",
        "queue.kubetrain.io/dry-run-queue",
    ] {
        assert!(
            out.stdout.contains(what),
            "{what} not in the dry-run:\n{}",
            out.stdout
        );
    }
}

/// `kind/name` of an object for kubectl, with `-n` when it is namespaced.
fn get_args(o: &Value) -> Vec<String> {
    let api = o["apiVersion"].as_str().unwrap_or_default();
    let group = api.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let kind = o["kind"].as_str().unwrap_or_default();
    let resource = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut args = vec![
        "get".to_string(),
        format!(
            "{resource}/{}",
            o["metadata"]["name"].as_str().unwrap_or_default()
        ),
    ];
    if let Some(ns) = o["metadata"]["namespace"].as_str() {
        args.push("-n".into());
        args.push(ns.into());
    }
    args
}

fn exists(cp: &ControlPlane, o: &Value) -> bool {
    let args = get_args(o);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cp.kubectl(&args).map(|out| out.success).unwrap_or(false)
}

#[test]
fn helm_install_creates_every_object_and_uninstall_removes_them() {
    let cp = ControlPlane::shared();
    optional_kinds(cp);
    let _turn = CLUSTER_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let ns = "kubetrain-helm";
    let mut args = vec![
        "install",
        "kubetrain",
        CHART,
        "--namespace",
        ns,
        "--create-namespace",
        // The test control plane applied the CRDs with kubectl before: adopt them, as the
        // admin guide says for CRDs installed otherwise.
        "--take-ownership",
    ];
    args.extend_from_slice(ALL_ON);
    helm_ok(Some(cp), &args);

    let manifest = helm_ok(
        Some(cp),
        &["get", "manifest", "kubetrain", "--namespace", ns],
    );
    let objs = docs(&manifest);
    let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
    for kind in [
        "Deployment",
        "DaemonSet",
        "Service",
        "PodDisruptionBudget",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    ] {
        assert!(
            kinds.contains(&kind),
            "the release has no {kind}: {kinds:?}"
        );
    }
    for o in &objs {
        assert!(
            exists(cp, o),
            "{} {} was not created",
            o["kind"],
            o["metadata"]["name"]
        );
    }
    // The release's namespaced objects are in its namespace and the operator's bindings
    // name its service account there.
    let d = cp.jsonpath(
        &["deploy/kubetrain-operator", "-n", ns],
        "{.spec.template.spec.containers[0].args}",
    );
    assert!(d.contains("--gpu-binding=auto"), "{d}");
    assert!(d.contains("--resync=5s"), "{d}");
    let subject = cp.jsonpath(
        &["clusterrolebinding/kubetrain-operator"],
        "{.subjects[0].namespace}",
    );
    assert_eq!(subject, ns);
    // The CRDs are objects of the release, kept on uninstall (below).
    for crd in ["trainingjobs", "queues", "virtualclusters"] {
        let name = format!("{crd}.kubetrain.io");
        assert!(
            objs.iter().any(|o| o["kind"] == "CustomResourceDefinition"
                && o["metadata"]["name"] == name.as_str()
                && o["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"),
            "CRD {name} is not a kept object of the release"
        );
    }

    helm_ok(
        Some(cp),
        &["uninstall", "kubetrain", "--namespace", ns, "--wait"],
    );
    for o in &objs {
        if o["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" {
            assert!(
                exists(cp, o),
                "{} {} is kept",
                o["kind"],
                o["metadata"]["name"]
            );
            continue;
        }
        wait_until(
            &format!(
                "{} {} removed by helm uninstall",
                o["kind"], o["metadata"]["name"]
            ),
            Duration::from_secs(60),
            || !exists(cp, o),
        );
    }
    // The kept argocd-cm goes with the test.
    cp.kubectl_ok(&["delete", "configmap", "argocd-cm", "-n", "argocd"])
        .expect("delete argocd-cm");
}

/// `e2e/scripts/release.sh` into a temporary directory, with the cache's kubectl and helm.
fn release(out: &Path) {
    let path = format!(
        "{}:{}",
        cache_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = std::env::temp_dir().join(format!("kubetrain-helm-{}", std::process::id()));
    let run = Command::new("bash")
        .arg(repo_root().join("e2e/scripts/release.sh"))
        // Not published: CHANGELOG.md may list unreleased changes (check-release.sh).
        .arg("--snapshot")
        .arg(VERSION)
        .arg(out)
        .current_dir(repo_root())
        .env("PATH", path)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("bash runs");
    assert!(
        run.status.success(),
        "release.sh failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn release_install_yaml_applies_server_side() {
    let cp = ControlPlane::shared();
    let out = std::env::temp_dir().join(format!("kubetrain-release-{}", std::process::id()));
    release(&out);
    let package = out.join(format!("kubetrain-{VERSION}.tgz"));
    assert!(package.exists(), "{} missing", package.display());
    // The package is the chart: helm can read and render it.
    let rendered = docs(&helm_ok(
        None,
        &["template", "kubetrain", &package.to_string_lossy()],
    ));
    assert!(rendered.iter().any(|o| o["kind"] == "Deployment"));

    let install = out.join("install.yaml");
    let text = std::fs::read_to_string(&install).expect("install.yaml");
    // Exactly config/default's rendering.
    let objs = docs(&text);
    assert_eq!(objs, docs(&kubectl_local(&["kustomize", "config/default"])));

    let _turn = CLUSTER_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let applied = cp
        .kubectl(&["apply", "--server-side", "-f", &install.to_string_lossy()])
        .expect("kubectl runs");
    assert!(
        applied.success,
        "kubectl apply --server-side -f install.yaml:\n{}",
        applied.stderr
    );
    for o in &objs {
        assert!(
            exists(cp, o),
            "{} {} was not created",
            o["kind"],
            o["metadata"]["name"]
        );
    }
    // Applying again changes nothing.
    let diff = cp
        .kubectl(&["diff", "--server-side", "-f", &install.to_string_lossy()])
        .expect("kubectl runs");
    assert!(
        diff.success && diff.stdout.trim().is_empty(),
        "install.yaml drifts on re-apply:\n{}{}",
        diff.stdout,
        diff.stderr
    );
    // Leave the cluster-wide objects to the other tests (the CRDs and the namespace stay).
    let rest: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition" && o["kind"] != "Namespace")
        .collect();
    let del = cp
        .kubectl_stdin(&["delete", "--wait", "-f", "-"], &list(&rest))
        .expect("kubectl runs");
    assert!(del.success, "cleanup: {}", del.stderr);
    let _ = std::fs::remove_dir_all(&out);
}

/// `e2e/scripts/check-release.sh` on `root`: whether it passes, and what it said.
fn check_release(root: &Path, args: &[&str]) -> (bool, String) {
    let run = Command::new("bash")
        .arg(repo_root().join("e2e/scripts/check-release.sh"))
        .args(args)
        .arg(root)
        .output()
        .expect("bash runs");
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

/// A copy of the files check-release.sh reads, in a temporary directory.
fn release_files(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("kubetrain-check-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["charts/kubetrain", "docs"] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    let mut files = vec![
        "Cargo.toml".to_string(),
        "CHANGELOG.md".into(),
        "README.md".into(),
        format!("{CHART}/Chart.yaml"),
        format!("{CHART}/README.md"),
    ];
    for e in std::fs::read_dir(repo_root().join("docs")).expect("docs/") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    for f in files {
        std::fs::copy(repo_root().join(&f), root.join(&f)).expect("copy");
    }
    root
}

fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{file} has no {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
}

/// `make release` refuses a version that Cargo.toml, the chart, CHANGELOG.md and the docs'
/// install commands do not all name, each mismatch named; and unreleased changes in the
/// CHANGELOG unless the build is a snapshot.
#[test]
fn release_check_names_each_mismatch() {
    let root = release_files("ok");
    let (ok, said) = check_release(&root, &["--snapshot", VERSION]);
    assert!(ok, "this tree agrees on {VERSION}:\n{said}");

    // Unreleased changes: refused without --snapshot.
    edit(
        &root,
        "CHANGELOG.md",
        "## [Unreleased]\n",
        "## [Unreleased]\n\n- a change\n",
    );
    let (ok, said) = check_release(&root, &[VERSION]);
    assert!(!ok && said.contains("'## [Unreleased]' lists"), "{said}");
    assert!(check_release(&root, &["--snapshot", VERSION]).0);

    // A version moved in one place only: that place is named.
    let cases = [
        (
            "Cargo.toml",
            format!("version = \"{VERSION}\""),
            "Cargo.toml: workspace version is '9.9.9'",
        ),
        (
            "charts/kubetrain/Chart.yaml",
            format!("appVersion: \"{VERSION}\""),
            "Chart.yaml: appVersion is '9.9.9'",
        ),
        ("CHANGELOG.md", format!("## [{VERSION}]"), "no section"),
        (
            "charts/kubetrain/README.md",
            format!("kubetrain-{VERSION}.tgz"),
            "'kubetrain-9.9.9.tgz' names version 9.9.9",
        ),
    ];
    for (i, (file, from, named)) in cases.iter().enumerate() {
        let root = release_files(&format!("bad{i}"));
        edit(&root, file, from, &from.replace(VERSION, "9.9.9"));
        let (ok, said) = check_release(&root, &["--snapshot", VERSION]);
        assert!(!ok, "{file} moved to 9.9.9 passed the check:\n{said}");
        assert!(
            said.contains(named),
            "{file}: {said:?} does not name {named:?}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
    let _ = std::fs::remove_dir_all(&root);
}
