//! The lifecycle's transitions, each told as a story: a job, its pods and the world around them
//! change; `next` says what the job becomes and what the reconciler does about it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::sched::Gpus;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use serde_json::json;

use super::failure::{Failure, pod_failure};
use super::*;
use crate::api::annotations::{
    BONUS_ANNOTATION, CHECKPOINT_DONE, CHECKPOINT_REQUESTED, GANG_SIZE_ANNOTATION,
    GPU_ASSIGNMENT_ANNOTATION, GPU_SHARE_ANNOTATION, GPUS_ANNOTATION, INDEX_LABEL, JOB_LABEL,
    NODE_ANNOTATION, PREEMPTION_REASON, RANK_ANNOTATION, RESERVATION_GATE,
    RESERVATION_UID_ANNOTATION, TASK_LABEL,
};
use crate::api::trainingjob::PreemptionOutcome;
use crate::controller::pods::pod_name;
use crate::controller::reservations;

const T0: i64 = 1_800_000_000;

pub(super) fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(T0 + seconds).expect("time"))
}

pub(super) fn stamp(seconds: i64) -> String {
    at(seconds).0.to_string()
}

/// A job `llm` in namespace `team`, queue `q`: one task `worker` of `replicas` pods with one
/// GPU each, 2 retries with a 10 s backoff, a 30 s checkpoint grace period.
pub(super) fn job(replicas: u32) -> TrainingJob {
    serde_json::from_value(json!({
        "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": "llm", "namespace": "team", "uid": "u-1", "generation": 1},
        "spec": {
            "queue": "q", "maxRetries": 2,
            "backoff": {"initialSeconds": 10, "maxSeconds": 600},
            "checkpoint": {"gracePeriodSeconds": 30},
            "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ]}}}]
        }
    }))
    .expect("valid job")
}

/// Replica `index`, placed on `node` (GPU `index`), in pod phase `phase`.
pub(super) fn replica(index: u32, node: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": pod_name("llm", "worker", index), "namespace": "team",
            "creationTimestamp": stamp(0),
            "labels": {TASK_LABEL: "worker", INDEX_LABEL: index.to_string()},
            "annotations": {GPUS_ANNOTATION: index.to_string(), RANK_ANNOTATION: index.to_string()}
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": phase}
    }))
    .expect("pod")
}

pub(super) fn annotate(pod: &mut Pod, key: &str, value: &str) {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.into(), value.into());
}

/// The replica's container exited with `code`: the pod failed.
pub(super) fn exits(pod: &mut Pod, code: i32) {
    pod.status = Some(
        serde_json::from_value(json!({"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"terminated": {"exitCode": code}}}
        ]}))
        .expect("pod status"),
    );
}

/// The pod's status, from its JSON.
pub(super) fn status(pod: &mut Pod, value: serde_json::Value) {
    pod.status = Some(serde_json::from_value(value).expect("pod status"));
}

/// A container status named `name` in `state`.
pub(super) fn container(name: &str, state: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "ready": false, "restartCount": 0, "image": "x", "imageID": "",
           "state": state})
}

/// The replica's container exited with `code` at `finished` (seconds): the pod failed.
pub(super) fn exits_at(pod: &mut Pod, code: i32, finished: i64) {
    status(
        pod,
        json!({"phase": "Failed", "containerStatuses": [
            container("c", json!({"terminated": {"exitCode": code, "finishedAt": stamp(finished)}}))]}),
    );
}

/// The replica's container exited 0 at `finished` (seconds): the pod succeeded.
pub(super) fn succeeds_at(pod: &mut Pod, finished: i64) {
    status(
        pod,
        json!({"phase": "Succeeded", "containerStatuses": [
            container("c", json!({"terminated": {"exitCode": 0, "finishedAt": stamp(finished)}}))]}),
    );
}

/// Suspends the running gang, which acknowledges its checkpoint; its pods are gone:
/// `Suspended`.
pub(super) fn suspend_and_stop(s: &mut Story) {
    s.job.spec.suspend = true;
    s.after(1).tick();
    let now = s.now;
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(now));
    s.annotate_all(CHECKPOINT_DONE, &stamp(now + 1));
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended, "{:?}", s.status().message);
}

pub(super) fn sorted(mut v: Vec<&str>) -> Vec<&str> {
    v.sort_unstable();
    v
}

/// The job's `podFailurePolicy`, from its rules' JSON.
pub(super) fn failure_policy(s: &mut Story, rules: serde_json::Value) {
    s.job.spec.pod_failure_policy =
        Some(serde_json::from_value(json!({ "rules": rules })).expect("policy"));
}

pub(super) fn set_phase(pod: &mut Pod, phase: &str) {
    pod.status.get_or_insert_with(Default::default).phase = Some(phase.into());
}

pub(super) fn up() -> NodeState {
    NodeState::Up {
        unhealthy_gpus: BTreeSet::new(),
    }
}

/// A job and the world around it, moved along by `tick`.
pub(super) struct Story {
    pub(super) job: TrainingJob,
    pub(super) pods: Vec<Pod>,
    pub(super) world: World,
    pub(super) now: i64,
    /// Status writes so far: the reconciler writes only a changed status.
    pub(super) writes: u32,
}

impl Story {
    pub(super) fn new(replicas: u32) -> Self {
        Story {
            job: job(replicas),
            pods: Vec::new(),
            world: World {
                queue: Some("q".into()),
                priority: Some(0),
                validity: Ok(()),
                wait: None,
                admission_in_flight: false,
                scheduling: false,
                nodes: [("n1".to_string(), up())].into_iter().collect(),
                reservations: Default::default(),
                settings: Settings {
                    max_infrastructure_retries: 3,
                    incomplete_gang_timeout: Duration::from_secs(30),
                    unschedulable_timeout: Duration::from_secs(60),
                    start_timeout: Some(Duration::from_secs(600)),
                },
            },
            now: 0,
            writes: 0,
        }
    }

    /// A job as the API server holds it: created at t = 0.
    pub(super) fn created(replicas: u32) -> Self {
        let mut s = Story::new(replicas);
        s.job.metadata.creation_timestamp = Some(at(0));
        s
    }

    /// The scheduler admitted the job: its whole gang exists on node n1, in pod phase `phase`.
    pub(super) fn admitted(mut self, phase: &str) -> Self {
        let replicas = self.job.spec.tasks[0].replicas() as u32;
        self.pods = (0..replicas).map(|i| replica(i, "n1", phase)).collect();
        self
    }

