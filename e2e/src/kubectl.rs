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
            Err(Error::Kubectl {
                args: args.join(" "),
                stderr: out.stderr,
            })
        }
    }
}

impl ControlPlane {
    /// Runs kubectl with `input` on its standard input (for `apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Result<KubectlOutput, Error> {
        use std::io::Write;
        let mut child = Command::new(self.kubectl_path())
            .args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .current_dir(crate::repo_root())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        Ok(KubectlOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// `kubectl apply -f -` of a manifest; panics with kubectl's message when it fails.
    pub fn apply(&self, yaml: &str) -> String {
        let out = self
            .kubectl_stdin(&["apply", "-f", "-"], yaml)
            .expect("kubectl runs");
        assert!(out.success, "kubectl apply failed: {}\n{yaml}", out.stderr);
        out.stdout
    }

    /// `kubectl get ... -o jsonpath=...`, empty when the object does not exist.
    pub fn jsonpath(&self, args: &[&str], path: &str) -> String {
        let jp = format!("jsonpath={path}");
        let mut all: Vec<&str> = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", &jp]);
        self.kubectl(&all)
            .map(|o| if o.success { o.stdout } else { String::new() })
            .unwrap_or_default()
    }
}
