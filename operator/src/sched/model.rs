//! The snapshot: what the scheduling core is told about the cluster, the tenants and the
//! jobs. Plain structs with public fields, so that the controller can build them from
//! Kubernetes objects and the simulator from a trace. Time is `now` in seconds (any epoch,
//! the same for every timestamp in one snapshot); the core never reads a clock.

use std::collections::BTreeMap;
use std::fmt;

use super::constraints::{NodeConstraints, NodeFacts, Taint};

/// A fraction of one GPU in thousandths (1000 = one whole GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MilliGpu(pub u32);

impl MilliGpu {
    /// One whole GPU.
    pub const WHOLE: MilliGpu = MilliGpu(1000);
}

impl fmt::Display for MilliGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} GPU", self.0 / 1000, self.0 % 1000)
    }
}

/// A number of GPUs in a message, in milli-GPUs: a shared GPU counts as its share, and it
/// reads `8`, `0.5` or `8.25`, not rounded up to a whole GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gpus(pub u64);

impl Gpus {
    pub fn whole(gpus: u32) -> Gpus {
        Gpus(u64::from(gpus) * 1000)
    }
    pub fn saturating_sub(self, other: Gpus) -> Gpus {
        Gpus(self.0.saturating_sub(other.0))
    }
}

impl std::ops::Add for Gpus {
    type Output = Gpus;
    fn add(self, other: Gpus) -> Gpus {
        Gpus(self.0.saturating_add(other.0))
    }
}

impl fmt::Display for Gpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 1000, self.0 % 1000);
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{frac:03}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// Index of a GPU on its node, as NVML numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GpuIndex(pub u32);

/// A GPU type (the node's `gpu.kubetrain.io/product` label). Empty for CPU-only nodes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Flavor(pub String);

impl Flavor {
    pub fn new(name: impl Into<String>) -> Self {
        Flavor(name.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// CPU-only nodes have no flavor.
    pub fn is_cpu_only(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("CPU-only")
        } else {
            f.write_str(&self.0)
        }
    }
}

/// A level of the topology tree, smallest domain first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TopologyLevel {
    /// GPUs joined by NVLink or under one PCIe switch, on one node.
    GpuGroup,
    /// One machine.
    Node,
    /// Machines under one top-of-rack switch.
    Rack,
}

impl fmt::Display for TopologyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TopologyLevel::GpuGroup => "GPU group",
            TopologyLevel::Node => "node",
            TopologyLevel::Rack => "rack",
        })
    }
}

/// CPU, memory and GPU amounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Resources {
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    pub gpus: u32,
}

/// A set of closely connected GPUs of one node.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GpuGroup {
    pub gpus: Vec<GpuIndex>,
    /// Every pair in the group is joined by NVLink (or NVSwitch).
    pub nvlink: bool,
    /// NUMA node (socket), when known.
    pub numa_node: Option<u32>,
}

/// The GPU topology of one node: GPU → group → (socket) → node. The order of groups and of
/// GPUs inside them is the order ranks follow.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Topology {
    pub groups: Vec<GpuGroup>,
}

impl Topology {
    /// The topology assumed for a node that publishes none: PCIe only (no NVLink), GPUs
    /// split evenly over two sockets when there are more than four, else one group.
    pub fn default_for(gpu_count: u32) -> Topology {
        let all: Vec<GpuIndex> = (0..gpu_count).map(GpuIndex).collect();
        if gpu_count == 0 {
            return Topology::default();
        }
        if gpu_count <= 4 {
            return Topology {
                groups: vec![GpuGroup {
                    gpus: all,
                    nvlink: false,
                    numa_node: Some(0),
                }],
            };
        }
        let half = gpu_count.div_ceil(2) as usize;
        Topology {
            groups: vec![
                GpuGroup {
                    gpus: all[..half].to_vec(),
                    nvlink: false,
                    numa_node: Some(0),
                },
                GpuGroup {
                    gpus: all[half..].to_vec(),
                    nvlink: false,
                    numa_node: Some(1),
                },
            ],
        }
    }

    /// One NVLink group holding all GPUs (an NVSwitch machine such as a DGX).
    pub fn nvswitch(gpu_count: u32) -> Topology {
        Topology {
            groups: vec![GpuGroup {
                gpus: (0..gpu_count).map(GpuIndex).collect(),
                nvlink: true,
                numa_node: None,
            }],
        }
    }
}

