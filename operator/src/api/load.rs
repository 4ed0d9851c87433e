//! The GPU load annotation: how busy each GPU of a node has been lately, written by the node
//! labeler from NVML samples, read by the operator to place GPU shares on the least loaded
//! GPU that holds them.
//!
//! One versioned JSON document in [`LOAD_ANNOTATION`], apart from the topology annotation
//! because it changes far more often: a load write never rewrites the topology. Like the
//! topology, fields are only ever added (each with a default), and a change old readers would
//! misunderstand bumps [`LOAD_VERSION`].
//!
//! The labeler writes it only when the summary changed enough to matter to placement or when
//! the last write is old, so that a cluster of 1,000 nodes costs the API server at most one
//! Node write per node per minute (the labeler's `load::PublishRule`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Annotation on a Node holding its [`NodeLoad`] as JSON.
pub const LOAD_ANNOTATION: &str = "gpu.kubetrain.io/load";
/// Current version of the [`NodeLoad`] document.
pub const LOAD_VERSION: u32 = 1;

/// The recent load of a node's GPUs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeLoad {
    /// Document version; readers reject versions they do not know.
    pub version: u32,
    /// The window the summary covers, in seconds.
    pub window_seconds: u32,
    /// One entry per GPU that could be sampled, by NVML index.
    #[serde(default)]
    pub gpus: Vec<GpuLoad>,
}

/// The recent load of one GPU.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GpuLoad {
    /// NVML index of the GPU (as in the topology annotation).
    pub index: u32,
    /// Mean of NVML's utilisation (percent of time a kernel ran) over the window, 0–100.
    pub utilization_percent: u32,
    /// Highest memory in use over the window, in MiB: what a new share must leave room for.
    pub memory_used_mib: u64,
    /// Total memory of the GPU, in MiB.
    #[serde(default)]
    pub memory_total_mib: u64,
}

/// Why a load annotation could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load annotation is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("load annotation version {found} is not supported (this reader knows {known})")]
    UnsupportedVersion { found: u32, known: u32 },
}

impl NodeLoad {
    /// Reads an annotation value of a version this reader knows.
    pub fn parse(annotation: &str) -> Result<NodeLoad, LoadError> {
        let load: NodeLoad = serde_json::from_str(annotation)?;
        if load.version != LOAD_VERSION {
            return Err(LoadError::UnsupportedVersion {
                found: load.version,
                known: LOAD_VERSION,
            });
        }
        Ok(load)
    }

    /// The annotation value: compact JSON.
    pub fn to_annotation(&self) -> String {
        // Plain structs of numbers cannot fail to serialise.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The load of the GPU with this index.
    pub fn gpu(&self, index: u32) -> Option<&GpuLoad> {
        self.gpus.iter().find(|g| g.index == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_unknown_versions() {
        let load = NodeLoad {
            version: LOAD_VERSION,
            window_seconds: 300,
            gpus: vec![GpuLoad {
                index: 1,
                utilization_percent: 40,
                memory_used_mib: 20_480,
                memory_total_mib: 81_559,
            }],
        };
        let parsed = NodeLoad::parse(&load.to_annotation()).unwrap();
        assert_eq!(parsed, load);
        assert_eq!(parsed.gpu(1).unwrap().utilization_percent, 40);
        assert!(parsed.gpu(0).is_none());
        assert!(matches!(
            NodeLoad::parse(r#"{"version":2,"windowSeconds":300}"#),
            Err(LoadError::UnsupportedVersion { found: 2, known: 1 })
        ));
        assert!(NodeLoad::parse("not json").is_err());
    }
}