    pub(super) fn set_pods_phase(&mut self, phase: &str) {
        for p in &mut self.pods {
            p.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        }
    }

    pub(super) fn annotate_all(&mut self, key: &str, value: &str) {
        for p in &mut self.pods {
            annotate(p, key, value);
        }
    }

    /// The reconcile at `now`: the job takes its new status, as the status write does.
    pub(super) fn tick(&mut self) -> Effects {
        let gang = Gang::new(self.pods.iter().cloned().map(Arc::new));
        let (status, fx) = next(&self.job, &gang, &self.world, &at(self.now));
        if status != self.job.status.clone().unwrap_or_default() {
            self.job.status = Some(status);
            self.writes += 1;
        }
        fx
    }

    /// The reconciler carried out the deletions: the pods are gone.
    pub(super) fn pods_gone(&mut self) {
        self.pods.clear();
    }

    pub(super) fn after(&mut self, seconds: i64) -> &mut Self {
        self.now += seconds;
        self
    }

    pub(super) fn status(&self) -> &TrainingJobStatus {
        self.job.status.as_ref().expect("status")
    }

    pub(super) fn phase(&self) -> Phase {
        self.status().phase
    }

    pub(super) fn condition(&self, t: ConditionType) -> &Condition {
        self.status()
            .conditions
            .iter()
            .find(|c| c.type_ == t.as_str())
            .unwrap_or_else(|| panic!("condition {t}"))
    }

    /// Status and reason of the condition.
    pub(super) fn says(&self, t: ConditionType) -> (&str, &str) {
        let c = self.condition(t);
        (c.status.as_str(), c.reason.as_str())
    }

    /// From Pending to Running, all replicas running, at t = 0.
    pub(super) fn running(replicas: u32) -> Self {
        let mut s = Story::new(replicas);
        s.tick();
        s = s.admitted("Running");
        s.tick();
        s.tick();
        assert_eq!(s.phase(), Phase::Running);
        assert!(s.status().started_at.is_some());
        s
    }
}

pub(super) fn reasons(fx: &Effects) -> Vec<&str> {
    fx.events.iter().map(|e| e.reason).collect()
}

pub(super) fn deleted(fx: &Effects) -> Vec<&str> {
    fx.pod_deletions.iter().map(|d| d.pod.as_str()).collect()
}

#[test]
fn a_new_job_enters_its_queue_and_waits_for_the_scheduler() {
    let mut s = Story::new(2);
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)));
    assert_eq!(s.status().queue.as_deref(), Some("q"));
    assert_eq!(s.status().gpus, Some(2.0));
    assert_eq!(s.status().observed_generation, Some(1));
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    // No scheduling cycle has looked at it yet.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
    assert_eq!(reasons(&fx), ["Queued"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    assert!(fx.pod_deletions.is_empty());

    // The scheduler says why it waits, and where it stands in line.
    s.world.wait = Some((
        WaitReason::Invalid {
            message: "zero replicas".into(),
        },
        Some(3),
    ));
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queue_position, Some(3));
    assert_eq!(s.says(ConditionType::Admitted).1, "Invalid");
    assert!(fx.events.is_empty(), "no transition, no Event");
    // Entering the queue happened once.
    assert_eq!(s.status().queued_at, Some(at(0)));
}

/// A wait no scheduling cycle ends (`NeverFits`, `ExceedsLimit`) is a Warning Event once,
/// as an invalid spec is; the same wait seen again is not news, and another such wait is.
#[test]
fn a_job_that_can_never_start_gets_a_warning_once() {
    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "no node has 16 GPUs".into(),
        },
        Some(1),
    ));
    let fx = s.tick();
    assert_eq!(s.status().reason.as_deref(), Some("NeverFits"));
    let warnings: Vec<&str> = fx
        .events
        .iter()
        .filter(|e| e.type_ == EventType::Warning)
        .map(|e| e.reason)
        .collect();
    assert_eq!(warnings, ["NeverFits"]);
    let fx = s.after(30).tick();
    assert!(fx.events.is_empty(), "{:?}", reasons(&fx));
    // A wait that ends on its own is no Warning.
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
            share_kept_by: None,
            required: None,
        },
        Some(1),
    ));
    let fx = s.after(30).tick();
    assert!(fx.events.iter().all(|e| e.type_ != EventType::Warning));
}

/// A job that waited in line is admitted: while its pods are being created its status keeps
/// the wait it had (no write saying it waits for the next cycle), and the pods' arrival writes
/// the admission.
#[test]
fn a_waiting_job_whose_pods_are_being_created_is_written_once_they_exist() {
    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::NeverFits {
            message: "too big".into(),
        },
        Some(1),
    ));
    s.tick();
    assert_eq!(s.says(ConditionType::Admitted).1, "NeverFits");
    let writes = s.writes;
    let before = s.status().clone();
    // The scheduler admitted it: no longer waiting, its pods not yet in the cache.
    s.world.wait = None;
    s.world.admission_in_flight = true;
    let fx = s.after(1).tick();
    assert_eq!(s.status(), &before);
    assert_eq!(
        s.writes, writes,
        "no write while its pods are being created"
    );
    assert_eq!(s.says(ConditionType::Admitted).1, "NeverFits");
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.world.admission_in_flight = false;
    s = s.admitted("Pending");
    s.after(1).tick();
    assert_eq!(s.writes, writes + 1);
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.says(ConditionType::Admitted).0, "True");
}

/// The scheduler admits a new job in its first cycle: the job is written once on its way
/// to Running (`Queued` and `Admitted` together), once more when its replicas run; never
/// with the "waiting for the next scheduling cycle" that would be stale a moment later. It
/// gets no `Queued` Event: the scheduler's `Admitted` Event, posted before, names its queue.
#[test]
fn a_job_admitted_in_its_first_cycle_is_written_once_before_it_runs() {
    let mut s = Story::created(1);
    let fx = s.tick();
    assert!(
        s.job.status.is_none(),
        "no write before the scheduler's word"
    );
    assert_eq!(s.writes, 0);
    assert!(fx.events.is_empty(), "no Event before the scheduler's word");
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE));
    // The scheduler is creating its pods.
    s.world.admission_in_flight = true;
    let fx = s.after(1).tick();
    assert!(s.job.status.is_none());
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE));
    s.world.admission_in_flight = false;
    s = s.admitted("Pending");
    let fx = s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Starting);
    assert!(
        fx.events.is_empty(),
        "admitted before it waited: the Admitted Event says it all"
    );
    assert_eq!(
        s.status().queued_at,
        Some(at(0)),
        "in its queue since its creation"
    );
    assert_eq!(s.status().admitted_at, Some(at(2)));
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
    s.after(1).tick();
    assert_eq!(s.writes, 1, "nothing changed while its pod is pending");
    s.set_pods_phase("Running");
    let fx = s.after(1).tick();
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(s.writes, 2);
}

