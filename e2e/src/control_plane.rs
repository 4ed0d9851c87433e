use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::repo_root;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("control plane did not start: {0}")]
    Start(String),
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error("kube client: {0}")]
    Kube(#[from] kube::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("kubectl {args}: {stderr}")]
    Kubectl { args: String, stderr: String },
}

/// A running control plane and how to reach it.
#[derive(Debug)]
pub struct ControlPlane {
    /// State directory (logs, kubeconfig); `None` for an external control plane.
    dir: Option<PathBuf>,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    /// Whether the operator's RBAC was applied ([`ControlPlane::operator_client`]).
    operator_rbac: OnceLock<Result<(), String>>,
}

/// The operator's namespace and service account, as `config/rbac` installs them.
pub const OPERATOR_NAMESPACE: &str = "kubetrain-system";
const OPERATOR_USER: &str = "system:serviceaccount:kubetrain-system:kubetrain-operator";

static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();

/// The processes `control-plane.sh` starts, by the names of their pid files.
const COMPONENTS: [&str; 4] = [
    "kube-apiserver",
    "etcd",
    "kube-controller-manager",
    "kube-scheduler",
];

impl ControlPlane {
    /// The control plane of this test binary, started on first use with the CRDs applied.
    ///
    /// Panics (failing the test with the reason) when it cannot start: a test that needs a
    /// real API server must not pass without one.
    pub fn shared() -> &'static ControlPlane {
        match SHARED.get_or_init(|| Self::start().map_err(|e| e.to_string())) {
            Ok(cp) => cp,
            Err(e) => panic!("no control plane: {e}"),
        }
    }

    fn start() -> Result<ControlPlane, Error> {
        let cache = crate::cache_dir()
            .ok_or_else(|| Error::Start("neither KUBETRAIN_CACHE nor HOME is set".into()))?;
        let kubectl = cache.join("bin/kubectl");
        if let Some(kc) = std::env::var_os("KUBETRAIN_KUBECONFIG") {
            let cp = ControlPlane {
                dir: None,
                kubeconfig: PathBuf::from(kc),
                kubectl,
                operator_rbac: OnceLock::new(),
            };
            cp.apply_crds()?;
            Ok(cp)
        } else {
            let base = std::env::temp_dir().join(format!("kubetrain-test-{}", std::process::id()));
            let script = repo_root().join("e2e/scripts/control-plane.sh");
            // The script applies the CRDs (and waits until they are established) before the
            // controller-manager starts, so that its garbage collector knows the kinds (and
            // deletes a deleted job's pods) from the start.
            let out = Command::new("bash")
                .env("KUBETRAIN_CRDS", repo_root().join("crds"))
                .arg(&script)
                .arg("up")
                .arg(&base)
                .arg("--owner-pid")
                .arg(std::process::id().to_string())
                .output()?;
            if !out.status.success() {
                return Err(Error::Start(
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                ));
            }
            Ok(ControlPlane {
                kubeconfig: base.join("kubeconfig"),
                dir: Some(base),
                kubectl,
                operator_rbac: OnceLock::new(),
            })
        }
    }

    fn apply_crds(&self) -> Result<(), Error> {
        self.apply_crds_from(
            &repo_root().join("crds"),
            &[
                "crd/trainingjobs.kubetrain.io",
                "crd/queues.kubetrain.io",
                "crd/virtualclusters.kubetrain.io",
            ],
        )
    }

    /// Applies the CRDs in `dir` server-side and waits until `crds` (`crd/<name>`) are
    /// established.
    pub fn apply_crds_from(&self, dir: &Path, crds: &[&str]) -> Result<(), Error> {
        self.kubectl_ok(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &dir.to_string_lossy(),
        ])?;
        // `kubectl wait` fails at once, instead of waiting, while a new CRD's status has no
        // conditions list yet; ask again until the API server has written one.
        let mut args = vec!["wait", "--for=condition=Established", "--timeout=60s"];
        args.extend_from_slice(crds);
        let mut attempts = 0;
        loop {
            match self.kubectl_ok(&args) {
                Ok(_) => return Ok(()),
                Err(e) if attempts >= 50 => return Err(e),
                Err(_) => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    /// CPU seconds used so far by each component this process started (kube-apiserver,
    /// etcd, kube-controller-manager, kube-scheduler), read from `/proc` through the pid
    /// files `control-plane.sh` writes; empty for a control plane started elsewhere. The
    /// difference of two readings is what a run cost the cluster besides its own process.
    pub fn component_cpu(&self) -> Vec<(&'static str, f64)> {
        let Some(dir) = self.dir.as_deref() else {
            return Vec::new();
        };
        COMPONENTS
            .iter()
            .filter_map(|&name| {
                let pid = std::fs::read_to_string(dir.join(format!("{name}.pid"))).ok()?;
                let pid: u32 = pid.trim().parse().ok()?;
                Some((name, crate::process::usage(pid).0))
            })
            .collect()
    }

    /// Path of the admin kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// State directory with the components' logs, when this process started them.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Path of the kubectl the tests use.
    pub fn kubectl_path(&self) -> &Path {
        &self.kubectl
    }

    /// A kube client with admin rights.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let kc = Kubeconfig::read_from(&self.kubeconfig).map_err(|source| Error::Kubeconfig {
            path: self.kubeconfig.clone(),
            source,
        })?;
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|source| Error::Kubeconfig {
                path: self.kubeconfig.clone(),
                source,
            })?;
        Ok(kube::Client::try_from(config)?)
    }

    /// A kube client with the operator's own rights: those `config/rbac` grants its service
    /// account (applied on first use), by impersonation. The tests run the operator with it,
    /// so a call the shipped RBAC forbids fails a test instead of a user's install (a pod
    /// read on the path of a leftover pod was one).
    pub async fn operator_client(&self) -> Result<kube::Client, Error> {
        self.operator_rbac
            .get_or_init(|| self.apply_operator_rbac().map_err(|e| e.to_string()))
            .clone()
            .map_err(Error::Start)?;
        let kc = Kubeconfig::read_from(&self.kubeconfig).map_err(|source| Error::Kubeconfig {
            path: self.kubeconfig.clone(),
            source,
        })?;
        let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|source| Error::Kubeconfig {
                path: self.kubeconfig.clone(),
                source,
            })?;
        config.auth_info.impersonate = Some(OPERATOR_USER.into());
        config.auth_info.impersonate_groups = Some(vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{OPERATOR_NAMESPACE}"),
            "system:authenticated".into(),
        ]);
        Ok(kube::Client::try_from(config)?)
    }

    /// The operator's namespace, service account and roles, as `kubectl apply -k
    /// config/rbac` installs them.
    fn apply_operator_rbac(&self) -> Result<(), Error> {
        let namespace = format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{OPERATOR_NAMESPACE}\"}}}}"
        );
        let out = self.kubectl_stdin(&["apply", "-f", "-"], &namespace)?;
        if !out.success {
            return Err(Error::Kubectl {
                args: format!("apply namespace {OPERATOR_NAMESPACE}"),
                stderr: out.stderr,
            });
        }
        self.kubectl_ok(&["apply", "-k", "config/rbac"])?;
        Ok(())
    }

    /// Creates a fresh namespace `<prefix>-<n>` for one test.
    pub async fn namespace(&self, prefix: &str) -> Result<String, Error> {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        let api: Api<Namespace> = Api::all(self.client().await?);
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name }
        }))
        .map_err(|e| Error::Start(e.to_string()))?;
        api.create(&PostParams::default(), &ns).await?;
        Ok(name)
    }

    /// Deletes a namespace (the namespace controller removes what is in it).
    pub async fn delete_namespace(&self, name: &str) -> Result<(), Error> {
        let api: Api<Namespace> = Api::all(self.client().await?);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits until `check` returns `Some`, polling every 100 ms, or panics after `timeout`
    /// with `what` in the message.
    pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(v) = check().await {
                return v;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
