//! Knobs of the scheduling core. The simulator turns them to measure what a design choice
//! is worth (an ablation), on the same code; the operator leaves them at their defaults
//! except consolidation, which an admin may turn off (`--consolidation=false`).

/// How reclaim and priority preemption choose victims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VictimSelection {
    /// Per candidate domain (node, then rack, then the whole GPU type), smallest level
    /// first; within a level the domain whose victims lose the least work wins.
    #[default]
    WholeDomain,
    /// One flavor-wide candidate list: victims by least lost work wherever they run, until
    /// the gang fits somewhere, then made minimal. What schedulers without topology-aware
    /// reclaim do; kept only to measure the difference.
    Scattered,
    /// Quota-style: victims by least lost work, flavor-wide, until enough whole GPUs are
    /// free *in number*, made minimal by number; no placement check. The victims are
    /// preempted even when the gang still does not fit (the job then waits and asks again).
    /// What a quota manager that leaves placement to another scheduler does; kept only to
    /// measure the difference.
    CountOnly,
}

/// Options of one [`schedule_with`](super::schedule_with) call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    pub victims: VictimSelection,
    /// Whether a job within its guarantee whose GPUs are free but scattered may move its
    /// team's smaller jobs (`PreemptionReason::Consolidation`). On by default.
    pub consolidation: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            victims: VictimSelection::default(),
            consolidation: true,
        }
    }
}
