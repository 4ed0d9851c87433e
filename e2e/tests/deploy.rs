//! The install manifests against the real kube-apiserver, with real kubectl:
//!
//! - `config/crds/` is exactly what `crdgen` writes;
//! - `config/default` renders (kubectl's kustomize) into what an install needs: the
//!   namespace, the CRDs, RBAC, a 2-replica Deployment with leader election, probes, limits,
//!   non-root and a read-only root filesystem, and the labeler;
//! - the whole overlay passes a server-side dry-run, and its namespace and RBAC are applied
//!   for real (pods cannot run here: there is no kubelet);
//! - `kubectl auth can-i --as=<the operator's service account>` allows what the code does
//!   and refuses the rest (Secrets, Node writes, Leases elsewhere, spec writes, ...);
//! - the operator itself, run under that service account (impersonated), takes a job from
//!   Queued to Succeeded, preempts a borrower with a checkpoint request, writes status and
//!   events, holds its Lease in `kubetrain-system` and deletes a job after its TTL.

use std::time::Duration;

use kubetrain_e2e::scenario::Scenario;
use kubetrain_e2e::{ControlPlane, repo_root};
use serde_json::Value;

const NS: &str = "kubetrain-system";
const OPERATOR_SA: &str = "system:serviceaccount:kubetrain-system:kubetrain-operator";
const LABELER_SA: &str = "system:serviceaccount:kubetrain-system:kubetrain-node-labeler";
const RESERVATION_SA: &str = "system:serviceaccount:kubetrain-system:kubetrain-gpu-reservation";

/// `kubectl kustomize config/default`, as JSON objects.
fn rendered(cp: &ControlPlane) -> Vec<Value> {
    let yaml = cp
        .kubectl_ok(&["kustomize", "config/default"])
        .expect("config/default renders");
    serde_norway::Deserializer::from_str(&yaml)
        .map(|doc| {
            let v: serde_norway::Value = serde::Deserialize::deserialize(doc).expect("valid YAML");
            serde_json::to_value(v).expect("YAML is JSON")
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("config/default has no {kind} {name}"))
}

/// Applies the namespace and the RBAC of config/default for real, once per test binary
/// (the tests run in parallel and share them).
fn install_rbac(cp: &ControlPlane) {
    static DONE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return;
    }
    let objs = rendered(cp);
    let rbac: Vec<String> = objs
        .iter()
        .filter(|o| {
            let kind = o["kind"].as_str().unwrap_or_default();
            matches!(
                kind,
                "Namespace"
                    | "ServiceAccount"
                    | "ClusterRole"
                    | "ClusterRoleBinding"
                    | "Role"
                    | "RoleBinding"
            )
        })
        .map(|o| serde_json::to_string(o).expect("JSON"))
        .collect();
    let list = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{}]}}",
        rbac.join(",")
    );
    let out = cp
        .kubectl_stdin(&["apply", "-f", "-"], &list)
        .expect("kubectl runs");
    assert!(
        out.success,
        "applying the RBAC of config/default: {}",
        out.stderr
    );
    *done = true;
}

#[test]
fn config_crds_match_crdgen() {
    let dir = repo_root().join("config/crds");
    for (plural, crd) in kubetrain::api::crds() {
        let want = kubetrain::api::crd_yaml(&crd).expect("CRD YAML");
        let path = dir.join(format!("{plural}.yaml"));
        let have =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            have == want,
            "{} differs from the Rust types: run `make crds`",
            path.display()
        );
    }
}

