//! A running gang stopped by a failure: how a failed pod is judged (the job's
//! `podFailurePolicy`, else kubetrain's own classification, its node or GPU blamed where they
//! failed), retried with a backoff (counted or not) or final; and `Retrying`, which waits out
//! the backoff and sends the job back to its queue.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use kube::runtime::events::EventType;

use super::{Effects, Gang, Member, NodeState, Step, Stop, World, node_down, policy, queue_name};
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::trainingjob::PodFailurePolicyAction;
use crate::api::{Phase, TrainingJobStatus};
use crate::controller::conditions;
use crate::controller::gang::PodFailure;
use crate::controller::reservations;

/// Why a running gang stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The user's fault: counts as a retry.
    Replica { pod: String, reason: String },
    /// The platform's fault (node lost, GPU unhealthy, pod removed): retried without counting.
    Infrastructure { pod: String, reason: String },
    /// A `FailJob` rule of the job's `podFailurePolicy` matched: failed for good.
    Fatal { pod: String, reason: String },
    /// An `Ignore` rule matched: retried without counting, within the same budget as the
    /// platform's failures.
    Ignored { pod: String, reason: String },
}

/// Backoff before retry `n` (1-based): initial × 2^(n-1), at most max.
pub fn backoff(initial: i32, max: i32, n: i32) -> Duration {
    let initial = u64::try_from(initial.max(0)).unwrap_or(0);
    let max = u64::try_from(max.max(0)).unwrap_or(0);
    let shift = u32::try_from((n - 1).clamp(0, 30)).unwrap_or(30);
    Duration::from_secs(initial.saturating_mul(1u64 << shift).min(max))
}

/// Classifies a finished-badly pod ([`Member::failure`]).
pub(super) fn pod_failure(m: &Member) -> Option<Failure> {
    let pod = m.name.clone();
    Some(match m.failure()? {
        PodFailure::Infrastructure(reason) => Failure::Infrastructure { pod, reason },
        PodFailure::Replica(reason) => Failure::Replica { pod, reason },
    })
}

/// The first GPU under the pod that the node labeler reports unhealthy.
fn unhealthy_gpu(world: &World, m: &Member) -> Option<(u32, String)> {
    let p = m.placement.as_ref()?;
    let NodeState::Up { unhealthy_gpus } = world.node(&p.node) else {
        return None;
    };
    p.gpus
        .iter()
        .find(|g| unhealthy_gpus.contains(&g.0))
        .map(|g| (g.0, p.node.clone()))
}

/// A replica that failed on a GPU the labeler reports unhealthy failed because of the GPU
/// (an XID error kills the process), and one that failed on a node that is gone or not ready
/// went down with it: not the job's fault.
fn blame_infrastructure(world: &World, m: &Member, f: Failure) -> Failure {
    let Failure::Replica { pod: name, reason } = &f else {
        return f;
    };
    if let Some((gpu, node)) = unhealthy_gpu(world, m) {
        return Failure::Infrastructure {
            pod: name.clone(),
            reason: format!("{reason}, on GPU {gpu} of node {node}, which turned unhealthy"),
        };
    }
    match node_down(world, m) {
        Some(down) => Failure::Infrastructure {
            pod: name.clone(),
            reason: format!("{reason}; {down}"),
        },
        None => f,
    }
}

/// An infrastructure problem under a running pod: its node gone or NotReady. (A GPU turned
/// unhealthy under a running pod is a preemption with a checkpoint, decided by the core.)
pub(super) fn infrastructure_failure(world: &World, gang: &Gang) -> Option<Failure> {
    gang.active().find_map(|m| {
        node_down(world, m)
            .or_else(|| reservation_lost(world, m))
            .map(|reason| Failure::Infrastructure {
                pod: m.name.clone(),
                reason,
            })
    })
}

/// A share released onto its GPU's reserved device whose reservation is gone, going or
/// replaced (kube-scheduler preempted it for another pod, or it was deleted by hand): the
/// device plugin may hand that GPU to another pod, so the share stops and runs again on a
/// GPU held anew, as a replica on a lost node does.
fn reservation_lost(world: &World, m: &Member) -> Option<String> {
    let why = reservations::lost(&m.pod, world.reservations.get(&m.name).map(|r| r.as_ref()))?;
    Some(format!(
        "{why}: the GPU it runs on is no longer held from the device plugin"
    ))
}

