//! Why a job waits: the reasons the core gives every job it does not start, each with the
//! numbers its message is built from, and the sentence users read in the job's status.

use std::fmt;

use super::model::{Flavor, Gpus, PreemptionReason, StopPolicy, TopologyLevel};
// The names of the API, plain Rust like this module: the core stays free of kube.
pub use crate::api::reasons::WaitCode;

/// Why a job waits. `Display` gives a sentence for the job's status message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// The spec cannot be scheduled as written (unknown queue, zero replicas, ...).
    Invalid { message: String },
    /// The VC's guarantee for the job's GPU types is in use and the job does not fit on the
    /// idle GPUs it may borrow.
    QuotaExhausted {
        virtual_cluster: String,
        guaranteed_gpus: u32,
        in_use_gpus: Gpus,
        needed_gpus: Gpus,
        /// The job's queue is within its share of the guarantee with the job, and this
        /// sibling queue uses more than its own share, but only with jobs of higher priority
        /// than this one: a share is never taken back from those.
        share_kept_by: Option<String>,
        /// The job's `topology.required`: the idle GPUs it may borrow must lie within one
        /// such domain, so enough of them in number can still be too few.
        required: Option<TopologyLevel>,
    },
    /// The VC's hard limit would be exceeded.
    OverLimit {
        virtual_cluster: String,
        limit_gpus: u32,
        in_use_gpus: Gpus,
        needed_gpus: Gpus,
    },
    /// The queue (or an ancestor) would go above its maxShare.
    QueueMaxShare {
        queue: String,
        max_gpus: Gpus,
        in_use_gpus: Gpus,
        needed_gpus: Gpus,
    },
    /// The user would go above the queue's per-user limit.
    UserLimit {
        user: String,
        queue: String,
        limit_gpus: u32,
        in_use_gpus: Gpus,
        needed_gpus: Gpus,
    },
    /// Within quota, but no free GPUs in the shape the job needs.
    NoFit {
        flavors: Vec<Flavor>,
        needed_gpus: Gpus,
        largest_per_replica: u32,
        required: Option<TopologyLevel>,
        /// Most free whole GPUs on one node of an acceptable type.
        largest_free_on_node: u32,
        /// Free whole GPUs of acceptable types in total.
        free_gpus: u32,
        /// The two counts above are of the nodes the job's node constraints (node selector,
        /// required affinity, taints) allow, not of every node of its types.
        on_allowed_nodes: bool,
        /// The job's VirtualCluster, when the job is within its guarantee but that guarantee
        /// cannot be obtained now even by reclaim (guarantees above what the cluster has,
        /// or GPUs lost): the room it waits for is other tenants' guaranteed work.
        guarantee_at_risk: Option<String>,
    },
    /// The job can never fit this cluster (even empty).
    NeverFits { message: String },
    /// The job fits no node that takes new work now, but would with the nodes of its GPU
    /// types that are cordoned or not ready (`count` of them; `nodes`: the first few by name).
    NodesUnavailable { count: u32, nodes: Vec<String> },
    /// The free GPUs that would fit are whole cells kept for other tenants' cell guarantees.
    ReservedForCells { flavor: Flavor },
    /// Victims were asked to checkpoint and leave; the job starts once they are gone.
    WaitingForPreemption {
        reason: PreemptionReason,
        victims: Vec<String>,
    },
    /// The room the job needs is held by pods of no job on their way out (`pods_of`: the
    /// jobs, deleted or replaced, whose pods they are); it starts once they are gone.
    WaitingForTerminatingPods { pods_of: Vec<String> },
    /// Only victims that have not yet run their minimum runtime could make room; the
    /// preemption happens at `until` (seconds) at the latest.
    WaitingForMinRuntime { until: i64, victims: Vec<String> },
    /// The queue keeps a strict order and `head`, ahead of this job, has not started.
    BehindQueueHead { queue: String, head: String },
    /// The queue backfills: `head`, ahead of this job, has not started and holds a
    /// reservation from `at` (seconds, its earliest predicted start); this job would delay
    /// it (it is not predicted to end by then, and needs GPUs the reservation counts on).
    BehindReservation {
        queue: String,
        head: String,
        at: i64,
    },
    /// Stopped for a preemption or a drain, the job is on its way back to `queue`, keeping
    /// its place ([`Job::returning`](super::model::Job::returning)).
    Returning { queue: String },
    /// `head`, ahead of this job in `queue`, is on its way back after a preemption or a
    /// drain and keeps its place: this job's turn comes after it.
    BehindReturningJob { queue: String, head: String },
    /// The job's queue (or one above it) was deleted: it admits nothing new while its
    /// admitted jobs finish.
    QueueTerminating { queue: String },
    /// The job's VirtualCluster was deleted: none of its queues admits anything new while
    /// its admitted jobs finish.
    VirtualClusterTerminating { virtual_cluster: String },
    /// The job's queue, or `queue` above it, is held by its `stopPolicy`: it admits nothing
    /// new until the hold is lifted.
    QueueHeld { queue: String, policy: StopPolicy },
}

