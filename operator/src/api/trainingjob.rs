//! TrainingJob: a gang of pods that trains one model.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Phase, TopologyLevel};
use super::waiting::WaitDetails;

/// A TrainingJob runs a gang of pods (one or more tasks, each with replicas) that start
/// together or not at all. kubetrain queues it in `spec.queue` (or in the
/// VirtualCluster's `defaultQueue`), places it on GPUs that suit
/// its topology, restarts it on failure up to `spec.maxRetries` times and, when it runs on
/// borrowed (bonus) GPUs, may ask it to checkpoint and requeue it so the GPUs' owner gets
/// them back.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[kube(
    group = "kubetrain.io",
    version = "v1alpha1",
    doc = "A TrainingJob runs a gang of pods that start together or not at all; kubetrain queues, places, retries and preempts it.",
    kind = "TrainingJob",
    namespaced,
    shortname = "tj",
    category = "kubetrain",
    status = "TrainingJobStatus",
    printcolumn = r#"{"name":"Queue","type":"string","jsonPath":".status.queue"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.reason"}"#,
    printcolumn = r#"{"name":"GPUs","type":"number","jsonPath":".status.gpus"}"#,
    printcolumn = r#"{"name":"Retries","type":"integer","jsonPath":".status.retries"}"#,
    printcolumn = r#"{"name":"Position","type":"integer","priority":1,"jsonPath":".status.queuePosition"}"#,
    printcolumn = r#"{"name":"Estimated Start","type":"string","priority":1,"jsonPath":".status.estimatedStartTime"}"#,
    printcolumn = r#"{"name":"Priority","type":"integer","priority":1,"jsonPath":".status.priority"}"#,
    printcolumn = r#"{"name":"Bonus","type":"boolean","priority":1,"jsonPath":".status.bonus"}"#,
    printcolumn = r#"{"name":"Preemptions","type":"integer","priority":1,"jsonPath":".status.preemptions"}"#,
    printcolumn = r#"{"name":"Nodes","type":"string","priority":1,"jsonPath":".status.nodes"}"#,
    printcolumn = r#"{"name":"Predicted","type":"integer","priority":1,"jsonPath":".status.prediction.seconds"}"#,
    printcolumn = r#"{"name":"Predicted-By","type":"string","priority":1,"jsonPath":".status.prediction.source"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TrainingJobSpec {
    /// Name of the Queue to submit to. The queue's VirtualCluster must own this job's
    /// namespace. Unset: the `defaultQueue` of the VirtualCluster that owns the namespace
    /// (`status.queue` shows the queue in effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub queue: Option<String>,

    /// Priority inside the queue: higher runs first under the `Priority` policy, and may
    /// preempt lower ones when the queue allows priority preemption. Unset: the value of
    /// the PriorityClass named by the task templates' `spec.priorityClassName` (the highest
    /// if tasks differ), else of the cluster's `globalDefault` PriorityClass, else 0
    /// (`status.priority` shows the priority in effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// The roles of the job (for example `master` and `worker`), each with a number of
    /// identical replicas. All replicas of all tasks form one gang.
    #[schemars(length(min = 1, max = 16))]
    pub tasks: Vec<TaskSpec>,

    /// How many times the job is restarted after a replica fails (non-zero exit, OOM kill)
    /// before it is marked Failed; default 3. What the node does (node loss, unhealthy GPUs,
    /// kubelet evictions and admission rejections) does not count.
    #[serde(default = "default_max_retries")]
    #[schemars(range(min = 0, max = 100))]
    pub max_retries: i32,

    /// Wait between a failure and the restart, growing exponentially.
    #[serde(default)]
    pub backoff: BackoffSpec,

    /// How the job saves its work when it is preempted.
    #[serde(default)]
    pub checkpoint: CheckpointSpec,

    /// Where the job's GPUs must or should be, relative to each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologySpec>,

    /// GPU types (the `gpu.kubetrain.io/product` flavor of nodes) the job may use, as a
    /// set: the order is not a preference, the scheduler picks the type and node that fit
    /// best and leaves scarcer types to jobs that need them. Empty means any type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_types: Vec<String>,

    /// The user the job runs for, used by the `UserFair` policy and per-user limits.
    /// Defaults to the job's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,

    /// Expected run time in seconds, used by the `ShortestPredictedFirst` policy. Unset:
    /// kubetrain predicts it from the cluster's earlier runs of the same job
    /// (`status.prediction` says what it predicted and from what).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub predicted_duration_seconds: Option<i64>,

    /// While true the job is not admitted, and a running job is stopped (after a
    /// checkpoint request) and kept in the queue.
    #[serde(default)]
    pub suspend: bool,

    /// How a replica's failure is judged, as a Job's `podFailurePolicy`: the first rule that
    /// matches a failed pod decides. `FailJob` fails the job for good (`PodFailurePolicy`),
    /// `Ignore` restarts it without counting a retry (within the operator's budget of
    /// uncounted restarts, as a node failure), `Count` counts it as a retry even where
    /// kubetrain would not (a pod Kubernetes disrupted, say). A failure no rule matches is
    /// judged as without a policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_failure_policy: Option<PodFailurePolicy>,

    /// How long, in seconds, the job may run in one admission: once that long has passed
    /// since the scheduler admitted it, its replicas are stopped and it fails for good with
    /// `DeadlineExceeded`, not retried. Time waiting in a queue never counts; a job admitted
    /// again (after a retry, a preemption or a suspension) starts a new count. Unset: no
    /// limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// Delete the job this many seconds after it finished. Unset keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The rules that judge a failed replica (batch/v1 Job's `podFailurePolicy`, without
