use std::process::Command;

use crate::control_plane::{ControlPlane, Error};

/// What a kubectl run printed.
#[derive(Debug, Clone)]
pub struct KubectlOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl ControlPlane {
    /// Runs the real kubectl against this control plane.
    pub fn kubectl(&self, args: &[&str]) -> Result<KubectlOutput, Error> {
        let out = Command::new(self.kubectl_path())
            .args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .current_dir(crate::repo_root())
            .output()?;
        Ok(KubectlOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs kubectl and returns its stdout, or an error with its stderr.
    pub fn kubectl_ok(&self, args: &[&str]) -> Result<String, Error> {
        let out = self.kubectl(args)?;
        if out.success {
            Ok(out.stdout)
        } else {
            Err(Error::Kubectl { args: args.join(" "), stderr: out.stderr })
        }
    }
}