impl WaitReason {
    /// `NodesUnavailable` for these nodes (any order, repeats allowed): the count, and the
    /// first few by name.
    pub(crate) fn nodes_unavailable(mut nodes: Vec<&str>) -> WaitReason {
        nodes.sort_unstable();
        nodes.dedup();
        WaitReason::NodesUnavailable {
            count: nodes.len() as u32,
            nodes: nodes.iter().take(5).map(|n| n.to_string()).collect(),
        }
    }

    /// The reason of the job's `Admitted=False` condition.
    pub fn code(&self) -> WaitCode {
        match self {
            WaitReason::Invalid { .. } => WaitCode::Invalid,
            WaitReason::QuotaExhausted { .. } => WaitCode::QuotaExhausted,
            // Larger than the limit itself: no wait ends it, so tools that tell waiting from
            // stuck (Argo CD's health, alerts) need a code of its own.
            _ if self.exceeds_limit() => WaitCode::ExceedsLimit,
            WaitReason::OverLimit { .. } => WaitCode::OverLimit,
            WaitReason::QueueMaxShare { .. } => WaitCode::QueueMaxShare,
            WaitReason::UserLimit { .. } => WaitCode::UserLimit,
            WaitReason::NoFit { .. } => WaitCode::NoFit,
            WaitReason::NeverFits { .. } => WaitCode::NeverFits,
            WaitReason::NodesUnavailable { .. } => WaitCode::NodesUnavailable,
            WaitReason::ReservedForCells { .. } => WaitCode::ReservedForCells,
            WaitReason::WaitingForPreemption { .. } => WaitCode::WaitingForPreemption,
            WaitReason::WaitingForTerminatingPods { .. } => WaitCode::WaitingForTerminatingPods,
            WaitReason::WaitingForMinRuntime { .. } => WaitCode::WaitingForMinRuntime,
            WaitReason::BehindQueueHead { .. } => WaitCode::BehindQueueHead,
            WaitReason::BehindReservation { .. } => WaitCode::BehindReservation,
            WaitReason::Returning { .. } => WaitCode::Returning,
            WaitReason::BehindReturningJob { .. } => WaitCode::BehindReturningJob,
            WaitReason::QueueTerminating { .. } => WaitCode::QueueTerminating,
            WaitReason::VirtualClusterTerminating { .. } => WaitCode::VirtualClusterTerminating,
            WaitReason::QueueHeld { .. } => WaitCode::QueueHeld,
        }
    }

    /// Whether the job needs more GPUs than one of its limits allows in all: it cannot start
    /// until the job or the limit changes.
    pub fn exceeds_limit(&self) -> bool {
        match self {
            WaitReason::OverLimit {
                limit_gpus,
                needed_gpus,
                ..
            }
            | WaitReason::UserLimit {
                limit_gpus,
                needed_gpus,
                ..
            } => *needed_gpus > Gpus::whole(*limit_gpus),
            WaitReason::QueueMaxShare {
                max_gpus,
                needed_gpus,
                ..
            } => needed_gpus > max_gpus,
            _ => false,
        }
    }

    /// Whether `other` says the same thing but for the cluster's counts (GPUs in use, free,
    /// free on one node), which move with every job that starts or ends anywhere.
    /// The jobs whose leaving the job waits for, when it waits on a preemption (or on the
    /// pods of deleted jobs): `None` for any other wait.
    pub fn waits_on(&self) -> Option<&[String]> {
        match self {
            WaitReason::WaitingForPreemption { victims, .. }
            | WaitReason::WaitingForMinRuntime { victims, .. } => Some(victims),
            WaitReason::WaitingForTerminatingPods { pods_of } => Some(pods_of),
            _ => None,
        }
    }