/// `FailIndex`: a gang restarts as a whole).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodFailurePolicy {
    /// Tried in order on each failed pod; the first that matches decides.
    #[schemars(length(min = 1, max = 20))]
    pub rules: Vec<PodFailurePolicyRule>,
}

/// One rule: an action, and what a failed pod must show for it (exactly one of
/// `onExitCodes` and `onPodConditions`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodFailurePolicyRule {
    pub action: PodFailurePolicyAction,
    /// Matches a pod one of whose containers (or init containers) exited with a non-zero
    /// code the requirement accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_exit_codes: Option<PodFailurePolicyOnExitCodes>,
    /// Matches a pod with any of these conditions (Kubernetes marks a pod it stopped with
    /// `DisruptionTarget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 20))]
    pub on_pod_conditions: Option<Vec<PodFailurePolicyOnPodCondition>>,
}

/// What a matching rule does with the failure.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodFailurePolicyAction {
    /// The job fails for good: no retry, whatever `maxRetries` says.
    FailJob,
    /// The gang restarts without counting a retry.
    Ignore,
    /// The failure counts as a retry, as a failure of the job's own.
    Count,
}

/// Exit codes a rule matches.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodFailurePolicyOnExitCodes {
    /// Only this container's (or init container's) exit code; unset: any container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub container_name: Option<String>,
    pub operator: ExitCodeOperator,
    /// The codes; distinct, and without 0 under `In` (exit code 0 never matches).
    #[schemars(length(min = 1, max = 255))]
    pub values: Vec<i32>,
}

/// How `values` are compared with an exit code.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCodeOperator {
    In,
    NotIn,
}

/// A pod condition a rule matches.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodFailurePolicyOnPodCondition {
    /// The condition's type, for example `DisruptionTarget`.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 316))]
    pub type_: String,
    /// The condition's status; default `True`.
    #[serde(default = "default_condition_status")]
    pub status: ConditionStatus,
}

/// A condition's status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

fn default_condition_status() -> ConditionStatus {
    ConditionStatus::True
}

fn default_max_retries() -> i32 {
    3
}

/// One role of a TrainingJob.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Name of the task, unique in the job (a DNS label, for example `worker`). Pods are
    /// named `<job>-<task>-<index>`.
    #[schemars(
        length(min = 1, max = 20),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,

    /// Number of identical replicas of this task (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4096))]
    pub replicas: Option<i32>,

    /// A fraction of one GPU per replica, in thousandths (1-999), for light work such as
    /// debugging or small inference. Replicas sharing a GPU never sum above 1000; isolation
    /// is left to the runtime (MPS, MIG, HAMi). Leave unset for whole GPUs, which come from
    /// the containers' `nvidia.com/gpu` limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 999))]
    pub gpu_share: Option<i32>,

    /// Whether this task's replicas must all succeed for the job to succeed (default true).
    /// Set false for helpers such as parameter servers that never exit on their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_for_completion: Option<bool>,

    /// The pod template of every replica. Standard Kubernetes pod template; its GPUs come
    /// from `resources.limits["nvidia.com/gpu"]` of its containers.
    #[schemars(schema_with = "pod_template_schema")]
    pub template: serde_json::Value,
}

