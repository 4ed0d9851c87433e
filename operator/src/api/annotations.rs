//! Labels and annotations kubetrain puts on (or reads from) pods, and the node labels it reads.
//! One place, so the operator, the node labeler and the simulated-node agent agree on the
//! names. The operator writes the pod protocol in `controller::pods` (`gang_pods`) and the
//! checkpoint requests, and reads it only through `controller::gang`.

/// Pod label: name of the owning TrainingJob.
pub const JOB_LABEL: &str = "kubetrain.io/job";
/// Pod label: task name within the job.
pub const TASK_LABEL: &str = "kubetrain.io/task";
/// Pod label: replica index within the task.
pub const INDEX_LABEL: &str = "kubetrain.io/index";
/// Pod annotation: GPU indices on the node assigned to this replica, comma-separated
/// (for example `0,1`).
pub const GPUS_ANNOTATION: &str = "kubetrain.io/gpus";
/// Pod annotation: the replica's global rank.
pub const RANK_ANNOTATION: &str = "kubetrain.io/rank";
/// Pod annotation: `true` when the gang runs on borrowed (bonus) capacity, `false` when within
/// its VirtualCluster's guarantee (set at admission, turned `false` by a promotion).
pub const BONUS_ANNOTATION: &str = "kubetrain.io/bonus";
/// Pod annotation: the number of replicas in the gang, so a partial gang is recognisable.
pub const GANG_SIZE_ANNOTATION: &str = "kubetrain.io/gang-size";
/// Pod annotation: who picks the replica's GPU indices: `kubetrain` (its choice reaches the
/// container as `NVIDIA_VISIBLE_DEVICES`) or `device-plugin` (`kubetrain.io/gpus` is only
/// kubetrain's plan; the plugin assigns the devices).
pub const GPU_ASSIGNMENT_ANNOTATION: &str = "kubetrain.io/gpu-assignment";
/// Pod annotation: milli-GPU share of a shared-GPU replica.
pub const GPU_SHARE_ANNOTATION: &str = "kubetrain.io/gpu-share";
/// Pod annotation: which admission of the job created the pod (retries + preemptions +
/// infrastructure retries at that time); pods of an older attempt are stale.
pub const ATTEMPT_ANNOTATION: &str = "kubetrain.io/attempt";
/// Pod annotation: a digest of the task's pod template the pod was made from
/// (`pods::template_digest`), so a gang still starting can tell that its template changed.
pub const TEMPLATE_DIGEST_ANNOTATION: &str = "kubetrain.io/template-digest";
/// Pod annotation: the node kubetrain chose for the replica. With `--binding scheduler` the
/// pod is created pinned there by required node affinity and kube-scheduler binds it, so
/// until then `spec.nodeName` is empty and this is where its resources are counted.
pub const NODE_ANNOTATION: &str = "kubetrain.io/node";
/// Pod annotation set by the operator to ask the job to checkpoint (value: RFC 3339 time of
/// the request). Visible in the container through a downward-API file.
pub const CHECKPOINT_REQUESTED: &str = "kubetrain.io/checkpoint-requested";
/// Pod annotation set with the checkpoint request: why the job is preempted (`Reclaim`,
/// `Priority`, `Drain`, `UnhealthyGpu`, `QueueHold`, ...: `reasons::PreemptionCause`).
pub const PREEMPTION_REASON: &str = "kubetrain.io/preemption-reason";
/// Pod annotation set with the checkpoint request of a `Reclaim` or `Priority` preemption:
/// the job the room is for (`namespace/name`). When that job no longer waits before the
/// checkpoint is acknowledged, the request is withdrawn.
pub const PREEMPTED_FOR: &str = "kubetrain.io/preempted-for";
/// Pod annotation set by the job (or its sidecar) when the checkpoint is saved (value:
/// RFC 3339 time of the checkpoint).
pub const CHECKPOINT_DONE: &str = "kubetrain.io/checkpoint-done";

