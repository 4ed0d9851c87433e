//! Types shared by more than one kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A level of the GPU topology tree, from the smallest domain to the largest:
/// `gpu-group` (GPUs joined by NVLink or one PCIe switch), `node` (one machine),
/// `rack` (machines under one top-of-rack switch).
#[derive(
    Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyLevel {
    GpuGroup,
    Node,
    Rack,
}

impl std::fmt::Display for TopologyLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TopologyLevel::GpuGroup => "gpu-group",
            TopologyLevel::Node => "node",
            TopologyLevel::Rack => "rack",
        })
    }
}

/// Where a TrainingJob is in its life: `Pending` (not yet validated), `Queued` (waiting for
/// capacity), `Running` (the whole gang is placed and its pods exist), `Preempting` (asked to
/// checkpoint before its pods are deleted), `Retrying` (a replica failed; waiting out the
/// backoff), `Suspended` (`spec.suspend` is true), `Succeeded`, `Failed`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Phase {
    #[default]
    Pending,
    Queued,
    Running,
    Preempting,
    Retrying,
    Suspended,
    Succeeded,
    Failed,
}

impl Phase {
    /// Succeeded and Failed are final: nothing moves a job out of them.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}
