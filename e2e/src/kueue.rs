//! Kueue as a peer of the control-plane benchmark (Setup C): its manager, built from the
//! Go module pinned in `e2e/kueue/go.mod` by `e2e/scripts/install-kueue.sh`, run as a
//! process against the test control plane, with its CRDs and a ClusterQueue/LocalQueue that
//! equal a kubetrain VirtualCluster/Queue.
//!
//! Run the way Kueue's own performance harness runs it: no admission webhooks registered with
//! the API server (so Jobs are created already `suspend: true` with the
//! `kueue.x-k8s.io/queue-name` label, as Kueue's defaulting webhook would leave them), no leader
//! election, no internal certificate management, and no client rate limit (`qps: -1`, as
//! kubetrain's client has none). The manager still serves its webhook and metrics endpoints,
//! which need a certificate: a throw-away self-signed one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::ControlPlane;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kueue is not built: {0} is missing (`make bench` runs e2e/scripts/install-kueue.sh)")]
    NotBuilt(PathBuf),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Cluster(#[from] crate::Error),
    #[error("openssl: {0}")]
    Openssl(String),
    #[error("timed out waiting for {0}")]
    Timeout(String),
    #[error("the Kueue manager exited: {0}")]
    Exited(String),
}

/// Where Kueue's manager reads its metrics certificate when it does not manage its own
/// certificates: a path its `main` fixes, not a setting.
const METRICS_CERTS: &str = "/etc/kueue/metrics/certs";

/// A running Kueue manager; stopped when dropped.
pub struct Kueue {
    child: Child,
    dir: PathBuf,
}

impl Kueue {
    /// Applies Kueue's CRDs and starts its manager against `cp`, for the `batch/job`
    /// integration only.
    pub fn start(cp: &ControlPlane) -> Result<Kueue, Error> {
        let bin = crate::cache_dir().unwrap_or_default().join("bin");
        let exe = bin.join("kueue");
        let crds = bin.join("kueue-crds");
        for p in [&exe, &crds] {
            if !p.exists() {
                return Err(Error::NotBuilt(p.clone()));
            }
        }
        cp.apply_crds_from(
            &crds,
            &[
                "crd/workloads.kueue.x-k8s.io",
                "crd/clusterqueues.kueue.x-k8s.io",
                "crd/localqueues.kueue.x-k8s.io",
                "crd/resourceflavors.kueue.x-k8s.io",
            ],
        )?;
        let _ = cp.kubectl(&["create", "namespace", "kueue-system"]);

        let dir = std::env::temp_dir().join(format!("kubetrain-kueue-{}", std::process::id()));
        let certs = dir.join("certs");
        std::fs::create_dir_all(&certs)?;
        self_signed(&certs)?;
        if !Path::new(METRICS_CERTS).join("tls.crt").exists() {
            std::fs::create_dir_all(METRICS_CERTS)?;
            for f in ["tls.crt", "tls.key"] {
                std::fs::copy(certs.join(f), Path::new(METRICS_CERTS).join(f))?;
            }
        }
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: \"0\"
metrics:
  bindAddress: \"0\"
webhook:
  host: 127.0.0.1
  port: {port}
  certDir: {certs}
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: -1
  burst: 100
integrations:
  frameworks: [\"batch/job\"]
",
                port = free_port()?,
                certs = certs.display(),
            ),
        )?;
        let log = std::fs::File::create(dir.join("kueue.log"))?;
        let mut child = Command::new(&exe)
            .arg(format!("--config={}", config.display()))
            .arg("--feature-gates=VisibilityOnDemand=false")
            .arg(format!("--kubeconfig={}", cp.kubeconfig().display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        // Give it a moment to fail on its configuration rather than silently later.
        std::thread::sleep(Duration::from_secs(2));
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(dir.join("kueue.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            return Err(Error::Exited(format!(
                "{status}: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        Ok(Kueue { child, dir })
    }

    /// A ResourceFlavor, a ClusterQueue with `gpus` GPUs of nominal quota and a LocalQueue
    /// `queue` in `namespace`: the equal of a kubetrain VirtualCluster with that guarantee and
    /// one FIFO Queue.
    pub fn queue(
        &self,
        cp: &ControlPlane,
        namespace: &str,
        queue: &str,
        gpus: u32,
    ) -> Result<(), Error> {
        let cq = format!("{namespace}-{queue}");
        let manifest = format!(
            "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {cq}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {cq}}}
spec:
  namespaceSelector: {{}}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: {cq}
      resources:
      - name: nvidia.com/gpu
        nominalQuota: {gpus}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {queue}, namespace: {namespace}}}
spec: {{clusterQueue: {cq}}}
"
        );
        let out = cp.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &manifest)?;
        if !out.success {
            return Err(crate::Error::Kubectl {
                args: "apply Kueue queues".into(),
                stderr: out.stderr,
            }
            .into());
        }
        // The LocalQueue is usable once Kueue reports it active.
        eventually("the LocalQueue active", || {
            cp.kubectl_ok(&[
                "get",
                "localqueue",
                "-n",
                namespace,
                queue,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Active\")].status}",
            ])
            .is_ok_and(|s| s.trim() == "True")
        })?;
        Ok(())
    }

    /// The manager's CPU time so far (user + system) in seconds, and its peak resident memory
    /// in MiB, from /proc.
    pub fn usage(&self) -> (f64, f64) {
        crate::process::usage(self.child.id())
    }

    /// Where the manager's log is.
    pub fn log(&self) -> PathBuf {
        self.dir.join("kueue.log")
    }
}

impl Drop for Kueue {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn self_signed(dir: &Path) -> Result<(), Error> {
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(dir.join("tls.key"))
        .arg("-out")
        .arg(dir.join("tls.crt"))
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Openssl(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }
}

/// Polls `ok` every 200 ms for up to 60 s.
fn eventually(what: &str, mut ok: impl FnMut() -> bool) -> Result<(), Error> {
    for _ in 0..300 {
        if ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(Error::Timeout(what.to_string()))
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
