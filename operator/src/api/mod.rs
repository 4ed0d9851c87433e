//! The kubetrain API: group `kubetrain.io`, version `v1alpha1`.
//!
//! Doc comments on these types are the `kubectl explain` text, so they are written for users.
//! Everything the API server can check from the object alone is rejected at `kubectl apply`:
//! OpenAPI schema (required fields, enums, minimums, the typed pod template) and CEL rules
//! (`validation`, for checks across fields). What needs other objects is checked by the
//! controller and reported as a `Valid=False` condition.

pub mod annotations;
pub mod common;
pub mod load;
pub mod mig;
pub mod node_labels;
pub mod queue;
pub mod reasons;
pub mod topology;
pub mod trainingjob;
pub mod validation;
pub mod virtualcluster;
pub mod waiting;

pub use common::{GpuAmount, Phase, TopologyLevel};
pub use mig::{MigDevice, MigProfile};
pub use queue::{Queue, QueuePolicy, QueueSpec, QueueStatus, QueueingStrategy, StopPolicy};
pub use topology::{GpuGroup, GpuInfo, GpuLink, NodeTopology, TOPOLOGY_ANNOTATION};
pub use trainingjob::{TrainingJob, TrainingJobSpec, TrainingJobStatus};
pub use virtualcluster::{VirtualCluster, VirtualClusterSpec, VirtualClusterStatus};
pub use waiting::WaitDetails;

/// The API group of every kubetrain kind.
pub const GROUP: &str = "kubetrain.io";
/// The API version served and stored.
pub const VERSION: &str = "v1alpha1";

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The three CRDs, with the plural name of each, as `crdgen` writes them.
pub fn crds() -> Vec<(&'static str, CustomResourceDefinition)> {
    [
        ("trainingjobs", TrainingJob::crd()),
        ("queues", Queue::crd()),
        ("virtualclusters", VirtualCluster::crd()),
    ]
    .into_iter()
    .map(|(plural, crd)| (plural, server_compatible(plural, crd)))
    .collect()
}

/// Doc comments are wrapped at 100 columns; `kubectl explain` wraps again at its own width,
/// which leaves ragged lines. Joins the lines of each paragraph (blank lines and list items
/// keep their breaks).
fn unwrap_paragraphs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, para) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let mut first = true;
        for line in para.lines() {
            let item = line.trim_start().starts_with(['-', '*', '|', '`']);
            if !first {
                out.push(if item { '\n' } else { ' ' });
            }
            out.push_str(if first || item {
                line
            } else {
                line.trim_start()
            });
            first = false;
        }
    }
    out
}

/// Optional enums come out of schemars as `enum: [..., null]`; the API server rejects
/// `null` in an enum, and `nullable: true` already says the field may be absent. Adds the
/// CEL rules of `validation`.
fn server_compatible(
    plural: &'static str,
    crd: CustomResourceDefinition,
) -> CustomResourceDefinition {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Array(items)) = map.get_mut("enum") {
                    items.retain(|i| !i.is_null());
                }
                if let Some(serde_json::Value::String(d)) = map.get_mut("description") {
                    *d = unwrap_paragraphs(d);
                }
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::to_value(&crd) else {
        return crd;
    };
    strip(&mut value);
    if let Some(versions) = value["spec"]["versions"].as_array_mut() {
        for v in versions {
            // A rule whose path is gone is a bug in the table, caught by the crds test.
            let _ = validation::attach(plural, &mut v["schema"]["openAPIV3Schema"]);
        }
    }
    serde_json::from_value(value).unwrap_or(crd)
}

/// Renders a CRD as the YAML committed under `crds/`.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_norway::Error> {
    serde_norway::to_string(crd)
}