/// Pod label on a GPU reservation pod (value `true`). A `gpuShare` replica on a node where a
/// device plugin hands out GPUs requests no `nvidia.com/gpu`; the operator keeps one
/// reservation pod per shared GPU there (`controller::reservations`), requesting
/// `nvidia.com/gpu: 1` so the plugin and kube-scheduler count that GPU as taken. Its
/// `kubetrain.io/node` and `kubetrain.io/gpus` annotations say which of kubetrain's GPUs it
/// holds.
pub const RESERVATION_LABEL: &str = "kubetrain.io/gpu-reservation";
/// Reservation pod annotation, written by the reservation's container
/// (`kubetrain-operator reserve-gpu`): the device the plugin gave it, as the plugin put it in
/// `NVIDIA_VISIBLE_DEVICES` (a GPU UUID, or an index).
pub const RESERVED_DEVICE_ANNOTATION: &str = "kubetrain.io/reserved-device";
/// Share pod annotation, set by the operator when the GPU's reservation reports its device:
/// the container's `NVIDIA_VISIBLE_DEVICES` (through the downward API).
pub const VISIBLE_DEVICES_ANNOTATION: &str = "kubetrain.io/visible-devices";
/// Share pod annotation, set with [`VISIBLE_DEVICES_ANNOTATION`]: the uid of the reservation
/// pod whose device it runs on. The device is held from the plugin only while that pod
/// lives; a share whose reservation is gone or replaced runs on a GPU the plugin may give
/// away, and is stopped and retried.
pub const RESERVATION_UID_ANNOTATION: &str = "kubetrain.io/reservation-uid";
/// Reservation pod label: a digest of its name, for the selector of its own
/// PodDisruptionBudget (a label value is too short for a node's name).
pub const RESERVATION_ID_LABEL: &str = "kubetrain.io/gpu-reservation-id";
/// Scheduling gate on a share pod that waits for its GPU's reservation: kube-scheduler does
/// not bind the pod (so its container cannot start with no device) until the operator removes
/// the gate together with setting [`VISIBLE_DEVICES_ANNOTATION`].
pub const RESERVATION_GATE: &str = "kubetrain.io/gpu-reservation";

/// Node labels the operator reads; the whole node contract is in [`super::node_labels`].
pub use super::node_labels::{PRODUCT as PRODUCT_LABEL, RACK as RACK_LABEL};

/// Annotations on a pod *template* that direct the simulated-node agent in tests and
/// `make run` (ignored on real nodes).
pub mod sim {
    /// Seconds the replica runs before it exits.
    pub const RUN_SECONDS: &str = "sim.kubetrain.io/run-seconds";
    /// Exit code when it exits (default 0).
    pub const EXIT_CODE: &str = "sim.kubetrain.io/exit-code";
    /// `true`: the replica is OOM-killed instead of exiting.
    pub const OOM: &str = "sim.kubetrain.io/oom-killed";
    /// Seconds between a checkpoint request and its acknowledgement, or `never`.
    pub const CHECKPOINT_DELAY: &str = "sim.kubetrain.io/checkpoint-delay-seconds";
    /// Seconds between binding and Running (overrides the agent's default).
    pub const START_SECONDS: &str = "sim.kubetrain.io/start-seconds";
    /// The kubelet rejects the pods of the job's first attempt at admission with this
    /// reason (for example `OutOfnvidia.com/gpu`, as when a GPU failed between the
    /// scheduling decision and the pod's arrival); later attempts are admitted.
    pub const ADMISSION_REJECT: &str = "sim.kubetrain.io/admission-reject";
    /// The replica's image cannot be pulled: its containers wait in `ImagePullBackOff` with
    /// this message, and it never runs.
    pub const IMAGE_PULL_ERROR: &str = "sim.kubetrain.io/image-pull-error";
}

/// Field manager of every write the operator makes.
pub const MANAGER: &str = "kubetrain";
