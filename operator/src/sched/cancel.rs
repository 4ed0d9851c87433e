//! Preemptions that outlive their reason. A victim of a reclaim, a priority or a queue-share
//! preemption leaves for one job; when that job is no longer pending (deleted, suspended, finished, or
//! placed elsewhere) before the victim acknowledged its checkpoint, the preemption is
//! withdrawn and the victim runs on, charged like any running job from this very cycle. A
//! drain, an unhealthy GPU or a queue's `HoldAndDrain` needs the job gone whoever waits (a
//! hold lifted meanwhile does not call it back), and a victim that acknowledged
//! is already stopping: neither is withdrawn. Nor is one whose beneficiary still waits, but
//! no longer on any preemption ([`unneeded`]): its guarantee was lowered under it, a limit or
//! a queue head now holds it back.

use std::collections::{BTreeMap, BTreeSet};

use super::decisions::{Cancellation, Decisions};
use super::ids::JobIdx;
use super::model::Snapshot;

/// The preemptions that could be withdrawn: a victim still leaving, unacknowledged, for a
/// job (reclaim, priority, queue share, consolidation), with its beneficiary.
fn withdrawable(snap: &Snapshot) -> impl Iterator<Item = (JobIdx, Cancellation)> + '_ {
    snap.jobs.iter().enumerate().filter_map(|(i, job)| {
        let r = job.running.as_ref().filter(|r| r.preempting)?;
        let req = r.checkpoint_request.as_ref()?;
        let beneficiary = req.beneficiary.as_deref()?;
        (req.reason.for_a_job() && req.withdrawable).then(|| {
            (
                JobIdx(i as u32),
                Cancellation {
                    job: job.id.clone(),
                    beneficiary: beneficiary.to_string(),
                    reason: req.reason,
                },
            )
        })
    })
}

/// The preemptions to withdraw, by the victim's index in the snapshot's jobs.
pub(super) fn stale(snap: &Snapshot) -> BTreeMap<JobIdx, Cancellation> {
    let pending: BTreeSet<&str> = snap
        .jobs
        .iter()
        .filter(|j| j.running.is_none())
        .map(|j| j.id.as_str())
        .collect();
    withdrawable(snap)
        .filter(|(_, c)| !pending.contains(c.beneficiary.as_str()))
        .collect()
}

/// The preemptions still in force whose beneficiary, pending, the cycle `d` neither admits
/// nor has waiting on a preemption, and that no other job waits on: the reason is gone (an
/// acceptance run lowered a team's guarantee to 0 under its reclaim; the four victims
/// checkpointed and left anyway, and another team's bonus job took their room, or they were
/// admitted back to it).
pub(super) fn unneeded(snap: &Snapshot, d: &Decisions) -> BTreeMap<JobIdx, Cancellation> {
    let withdrawn: BTreeSet<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
    let asked: BTreeSet<&str> = d.victims().collect();
    let victims: Vec<(JobIdx, Cancellation)> = withdrawable(snap)
        .filter(|(_, c)| !withdrawn.contains(c.job.as_str()) && !asked.contains(c.job.as_str()))
        .collect();
    if victims.is_empty() {
        return BTreeMap::new();
    }
    let beneficiaries: BTreeSet<&str> = victims
        .iter()
        .map(|(_, c)| c.beneficiary.as_str())
        .collect();
    let pending: BTreeSet<&str> = snap
        .jobs
        .iter()
        .filter(|j| j.running.is_none() && beneficiaries.contains(j.id.as_str()))
        .map(|j| j.id.as_str())
        .collect();
    // a victim another job now waits on serves that one (a higher-priority job may take
    // over a preemption in flight, as HiveD's does)
    let waited_on: BTreeSet<&str> = d
        .waiting
        .iter()
        .filter_map(|w| w.reason.waits_on())
        .flatten()
        .map(String::as_str)
        .collect();
    let admitted: BTreeSet<&str> = d.admissions.iter().map(|a| a.job.as_str()).collect();
    let elsewhere: BTreeSet<&str> = d
        .waiting
        .iter()
        .filter(|w| pending.contains(w.job.as_str()) && !admitted.contains(w.job.as_str()))
        .filter(|w| w.reason.waits_on().is_none())
        .map(|w| w.job.as_str())
        .collect();
    victims
        .into_iter()
        .filter(|(_, c)| {
            elsewhere.contains(c.beneficiary.as_str()) && !waited_on.contains(c.job.as_str())
        })
        .collect()
}

/// A victim whose preemption was withdrawn and that this cycle preempts again keeps its
/// request: it now serves the new preemption, so its cancellation is dropped.
pub(super) fn retarget(out: &mut Decisions) {
    let victims: BTreeSet<String> = out.victims().map(str::to_string).collect();
    out.cancellations.retain(|c| !victims.contains(&c.job));
}