// No server-side defaults inside `tasks[]`: a JSON merge patch (client-side `kubectl apply`,
// GitOps tools) replaces whole lists, so a defaulted field in a list item would make every
// re-apply look like a change. The defaults live in these accessors instead.
impl TaskSpec {
    /// Number of replicas, 1 when unset.
    pub fn replicas(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }
    /// Whether the task decides the job's success, true when unset.
    pub fn required_for_completion(&self) -> bool {
        self.required_for_completion.unwrap_or(true)
    }
    /// The pod template, decoded. The API server checks it against the PodTemplateSpec schema;
    /// it is still kept as raw JSON here so that a template the operator's types cannot
    /// decode (a field newer than they know) is a `Valid=False` condition on its job rather
    /// than a watch that cannot decode the list.
    pub fn pod_template(&self) -> Result<PodTemplateSpec, serde_json::Error> {
        serde_json::from_value(self.template.clone())
    }
}

/// The real PodTemplateSpec schema (of the Kubernetes release `k8s-openapi` is built for), so
/// the API server rejects a misspelt or unknown field (`resource:` for `resources:`) at
/// `kubectl apply`, naming it, instead of pruning it and running the pod without it. The
/// nested descriptions are dropped (as Kubeflow's CRDs do with `maxDescLen=0`): they would
/// triple the CRD's size, and `kubectl explain pod.spec` has them. The CRD is still larger
/// than a client-side apply's 256 KiB `last-applied-configuration` annotation allows, so it
/// is applied server-side everywhere.
fn pod_template_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<PodTemplateSpec>();
    if let Some(obj) = schema.as_object_mut() {
        for v in obj.values_mut() {
            strip_descriptions(v);
        }
        obj.insert(
            "description".into(),
            "Standard Kubernetes pod template (metadata and spec) of every replica; its GPUs \
             come from the containers' `resources.limits[\"nvidia.com/gpu\"]` (whole GPUs) or \
             the task's `gpuShare`."
                .into(),
        );
    }
    schema
}

fn strip_descriptions(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            // A property may itself be called `description`; only drop the keyword.
            if map.get("description").is_some_and(|d| d.is_string()) {
                map.remove("description");
            }
            map.values_mut().for_each(strip_descriptions);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// Exponential backoff between a failure and the restart.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackoffSpec {
    /// Wait after the first failure, in seconds; default 10.
    #[serde(default = "default_backoff_initial")]
    #[schemars(range(min = 0))]
    pub initial_seconds: i32,
    /// Longest wait, in seconds; each retry doubles the wait up to this. Default 600.
    #[serde(default = "default_backoff_max")]
    #[schemars(range(min = 0))]
    pub max_seconds: i32,
}

impl Default for BackoffSpec {
    fn default() -> Self {
        BackoffSpec {
            initial_seconds: default_backoff_initial(),
            max_seconds: default_backoff_max(),
        }
    }
}
fn default_backoff_initial() -> i32 {
    10
}
fn default_backoff_max() -> i32 {
    600
}

/// The job's side of checkpoint-aware preemption. When kubetrain must take the job's GPUs
/// back, it sets the annotation `kubetrain.io/checkpoint-requested` on every pod (readable
/// in the container through a downward-API file at `/etc/kubetrain/checkpoint-requested`),
/// waits until a pod is annotated `kubetrain.io/checkpoint-done` (or all pods exit 0) or the
/// grace period passes, then deletes the pods and requeues the job.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointSpec {
    /// Longest wait for the checkpoint acknowledgement before the pods are deleted, in seconds;
    /// default 300.
    #[serde(default = "default_grace")]
    #[schemars(range(min = 0, max = 86400))]
    pub grace_period_seconds: i32,
    /// How often the job checkpoints on its own, in seconds. Used to estimate lost work when
    /// no checkpoint was acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub interval_seconds: Option<i32>,
    /// Protection from start-stop thrash: while the job has run less than this many
    /// seconds it is not chosen as a reclaim victim if any other choice exists; if none
    /// does, the reclaim waits at most this long. Unset takes the Queue's, then the
    /// VirtualCluster's `minRuntimeSeconds`, else 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub min_runtime_seconds: Option<i32>,
}

impl Default for CheckpointSpec {
    fn default() -> Self {
        CheckpointSpec {
            grace_period_seconds: default_grace(),
            interval_seconds: None,
            min_runtime_seconds: None,
        }
    }
}
fn default_grace() -> i32 {
    300
}