#[test]
fn default_overlay_renders_an_installable_operator() {
    let cp = ControlPlane::shared();
    let objs = rendered(cp);

    // Namespaced objects all land in kubetrain-system.
    for o in &objs {
        let kind = o["kind"].as_str().unwrap_or_default();
        let cluster_scoped = matches!(
            kind,
            "Namespace"
                | "CustomResourceDefinition"
                | "ClusterRole"
                | "ClusterRoleBinding"
                | "PriorityClass"
        );
        if !cluster_scoped {
            assert_eq!(
                o["metadata"]["namespace"], NS,
                "{kind} {} is outside {NS}",
                o["metadata"]["name"]
            );
        }
    }
    find(&objs, "Namespace", NS);
    // The GPU reservations' class: not preempted for user pods, never preempting one.
    let class = find(&objs, "PriorityClass", "kubetrain-gpu-reservation");
    assert_eq!(
        (&class["value"], &class["preemptionPolicy"]),
        (
            &serde_json::json!(1_000_000_000),
            &serde_json::json!("Never")
        )
    );
    for crd in [
        "trainingjobs.kubetrain.io",
        "queues.kubetrain.io",
        "virtualclusters.kubetrain.io",
    ] {
        find(&objs, "CustomResourceDefinition", crd);
    }
    find(&objs, "DaemonSet", "kubetrain-node-labeler");

    let d = find(&objs, "Deployment", "kubetrain-operator");
    assert_eq!(
        d["spec"]["replicas"], 2,
        "two replicas with leader election"
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "kubetrain-operator");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert!(
        pod["affinity"]["podAntiAffinity"].is_object(),
        "replicas should spread over nodes: {}",
        pod["affinity"]
    );
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    for r in ["requests", "limits"] {
        assert!(c["resources"][r]["memory"].is_string(), "memory {r}");
        assert!(c["resources"][r]["cpu"].is_string(), "cpu {r}");
    }
    // Leader election takes its namespace and identity from the downward API.
    let env = c["env"].as_array().expect("env");
    let field = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .map(|e| e["valueFrom"]["fieldRef"]["fieldPath"].clone())
            .unwrap_or_else(|| panic!("env {name} missing"))
    };
    assert_eq!(field("POD_NAMESPACE"), "metadata.namespace");
    assert_eq!(field("POD_NAME"), "metadata.name");
    // The probes and the metrics port are where --http-addr serves them.
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"--http-addr=0.0.0.0:8080"), "{args:?}");
    assert_eq!(c["ports"][0]["containerPort"], 8080);
    let port = c["ports"][0]["name"].clone();
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], port);
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], port);
    let svc = find(&objs, "Service", "kubetrain-operator-metrics");
    assert_eq!(
        svc["spec"]["selector"],
        d["spec"]["selector"]["matchLabels"]
    );

    // The bindings name the service accounts the workloads run as.
    let crb = find(&objs, "ClusterRoleBinding", "kubetrain-operator");
    assert_eq!(crb["subjects"][0]["name"], "kubetrain-operator");
    assert_eq!(crb["subjects"][0]["namespace"], NS);
    let rb = find(&objs, "RoleBinding", "kubetrain-operator-leader-election");
    assert_eq!(rb["metadata"]["namespace"], NS);
    assert_eq!(rb["subjects"][0]["namespace"], NS);
}

#[test]
fn default_overlay_passes_a_server_side_dry_run() {
    let cp = ControlPlane::shared();
    // The namespace must exist for a dry-run of what goes in it; RBAC is applied for real.
    install_rbac(cp);
    // Server-side, as the README installs it: the TrainingJob CRD is too large for the
    // last-applied annotation of a client-side apply.
    let out = cp
        .kubectl(&[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-k",
            "config/default",
        ])
        .expect("kubectl runs");
    assert!(
        out.success,
        "server-side dry-run of config/default failed:\n{}",
        out.stderr
    );
    for what in [
        "deployment.apps/kubetrain-operator",
        "daemonset.apps/kubetrain-node-labeler",
        "poddisruptionbudget.policy/kubetrain-operator",
    ] {
        assert!(
            out.stdout.contains(what),
            "{what} not in the dry-run:\n{}",
            out.stdout
        );
    }
    // Applying twice is a no-op for the server (GitOps re-applies all the time).
    let again = cp
        .kubectl(&["diff", "-k", "config/rbac"])
        .expect("kubectl runs");
    assert!(
        again.success && again.stdout.trim().is_empty(),
        "RBAC drifts on re-apply:\n{}{}",
        again.stdout,
        again.stderr
    );
}

#[test]
fn operator_has_a_disruption_budget() {
    let objs = rendered(ControlPlane::shared());
    let pdb = find(&objs, "PodDisruptionBudget", "kubetrain-operator");
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    let d = find(&objs, "Deployment", "kubetrain-operator");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"], d["spec"]["selector"]["matchLabels"],
        "the budget covers the operator's pods"
    );
}

/// A pod with the spec of a workload's template, as `kubectl create --dry-run=server` of it
/// in the install namespace answers.
fn dry_run_pod(cp: &ControlPlane, name: &str, spec: &Value) -> kubetrain_e2e::KubectlOutput {
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    });
    cp.kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], &pod.to_string())
        .expect("kubectl runs")
}