/// A new job the scheduler cannot admit is written once it says why: `Queued`, with the
/// reason and the job's place in its queue, as `kubectl get` and `describe` show it.
#[test]
fn a_new_job_that_waits_is_written_with_the_schedulers_reason() {
    let mut s = Story::created(2);
    s.after(1).tick();
    assert_eq!(s.writes, 0);
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(2000),
            share_kept_by: None,
            required: None,
        },
        Some(4),
    ));
    let fx = s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Queued"]);
    assert_eq!(s.status().queued_at, Some(at(0)));
    assert_eq!(s.status().queue_position, Some(4));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "QuotaExhausted"));
    assert_eq!(s.status().reason.as_deref(), Some("QuotaExhausted"));
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
}

/// A scheduler that says nothing (busy, or stopped) does not keep a new job unwritten: past
/// the grace it is written as waiting for the next cycle. Invalid and suspended jobs are
/// written at once: no cycle changes what they say.
#[test]
fn a_new_job_is_written_anyway_when_the_scheduler_stays_silent() {
    let mut s = Story::created(1);
    let fx = s.after(4).tick();
    assert_eq!(s.writes, 0);
    assert_eq!(fx.requeue, Some(FIRST_WORD_GRACE - Duration::from_secs(4)));
    let fx = s.after(6).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Waiting"));
    assert_eq!(reasons(&fx), ["Queued"]);

    // A long cycle (creating many gangs) is under way: the next one sees the job, however old.
    let mut s = Story::created(1);
    s.world.scheduling = true;
    s.after(60).tick();
    assert_eq!(s.writes, 0);
    s.world.scheduling = false;
    s.after(1).tick();
    assert_eq!(s.writes, 1);
    assert_eq!(s.phase(), Phase::Queued);

    let mut s = Story::created(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.tick();
    assert_eq!(s.phase(), Phase::Pending);

    let mut s = Story::created(1);
    s.job.spec.suspend = true;
    s.tick();
    assert_eq!(s.phase(), Phase::Suspended);
}

#[test]
fn an_admitted_gang_runs_then_starts() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.now = 3;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().admitted_at, Some(at(3)));
    assert_eq!(s.status().placement.len(), 2);
    assert_eq!(s.status().placement[1].node, "n1");
    assert_eq!(s.status().placement[1].gpus, [1]);
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
    assert!(s.status().started_at.is_none(), "not running yet");
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    assert_eq!(s.status().reason.as_deref(), Some("Starting"));
    assert_eq!(fx.requeue, Some(Duration::from_secs(2)));
    assert_eq!(s.status().queue_position, None);

    // Still pulling images: nothing changes, look again soon.
    let fx = s.after(2).tick();
    assert!(fx.events.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(2)));

    s.set_pods_phase("Running");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().started_at, Some(at(7)));
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    // Started once.
    let fx = s.after(30).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.status().started_at, Some(at(7)));
}

/// A starting gang one of whose replicas cannot pull its image says so while it waits for
/// it: `Running=False` with reason `ReplicaNotStarting` and the status message name the pod
/// and the kubelet's words, and `status.reason` (the REASON column) is the kubelet's reason.
/// Containers being created are progress: nothing to say, no write.
#[test]
fn a_starting_gang_names_the_replica_that_does_not_start() {
    let waiting = |reason: &str, message: &str| {
        json!({"phase": "Pending", "containerStatuses": [
            container("c", json!({"waiting": {"reason": reason, "message": message}}))]})
    };
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    for p in &mut s.pods {
        status(p, waiting("ContainerCreating", ""));
    }
    let writes = s.writes;
    s.after(2).tick();
    assert_eq!(s.writes, writes, "progress is not news");
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));

    status(
        &mut s.pods[1],
        waiting("ImagePullBackOff", "Back-off pulling image \"x\""),
    );
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty(), "the start timeout decides");
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "ReplicaNotStarting")
    );
    assert_eq!(s.status().reason.as_deref(), Some("ImagePullBackOff"));
    let msg = s.status().message.clone().unwrap_or_default();
    assert!(
        msg.starts_with(
            "Replica llm-worker-1 is not running: ImagePullBackOff: Back-off pulling image \"x\"."
        ),
        "{msg}"
    );
    assert_eq!(s.condition(ConditionType::Running).message, msg);

    // The image is there now: back to progress, then the gang runs.
    status(&mut s.pods[1], waiting("ContainerCreating", ""));
    s.after(2).tick();
    assert_eq!(s.says(ConditionType::Running), ("False", "Starting"));
    assert_eq!(s.status().reason.as_deref(), Some("Starting"));
    assert_eq!(
        s.status().message.as_deref(),
        Some("Waiting for the 2 replica(s) to start.")
    );
    s.set_pods_phase("Running");
    s.after(2).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
}

/// A template fixed while the gang starts (the image name, say) applies at once: the pods
/// made from the old one are stopped and the gang is placed again, in its place and with no
/// retry counted, rather than after the start timeout has cost one. A gang that has started
/// runs on: a template change waits for its next attempt.
#[test]
fn a_template_changed_while_the_gang_starts_starts_it_again() {
    use crate::api::annotations::TEMPLATE_DIGEST_ANNOTATION;
    use crate::controller::pods::template_digest;
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    let old = template_digest(&s.job.spec.tasks[0].template);
    s.annotate_all(TEMPLATE_DIGEST_ANNOTATION, &old);
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    // Unchanged: nothing happens.
    let fx = s.after(2).tick();
    assert!(fx.pod_deletions.is_empty());

    s.job.spec.tasks[0].template["spec"]["containers"][0]["image"] = json!("trainer:fixed");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.says(ConditionType::Running), ("False", "TemplateChanged"));
    assert_eq!(s.status().reason.as_deref(), Some("TemplateChanged"));
    assert_eq!(reasons(&fx), ["TemplateChanged"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 0);
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)), "keeps its place");
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("start again with the changed template")),
        "{:?}",
        s.status().message
    );

    // Started: the change waits for the next attempt.
    let mut s = Story::running(2);
    s.annotate_all(TEMPLATE_DIGEST_ANNOTATION, &old);
    s.job.spec.tasks[0].template["spec"]["containers"][0]["image"] = json!("trainer:fixed");
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

