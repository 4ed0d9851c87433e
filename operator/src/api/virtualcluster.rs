//! VirtualCluster: a tenant's guaranteed slice of the physical cluster.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{GpuAmount, TopologyLevel};

/// A VirtualCluster is a tenant (a team): the namespaces whose jobs it owns, the GPUs it is
/// guaranteed (by GPU type, optionally as whole topology cells), a hard limit, and a weight
/// for sharing idle GPUs. GPUs it does not use are lent to other tenants as bonus and taken
/// back, with checkpoint-aware preemption, when its own jobs need them.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[kube(
    group = "kubetrain.io",
    version = "v1alpha1",
    doc = "A VirtualCluster is a tenant: its namespaces, its guaranteed GPUs (by type, optionally as whole topology cells), a limit and a weight for sharing idle GPUs.",
    kind = "VirtualCluster",
    shortname = "vc",
    category = "kubetrain",
    status = "VirtualClusterStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Guaranteed","type":"integer","jsonPath":".status.guaranteedGpus"}"#,
    printcolumn = r#"{"name":"InUse","type":"number","jsonPath":".status.inUseGpus"}"#,
    printcolumn = r#"{"name":"Borrowed","type":"number","jsonPath":".status.bonusGpus","description":"GPUs the tenant holds beyond its guarantee, summed per GPU type: what it borrows (a Queue's Bonus counts the GPUs of its jobs that run as bonus instead)"}"#,
    printcolumn = r#"{"name":"Lent","type":"number","jsonPath":".status.lentGpus"}"#,
    printcolumn = r#"{"name":"Limit","type":"integer","jsonPath":".spec.limit.gpus","priority":1}"#,
    printcolumn = r#"{"name":"AtRisk","type":"string","jsonPath":".status.conditions[?(@.type==\"GuaranteeAtRisk\")].status","priority":1}"#,
    printcolumn = r#"{"name":"AboveLimit","type":"string","jsonPath":".status.conditions[?(@.type==\"AboveLimit\")].status","priority":1}"#,
    printcolumn = r#"{"name":"OverCommitted","type":"string","jsonPath":".status.conditions[?(@.type==\"OverCommitted\")].status","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualClusterSpec {
    /// Namespaces whose TrainingJobs belong to this VirtualCluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,

    /// Namespaces selected by label also belong to this VirtualCluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,

    /// GPUs this tenant can always get back within a bounded time, per GPU type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarantee: Vec<FlavorGuarantee>,

    /// Hard cap on what the tenant may hold, bonus included. Unset means no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,

    /// Default `spec.checkpoint.minRuntimeSeconds` of the tenant's jobs (a Queue's own
    /// default wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub min_runtime_seconds: Option<i32>,

    /// The Queue (of this VirtualCluster) of the tenant's TrainingJobs that name none in their
    /// spec.queue. Unset: such jobs are not valid (`Valid=False`, reason `NoQueue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub default_queue: Option<String>,

    /// Share of idle GPUs this tenant gets relative to other tenants (weighted fair share).
    #[serde(default = "default_weight")]
    #[schemars(range(min = 1, max = 1000))]
    pub weight: i32,
}

fn default_weight() -> i32 {
    1
}

/// The guarantee for one GPU type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorGuarantee {
    /// GPU type, as in the nodes' `gpu.kubetrain.io/product` label (for example
    /// `NVIDIA-A100-SXM4-80GB`).
    #[schemars(length(min = 1, max = 63))]
    pub flavor: String,
    /// Guaranteed number of GPUs of this type.
    #[schemars(range(min = 0))]
    pub gpus: i32,
    /// Part of the guarantee as whole topology cells: "2 cells of level node" means two
    /// whole nodes can always be obtained, not merely their GPU count scattered around.
    /// Cells count towards `gpus`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellGuarantee>,
}

/// A number of whole topology cells of one level.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CellGuarantee {
    /// Level of each cell: `gpu-group`, `node` or `rack`.
    pub level: TopologyLevel,
    /// Number of cells.
    #[schemars(range(min = 1))]
    pub count: i32,
}

/// A hard cap on a tenant's usage.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    /// Most GPUs (all types together) the tenant may hold at once, bonus included.
    #[schemars(range(min = 0))]
    pub gpus: i32,
}

/// Observed state of a VirtualCluster, written by the operator.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VirtualClusterStatus {
    /// Guaranteed GPUs, all types together.
    #[serde(default)]
    pub guaranteed_gpus: i32,
    /// GPUs held by this tenant's jobs; a shared GPU counts as its share (0.25).
    #[serde(default)]
    pub in_use_gpus: GpuAmount,
    /// GPUs held beyond the guarantee, summed per GPU type: what is borrowed.
    #[serde(default)]
    pub bonus_gpus: GpuAmount,
    /// Guaranteed GPUs of this tenant, idle, that other tenants' borrowing uses right now.
    #[serde(default)]
    pub lent_gpus: GpuAmount,
    /// The same numbers per GPU type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors: Vec<FlavorUsage>,
    /// Jobs waiting for capacity.
    #[serde(default)]
    pub pending: i32,
    /// Jobs running.
    #[serde(default)]
    pub running: i32,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (False with reason `DefaultQueueInvalid` when `spec.defaultQueue` names a
    /// queue that does not exist or belongs to another VirtualCluster,
    /// `CellsExceedGuarantee` when a type's cells hold more GPUs than its `gpus`,
    /// `NamespaceConflict` when another VirtualCluster owns one of its namespaces too,
    /// `UnknownGpuType` when no node has a GPU type it guarantees,
    /// `Terminating` while its deletion waits for its running jobs), `OverCommitted` when guarantees exceed what
    /// the cluster has, `GuaranteeAtRisk` (True with the numbers when part of the guarantee
    /// cannot be obtained even by reclaim: reason `CapacityLost` for unhealthy GPUs or
    /// cordoned nodes, `GuaranteesExceedCapacity` when the guarantees add up to more than the
    /// cluster has; False with reason `Obtainable`), and with a limit `AboveLimit` (True,
    /// reason `LimitLowered`, when the tenant holds more than `spec.limit`; `JobsLeaving`
    /// while the GPUs above it are held by jobs already leaving). `kubectl get vc
    /// -o wide` shows the limit, `GuaranteeAtRisk` and `AboveLimit`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Usage of one GPU type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorUsage {
    /// GPU type.
    pub flavor: String,
    /// Guaranteed GPUs of this type.
    pub guaranteed: i32,
    /// GPUs of this type in use by the tenant.
    pub in_use: GpuAmount,
    /// GPUs of this type in use beyond the guarantee (`inUse` minus `guaranteed`, at least 0).
    pub bonus: GpuAmount,
    /// Idle guaranteed GPUs of this type that other tenants' borrowing uses.
    pub lent: GpuAmount,
}