    pub fn same_cause(&self, other: &WaitReason) -> bool {
        self.without_counts() == other.without_counts()
    }

    fn without_counts(&self) -> WaitReason {
        let mut r = self.clone();
        match &mut r {
            WaitReason::QuotaExhausted { in_use_gpus, .. }
            | WaitReason::OverLimit { in_use_gpus, .. }
            | WaitReason::QueueMaxShare { in_use_gpus, .. }
            | WaitReason::UserLimit { in_use_gpus, .. } => *in_use_gpus = Gpus(0),
            WaitReason::NoFit {
                largest_free_on_node,
                free_gpus,
                ..
            } => {
                *largest_free_on_node = 0;
                *free_gpus = 0;
            }
            // the reservation moves with every prediction that runs over
            WaitReason::BehindReservation { at, .. } => *at = 0,
            WaitReason::Invalid { .. }
            | WaitReason::NeverFits { .. }
            | WaitReason::NodesUnavailable { .. }
            | WaitReason::ReservedForCells { .. }
            | WaitReason::WaitingForPreemption { .. }
            | WaitReason::WaitingForTerminatingPods { .. }
            | WaitReason::WaitingForMinRuntime { .. }
            | WaitReason::BehindQueueHead { .. }
            | WaitReason::Returning { .. }
            | WaitReason::BehindReturningJob { .. }
            | WaitReason::QueueTerminating { .. }
            | WaitReason::VirtualClusterTerminating { .. }
            | WaitReason::QueueHeld { .. } => {}
        }
        r
    }
}

fn list(flavors: &[Flavor]) -> String {
    if flavors.is_empty() {
        return "any type".to_string();
    }
    flavors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where borrowed GPUs must lie for a job with `topology.required`: idle GPUs enough in
/// number but spread over racks read as too few without it (an acceptance run).
fn within_one(required: Option<TopologyLevel>) -> String {
    required.map_or_else(String::new, |l| {
        format!(" within one {l}, as its topology.required asks")
    })
}

/// The room a wait against a guarantee or a limit leaves the job ([`WaitReason::room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// GPUs left within the guarantee or limit.
    pub left: Gpus,
    /// GPUs that must free up within it before the job fits.
    pub short: Gpus,
}

impl WaitReason {
    /// What a wait against a guarantee or a limit (`QuotaExhausted`, `OverLimit`,
    /// `QueueMaxShare`, `UserLimit`) leaves the job: `None` for another wait, and for a job
    /// larger than the guarantee or limit itself, which no freeing fits. The message and
    /// `status.waiting` both say these numbers.
    pub fn room(&self) -> Option<Room> {
        match self {
            WaitReason::QuotaExhausted {
                guaranteed_gpus,
                in_use_gpus,
                needed_gpus,
                ..
            } => {
                let guarantee = Gpus::whole(*guaranteed_gpus);
                let left = guarantee.saturating_sub(*in_use_gpus);
                (*needed_gpus <= guarantee).then(|| Room {
                    left,
                    short: needed_gpus.saturating_sub(left),
                })
            }
            WaitReason::OverLimit {
                limit_gpus,
                in_use_gpus,
                needed_gpus,
                ..
            }
            | WaitReason::UserLimit {
                limit_gpus,
                in_use_gpus,
                needed_gpus,
                ..
            } => within_limit(Gpus::whole(*limit_gpus), *in_use_gpus, *needed_gpus),
            WaitReason::QueueMaxShare {
                max_gpus,
                in_use_gpus,
                needed_gpus,
                ..
            } => within_limit(*max_gpus, *in_use_gpus, *needed_gpus),
            _ => None,
        }
    }
}

/// The room under a hard limit: what is left of it, and what in use and needed together
/// are above it (`None`: the job alone is above it).
fn within_limit(limit: Gpus, in_use: Gpus, needed: Gpus) -> Option<Room> {
    (needed <= limit).then(|| Room {
        left: limit.saturating_sub(in_use),
        short: (in_use + needed).saturating_sub(limit),
    })
}

