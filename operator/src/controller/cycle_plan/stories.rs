//! The cycle's plan, told as stories: one node of 8 A100s, the teams and jobs around it, and
//! what the cycle would carry out. A story that runs a second cycle carries the first one's
//! published waits and usage over ([`Cycle::carry`]), as the scheduler's state does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::*;
use crate::api::annotations::{
    BONUS_ANNOTATION, GPUS_ANNOTATION, INDEX_LABEL, JOB_LABEL, PRODUCT_LABEL, TASK_LABEL,
};
use crate::api::{Queue, VirtualCluster};
use crate::controller::snapshot::{Asked, Inflight};
use crate::controller::validate::Refs;

const FLAVOR: &str = "A100";
const GPUS: u32 = 8;
const NOW: i64 = 1_800_000_000;

/// The world of one cycle, and the scheduler's memory from the last.
struct Cycle {
    nodes: Vec<Arc<Node>>,
    pods: Vec<Arc<Pod>>,
    jobs: Vec<Arc<TrainingJob>>,
    queues: BTreeMap<String, Arc<Queue>>,
    vcs: BTreeMap<String, Arc<VirtualCluster>>,
    inflight: BTreeMap<JobKey, Inflight>,
    asked: BTreeMap<JobKey, Asked>,
    published: BTreeMap<JobKey, Published>,
    usage: Usage,
}

impl Cycle {
    /// Node n0 with 8 healthy A100s, no team yet.
    fn new() -> Self {
        let node = serde_json::from_value(json!({
            "metadata": {"name": "n0", "labels": {PRODUCT_LABEL: FLAVOR}},
            "status": {
                "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": GPUS.to_string()},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        }))
        .expect("node");
        Cycle {
            nodes: vec![Arc::new(node)],
            pods: Vec::new(),
            jobs: Vec::new(),
            queues: BTreeMap::new(),
            vcs: BTreeMap::new(),
            inflight: BTreeMap::new(),
            asked: BTreeMap::new(),
            published: BTreeMap::new(),
            usage: Usage::default(),
        }
    }

    /// A team: VirtualCluster `name`, owning namespace `name` with `guarantee` A100s, and its
    /// queue `name`.
    fn team(mut self, name: &str, guarantee: u32) -> Self {
        let object = |kind: &str, spec: serde_json::Value| {
            json!({"apiVersion": "kubetrain.io/v1alpha1", "kind": kind,
                "metadata": {"name": name}, "spec": spec})
        };
        let vc = object(
            "VirtualCluster",
            json!({"namespaces": [name], "guarantee": [{"flavor": FLAVOR, "gpus": guarantee}]}),
        );
        let queue = object("Queue", json!({"virtualCluster": name}));
        let vc = serde_json::from_value(vc).expect("vc");
        self.vcs.insert(name.into(), Arc::new(vc));
        let queue = serde_json::from_value(queue).expect("queue");
        self.queues.insert(name.into(), Arc::new(queue));
        self
    }

