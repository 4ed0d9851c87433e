//! Queue: a line of TrainingJobs inside one VirtualCluster.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::GpuAmount;

/// A Queue orders the TrainingJobs of one VirtualCluster and splits that VirtualCluster's
/// guaranteed GPUs between teams or purposes. Jobs name their queue in `spec.queue`.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[kube(
    group = "kubetrain.io",
    version = "v1alpha1",
    doc = "A Queue orders the TrainingJobs of one VirtualCluster and splits its guaranteed GPUs between teams or purposes.",
    kind = "Queue",
    shortname = "q",
    category = "kubetrain",
    status = "QueueStatus",
    printcolumn = r#"{"name":"VirtualCluster","type":"string","jsonPath":".spec.virtualCluster"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Policy","type":"string","jsonPath":".spec.policy"}"#,
    printcolumn = r#"{"name":"Stop","type":"string","jsonPath":".spec.stopPolicy"}"#,
    printcolumn = r#"{"name":"Strategy","type":"string","jsonPath":".spec.queueingStrategy","priority":1}"#,
    printcolumn = r#"{"name":"MaxShare","type":"integer","jsonPath":".spec.maxShare","priority":1}"#,
    printcolumn = r#"{"name":"AboveLimit","type":"string","jsonPath":".status.conditions[?(@.type==\"AboveLimit\")].status","priority":1}"#,
    printcolumn = r#"{"name":"Pending","type":"integer","jsonPath":".status.pending"}"#,
    printcolumn = r#"{"name":"Starting","type":"integer","jsonPath":".status.admitted"}"#,
    printcolumn = r#"{"name":"Running","type":"integer","jsonPath":".status.running"}"#,
    printcolumn = r#"{"name":"GPUs","type":"number","jsonPath":".status.gpusInUse"}"#,
    printcolumn = r#"{"name":"Bonus","type":"number","jsonPath":".status.bonusGpus","description":"GPUs held by the queue's jobs that run as bonus (admitted beyond the guarantee: preemptible); its VirtualCluster's Borrowed counts what the tenant holds beyond its guarantee instead"}"#,
    printcolumn = r#"{"name":"OldestPending","type":"date","jsonPath":".status.oldestPendingSince"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Name of the VirtualCluster this queue belongs to. Jobs in this queue use that
    /// VirtualCluster's guarantee first and borrow idle GPUs beyond it as bonus.
    pub virtual_cluster: String,

    /// Optional parent Queue (of the same VirtualCluster), to build a hierarchy: a child's
    /// share is a share of its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,

    /// Percentage (0-100) of the VirtualCluster's (or the parent queue's) guaranteed GPUs
    /// this queue is entitled to. Unused share is available to sibling queues.
    #[serde(default = "default_share")]
    #[schemars(range(min = 0, max = 100))]
    pub share: i32,

    /// Percentage (0-100) of the VirtualCluster's limit that jobs of this queue and of the
    /// queues under it may hold at once, bonus included; of all the cluster's GPUs when the
    /// VirtualCluster has no limit. Defaults to 100. Of another base than `share` (the guarantee): with a guarantee of 12
    /// and a limit of 24, `share: 50` is 6 GPUs and `maxShare: 40` 9.6.
    #[serde(default = "default_max_share")]
    #[schemars(range(min = 0, max = 100))]
    pub max_share: i32,

    /// Most GPUs one user (`spec.user` of a TrainingJob) may hold in this queue at once, at
    /// least 1 (a queue no one may use is `maxShare: 0`). Unset means no per-user limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub user_limit: Option<i32>,

    /// Order in which the queue's jobs are admitted (priority first, whatever the policy,
    /// with `priorityPreemption`): `FIFO` (submission order), `Priority`
    /// (higher priority first, then FIFO; a job's priority is its `spec.priority`, else its
    /// templates' PriorityClass value), `ShortestPredictedFirst` (smallest
    /// `spec.predictedDurationSeconds` first; jobs without a prediction in FIFO order after),
    /// `UserFair` (dominant-resource fairness between users, FIFO within a user).
    #[serde(default)]
    pub policy: QueuePolicy,

    /// Default `spec.checkpoint.minRuntimeSeconds` of this queue's jobs: a bonus job that has
    /// run less than this is spared by reclaim while another victim exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub min_runtime_seconds: Option<i32>,

    /// Allow a higher-priority job of this queue to preempt lower-priority jobs of the same
    /// queue (with a checkpoint request) when it cannot otherwise run. Priority then comes
    /// first in the queue's order whatever the `policy`, which orders the jobs of one
    /// priority: the GPUs a preemption frees go to the job it was made for.
    #[serde(default)]
    pub priority_preemption: bool,

    /// What a job that cannot start does to the jobs behind it in the queue's order.
    /// `BestEffort` (the default): nothing, each job gets its turn and a smaller one behind
    /// may start first. `Strict`: it holds them back until it starts, so a large job is not
    /// overtaken for ever by small ones (Kueue's StrictFIFO, for any `policy`). `Backfill`:
    /// it gets a reservation at its earliest predicted start (from the running jobs'
    /// predicted durations), and a job behind it starts now only if it does not delay that
    /// reservation: it is predicted to end before it, or uses GPUs the reservation does not
    /// need; a job that overruns its prediction is not stopped for it, the reservation moves.
    /// Without predictions `Backfill` holds the queue as `Strict` does. A job that can never
    /// start (larger than the cluster or than one of its limits) holds back nobody.
    #[serde(default)]
    pub queueing_strategy: QueueingStrategy,

    /// Holding the queue, as Kueue's `stopPolicy`: `None` (the default) admits jobs;
    /// `Hold` admits no new job (they wait with `QueueHeld`) while admitted jobs keep
    /// running; `HoldAndDrain` also stops the admitted jobs the checkpoint-aware way (a
    /// preemption with reason `QueueHold`): they go back to the queue, keep their checkpoint
    /// and retry budget, and wait until the hold is lifted. A hold covers the queues under
    /// this one (`spec.parent`) too. Set it back to `None` to resume.
    #[serde(default)]
    pub stop_policy: StopPolicy,
}

