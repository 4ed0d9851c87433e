//! A gang stopped through no fault of its own and placed again, counting no retry: the
//! cluster's scheduler would not bind a pod where kubetrain placed it (the admission is rolled
//! back and the node avoided a while), or the template changed before the gang started.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::{Effects, Member, Step, Stop};
use crate::api::Phase;
use crate::api::TrainingJobStatus;
use crate::api::reasons::{ConditionType, EventReason, Reason};
use crate::api::trainingjob::RefusedNode;
use crate::controller::conditions;
use crate::controller::gang::{Unschedulable, unschedulable, volumes_not_ready};
use crate::controller::reservations;

/// How long a node the scheduler refused stays out of a job's placement.
const REFUSED_NODE_TTL: i64 = 600;

/// How long a job whose pods' claims are not ready waits before it is placed again.
const VOLUME_WAIT: i64 = 60;

/// A pod the cluster's scheduler has not bound for longer than `deadline` (its
/// `PodScheduled` condition `False`, reason `Unschedulable`): the node kubetrain chose does not
/// take it after all (another pod took the room, a volume cannot be attached there, a device
/// plugin or DRA check failed). Returns the pod, the node it was pinned to, and the
/// scheduler's message.
///
/// A share pod waiting behind its reservation gate is not the scheduler's to bind yet; its
/// GPU's reservation pod is, and that one's refusal is the share's (`reservations`).
pub(super) fn scheduler_refusal(
    pods: &[&Member],
    reservations: &BTreeMap<String, Arc<Pod>>,
    now: Timestamp,
    deadline: Duration,
) -> Option<(String, String, String)> {
    let deadline = SignedDuration::try_from(deadline).ok()?;
    pods.iter().find_map(|m| {
        if m.bound_node.is_some() {
            return None;
        }
        let waits = reservations::waits_for(&m.pod).is_some();
        let (since, message) = match reservations.get(&m.name).filter(|_| waits) {
            Some(r) => {
                let Unschedulable { since, message } = unschedulable(r)?;
                let why = format!(
                    "its GPU's reservation, pod {}/{}, cannot be bound: {message}",
                    r.namespace().unwrap_or_default(),
                    r.name_any()
                );
                (since, why)
            }
            None => {
                let Unschedulable { since, message } = unschedulable(&m.pod)?;
                (since, message)
            }
        };
        if now.duration_since(since.unwrap_or(now)) < deadline {
            return None;
        }
        Some((
            m.name.clone(),
            m.chosen_node.clone().unwrap_or_default(),
            message,
        ))
    })
}

impl Step<'_> {
    /// The scheduler would not bind the gang where kubetrain placed it: roll the whole
    /// admission back and re-plan without that node. Not a retry and not the job's fault.
    pub(super) fn roll_back(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        (pod, node, message): (String, String, String),
    ) {
        let t = self.t;
        status
            .refused_nodes
            .retain(|r| r.node != node && r.until.0 > t.0);
        let msg = if volumes_not_ready(&message) {
            // No node would do until the claim binds: refusing nodes one by one would say
            // each was at fault. The job waits a while instead, its GPUs free meanwhile.
            status.retry_at = Some(Time(t.0 + SignedDuration::from_secs(VOLUME_WAIT)));
            format!(
                "The scheduler did not bind pod {pod}: {message}. Its volumes are not ready on \
                 any node (a PersistentVolumeClaim that does not exist or is not bound): the \
                 admission is rolled back and the job placed again in {VOLUME_WAIT} s; this is \
                 not a retry."
            )
        } else {
            status.retry_at = Some(t.clone());
            status.refused_nodes.push(RefusedNode {
                node: node.clone(),
                until: Time(t.0 + SignedDuration::from_secs(REFUSED_NODE_TTL)),
                message: message.clone(),
            });
            format!(
                "The scheduler did not bind pod {pod} to node {node}: {message}. The admission \
                 is rolled back and the job placed again without that node for {} min; this is \
                 not a retry.",
                REFUSED_NODE_TTL / 60
            )
        };
        self.stop_uncounted(
            status,
            fx,
            (Reason::SchedulerRejected, EventReason::SchedulerRejected),
            EventType::Warning,
            msg,
        );
    }

    /// Stops the gang for a cause that is not the job's and sends it back to its queue through
    /// `Retrying` (at `status.retryAt`, which the caller sets), counting no retry: the
    /// `Running=False` reason, the message and an Event say why.
    fn stop_uncounted(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        (reason, event): (Reason, EventReason),
        kind: EventType,
        msg: String,
    ) {
        fx.stop = Stop::All;
        status.phase = Phase::Retrying;
        conditions::set(
            &mut status.conditions,
            ConditionType::Running,
            false,
            reason,
            msg.clone(),
            self.generation,
            self.t,
        );
        status.message = Some(msg.clone());
        fx.event(kind, event, msg);
    }

    /// A present pod made from another template than its task's now, and the task: its
    /// digest (`kubetrain.io/template-digest`) differs from the spec's. Pods without the
    /// annotation never differ.
    pub(super) fn made_from_an_old_template(&self) -> Option<(String, String)> {
        if self.present.iter().all(|m| m.template_digest.is_none()) {
            return None;
        }
        // Each task's digest once, not once per replica: a gang may have thousands.
        let digests = crate::controller::pods::template_digests(self.job);
        self.present.iter().find_map(|m| {
            let digest = m.template_digest.as_deref()?;
            let task = &m.placement.as_ref()?.task;
            (digests.get(task.as_str())? != digest).then(|| (m.name.clone(), task.clone()))
        })
    }

    /// Stops a gang that has not started because its template changed, and places it again
    /// at once, in its place in the queue; no retry is counted.
    pub(super) fn restart_with_new_template(
        &self,
        status: &mut TrainingJobStatus,
        fx: &mut Effects,
        pod: String,
        task: String,
    ) {
        status.retry_at = Some(self.t.clone());
        let msg = format!(
            "The pod template of task {task} changed before every replica ran (pod {pod} was \
             made from the old one): the gang is stopped and placed again with the new \
             template; this is not a retry."
        );
        self.stop_uncounted(
            status,
            fx,
            (Reason::TemplateChanged, EventReason::TemplateChanged),
            EventType::Normal,
            msg,
        );
    }
}