/// One Kubernetes node.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Node {
    pub name: String,
    /// GPU type; empty for a CPU-only node.
    pub flavor: Flavor,
    /// Allocatable CPU, memory and GPUs; GPUs are numbered `0..allocatable.gpus`.
    pub allocatable: Resources,
    pub rack: Option<String>,
    /// Empty means [`Topology::default_for`] the GPU count.
    pub topology: Topology,
    /// GPUs nothing may be placed on (ECC errors, XID events).
    pub unhealthy_gpus: Vec<GpuIndex>,
    /// False when the node is cordoned: running work stays, nothing new is placed.
    pub schedulable: bool,
    /// Cordoned while Ready, as `kubectl drain` leaves it: jobs on it are asked to
    /// checkpoint and leave (reason `Drain`), so the drain can finish without killing them.
    pub draining: bool,
    /// Resources used by pods that are not kubetrain's (opaque: which GPUs is unknown, the
    /// core assumes the highest-numbered ones not used by our jobs).
    pub foreign: Resources,
    /// Pods of kubetrain's that are still on the node but belong to no job of the snapshot
    /// (a deleted job's pods while they terminate, an invalid job's): their GPUs stay
    /// taken, exactly where they are, until the pods are gone. Those on their way out
    /// ([`Held::leaving`]) are room that comes free, as a preempted job's is: a job that
    /// needs it waits for it rather than preempt another job for room elsewhere.
    pub held: Vec<Held>,
    /// The node's labels, for selectors and affinity.
    pub labels: BTreeMap<String, String>,
    /// Taints other than the node-lifecycle ones (those make a node unschedulable).
    pub taints: Vec<Taint>,
}

/// What one present pod holds on its node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Whole GPUs, or the single GPU holding the share.
    pub gpus: Vec<GpuIndex>,
    /// Set for a fractional replica.
    pub share: Option<MilliGpu>,
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    /// The job whose pod this is (`namespace/name`), when the pod is on its way out: being
    /// deleted, or its job deleted (the garbage collector deletes it next).
    pub leaving: Option<String>,
}

/// How many GPUs, and which kind, a guarantee in cells means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellGuarantee {
    pub level: TopologyLevel,
    pub count: u32,
}

/// A VirtualCluster's guarantee for one GPU type.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FlavorGuarantee {
    pub flavor: Flavor,
    /// Guaranteed GPUs (cells count towards these).
    pub gpus: u32,
    /// Part of the guarantee as whole topology domains, obtainable at any time.
    pub cells: Vec<CellGuarantee>,
}

/// A tenant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualCluster {
    pub name: String,
    pub guarantee: Vec<FlavorGuarantee>,
    /// Most GPUs (all types, bonus included) the tenant may hold. None: no cap.
    pub limit_gpus: Option<u32>,
    /// Share of idle capacity relative to other tenants (≥ 1).
    pub weight: u32,
    /// Deleted and waiting for its admitted jobs to finish: none of its queues admits
    /// anything new, so nothing is reclaimed for it; its guarantee still covers the jobs it
    /// runs, which are not preempted for the deletion.
    pub terminating: bool,
}

/// A tenant with no guarantee, no limit and weight 1 (the API's defaults).
impl Default for VirtualCluster {
    fn default() -> Self {
        VirtualCluster {
            name: String::new(),
            guarantee: Vec::new(),
            limit_gpus: None,
            weight: 1,
            terminating: false,
        }
    }
}

/// The order in which a queue admits its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueuePolicy {
    /// Oldest `queued_at` first.
    #[default]
    Fifo,
    /// Highest priority first, then FIFO.
    Priority,
    /// Smallest predicted duration first; jobs without a prediction after, FIFO.
    ShortestPredictedFirst,
    /// The user holding the smallest share of the queue's GPUs first, FIFO within a user.
    UserFair,
}