/// See `QueueSpec::stop_policy`. Ordered weakest first: a queue is held by the strongest
/// policy of itself and the queues above it.
#[derive(
    Serialize,
    Deserialize,
    JsonSchema,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
)]
pub enum StopPolicy {
    // Plain comments, not doc comments: the schema stays a plain enum.
    #[default]
    None,
    Hold,
    HoldAndDrain,
}

/// See `QueueSpec::queueing_strategy`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueingStrategy {
    #[default]
    BestEffort,
    Strict,
    Backfill,
}

fn default_share() -> i32 {
    100
}
fn default_max_share() -> i32 {
    100
}

/// The order in which a Queue admits its jobs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum QueuePolicy {
    #[default]
    #[serde(rename = "FIFO")]
    Fifo,
    Priority,
    ShortestPredictedFirst,
    UserFair,
}

/// Observed state of a Queue, written by the operator. The numbers are those of the queue's
/// subtree: its own jobs and those of every queue under it (`spec.parent`), the scope its
/// `maxShare` and `share` are checked on. A queue without children counts its own jobs;
/// adding up the rows of `kubectl get queues` counts a child's jobs once per queue above it
/// too.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    /// Jobs waiting for capacity (phases Pending, Queued and Retrying), in this queue and
    /// the queues under it.
    #[serde(default)]
    pub pending: i32,
    /// Jobs admitted whose pods are not all running yet (phase `Starting`), in this queue
    /// and the queues under it.
    #[serde(default)]
    pub admitted: i32,
    /// Jobs running, in this queue and the queues under it.
    #[serde(default)]
    pub running: i32,
    /// GPUs held by the jobs of this queue and the queues under it, guaranteed and bonus
    /// together (what `maxShare` is checked against); a shared GPU counts as its share
    /// (0.25).
    #[serde(default)]
    pub gpus_in_use: GpuAmount,
    /// Of `gpusInUse`, GPUs held by jobs that run as bonus (admitted beyond the
    /// VirtualCluster's guarantee, and so preemptible).
    #[serde(default)]
    pub bonus_gpus: GpuAmount,
    /// Seconds the oldest pending job (of this queue and the queues under it) has waited,
    /// when the status was written (rounded to the minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_pending_seconds: Option<i64>,
    /// When the oldest pending job (of this queue and the queues under it) entered its
    /// queue (`kubectl get queues` shows its age, current at every look).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_pending_since: Option<Time>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` when the queue and its VirtualCluster are valid (False with reason
    /// `UnknownVirtualCluster`, `VirtualClusterTerminating`, or `InvalidParent` when its
    /// `spec.parent` chain names a missing queue, another VirtualCluster's, or a cycle);
    /// `Terminating` while a deleted queue, admitting nothing new, waits for its admitted jobs
    /// to finish; `AboveLimit` (with `maxShare` below 100) True when `gpusInUse` is above
    /// the maximum `maxShare` allows, reason `LimitLowered` (lowered below what it holds:
    /// running jobs are not cut back, new jobs wait with `QueueMaxShare`) or `JobsLeaving`
    /// (above it only by jobs checkpointing and leaving), False with `WithinLimit`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
