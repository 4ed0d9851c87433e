//! Preempting: the gang is asked to checkpoint (by the scheduler, or by the job's own
//! suspension), stopped once it acknowledges, exits or runs out of grace, and sent back to its
//! queue keeping its place (or to Suspended) once its pods are gone; or it runs on when the
//! scheduler withdraws the request in time.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::events::EventType;

use super::{Effects, Step, Stop, queue_name};
use crate::api::reasons::{ConditionType, EventReason, PreemptionCause, Reason};
use crate::api::trainingjob::{PreemptionOutcome, PreemptionRecord};
use crate::api::{Phase, TrainingJobStatus};
use crate::controller::conditions;

/// How long a job stopped for a drain stays out of its queue after its pods are gone: two
/// of `kubectl drain`'s 5 s eviction retries.
const DRAIN_SETTLE_SECONDS: i64 = 10;

/// Whether the lifecycle has told a preempted gang's pods to stop (the acknowledgement came,
/// the pods exited, or the grace period ended): from then on its preemption is not withdrawn.
pub fn stop_decided(status: &TrainingJobStatus) -> bool {
    status.phase == Phase::Preempting
        && status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Preempting.as_str()
                && c.status == "True"
                && [
                    Reason::CheckpointSaved,
                    Reason::PodsExited,
                    Reason::CheckpointLost,
                    Reason::NotStarted,
                ]
                .iter()
                .any(|r| c.reason == r.as_str())
        })
}

/// How a preemption ends once its pods are told to stop, and why, as its message says it.
fn stop_outcome(ack: bool, exited: bool, not_started: bool) -> (PreemptionOutcome, &'static str) {
    if ack {
        (
            PreemptionOutcome::CheckpointSaved,
            "checkpoint acknowledged",
        )
    } else if exited {
        (
            PreemptionOutcome::PodsExited,
            "the pods exited on their own",
        )
    } else if not_started {
        (
            PreemptionOutcome::NotStarted,
            "the gang had not started, nothing to save",
        )
    } else {
        (
            PreemptionOutcome::CheckpointLost,
            "grace period over without acknowledgement",
        )
    }
}