/// A line of jobs inside one VirtualCluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queue {
    pub name: String,
    pub virtual_cluster: String,
    /// Parent queue (same VirtualCluster); a child's share is a share of its parent's.
    pub parent: Option<String>,
    /// Percent of the VC's (or the parent's) guarantee this queue is entitled to.
    pub share: u32,
    /// Percent of the VC's limit (or of the cluster when the VC has none) the queue may hold.
    pub max_share: u32,
    /// Most GPUs one user may hold in this queue.
    pub user_limit: Option<u32>,
    pub policy: QueuePolicy,
    /// Whether a higher-priority job may preempt lower-priority jobs of this queue.
    pub priority_preemption: bool,
    /// What a job that does not start does to the jobs behind it ([`QueueingStrategy`]).
    pub strategy: QueueingStrategy,
    /// Deleted and waiting for its admitted jobs to finish (Kueue's terminating
    /// ClusterQueue): it, and every queue below it, admits nothing new.
    pub terminating: bool,
    /// Held (the API's `spec.stopPolicy`): it, and every queue below it, admits nothing
    /// new; under `HoldAndDrain` their running jobs leave too.
    pub stop: StopPolicy,
}

/// What the first job of a queue that does not start does to the jobs behind it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueingStrategy {
    /// Each job tries in turn: a job that does not start holds back nobody.
    #[default]
    BestEffort,
    /// The first job that does not start holds back the jobs behind it (Kueue's
    /// StrictFIFO), so a large job is not overtaken for ever by small ones.
    Strict,
    /// The first job that does not start gets a reservation at its earliest predicted start
    /// (`estimate`); the jobs behind it start now only where they do not delay it: predicted
    /// to end before it, or on GPUs it does not need. Where that start cannot be predicted
    /// (running jobs without predictions), as `Strict`.
    Backfill,
}

impl QueueingStrategy {
    /// Whether the first job that does not start holds back (some of) the jobs behind it.
    pub fn holds_back(self) -> bool {
        !matches!(self, QueueingStrategy::BestEffort)
    }
}

/// A queue's hold, as Kueue's `stopPolicy`, weakest first: a queue is held by the
/// strongest of its own and its ancestors' ([`Ord`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StopPolicy {
    /// Admits jobs.
    #[default]
    None,
    /// Admits nothing new; admitted jobs keep running.
    Hold,
    /// Admits nothing new, and admitted jobs checkpoint and go back to the queue.
    HoldAndDrain,
}

impl fmt::Display for StopPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopPolicy::None => "None",
            StopPolicy::Hold => "Hold",
            StopPolicy::HoldAndDrain => "HoldAndDrain",
        })
    }
}

/// A FIFO queue entitled to its whole VirtualCluster (share and maxShare 100, the API's
/// defaults), best effort, without priority preemption or a user limit.
impl Default for Queue {
    fn default() -> Self {
        Queue {
            name: String::new(),
            virtual_cluster: String::new(),
            parent: None,
            share: 100,
            max_share: 100,
            user_limit: None,
            policy: QueuePolicy::Fifo,
            priority_preemption: false,
            strategy: QueueingStrategy::BestEffort,
            terminating: false,
            stop: StopPolicy::None,
        }
    }
}

/// What each replica of a task asks of GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum GpuDemand {
    #[default]
    None,
    /// Whole GPUs, none shared.
    Whole(u32),
    /// A fraction of one GPU (1..=999 milli).
    Share(MilliGpu),
}

impl GpuDemand {
    /// The demand in milli-GPUs.
    pub fn milli(self) -> u64 {
        match self {
            GpuDemand::None => 0,
            GpuDemand::Whole(n) => u64::from(n) * 1000,
            GpuDemand::Share(m) => u64::from(m.0),
        }
    }
}

/// One role of a job: `replicas` identical pods.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Task {
    pub name: String,
    pub replicas: u32,
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    pub gpus: GpuDemand,
    /// Where its pods may run (selector, affinity, tolerations, volumes).
    pub constraints: NodeConstraints,
}

/// Where a job's GPUs must or should be relative to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TopologyConstraint {
    /// All of the job's GPUs within one domain of this level, or the job waits.
    pub required: Option<TopologyLevel>,
    /// All of the job's GPUs within one domain of this level when possible.
    pub preferred: Option<TopologyLevel>,
}

