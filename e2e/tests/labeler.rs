//! The node labeler against a real kube-apiserver: the `kubetrain-node-labeler` binary, run
//! with `--once` and a `--topology-file` standing in for NVML, publishes on a Node the way it
//! does in the DaemonSet. Checks: what it publishes, that publishing the same thing again
//! writes nothing, that labels of other managers are left alone, and that its own labels
//! and annotation disappear when they no longer apply.

use std::path::{Path, PathBuf};
use std::process::Command;

use kubetrain::api::{NodeTopology, TOPOLOGY_ANNOTATION};
use kubetrain_e2e::{ControlPlane, repo_root};
use serde_json::Value;

/// Builds (if needed) and returns the labeler binary of this workspace.
fn labeler_binary() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .current_dir(repo_root())
        .args([
            "build",
            "--quiet",
            "-p",
            "kubetrain-node-labeler",
            "--bin",
            "kubetrain-node-labeler",
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the labeler failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("debug/kubetrain-node-labeler")
}

struct Run {
    success: bool,
    log: String,
}

/// One `--once` publish of `file` on `node`; the log says whether it wrote.
fn publish(cp: &ControlPlane, binary: &Path, node: &str, file: &Path) -> Run {
    let out = Command::new(binary)
        .env("KUBECONFIG", cp.kubeconfig())
        .env("RUST_LOG", "info")
        .args([
            "--once",
            "--log-format",
            "json",
            "--node-name",
            node,
            "--topology-file",
        ])
        .arg(file)
        .output()
        .expect("labeler runs");
    Run {
        success: out.status.success(),
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn node_json(cp: &ControlPlane, node: &str) -> Value {
    let out = cp
        .kubectl_ok(&["get", "node", node, "-o", "json"])
        .expect("get node");
    serde_json::from_str(&out).expect("node JSON")
}

fn label<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
    node["metadata"]["labels"][key].as_str()
}

/// Our field manager's entry in managedFields (time and fields), to show it did not write.
fn our_entry(node: &Value) -> Value {
    node["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == "kubetrain-node-labeler")
        .cloned()
        .unwrap_or(Value::Null)
}

const TWO_A100: &str = r#"{
  "driverVersion": "535.104.12",
  "cudaVersion": "12.2",
  "gpus": [
    {"index": 0, "uuid": "GPU-0", "product": "NVIDIA A100-SXM4-80GB", "memoryMib": 81920,
     "computeCapability": "8.0", "numaNode": 0},
    {"index": 1, "uuid": "GPU-1", "product": "NVIDIA A100-SXM4-80GB", "memoryMib": 81920,
     "computeCapability": "8.0", "numaNode": 0}
  ],
  "pairs": [{"a": 0, "b": 1, "nvlinks": 12, "pcie": "system"}]
}"#;

/// The same two GPUs, now without compute capability, NVLink or driver facts.
const TWO_PLAIN: &str = r#"{
  "gpus": [
    {"index": 0, "uuid": "GPU-0", "product": "NVIDIA A100-SXM4-80GB", "memoryMib": 81920},
    {"index": 1, "uuid": "GPU-1", "product": "NVIDIA A100-SXM4-80GB", "memoryMib": 81920}
  ],
  "pairs": [{"a": 0, "b": 1, "nvlinks": 0, "pcie": "system"}]
}"#;

#[test]
fn publishes_idempotently_leaves_others_alone_and_removes_what_no_longer_applies() {
    let cp = ControlPlane::shared();
    let binary = labeler_binary();
    let dir = std::env::temp_dir().join(format!("kubetrain-labeler-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write file");
        path
    };

    let node = format!("labeler-e2e-{}", std::process::id());
    let manifest = write(
        "node.yaml",
        &format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\n  labels:\n    team: vision\n    topology.kubernetes.io/rack: rack-3\n"
        ),
    );
    cp.kubectl_ok(&["create", "-f", &manifest.to_string_lossy()])
        .expect("create node");

    // 1. First publish: everything the inventory says.
    let a100 = write("a100.json", TWO_A100);
    let run = publish(cp, &binary, &node, &a100);
    assert!(run.success, "{}", run.log);
    assert!(run.log.contains("Applied"), "{}", run.log);
    let n = node_json(cp, &node);
    for (key, value) in [
        ("gpu.kubetrain.io/present", "true"),
        ("gpu.kubetrain.io/product", "NVIDIA-A100-SXM4-80GB"),
        ("gpu.kubetrain.io/count", "2"),
        ("gpu.kubetrain.io/memory-mib", "81920"),
        ("gpu.kubetrain.io/family", "ampere"),
        ("gpu.kubetrain.io/nvlink", "true"),
        ("gpu.kubetrain.io/driver", "535.104.12"),
        ("gpu.kubetrain.io/cuda", "12.2"),
        ("gpu.kubetrain.io/healthy-count", "2"),
        ("team", "vision"),
    ] {
        assert_eq!(label(&n, key), Some(value), "{key}");
    }
    let annotation = n["metadata"]["annotations"][TOPOLOGY_ANNOTATION]
        .as_str()
        .expect("topology annotation");
    let topology = NodeTopology::parse(annotation).expect("the operator can read it");
    assert_eq!(
        topology.rack.as_deref(),
        Some("rack-3"),
        "rack copied from the node label"
    );
    assert_eq!(topology.groups.len(), 1);
    assert!(topology.groups[0].nvlink);

    // 2. The same again: nothing to write.
    let before = our_entry(&n);
    let run = publish(cp, &binary, &node, &a100);
    assert!(run.success && run.log.contains("Unchanged"), "{}", run.log);
    assert_eq!(our_entry(&node_json(cp, &node)), before);

    // 3. Someone else changes their label: still nothing for us to write, and theirs stays.
    cp.kubectl_ok(&["label", "node", &node, "team=nlp", "--overwrite"])
        .expect("label");
    let run = publish(cp, &binary, &node, &a100);
    assert!(run.success && run.log.contains("Unchanged"), "{}", run.log);
    assert_eq!(label(&node_json(cp, &node), "team"), Some("nlp"));

    // 4. Facts disappear: their labels go, the rest is updated.
    let plain = write("plain.json", TWO_PLAIN);
    let run = publish(cp, &binary, &node, &plain);
    assert!(run.success && run.log.contains("Applied"), "{}", run.log);
    let n = node_json(cp, &node);
    for gone in [
        "gpu.kubetrain.io/family",
        "gpu.kubetrain.io/driver",
        "gpu.kubetrain.io/cuda",
    ] {
        assert_eq!(label(&n, gone), None, "{gone} should have been removed");
    }
    assert_eq!(label(&n, "gpu.kubetrain.io/nvlink"), Some("false"));
    assert_eq!(label(&n, "gpu.kubetrain.io/count"), Some("2"));
    assert_eq!(label(&n, "team"), Some("nlp"));

    // 5. No GPUs at all: only present=false, and no topology annotation.
    let none = write("none.json", r#"{"gpus": []}"#);
    let run = publish(cp, &binary, &node, &none);
    assert!(run.success, "{}", run.log);
    let n = node_json(cp, &node);
    let ours: Vec<_> = n["metadata"]["labels"]
        .as_object()
        .expect("labels")
        .iter()
        .filter(|(k, _)| k.starts_with("gpu.kubetrain.io/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        ours,
        vec![("gpu.kubetrain.io/present".to_string(), Value::from("false"))]
    );
    assert!(n["metadata"]["annotations"][TOPOLOGY_ANNOTATION].is_null());
    assert_eq!(label(&n, "team"), Some("nlp"));
    assert_eq!(label(&n, "topology.kubernetes.io/rack"), Some("rack-3"));

    // 6. A bad topology file is a misconfiguration: non-zero exit, nothing written.
    let bad = write("bad.json", r#"{"version": 99, "gpus": []}"#);
    let run = publish(cp, &binary, &node, &bad);
    assert!(
        !run.success,
        "an unknown document version must fail: {}",
        run.log
    );
    assert_eq!(our_entry(&node_json(cp, &node)), our_entry(&n));

    cp.kubectl_ok(&["delete", "node", &node])
        .expect("delete node");
    let _ = std::fs::remove_dir_all(&dir);
}