impl Step<'_> {
    /// The first replica whose pod failed before the gang was asked to checkpoint, as the
    /// failure it is.
    pub(super) fn failed_before_request(&self) -> Option<Failure> {
        let asked = self.gang.checkpoint_requested_at()?;
        self.present.iter().find_map(|m| {
            let f = self.failure_of(m)?;
            (m.finished_at()? < asked).then_some(f)
        })
    }

    /// A failed pod's failure: as the first rule of the job's `podFailurePolicy` that
    /// matches it says, else as kubetrain judges it (its node or GPU blamed where they
    /// failed). A rule decides over kubetrain's judgement: the user knows the exit codes.
    pub(super) fn failure_of(&self, m: &Member) -> Option<Failure> {
        let f = pod_failure(m)?;
        let rule = self
            .job
            .spec
            .pod_failure_policy
            .as_ref()
            .zip(m.pod.status.as_ref())
            .and_then(|(p, s)| policy::first_match(p, s));
        let Some(rule) = rule else {
            return Some(match blame_infrastructure(self.world, m, f) {
                // Its containers ended once its deletion was asked for (SIGTERM): whoever
                // deleted it stopped it, not the job (with a policy it is judged only then).
                Failure::Replica { pod, reason } if m.stopped_by_deletion() => {
                    Failure::Infrastructure {
                        pod,
                        reason: format!("{reason} once its pod was being deleted"),
                    }
                }
                other => other,
            });
        };
        let (pod, reason) = (m.name.clone(), rule.describe());
        Some(match rule.action {
            PodFailurePolicyAction::FailJob => Failure::Fatal { pod, reason },
            PodFailurePolicyAction::Ignore => Failure::Ignored { pod, reason },
            PodFailurePolicyAction::Count => Failure::Replica { pod, reason },
        })
    }

    /// A running gang stopped: retry (counted or not) or fail for good.
    pub(super) fn fail(&self, status: &mut TrainingJobStatus, fx: &mut Effects, f: Failure) {
        fx.stop = Stop::All;
        let (pod, reason, uncounted) = match f {
            Failure::Replica { pod, reason } => (pod, reason, None),
            Failure::Infrastructure { pod, reason } => (
                pod,
                reason,
                Some((
                    Reason::InfrastructureFailure,
                    EventReason::InfrastructureFailure,
                )),
            ),
            Failure::Ignored { pod, reason } => (
                pod,
                reason,
                Some((Reason::FailureIgnored, EventReason::FailureIgnored)),
            ),
            Failure::Fatal { pod, reason } => {
                let msg = format!("Replica {pod} failed: {reason}; not retried.");
                return self.fail_for_good(status, fx, Reason::PodFailurePolicy, msg);
            }
        };
        let budget = self.world.settings.max_infrastructure_retries;
        if let Some(cause) = uncounted
            && status.infrastructure_retries < budget
        {
            return self.retry_uncounted(status, fx, &pod, &reason, cause);
        }
        // A failure that would not count, past the budget of those, counts: say so.
        let reason = match uncounted {
            Some(_) => format!(
                "{reason} (judged as the job's own failure: its {budget} restarts that do not \
                 count are used up)"
            ),
            None => reason,
        };
        if status.retries < self.job.spec.max_retries {
            self.retry(status, fx, &pod, &reason);
        } else {
            let msg = format!(
                "Replica {pod} failed: {reason}. No retries left ({} of {} used).",
                status.retries, self.job.spec.max_retries
            );
            self.fail_for_good(status, fx, Reason::RetriesExhausted, msg);
        }
    }

    /// A failure that does not count (the platform's, or one a rule ignores), within the
    /// budget of those: the gang restarts at once, counting no retry.
    fn retry_uncounted(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        pod: &str,
        reason: &str,
        (code, event): (Reason, EventReason),
    ) {
        let (t, generation) = (self.t, self.generation);
        status.infrastructure_retries += 1;
        status.phase = Phase::Retrying;
        status.retry_at = Some(t.clone());
        let msg = if code == Reason::FailureIgnored {
            format!("Replica {pod} failed: {reason}. Restarting without counting a retry.")
        } else {
            format!(
                "Replica {pod} stopped: {reason}. Not the job's fault: restarting without \
                 counting a retry."
            )
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            code,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event_nth(
            EventType::Warning,
            event,
            status.infrastructure_retries,
            msg,
        );
    }

    /// A failure that counts, with retries left: the gang waits out its backoff (from when
    /// the replica failed) in `Retrying`.
    fn retry(&self, status: &mut TrainingJobStatus, fx: &mut Effects, pod: &str, reason: &str) {
        let (job, t, generation) = (self.job, self.t, self.generation);
        status.retries += 1;
        let wait = backoff(
            job.spec.backoff.initial_seconds,
            job.spec.backoff.max_seconds,
            status.retries,
        );
        // The backoff runs from when the replica failed (its containers' finishedAt), not
        // from when the operator saw it (after a restart, say), and never into the past.
        let failed_at = self
            .gang
            .members()
            .iter()
            .find(|m| m.name == pod)
            .and_then(Member::finished_at)
            .filter(|f| *f < t.0)
            .unwrap_or(t.0);
        let due = (failed_at + SignedDuration::from_secs(wait.as_secs() as i64)).max(t.0);
        let left = due.as_second() - t.0.as_second();
        status.phase = Phase::Retrying;
        status.retry_at = Some(Time(due));
        let msg = format!(
            "Replica {pod} failed: {reason}. Retry {} of {} in {left} s.",
            status.retries, job.spec.max_retries,
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::ReplicaFailed,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event_nth(
            EventType::Warning,
            EventReason::ReplicaFailed,
            status.retries,
            msg,
        );
        fx.requeue(wait.max(Duration::from_secs(1)));
    }

    /// Failed, for good: no retries left (`RetriesExhausted`), a `FailJob` rule matched
    /// (`PodFailurePolicy`), both after a replica failed; or past the job's deadline
    /// (`DeadlineExceeded`, which is also why it stopped running).
    pub(super) fn fail_for_good(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        reason: Reason,
        msg: String,
    ) {
        let (t, generation) = (self.t, self.generation);
        status.phase = Phase::Failed;
        status.finished_at = Some(t.clone());
        status.retry_at = None;
        conditions::set(
            &mut status.conditions,
            ConditionType::Failed,
            true,
            reason,
            msg.clone(),
            generation,
            t,
        );
        let stopped = match reason {
            Reason::RetriesExhausted => Reason::ReplicaFailed,
            other => other,
        };
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            stopped,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event(EventType::Warning, EventReason::Failed, msg);
        // Nothing runs again: the replicas still running stop, the one that failed
        // stays for its logs.
        fx.stop = Stop::Live;
    }

    /// Retrying: stop what is left of the gang, wait out the backoff, back to Queued.
    pub(super) fn retrying(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let t = self.t;
        if !self.present.is_empty() {
            fx.stop = Stop::All;
        }
        if !self.gang.is_empty() {
            fx.requeue(Duration::from_secs(1));
            return;
        }
        // `maxRetries` may change while the job waits: lowered below the retries already
        // used, the job does not run again (Volcano's restarting state does the same).
        if status.retries > self.job.spec.max_retries {
            let msg = format!(
                "No retries left: {} used, and maxRetries is now {}.",
                status.retries, self.job.spec.max_retries
            );
            self.fail_for_good(status, fx, Reason::RetriesExhausted, msg);
            return;
        }
        let due = status.retry_at.as_ref().is_none_or(|r| t.0 >= r.0);
        if due {
            // kube-scheduler refusing the chosen node is not the job's failure: it is placed
            // again, and counts no retry.
            let why = conditions::get(&status.conditions, ConditionType::Running)
                .map(|c| c.reason.as_str())
                .unwrap_or_default();
            let rejected = why == Reason::SchedulerRejected.as_str();
            let changed = why == Reason::TemplateChanged.as_str();
            status.phase = Phase::Queued;
            status.retry_at = None;
            status.placement.clear();
            status.started_at = None;
            let (message, note) = if changed {
                (
                    format!(
                        "Back in queue {} to start again with the changed template (no retry \
                         counted).",
                        queue_name(status)
                    ),
                    "Back in the queue to start again with the changed template.",
                )
            } else if rejected {
                (
                    format!(
                        "Back in queue {} to be placed on another node: kube-scheduler refused \
                         the one chosen (no retry counted).",
                        queue_name(status)
                    ),
                    "Back in the queue to be placed again after kube-scheduler refused a node.",
                )
            } else {
                (
                    format!(
                        "Back in queue {} after a failure (retry {} of {}).",
                        queue_name(status),
                        status.retries,
                        self.job.spec.max_retries
                    ),
                    "Backoff over: back in the queue.",
                )
            };
            status.message = Some(message);
            fx.event(EventType::Normal, EventReason::Requeued, note);
        } else if let Some(r) = &status.retry_at {
            fx.requeue(Duration::from_secs(
                (r.0.as_second() - t.0.as_second()).max(1) as u64,
            ));
        }
    }
}