#[test]
fn a_gang_on_borrowed_gpus_is_admitted_as_bonus() {
    let mut s = Story::new(1).admitted("Pending");
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().bonus);
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
}

/// A promotion re-marks the pods that still run; a replica that already finished keeps its
/// old mark, and does not keep the job on bonus.
#[test]
fn a_promoted_gang_is_no_longer_bonus_though_a_finished_pod_says_so() {
    let mut s = Story::running(2);
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert!(s.status().bonus);
    s.pods[1].status.get_or_insert_with(Default::default).phase = Some("Succeeded".into());
    annotate(&mut s.pods[0], BONUS_ANNOTATION, "false");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(!s.status().bonus);
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
}

/// A demotion (more important jobs of the team now fill its guarantee) re-marks the pods:
/// the job says it runs on borrowed GPUs and may be preempted by a reclaim.
#[test]
fn a_demoted_gang_runs_on_as_bonus() {
    let mut s = Story::running(2);
    s.tick();
    assert!(!s.status().bonus);
    s.annotate_all(BONUS_ANNOTATION, "true");
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(s.status().bonus);
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
    // An admin sees when it became reclaimable (found in a day-2 run: no Event said so).
    assert_eq!(reasons(&fx), vec!["Demoted"]);
    s.annotate_all(BONUS_ANNOTATION, "false");
    let fx = s.after(1).tick();
    assert!(!s.status().bonus);
    assert_eq!(reasons(&fx), vec!["Promoted"]);
    assert!(reasons(&s.after(1).tick()).is_empty(), "once per change");
}

/// A failed job runs on nobody's GPUs: it no longer says it borrows them, though a replica
/// that still ran when another failed was marked bonus.
#[test]
fn a_failed_job_is_no_longer_bonus() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").retries = 2;
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert!(s.status().bonus);
    set_phase(&mut s.pods[0], "Failed");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert!(!s.status().bonus);
}

#[test]
fn a_half_created_gang_waits_for_its_admission_then_is_torn_down() {
    let mut s = Story::new(2);
    s.tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    // The scheduler is still creating the gang.
    s.world.admission_in_flight = true;
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    // Nobody is creating it, but it is young.
    s.world.admission_in_flight = false;
    s.now = 10;
    let fx = s.tick();
    assert!(fx.pod_deletions.is_empty());
    // Left half-created: removed, queued again, not the job's fault.
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retries, 0);
    assert_eq!(reasons(&fx), ["IncompleteGang"]);
}

#[test]
fn the_deciding_replicas_succeed_and_the_job_succeeds() {
    let mut s = Story::running(2);
    s.set_pods_phase("Succeeded");
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.status().finished_at, Some(at(100)));
    assert_eq!(s.says(ConditionType::Succeeded), ("True", "Succeeded"));
    assert_eq!(s.says(ConditionType::Running), ("False", "Succeeded"));
    // Its GPUs went back with the same write: it no longer says it is admitted.
    assert_eq!(s.says(ConditionType::Admitted), ("False", "Succeeded"));
    assert_eq!(reasons(&fx), ["Succeeded"]);
    // The pods finished: nothing to stop.
    assert!(fx.pod_deletions.is_empty());
    // Finished is final.
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    assert!(fx.events.is_empty());
    assert!(!fx.delete_job);
}

#[test]
fn a_finished_job_is_deleted_once_its_ttl_passes() {
    let mut s = Story::running(1);
    s.job.spec.ttl_seconds_after_finished = Some(60);
    s.set_pods_phase("Succeeded");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    let fx = s.after(20).tick();
    assert!(!fx.delete_job);
    assert_eq!(fx.requeue, Some(Duration::from_secs(40)));
    let fx = s.after(40).tick();
    assert!(fx.delete_job);
    assert_eq!(reasons(&fx), ["Expired"]);
}

#[test]
fn a_failed_replica_is_retried_after_its_backoff() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 3);
    let fx = s.after(50).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, Some(at(60)));
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(s.status().reason.as_deref(), Some("ReplicaFailed"));
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("llm-worker-1 failed: exit code 3. Retry 1 of 2 in 10 s"))
    );
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("ReplicaFailed1"));
    assert_eq!(fx.events[0].type_, EventType::Warning);
    // The whole gang stops.
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(fx.requeue, Some(Duration::from_secs(10)));

    // Pods still leaving: wait for them.
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    // Gone, but the backoff runs until t = 60.
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(fx.requeue, Some(Duration::from_secs(8)));
    // Backoff over: back in the queue.
    let fx = s.after(8).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retry_at, None);
    assert!(s.status().placement.is_empty());
    assert!(s.status().started_at.is_none());
    assert_eq!(reasons(&fx), ["Requeued"]);
}

#[test]
fn a_job_out_of_retries_fails() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").retries = 2;
    set_phase(&mut s.pods[0], "Failed");
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.status().finished_at, Some(at(10)));
    assert_eq!(s.says(ConditionType::Failed), ("True", "RetriesExhausted"));
    assert_eq!(s.says(ConditionType::Running), ("False", "ReplicaFailed"));
    assert_eq!(s.says(ConditionType::Admitted), ("False", "ReplicaFailed"));
    assert_eq!(s.status().reason.as_deref(), Some("RetriesExhausted"));
    assert_eq!(reasons(&fx), ["Failed"]);
    // The replica still running stops; the one that failed stays for `kubectl logs`.
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
    // Looking again deletes nothing more.
    s.pods.truncate(1);
    assert!(deleted(&s.after(5).tick()).is_empty());
}

/// A replica that finished while the others run is recorded in `status.succeededReplicas`
/// only once it has been done a while: a gang whose replicas finish together succeeds with
/// no write for each that finished first. Its pod's removal after that is no failure.
#[test]
fn a_replica_done_is_recorded_after_a_while_and_survives_its_pod() {
    let mut s = Story::running(2);
    s.pods[0].status = Some(
        serde_json::from_value(json!({"phase": "Succeeded", "containerStatuses": [{
            "name": "trainer", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(10)}}}]}))
        .expect("pod status"),
    );
    let writes = s.writes;
    s.after(15).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.writes, writes,
        "nothing to write 5 s after the replica finished"
    );
    s.after(30).tick();
    assert_eq!(s.status().succeeded_replicas, ["llm-worker-0"]);
    s.pods.remove(0);
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
}

