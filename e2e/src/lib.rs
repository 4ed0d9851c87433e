//! Test tooling for kubetrain against a real local control plane.
//!
//! [`ControlPlane::shared`] starts etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler once per test binary (through `e2e/scripts/control-plane.sh`), applies the CRDs, and stops them
//! when the test process exits, however it exits. Each test takes its own namespace from
//! [`ControlPlane::namespace`]. Set `KUBETRAIN_KUBECONFIG` to use a control plane that is
//! already running (for example the one `make run` started) instead.

pub mod bench;
mod control_plane;
mod kubectl;
pub mod kueue;
pub mod operator;
pub mod process;
pub mod scenario;
pub mod simnode;

pub use control_plane::{ControlPlane, Error, OPERATOR_NAMESPACE};
pub use kubectl::KubectlOutput;
pub use operator::Operator;

/// The repository root (this crate lives in `<root>/e2e`).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| std::path::PathBuf::from(".."))
}

/// Where `e2e/scripts/install-*.sh` put their binaries: `$KUBETRAIN_CACHE`, else
/// `$HOME/.cache/kubetrain` (the scripts' rule).
pub fn cache_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("KUBETRAIN_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/kubetrain"))
        })
}

/// Appends one line of scenario timings to `target/e2e-timings.txt` (the Makefile prints
/// it after the tests, so regressions show) and to stderr.
pub fn timing(line: &str) {
    use std::io::Write;
    eprintln!("timing: {line}");
    let path = repo_root().join("target/e2e-timings.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}