/// Where one replica runs (also what an admission decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaPlacement {
    pub task: String,
    pub index: u32,
    /// Global rank: contiguous per node, GPUs in topology order; 0 is the first task's
    /// first replica, its node first and the other nodes in placement order.
    pub rank: u32,
    pub node: String,
    /// Whole GPUs, or the single GPU holding the share.
    pub gpus: Vec<GpuIndex>,
    /// Set for a fractional replica.
    pub share: Option<MilliGpu>,
}

/// The state of a job that holds resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    pub placement: Vec<ReplicaPlacement>,
    /// Admitted beyond its VC's guarantee: preemptible by reclaim.
    pub bonus: bool,
    pub started_at: i64,
    pub last_checkpoint: Option<i64>,
    pub checkpoint_grace_seconds: i64,
    /// Not a reclaim victim before it ran this long, while another victim set exists.
    pub min_runtime_seconds: i64,
    /// Already asked to checkpoint and leave: its resources are as good as free for
    /// planning, and it is never chosen again.
    pub preempting: bool,
    /// The scheduler's request behind `preempting`, when its pods record one (None for a
    /// suspension, a job leaving for another cause, or where nobody records it).
    pub checkpoint_request: Option<CheckpointRequest>,
}

/// A scheduler's request that a running job checkpoint and leave, as its pods record it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRequest {
    pub reason: PreemptionReason,
    /// The job the room is for (`namespace/name`): set for `Reclaim` and `Priority`.
    pub beneficiary: Option<String>,
    /// The request can still be withdrawn: the job has not acknowledged its checkpoint and
    /// its pods are not being stopped.
    pub withdrawable: bool,
}

/// A TrainingJob, pending (`running` is None) or holding resources.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Job {
    /// `namespace/name`.
    pub id: String,
    pub queue: String,
    pub priority: i32,
    /// When it entered its queue (kept across preemptions).
    pub queued_at: i64,
    pub user: String,
    pub tasks: Vec<Task>,
    /// Acceptable GPU types, most preferred first; empty means any.
    pub gpu_types: Vec<Flavor>,
    pub topology: TopologyConstraint,
    pub retries: u32,
    pub preemptions: u32,
    pub predicted_duration_seconds: Option<i64>,
    pub running: Option<Running>,
    /// Stopped for a preemption or a drain, its pods gone, and not yet back in its queue
    /// (a drained job waits a few seconds for `kubectl drain` to see its old pods gone). It
    /// keeps its place: it is not admitted yet, and the jobs behind it in its queue wait for
    /// it rather than take the GPUs it will need.
    pub returning: bool,
}

impl Job {
    /// Milli-GPUs the whole gang asks for.
    pub fn gpu_milli(&self) -> u64 {
        self.tasks
            .iter()
            .map(|t| u64::from(t.replicas) * t.gpus.milli())
            .sum()
    }
}

/// Everything one scheduling cycle looks at.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Seconds; every other timestamp uses the same epoch.
    pub now: i64,
    pub nodes: Vec<Node>,
    pub virtual_clusters: Vec<VirtualCluster>,
    pub queues: Vec<Queue>,
    /// Pending and running jobs (finished and suspended jobs are left out).
    pub jobs: Vec<Job>,
    /// The workload's replica shapes and how often each arrives, when known beyond the
    /// snapshot's own jobs (supplied by configuration, or the operator's rolling history of
    /// arrivals): the fragmentation score weighs shapes by it. Empty: the mix is learned
    /// from the snapshot's jobs.
    pub workload: Vec<WorkloadShape>,
}

/// One replica shape of the workload, with how many replicas of it were seen.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WorkloadShape {
    pub gpus: GpuDemand,
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    /// GPU types the shape accepts; empty: any.
    pub gpu_types: Vec<Flavor>,
    pub count: u64,
}

