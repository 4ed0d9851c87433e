//! Publishing labels and the topology annotation on the labeler's own Node.
//!
//! Server-side apply with the field manager [`FIELD_MANAGER`], always with the full set of
//! what the labeler means to say: the API server then removes our labels that are no longer
//! in the set (we own them, and an apply that omits an owned field deletes it) and never
//! touches labels other managers own. Before writing, the labeler compares the Node it just
//! read with the desired set, including which keys our manager owns, and skips the write
//! when nothing would change — also right after a restart.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kubetrain::api::load::{LOAD_ANNOTATION, NodeLoad};
use kubetrain::api::{NodeTopology, TOPOLOGY_ANNOTATION};
use serde::Serialize;
use serde_json::json;

use crate::labels;

/// Field manager of every write the labeler makes, but the load annotation's.
pub const FIELD_MANAGER: &str = "kubetrain-node-labeler";
/// Field manager of the load annotation alone: its writes apply only that annotation, so
/// they neither carry nor disturb the labels and topology.
pub const LOAD_FIELD_MANAGER: &str = "kubetrain-node-labeler-load";

/// Labels and annotations the labeler wants on its Node, and nothing else.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct Desired {
    /// Our labels.
    pub labels: BTreeMap<String, String>,
    /// Our annotations (the topology, when there is one).
    pub annotations: BTreeMap<String, String>,
}

impl Desired {
    /// What to publish for a topology, or for no GPU information (`None`).
    pub fn new(topology: Option<&NodeTopology>) -> Desired {
        let mut annotations = BTreeMap::new();
        if let Some(t) = topology.filter(|t| !t.gpus.is_empty()) {
            annotations.insert(TOPOLOGY_ANNOTATION.to_string(), t.to_annotation());
        }
        Desired {
            labels: labels::labels(topology),
            annotations,
        }
    }

    /// The server-side apply body for the Node.
    pub fn apply_body(&self, node_name: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node_name,
                "labels": self.labels,
                "annotations": self.annotations,
            }
        })
    }

    /// True when the Node already carries exactly this: every desired value is there, and
    /// our field manager owns no other label or annotation (which an apply would remove).
    pub fn is_published_on(&self, node: &Node) -> bool {
        let (owned_labels, owned_annotations) = owned_keys(node);
        let meta = &node.metadata;
        let same = |want: &BTreeMap<String, String>, have: Option<&BTreeMap<String, String>>| {
            want.iter()
                .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
        };
        same(&self.labels, meta.labels.as_ref())
            && same(&self.annotations, meta.annotations.as_ref())
            && owned_labels == self.labels.keys().cloned().collect()
            && owned_annotations == self.annotations.keys().cloned().collect()
    }
}

/// Label and annotation keys our field manager owns through apply, from `managedFields`.
pub fn owned_keys(node: &Node) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut labels = BTreeSet::new();
    let mut annotations = BTreeSet::new();
    let entries = node.metadata.managed_fields.iter().flatten();
    for entry in entries.filter(|e| {
        e.manager.as_deref() == Some(FIELD_MANAGER) && e.operation.as_deref() == Some("Apply")
    }) {
        let Some(fields) = &entry.fields_v1 else {
            continue;
        };
        let metadata = fields.0.get("f:metadata");
        let keys = |section: &str| -> Vec<String> {
            metadata
                .and_then(|m| m.get(section))
                .and_then(|s| s.as_object())
                .map(|o| {
                    o.keys()
                        .filter_map(|k| k.strip_prefix("f:").map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        labels.extend(keys("f:labels"));
        annotations.extend(keys("f:annotations"));
    }
    (labels, annotations)
}

/// What a publish did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The Node already carried the desired set; nothing was written.
    Unchanged,
    /// The desired set was applied.
    Applied,
}

/// Writes to one Node.
#[derive(Clone)]
pub struct Publisher {
    api: Api<Node>,
    node_name: String,
}

impl Publisher {
    /// A publisher for the Node `node_name`.
    pub fn new(client: kube::Client, node_name: impl Into<String>) -> Publisher {
        Publisher {
            api: Api::all(client),
            node_name: node_name.into(),
        }
    }

    /// The Node's name.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Reads the Node.
    pub async fn node(&self) -> Result<Node, kube::Error> {
        self.api.get(&self.node_name).await
    }

    /// Applies the load annotation (and nothing else, under [`LOAD_FIELD_MANAGER`]).
    pub async fn publish_load(&self, load: &NodeLoad) -> Result<(), kube::Error> {
        let annotations = BTreeMap::from([(LOAD_ANNOTATION, load.to_annotation())]);
        let body = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": self.node_name, "annotations": annotations }
        });
        let params = PatchParams::apply(LOAD_FIELD_MANAGER).force();
        self.api
            .patch(&self.node_name, &params, &Patch::Apply(body))
            .await?;
        Ok(())
    }

    /// Applies `desired` unless `node` (just read) already carries it.
    pub async fn publish(&self, node: &Node, desired: &Desired) -> Result<Outcome, kube::Error> {
        if desired.is_published_on(node) {
            return Ok(Outcome::Unchanged);
        }
        // Force: labels under our prefix are ours even if someone else set them by hand.
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.api
            .patch(
                &self.node_name,
                &params,
                &Patch::Apply(desired.apply_body(&self.node_name)),
            )
            .await?;
        Ok(Outcome::Applied)
    }
}