impl Step<'_> {
    /// Preempting: wait for the checkpoint acknowledgement, the pods' own exit, or the grace
    /// period; then delete the pods; once they are gone, back to Queued keeping the job's
    /// place (or Suspended).
    pub(super) fn preempting(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        // A suspension is a preemption nobody else asks for: request the checkpoint here.
        if self.job.spec.suspend && self.gang.to_ask_checkpoint().next().is_some() {
            fx.request_checkpoint = true;
        }
        if self.present.is_empty() {
            if !self.gang.is_empty() && !self.job.spec.suspend {
                // Pods still terminating hold their GPUs: the job is back in its queue (and
                // the preemption counted) once they are gone, as `Requeued` says. A
                // suspension is told at once, as the Job controller does; `queued` waits for
                // the pods if the job is resumed before they are gone.
                fx.requeue(Duration::from_secs(1));
                return;
            }
            self.requeue_preempted(status, fx);
        } else if !self.job.spec.suspend && !self.gang.checkpoint_requested() {
            self.preemption_withdrawn(status, fx);
        } else {
            self.stop_preempted(status, fx);
        }
    }

    /// Preempting with its pods present and no request on them: the scheduler withdrew it
    /// (the job it made room for no longer waits). Unless the pods were already told to stop,
    /// the job runs on, back to Running with its placement and counters as they were.
    fn preemption_withdrawn(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if stop_decided(status) {
            fx.stop = Stop::All;
            fx.requeue(Duration::from_secs(1));
            return;
        }
        status.phase = if status.started_at.is_some() {
            Phase::Running
        } else {
            Phase::Starting
        };
        let msg = "The checkpoint request was withdrawn: the job it made room for no longer \
                   waits. The job runs on.";
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            false,
            Reason::PreemptionCancelled,
            msg,
            self.generation,
            self.t,
        );
        status.message = Some(msg.into());
        fx.requeue(Duration::from_secs(2));
    }

    /// Preempting with its pods gone: back to Queued (or Suspended), after a drain's settle.
    fn requeue_preempted(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        if self.drain_settling(status, fx) {
            return;
        }
        status.phase = if job.spec.suspend {
            Phase::Suspended
        } else {
            Phase::Queued
        };
        // A stop the owner's suspension caused is no preemption, even when the owner resumed
        // the job before it was done.
        let suspension = job.spec.suspend
            || status
                .last_preemption
                .as_ref()
                .and_then(|r| r.reason.as_deref())
                .and_then(PreemptionCause::from_name)
                == Some(PreemptionCause::Suspend);
        if !suspension {
            status.preemptions += 1;
        }
        status.placement.clear();
        status.bonus = false;
        status.started_at = None;
        status.admitted_at = None;
        let lost = status
            .last_preemption
            .as_ref()
            .is_some_and(|r| r.outcome == PreemptionOutcome::CheckpointLost);
        let msg = self.requeued_message(status, suspension);
        let kind = if lost {
            EventType::Warning
        } else {
            EventType::Normal
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            false,
            Reason::Requeued,
            msg.clone(),
            generation,
            t,
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::Preempted,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        let event = if job.spec.suspend {
            EventReason::Suspended
        } else if suspension {
            EventReason::Resumed
        } else {
            EventReason::Requeued
        };
        fx.event_nth(kind, event, status.preemptions, msg);
    }

    /// After a drain, the new run's pods take the old names; `kubectl drain` retries its
    /// eviction by name every 5 s, so it must see the old pod gone before a new one of that
    /// name appears, or it evicts the new one (or waits on its budget) instead. Whether the
    /// job still waits out the settle (`DRAIN_SETTLE_SECONDS`).
    fn drain_settling(&self, status: &mut TrainingJobStatus, fx: &mut Effects) -> bool {
        let t = self.t;
        let drained = status
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref())
            .and_then(PreemptionCause::from_name)
            == Some(PreemptionCause::Drain);
        if !drained || self.job.spec.suspend {
            return false;
        }
        let settled = status
            .retry_at
            .get_or_insert_with(|| Time(t.0 + SignedDuration::from_secs(DRAIN_SETTLE_SECONDS)))
            .0;
        if t.0 < settled {
            fx.requeue(Duration::from_secs(
                (settled.as_second() - t.0.as_second()).max(1) as u64,
            ));
            return true;
        }
        status.retry_at = None;
        false
    }

    /// What a job back from its preemption (or suspension) is told: how it ended, and where
    /// it waits now.
    fn requeued_message(&self, status: &TrainingJobStatus, suspension: bool) -> String {
        let job = self.job;
        let lost = status
            .last_preemption
            .as_ref()
            .filter(|r| r.outcome == PreemptionOutcome::CheckpointLost);
        let outcome = status.last_preemption.as_ref().map(|r| r.outcome);
        match (job.spec.suspend, lost) {
            _ if suspension && !job.spec.suspend => format!(
                "Resumed while it stopped for its suspension; back in queue {}, keeping its \
                 place in line.",
                queue_name(status)
            ),
            // Nothing was saved where nothing had run: say how it ended.
            (true, None) if outcome == Some(PreemptionOutcome::NotStarted) => {
                "Suspended before every replica ran: nothing to checkpoint.".to_string()
            }
            (true, None) if outcome == Some(PreemptionOutcome::PodsExited) => {
                "Suspended: its replicas exited on their own.".to_string()
            }
            (true, None) => "Suspended after its checkpoint.".to_string(),
            (true, Some(r)) => format!(
                "Suspended without a checkpoint (about {} GPU-seconds of work lost).",
                r.lost_gpu_seconds
            ),
            (false, None) => format!(
                "Preempted and back in queue {}, keeping its place in line.",
                queue_name(status)
            ),
            (false, Some(r)) => format!(
                "Preempted without a checkpoint (about {} GPU-seconds of work lost) and back in \
                 queue {}, keeping its place in line.",
                r.lost_gpu_seconds,
                queue_name(status)
            ),
        }
    }

    /// Preempting with its pods present: once the checkpoint is acknowledged, the pods exited
    /// or the grace period is over, stop the pods and record how the preemption ended.
    fn stop_preempted(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let t = self.t;
        let requested = self.gang.checkpoint_requested_at().unwrap_or(t.0);
        let ack = self.gang.checkpoint_done_at();
        let exited = self.present.iter().all(|m| m.succeeded());
        let grace = i64::from(self.job.spec.checkpoint.grace_period_seconds.max(0));
        let deadline = requested + SignedDuration::from_secs(grace);
        // Once the pods are told to stop, the condition says how the preemption ended.
        let stopping = status
            .last_preemption
            .as_ref()
            .is_some_and(|r| r.at.0 >= requested);
        if !stopping {
            self.ask_to_checkpoint(status, grace);
        }
        if let Some(a) = ack {
            status.last_checkpoint_time = Some(Time(a));
        }
        // A gang not yet started (a replica still pulling its image, say) has done no work
        // and cannot acknowledge: waiting out the grace period would only hold its GPUs.
        let not_started = status.started_at.is_none();
        if !(ack.is_some() || exited || not_started || t.0 >= deadline) {
            let left = (deadline.as_second() - t.0.as_second()).clamp(1, 2) as u64;
            fx.requeue(Duration::from_secs(left));
            return;
        }
        fx.stop = Stop::All;
        let (outcome, why) = stop_outcome(ack.is_some(), exited, not_started);
        if status.message.as_deref().is_none_or(|m| !m.contains(why)) {
            status.message = Some(format!("Preempting: {why}; stopping the pods."));
        }
        // Recorded once, when the pods are first told to stop.
        if !stopping {
            self.record_stop(status, fx, (outcome, why), requested, grace);
        }
        fx.requeue(Duration::from_secs(1));
    }

    /// The `Preempting=True` condition of the request, and the message when it is new.
    fn ask_to_checkpoint(&self, status: &mut TrainingJobStatus, grace: i64) {
        // A suspension keeps its own reason, as the condition table documents.
        let (reason, asked) = if self.job.spec.suspend {
            (
                Reason::Suspended,
                "Asked to checkpoint because the job was suspended",
            )
        } else {
            (Reason::CheckpointRequested, "Asked to checkpoint")
        };
        let newly = conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            true,
            reason,
            format!("{asked}; the pods are deleted after the acknowledgement or {grace} s."),
            self.generation,
            self.t,
        );
        if newly {
            status.message = Some(format!("Preempting: asked to checkpoint within {grace} s."));
        }
    }

    /// The pods are first told to stop: how the preemption ended, in `status.lastPreemption`,
    /// the `Preempting` condition and an Event.
    fn record_stop(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        (outcome, why): (PreemptionOutcome, &str),
        requested: Timestamp,
        grace: i64,
    ) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        let lost_gpu_seconds = self.lost_gpu_seconds(status, outcome, requested);
        // The pods name the scheduler's reason; the lifecycle's own request for a
        // suspension names none (the owner may have resumed the job since).
        let cause = match self.gang.preemption_reason() {
            Some(r) if !job.spec.suspend => r,
            _ => PreemptionCause::Suspend,
        };
        let reason = Some(cause.to_string());
        status.last_preemption = Some(PreemptionRecord {
            outcome,
            at: t.clone(),
            lost_gpu_seconds,
            reason,
        });
        let (reason, event) = match outcome {
            PreemptionOutcome::CheckpointSaved => {
                (Reason::CheckpointSaved, EventReason::CheckpointSaved)
            }
            PreemptionOutcome::PodsExited => (Reason::PodsExited, EventReason::PodsExited),
            PreemptionOutcome::CheckpointLost => {
                (Reason::CheckpointLost, EventReason::CheckpointLost)
            }
            PreemptionOutcome::NotStarted => (Reason::NotStarted, EventReason::NotStarted),
        };
        let msg = match outcome {
            PreemptionOutcome::CheckpointLost => format!(
                "No checkpoint acknowledged within the {grace} s grace period: stopping the \
                 pods; about {lost_gpu_seconds} GPU-seconds of work since the last \
                 checkpoint are lost."
            ),
            _ => format!("Preempting: {why}; stopping the pods."),
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Preempting,
            true,
            reason,
            msg.clone(),
            generation,
            t,
        );
        let kind = if outcome == PreemptionOutcome::CheckpointLost {
            EventType::Warning
        } else {
            EventType::Normal
        };
        fx.event_nth(kind, event, status.preemptions + 1, msg);
    }

    /// The GPU-seconds of work a preemption without a checkpoint lost: since the last
    /// checkpoint, else since the start (or the admission), times the job's GPUs.
    fn lost_gpu_seconds(
        &self,
        status: &TrainingJobStatus,
        outcome: PreemptionOutcome,
        requested: Timestamp,
    ) -> i64 {
        if outcome != PreemptionOutcome::CheckpointLost {
            return 0;
        }
        let since = status
            .last_checkpoint_time
            .as_ref()
            .or(status.started_at.as_ref())
            .or(status.admitted_at.as_ref())
            .map_or(requested, |s| s.0);
        let seconds = (self.t.0.as_second() - since.as_second()).max(0) as f64;
        (seconds * status.gpus.unwrap_or(0.0)).round() as i64
    }
}
