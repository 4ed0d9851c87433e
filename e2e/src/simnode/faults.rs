//! Fault injection. A fault is an annotation on the Node, so a test, the CLI and `kubectl
//! annotate` can all inject one, and an agent that restarts keeps it:
//!
//! * `sim.kubetrain.io/node-fault: not-ready` — the kubelet reports `Ready=False` once and then
//!   stops renewing its Lease and status, as a hung kubelet would; the controller-manager taints
//!   the node `node.kubernetes.io/not-ready` within seconds, and marks it `Unknown` /
//!   `unreachable` once the 40 s grace has passed.
//! * `sim.kubetrain.io/node-fault: unreachable` — the kubelet just goes silent (Lease and status
//!   stop); the controller-manager notices after its 40 s grace.
//! * `sim.kubetrain.io/unhealthy-gpus: {"3":"XID 79"}` — those GPUs are published
//!   `healthy: false` with the reason in the topology annotation, the
//!   `gpu.kubetrain.io/healthy-count` label and `nvidia.com/gpu` allocatable drop by their
//!   number.
//!
//! Removing the annotations restores the node. Pods on a faulted node are frozen (no status
//! changes, no deletion handling) and left to the controller-manager, as on a real cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::Error;
use kubetrain::api::NodeTopology;

/// Node annotation naming a [`NodeFault`].
pub const NODE_FAULT_ANNOTATION: &str = "sim.kubetrain.io/node-fault";
/// Node annotation: JSON object from GPU index to the reason it is unhealthy.
pub const UNHEALTHY_GPUS_ANNOTATION: &str = "sim.kubetrain.io/unhealthy-gpus";

/// What is wrong with a whole node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeFault {
    /// `Ready=False` reported, then heartbeats stop.
    NotReady,
    /// Heartbeats stop silently.
    Unreachable,
}

impl NodeFault {
    /// The annotation value.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeFault::NotReady => "not-ready",
            NodeFault::Unreachable => "unreachable",
        }
    }

    /// Reads an annotation value.
    pub fn parse(s: &str) -> Option<NodeFault> {
        match s.trim() {
            "not-ready" => Some(NodeFault::NotReady),
            "unreachable" => Some(NodeFault::Unreachable),
            _ => None,
        }
    }
}

/// The faults injected into one node, read from its annotations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Whole-node fault.
    pub node: Option<NodeFault>,
    /// Unhealthy GPUs by index, with the reason.
    pub unhealthy_gpus: BTreeMap<u32, String>,
}

impl Faults {
    /// Reads the fault annotations of a node (malformed ones count as absent, with a warning).
    pub fn of(node: &Node) -> Faults {
        let annotations = node.metadata.annotations.as_ref();
        let get = |k: &str| annotations.and_then(|a| a.get(k));
        let node_fault = get(NODE_FAULT_ANNOTATION).and_then(|v| {
            let f = NodeFault::parse(v);
            if f.is_none() {
                tracing::warn!(value = %v, "ignoring unknown {NODE_FAULT_ANNOTATION}");
            }
            f
        });
        let unhealthy_gpus = get(UNHEALTHY_GPUS_ANNOTATION)
            .and_then(|v| match serde_json::from_str(v) {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!(value = %v, "ignoring malformed {UNHEALTHY_GPUS_ANNOTATION}: {e}");
                    None
                }
            })
            .unwrap_or_default();
        Faults {
            node: node_fault,
            unhealthy_gpus,
        }
    }

    /// The topology with the unhealthy GPUs marked.
    pub fn apply(&self, base: &NodeTopology) -> NodeTopology {
        let mut t = base.clone();
        for gpu in &mut t.gpus {
            if let Some(reason) = self.unhealthy_gpus.get(&gpu.index) {
                gpu.healthy = false;
                gpu.unhealthy_reason = Some(reason.clone());
            }
        }
        t
    }
}

fn patch_annotations(value: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Merge(json!({ "metadata": { "annotations": value } }))
}

/// Sets (`Some`) or clears (`None`) the whole-node fault of `node`.
pub async fn set_node_fault(
    client: &Client,
    node: &str,
    fault: Option<NodeFault>,
) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let value = fault.map(NodeFault::as_str);
    api.patch(
        node,
        &PatchParams::default(),
        &patch_annotations(json!({ NODE_FAULT_ANNOTATION: value })),
    )
    .await?;
    Ok(())
}

/// Marks GPU `gpu` of `node` unhealthy (`Some(reason)`) or healthy again (`None`).
pub async fn set_gpu_health(
    client: &Client,
    node: &str,
    gpu: u32,
    unhealthy: Option<&str>,
) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    // Read-modify-write of one annotation, guarded by resourceVersion.
    for _ in 0..10 {
        let current = api.get(node).await?;
        let mut faults = Faults::of(&current);
        match unhealthy {
            Some(reason) => faults.unhealthy_gpus.insert(gpu, reason.to_string()),
            None => faults.unhealthy_gpus.remove(&gpu),
        };
        let value = if faults.unhealthy_gpus.is_empty() {
            serde_json::Value::Null
        } else {
            json!(
                serde_json::to_string(&faults.unhealthy_gpus)
                    .map_err(|e| Error::Spec(e.to_string()))?
            )
        };
        let patch = Patch::Merge(json!({ "metadata": {
            "resourceVersion": current.metadata.resource_version,
            "annotations": { UNHEALTHY_GPUS_ANNOTATION: value },
        }}));
        match api.patch(node, &PatchParams::default(), &patch).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Timeout(format!(
        "node {node} kept changing while setting GPU {gpu} health"
    )))
}

/// Clears every fault of `node`.
pub async fn restore(client: &Client, node: &str) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    api.patch(
        node,
        &PatchParams::default(),
        &patch_annotations(json!({ NODE_FAULT_ANNOTATION: null, UNHEALTHY_GPUS_ANNOTATION: null })),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_faults_from_annotations() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n", "annotations": {
            NODE_FAULT_ANNOTATION: "not-ready", UNHEALTHY_GPUS_ANNOTATION: "{\"3\":\"XID 79\"}"
        }}}))
        .unwrap();
        let f = Faults::of(&node);
        assert_eq!(f.node, Some(NodeFault::NotReady));
        assert_eq!(f.unhealthy_gpus.get(&3).map(String::as_str), Some("XID 79"));
        let bad: Node = serde_json::from_value(json!({"metadata": {"name": "n", "annotations": {
            NODE_FAULT_ANNOTATION: "sleepy", UNHEALTHY_GPUS_ANNOTATION: "3"
        }}}))
        .unwrap();
        assert_eq!(Faults::of(&bad), Faults::default());
    }
}
