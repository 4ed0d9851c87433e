//! Preemptions that outlive their reason. A victim of a reclaim, a priority or a queue-share
//! preemption leaves for one job; when that job is no longer pending (deleted, suspended, finished, or
//! placed elsewhere) before the victim acknowledged its checkpoint, the preemption is
//! withdrawn and the victim runs on, charged like any running job from this very cycle. A
//! drain or an unhealthy GPU needs the job gone whoever waits, and a victim that acknowledged
//! is already stopping: neither is withdrawn. Nor is one whose beneficiary still waits, but
//! no longer on any preemption ([`unneeded`]): its guarantee was lowered under it, a limit or
//! a queue head now holds it back.

use std::collections::{BTreeMap, BTreeSet};

use super::decisions::{Cancellation, Decisions, WaitReason};
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

/// The preemptions still in force whose beneficiary, pending, the cycle `d` neither admits
/// nor has waiting on a preemption, and that no other job waits on: the reason is gone (an acceptance run
/// lowered a team's guarantee to 0 under its reclaim; the four victims checkpointed and left
/// anyway, and another team's bonus job took their room, or they were admitted back to it).
pub(super) fn unneeded(snap: &Snapshot, d: &Decisions) -> BTreeMap<JobIdx, Cancellation> {
    let withdrawn: BTreeSet<&str> = d.cancellations.iter().map(|c| c.job.as_str()).collect();
    let asked: BTreeSet<&str> = d.victims().collect();
    let victims: Vec<(usize, &str, &str, _)> = snap
        .jobs
        .iter()
        .enumerate()
        .filter_map(|(i, job)| {
            let r = job.running.as_ref().filter(|r| r.preempting)?;
            let req = r.checkpoint_request.as_ref()?;
            let beneficiary = req.beneficiary.as_deref()?;
            (req.reason.for_a_job()
                && req.withdrawable
                && !withdrawn.contains(job.id.as_str())
                && !asked.contains(job.id.as_str()))
            .then_some((i, job.id.as_str(), beneficiary, req.reason))
        })
        .collect();
    if victims.is_empty() {
        return BTreeMap::new();
    }
    let beneficiaries: BTreeSet<&str> = victims.iter().map(|v| v.2).collect();
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
        .filter_map(|w| match &w.reason {
            WaitReason::WaitingForPreemption { victims, .. }
            | WaitReason::WaitingForMinRuntime { victims, .. } => Some(victims),
            WaitReason::WaitingForTerminatingPods { pods_of } => Some(pods_of),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .collect();
    let admitted: BTreeSet<&str> = d.admissions.iter().map(|a| a.job.as_str()).collect();
    let elsewhere: BTreeSet<&str> = d
        .waiting
        .iter()
        .filter(|w| pending.contains(w.job.as_str()) && !admitted.contains(w.job.as_str()))
        .filter(|w| {
            !matches!(
                w.reason,
                WaitReason::WaitingForPreemption { .. }
                    | WaitReason::WaitingForTerminatingPods { .. }
                    | WaitReason::WaitingForMinRuntime { .. }
            )
        })
        .map(|w| w.job.as_str())
        .collect();
    victims
        .into_iter()
        .filter(|v| elsewhere.contains(v.2) && !waited_on.contains(v.1))
        .map(|(i, job, beneficiary, reason)| {
            (
                JobIdx(i as u32),
                Cancellation {
                    job: job.to_string(),
                    beneficiary: beneficiary.to_string(),
                    reason,
                },
            )
        })
        .collect()
}

/// A victim whose preemption was withdrawn and that this cycle preempts again keeps its
/// request: it now serves the new preemption, so its cancellation is dropped.
pub(super) fn retarget(out: &mut Decisions) {
    let victims: BTreeSet<String> = out.victims().map(str::to_string).collect();
    out.cancellations.retain(|c| !victims.contains(&c.job));
}