/// Placement constraints on how close the job's GPUs are.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpec {
    /// All of the job's GPUs must be within one domain of this level (`gpu-group`, `node`
    /// or `rack`); the job waits rather than run spread out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<TopologyLevel>,
    /// The job's GPUs should be within one domain of this level when possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<TopologyLevel>,
}

/// The places at the head of a queue where `status.queuePosition` is always exact (see
/// [`TrainingJobStatus::queue_position`]).
pub const EXACT_QUEUE_POSITIONS: u32 = 10;

/// Observed state of a TrainingJob, written by the operator.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrainingJobStatus {
    /// Where the job is in its life (see `Phase`).
    #[serde(default)]
    pub phase: Phase,
    /// The queue the job is in: `spec.queue`, or the VirtualCluster's `defaultQueue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The priority in effect: `spec.priority`, or that of the templates' PriorityClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Total GPUs the job asks for (fractions as decimals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<f64>,
    /// Restarts after failures so far (at most `spec.maxRetries`).
    #[serde(default)]
    pub retries: i32,
    /// Times the job was preempted and requeued; these do not count as retries. A
    /// suspension is not counted (`lastPreemption` records it, with reason `Suspend`).
    #[serde(default)]
    pub preemptions: i32,
    /// Retries caused by infrastructure (node lost, GPU unhealthy, kubelet eviction or
    /// admission rejection); not counted in `retries`.
    #[serde(default)]
    pub infrastructure_retries: i32,
    /// Whether the job runs on borrowed (bonus) capacity and may be preempted for its owner.
    #[serde(default)]
    pub bonus: bool,
    /// Where each replica runs; while the job waits out a retry's backoff, and once it has
    /// finished, where it last ran. Cleared when it goes back to its queue or is suspended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<ReplicaPlacement>,
    /// The nodes of `placement`, comma-separated in rank order, for `kubectl get tj -o wide`
    /// (a printed column shows only the first value of a list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    /// The replicas of this run that exited 0, by pod name, recorded 30 s after they
    /// finished. A replica that has done its part stays done when its finished pod is
    /// removed (the pod garbage collector, after the node it ran on was scaled down);
    /// cleared when the job is admitted again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub succeeded_replicas: Vec<String>,
    /// When the job entered its queue (kept across preemptions: its place in line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_at: Option<Time>,
    /// When the job was last admitted and placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_at: Option<Time>,
    /// When all of the job's pods were last running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// While `Retrying`: when the job returns to its queue (the backoff ends); while
    /// `Preempting` after a drain, with its pods gone: when it returns to its queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<Time>,
    /// When the job succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// When the job last acknowledged a checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checkpoint_time: Option<Time>,
    /// How the last preemption ended: with a saved checkpoint, or with the work since the
    /// last one lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_preemption: Option<PreemptionRecord>,
    /// Nodes the cluster's scheduler would not bind this job's pods to, kept out of its
    /// placement until `until` (with `--binding scheduler`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_nodes: Vec<RefusedNode>,
    /// Why the job is in its phase, in one word: the reason of the condition that explains
    /// it (why it waits, why it is invalid, retrying, preempted or failed, for example
    /// `QuotaExhausted`, `NeverFits`, `UnknownQueue`, `ReplicaFailed`, `RetriesExhausted`);
    /// while it starts, `Starting`, or the kubelet's reason for a replica that does not
    /// (`ImagePullBackOff`); `Suspended` while suspended. Unset while it runs or once it
    /// succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A sentence on the current state, for example why the job waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// While the job waits in its queue: its place among the queue's waiting jobs in the
    /// order the scheduler last offered them (1 is next). Exact within the first 10 places;
    /// further back it is rewritten once it has moved by a quarter, so it may read up to a
    /// third more than the true place while the queue drains. Unset once admitted, and for a
    /// job the scheduler has not ordered (invalid, suspended, in a retry backoff) or that
    /// can never start as it is (`NeverFits`, `ExceedsLimit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<i32>,
    /// While the job waits in its queue: when it is estimated to start, from the running
    /// jobs' predicted ends (`spec.predictedDurationSeconds`) and the jobs ahead of it. Unset
    /// when it cannot be estimated: it needs GPUs held by a job without a prediction, or it
    /// waits for a limit, a held queue or a spec change. An estimate, not a promise: GPUs of
    /// a type count as interchangeable, and a job that overruns its prediction or a more
    /// important job that arrives moves it (see the user guide). Rewritten when it moves by
    /// more than a minute or a tenth of the time left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_start_time: Option<Time>,
    /// While the job waits in its queue: why, field by field (the wait code and the numbers
    /// and names the `Admitted` condition's message is built from), for tools that should
    /// not parse the message. Written with the message, so it is as fresh as the message;
    /// unset once the job is admitted, suspended, retrying or finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitDetails>,
    /// The run time the scheduler assumes for the job (`ShortestPredictedFirst`), and where
    /// it came from: `spec.predictedDurationSeconds`, else the median of the cluster's
    /// earlier runs of the same job (or, failing those, of coarser matches), set when the
    /// job is first seen and kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Prediction>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Valid`, `Admitted`, `Running`, `Preempting`, `Succeeded`, `Failed`, with reasons.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A job's predicted run time and its source.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Prediction {
    /// Predicted run time in seconds; unset when nothing predicts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<i64>,
    /// `User` (`spec.predictedDurationSeconds`), `History` (earlier runs) or `None`.
    pub source: PredictionSource,
    /// With `History`: how closely the runs it came from match this job: `NameAndImage`
    /// (same namespace, user, name without run numbers, images and GPU count), `Name` (the
    /// same but another image), `User` (the user's jobs of this GPU count) or `Gpus` (any
    /// run of this GPU count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<PredictionLevel>,
    /// With `History`: how many runs the median was taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<i32>,
}