/// A job that succeeded with a replica of a task not needed for completion still running
/// (a parameter server) stops that one; the replicas that succeeded keep their logs.
#[test]
fn a_finished_job_stops_only_what_still_runs() {
    let mut s = Story::running(2);
    set_phase(&mut s.pods[0], "Succeeded");
    set_phase(&mut s.pods[1], "Succeeded");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
    set_phase(&mut s.pods[1], "Running");
    let fx = s.after(5).tick();
    assert_eq!(deleted(&fx), ["llm-worker-1"]);
}

#[test]
fn a_lost_node_restarts_the_gang_without_counting_a_retry() {
    let mut s = Story::running(2);
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
    assert_eq!(
        fx.events[0].action.as_deref(),
        Some("InfrastructureFailure1")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    // Once the platform's allowance is used up, the failure counts.
    let mut s = Story::running(1);
    s.job
        .status
        .as_mut()
        .expect("status")
        .infrastructure_retries = 3;
    s.world.nodes.clear();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("node n1 is gone"))
    );
}

#[test]
fn a_replica_failing_on_an_unhealthy_gpu_is_not_the_jobs_fault() {
    let mut s = Story::running(2);
    s.world.nodes.insert(
        "n1".into(),
        NodeState::Up {
            unhealthy_gpus: [1].into_iter().collect(),
        },
    );
    s.pods[1].status.as_mut().expect("status").phase = Some("Failed".into());
    s.after(10).tick();
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("on GPU 1 of node n1, which turned unhealthy"))
    );
}

/// The job's one pod, placed on n1 and kept `Unschedulable` by kube-scheduler with `message`.
fn unschedulable(message: &str) -> Pod {
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "llm-worker-0", "namespace": "team", "creationTimestamp": stamp(0),
            "labels": {TASK_LABEL: "worker", INDEX_LABEL: "0"},
            "annotations": {GPUS_ANNOTATION: "0", NODE_ANNOTATION: "n1"}
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": message,
            "lastTransitionTime": stamp(0)}]}
    }))
    .expect("pod");
    annotate(&mut pod, RANK_ANNOTATION, "0");
    pod
}

#[test]
fn a_pod_the_cluster_scheduler_refuses_rolls_the_admission_back() {
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![unschedulable("volume node affinity conflict")];
    s.tick();
    assert_eq!(
        s.phase(),
        Phase::Starting,
        "placed, waiting for its binding"
    );
    // Within the deadline: keep waiting.
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty());
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().retry_at, Some(at(60)));
    assert_eq!(s.status().refused_nodes.len(), 1);
    assert_eq!(s.status().refused_nodes[0].node, "n1");
    assert_eq!(s.status().refused_nodes[0].until, at(660));
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "SchedulerRejected")
    );
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    // Back in the queue once the pod is gone, told it is placed again, not retried (an
    // acceptance run read "Backoff over" and a retry count it did not have).
    s.pods.clear();
    s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("kube-scheduler refused the one chosen (no retry")),
        "{:?}",
        s.status().message
    );
}

/// A share waiting behind its reservation gate is refused when its GPU's reservation pod
/// is: the device plugin has no GPU free for it on the node kubetrain chose (another pod
/// took it in between). Without this the share waited, gated, until the start timeout.
#[test]
fn a_share_whose_reservation_cannot_be_bound_rolls_the_admission_back() {
    let mut s = Story::new(1);
    s.tick();
    let mut share: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "llm-worker-0", "namespace": "team", "creationTimestamp": stamp(0),
            "labels": {JOB_LABEL: "llm", TASK_LABEL: "worker", INDEX_LABEL: "0"},
            "annotations": {GPUS_ANNOTATION: "0", NODE_ANNOTATION: "n1",
                GPU_SHARE_ANNOTATION: "500", GPU_ASSIGNMENT_ANNOTATION: "device-plugin"}
        },
        "spec": {"containers": [{"name": "c", "image": "x"}],
            "schedulingGates": [{"name": RESERVATION_GATE}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "SchedulingGated", "lastTransitionTime": stamp(0)}]}
    }))
    .expect("pod");
    annotate(&mut share, RANK_ANNOTATION, "0");
    let gpu = reservations::waits_for(&share).expect("a gated share");
    let mut reservation =
        reservations::reservation_pod(&gpu, None, &reservations::ReservationSettings::default());
    reservation.status =
        unschedulable("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.").status;
    s.pods = vec![share];
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation))].into();
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    s.after(30).tick();
    assert_eq!(s.phase(), Phase::Starting, "within the deadline");
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().refused_nodes[0].node, "n1");
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let message = s.status().refused_nodes[0].message.clone();
    assert!(
        message.contains("reservation, pod kubetrain-system/kubetrain-gpu-n1-0, cannot be bound")
            && message.contains("Insufficient nvidia.com/gpu"),
        "{message}"
    );
    // A gated share with no reservation yet (the operator makes it next cycle) waits.
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![gated_share_without_reservation()];
    s.tick();
    s.after(120).tick();
    assert_eq!(s.phase(), Phase::Starting);
}

/// A share runs on the device its GPU's reservation was given; kube-scheduler preempting
/// that reservation for another pod (or someone deleting it) hands the device back to the
/// plugin while the share still uses it. The share stops and runs again on a GPU held anew,
/// as on a lost node, without counting a retry (an acceptance run found it ran on, the
/// device given to the preemptor, with no word of it).
#[test]
fn a_share_whose_reservation_is_lost_restarts_without_counting_a_retry() {
    let mut s = Story::running(1);
    let pod = &mut s.pods[0];
    annotate(pod, GPU_SHARE_ANNOTATION, "500");
    annotate(pod, GPU_ASSIGNMENT_ANNOTATION, "device-plugin");
    annotate(pod, NODE_ANNOTATION, "n1");
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(JOB_LABEL.into(), "llm".into());
    annotate(pod, RESERVATION_UID_ANNOTATION, "r-1");
    let gpu = reservations::held_through(pod).expect("a share held through a reservation");
    let mut reservation =
        reservations::reservation_pod(&gpu, None, &reservations::ReservationSettings::default());
    reservation.metadata.uid = Some("r-1".into());
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation.clone()))].into();
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running, "held: {:?}", reasons(&fx));
    // Preempted: kube-scheduler deletes it.
    reservation.metadata.deletion_timestamp = Some(at(10));
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation))].into();
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let message = s.status().message.clone().unwrap_or_default();
    assert!(
        message.contains("reservation kubetrain-gpu-n1-0 is being deleted")
            && message.contains("no longer held from the device plugin"),
        "{message}"
    );
}

