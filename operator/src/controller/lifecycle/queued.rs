//! Queued: the job waits in its queue, says why (the scheduler's word) and where, and starts
//! once the scheduler has created its whole gang; the `Admitted` condition, set at admission,
//! following the job's standing, and taken back whenever the job leaves its admission.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use super::{Effects, Step, Stop, queue_name};
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::{Phase, TrainingJobStatus, WaitDetails};
use crate::controller::pods::expected_pod_names;
use crate::controller::{conditions, wait_details};

/// Sets the Admitted condition for the job's standing (`status.bonus`) and placement;
/// returns its message.
pub(super) fn admitted(
    status: &mut TrainingJobStatus,
    gang_size: usize,
    generation: Option<i64>,
    t: &Time,
) -> String {
    let nodes: BTreeSet<&str> = status.placement.iter().map(|p| p.node.as_str()).collect();
    let msg = format!(
        "Admitted: {gang_size} replica(s) on {} node(s){}.",
        nodes.len(),
        if status.bonus {
            "; it runs on borrowed (bonus) GPUs and may be preempted with a checkpoint \
             request when their owner needs them"
        } else {
            ""
        },
    );
    conditions::set(
        &mut status.conditions,
        ConditionType::Admitted,
        true,
        if status.bonus {
            Reason::AdmittedAsBonus
        } else {
            Reason::AdmittedWithinGuarantee
        },
        msg.clone(),
        generation,
        t,
    );
    msg
}