/// The message of each group of reasons is written by its own function below; `fmt` sends
/// each reason to its group's, which writes nothing for a reason of another group.
impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::Invalid { message } => write!(
                f,
                "The job cannot be scheduled: {message}. Fix the spec and apply it again."
            ),
            WaitReason::NeverFits { message } => {
                write!(f, "The job cannot run on the cluster as it is: {message}.")
            }
            WaitReason::QuotaExhausted { .. } => self.fmt_quota(f),
            WaitReason::OverLimit { .. } | WaitReason::QueueMaxShare { .. } => self.fmt_limit(f),
            WaitReason::UserLimit { .. } => self.fmt_user_limit(f),
            WaitReason::NoFit { .. } => self.fmt_no_fit(f),
            WaitReason::NodesUnavailable { .. } | WaitReason::ReservedForCells { .. } => {
                self.fmt_nodes(f)
            }
            WaitReason::WaitingForPreemption { .. }
            | WaitReason::WaitingForTerminatingPods { .. }
            | WaitReason::WaitingForMinRuntime { .. } => self.fmt_leaving(f),
            WaitReason::BehindQueueHead { .. }
            | WaitReason::BehindReservation { .. }
            | WaitReason::Returning { .. }
            | WaitReason::BehindReturningJob { .. }
            | WaitReason::QueueTerminating { .. }
            | WaitReason::VirtualClusterTerminating { .. }
            | WaitReason::QueueHeld { .. } => self.fmt_queue(f),
        }
    }
}

impl WaitReason {
    /// `QuotaExhausted`: the guarantee in use, or smaller than the job.
    fn fmt_quota(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WaitReason::QuotaExhausted {
            virtual_cluster,
            guaranteed_gpus,
            in_use_gpus,
            needed_gpus,
            share_kept_by,
            required,
        } = self
        else {
            return Ok(());
        };
        let Some(Room { left, short: more }) = self.room() else {
            return write!(
                f,
                "VirtualCluster {virtual_cluster} guarantees {guaranteed_gpus} GPUs ({in_use_gpus} in use) and this job needs {needed_gpus}, more than the whole guarantee: it can start only on borrowed GPUs, and it does not fit on the idle GPUs it may borrow{}. It starts when enough idle GPUs appear; a job within the guarantee would start sooner and could not be preempted.",
                within_one(*required)
            );
        };
        write!(
            f,
            "VirtualCluster {virtual_cluster} has {left} of its {guaranteed_gpus} guaranteed GPUs left ({in_use_gpus} in use); this job needs {needed_gpus}, {more} more than are left, and it does not fit on the idle GPUs it may borrow{}.",
            within_one(*required)
        )?;
        // The last sentence is what would start the job (`kubectl kubetrain why`
        // shows it as such); "at least": where the freed GPUs lie matters too.
        match share_kept_by {
            Some(sibling) => write!(
                f,
                " Its queue is within its share of the guarantee, but queue {sibling} uses more than its own share with jobs of higher priority than this one, and a share is taken back only from jobs of no higher priority. It starts when those jobs free at least {more}, when it is given a higher priority, or when enough idle GPUs appear."
            ),
            None => write!(
                f,
                " It starts when the team's own jobs free at least {more}, or enough idle GPUs appear."
            ),
        }
    }

