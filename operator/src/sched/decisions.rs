//! What one scheduling cycle decides: admissions with full placements, preemptions, for
//! every job left waiting a typed reason whose `Display` is a sentence a user can act on,
//! promotions, and the usage they leave (see `usage`).

use super::model::{Flavor, ReplicaPlacement};
// Named here too, where the cycle's other outputs are: the reason of a preemption is an
// input as well (a request the pods record), so it lives in `model`; why a job waits is
// `wait`'s.
pub use super::model::PreemptionReason;
use super::usage::Usage;
pub use super::wait::{WaitCode, WaitReason};

/// The output of [`schedule`](super::schedule).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Decisions {
    /// Jobs to start now, in decision order.
    pub admissions: Vec<Admission>,
    /// Jobs to ask for a checkpoint and then stop, grouped by the job they make room for.
    pub preemptions: Vec<Preemption>,
    /// Every pending job that is not admitted, with the reason.
    pub waiting: Vec<Waiting>,
    /// Running bonus jobs that are now within their VC's guarantee: no longer preemptible by
    /// reclaim (the controller clears their `bonus` flag).
    pub promotions: Vec<String>,
    /// Running jobs within their VC's guarantee that are now bonus: more important jobs of
    /// their VC (by priority) fill the guarantee, or the guarantee shrank. They are
    /// reclaimable from now on (the controller sets their `bonus` flag).
    pub demotions: Vec<String>,
    /// What each VirtualCluster and queue uses, with this cycle's promotions: the numbers
    /// of the Queue and VirtualCluster status and the metrics.
    pub usage: Usage,
    /// Preemptions withdrawn because their beneficiary no longer waits: the victims run on
    /// (the controller removes their checkpoint request).
    pub cancellations: Vec<Cancellation>,
}

impl Decisions {
    /// Records a change of standing: a job marked bonus (`was_bonus`) that is now
    /// `guaranteed` is promoted, a guaranteed one that is no longer is demoted.
    pub(crate) fn note_standing(&mut self, job: &str, was_bonus: bool, guaranteed: bool) {
        match (was_bonus, guaranteed) {
            (true, true) => self.promotions.push(job.to_string()),
            (false, false) => self.demotions.push(job.to_string()),
            _ => {}
        }
    }

    /// The reason a job waits, if it does.
    pub fn waiting_reason(&self, job: &str) -> Option<&WaitReason> {
        self.waiting
            .iter()
            .find(|w| w.job == job)
            .map(|w| &w.reason)
    }
    /// The place of a waiting job in its queue (1 is next), if it has one.
    pub fn position(&self, job: &str) -> Option<u32> {
        self.waiting
            .iter()
            .find(|w| w.job == job)
            .and_then(|w| w.position)
    }
    /// The admission of a job, if it is admitted.
    pub fn admission(&self, job: &str) -> Option<&Admission> {
        self.admissions.iter().find(|a| a.job == job)
    }
    /// All victims, in decision order.
    pub fn victims(&self) -> impl Iterator<Item = &str> {
        self.preemptions
            .iter()
            .flat_map(|p| p.victims.iter().map(String::as_str))
    }
}

/// A job to start, with where every replica goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    pub job: String,
    /// The GPU type chosen (empty for a CPU-only job).
    pub flavor: Flavor,
    /// Runs on borrowed capacity beyond its VC's guarantee: preemptible by reclaim.
    pub bonus: bool,
    /// One entry per replica of every task, ranks 0.. in topology order.
    pub placement: Vec<ReplicaPlacement>,
}

/// Victims to checkpoint and stop so that `beneficiary` fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// The job that needs the GPUs, or the node being drained or the GPU turned unhealthy.
    pub beneficiary: Beneficiary,
    pub reason: PreemptionReason,
    pub victims: Vec<String>,
    /// GPU-seconds of work lost since each victim's last checkpoint (or start), summed.
    pub lost_gpu_seconds: u64,
}

/// What a preemption makes room for: a waiting job, or nobody (a node being drained, a GPU
/// turned unhealthy: the victims leave where they run).
#[derive(Clone, PartialEq, Eq)]
pub enum Beneficiary {
    /// The waiting job, by key (`namespace/name`).
    Job(String),
    /// A node being drained, by name.
    Node(String),
    /// A GPU of a node turned unhealthy.
    Gpu { node: String, index: u32 },
    /// A queue held with `stopPolicy: HoldAndDrain` (itself or one above the job's), by name.
    Queue(String),
}

impl Beneficiary {
    /// The job the room is made for; None for a drain or an unhealthy GPU.
    pub fn job(&self) -> Option<&str> {
        match self {
            Beneficiary::Job(id) => Some(id),
            Beneficiary::Node(_) | Beneficiary::Gpu { .. } | Beneficiary::Queue(_) => None,
        }
    }
}

/// As Events and logs name it: the job's key, `node <name>`, `GPU <index> of node <name>`, or
/// `queue <name>`.
impl std::fmt::Display for Beneficiary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Beneficiary::Job(id) => f.write_str(id),
            Beneficiary::Node(node) => write!(f, "node {node}"),
            Beneficiary::Gpu { node, index } => write!(f, "GPU {index} of node {node}"),
            Beneficiary::Queue(queue) => write!(f, "queue {queue}"),
        }
    }
}

/// The Debug of its `Display` string, as when the beneficiary was a `String`: decisions are
/// compared byte for byte across versions by their Debug output (the bench's hash of
/// `format!("{d:?}")`, the simulator's outputs), so it must print exactly as before.
impl std::fmt::Debug for Beneficiary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// A beneficiary is a job key when it is that job (a node or a GPU never is).
impl PartialEq<&str> for Beneficiary {
    fn eq(&self, other: &&str) -> bool {
        self.job() == Some(*other)
    }
}

/// A preemption withdrawn from one victim: the job it made room for is no longer pending
/// (deleted, suspended, finished or placed elsewhere) and the victim has not acknowledged its
/// checkpoint, so it runs on. Only preemptions for a job (`Reclaim`, `Priority`, `QueueShare`,
/// `Consolidation`) are withdrawn: a drain or an unhealthy GPU still needs the job gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancellation {
    /// The victim.
    pub job: String,
    /// The job it was preempted for.
    pub beneficiary: String,
    pub reason: PreemptionReason,
}

/// A job left waiting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub job: String,
    pub reason: WaitReason,
    /// 1-based place among its queue's waiting jobs, in the order this cycle offered them
    /// (the queue's policy, as its VirtualCluster interleaves its queues). None for a job
    /// the cycle never offered (invalid, or its queue has no VirtualCluster).
    pub position: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::Beneficiary;

    /// The text and the Debug of each beneficiary are those of the `String` it replaced, so
    /// Events and the decisions' Debug (which benches and the simulator hash) stay the same.
    #[test]
    fn a_beneficiary_reads_as_the_string_it_replaced() {
        let cases = [
            (Beneficiary::Job("ns/train".into()), "ns/train"),
            (Beneficiary::Node("n0".into()), "node n0"),
            (
                Beneficiary::Gpu {
                    node: "n0".into(),
                    index: 2,
                },
                "GPU 2 of node n0",
            ),
        ];
        for (b, text) in cases {
            assert_eq!(b.to_string(), text);
            assert_eq!(format!("{b:?}"), format!("{:?}", text.to_string()));
        }
        assert_eq!(Beneficiary::Job("ns/train".into()), "ns/train");
        assert_ne!(Beneficiary::Node("ns/train".into()), "ns/train");
    }
}