/// A gated share pod whose reservation is not made yet.
fn gated_share_without_reservation() -> Pod {
    let mut pod = unschedulable("");
    pod.spec.as_mut().expect("spec").scheduling_gates =
        Some(vec![k8s_openapi::api::core::v1::PodSchedulingGate {
            name: RESERVATION_GATE.into(),
        }]);
    pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("SchedulingGated".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

/// A claim that is not bound is no node's fault: no node is refused (a Kubeflow user's run
/// saw node after node refused for 10 min under the docs' DDP example), and the job is
/// placed again after a wait.
#[test]
fn a_pod_whose_claim_is_unbound_refuses_no_node() {
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![unschedulable(
        "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. \
         preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
    )];
    s.tick();
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(s.status().refused_nodes.is_empty());
    assert_eq!(s.status().retry_at, Some(at(120)));
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("not ready on any node")),
        "{:?}",
        s.status().message
    );
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
}

#[test]
fn a_preempted_job_checkpoints_and_returns_to_its_queue() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").gpus = Some(2.0);
    // The scheduler asks for a checkpoint, for its owner's guarantee.
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    let fx = s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointRequested")
    );
    assert_eq!(s.status().reason.as_deref(), Some("CheckpointRequested"));
    assert!(fx.pod_deletions.is_empty(), "the pods checkpoint first");
    assert!(fx.requeue.is_some_and(|d| d <= Duration::from_secs(2)));

    // The job acknowledges.
    s.annotate_all(CHECKPOINT_DONE, &stamp(105));
    let fx = s.after(5).tick();
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointSaved")
    );
    assert_eq!(s.status().last_checkpoint_time, Some(at(105)));
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.outcome, PreemptionOutcome::CheckpointSaved);
    assert_eq!(record.reason.as_deref(), Some("Reclaim"));
    assert_eq!(record.lost_gpu_seconds, 0);
    assert_eq!(reasons(&fx), ["CheckpointSaved"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("CheckpointSaved1"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // Recorded once.
    let fx = s.after(1).tick();
    assert!(fx.events.is_empty());

    // The pods are gone: back in line, keeping the job's place.
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().preemptions, 1);
    assert!(s.status().placement.is_empty());
    assert!(s.status().admitted_at.is_none() && s.status().started_at.is_none());
    assert_eq!(s.says(ConditionType::Preempting), ("False", "Requeued"));
    assert_eq!(s.says(ConditionType::Running), ("False", "Preempted"));
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert_eq!(fx.events[0].type_, EventType::Normal);
    assert_eq!(fx.events[0].action.as_deref(), Some("Requeued1"));
}

/// The owner whose guarantee a reclaim served deletes its job before this one acknowledges:
/// the scheduler withdraws the request, and the job runs on, its pods untouched and no
/// preemption counted.
#[test]
fn a_withdrawn_preemption_lets_the_job_run_on() {
    let mut s = Story::running(2);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    s.after(100).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    let started = s.status().started_at.clone();

    // The scheduler withdraws the request (the annotations are removed).
    for p in &mut s.pods {
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(CHECKPOINT_REQUESTED);
            a.remove(PREEMPTION_REASON);
        }
    }
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("False", "PreemptionCancelled")
    );
    assert_eq!(s.says(ConditionType::Running).0, "True");
    assert!(fx.pod_deletions.is_empty(), "{fx:?}");
    assert_eq!(s.status().preemptions, 0);
    assert_eq!(s.status().started_at, started);
    assert!(s.status().last_preemption.is_none());
    // Well past the grace period, it still runs.
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

/// Once the pods were told to stop, a request that vanishes from them changes nothing: the
/// gang stops as decided.
#[test]
fn a_preemption_past_its_acknowledgement_is_not_withdrawn() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.after(100).tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    for p in &mut s.pods {
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(CHECKPOINT_REQUESTED);
        }
    }
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
}

#[test]
fn a_preemption_without_acknowledgement_loses_the_work_since_the_start() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").gpus = Some(2.0);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    // the scheduler names its reason (a request without one is the lifecycle's suspension)
    s.annotate_all(PREEMPTION_REASON, "Reclaim");
    s.after(100).tick();
    // Within the grace period (30 s): keep waiting.
    let fx = s.after(29).tick();
    assert!(fx.pod_deletions.is_empty());
    let fx = s.after(1).tick();
    assert_eq!(
        s.says(ConditionType::Preempting),
        ("True", "CheckpointLost")
    );
    let record = s.status().last_preemption.clone().expect("record");
    assert_eq!(record.outcome, PreemptionOutcome::CheckpointLost);
    // 130 s since the start on 2 GPUs.
    assert_eq!(record.lost_gpu_seconds, 260);
    assert_eq!(fx.events[0].type_, EventType::Warning);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert_eq!(fx.events[0].type_, EventType::Warning, "work was lost");
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("about 260 GPU-seconds of work lost"))
    );
}

#[test]
fn pods_that_exit_on_their_own_end_the_preemption() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.after(100).tick();
    s.set_pods_phase("Succeeded");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    assert_eq!(s.says(ConditionType::Preempting), ("True", "PodsExited"));
    assert_eq!(reasons(&fx), ["PodsExited"]);
}

#[test]
fn a_drained_job_waits_for_the_drain_to_settle_before_requeueing() {
    let mut s = Story::running(1);
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(100));
    s.annotate_all(PREEMPTION_REASON, "Drain");
    s.after(100).tick();
    s.annotate_all(CHECKPOINT_DONE, &stamp(101));
    s.after(1).tick();
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(
        s.phase(),
        Phase::Preempting,
        "kubectl drain must see the pod gone"
    );
    assert_eq!(s.status().retry_at, Some(at(112)));
    assert_eq!(fx.requeue, Some(Duration::from_secs(10)));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().retry_at, None);
    assert_eq!(reasons(&fx), ["Requeued"]);
}

#[test]
fn a_suspended_job_checkpoints_stops_and_resumes() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    // Nobody else asks for the checkpoint: the lifecycle does.
    assert_eq!(fx.checkpoint_requests, ["llm-worker-0", "llm-worker-1"]);
    assert!(fx.pod_deletions.is_empty());
    s.annotate_all(CHECKPOINT_REQUESTED, &stamp(10));

    s.annotate_all(CHECKPOINT_DONE, &stamp(12));
    let fx = s.after(2).tick();
    assert!(fx.checkpoint_requests.is_empty());
    assert_eq!(
        s.status()
            .last_preemption
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("Suspend")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.status().preemptions, 0, "a suspension is no preemption");
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().reason.as_deref(), Some("Suspended"));
    // Suspended is quiet.
    let fx = s.after(60).tick();
    assert!(fx.events.is_empty());
    assert_eq!(s.phase(), Phase::Suspended);

    s.job.spec.suspend = false;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(reasons(&fx), ["Resumed"]);
}