#[test]
fn install_namespace_enforces_the_restricted_pod_security_level() {
    let cp = ControlPlane::shared();
    install_rbac(cp);
    let objs = rendered(cp);
    // The labeler's pods name the `nvidia` RuntimeClass the container toolkit installs.
    let rc = cp
        .kubectl_stdin(
            &["apply", "-f", "-"],
            r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"nvidia"},"handler":"nvidia"}"#,
        )
        .expect("kubectl runs");
    assert!(rc.success, "RuntimeClass nvidia: {}", rc.stderr);
    for (kind, name) in [
        ("Deployment", "kubetrain-operator"),
        ("DaemonSet", "kubetrain-node-labeler"),
    ] {
        let spec = &find(&objs, kind, name)["spec"]["template"]["spec"];
        let out = dry_run_pod(cp, &format!("{name}-psa"), spec);
        assert!(
            out.success && !out.stderr.contains("PodSecurity"),
            "{kind} {name}'s pods do not meet the namespace's Pod Security level: {}",
            out.stderr
        );
    }
    // The GPU reservation pods the operator makes there for shares on device-plugin nodes.
    let reservation = kubetrain::controller::reservations::reservation_pod(
        &kubetrain::controller::reservations::SharedGpu {
            node: "gpu-node".into(),
            gpu: 0,
        },
        None,
        &kubetrain::controller::reservations::ReservationSettings {
            namespace: NS.into(),
            ..Default::default()
        },
    );
    let spec = serde_json::to_value(reservation.spec).expect("json");
    let out = dry_run_pod(cp, "reservation-psa", &spec);
    assert!(
        out.success && !out.stderr.contains("PodSecurity"),
        "the GPU reservation pods do not meet the namespace's Pod Security level: {}",
        out.stderr
    );
    // The label takes effect: a privileged pod is refused in that namespace.
    let privileged = serde_json::json!({
        "containers": [{
            "name": "root",
            "image": "busybox",
            "securityContext": {"privileged": true},
        }],
    });
    let out = dry_run_pod(cp, "privileged-psa", &privileged);
    assert!(
        !out.success && out.stderr.contains("violates PodSecurity \"restricted"),
        "a privileged pod was not refused by Pod Security admission: {}{}",
        out.stdout,
        out.stderr
    );
}

/// A GPU reservation's container writes the device it was given on its own pod, in the
/// operator's namespace: it may read and patch pods there, and nothing else.
#[test]
fn reservation_service_account_can_report_its_device_and_no_more() {
    let cp = ControlPlane::shared();
    install_rbac(cp);
    for verb in ["get", "patch"] {
        assert!(
            can(cp, RESERVATION_SA, &[verb, "pods", "-n", NS]),
            "{verb} pods in {NS}"
        );
    }
    for args in [
        &["patch", "pods", "-n", "default"][..],
        &["create", "pods", "-n", NS],
        &["delete", "pods", "-n", NS],
        &["list", "pods", "-n", NS],
        &["get", "secrets", "-n", NS],
        &["patch", "nodes"],
    ] {
        assert!(!can(cp, RESERVATION_SA, args), "{args:?} is allowed");
    }
}

/// Whether `who` may do it, as `kubectl auth can-i` answers.
fn can(cp: &ControlPlane, who: &str, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let who = format!("--as={who}");
    all.push(&who);
    let out = cp.kubectl(&all).expect("kubectl runs");
    match out.stdout.trim() {
        "yes" => true,
        "no" => false,
        other => panic!("kubectl auth can-i {args:?}: {other:?} {}", out.stderr),
    }
}