    /// `OverLimit`, `QueueMaxShare`: the VirtualCluster's or the queue's hard limit reached,
    /// or smaller than the job (`ExceedsLimit`).
    fn fmt_limit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.room()) {
            (
                WaitReason::OverLimit {
                    virtual_cluster,
                    limit_gpus,
                    needed_gpus,
                    ..
                },
                None,
            ) => write!(
                f,
                "VirtualCluster {virtual_cluster} may hold at most {limit_gpus} GPUs and this job needs {needed_gpus}, more than the limit itself: it cannot start as it is. Ask for fewer GPUs, or for a higher limit."
            ),
            (
                WaitReason::OverLimit {
                    virtual_cluster,
                    limit_gpus,
                    in_use_gpus,
                    needed_gpus,
                },
                Some(Room { left, short }),
            ) => write!(
                f,
                "VirtualCluster {virtual_cluster} holds {in_use_gpus} GPUs of its limit of {limit_gpus}, so {left} are left; this job needs {needed_gpus}. It starts when the team's jobs free {short}, or ask for a higher limit."
            ),
            (
                WaitReason::QueueMaxShare {
                    queue,
                    max_gpus,
                    needed_gpus,
                    ..
                },
                None,
            ) => write!(
                f,
                "Queue {queue} may hold at most {max_gpus} GPUs and this job needs {needed_gpus}, more than the queue's maximum itself: it cannot start as it is. Ask for fewer GPUs, or raise the queue's maxShare."
            ),
            (
                WaitReason::QueueMaxShare {
                    queue,
                    max_gpus,
                    in_use_gpus,
                    needed_gpus,
                },
                Some(Room { left, short }),
            ) => write!(
                f,
                "Queue {queue} holds {in_use_gpus} GPUs of its maximum of {max_gpus}, so {left} are left; this job needs {needed_gpus}. It starts when jobs of the queue free {short}, or raise the queue's maxShare."
            ),
            _ => Ok(()),
        }
    }

    /// `UserLimit`: the queue's per-user limit reached, or smaller than the job
    /// (`ExceedsLimit`).
    fn fmt_user_limit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.room()) {
            (
                WaitReason::UserLimit {
                    user,
                    queue,
                    limit_gpus,
                    needed_gpus,
                    ..
                },
                None,
            ) => write!(
                f,
                "Queue {queue} lets each user hold at most {limit_gpus} GPUs and this job of user {user} needs {needed_gpus}, more than the limit itself: it cannot start as it is. Ask for fewer GPUs, or raise the queue's userLimit."
            ),
            (
                WaitReason::UserLimit {
                    user,
                    queue,
                    limit_gpus,
                    in_use_gpus,
                    needed_gpus,
                },
                Some(Room { left, short }),
            ) => write!(
                f,
                "User {user} holds {in_use_gpus} GPUs in queue {queue}, whose per-user limit is {limit_gpus}, so {left} are left; this job needs {needed_gpus}. It starts when the user's other jobs free {short}."
            ),
            _ => Ok(()),
        }
    }

    /// `NoFit`: within quota, but no free GPUs in the shape the job needs.
    fn fmt_no_fit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WaitReason::NoFit {
            flavors,
            needed_gpus,
            largest_per_replica,
            required,
            largest_free_on_node,
            free_gpus,
            on_allowed_nodes,
            guarantee_at_risk,
        } = self
        else {
            return Ok(());
        };
        write!(
            f,
            "No room for {needed_gpus} GPUs ({largest_per_replica} per replica at most"
        )?;
        if let Some(level) = required {
            write!(f, ", all within one {level}")?;
        }
        let nodes = if *on_allowed_nodes {
            " of the nodes its node selector, affinity and tolerations allow"
        } else {
            ""
        };
        write!(
            f,
            ") of {}: {free_gpus} GPUs are free{nodes}, at most {largest_free_on_node} on one node. The job waits for running jobs to finish; fewer GPUs per replica",
            list(flavors)
        )?;
        if required.is_some() {
            write!(f, ", a looser topology requirement")?;
        }
        write!(f, " or more GPU types would let it start sooner.")?;
        if let Some(vc) = guarantee_at_risk {
            write!(
                f,
                " The job is within VirtualCluster {vc}'s guarantee, but that guarantee cannot all be obtained now, even by reclaim: the GPUs it would take back are other teams' guaranteed work (see the VirtualCluster's GuaranteeAtRisk condition: guarantees above what the cluster has, or GPUs lost)."
            )?;
        }
        Ok(())
    }

    /// `NodesUnavailable`, `ReservedForCells`: the GPUs that would fit exist, but on nodes
    /// that take no work now or in cells kept for others.
    fn fmt_nodes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::NodesUnavailable { count, nodes } => {
                let more = count.saturating_sub(nodes.len() as u32);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                write!(
                    f,
                    "The job fits no node that takes new work now; it would fit with the {count} \
                     node(s) of its GPU types that are cordoned or not ready ({}{more}). It is \
                     placed once enough of them are back.",
                    nodes.join(", ")
                )
            }
            WaitReason::ReservedForCells { flavor } => write!(
                f,
                "The free {flavor} GPUs that would fit are whole cells kept for other teams' topology guarantees; the job waits for partly used capacity to free up."
            ),
            _ => Ok(()),
        }
    }

    /// `WaitingForPreemption`, `WaitingForTerminatingPods`, `WaitingForMinRuntime`: the room
    /// is held by jobs on their way out, or soon to be.
    fn fmt_leaving(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::WaitingForPreemption { reason, victims } => write!(
                f,
                "Waiting for {} job(s) to checkpoint and leave ({}) after a {} preemption; the job starts once they are gone.",
                victims.len(),
                victims.join(", "),
                reason.noun()
            ),
            WaitReason::WaitingForTerminatingPods { pods_of } => write!(
                f,
                "The GPUs this job needs are held by terminating pods of {} (deleted or replaced); the job starts once they are gone.",
                pods_of.join(", ")
            ),
            WaitReason::WaitingForMinRuntime { until, victims } => write!(
                f,
                "Room can only be made by preempting job(s) that have not yet run their minimum runtime ({}); they will be preempted at {} at the latest.",
                victims.join(", "),
                // as every other time users read, not seconds since 1970
                k8s_openapi::jiff::Timestamp::from_second(*until)
                    .map_or_else(|_| format!("time {until}"), |t| t.to_string())
            ),
            _ => Ok(()),
        }
    }

    /// `BehindQueueHead`, `Returning`, `BehindReturningJob`, `QueueTerminating`,
    /// `VirtualClusterTerminating`: the queue's order or its deletion holds the job.
    fn fmt_queue(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::BehindQueueHead { queue, head } => write!(
                f,
                "Queue {queue} keeps a strict order (queueingStrategy: Strict) and job {head}, ahead of this one, has not started yet. This job starts after {head} does, or once {head} is deleted."
            ),
            WaitReason::BehindReservation { queue, head, at } => write!(
                f,
                "Queue {queue} backfills (queueingStrategy: Backfill): job {head}, ahead of this one, has GPUs reserved from {}, its earliest predicted start, and this job would delay it (it is not predicted to end by then). This job starts when it no longer delays {head}, or after {head} starts.",
                k8s_openapi::jiff::Timestamp::from_second(*at)
                    .map_or_else(|_| format!("time {at}"), |t| t.to_string())
            ),
            WaitReason::Returning { queue } => write!(
                f,
                "Stopped for a drain or a preemption; on its way back to queue {queue}, keeping its place: the jobs behind it wait until it is back, in a few seconds."
            ),
            WaitReason::BehindReturningJob { queue, head } => write!(
                f,
                "Job {head}, ahead of this one in queue {queue}, was stopped for a drain or a preemption and is on its way back, keeping its place: this job's turn comes after it, in a few seconds."
            ),
            WaitReason::QueueTerminating { queue } => write!(
                f,
                "Queue {queue} is being deleted: it admits no new jobs while its admitted jobs finish. Move this job to another queue (spec.queue), or re-create the queue once it is gone."
            ),
            WaitReason::VirtualClusterTerminating { virtual_cluster } => write!(
                f,
                "VirtualCluster {virtual_cluster} is being deleted: its queues admit no new jobs while its admitted jobs finish. Move this job to a queue of another VirtualCluster (spec.queue), or re-create the VirtualCluster once it is gone."
            ),
            WaitReason::QueueHeld { queue, policy } => write!(
                f,
                "Queue {queue} is held (stopPolicy: {policy}): it admits no new jobs until its stopPolicy is set back to None (kubectl kubetrain release {queue})."
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job larger than a limit itself is told it cannot start as it is, not that it starts
    /// when others free GPUs (found in a `make run` walk-through: "It starts when the team's
    /// jobs free 21" of a team holding 17).
    #[test]
    fn a_job_larger_than_a_limit_is_told_it_cannot_start_as_it_is() {
        let over = WaitReason::OverLimit {
            virtual_cluster: "nlp".into(),
            limit_gpus: 20,
            in_use_gpus: Gpus(17000),
            needed_gpus: Gpus(24000),
        };
        assert!(
            over.to_string().contains("more than the limit itself"),
            "{over}"
        );
        let within = WaitReason::OverLimit {
            virtual_cluster: "nlp".into(),
            limit_gpus: 20,
            in_use_gpus: Gpus(17000),
            needed_gpus: Gpus(8000),
        };
        assert!(
            within
                .to_string()
                .contains("It starts when the team's jobs free 5"),
            "{within}"
        );
        let user = WaitReason::UserLimit {
            user: "bob".into(),
            queue: "dev".into(),
            limit_gpus: 4,
            in_use_gpus: Gpus(0),
            needed_gpus: Gpus(8000),
        };
        assert!(
            user.to_string().contains("more than the limit itself"),
            "{user}"
        );
        let share = WaitReason::QueueMaxShare {
            queue: "dev".into(),
            max_gpus: Gpus(4000),
            in_use_gpus: Gpus(0),
            needed_gpus: Gpus(8000),
        };
        assert!(
            share.to_string().contains("more than the queue's maximum"),
            "{share}"
        );
        let quota = WaitReason::QuotaExhausted {
            virtual_cluster: "nlp".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(0),
            needed_gpus: Gpus(24000),
            share_kept_by: None,
            required: None,
        };
        let text = quota.to_string();
        assert!(
            text.contains("more than the whole guarantee") && !text.contains("free 16"),
            "{text}"
        );
        // idle GPUs enough in number, but not within one rack: the message says where
        let rack = WaitReason::QuotaExhausted {
            virtual_cluster: "alpha".into(),
            guaranteed_gpus: 16,
            in_use_gpus: Gpus(16000),
            needed_gpus: Gpus(16000),
            share_kept_by: None,
            required: Some(TopologyLevel::Rack),
        }
        .to_string();
        assert!(
            rack.contains(
                "does not fit on the idle GPUs it may borrow within one rack, as its \
                 topology.required asks."
            ),
            "{rack}"
        );
    }

    /// Shared GPUs count as their share: 8.25 in use read "9 in use", and a half-GPU job
    /// "needs 1".
    #[test]
    fn fractional_gpus_read_as_they_are() {
        let quota = WaitReason::QuotaExhausted {
            virtual_cluster: "nlp".into(),
            guaranteed_gpus: 9,
            in_use_gpus: Gpus(8_250),
            needed_gpus: Gpus(1_500),
            share_kept_by: None,
            required: None,
        };
        let text = quota.to_string();
        assert!(
            text.contains("has 0.75 of its 9 guaranteed GPUs left (8.25 in use); this job needs 1.5, 0.75 more"),
            "{text}"
        );
    }

    /// A time in a message reads as a date, as every other time users read (an acceptance
    /// run read "preempted at time 1795795697").
    #[test]
    fn a_minimum_runtime_wait_names_the_time_as_a_date() {
        let text = WaitReason::WaitingForMinRuntime {
            until: 1_795_795_697,
            victims: vec!["team/young".into()],
        }
        .to_string();
        assert!(
            text.contains(
                "(team/young); they will be preempted at 2026-11-27T16:08:17Z at the latest"
            ),
            "{text}"
        );
    }

    /// Argo CD's health and alerts read the code: a job no wait can start has its own.
    #[test]
    fn a_job_larger_than_a_limit_has_a_code_of_its_own() {
        let over = |needed_gpus| WaitReason::OverLimit {
            virtual_cluster: "nlp".into(),
            limit_gpus: 20,
            in_use_gpus: Gpus(17000),
            needed_gpus,
        };
        assert_eq!(over(Gpus(24_000)).code(), "ExceedsLimit");
        assert_eq!(over(Gpus(20_000)).code(), "OverLimit");
        let share = |needed_gpus| WaitReason::QueueMaxShare {
            queue: "dev".into(),
            max_gpus: Gpus(4000),
            in_use_gpus: Gpus(3000),
            needed_gpus,
        };
        assert_eq!(share(Gpus(5_000)).code(), "ExceedsLimit");
        assert_eq!(share(Gpus(2_000)).code(), "QueueMaxShare");
        let user = |needed_gpus| WaitReason::UserLimit {
            user: "bob".into(),
            queue: "dev".into(),
            limit_gpus: 4,
            in_use_gpus: Gpus(4000),
            needed_gpus,
        };
        assert_eq!(user(Gpus(8_000)).code(), "ExceedsLimit");
        assert_eq!(user(Gpus(1_000)).code(), "UserLimit");
    }
}
