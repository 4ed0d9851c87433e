//! Starting and Running: the gang starts (or says which replica holds its start), runs, and
//! ends: a success, a failure (`failure.rs`), a preemption (`preempting.rs`), a refusal by
//! the cluster's scheduler or a changed template (`placed_again.rs`), or its deadline.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::failure::{Failure, infrastructure_failure};
use super::placed_again::scheduler_refusal;
use super::queued::admitted;
use super::{Effects, Member, NodeState, Step, Stop};
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::{Phase, TrainingJobStatus};
use crate::controller::conditions;
use crate::controller::pods::expected_pod_names;

/// How long a replica has been done before `status.succeededReplicas` records it. The
/// replicas of a gang finish within seconds of each other and the job succeeds in one write;
/// recording each as it finished cost 1.6 status applies per gang of 8 (Setup C). A finished
/// pod is removed minutes after its node idles, not seconds.
const RECORD_SUCCESS_AFTER_SECONDS: i64 = 30;

/// A replica of a starting gang whose pod reports a problem instead of progress: the first
/// pod, in rank order, not running whose (init) container waits for another reason than
/// being created ([`Member::start_problem`]). Returns the pod, the kubelet's reason and its
/// message.
pub(super) fn stalled_replica<'a>(
    present: &[&'a Member],
) -> Option<(&'a Member, &'a str, &'a str)> {
    present.iter().find_map(|m| {
        m.start_problem()
            .map(|(reason, message)| (*m, reason, message))
    })
}