/// What the admin guide tells a platform team to grant: `edit` in a team's namespace (which
/// kubetrain's aggregated role extends to TrainingJobs) and `kubetrain-queue-reader` bound
/// cluster-wide to the team's group. A member then manages TrainingJobs in the namespace and
/// reads Queues and VirtualClusters, and no more.
#[test]
fn a_team_uses_trainingjobs_and_reads_queues_through_the_documented_bindings() {
    let cp = ControlPlane::shared();
    install_rbac(cp);
    let ns = format!("team-rbac-{}", std::process::id());
    let group = ns.clone();
    cp.kubectl_ok(&["create", "namespace", &ns])
        .expect("namespace");
    cp.kubectl_ok(&[
        "create",
        "rolebinding",
        "team-edit",
        "-n",
        &ns,
        "--clusterrole=edit",
        &format!("--group={group}"),
    ])
    .expect("rolebinding");
    let binding = format!("{ns}-queues");
    cp.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        &binding,
        "--clusterrole=kubetrain-queue-reader",
        &format!("--group={group}"),
    ])
    .expect("clusterrolebinding");
    let member = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let group = format!("--as-group={group}");
        all.extend_from_slice(&["--as=alice", &group]);
        let out = cp.kubectl(&all).expect("kubectl runs");
        out.stdout.trim() == "yes"
    };
    // The aggregation controller adds kubetrain's rules to `edit` shortly after they exist.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !member(&["create", "trainingjobs.kubetrain.io", "-n", &ns]) {
        assert!(
            std::time::Instant::now() < deadline,
            "edit in {ns} does not cover TrainingJobs"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert!(member(&["delete", "trainingjobs.kubetrain.io", "-n", &ns]));
    assert!(member(&["list", "queues.kubetrain.io"]));
    assert!(member(&["get", "virtualclusters.kubetrain.io"]));
    assert!(!member(&["create", "queues.kubetrain.io"]));
    assert!(!member(&["patch", "virtualclusters.kubetrain.io"]));
    assert!(!member(&[
        "list",
        "trainingjobs.kubetrain.io",
        "-n",
        "default"
    ]));
    let _ = cp.kubectl(&["delete", "clusterrolebinding", &binding]);
    let _ = cp.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
}

#[test]
fn operator_service_account_can_do_what_the_code_does() {
    let cp = ControlPlane::shared();
    install_rbac(cp);
    let team = "team-anything";
    let allowed: &[&[&str]] = &[
        // caches
        &["list", "nodes"],
        &["watch", "nodes"],
        &["list", "namespaces"],
        &["watch", "namespaces"],
        &["list", "persistentvolumeclaims", "--all-namespaces"],
        &["watch", "persistentvolumeclaims", "--all-namespaces"],
        &["list", "persistentvolumes"],
        &["watch", "persistentvolumes"],
        &["list", "priorityclasses.scheduling.k8s.io"],
        &["watch", "priorityclasses.scheduling.k8s.io"],
        &["list", "pods", "--all-namespaces"],
        &["watch", "pods", "--all-namespaces"],
        &["list", "trainingjobs.kubetrain.io", "--all-namespaces"],
        &["watch", "trainingjobs.kubetrain.io", "--all-namespaces"],
        &["list", "queues.kubetrain.io"],
        &["watch", "queues.kubetrain.io"],
        &["list", "virtualclusters.kubetrain.io"],
        &["watch", "virtualclusters.kubetrain.io"],
        // a job's Queue or VirtualCluster the caches have not seen yet (trainingjob.rs)
        &["get", "queues.kubetrain.io"],
        &["get", "virtualclusters.kubetrain.io"],
        // gangs
        &["create", "pods", "-n", team],
        &["patch", "pods", "-n", team],
        &["delete", "pods", "-n", team],
        &["create", "services", "-n", team],
        &["delete", "services", "-n", team],
        &["create", "poddisruptionbudgets.policy", "-n", team],
        &["delete", "poddisruptionbudgets.policy", "-n", team],
        // an object of the gang's name that exists already: read, and adopted when it has
        // no owner (scheduler.rs create_pod, create_owned)
        &["get", "pods", "-n", team],
        &["get", "services", "-n", team],
        &["patch", "services", "-n", team],
        &["get", "poddisruptionbudgets.policy", "-n", team],
        &["patch", "poddisruptionbudgets.policy", "-n", team],
        // status, finalizer, TTL
        &[
            "patch",
            "trainingjobs.kubetrain.io",
            "--subresource=status",
            "-n",
            team,
        ],
        &["patch", "queues.kubetrain.io", "--subresource=status"],
        &[
            "patch",
            "virtualclusters.kubetrain.io",
            "--subresource=status",
        ],
        &["patch", "queues.kubetrain.io"],
        &["patch", "virtualclusters.kubetrain.io"],
        &["delete", "trainingjobs.kubetrain.io", "-n", team],
        // events (jobs in their namespace; cluster-scoped kinds in default)
        &["create", "events.events.k8s.io", "-n", team],
        &["patch", "events.events.k8s.io", "-n", team],
        &["create", "events.events.k8s.io", "-n", "default"],
        // leader election
        &["create", "leases.coordination.k8s.io", "-n", NS],
        &[
            "get",
            "leases.coordination.k8s.io/kubetrain-operator",
            "-n",
            NS,
        ],
        &[
            "update",
            "leases.coordination.k8s.io/kubetrain-operator",
            "-n",
            NS,
        ],
        // the workload history, by server-side apply
        &["create", "configmaps", "-n", NS],
        &["get", "configmaps/kubetrain-workload-history", "-n", NS],
        &["patch", "configmaps/kubetrain-workload-history", "-n", NS],
        // the history of run times, the same way
        &["get", "configmaps/kubetrain-duration-history", "-n", NS],
        &["patch", "configmaps/kubetrain-duration-history", "-n", NS],
        // startup check
        &[
            "get",
            "customresourcedefinitions.apiextensions.k8s.io/trainingjobs.kubetrain.io",
        ],
        &[
            "get",
            "customresourcedefinitions.apiextensions.k8s.io/queues.kubetrain.io",
        ],
        &[
            "get",
            "customresourcedefinitions.apiextensions.k8s.io/virtualclusters.kubetrain.io",
        ],
    ];
    let missing: Vec<String> = allowed
        .iter()
        .filter(|a| !can(cp, OPERATOR_SA, a))
        .map(|a| a.join(" "))
        .collect();
    assert!(missing.is_empty(), "the operator cannot: {missing:#?}");
}