/// The rack of a Node, from the label `key` (empty key: none).
pub fn rack_of(node: &Node, key: &str) -> Option<String> {
    if key.is_empty() {
        return None;
    }
    node.metadata.labels.as_ref()?.get(key).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};

    fn node(labels: &[(&str, &str)], owned: &[&str]) -> Node {
        let mut node = Node::default();
        node.metadata.name = Some("n1".into());
        node.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let owned: serde_json::Map<String, serde_json::Value> = owned
            .iter()
            .map(|k| (format!("f:{k}"), json!({})))
            .collect();
        node.metadata.managed_fields = Some(vec![
            ManagedFieldsEntry {
                manager: Some(FIELD_MANAGER.into()),
                operation: Some("Apply".into()),
                fields_v1: Some(FieldsV1(json!({"f:metadata": {"f:labels": owned}}))),
                ..Default::default()
            },
            ManagedFieldsEntry {
                manager: Some("kubectl-label".into()),
                operation: Some("Update".into()),
                fields_v1: Some(FieldsV1(
                    json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
                )),
                ..Default::default()
            },
        ]);
        node
    }

    #[test]
    fn absent_gpus_apply_present_false_and_no_annotation() {
        let d = Desired::new(None);
        let body = d.apply_body("n1");
        assert_eq!(
            body["metadata"]["labels"]["gpu.kubetrain.io/present"],
            "false"
        );
        assert_eq!(body["metadata"]["annotations"], json!({}));
        assert_eq!(body["kind"], "Node");
    }

    #[test]
    fn up_to_date_only_when_values_and_ownership_match() {
        let d = Desired::new(None);
        let present = ("gpu.kubetrain.io/present", "false");
        assert!(d.is_published_on(&node(
            &[present, ("team", "a")],
            &["gpu.kubetrain.io/present"]
        )));
        // A stale label of ours is still owned: an apply must remove it.
        assert!(!d.is_published_on(&node(
            &[present, ("gpu.kubetrain.io/count", "8")],
            &["gpu.kubetrain.io/present", "gpu.kubetrain.io/count"],
        )));
        // Right value, but not ours yet (set by hand).
        assert!(!d.is_published_on(&node(&[present], &[])));
        assert!(!d.is_published_on(&node(
            &[("gpu.kubetrain.io/present", "true")],
            &["gpu.kubetrain.io/present"]
        )));
    }

    #[test]
    fn reads_the_rack_label() {
        let n = node(&[("topology.kubernetes.io/rack", "r7")], &[]);
        assert_eq!(
            rack_of(&n, "topology.kubernetes.io/rack").as_deref(),
            Some("r7")
        );
        assert_eq!(rack_of(&n, ""), None);
        assert_eq!(rack_of(&n, "other"), None);
    }
}