impl Step<'_> {
    /// Starting and Running: to Preempting when asked to checkpoint, to Succeeded when the
    /// deciding tasks succeeded, to Retrying (or Failed) when a replica or its node failed or
    /// the cluster's scheduler refused a pod; from Starting to Running, recording the start,
    /// once every replica runs.
    pub(super) fn running(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let t = self.t;
        self.follow_standing(status, fx);
        if self.gang.checkpoint_requested() {
            // A replica that failed before the request failed on its own: the scheduler
            // asked from a cache that did not show it yet. The crash is the job's, counted,
            // not hidden as a preemption.
            if let Some(f) = self.failed_before_request() {
                return self.fail(status, fx, f);
            }
            status.phase = Phase::Preempting;
            return self.preempting(status, fx);
        }
        let expected = expected_pod_names(self.job);
        let gang_size = expected.len();
        // Finished pods someone is deleting (`kubectl delete pod`, the pod garbage collector)
        // still say how their replica ended, as a Job controller counts them: a failure is
        // the job's, a success is done (recorded at once, its pod is going).
        let finished_leaving: Vec<&Member> = self
            .gang
            .members()
            .iter()
            .filter(|m| !m.present() && matches!(m.phase.as_deref(), Some("Succeeded" | "Failed")))
            .collect();
        let done = self.record_successes(status, &finished_leaving);
        if self.deciding_succeeded(&done) {
            return self.succeed(status, fx);
        }
        let (failure, terminating) =
            self.failure_while_running(&expected, &done, &finished_leaving);
        if let Some(f) = failure {
            return self.fail(status, fx, f);
        }
        if terminating {
            fx.requeue(Duration::from_secs(2));
        }
        if let Some(refusal) = scheduler_refusal(
            self.present,
            &self.world.reservations,
            t.0,
            self.world.settings.unschedulable_timeout,
        ) {
            return self.roll_back(status, fx, refusal);
        }
        // A gang that has not started has nothing to lose: a fixed template (an image name,
        // say) applies now rather than after the start timeout has cost a retry.
        if status.started_at.is_none()
            && let Some((pod, task)) = self.made_from_an_old_template()
        {
            return self.restart_with_new_template(status, fx, pod, task);
        }
        // What the replicas did before the deadline was seen goes first (above): a success
        // is one, a failure is retried as any other.
        let deadline = self.deadline(status);
        if let Some((limit, due)) = deadline
            && t.0 >= due
        {
            let ran = limit + (t.0.as_second() - due.as_second());
            let msg = format!(
                "Stopped {ran} s after its admission, past spec.activeDeadlineSeconds \
                 ({limit} s); not retried."
            );
            return self.fail_for_good(status, fx, Reason::DeadlineExceeded, msg);
        }
        // A replica recorded as done has run, even once its pod is gone.
        let all_running = expected.iter().all(|n| {
            done.contains(n)
                || self
                    .gang
                    .present_named(n)
                    .and_then(|m| m.phase.as_deref())
                    .is_some_and(|ph| ph == "Running" || ph == "Succeeded")
        });
        if !all_running && status.started_at.is_none() {
            if let Some(f) = self.start_timed_out(status) {
                // A gang that never started (an image that cannot be pulled, say) goes to the
                // back of its queue, as Kueue requeues a workload evicted by its PodsReady
                // timeout: it should not hold the head of the line again. A failure after it
                // ran keeps the job's place, as a preemption does.
                status.queued_at = Some(t.clone());
                return self.fail(status, fx, f);
            }
            self.starting(status, gang_size);
        }
        if all_running && status.started_at.is_none() {
            self.started(status, fx, gang_size);
        }
        if status.started_at.is_some() {
            self.mark_unready_nodes(status, fx, gang_size);
        }
        fx.requeue(Duration::from_secs(if all_running { 30 } else { 2 }));
        if let Some((_, due)) = deadline {
            fx.requeue(Duration::from_secs(
                (due.as_second() - t.0.as_second()).max(1) as u64,
            ));
        }
    }

    /// Promoted into its team's guarantee or demoted out of it: the Admitted condition says
    /// which (it stays True, so its transition time stays), and an Event says when: whether a
    /// job may be reclaimed is what an admin asks of it.
    fn follow_standing(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let was_bonus = status.bonus;
        status.bonus = self.gang.bonus();
        if status.bonus == was_bonus {
            return;
        }
        admitted(
            status,
            expected_pod_names(self.job).len(),
            self.generation,
            self.t,
        );
        let (reason, note) = if status.bonus {
            (
                EventReason::Demoted,
                "Now on borrowed (bonus) GPUs: its team's guarantee no longer covers it (the \
                 guarantee was lowered, or a job of higher priority took it); it may be \
                 preempted with a checkpoint request when their owner needs them.",
            )
        } else {
            (
                EventReason::Promoted,
                "Now within its team's guarantee: it is no longer reclaimed for another team.",
            )
        };
        fx.event(EventType::Normal, reason, note.to_string());
    }

    /// The replicas done: those recorded, and those whose pods (present, or finished and
    /// leaving) say so. A replica is recorded once it has been done a while
    /// (`RECORD_SUCCESS_AFTER_SECONDS`).
    fn record_successes(
        &self,
        status: &mut TrainingJobStatus,
        finished_leaving: &[&Member],
    ) -> Vec<String> {
        let t = self.t;
        let mut done = status.succeeded_replicas.clone();
        for m in self
            .present
            .iter()
            .chain(finished_leaving)
            .filter(|m| m.succeeded())
        {
            if !done.contains(&m.name) {
                done.push(m.name.clone());
            }
            let settled = !m.present()
                || m.finished_at().is_none_or(|f| {
                    t.0 >= f + SignedDuration::from_secs(RECORD_SUCCESS_AFTER_SECONDS)
                });
            if settled && !status.succeeded_replicas.contains(&m.name) {
                status.succeeded_replicas.push(m.name.clone());
                status.succeeded_replicas.sort();
            }
        }
        done
    }

    /// Success: every replica of every deciding task (`requiredForCompletion`) succeeded:
    /// its pod did, or it is recorded as done (`status.succeededReplicas`).
    pub(super) fn deciding_succeeded(&self, done: &[String]) -> bool {
        let job = self.job;
        let mut deciding = job
            .spec
            .tasks
            .iter()
            .filter(|task| task.required_for_completion())
            .flat_map(|task| {
                (0..task.replicas().max(1) as u32)
                    .map(|i| crate::controller::pods::pod_name(&job.name_any(), &task.name, i))
            })
            .peekable();
        deciding.peek().is_some()
            && deciding.all(|n| {
                done.contains(&n) || self.gang.present_named(&n).is_some_and(Member::succeeded)
            })
    }

    /// Succeeded: the deciding tasks are done; what still runs stops.
    fn succeed(&self, status: &mut TrainingJobStatus, fx: &mut Effects) {
        let (t, generation) = (self.t, self.generation);
        status.phase = Phase::Succeeded;
        status.finished_at = Some(t.clone());
        status.message = Some("All replicas succeeded.".into());
        conditions::set(
            &mut status.conditions,
            ConditionType::Succeeded,
            true,
            Reason::Succeeded,
            "All replicas succeeded.",
            generation,
            t,
        );
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            Reason::Succeeded,
            "The job finished.",
            generation,
            t,
        );
        fx.event(
            EventType::Normal,
            EventReason::Succeeded,
            "All replicas succeeded.",
        );
        fx.stop = Stop::Live;
    }

    /// What stops a running gang, if anything: pods of another shape of the job, a replica
    /// that failed (a `FailJob` match first), one removed, or a node lost under it; and
    /// whether a replica whose pod is being deleted is awaited (with a `podFailurePolicy`,
    /// judged once it has terminated).
    fn failure_while_running(
        &self,
        expected: &[String],
        done: &[String],
        finished_leaving: &[&Member],
    ) -> (Option<Failure>, bool) {
        let gang_size = expected.len();
        // A replica recorded as done is not missing when its finished pod is removed.
        let awaited: Vec<String> = expected
            .iter()
            .filter(|n| !done.contains(n))
            .cloned()
            .collect();
        let missing = self.gang.first_missing(&awaited);
        // Pods of another shape of the job: its tasks changed after they were created (the
        // CRD refuses that while the job runs, so only an admission racing the change gets
        // here). Not the job's fault; the next attempt runs the new shape.
        let reshaped = self
            .present
            .iter()
            .find(|m| !expected.contains(&m.name) || m.gang_size.is_some_and(|g| g != gang_size))
            .map(|m| Failure::Infrastructure {
                pod: m.name.clone(),
                reason: format!(
                    "the job's tasks changed after its pods were created ({gang_size} \
                     replica(s) now)"
                ),
            });
        // With a `podFailurePolicy`, a replica whose pod is being deleted but still runs is
        // judged once it has terminated, as the Job controller does: its rules may look at
        // how it ended (a `DisruptionTarget` condition, an exit code). Without one, a pod on
        // its way out is a replica lost, at once.
        let terminating = missing.filter(|n| {
            self.job.spec.pod_failure_policy.is_some()
                && self
                    .gang
                    .members()
                    .iter()
                    .any(|m| m.name == **n && !m.present() && m.active)
        });
        // Every replica that failed is judged: a `FailJob` rule's match decides over the
        // others, whichever pod is listed first (as the Job controller's `getFailJobMessage`).
        let failed: Vec<Failure> = self
            .present
            .iter()
            .chain(finished_leaving)
            .filter_map(|m| self.failure_of(m))
            .collect();
        let failure = reshaped
            .or_else(|| {
                let fatal = failed.iter().find(|f| matches!(f, Failure::Fatal { .. }));
                fatal.or(failed.first()).cloned()
            })
            .or_else(|| {
                missing
                    .filter(|_| terminating.is_none())
                    .map(|m| Failure::Infrastructure {
                        pod: m.clone(),
                        reason: "the pod was removed".into(),
                    })
            })
            .or_else(|| infrastructure_failure(self.world, self.gang));
        (failure, terminating.is_some())
    }

    /// A gang not all running past the operator's start timeout, counted from its
    /// admission: its first replica not running, as the failure it is, with why it is not
    /// running when its containers say.
    fn start_timed_out(&self, status: &TrainingJobStatus) -> Option<Failure> {
        let limit = self.world.settings.start_timeout?;
        let admitted = status.admitted_at.as_ref()?;
        if self.t.0.as_second() - admitted.0.as_second() < limit.as_secs() as i64 {
            return None;
        }
        let m = self
            .present
            .iter()
            .find(|m| !matches!(m.phase.as_deref(), Some("Running" | "Succeeded")))?;
        let waiting = m.not_running_because();
        let reason = format!(
            "not running {} s after admission{}",
            limit.as_secs(),
            waiting.map_or(String::new(), |w| format!(" ({w})"))
        );
        Some(Failure::Replica {
            pod: m.name.clone(),
            reason,
        })
    }

    /// Running: every replica runs; the start is recorded.
    fn started(&self, status: &mut TrainingJobStatus, fx: &mut Effects, gang_size: usize) {
        let (t, generation) = (self.t, self.generation);
        status.phase = Phase::Running;
        status.started_at = Some(t.clone());
        let msg = format!("All {gang_size} replica(s) are running.");
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            true,
            Reason::AllReplicasRunning,
            msg.clone(),
            generation,
            t,
        );
        status.message = Some(msg.clone());
        fx.event(EventType::Normal, EventReason::Running, msg);
    }

    /// A running gang on a node that is not ready but that Kubernetes has not given up on
    /// ([`NodeState::NotReady`]: no NoExecute taint): the `Running` condition stays True (the
    /// replicas may run on, as they do behind a partition of the control plane from the
    /// nodes) with reason `NodeNotReady` naming the nodes, and a Warning Event tells when it
    /// begins. The condition goes back to `AllReplicasRunning` once every node is Ready. The
    /// gang is stopped only once the node is lost (tainted) or gone: the node lifecycle
    /// controller holds its taints back in a zone where most nodes are not ready, and
    /// kubetrain does not second-guess it by stopping every gang there at once.
    fn mark_unready_nodes(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        gang_size: usize,
    ) {
        let unready: BTreeSet<&str> = self
            .gang
            .active()
            .filter_map(|m| m.bound_node.as_deref())
            .filter(|n| *self.world.node(n) == NodeState::NotReady)
            .collect();
        let marked = conditions::get(&status.conditions, ConditionType::Running)
            .is_some_and(|c| c.reason == Reason::NodeNotReady.as_str());
        let (reason, msg) = if unready.is_empty() {
            if !marked {
                return;
            }
            let msg = format!("All {gang_size} replica(s) are running; every node is ready again.");
            fx.event(EventType::Normal, EventReason::Running, msg.clone());
            (Reason::AllReplicasRunning, msg)
        } else {
            let nodes = unready.into_iter().collect::<Vec<_>>().join(", ");
            let msg = format!(
                "Node(s) {nodes} not ready: the replicas there may still be running. The gang \
                 is stopped and placed again if Kubernetes gives up on the node (a NoExecute \
                 taint, as the node lifecycle controller sets unless most nodes of the zone \
                 are not ready) or the node is deleted."
            );
            if !marked {
                fx.event(EventType::Warning, EventReason::NodeNotReady, msg.clone());
            }
            (Reason::NodeNotReady, msg)
        };
        status.message = Some(msg.clone());
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            true,
            reason,
            msg,
            self.generation,
            self.t,
        );
    }

    /// Starting: `Running=False` (and the status message) says which replica holds the start
    /// when its pod reports a problem (reason `ReplicaNotStarting`), and goes back to
    /// `Starting` when none does. A gang that starts as it should keeps the condition of its
    /// admission: no write.
    fn starting(&self, status: &mut TrainingJobStatus, gang_size: usize) {
        let was_stalled = conditions::get(&status.conditions, ConditionType::Running)
            .is_some_and(|c| c.reason == Reason::ReplicaNotStarting.as_str());
        let (reason, msg) = match stalled_replica(self.present) {
            Some((m, why, detail)) => {
                let timeout = self
                    .world
                    .settings
                    .start_timeout
                    .map_or_else(String::new, |limit| {
                        format!(
                            " The gang is stopped and retried if it does not all run within {} \
                             s of its admission.",
                            limit.as_secs()
                        )
                    });
                let detail = detail.trim().trim_end_matches('.');
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                };
                (
                    Reason::ReplicaNotStarting,
                    format!("Replica {} is not running: {why}{detail}.{timeout}", m.name),
                )
            }
            None => (
                Reason::Starting,
                format!("Waiting for the {gang_size} replica(s) to start."),
            ),
        };
        if was_stalled || reason == Reason::ReplicaNotStarting {
            status.message = Some(msg.clone());
        }
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            reason,
            msg,
            self.generation,
            self.t,
        );
    }

    /// The job's `activeDeadlineSeconds` and when it falls: counted from the current
    /// admission, so a job back from its queue (a retry, a preemption, a suspension) has the
    /// whole time again, and time spent waiting never counts.
    fn deadline(&self, status: &TrainingJobStatus) -> Option<(i64, Timestamp)> {
        let limit = self.job.spec.active_deadline_seconds?;
        let admitted = status.admitted_at.as_ref()?;
        // A deadline beyond the last representable time is none.
        let due = admitted
            .0
            .checked_add(SignedDuration::from_secs(limit))
            .ok()?;
        Some((limit, due))
    }
}