    /// A job `team/name` of one replica needing `gpus`, in the team's queue, in `phase`
    /// (None: no status written yet).
    fn job(&mut self, id: &str, gpus: u32, phase: Option<&str>) {
        let (team, name) = id.split_once('/').expect("team/name");
        let mut job = json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": team, "uid": id,
                "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queue": team, "tasks": [{"name": "w", "template": {"spec": {"containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}]}
        });
        if let Some(phase) = phase {
            job["status"] = json!({"phase": phase});
        }
        self.jobs
            .push(Arc::new(serde_json::from_value(job).expect("job")));
    }

    /// A running job `team/name` whose one pod holds `gpus` of n0, marked bonus or not.
    fn running(&mut self, id: &str, gpus: &[u32], bonus: bool) {
        self.job(id, gpus.len() as u32, Some("Running"));
        let (team, name) = id.split_once('/').expect("team/name");
        let list: Vec<String> = gpus.iter().map(u32::to_string).collect();
        let pod = json!({
            "metadata": {"name": format!("{name}-w-0"), "namespace": team,
                "labels": {JOB_LABEL: name, TASK_LABEL: "w", INDEX_LABEL: "0"},
                "annotations": {GPUS_ANNOTATION: list.join(","), BONUS_ANNOTATION: bonus.to_string()},
                "ownerReferences": [{"apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
                    "name": name, "uid": id, "controller": true}]},
            "spec": {"nodeName": "n0", "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus.len()}}}]},
            "status": {"phase": "Running"}
        });
        self.pods
            .push(Arc::new(serde_json::from_value(pod).expect("pod")));
    }

    /// The job and its pods are gone.
    fn delete(&mut self, id: &str) {
        self.jobs.retain(|j| JobKey::of(j).to_string() != id);
        let (team, name) = id.split_once('/').expect("team/name");
        self.pods.retain(|p| {
            p.metadata.namespace.as_deref() != Some(team)
                || p.metadata.labels.as_ref().and_then(|l| l.get(JOB_LABEL)) != Some(&name.into())
        });
    }

    /// The cycle's plan, with no workload shapes (the core reads the mix off the snapshot).
    fn plan(&self) -> CyclePlan {
        let flavors = BTreeSet::from([FLAVOR.to_string()]);
        let namespaces = BTreeMap::new();
        let no_shapes = |_: &sched::Snapshot| Vec::new();
        let inputs = Inputs {
            world: World {
                now: NOW,
                nodes: &self.nodes,
                pods: &self.pods,
                jobs: &self.jobs,
                refs: Refs {
                    queues: &self.queues,
                    vcs: &self.vcs,
                    namespaces: &namespaces,
                    flavors: &flavors,
                    resources: &Default::default(),
                    volumes: &Default::default(),
                    priority_classes: &Default::default(),
                    refused: &Default::default(),
                },
                inflight: &self.inflight,
                asked: &self.asked,
                reservation_namespace: "kubetrain-system",
                predictions: &BTreeMap::new(),
            },
            options: &sched::Options::default(),
            published: &self.published,
            usage: &self.usage,
            shapes: &no_shapes,
        };
        plan(&inputs)
    }

    /// What the shell keeps of a plan for the next cycle.
    fn carry(&mut self, plan: &CyclePlan) {
        self.published = plan.waiting.clone();
        self.usage = plan.usage.clone();
    }
}

fn id(job: &TrainingJob) -> String {
    JobKey::of(job).to_string()
}

fn keys(jobs: &[JobKey]) -> Vec<String> {
    jobs.iter().map(JobKey::to_string).collect()
}

/// The code of the reason `job` waits for, as the plan publishes it.
fn waits_for(plan: &CyclePlan, job: &str) -> Option<String> {
    let key: JobKey = job.parse().expect("job key");
    plan.waiting
        .get(&key)
        .map(|p| p.reason.code().as_str().to_string())
}

/// Eight 1-GPU bonus jobs of team `lend` (guarantee 0) fill n0; team `own` owns all 8 GPUs.
fn borrowed_node() -> Cycle {
    let mut c = Cycle::new().team("own", GPUS).team("lend", 0);
    for g in 0..GPUS {
        c.running(&format!("lend/b{g}"), &[g], true);
    }
    c
}

#[test]
fn a_job_admitted_in_this_cycle_is_planned_with_its_placement() {
    let mut c = Cycle::new().team("a", GPUS);
    c.job("a/train", 4, Some("Queued"));
    let plan = c.plan();
    assert_eq!(plan.admissions.len(), 1, "{plan:?}");
    let (job, admission) = &plan.admissions[0];
    assert_eq!(id(job), "a/train");
    assert!(!admission.bonus, "within its team's guarantee");
    assert_eq!(admission.placement.len(), 1, "one replica");
    assert_eq!(admission.placement[0].node, "n0");
    assert_eq!(admission.placement[0].gpus.len(), 4);
    // Admitted, it does not wait, and nothing else is to be done.
    assert!(plan.waiting.is_empty() && plan.reconcile.is_empty());
    assert!(plan.asks.is_empty() && plan.withdrawals.is_empty() && plan.marks.is_empty());
    assert!(plan.making_room.is_empty());
}

#[test]
fn a_waiting_job_is_reconciled_when_its_wait_changes_and_not_otherwise() {
    let mut c = Cycle::new().team("a", 4).team("b", 4);
    c.running("a/run", &[0, 1, 2, 3], false);
    c.running("b/run", &[4, 5, 6, 7], false);
    c.job("a/next", 2, Some("Queued"));
    c.job("b/next", 2, Some("Queued"));
    let first = c.plan();
    assert_eq!(keys(&first.reconcile), ["a/next", "b/next"], "a first wait");
    c.carry(&first);

    // Nothing changed: no status to write.
    let same = c.plan();
    assert!(same.reconcile.is_empty(), "{:?}", same.reconcile);
    assert_eq!(same.waiting, first.waiting);

    // a/next is edited to need more than the cluster has: its cause changed, b/next's did not.
    let before = waits_for(&first, "a/next");
    c.jobs.retain(|j| id(j) != "a/next");
    c.job("a/next", 2 * GPUS, Some("Queued"));
    let edited = c.plan();
    assert_ne!(waits_for(&edited, "a/next"), before);
    assert_eq!(waits_for(&edited, "b/next"), waits_for(&first, "b/next"));
    assert_eq!(keys(&edited.reconcile), ["a/next"]);
}

/// A job waiting behind one predicted to run an hour, started ten minutes ago, is estimated
/// to start when it ends; the next cycle, a minute later and with nothing else changed,
/// writes nothing; once the running job's prediction is gone, so is the estimate.
#[test]
fn a_waiting_job_is_estimated_to_start_when_the_job_before_it_ends() {
    let mut c = Cycle::new().team("a", GPUS);
    c.running("a/long", &(0..GPUS).collect::<Vec<_>>(), false);
    let long = Arc::make_mut(&mut c.jobs[0]);
    long.spec.predicted_duration_seconds = Some(3600);
    let admitted = k8s_openapi::jiff::Timestamp::from_second(NOW - 600).expect("time");
    long.status.as_mut().expect("status").admitted_at = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(admitted),
    );
    c.job("a/next", GPUS, Some("Queued"));
    let key: JobKey = "a/next".parse().expect("key");
    let first = c.plan();
    assert_eq!(first.waiting[&key].estimate, Some(NOW + 3000));
    c.carry(&first);
    assert!(c.plan().reconcile.is_empty());
    Arc::make_mut(&mut c.jobs[0])
        .spec
        .predicted_duration_seconds = None;
    let unknown = c.plan();
    assert_eq!(unknown.waiting[&key].estimate, None);
    assert_eq!(keys(&unknown.reconcile), ["a/next"]);
}

#[test]
fn a_job_that_no_longer_waits_is_reconciled() {
    let mut c = Cycle::new().team("a", GPUS);
    c.running("a/run", &(0..GPUS).collect::<Vec<_>>(), false);
    c.job("a/next", 4, Some("Queued"));
    let first = c.plan();
    assert!(waits_for(&first, "a/next").is_some(), "{first:?}");
    c.carry(&first);

    c.delete("a/run");
    let plan = c.plan();
    let admitted: Vec<String> = plan.admissions.iter().map(|(j, _)| id(j)).collect();
    assert_eq!(admitted, ["a/next"]);
    assert!(plan.waiting.is_empty());
    assert_eq!(
        keys(&plan.reconcile),
        ["a/next"],
        "its status stops saying it waits"
    );
}

#[test]
fn a_reclaims_victims_are_each_asked_once_and_the_beneficiary_is_told() {
    let mut c = borrowed_node();
    c.job("own/train", GPUS, Some("Queued"));
    let plan = c.plan();
    assert!(
        plan.admissions.is_empty(),
        "the borrowed GPUs are still held"
    );
    let victims: Vec<String> = plan.asks.iter().map(|a| id(&a.victim)).collect();
    let expected: Vec<String> = (0..GPUS).map(|g| format!("lend/b{g}")).collect();
    assert_eq!(victims, expected);
    for ask in &plan.asks {
        assert_eq!(ask.preemptions.len(), 1, "{ask:?}");
        assert_eq!(ask.preemptions[0].reason, sched::PreemptionReason::Reclaim);
        assert_eq!(ask.preemptions[0].beneficiary, "own/train");
    }
    assert_eq!(plan.preemptions, 1, "one preemption, eight victims");
    assert_eq!(plan.making_room.len(), 1);
    let (beneficiary, note) = &plan.making_room[0];
    assert_eq!(id(beneficiary), "own/train");
    assert!(
        note.starts_with("Reclaim preemption to make room for this job: asked 8 job(s)"),
        "{note}"
    );
    assert!(plan.withdrawals.is_empty());
    assert_eq!(
        waits_for(&plan, "own/train").as_deref(),
        Some("WaitingForPreemption")
    );
}

#[test]
fn a_preemption_whose_beneficiary_is_gone_is_withdrawn_and_nobody_is_asked() {
    let mut c = borrowed_node();
    // The victims were asked for own/train, which was deleted before they acknowledged.
    for g in 0..GPUS {
        let victim: JobKey = format!("lend/b{g}").parse().expect("key");
        let asked = Asked {
            reason: sched::PreemptionReason::Reclaim,
            beneficiary: Some("own/train".into()),
            at: NOW - 5,
            attempt: 0,
        };
        c.asked.insert(victim, asked);
    }
    let plan = c.plan();
    let withdrawn: Vec<String> = plan.withdrawals.iter().map(|(j, _)| id(j)).collect();
    let expected: Vec<String> = (0..GPUS).map(|g| format!("lend/b{g}")).collect();
    assert_eq!(withdrawn, expected);
    for (_, cancellation) in &plan.withdrawals {
        assert_eq!(cancellation.beneficiary, "own/train");
    }
    assert!(
        plan.asks.is_empty() && plan.making_room.is_empty(),
        "{plan:?}"
    );
}

#[test]
fn a_promoted_job_is_marked_not_bonus() {
    let mut c = Cycle::new().team("a", GPUS);
    // Admitted on borrowed GPUs; its team's guarantee now covers it.
    c.running("a/run", &[0, 1], true);
    let plan = c.plan();
    let marks: Vec<(String, bool)> = plan.marks.iter().map(|(j, b)| (id(j), *b)).collect();
    assert_eq!(marks, [("a/run".to_string(), false)]);
}

#[test]
fn a_job_beyond_its_teams_guarantee_is_marked_bonus() {
    let mut c = Cycle::new().team("a", 2);
    c.running("a/run", &[0, 1, 2, 3], false);
    let plan = c.plan();
    let marks: Vec<(String, bool)> = plan.marks.iter().map(|(j, b)| (id(j), *b)).collect();
    assert_eq!(marks, [("a/run".to_string(), true)]);
}

#[test]
fn every_phase_is_counted_and_a_job_without_status_is_pending() {
    let mut c = Cycle::new().team("a", GPUS);
    c.running("a/run", &[0], false);
    c.job("a/new", 1, None);
    c.job("a/queued", 1, Some("Queued"));
    c.job("a/done", 1, Some("Succeeded"));
    c.job("a/done-too", 1, Some("Succeeded"));
    let plan = c.plan();
    let counted: Vec<(&str, i64)> = plan
        .by_phase
        .iter()
        .map(|(p, n)| (p.as_str(), *n))
        .collect();
    assert_eq!(
        counted,
        [
            ("Failed", 0),
            ("Pending", 1),
            ("Preempting", 0),
            ("Queued", 1),
            ("Retrying", 0),
            ("Running", 1),
            ("Starting", 0),
            ("Succeeded", 2),
            ("Suspended", 0),
        ]
    );
}

#[test]
fn the_usage_is_news_only_when_its_numbers_moved() {
    let mut c = Cycle::new().team("a", GPUS);
    c.running("a/run", &[0, 1], false);
    let first = c.plan();
    assert!(first.usage_changed, "the first cycle's numbers are news");
    assert_eq!(first.usage.queues["a"].milli_gpus, 2_000);
    c.carry(&first);
    assert!(!c.plan().usage_changed);

    c.running("a/more", &[2, 3], false);
    let more = c.plan();
    assert!(more.usage_changed);
    assert_eq!(more.usage.queues["a"].milli_gpus, 4_000);
}

#[test]
fn the_beneficiary_is_told_whom_its_room_is_made_of() {
    let p = |n: usize| sched::Preemption {
        beneficiary: sched::Beneficiary::Job("a/big".into()),
        reason: sched::PreemptionReason::Reclaim,
        victims: (0..n).map(|i| format!("b/v{i}")).collect(),
        lost_gpu_seconds: 0,
    };
    assert_eq!(
        making_room_note(&p(1)),
        "Reclaim preemption to make room for this job: asked 1 job(s) to checkpoint and \
         leave (b/v0); it starts once they are gone."
    );
    // a long list is cut, with the count kept
    let note = making_room_note(&p(7));
    assert!(
        note.contains(
            "asked 7 job(s) to checkpoint and leave (b/v0, b/v1, b/v2, b/v3, b/v4 and 2 more)"
        ),
        "{note}"
    );
}
