//! Where a plan leaves its job in the next cycle, which fills the guarantee with the running
//! jobs before it offers the job its turn: the acceptance rules of a combined priority plan
//! and of a queue-share plan read it.

use crate::sched::ids::{FlavorId, IdVec, RunIdx, VcId};
use crate::sched::reclaim::RunInfo;
use crate::sched::tenants::Tenants;

/// What each running job of a VC holds of its GPU type (type, milli, bonus).
pub(super) struct Holdings {
    vc: VcId,
    by_run: IdVec<RunIdx, Option<(FlavorId, u64, bool)>>,
}

impl Holdings {
    pub(super) fn of(runs: &IdVec<RunIdx, RunInfo>, vc: VcId) -> Holdings {
        let by_run = runs
            .iter()
            .map(|r| (r.vc == Some(vc)).then_some((r.flavor, r.milli, r.bonus)))
            .collect();
        Holdings { vc, by_run }
    }

    /// What `victims` give back on `f`: their bonus jobs' GPUs too, or only the guaranteed.
    fn freed(&self, victims: &[RunIdx], f: FlavorId, with_bonus: bool) -> u64 {
        victims
            .iter()
            .filter_map(|&v| self.by_run[v])
            .filter(|&(vf, _, bonus)| vf == f && (with_bonus || !bonus))
            .map(|(_, milli, _)| milli)
            .sum()
    }

    /// Whether `need` is within the guarantee on `f` once `victims` are gone, beside all the
    /// VC's other jobs, its bonus ones too: the next cycle fills the guarantee with them
    /// first, so only the victims' room is sure to be left.
    pub(super) fn surely_within(
        &self,
        t: &Tenants,
        victims: &[RunIdx],
        f: FlavorId,
        need: u64,
    ) -> bool {
        let used = t.guar_used[self.vc][f] + t.bonus_used[self.vc][f];
        used.saturating_sub(self.freed(victims, f, true)) + need <= t.guarantee[self.vc][f]
    }

    /// Whether `need` may be within the guarantee on `f` once `victims` are gone: beside the
    /// VC's guaranteed jobs only, should no bonus job take the room first.
    pub(super) fn maybe_within(
        &self,
        t: &Tenants,
        victims: &[RunIdx],
        f: FlavorId,
        need: u64,
    ) -> bool {
        let used = t.guar_used[self.vc][f].saturating_sub(self.freed(victims, f, false));
        used + need <= t.guarantee[self.vc][f]
    }
}
