//! Cluster objects → the scheduling core's [`Snapshot`](crate::sched::Snapshot).
//!
//! A pure function of what the reflector caches hold plus the scheduler's own in-flight
//! admissions (pods created but not yet seen in the cache), so the same world always gives
//! the same snapshot and a restarted operator rebuilds it from the API alone. The nodes and
//! what holds them are read in `nodes`, the jobs in `jobs`; the tenants (VirtualClusters
//! and Queues) here.

mod jobs;
mod nodes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;

use super::gang::{Gang, GangKey};
use super::job_key::JobKey;
use super::validate::Refs;
use crate::api::{QueuePolicy, QueueingStrategy, StopPolicy, TopologyLevel, TrainingJob};
use crate::sched;

/// An admission whose pods the cache may not show yet.
#[derive(Clone, Debug)]
pub struct Inflight {
    pub placement: Vec<sched::ReplicaPlacement>,
    pub bonus: bool,
    pub at: i64,
    /// The job's attempt the pods were created for (`kubetrain.io/attempt`).
    pub attempt: i32,
}

// A checkpoint request in flight is `preemption`'s: re-exported for the cycle.
pub use super::preemption::Asked;

/// Everything the snapshot is built from.
pub struct World<'a> {
    pub now: i64,
    pub nodes: &'a [Arc<Node>],
    pub pods: &'a [Arc<Pod>],
    pub jobs: &'a [Arc<TrainingJob>],
    pub refs: Refs<'a>,
    pub inflight: &'a BTreeMap<JobKey, Inflight>,
    /// Checkpoint requests the pod cache may not show yet.
    pub asked: &'a BTreeMap<JobKey, Asked>,
    /// Where the operator's GPU reservation pods are (`reservations`).
    pub reservation_namespace: &'a str,
    /// Predicted run times of the jobs whose status has none yet (first seen this cycle),
    /// from the history of run times (`duration_history`).
    pub predictions: &'a BTreeMap<JobKey, i64>,
}

fn level(l: TopologyLevel) -> sched::TopologyLevel {
    match l {
        TopologyLevel::GpuGroup => sched::TopologyLevel::GpuGroup,
        TopologyLevel::Node => sched::TopologyLevel::Node,
        TopologyLevel::Rack => sched::TopologyLevel::Rack,
    }
}

fn policy(p: QueuePolicy) -> sched::QueuePolicy {
    match p {
        QueuePolicy::Fifo => sched::QueuePolicy::Fifo,
        QueuePolicy::Priority => sched::QueuePolicy::Priority,
        QueuePolicy::ShortestPredictedFirst => sched::QueuePolicy::ShortestPredictedFirst,
        QueuePolicy::UserFair => sched::QueuePolicy::UserFair,
    }
}

fn stop_policy(p: StopPolicy) -> sched::StopPolicy {
    match p {
        StopPolicy::None => sched::StopPolicy::None,
        StopPolicy::Hold => sched::StopPolicy::Hold,
        StopPolicy::HoldAndDrain => sched::StopPolicy::HoldAndDrain,
    }
}

