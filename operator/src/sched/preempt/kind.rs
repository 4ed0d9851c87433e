//! The kinds of preemption plan, as the memo of searches that found nothing keys them; what
//! each may take and must leave is in the kind's own file beside this one.

/// What a preemption plan may take, and what it must leave. Ordered and hashable: it is part
/// of the key of a search that found nothing ([`NoVictims`](crate::sched::cycle_state::NoVictims)), each variant its own search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(in crate::sched) enum Kind {
    /// Other VCs' bonus jobs, for a job within its VC's guarantee ([`reclaim`](super::reclaim)).
    Reclaim,
    /// The job's queue's lower-priority jobs (only bonus ones when the job would run as
    /// `bonus`); `combined`: with other VCs' bonus jobs, when the job then ends within its
    /// VC's guarantee ([`priority`](super::priority)).
    Priority { bonus: bool, combined: bool },
    /// Its team's jobs of no higher priority in sibling queues that use more than their firm
    /// share, with other VCs' bonus jobs, when the job then runs within its own share and its
    /// VC's guarantee ([`queue_share`](super::queue_share)).
    QueueShare,
    /// Its team's smaller jobs of no higher priority, for a job within its VC's guarantee
    /// that free GPUs would hold but are scattered, when each victim fits at once elsewhere
    /// ([`consolidation`](super::consolidation)).
    Consolidate,
}
