//! Preemptions that outlive their reason. A victim of a reclaim, a priority or a queue-share
//! preemption leaves for one job; when that job is no longer pending (deleted, suspended, finished, or
//! placed elsewhere) before the victim acknowledged its checkpoint, the preemption is
//! withdrawn and the victim runs on, charged like any running job from this very cycle. A
//! drain or an unhealthy GPU needs the job gone whoever waits, and a victim that acknowledged
//! is already stopping: neither is withdrawn.

use std::collections::{BTreeMap, BTreeSet};

use super::decisions::{Cancellation, Decisions};
use super::ids::JobIdx;
use super::model::Snapshot;

/// The preemptions to withdraw, by the victim's index in the snapshot's jobs.
pub(super) fn stale(snap: &Snapshot) -> BTreeMap<JobIdx, Cancellation> {
    let pending: BTreeSet<&str> = snap
        .jobs
        .iter()
        .filter(|j| j.running.is_none())
        .map(|j| j.id.as_str())
        .collect();
    let mut out = BTreeMap::new();
    for (i, job) in snap.jobs.iter().enumerate() {
        let Some(r) = &job.running else { continue };
        let Some(req) = r.checkpoint_request.as_ref().filter(|_| r.preempting) else {
            continue;
        };
        let for_a_job = req.reason.for_a_job();
        let Some(beneficiary) = req.beneficiary.as_deref() else {
            continue;
        };
        if for_a_job && req.withdrawable && !pending.contains(beneficiary) {
            out.insert(
                JobIdx(i as u32),
                Cancellation {
                    job: job.id.clone(),
                    beneficiary: beneficiary.to_string(),
                    reason: req.reason,
                },
            );
        }
    }
    out
}

/// A victim whose preemption was withdrawn and that this cycle preempts again keeps its
/// request: it now serves the new preemption, so its cancellation is dropped.
pub(super) fn retarget(out: &mut Decisions) {
    let victims: BTreeSet<String> = out.victims().map(str::to_string).collect();
    out.cancellations.retain(|c| !victims.contains(&c.job));
}