fn secs(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> i64 {
    t.0.as_second()
}

/// Builds the snapshot.
pub fn build(world: &World<'_>) -> sched::Snapshot {
    let node_names: BTreeSet<String> = world.nodes.iter().map(|n| n.name_any()).collect();
    let mut foreign = nodes::foreign(world, &node_names);
    let gangs = Gang::by_job(world.pods);
    let jobs = jobs::models(world, &gangs);
    let charged: BTreeSet<&GangKey> = jobs
        .iter()
        .filter(|(_, j)| j.running.is_some())
        .map(|(key, _)| key)
        .collect();
    // Jobs that keep their pods: present and not being deleted.
    let keeping: BTreeSet<GangKey> = world
        .jobs
        .iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .map(|j| (JobKey::of(j), j.metadata.uid.clone()))
        .collect();
    let orphans = nodes::Orphans {
        charged: &charged,
        keeping: &keeping,
        now: world.now,
    };
    let mut held = orphans.held(&gangs, &node_names, &mut foreign);
    nodes::add_outgoing_reservations(world, &node_names, &mut held);
    let nodes = world
        .nodes
        .iter()
        .map(|n| {
            let name = n.name_any();
            nodes::node_model(
                n,
                foreign.get(&name).copied().unwrap_or_default(),
                held.remove(&name).unwrap_or_default(),
            )
        })
        .collect();
    sched::Snapshot {
        now: world.now,
        nodes,
        virtual_clusters: virtual_clusters(&world.refs),
        queues: queues(&world.refs),
        jobs: jobs.into_iter().map(|(_, j)| j).collect(),
        workload: Vec::new(),
    }
}

/// The VirtualClusters as the core reads them.
fn virtual_clusters(refs: &Refs<'_>) -> Vec<sched::VirtualCluster> {
    refs.vcs
        .values()
        .map(|vc| sched::VirtualCluster {
            name: vc.name_any(),
            guarantee: vc
                .spec
                .guarantee
                .iter()
                .map(|g| sched::FlavorGuarantee {
                    flavor: sched::Flavor::new(g.flavor.clone()),
                    gpus: g.gpus.max(0) as u32,
                    cells: g
                        .cells
                        .iter()
                        .map(|c| sched::CellGuarantee {
                            level: level(c.level),
                            count: c.count.max(0) as u32,
                        })
                        .collect(),
                })
                .collect(),
            limit_gpus: vc.spec.limit.as_ref().map(|l| l.gpus.max(0) as u32),
            weight: vc.spec.weight.max(1) as u32,
            terminating: vc.metadata.deletion_timestamp.is_some(),
        })
        .collect()
}

/// A queue's strategy as the core names it.
fn queueing_strategy(s: QueueingStrategy) -> sched::QueueingStrategy {
    match s {
        QueueingStrategy::BestEffort => sched::QueueingStrategy::BestEffort,
        QueueingStrategy::Strict => sched::QueueingStrategy::Strict,
        QueueingStrategy::Backfill => sched::QueueingStrategy::Backfill,
    }
}

/// The Queues as the core reads them.
fn queues(refs: &Refs<'_>) -> Vec<sched::Queue> {
    refs.queues
        .values()
        .map(|q| sched::Queue {
            name: q.name_any(),
            virtual_cluster: q.spec.virtual_cluster.clone(),
            parent: q.spec.parent.clone(),
            share: q.spec.share.clamp(0, 100) as u32,
            max_share: q.spec.max_share.clamp(0, 100) as u32,
            user_limit: q.spec.user_limit.map(|u| u.max(0) as u32),
            policy: policy(q.spec.policy),
            priority_preemption: q.spec.priority_preemption,
            strategy: queueing_strategy(q.spec.queueing_strategy),
            terminating: q.metadata.deletion_timestamp.is_some(),
            stop: stop_policy(q.spec.stop_policy),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::api::annotations::{
        GPU_SHARE_ANNOTATION, GPUS_ANNOTATION, INDEX_LABEL, JOB_LABEL, PRODUCT_LABEL, TASK_LABEL,
    };
    use crate::api::{Queue, VirtualCluster};

    const FLAVOR: &str = "A100";
    const GPUS: u32 = 8;

    /// What became of the job whose pod still sits on the node.
    #[derive(Clone, Copy, Debug)]
    enum JobState {
        Running,
        Deleted,
        Invalid,
        Succeeded,
        Failed,
        Retrying,
        Queued,
    }

    fn node() -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "n0", "labels": {PRODUCT_LABEL: FLAVOR}},
                "status": {
                    "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": GPUS.to_string()},
                    "conditions": [{"type": "Ready", "status": "True"}]
                }
            }))
            .expect("node"),
        )
    }

    fn job(name: &str, queue: &str, gpus: u32, phase: &str) -> Arc<TrainingJob> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
                "metadata": {"name": name, "namespace": "team", "uid": name,
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"queue": queue, "tasks": [{"name": "w", "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}]},
                "status": {"phase": phase}
            }))
            .expect("job"),
        )
    }

    /// A pod of `job` on n0 holding `gpus` (whole) or a share of the first.
    fn pod(job: &str, gpus: &[u32], share: Option<u32>, terminating: bool) -> Arc<Pod> {
        let list = gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut ann = BTreeMap::from([(GPUS_ANNOTATION.to_string(), list)]);
        if let Some(s) = share {
            ann.insert(GPU_SHARE_ANNOTATION.into(), s.to_string());
        }
        let mut meta = json!({"name": format!("{job}-w-0"), "namespace": "team",
            "labels": {JOB_LABEL: job, TASK_LABEL: "w", INDEX_LABEL: "0"}, "annotations": ann,
            "ownerReferences": [{"apiVersion": "kubetrain.io/v1alpha1", "kind": "TrainingJob",
                "name": job, "uid": job, "controller": true}]});
        if terminating {
            meta["deletionTimestamp"] = json!("2026-01-01T00:00:10Z");
        }
        let limit = if share.is_some() { 0 } else { gpus.len() };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": meta,
                "spec": {"nodeName": "n0", "containers": [
                    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": limit}}}]},
                "status": {"phase": "Running"}
            }))
            .expect("pod"),
        )
    }

    fn holder() -> impl Strategy<Value = (JobState, u32, bool, bool)> {
        let state = prop_oneof![
            Just(JobState::Running),
            Just(JobState::Deleted),
            Just(JobState::Invalid),
            Just(JobState::Succeeded),
            Just(JobState::Failed),
            Just(JobState::Retrying),
            Just(JobState::Queued),
        ];
        // GPUs held (0: a share of one GPU), fractional?, terminating?
        (state, 0u32..4, any::<bool>(), any::<bool>())
    }

    /// Queue `q` of VirtualCluster `vc`, which owns namespace `team` and every GPU of n0.
    fn one_team() -> (
        BTreeMap<String, Arc<Queue>>,
        BTreeMap<String, Arc<VirtualCluster>>,
    ) {
        let queue: Arc<Queue> = Arc::new(
            serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "q"}, "spec": {"virtualCluster": "vc"}}))
            .expect("queue"),
        );
        let vc: Arc<VirtualCluster> = Arc::new(
            serde_json::from_value(json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "VirtualCluster",
            "metadata": {"name": "vc"},
            "spec": {"namespaces": ["team"], "guarantee": [{"flavor": FLAVOR, "gpus": GPUS}]}}))
            .expect("vc"),
        );
        (
            BTreeMap::from([("q".to_string(), queue)]),
            BTreeMap::from([("vc".to_string(), vc)]),
        )
    }

    /// The nodes, pods and jobs a test's world holds.
    type Objects<'a> = (&'a [Arc<Node>], &'a [Arc<Pod>], &'a [Arc<TrainingJob>]);

    /// The core's decisions on these objects, at a fixed time, with no namespaces and
    /// [`FLAVOR`] the only GPU type.
    fn decide(
        objects: Objects<'_>,
        queues: &BTreeMap<String, Arc<Queue>>,
        vcs: &BTreeMap<String, Arc<VirtualCluster>>,
        asked: &BTreeMap<JobKey, Asked>,
    ) -> sched::Decisions {
        sched::schedule(&snapshot_at(NOW, objects, queues, vcs, asked))
    }

    /// The reservation namespace of [`decide`]'s world.
    const RESERVATIONS: &str = "kubetrain-system";

    /// The fixed time of [`decide`]'s world.
    const NOW: i64 = 1_800_000_000;

    fn snapshot_at(
        now: i64,
        objects: Objects<'_>,
        queues: &BTreeMap<String, Arc<Queue>>,
        vcs: &BTreeMap<String, Arc<VirtualCluster>>,
        asked: &BTreeMap<JobKey, Asked>,
    ) -> sched::Snapshot {
        predicted_at(now, objects, queues, vcs, asked, &BTreeMap::new())
    }

    /// [`snapshot_at`], with the cycle's predictions of the jobs first seen.
    fn predicted_at(
        now: i64,
        (nodes, pods, jobs): Objects<'_>,
        queues: &BTreeMap<String, Arc<Queue>>,
        vcs: &BTreeMap<String, Arc<VirtualCluster>>,
        asked: &BTreeMap<JobKey, Asked>,
        predictions: &BTreeMap<JobKey, i64>,
    ) -> sched::Snapshot {
        let world = World {
            now,
            nodes,
            pods,
            jobs,
            refs: Refs {
                queues,
                vcs,
                namespaces: &BTreeMap::new(),
                flavors: &BTreeSet::from([FLAVOR.to_string()]),
                resources: &Default::default(),
                volumes: &Default::default(),
                priority_classes: &Default::default(),
                refused: &Default::default(),
            },
            inflight: &BTreeMap::new(),
            asked,
            reservation_namespace: RESERVATIONS,
            predictions,
        };
        build(&world)
    }

    /// The core orders a job by its spec's run time, else its status's prediction from the
    /// history, else (first seen, its status not written yet) the cycle's own prediction.
    #[test]
    fn a_jobs_predicted_run_time_is_its_specs_else_its_statuss_else_the_cycles() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let mut own = (*job("own", "q", 1, "Queued")).clone();
        own.spec.predicted_duration_seconds = Some(60);
        let mut kept = (*job("kept", "q", 1, "Queued")).clone();
        if let Some(s) = kept.status.as_mut() {
            s.prediction = Some(crate::api::trainingjob::Prediction {
                seconds: Some(3600),
                source: crate::api::trainingjob::PredictionSource::History,
                level: None,
                runs: Some(2),
            });
        }
        let jobs = vec![Arc::new(own), Arc::new(kept), job("new", "q", 1, "Queued")];
        let key = |name: &str| JobKey::of(jobs.iter().find(|j| j.name_any() == name).expect("job"));
        let predictions = BTreeMap::from([(key("new"), 900), (key("own"), 5), (key("kept"), 5)]);
        let snap = predicted_at(
            NOW,
            (&nodes, &[], &jobs),
            &queues,
            &vcs,
            &BTreeMap::new(),
            &predictions,
        );
        let of = |name: &str| {
            snap.jobs
                .iter()
                .find(|j| j.id.ends_with(&format!("/{name}")))
                .and_then(|j| j.predicted_duration_seconds)
        };
        assert_eq!(
            (of("own"), of("kept"), of("new")),
            (Some(60), Some(3600), Some(900))
        );
    }

    /// A job without `spec.gpuTypes` whose template keeps it to some products (node affinity
    /// `In`, a `nodeSelector`) accepts those products as its GPU types; `spec.gpuTypes` wins.
    #[test]
    fn a_template_that_keeps_a_job_to_some_products_names_its_gpu_types() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let with_template = |name: &str, template_spec: serde_json::Value| {
            let mut j = (*job(name, "q", 1, "Queued")).clone();
            for (k, v) in template_spec.as_object().expect("object") {
                j.spec.tasks[0].template["spec"][k] = v.clone();
            }
            Arc::new(j)
        };
        let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": PRODUCT_LABEL, "operator": "In", "values": ["V100", FLAVOR]}]}]}}}});
        let v100_only = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": PRODUCT_LABEL, "operator": "In", "values": ["V100"]}]}]}}}});
        let mut named = (*with_template("named", v100_only)).clone();
        named.spec.gpu_types = vec![FLAVOR.into()];
        let jobs = vec![
            with_template("affinity", affinity),
            with_template("selector", json!({"nodeSelector": {PRODUCT_LABEL: FLAVOR}})),
            with_template("zone", json!({"nodeSelector": {"zone": "a"}})),
            Arc::new(named),
        ];
        let snap = snapshot_at(NOW, (&nodes, &[], &jobs), &queues, &vcs, &BTreeMap::new());
        let types = |name: &str| -> Vec<String> {
            let j = snap
                .jobs
                .iter()
                .find(|j| j.id.ends_with(&format!("/{name}")))
                .expect("job");
            j.gpu_types.iter().map(|f| f.0.clone()).collect()
        };
        assert_eq!(types("affinity"), [FLAVOR, "V100"]);
        assert_eq!(types("selector"), [FLAVOR]);
        assert!(types("zone").is_empty());
        assert_eq!(types("named"), [FLAVOR]);
    }

    /// Pods of no job in the snapshot are on their way out when they are being deleted
    /// (until 30 s past their grace period: then stuck), or when their job is gone or being
    /// deleted (the garbage collector deletes them next). An invalid job's pods, and pods
    /// with no owner (`kubectl delete --cascade=orphan`), stay.
    #[test]
    fn which_pods_of_no_job_are_leaving() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        // the test pods' deletion timestamp
        let deleted_at = 1_767_225_610;
        let leaving = |pods: Vec<Arc<Pod>>, jobs: Vec<Arc<TrainingJob>>, now: i64| {
            let snap = snapshot_at(now, (&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new());
            let held = &snap.nodes[0].held;
            assert_eq!(held.len(), 1, "{held:?}");
            held[0].leaving.clone()
        };
        let gone = Some("team/gone".to_string());
        assert_eq!(
            leaving(vec![pod("gone", &[0], None, false)], vec![], NOW),
            gone
        );
        let invalid = job("gone", "no-such-queue", 1, "Running");
        assert_eq!(
            leaving(
                vec![pod("gone", &[0], None, false)],
                vec![invalid.clone()],
                NOW
            ),
            None,
            "an invalid job's pods stay"
        );
        let terminating = pod("gone", &[0], None, true);
        assert_eq!(
            leaving(vec![terminating.clone()], vec![invalid], deleted_at + 30),
            gone
        );
        assert_eq!(
            leaving(vec![terminating], vec![], deleted_at + 31),
            None,
            "stuck terminating"
        );
        let mut unowned = (*pod("gone", &[0], None, false)).clone();
        unowned.metadata.owner_references = None;
        assert_eq!(leaving(vec![Arc::new(unowned)], vec![], NOW), None);

        // A job deleted in the foreground (a finalizer holds it while the garbage collector
        // deletes its pods) takes no part: its pods are leaving.
        let mut deleting = (*job("gone", "q", 1, "Running")).clone();
        deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        deleting.metadata.finalizers = Some(vec!["foregroundDeletion".into()]);
        assert_eq!(
            leaving(
                vec![pod("gone", &[0], None, false)],
                vec![Arc::new(deleting)],
                NOW
            ),
            gone
        );
    }

    /// Another workload's pod whose memory cannot be read still holds its GPUs and CPU
    /// (before, the whole pod was dropped, and its GPUs could be handed out twice); its
    /// native sidecar and its overhead count as kube-scheduler counts them.
    #[test]
    fn a_foreign_pod_holds_what_can_be_read_of_it() {
        let foreign: Arc<Pod> = Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "other", "namespace": "elsewhere"},
                "spec": {"nodeName": "n0",
                    "overhead": {"cpu": "250m"},
                    "initContainers": [{"name": "proxy", "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "1"}}}],
                    "containers": [{"name": "c", "resources": {
                        "limits": {"nvidia.com/gpu": "4", "memory": "a lot"},
                        "requests": {"cpu": "2"}}}]},
                "status": {"phase": "Running"}
            }))
            .expect("pod"),
        );
        let (queues, vcs) = one_team();
        let snap = snapshot_at(
            NOW,
            (&[node()], &[foreign], &[]),
            &queues,
            &vcs,
            &BTreeMap::new(),
        );
        assert_eq!(
            snap.nodes[0].foreign,
            sched::Resources {
                cpu_milli: 3250,
                memory_bytes: 0,
                gpus: 4
            }
        );
    }

    /// A running job that stops validating (here its namespace left its VirtualCluster)
    /// stays charged to the team it was admitted in, by its status's queue, while its pods
    /// hold GPUs (found in an admin's run: the team showed 0 in use, and its guarantee was
    /// reclaimed from another team a second time).
    #[test]
    fn a_running_job_that_turns_invalid_stays_charged_where_it_was_admitted() {
        let (queues, mut vcs) = one_team();
        let mut moved = (*vcs["vc"]).clone();
        moved.spec.namespaces = vec!["elsewhere".into()];
        vcs.insert("vc".into(), Arc::new(moved));
        let mut running = (*job("j", "q", 4, "Running")).clone();
        running.status.get_or_insert_with(Default::default).queue = Some("q".into());
        let jobs = vec![Arc::new(running)];
        let pods = vec![pod("j", &[0, 1, 2, 3], None, false)];
        let nodes = vec![node()];
        let d = decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new());
        let in_use =
            d.usage.virtual_clusters["vc"].flavors[&sched::Flavor::new(FLAVOR)].in_use_milli;
        assert_eq!(in_use, 4000, "{d:?}");
    }

    /// The reservation pod that holds a shared GPU from the device plugin is the shares'
    /// count, not another's pod: counted again it would take a second GPU. Once no share
    /// holds the GPU it is on its way out, and holds that GPU as a terminating pod does
    /// until it is gone (kube-scheduler and the kubelet count it until then).
    #[test]
    fn a_reservation_is_counted_as_its_shares_are() {
        let (queues, vcs) = one_team();
        let mut share = (*pod("s", &[0], Some(500), false)).clone();
        share.annotations_mut().extend([
            (
                crate::api::annotations::GPU_ASSIGNMENT_ANNOTATION.to_string(),
                "device-plugin".to_string(),
            ),
            (
                crate::api::annotations::NODE_ANNOTATION.to_string(),
                "n0".to_string(),
            ),
        ]);
        let gpu = crate::controller::reservations::SharedGpu {
            node: "n0".into(),
            gpu: 0,
        };
        let mut reservation = crate::controller::reservations::reservation_pod(
            &gpu,
            None,
            &crate::controller::reservations::ReservationSettings {
                namespace: RESERVATIONS.into(),
                ..Default::default()
            },
        );
        reservation.spec.as_mut().expect("spec").node_name = Some("n0".into());
        let node_of = |pods: &[Arc<Pod>], phase: &str| {
            let jobs = [job("s", "q", 0, phase)];
            let snap = snapshot_at(
                NOW,
                (&[node()], pods, &jobs),
                &queues,
                &vcs,
                &BTreeMap::new(),
            );
            snap.nodes[0].clone()
        };
        let reservation = Arc::new(reservation);
        let alone = node_of(&[Arc::new(share.clone())], "Running");
        let reserved = node_of(&[Arc::new(share.clone()), reservation.clone()], "Running");
        assert_eq!(reserved.foreign.gpus, 0);
        assert_eq!(reserved.held, alone.held);
        share.status.as_mut().expect("status").phase = Some("Succeeded".into());
        let out = node_of(&[Arc::new(share), reservation], "Succeeded");
        assert_eq!(out.foreign.gpus, 0);
        let reservation_held: Vec<_> = out
            .held
            .iter()
            .filter(|h| {
                h.leaving
                    .as_deref()
                    .is_some_and(|l| l.contains("kubetrain-gpu-n0-0"))
            })
            .collect();
        assert_eq!(reservation_held.len(), 1, "{:?}", out.held);
        assert_eq!(reservation_held[0].gpus, vec![sched::GpuIndex(0)]);
        assert_eq!(reservation_held[0].share, None);
    }

    /// The scheduler asks a reclaim's victims to checkpoint, and its next cycle runs before
    /// the pod cache shows the requests: the victims are taken as asked, so they are not
    /// chosen and asked again (which would restart their grace periods).
    #[test]
    fn a_victim_asked_before_the_cache_shows_it_is_not_asked_again() {
        let owned = |kind: &str, name: &str, spec: serde_json::Value| {
            json!({"apiVersion": "kubetrain.io/v1alpha1", "kind": kind,
                "metadata": {"name": name}, "spec": spec})
        };
        let vc = |name: &str, ns: &str, gpus: u32| -> Arc<VirtualCluster> {
            Arc::new(
                serde_json::from_value(owned(
                    "VirtualCluster",
                    name,
                    json!({"namespaces": [ns], "guarantee": [{"flavor": FLAVOR, "gpus": gpus}]}),
                ))
                .expect("vc"),
            )
        };
        let queue = |name: &str| -> Arc<Queue> {
            Arc::new(
                serde_json::from_value(owned("Queue", name, json!({"virtualCluster": name})))
                    .expect("queue"),
            )
        };
        let queues = BTreeMap::from([
            ("own".to_string(), queue("own")),
            ("lend".to_string(), queue("lend")),
        ]);
        let vcs = BTreeMap::from([
            ("own".to_string(), vc("own", "own", GPUS)),
            ("lend".to_string(), vc("lend", "team", 0)),
        ]);
        // Every GPU borrowed by a 1-GPU bonus job; the owner's 8-GPU job arrives.
        let mut jobs = Vec::new();
        let mut pods = Vec::new();
        for g in 0..GPUS {
            let name = format!("b{g}");
            jobs.push(job(&name, "lend", 1, "Running"));
            let mut p = (*pod(&name, &[g], None, false)).clone();
            p.annotations_mut().insert(
                crate::api::annotations::BONUS_ANNOTATION.into(),
                "true".into(),
            );
            pods.push(Arc::new(p));
        }
        let mut owner = (*job("train", "own", GPUS, "Queued")).clone();
        owner.metadata.namespace = Some("own".into());
        jobs.push(Arc::new(owner));
        let nodes = vec![node()];
        let decide =
            |asked: &BTreeMap<JobKey, Asked>| decide((&nodes, &pods, &jobs), &queues, &vcs, asked);
        let first = decide(&BTreeMap::new());
        let victims: Vec<String> = first
            .preemptions
            .iter()
            .flat_map(|p| p.victims.clone())
            .collect();
        assert_eq!(victims.len(), GPUS as usize, "{first:?}");
        assert!(first.admissions.is_empty());
        // The requests are written; the cache does not show them yet.
        let asked: BTreeMap<JobKey, Asked> = victims
            .iter()
            .map(|v| {
                let key: JobKey = v.parse().expect("job key");
                let a = Asked {
                    reason: sched::PreemptionReason::Reclaim,
                    beneficiary: Some("own/train".into()),
                    at: 1_800_000_000,
                    attempt: 0,
                };
                (key, a)
            })
            .collect();
        let next = decide(&asked);
        assert!(
            next.preemptions.is_empty(),
            "asked again: {:?}",
            next.preemptions
        );
        assert!(
            next.admissions.is_empty(),
            "the victims still hold the GPUs"
        );
        assert!(next.cancellations.is_empty(), "the owner still waits");
    }

    /// A job whose pods ran and finished before its reconciler wrote Running (or whose old
    /// attempt's pods are still being deleted) still looks Pending or Queued: it is not
    /// admitted again over pods of the same names, on a node with every GPU free.
    #[test]
    fn a_job_whose_pods_already_finished_is_not_admitted_again() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let finished = |name: &str, phase: &str, terminating: bool| {
            let mut p = (*pod(name, &[0], None, terminating)).clone();
            p.status.as_mut().expect("status").phase = Some(phase.into());
            Arc::new(p)
        };
        for (phase, pod_phase, terminating) in [
            ("Pending", "Succeeded", false),
            ("Queued", "Succeeded", false),
            ("Queued", "Failed", true),
        ] {
            let jobs = vec![job("short", "q", 1, phase), job("fresh", "q", 1, "Pending")];
            let pods = vec![finished("short", pod_phase, terminating)];
            let admitted: Vec<String> =
                decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new())
                    .admissions
                    .into_iter()
                    .map(|a| a.job)
                    .collect();
            assert_eq!(
                admitted,
                vec!["team/fresh".to_string()],
                "job {phase}, its pod {pod_phase} (terminating: {terminating})"
            );
        }
    }

    /// A job stopped for a drain or a preemption whose pods are gone keeps its place until its
    /// reconciler puts it back in its queue: the job behind it is not admitted on the GPUs
    /// it needs, and it is not admitted itself while still `Preempting`. Suspended, it has no
    /// place to keep; with its pods still leaving it holds their GPUs as before.
    #[test]
    fn a_job_on_its_way_back_keeps_its_place() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let decide_with = |back: Arc<TrainingJob>, pods: Vec<Arc<Pod>>| {
            let jobs = vec![back, job("behind", "q", GPUS, "Queued")];
            decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new())
        };
        let admitted = |d: &sched::Decisions| -> Vec<String> {
            d.admissions.iter().map(|a| a.job.clone()).collect()
        };

        let d = decide_with(job("back", "q", GPUS, "Preempting"), vec![]);
        assert!(admitted(&d).is_empty(), "{:?}", admitted(&d));
        let code = |id: &str| {
            d.waiting
                .iter()
                .find(|w| w.job == id)
                .map(|w| w.reason.code().as_str())
        };
        assert_eq!(code("team/back"), Some("Returning"));
        assert_eq!(code("team/behind"), Some("BehindReturningJob"));

        let mut suspended = (*job("back", "q", GPUS, "Preempting")).clone();
        suspended.spec.suspend = true;
        let d = decide_with(Arc::new(suspended), vec![]);
        assert_eq!(admitted(&d), ["team/behind"]);

        // Its pod exited after the checkpoint and is not deleted yet: it holds nothing, and
        // the job keeps its place all the same.
        let mut exited = (*pod("back", &[0], None, false)).clone();
        exited.status.as_mut().expect("status").phase = Some("Succeeded".into());
        let d = decide_with(job("back", "q", GPUS, "Preempting"), vec![Arc::new(exited)]);
        assert!(admitted(&d).is_empty(), "{:?}", admitted(&d));

        let leaving = pod("back", &[0], None, true);
        let d = decide_with(job("back", "q", GPUS, "Preempting"), vec![leaving]);
        assert!(admitted(&d).is_empty(), "its pod still holds a GPU");
        assert_ne!(
            d.waiting
                .iter()
                .find(|w| w.job == "team/behind")
                .map(|w| w.reason.code().as_str()),
            Some("BehindReturningJob")
        );
    }

    /// A gang stopped for a drain leaves pod by pod: while the last of its pods is still
    /// leaving, the GPUs of those already gone stay its own until it is back. Counted as
    /// free, they went to the next job in that gap (the job then neither returning nor
    /// holding its room), which was preempted for the drained job seconds later: the e2e
    /// drain test's borrower started there whenever the pod on the drained node left last.
    #[test]
    fn a_gang_leaving_pod_by_pod_keeps_the_room_of_its_pods_gone() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let mut back = (*job("back", "q", 4, "Preempting")).clone();
        back.spec.tasks[0].replicas = Some(2);
        let status = back.status.as_mut().expect("status");
        status.placement = [(0, [0, 1, 2, 3]), (1, [4, 5, 6, 7])]
            .into_iter()
            .map(|(i, gpus)| crate::api::trainingjob::ReplicaPlacement {
                task: "w".into(),
                index: i,
                rank: i,
                node: "n0".into(),
                gpus: gpus.to_vec(),
                gpu_share: None,
                gpus_assigned_by: None,
            })
            .collect();
        // told to stop: the checkpoint is saved
        status.conditions = vec![
            serde_json::from_value(json!({"type": "Preempting", "status": "True",
                "reason": "CheckpointSaved", "message": "",
                "lastTransitionTime": "2026-01-01T00:00:09Z"}))
            .expect("condition"),
        ];
        let jobs = vec![Arc::new(back), job("behind", "q", 4, "Queued")];
        // replica 0's pod is gone; replica 1's is still there, being deleted or about to be
        for terminating in [true, false] {
            let mut last = (*pod("back", &[4, 5, 6, 7], None, terminating)).clone();
            last.metadata.name = Some("back-w-1".into());
            last.labels_mut().insert(INDEX_LABEL.into(), "1".into());
            let pods = vec![Arc::new(last)];
            let d = decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new());
            assert!(
                d.admissions.is_empty(),
                "terminating: {terminating}: {:?}",
                d.admissions
            );
        }
    }

    /// Pods labelled with a job's name that the job does not control (left by a deleted job
    /// of the same name, orphaned or not yet collected) are not its: a finished one does not
    /// keep it from its admission (it made a re-created job Succeeded with nothing run), and
    /// a running one holds its GPUs as any other pod does.
    #[test]
    fn pods_another_job_of_the_name_left_are_not_the_jobs() {
        let (queues, vcs) = one_team();
        let nodes = vec![node()];
        let jobs = vec![job("short", "q", 1, "Pending")];
        let every_gpu: Vec<u32> = (0..GPUS).collect();
        for owner in [None, Some("an-earlier-short")] {
            let left = |phase: &str, gpus: &[u32]| {
                let mut p = (*pod("short", gpus, None, false)).clone();
                p.metadata.owner_references = owner.map(|uid| {
                    let mut o = p.metadata.owner_references.clone().expect("owner");
                    o[0].uid = uid.into();
                    o
                });
                p.status.as_mut().expect("status").phase = Some(phase.into());
                Arc::new(p)
            };
            let admitted = |pods: Vec<Arc<Pod>>| -> Vec<String> {
                decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new())
                    .admissions
                    .into_iter()
                    .map(|a| a.job)
                    .collect()
            };
            assert_eq!(
                admitted(vec![left("Succeeded", &[0])]),
                ["team/short"],
                "owner {owner:?}"
            );
            assert!(
                admitted(vec![left("Running", &every_gpu)]).is_empty(),
                "owner {owner:?}: its GPUs are held"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// A GPU is free only when no pod holds it: whatever became of the jobs of the pods
        /// present on a node (deleted, invalid, finished, retrying, requeued), nothing new
        /// is placed on the GPUs those pods hold.
        #[test]
        fn present_pods_keep_their_gpus(
            holders in proptest::collection::vec(holder(), 1..5),
            wanted in 1u32..=GPUS,
        ) {
            let (queues, vcs) = one_team();

            // Lay the holders' GPUs out without overlap, as the node really has them.
            let mut next = 0u32;
            let mut pods = Vec::new();
            let mut jobs = vec![job("waiting", "q", wanted, "Queued")];
            let mut held = vec![0u32; GPUS as usize];
            for (i, (state, n, fractional, terminating)) in holders.into_iter().enumerate() {
                let name = format!("holder-{i}");
                let (gpus, share) = if fractional || n == 0 {
                    if next >= GPUS { continue; }
                    (vec![next], Some(500))
                } else {
                    if next + n > GPUS { continue; }
                    ((next..next + n).collect(), None)
                };
                next += gpus.len() as u32;
                for g in &gpus {
                    held[*g as usize] += share.unwrap_or(1000);
                }
                let phase = match state {
                    JobState::Succeeded => "Succeeded",
                    JobState::Failed => "Failed",
                    JobState::Retrying => "Retrying",
                    JobState::Queued => "Queued",
                    _ => "Running",
                };
                match state {
                    JobState::Deleted => {}
                    JobState::Invalid => jobs.push(job(&name, "no-such-queue", gpus.len() as u32, phase)),
                    _ => jobs.push(job(&name, "q", gpus.len() as u32, phase)),
                }
                pods.push(pod(&name, &gpus, share, terminating));
            }
            let nodes = vec![node()];
            let decisions = decide((&nodes, &pods, &jobs), &queues, &vcs, &BTreeMap::new());
            for a in &decisions.admissions {
                for r in &a.placement {
                    let amount = r.share.map_or(1000, |s| s.0);
                    for g in &r.gpus {
                        held[g.0 as usize] += amount;
                        prop_assert!(
                            held[g.0 as usize] <= 1000,
                            "{} placed on GPU {} that a present pod holds", a.job, g.0
                        );
                    }
                }
            }
        }
    }
}