impl Snapshot {
    /// Approximate bytes this snapshot occupies (structs plus heap), for the memory budget.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        let s = |x: &String| x.capacity();
        let mut b = size_of::<Snapshot>();
        for n in &self.nodes {
            b += size_of::<Node>() + s(&n.name) + n.flavor.0.capacity();
            b += n.rack.as_ref().map_or(0, s);
            b += n.topology.groups.capacity() * size_of::<GpuGroup>();
            b += n
                .topology
                .groups
                .iter()
                .map(|g| g.gpus.capacity() * size_of::<GpuIndex>())
                .sum::<usize>();
            b += n.unhealthy_gpus.capacity() * size_of::<GpuIndex>();
        }
        for j in &self.jobs {
            b += size_of::<Job>() + s(&j.id) + s(&j.queue) + s(&j.user);
            b += j.tasks.capacity() * size_of::<Task>();
            b += j.tasks.iter().map(|t| s(&t.name)).sum::<usize>();
            b += j
                .gpu_types
                .iter()
                .map(|f| size_of::<Flavor>() + f.0.capacity())
                .sum::<usize>();
            if let Some(r) = &j.running {
                b += r.placement.capacity() * size_of::<ReplicaPlacement>();
                b += r
                    .placement
                    .iter()
                    .map(|p| s(&p.task) + s(&p.node) + p.gpus.capacity() * size_of::<GpuIndex>())
                    .sum::<usize>();
            }
        }
        b += self.virtual_clusters.len() * size_of::<VirtualCluster>();
        b += self.queues.len() * size_of::<Queue>();
        b
    }
}

/// Why a job is preempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreemptionReason {
    /// The GPUs are borrowed (bonus) and their owner needs them back for its guarantee.
    Reclaim,
    /// A higher-priority job of the same queue (with priority preemption on) needs them.
    Priority,
    /// The job's queue uses more than its share of its VirtualCluster's guarantee, and a job
    /// of a sibling queue below its own share (of no lower priority) needs it back.
    QueueShare,
    /// A job of its own team, no less important, needs GPUs together on one node (or rack)
    /// where only scattered ones are free: the job moves, to GPUs that are free for it now
    /// (KAI's consolidation).
    Consolidation,
    /// A node under the job is being drained (cordoned while Ready): the job checkpoints and
    /// leaves so the drain can finish, and returns to its queue.
    Drain,
    /// A GPU under the job turned unhealthy (the node labeler's report): the job checkpoints
    /// and leaves while it still can, and runs again on healthy GPUs.
    UnhealthyGpu,
    /// The job's queue (or one above it) is held with `HoldAndDrain`: the job checkpoints,
    /// goes back to its queue and waits there until the hold is lifted.
    QueueHold,
}

impl PreemptionReason {
    pub const ALL: [PreemptionReason; 7] = [
        PreemptionReason::Reclaim,
        PreemptionReason::Priority,
        PreemptionReason::QueueShare,
        PreemptionReason::Consolidation,
        PreemptionReason::Drain,
        PreemptionReason::UnhealthyGpu,
        PreemptionReason::QueueHold,
    ];

    /// The reason its [`Display`](fmt::Display) name names, if any.
    pub fn from_name(name: &str) -> Option<PreemptionReason> {
        Self::ALL.into_iter().find(|r| r.to_string() == name)
    }

    /// Whether it makes room for one job, which may stop needing it (see `cancel`); a drain
    /// an unhealthy GPU or a queue's hold needs the job gone whoever waits.
    pub fn for_a_job(self) -> bool {
        matches!(
            self,
            PreemptionReason::Reclaim
                | PreemptionReason::Priority
                | PreemptionReason::QueueShare
                | PreemptionReason::Consolidation
        )
    }

    /// The reason in a sentence: "after a queue-share preemption".
    pub fn noun(self) -> &'static str {
        match self {
            PreemptionReason::Reclaim => "reclaim",
            PreemptionReason::Priority => "priority",
            PreemptionReason::QueueShare => "queue-share",
            PreemptionReason::Consolidation => "consolidation",
            PreemptionReason::Drain => "drain",
            PreemptionReason::UnhealthyGpu => "unhealthy-GPU",
            PreemptionReason::QueueHold => "queue-hold",
        }
    }
}

impl fmt::Display for PreemptionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PreemptionReason::Reclaim => "Reclaim",
            PreemptionReason::Priority => "Priority",
            PreemptionReason::QueueShare => "QueueShare",
            PreemptionReason::Consolidation => "Consolidation",
            PreemptionReason::Drain => "Drain",
            PreemptionReason::UnhealthyGpu => "UnhealthyGpu",
            PreemptionReason::QueueHold => "QueueHold",
        })
    }
}

impl NodeFacts for Node {
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    fn taints(&self) -> &[Taint] {
        &self.taints
    }
}