impl Step<'_> {
    /// Queued: publish why the job waits; once the scheduler has created the whole gang,
    /// Running. A gang left half-created is torn down.
    pub(super) fn queued(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        if self.present.is_empty() {
            return self.wait_in_queue(status, fx);
        }
        if self.gang.checkpoint_requested() {
            status.phase = Phase::Preempting;
            return self.preempting(status, fx);
        }
        let expected = expected_pod_names(self.job);
        let gang_size = expected.len();
        if self.gang.first_missing(&expected).is_some() {
            return self.gang_incomplete(status, fx, gang_size);
        }
        self.start(status, fx, gang_size);
    }

    /// Queued with no pod present: the scheduler's word on why the job waits, and its place
    /// in line, on `Admitted=False` (a wait no cycle ends also as a Warning).
    fn wait_in_queue(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (t, generation) = (self.t, self.generation);
        if !self.gang.is_empty() {
            // Old pods still terminating: the scheduler counts them; wait.
            fx.requeue(Duration::from_secs(1));
            return;
        }
        if self.world.admission_in_flight {
            // Admitted, its pods being created: their arrival writes the admission.
            // Rewriting the wait that ended ("waiting for the next cycle") now would be
            // a status write superseded a moment later.
            let old = self.job.status.as_ref();
            status.queue_position = old.and_then(|s| s.queue_position);
            status.estimated_start_time = old.and_then(|s| s.estimated_start_time.clone());
            status.waiting = old.and_then(|s| s.waiting.clone());
            fx.requeue(Duration::from_secs(1));
            return;
        }
        let wait = self.world.wait.clone();
        status.estimated_start_time = wait
            .as_ref()
            .and(self.world.estimated_start)
            .and_then(|t| Timestamp::from_second(t).ok())
            .map(Time);
        status.queue_position = wait
            .as_ref()
            .and_then(|(_, p)| *p)
            .map(|p| i32::try_from(p).unwrap_or(i32::MAX));
        // A wait no cycle ends (the job or the cluster must change) is a Warning, once,
        // as an invalid spec is: `kubectl get events --field-selector type=Warning` and
        // alerts on them see it, not only a job that waits long.
        let hopeless = wait
            .as_ref()
            .map(|(r, _)| r.code())
            .filter(|c| c.is_stuck())
            .filter(|c| {
                conditions::get(&status.conditions, ConditionType::Admitted)
                    .is_none_or(|a| a.reason != c.as_str())
            });
        // The message and `status.waiting` say the same wait: one in words, one in fields.
        let (code, msg, details) = match wait {
            Some((r, _)) => (r.code().to_string(), r.to_string(), wait_details::of(&r)),
            None => (
                Reason::Waiting.as_str().to_string(),
                format!(
                    "Waiting in queue {} for the next scheduling cycle.",
                    queue_name(status)
                ),
                WaitDetails {
                    queue: status.queue.clone(),
                    ..WaitDetails::new(Reason::Waiting.as_str())
                },
            ),
        };
        status.waiting = Some(details);
        conditions::set(
            &mut status.conditions,
            ConditionType::Admitted,
            false,
            &code,
            msg.clone(),
            generation,
            t,
        );
        if let Some(code) = hopeless {
            fx.event_named(EventType::Warning, code.as_str(), msg.clone());
        }
        status.message = Some(msg);
        // The scheduler asks for a reconcile whenever the reason it waits changes;
        // this is only a safety net.
        fx.requeue(Duration::from_secs(30));
    }

    /// Queued with part of the gang present: wait while its pods are being created; tear
    /// down a gang left half-created.
    fn gang_incomplete(&self, status: &mut TrainingJobStatus, fx: &mut Effects, gang_size: usize) {
        let t = self.t;
        let newest = self.gang.last_created();
        let age = newest.map_or(0, |n| t.0.as_second() - n.as_second());
        if self.world.admission_in_flight
            || age < self.world.settings.incomplete_gang_timeout.as_secs() as i64
        {
            fx.requeue(Duration::from_secs(1));
            return;
        }
        // A gang left half-created (the operator stopped mid-admission): tear it
        // down and queue again; never run part of a gang.
        fx.stop = Stop::All;
        status.infrastructure_retries += 1;
        fx.event(
            EventType::Warning,
            EventReason::IncompleteGang,
            format!(
                "Found {} of {gang_size} pods with no admission in progress; removed them \
                 and queued the job again.",
                self.present.len()
            ),
        );
    }

    /// The whole gang is here: Starting, its admission and placement recorded.
    fn start(&self, status: &mut TrainingJobStatus, fx: &mut Effects, gang_size: usize) {
        let (t, generation) = (self.t, self.generation);
        status.phase = Phase::Starting;
        status.admitted_at = Some(t.clone());
        status.started_at = None;
        status.retry_at = None;
        status.succeeded_replicas.clear();
        status.bonus = self.gang.bonus();
        status.placement = self.gang.recorded_placement();
        let msg = admitted(status, gang_size, generation, t);
        // In the same write as the admission: a retry's `ReplicaFailed` (or a preemption's
        // `Preempted`) would otherwise read as this run's.
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::Starting,
            format!("Waiting for the {gang_size} replica(s) to start."),
            generation,
            t,
        );
        status.message = Some(msg);
        fx.requeue(Duration::from_secs(2));
    }

    /// A job that holds no admission (back in its queue, suspended, waiting out a backoff,
    /// finished) never says `Admitted=True`: whatever way it left its admission, the same
    /// write says `Admitted=False` with why it stopped (its `Running=False` reason and
    /// message), and `queued` words the wait itself once the scheduler has spoken. A
    /// finished job holds no quota, and a condition saying otherwise misleads whoever counts
    /// admitted jobs (Kueue's finished Workloads keep `QuotaReserved=True`, which its
    /// maintainers call confusing, kubernetes-sigs/kueue#7480).
    /// Nor does it say it runs on borrowed GPUs (`status.bonus`, the BONUS column): it runs
    /// on none (an acceptance run read `Failed ... BONUS true`).
    pub(super) fn admission_ended(&self, status: &mut TrainingJobStatus) {
        if !matches!(
            status.phase,
            Phase::Queued | Phase::Retrying | Phase::Suspended | Phase::Succeeded | Phase::Failed
        ) {
            return;
        }
        status.bonus = false;
        if !conditions::is_true(&status.conditions, ConditionType::Admitted) {
            return;
        }
        let (reason, msg) = conditions::get(&status.conditions, ConditionType::Running)
            .filter(|c| c.status == "False")
            .map_or_else(
                || {
                    (
                        Reason::Waiting.as_str().to_string(),
                        status.message.clone().unwrap_or_default(),
                    )
                },
                |c| (c.reason.clone(), c.message.clone()),
            );
        conditions::set(
            &mut status.conditions,
            ConditionType::Admitted,
            false,
            &reason,
            msg,
            self.generation,
            self.t,
        );
    }
}
