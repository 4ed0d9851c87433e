//! The kubetrain node labeler: reads a node's GPUs through NVML (or a file standing in for
//! it), works out their topology and health, and publishes them on the node's own Node
//! object as `gpu.kubetrain.io/*` labels and one versioned topology annotation
//! (docs/architecture.md).
//!
//! The pipeline, one module per step:
//! [`nvml`] / [`topo_matrix`] / [`smi_list`] / [`source`] → [`inventory::Inventory`] →
//! [`topology::build`] (with [`health::assess`]) → [`kubetrain::api::NodeTopology`] →
//! [`labels`] + annotation → [`publish`] (server-side apply, no write when unchanged).
//! [`run`] is the loop that drives it on a period and on NVML health events.

pub mod health;
pub mod inventory;
pub mod labels;
pub mod load;
pub mod metrics;
pub mod nvml;
pub mod publish;
pub mod run;
pub mod smi_list;
pub mod source;
pub mod topo_matrix;
pub mod topology;
