//! Before any phase: the job's validity (what the schema cannot check), its entry into its
//! queue, and its suspension and resumption.

use std::time::Duration;

use kube::runtime::events::EventType;

use super::failure::pod_failure;
use super::{Effects, Flow, Step, Stop, queue_name};
use crate::api::Phase;
use crate::api::TrainingJobStatus;
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::controller::conditions;

impl Step<'_> {
    /// Validity: what the schema cannot check. An invalid job that holds nothing waits in
    /// Pending; a running one keeps running (its spec change does not touch the pods).
    pub(super) fn validity(&self, status: &mut TrainingJobStatus, fx: &mut Effects) -> Flow {
        let (t, generation) = (self.t, self.generation);
        match &self.world.validity {
            Err(invalid) => {
                let changed = conditions::set(
                    &mut status.conditions,
                    ConditionType::Valid,
                    false,
                    invalid.reason(),
                    invalid.to_string(),
                    generation,
                    t,
                );
                if changed {
                    // A job whose pods run on is not waiting: it stays charged where it was
                    // admitted, and only its next admission needs the fix.
                    let then = if self.present.is_empty() {
                        "The job waits until a change fixes it."
                    } else {
                        "The job runs on where it was admitted; it is admitted again (after a \
                         retry, a preemption or a suspension) only once a change fixes it."
                    };
                    fx.event_named(
                        EventType::Warning,
                        invalid.reason(),
                        format!("{invalid}. {then}"),
                    );
                }
                if self.present.is_empty() && matches!(status.phase, Phase::Pending | Phase::Queued)
                {
                    status.phase = Phase::Pending;
                    status.message = Some(invalid.to_string());
                    // Why it is not admitted is now this, not the wait it had in its queue.
                    if conditions::get(&status.conditions, ConditionType::Admitted).is_some() {
                        conditions::set(
                            &mut status.conditions,
                            ConditionType::Admitted,
                            false,
                            invalid.reason(),
                            invalid.to_string(),
                            generation,
                            t,
                        );
                    }
                }
                fx.requeue(Duration::from_secs(15));
                if self.present.is_empty() {
                    return Flow::Done;
                }
            }
            Ok(()) => {
                // Only a job that was invalid is "valid again": a new job's first `Valid=True`
                // is no news.
                let was_invalid = conditions::get(&status.conditions, ConditionType::Valid)
                    .is_some_and(|c| c.status == "False");
                conditions::set(
                    &mut status.conditions,
                    ConditionType::Valid,
                    true,
                    Reason::Valid,
                    "The job's references and templates are valid.",
                    generation,
                    t,
                );
                if was_invalid {
                    fx.event(
                        EventType::Normal,
                        EventReason::Valid,
                        "The job is valid again.",
                    );
                }
            }
        }
        Flow::Continue
    }

    /// Pending → Queued. The scheduler may admit a valid job before its first status write
    /// (its pods are here): it went through the queue all the same, and its `Admitted` Event,
    /// posted at admission, already names the queue. A `Queued` Event then would only repeat
    /// it, after it (`kubectl describe` listed `Admitted` before `Queued`), so it is posted
    /// only for a job that enters its queue to wait.
    pub(super) fn enter_queue(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if status.phase == Phase::Pending
            && (conditions::is_true(&status.conditions, ConditionType::Valid)
                || !self.present.is_empty())
        {
            status.phase = Phase::Queued;
            if status.queued_at.is_none() {
                // A job valid from its creation has been in the queue since then: the
                // scheduler orders it by its creation until this write, and its first write
                // may wait for the scheduler (`first_write_deferred`).
                let created = self.job.metadata.creation_timestamp.as_ref();
                status.queued_at = Some(match created {
                    Some(c) if self.job.status.is_none() => c.clone(),
                    _ => self.t.clone(),
                });
            }
            status.message = Some(format!("Waiting in queue {}.", queue_name(status)));
            // A job created suspended goes on to Suspended in this same step: its Event
            // says that, not that it waits in line.
            if self.present.is_empty() && !self.job.spec.suspend {
                fx.event(
                    EventType::Normal,
                    EventReason::Queued,
                    format!("Entered queue {}.", queue_name(status)),
                );
            }
        }
    }

    /// Suspension: stop the gang (checkpoint first, as for a preemption), keep the job
    /// queued. Resumption: back to Queued. A running job whose work is done when it is
    /// suspended succeeds instead (`running`): there is nothing left to checkpoint, and its
    /// finished pods keep their logs (as a Job's completion goes before its suspension).
    pub(super) fn suspension(&self, status: &mut TrainingJobStatus, fx: &mut Effects) -> Flow {
        // What happened before the suspension was seen goes first: a job done succeeds, a
        // replica failed counts (or the job would run again, its failure forgotten).
        if self.job.spec.suspend
            && matches!(status.phase, Phase::Starting | Phase::Running)
            && (self.deciding_succeeded(&status.succeeded_replicas)
                || self.present.iter().any(|m| pod_failure(m).is_some()))
        {
            return Flow::Continue;
        }
        if self.job.spec.suspend && !matches!(status.phase, Phase::Preempting) {
            if self.present.is_empty() {
                if status.phase != Phase::Suspended {
                    status.phase = Phase::Suspended;
                    status.placement.clear();
                    // A backoff or drain settle in progress ends here: resumed, the job
                    // starts a new wait, and a stale time would cut a later drain's settle.
                    status.retry_at = None;
                    status.message = Some("Suspended: spec.suspend is true.".into());
                    fx.event(
                        EventType::Normal,
                        EventReason::Suspended,
                        "Suspended; set spec.suspend to false to queue it again.",
                    );
                }
                return Flow::Done;
            }
            status.phase = Phase::Preempting;
            conditions::set(
                &mut status.conditions,
                ConditionType::Preempting,
                true,
                Reason::Suspended,
                "Asked to checkpoint because the job was suspended.",
                self.generation,
                self.t,
            );
            // `stop_preempted` words the message only when it sets the condition itself
            let grace = self.job.spec.checkpoint.grace_period_seconds.max(0);
            status.message = Some(format!("Suspending: asked to checkpoint within {grace} s."));
            fx.stop = Stop::None;
        }
        if status.phase == Phase::Suspended && !self.job.spec.suspend {
            status.phase = Phase::Queued;
            status.message = Some(format!("Resumed; waiting in queue {}.", queue_name(status)));
            fx.event(
                EventType::Normal,
                EventReason::Resumed,
                "spec.suspend is false: back in the queue.",
            );
        }
        Flow::Continue
    }
}