#[test]
fn a_queued_job_suspended_before_admission_is_suspended_at_once() {
    let mut s = Story::new(1);
    s.tick();
    s.job.spec.suspend = true;
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(reasons(&fx), ["Suspended"]);
    assert_eq!(s.status().reason.as_deref(), Some("Suspended"));
}

#[test]
fn an_invalid_job_waits_in_pending_until_fixed() {
    let mut s = Story::new(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.world.queue = None;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Pending);
    assert_eq!(s.says(ConditionType::Valid), ("False", "UnknownQueue"));
    assert_eq!(s.status().reason.as_deref(), Some("UnknownQueue"));
    assert_eq!(
        s.status().message.as_deref(),
        Some("queue q does not exist")
    );
    assert_eq!(reasons(&fx), ["UnknownQueue"]);
    assert_eq!(fx.events[0].type_, EventType::Warning);
    assert_eq!(fx.requeue, Some(Duration::from_secs(15)));
    // Reported once.
    let fx = s.after(15).tick();
    assert!(fx.events.is_empty());

    // Fixed: valid again, as an Event says beside the Warning before it, and queued.
    s.world.validity = Ok(());
    s.world.queue = Some("q".into());
    let fx = s.after(15).tick();
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    assert_eq!(s.phase(), Phase::Queued);
    assert_ne!(s.status().reason.as_deref(), Some("UnknownQueue"));
    assert_eq!(reasons(&fx), ["Valid", "Queued"]);
    // A new job valid from the start has no such Event.
    let mut s = Story::new(1);
    assert_eq!(reasons(&s.tick()), ["Queued"]);
}

#[test]
fn a_running_job_whose_spec_turns_invalid_keeps_running() {
    let mut s = Story::running(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.says(ConditionType::Valid), ("False", "UnknownQueue"));
    assert_eq!(reasons(&fx), ["UnknownQueue"]);
    // It does not wait: its Event says it runs on (an admin read "waits" of a running job).
    assert!(
        fx.events[0].note.contains("runs on"),
        "{}",
        fx.events[0].note
    );
    s.world.validity = Ok(());
    let fx = s.after(1).tick();
    assert_eq!(reasons(&fx), ["Valid"]);
}

#[test]
fn a_spec_edit_is_observed_by_every_condition() {
    let mut s = Story::running(1);
    assert!(s.status().conditions.len() > 2);
    s.job.metadata.generation = Some(2);
    s.job.spec.priority = Some(5);
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty(), "nothing happened: {:?}", reasons(&fx));
    assert_eq!(s.status().observed_generation, Some(2));
    for c in &s.status().conditions {
        assert_eq!(c.observed_generation, Some(2), "{}", c.type_);
    }
}

#[test]
fn a_pod_stuck_terminating_on_a_lost_node_is_force_deleted() {
    let mut s = Story::running(1);
    s.pods[0].metadata.deletion_timestamp = Some(at(5));
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    // Graceful deletion not overdue yet.
    s.now = 4;
    let fx = s.tick();
    assert!(fx.pod_deletions.is_empty());
    s.now = 5;
    let fx = s.tick();
    assert_eq!(
        fx.pod_deletions,
        [PodDeletion {
            pod: "llm-worker-0".into(),
            force: true
        }]
    );
}

#[test]
fn backoff_doubles_up_to_max() {
    assert_eq!(backoff(10, 600, 1), Duration::from_secs(10));
    assert_eq!(backoff(10, 600, 2), Duration::from_secs(20));
    assert_eq!(backoff(10, 600, 4), Duration::from_secs(80));
    assert_eq!(backoff(10, 600, 10), Duration::from_secs(600));
    assert_eq!(backoff(0, 600, 3), Duration::ZERO);
    assert_eq!(backoff(10, 600, 1000), Duration::from_secs(600));
}

/// A pod as the lifecycle reads it.
fn pod(json: serde_json::Value) -> Member {
    Member::read(Arc::new(serde_json::from_value(json).expect("pod")))
}