#[test]
fn operator_service_account_can_do_nothing_more() {
    let cp = ControlPlane::shared();
    install_rbac(cp);
    let team = "team-anything";
    let refused: &[&[&str]] = &[
        &["*", "*"],
        &["get", "secrets", "-n", team],
        &["list", "secrets", "--all-namespaces"],
        &["get", "secrets", "-n", NS],
        &["list", "configmaps", "-n", team],
        &["list", "configmaps", "-n", NS],
        &["get", "configmaps/kube-root-ca.crt", "-n", NS],
        &["patch", "configmaps/someone-else", "-n", NS],
        &["create", "configmaps", "-n", team],
        &["get", "nodes"],
        &["patch", "nodes"],
        &["update", "nodes"],
        &["delete", "nodes"],
        &["create", "nodes"],
        &["update", "pods", "-n", team],
        &["create", "pods", "--subresource=exec", "-n", team],
        &["get", "pods", "--subresource=log", "-n", team],
        &["create", "pods", "--subresource=eviction", "-n", team],
        &["update", "services", "-n", team],
        &["create", "events", "-n", team],
        &["delete", "events.events.k8s.io", "-n", team],
        &["create", "leases.coordination.k8s.io", "-n", "default"],
        &["create", "leases.coordination.k8s.io", "-n", "kube-system"],
        &[
            "get",
            "leases.coordination.k8s.io/kubetrain-operator",
            "-n",
            "default",
        ],
        &[
            "update",
            "leases.coordination.k8s.io/kube-controller-manager",
            "-n",
            "kube-system",
        ],
        &[
            "update",
            "leases.coordination.k8s.io/someone-else",
            "-n",
            NS,
        ],
        &[
            "delete",
            "leases.coordination.k8s.io/kubetrain-operator",
            "-n",
            NS,
        ],
        // the spec is the user's
        &["create", "trainingjobs.kubetrain.io", "-n", team],
        &["update", "trainingjobs.kubetrain.io", "-n", team],
        &["patch", "trainingjobs.kubetrain.io", "-n", team],
        &["update", "virtualclusters.kubetrain.io"],
        &["update", "queues.kubetrain.io"],
        &["create", "queues.kubetrain.io"],
        &["delete", "queues.kubetrain.io"],
        &["delete", "virtualclusters.kubetrain.io"],
        &[
            "update",
            "trainingjobs.kubetrain.io",
            "--subresource=status",
            "-n",
            team,
        ],
        &["list", "customresourcedefinitions.apiextensions.k8s.io"],
        &[
            "get",
            "customresourcedefinitions.apiextensions.k8s.io/certificates.cert-manager.io",
        ],
        &[
            "update",
            "customresourcedefinitions.apiextensions.k8s.io/trainingjobs.kubetrain.io",
        ],
        &["create", "deployments.apps", "-n", team],
        &["create", "clusterrolebindings.rbac.authorization.k8s.io"],
        &["bind", "clusterroles.rbac.authorization.k8s.io"],
        &["escalate", "clusterroles.rbac.authorization.k8s.io"],
        &["impersonate", "users"],
        &[
            "create",
            "serviceaccounts",
            "--subresource=token",
            "-n",
            team,
        ],
    ];
    let granted: Vec<String> = refused
        .iter()
        .filter(|a| can(cp, OPERATOR_SA, a))
        .map(|a| a.join(" "))
        .collect();
    assert!(
        granted.is_empty(),
        "the operator may do more than it needs: {granted:#?}"
    );

    // The labeler may read and patch Nodes, nothing else.
    assert!(can(cp, LABELER_SA, &["get", "nodes"]));
    assert!(can(cp, LABELER_SA, &["patch", "nodes"]));
    for a in [
        &["delete", "nodes"][..],
        &["list", "secrets", "--all-namespaces"],
        &["create", "pods", "-n", team],
        &[
            "patch",
            "trainingjobs.kubetrain.io",
            "--subresource=status",
            "-n",
            team,
        ],
    ] {
        assert!(!can(cp, LABELER_SA, a), "the labeler may {a:?}");
    }
}

