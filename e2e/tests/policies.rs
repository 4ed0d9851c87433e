//! The optional admission policies of `config/policies`, enforced by a real kube-apiserver:
//! `kubetrain-user-is-submitter` makes a TrainingJob's `spec.user` name whoever submits it,
//! except for the submitters its ConfigMap trusts. Its own test binary (its own API server):
//! the policy applies to every TrainingJob of the cluster.

use std::time::{Duration, Instant};

use kubetrain_e2e::{ControlPlane, KubectlOutput};

const GITOPS: &str = "system:serviceaccount:gitops:applier";

fn job(ns: &str, name: &str, user: Option<&str>) -> String {
    let user = user.map_or(String::new(), |u| format!("  user: {u}\n"));
    format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{user}  tasks:\n  - name: worker\n    replicas: 1\n    template:\n      spec:\n        containers:\n        - name: trainer\n          image: trainer:latest\n"
    )
}

/// `kubectl <args> -f -` of `manifest` as `who` (None: the admin).
fn as_user(cp: &ControlPlane, who: Option<&str>, args: &[&str], manifest: &str) -> KubectlOutput {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(["-f".into(), "-".into()]);
    if let Some(who) = who {
        all.push(format!("--as={who}"));
    }
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    cp.kubectl_stdin(&all, manifest).expect("kubectl runs")
}

/// A server-side dry-run create: admission policies run on it as on a real create.
fn try_create(cp: &ControlPlane, who: Option<&str>, ns: &str, user: Option<&str>) -> KubectlOutput {
    as_user(
        cp,
        who,
        &["create", "--dry-run=server"],
        &job(ns, "probe", user),
    )
}

/// Waits until `check` holds: a new policy or parameter takes a moment to take effect.
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn spec_user_must_name_the_submitter_unless_the_submitter_is_trusted() {
    let cp = ControlPlane::shared();
    let ns = format!("policy-{}", std::process::id());
    cp.kubectl_ok(&["create", "namespace", &ns])
        .expect("namespace");
    let system = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kubetrain-system"}}"#;
    assert!(
        as_user(cp, None, &["apply"], system).success,
        "namespace kubetrain-system"
    );
    // Users who may manage TrainingJobs in the namespace, and a GitOps service account.
    cp.kubectl_ok(&[
        "create",
        "role",
        "jobs",
        "-n",
        &ns,
        "--verb=get,create,update,patch",
        "--resource=trainingjobs.kubetrain.io",
    ])
    .expect("role");
    cp.kubectl_ok(&[
        "create",
        "rolebinding",
        "jobs",
        "-n",
        &ns,
        "--role=jobs",
        "--user=alice",
        "--user=carol",
        &format!("--user={GITOPS}"),
    ])
    .expect("rolebinding");
    // Before the policy, anyone's job may name anyone.
    assert!(try_create(cp, Some("alice"), &ns, Some("bob")).success);
    cp.kubectl_ok(&["apply", "-k", "config/policies"])
        .expect("apply config/policies");

    // A job for someone else is refused, naming the field and who submits.
    eventually("the policy to refuse alice's job for bob", || {
        !try_create(cp, Some("alice"), &ns, Some("bob")).success
    });
    let out = try_create(cp, Some("alice"), &ns, Some("bob"));
    assert!(
        out.stderr
            .contains("spec.user must be the submitter, alice, not bob"),
        "{}",
        out.stderr
    );
    let out = try_create(cp, Some("alice"), &ns, None);
    assert!(
        !out.success && out.stderr.contains("(it is unset)"),
        "{}",
        out.stderr
    );
    assert!(try_create(cp, Some("alice"), &ns, Some("alice")).success);
    // Cluster admins (system:masters) may submit for anyone, as the ConfigMap ships.
    assert!(try_create(cp, None, &ns, Some("bob")).success);

    // A GitOps controller may once the ConfigMap lists it.
    assert!(!try_create(cp, Some(GITOPS), &ns, Some("bob")).success);
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "kubetrain-user-policy",
        "-n",
        "kubetrain-system",
        "--type=merge",
        "-p",
        &format!("{{\"data\":{{\"submitters\":\"someone, {GITOPS}\"}}}}"),
    ])
    .expect("list the GitOps submitter");
    eventually("the GitOps controller to be trusted", || {
        try_create(cp, Some(GITOPS), &ns, Some("bob")).success
    });

    // Updates that leave spec.user alone pass, whoever makes them; changing it, only to
    // oneself.
    let created = as_user(
        cp,
        Some("alice"),
        &["create"],
        &job(&ns, "mine", Some("alice")),
    );
    assert!(created.success, "{}", created.stderr);
    let label = cp
        .kubectl(&[
            "label",
            "tj",
            "mine",
            "-n",
            &ns,
            "reviewed=yes",
            "--as=carol",
        ])
        .expect("kubectl runs");
    assert!(label.success, "{}", label.stderr);
    let to = |user: &str| {
        cp.kubectl(&[
            "patch",
            "tj",
            "mine",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            &format!("{{\"spec\":{{\"user\":\"{user}\"}}}}"),
            "--as=carol",
        ])
        .expect("kubectl runs")
    };
    let dave = to("dave");
    assert!(
        !dave.success
            && dave
                .stderr
                .contains("spec.user must be the submitter, carol"),
        "{}",
        dave.stderr
    );
    assert!(to("carol").success);
    let _ = cp.kubectl(&["delete", "-k", "config/policies", "--wait=false"]);
    let _ = cp.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
}