#[test]
fn failures_are_classified() {
    let oom = pod(
        json!({"metadata": {"name": "a"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&oom),
        Some(Failure::Replica {
            pod: "a".into(),
            reason: "OOMKilled".into()
        })
    );
    let exit = pod(
        json!({"metadata": {"name": "b"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 3}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&exit),
        Some(Failure::Replica {
            pod: "b".into(),
            reason: "exit code 3".into()
        })
    );
    let lost = pod(
        json!({"metadata": {"name": "c"}, "status": {"phase": "Failed", "reason": "NodeLost"}}),
    );
    assert!(matches!(
        pod_failure(&lost),
        Some(Failure::Infrastructure { .. })
    ));
    // Refused or evicted by the kubelet: the node's doing, not the job's.
    for reason in [
        "Evicted",
        "OutOfnvidia.com/gpu",
        "NodeAffinity",
        "UnexpectedAdmissionError",
    ] {
        let refused = pod(json!({"metadata": {"name": "d"}, "status": {
            "phase": "Failed", "reason": reason, "message": "Pod was rejected"}}));
        assert!(
            matches!(pod_failure(&refused), Some(Failure::Infrastructure { ref reason, .. }) if reason.contains("Pod was rejected")),
            "{reason}"
        );
    }
    let app_error = pod(json!({"metadata": {"name": "f"}, "status": {
        "phase": "Failed", "reason": "DeadlineExceeded"}}));
    assert!(matches!(
        pod_failure(&app_error),
        Some(Failure::Replica { .. })
    ));
    let running = pod(json!({"metadata": {"name": "e"}, "status": {"phase": "Running"}}));
    assert_eq!(pod_failure(&running), None);
}

/// The job's tasks changed while its pods ran (an admission racing the change: the CRD
/// refuses it while the job runs). Fewer replicas: the pod no task has any more is no stray
/// that keeps its GPUs; more: the missing replicas are no "removed" pods. Either way the gang
/// restarts in its new shape, not counted against `maxRetries`.
#[test]
fn a_gang_whose_tasks_changed_restarts_in_the_new_shape() {
    for now in [1, 4] {
        let mut s = Story::running(2);
        for p in &mut s.pods {
            annotate(p, GANG_SIZE_ANNOTATION, "2");
        }
        s.job.spec.tasks[0].replicas = Some(now);
        let fx = s.after(5).tick();
        assert_eq!(s.phase(), Phase::Retrying, "{now} replicas");
        assert_eq!(s.status().retries, 0);
        assert_eq!(fx.stop, Stop::All);
        let message = s.status().message.clone().unwrap_or_default();
        assert!(message.contains("tasks changed"), "{message}");
    }
}

/// While a suspended job saves its checkpoint, its message says so (it kept "Admitted: ...").
#[test]
fn a_suspending_job_says_it_is_suspending() {
    let mut s = Story::running(2);
    s.job.spec.suspend = true;
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Preempting);
    let message = s.status().message.clone().unwrap_or_default();
    assert!(message.starts_with("Suspending"), "{message}");
}

/// `activeDeadlineSeconds`: a job that runs that long in one admission is stopped and fails
/// for good, not retried; the reconcile in between is timed to the deadline.
#[test]
fn a_job_past_its_deadline_is_stopped_and_not_retried() {
    let mut s = Story::running(2);
    s.job.spec.active_deadline_seconds = Some(100);
    let fx = s.after(40).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(fx.requeue, Some(Duration::from_secs(30)));
    let fx = s.after(40).tick();
    assert_eq!(
        fx.requeue,
        Some(Duration::from_secs(20)),
        "looks again when the deadline falls"
    );
    let fx = s.after(20).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "DeadlineExceeded")
    );
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m
                .contains("100 s after its admission, past spec.activeDeadlineSeconds (100 s)")),
        "{:?}",
        s.status().message
    );
    assert_eq!(s.status().retries, 0, "not a retry");
    assert_eq!(s.status().finished_at, Some(at(100)));
    assert_eq!(reasons(&fx), ["Failed"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // The stopped replicas' exits are not a failure to retry: the job is finished.
    for p in &mut s.pods {
        exits(p, 143);
    }
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert!(fx.events.is_empty());
}

/// The deadline counts from the job's admission: the time it waited in its queue is not
/// running time, and a job admitted again after a retry has the whole time again.
#[test]
fn a_deadline_counts_from_each_admission() {
    let mut s = Story::new(1);
    s.job.spec.active_deadline_seconds = Some(100);
    s.tick();
    s.after(500);
    s = s.admitted("Running");
    s.tick();
    s.tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.status().admitted_at, Some(at(500)));
    s.after(99).tick();
    assert_eq!(s.phase(), Phase::Running, "500 s in its queue do not count");
    // A failure just before the deadline is retried as any other.
    exits(&mut s.pods[0], 1);
    s.tick();
    assert_eq!(s.phase(), Phase::Retrying);
    s.pods_gone();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Queued);
    s.after(30);
    s = s.admitted("Running");
    s.tick();
    assert_eq!(s.status().admitted_at, Some(at(639)));
    s.after(99).tick();
    assert_eq!(s.phase(), Phase::Running);
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.says(ConditionType::Failed), ("True", "DeadlineExceeded"));
    assert_eq!(s.status().retries, 1);
}

/// A job whose work is done when the deadline is seen succeeded: the success came first.
#[test]
fn a_job_done_by_its_deadline_succeeds() {
    let mut s = Story::running(1);
    s.job.spec.active_deadline_seconds = Some(60);
    s.set_pods_phase("Succeeded");
    s.after(61).tick();
    assert_eq!(s.phase(), Phase::Succeeded);
}

/// With a `podFailurePolicy`, a replica whose pod someone deletes while it runs (`kubectl
/// delete pod`) is judged once it has terminated; its exit on SIGTERM, after the deletion was
/// asked for, is not the job's failure: the gang restarts uncounted, as without a policy.
#[test]
fn with_a_policy_a_deleted_replica_is_judged_once_terminated_and_not_counted() {
    let mut s = Story::running(2);
    s.job.spec.pod_failure_policy = Some(
        serde_json::from_value(json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}))
        .expect("policy"),
    );
    // Asked at t = 10 with a 30 s grace period.
    s.pods[1].metadata.deletion_timestamp = Some(at(40));
    s.pods[1].metadata.deletion_grace_period_seconds = Some(30);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running, "waits for it to terminate");
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(2)));
    s.pods[1].status = Some(
        serde_json::from_value(json!({"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"terminated": {"exitCode": 143, "finishedAt": stamp(12)}}}]}))
        .expect("pod status"),
    );
    let fx = s.after(3).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("exit code 143 once its pod was being deleted")),
        "{:?}",
        s.status().message
    );
    assert_eq!(reasons(&fx), ["InfrastructureFailure"]);
}

/// A job waiting in its queue that turns invalid (its queue deleted, say) is not admitted for
/// that reason now: `Admitted=False` says it, not the wait it had.
#[test]
fn a_waiting_job_that_turns_invalid_says_so_on_admitted() {
    let mut s = Story::new(1);
    s.world.wait = Some((WaitReason::QueueTerminating { queue: "q".into() }, Some(1)));
    s.tick();
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("False", "QueueTerminating")
    );
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.world.wait = None;
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Pending);
    assert_eq!(s.says(ConditionType::Admitted), ("False", "UnknownQueue"));
}

/// `status.nodes` lists the gang's nodes once each, in rank order, for `kubectl get tj -o
/// wide` (its printed column would show only the first of `placement[*].node`); it goes
/// with the placement.
#[test]
fn the_nodes_column_lists_every_node_of_the_gang() {
    let mut s = Story::new(3);
    s.world.nodes.insert("n2".into(), up());
    s.tick();
    s.pods = vec![
        replica(0, "n2", "Running"),
        replica(1, "n1", "Running"),
        replica(2, "n2", "Running"),
    ];
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().nodes.as_deref(), Some("n2,n1"));
    s.job.spec.suspend = true;
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.status().nodes, None);
}

/// `kubectl get tj`'s GPUS column: three shares of 0.3 are 0.9, not 0.8999999999999999.
#[test]
fn requested_gpus_add_up_without_float_noise() {
    let mut j = job(3);
    j.spec.tasks[0].gpu_share = Some(300);
    assert_eq!(super::requested_gpus(&j).to_string(), "0.9");
    j.spec.tasks[0].gpu_share = Some(100);
    assert_eq!(super::requested_gpus(&j).to_string(), "0.3");
    assert_eq!(super::requested_gpus(&job(4)).to_string(), "4");
}