/// A client that acts as the operator's service account (impersonated by the admin).
async fn service_account_client(cp: &ControlPlane) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(cp.kubeconfig()).expect("kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("client config");
    kubetrain::controller::context::identify(&mut config);
    config.auth_info.impersonate = Some(OPERATOR_SA.into());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{NS}"),
        "system:authenticated".into(),
    ]);
    kube::Client::try_from(config).expect("client")
}

/// Runs the operator as it runs in the Deployment: its Lease in kubetrain-system, every API
/// call under the service account.
fn start_operator(cp: &'static ControlPlane) -> tokio::sync::oneshot::Sender<()> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let client = service_account_client(cp).await;
            let mut config = kubetrain_e2e::operator::test_config("kubetrain-operator-sa");
            config.leader.namespace = NS.into();
            tokio::select! {
                r = kubetrain::controller::run(client, config) => {
                    if let Err(e) = r { eprintln!("operator stopped: {e}"); }
                }
                _ = rx => {}
            }
        });
        rt.shutdown_background();
    });
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_runs_under_its_service_account() {
    const T: Duration = Duration::from_secs(60);
    let s = Scenario::without_operator("deploy-sa", 1, 8, 1).await;
    install_rbac(s.cp);
    let stop = start_operator(s.cp);

    let owner = s.tenant("owner", 8, "FIFO", "");
    let borrower = s.tenant("borrower", 0, "FIFO", "");
    // A borrower (two replicas of 4 GPUs) on the owner's idle GPUs; the owner reclaims them;
    // the borrower is asked to checkpoint (pod patch), acknowledges, and its pods are deleted.
    s.cp.apply(&s.job(
        "borrow",
        &borrower,
        2,
        4,
        &[("run-seconds", "8"), ("checkpoint-delay-seconds", "1")],
        "  checkpoint:\n    gracePeriodSeconds: 30\n",
    ));
    s.wait_phase("borrow", "Running", T).await;
    s.cp.apply(&s.job(
        "own",
        &owner,
        1,
        8,
        &[("run-seconds", "1")],
        "  ttlSecondsAfterFinished: 3\n",
    ));
    s.wait_phase("own", "Succeeded", T).await;
    // The owner's one replica needs no Service (read while the job still exists: its TTL
    // deletes it, and the garbage collector anything it owned, 3 s after it succeeded).
    assert_eq!(s.job_status("own", "{.metadata.name}"), "own");
    // The borrower's two replicas find rank 0 through the job's headless Service.
    let services =
        s.cp.jsonpath(&["services", "-n", &s.ns], "{.items[*].metadata.name}");
    assert!(
        services.split_whitespace().any(|n| n == "borrow")
            && !services.split_whitespace().any(|n| n == "own"),
        "services: {services}"
    );
    assert_eq!(
        s.job_status("borrow", "{.status.preemptions}"),
        "1",
        "{}",
        s.job_status("borrow", "{.status}")
    );
    s.wait_phase("borrow", "Succeeded", T).await;

    // Status of all three kinds, events, the finalizer, the Service's release, the Lease.
    assert!(
        !s.cp
            .jsonpath(&["vc", &owner], "{.status.conditions}")
            .is_empty(),
        "VirtualCluster status"
    );
    assert!(
        !s.cp
            .jsonpath(&["queue", &owner], "{.status.conditions}")
            .is_empty(),
        "Queue status"
    );
    assert_eq!(
        s.cp.jsonpath(&["queue", &owner], "{.metadata.finalizers[0]}"),
        "kubetrain.io/queue-jobs"
    );
    assert_eq!(
        s.cp.jsonpath(&["vc", &owner], "{.metadata.finalizers[0]}"),
        "kubetrain.io/virtualcluster-jobs"
    );
    // The finalizer's patch names no field manager: the API server takes the User-Agent's.
    let managers =
        s.cp.jsonpath(&["queue", &owner], "{.metadata.managedFields[*].manager}");
    assert!(
        !managers.split_whitespace().any(|m| m == "unknown")
            && managers.split_whitespace().any(|m| m == "kubetrain"),
        "the Queue's field managers: {managers}"
    );
    let events = s.event_reasons("borrow");
    assert!(
        events.iter().any(|e| e == "Preempting"),
        "events: {events:?}"
    );
    // The borrower's headless Service and budget (seen above while it waited) go once it
    // has finished: the service account may delete them.
    ControlPlane::eventually(
        "the finished borrower's Service and budget to go",
        T,
        || {
            let left = s.cp.kubectl_ok(&[
                "get",
                "services,poddisruptionbudgets",
                "-n",
                &s.ns,
                "-l",
                "kubetrain.io/job=borrow",
                "-o",
                "name",
            ]);
            async move { left.ok().filter(|l| l.trim().is_empty()).map(|_| ()) }
        },
    )
    .await;
    assert_eq!(s.job_status("borrow", "{.metadata.name}"), "borrow");

    assert_eq!(
        s.cp.jsonpath(
            &["lease", "kubetrain-operator", "-n", NS],
            "{.spec.holderIdentity}"
        ),
        "kubetrain-operator-sa"
    );
    // ttlSecondsAfterFinished: the operator deletes the finished job.
    ControlPlane::eventually(
        "the finished job to be deleted after its TTL",
        T,
        || async {
            s.cp.jsonpath(&["tj", "own", "-n", &s.ns], "{.metadata.name}")
                .is_empty()
                .then_some(())
        },
    )
    .await;

    let _ = stop.send(());
    // The Queues' and VirtualClusters' finalizers are the operator's; with it stopped,
    // remove them by hand (docs/admin-guide.md, "Uninstall"), and both kinds go.
    for q in [&owner, &borrower] {
        for kind in ["queue", "vc"] {
            s.cp.kubectl_ok(&[
                "patch",
                kind,
                q,
                "--type=merge",
                "-p",
                "{\"metadata\":{\"finalizers\":null}}",
            ])
            .unwrap_or_else(|e| panic!("remove the finalizer of {kind} {q}: {e:?}"));
            s.cp.kubectl_ok(&["delete", kind, q, "--timeout=30s"])
                .unwrap_or_else(|e| panic!("delete {kind} {q}: {e:?}"));
        }
    }
    s.finish().await;
}

/// The user guide's example (a TrainingJob and the RBAC its pods need to acknowledge a
/// checkpoint) is valid for the API server and the CRD schema.
#[test]
fn docs_example_passes_a_server_side_dry_run() {
    let cp = ControlPlane::shared();
    let ns = "team-nlp";
    let out = cp
        .kubectl_stdin(&["apply", "-f", "-"], &format!("{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{ns}\"}}}}"))
        .expect("kubectl runs");
    assert!(out.success, "namespace {ns}: {}", out.stderr);
    let out = cp
        .kubectl(&[
            "apply",
            "--dry-run=server",
            "-f",
            "docs/examples/trainingjob-ddp.yaml",
        ])
        .expect("kubectl runs");
    assert!(
        out.success,
        "docs/examples/trainingjob-ddp.yaml:\n{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("trainingjob.kubetrain.io/llm"),
        "{}",
        out.stdout
    );
}
