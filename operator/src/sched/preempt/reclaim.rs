//! Reclaim: a job within its VirtualCluster's guarantee takes back what other
//! VirtualClusters borrowed, their bonus jobs. Phase 1 plans it at the job's turn when no
//! type within its guarantee holds it now, and a job on its way back holds its room by it.

use super::{Claim, Kind};
use crate::sched::cycle_state::{Cycle, Pending};
use crate::sched::ids::FlavorId;
use crate::sched::reclaim::RunInfo;

/// Another VirtualCluster's bonus job. The other kinds that take such jobs beside their own
/// (a combined priority plan, a queue-share plan) take them by this rule too.
pub(super) fn eligible(claim: &Claim, r: &RunInfo) -> bool {
    r.bonus && r.vc.is_some() && r.vc != Some(claim.vc)
}

impl<'a> Cycle<'a> {
    /// A reclaim for `p` on the first of `flavors` where one is planned. Returns true when
    /// the job's fate is decided.
    pub(in crate::sched) fn reclaim_plan(&mut self, p: &Pending, flavors: &[FlavorId]) -> bool {
        flavors
            .iter()
            .any(|&f| self.preempt(p, f, Kind::Reclaim, false))
    }
}