/// Where a predicted run time came from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictionSource {
    /// The job's own `spec.predictedDurationSeconds`.
    User,
    /// The median of the cluster's earlier runs that match the job.
    History,
    /// Nothing: no earlier run matches, and the spec gives none.
    None,
}

/// How closely the earlier runs behind a prediction match the job, finest first.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictionLevel {
    NameAndImage,
    Name,
    User,
    Gpus,
}

/// A node the cluster's scheduler refused for the job, and until when kubetrain avoids it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RefusedNode {
    pub node: String,
    pub until: Time,
    /// The scheduler's message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// How one preemption ended.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionRecord {
    /// `CheckpointSaved` (acknowledged within the grace period), `PodsExited` (the pods
    /// finished on their own) or `CheckpointLost` (the grace period ended without an
    /// acknowledgement).
    pub outcome: PreemptionOutcome,
    /// When the pods were stopped.
    pub at: Time,
    /// Why: `Reclaim`, `Priority`, `QueueShare` (a sibling queue took its share back),
    /// `Consolidation` (moved so that a job of its team gets GPUs together), `Drain` (a node
    /// under the job was drained), `UnhealthyGpu`, `QueueHold` (its queue held with
    /// `stopPolicy: HoldAndDrain`) or `Suspend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// GPU-seconds of work since the last checkpoint (or since the start) that were lost;
    /// 0 unless the checkpoint was lost.
    #[serde(default)]
    pub lost_gpu_seconds: i64,
}

/// The end of a preemption.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptionOutcome {
    CheckpointSaved,
    PodsExited,
    CheckpointLost,
    /// The gang had not started (not every replica was running yet): nothing to save.
    NotStarted,
}

/// Where one replica runs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaPlacement {
    /// Task name.
    pub task: String,
    /// Replica index within the task (0-based).
    pub index: i32,
    /// Global rank of the replica in the job.
    #[serde(default)]
    pub rank: i32,
    /// Node the replica is bound to.
    pub node: String,
    /// GPU indices on that node.
    #[serde(default)]
    pub gpus: Vec<i32>,
    /// Thousandths of the GPU used, for shared-GPU replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_share: Option<i32>,
    /// Who picks the GPU indices: `kubetrain` (the indices above are the ones the container
    /// sees, through `NVIDIA_VISIBLE_DEVICES`) or `device-plugin` (the node's device plugin
    /// assigns the devices; the indices above are kubetrain's plan only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_assigned_by: Option<GpuAssignment>,
}

/// Who assigns a replica's GPU devices.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GpuAssignment {
    Kubetrain,
    DevicePlugin,
}

impl GpuAssignment {
    pub fn as_str(self) -> &'static str {
        match self {
            GpuAssignment::Kubetrain => "kubetrain",
            GpuAssignment::DevicePlugin => "device-plugin",
        }
    }

    pub fn parse(s: &str) -> Option<GpuAssignment> {
        match s {
            "kubetrain" => Some(GpuAssignment::Kubetrain),
            "device-plugin" => Some(GpuAssignment::DevicePlugin),
            _ => None,
        }
    }
}
