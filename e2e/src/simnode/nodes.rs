//! Node objects and their heartbeats.
//!
//! Each node is created once with its labels, topology annotation and status, and then
//! heartbeats as a kubelet does: its Lease in `kube-node-lease` is renewed every
//! [`SimOptions::heartbeat_interval`](super::SimOptions) and its unchanged `Ready` condition
//! re-posted every `node_status_interval` (5 min, as a kubelet's report frequency). The nodes'
//! turns are spread evenly over the interval and run through a bounded number of concurrent
//! calls that grows with the cluster, so 1,000 nodes make a steady trickle of requests rather
//! than bursts. A watch on the nodes applies fault annotations at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt, stream};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::{Mutex, Semaphore};
use tokio::task::JoinSet;

use super::cluster::{CLUSTER_LABEL, SimNode};
use super::faults::{Faults, NodeFault};
use super::{Agent, Error};
use kubetrain::api::{NodeTopology, TOPOLOGY_ANNOTATION, node_labels};

/// Extended resource name of whole GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
const LEASE_NAMESPACE: &str = "kube-node-lease";
const LEASE_DURATION_SECONDS: i32 = 40;
/// What the simulated kubelets report: the release of the control plane they join.
const KUBELET_VERSION: &str = "v1.37.2-kubetrain-sim";

pub(crate) fn now_time() -> Value {
    serde_json::to_value(Time(Timestamp::now())).unwrap_or(Value::Null)
}

fn capacity(n: &SimNode, gpus: u32) -> Value {
    let mut c = json!({ "cpu": n.cpu, "memory": n.memory, "pods": n.pods.to_string(), "ephemeral-storage": "1Ti" });
    if n.topology.is_some() {
        c[GPU_RESOURCE] = json!(gpus.to_string());
    }
    c
}

/// The node's status: capacity, allocatable with `healthy_gpus` GPUs, and conditions with
/// `Ready` as given (`ready_since`: when it last changed, kept across heartbeats).
fn status(n: &SimNode, healthy_gpus: u32, ready: (&str, &str, &str), ready_since: Value) -> Value {
    let now = now_time();
    let pressure = |t: &str, reason: &str| {
        json!({ "type": t, "status": "False", "reason": reason, "message": "simulated",
                "lastHeartbeatTime": now, "lastTransitionTime": ready_since })
    };
    let (ready_status, reason, message) = ready;
    json!({
        "capacity": capacity(n, n.gpus()),
        "allocatable": capacity(n, healthy_gpus),
        "conditions": [
            pressure("MemoryPressure", "KubeletHasSufficientMemory"),
            pressure("DiskPressure", "KubeletHasNoDiskPressure"),
            pressure("PIDPressure", "KubeletHasSufficientPID"),
            { "type": "Ready", "status": ready_status, "reason": reason, "message": message,
              "lastHeartbeatTime": now, "lastTransitionTime": ready_since },
        ],
        "addresses": [
            { "type": "InternalIP", "address": n.address },
            { "type": "Hostname", "address": n.name },
        ],
        "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
        "nodeInfo": {
            "machineID": format!("sim-{}", n.ordinal), "systemUUID": format!("sim-{}", n.ordinal),
            "bootID": "sim", "kernelVersion": "5.15.0-sim", "osImage": "kubetrain simulated node",
            "containerRuntimeVersion": "sim://1.0", "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION, "operatingSystem": "linux", "architecture": "amd64",
        },
    })
}

const READY: (&str, &str, &str) = (
    "True",
    "KubeletReady",
    "kubelet is posting ready status (simulated)",
);
const NOT_READY: (&str, &str, &str) = (
    "False",
    "KubeletNotReady",
    "simulated fault: kubelet stopped (sim.kubetrain.io/node-fault)",
);

/// Creates the nodes that do not exist and (re)publishes labels, status and Lease of all.
pub(crate) async fn ensure_nodes(
    client: &Client,
    nodes: &[SimNode],
    concurrency: usize,
) -> Result<(), Error> {
    stream::iter(nodes.iter().map(Ok))
        .try_for_each_concurrent(concurrency.max(1), |n| ensure_node(client, n))
        .await
}

async fn ensure_node(client: &Client, n: &SimNode) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut annotations = BTreeMap::new();
    if let Some(t) = &n.topology {
        annotations.insert(TOPOLOGY_ANNOTATION.to_string(), t.to_annotation());
    }
    let object: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": n.name, "labels": n.labels, "annotations": annotations },
        "spec": { "providerID": format!("kubetrain-sim://{}", n.name) },
    }))
    .map_err(|e| Error::Spec(e.to_string()))?;
    let node = match api.create(&PostParams::default(), &object).await {
        Ok(node) => node,
        Err(kube::Error::Api(e)) if e.code == 409 => {
            // Adopted from an earlier run: our labels win, annotations are fixed by the
            // first sync (which knows about injected faults).
            api.patch(
                &n.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": { "labels": n.labels } })),
            )
            .await?
        }
        Err(e) => return Err(e.into()),
    };
    let faults = Faults::of(&node);
    let ready = if faults.node.is_some() {
        NOT_READY
    } else {
        READY
    };
    let body = json!({ "status": status(n, healthy_gpus(n, &faults), ready, now_time()) });
    let node = api
        .patch_status(&n.name, &PatchParams::default(), &Patch::Strategic(body))
        .await?;
    renew_lease(client, &node).await?;
    if faults.node.is_none() {
        lift_startup_taint(&api, &node).await?;
    }
    Ok(())
}

/// Removes the `node.kubernetes.io/not-ready:NoSchedule` taint that the API server's
/// TaintNodesByCondition admission puts on every new node. The controller-manager would lift
/// it once it sees the node Ready, but at a few nodes a second; doing it here makes a
/// 1,000-node cluster schedulable at once. Later NotReady taints are left to the controller.
async fn lift_startup_taint(api: &Api<Node>, node: &Node) -> Result<(), Error> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let is_startup = |t: &k8s_openapi::api::core::v1::Taint| {
        t.key == "node.kubernetes.io/not-ready" && t.effect == "NoSchedule"
    };
    if !taints.iter().any(is_startup) {
        return Ok(());
    }
    let rest: Vec<_> = taints.into_iter().filter(|t| !is_startup(t)).collect();
    let patch = json!({
        "metadata": { "resourceVersion": node.metadata.resource_version },
        "spec": { "taints": rest },
    });
    match api
        .patch(
            &node.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Someone (the controller-manager) changed the node meanwhile: leave it to them.
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Renews (or creates) the node's Lease.
async fn renew_lease(client: &Client, node: &Node) -> Result<(), Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let name = node.name_any();
    let renew = serde_json::to_value(MicroTime(Timestamp::now())).unwrap_or(Value::Null);
    let spec = json!({ "holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": renew });
    match api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => {
            let lease: Lease = serde_json::from_value(json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": { "name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Node", "name": name, "uid": node.uid().unwrap_or_default(),
                }]},
                "spec": spec,
            }))
            .map_err(|e| Error::Spec(e.to_string()))?;
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Deletes nodes and their Leases (absent ones are fine).
pub(crate) async fn delete_nodes(
    client: &Client,
    names: &[String],
    concurrency: usize,
) -> Result<(), Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let ignore_404 = |r: Result<_, kube::Error>| match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(Error::from(e)),
    };
    stream::iter(names.iter().map(Ok))
        .try_for_each_concurrent(concurrency.max(1), |name| {
            let (nodes, leases) = (nodes.clone(), leases.clone());
            async move {
                ignore_404(
                    nodes
                        .delete(name, &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )?;
                ignore_404(
                    leases
                        .delete(name, &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )
            }
        })
        .await
}

/// A store of the cluster's nodes and the stream that fills it (to be polled by
/// [`follow_faults`]).
pub(crate) fn watch_nodes(
    client: &Client,
    cluster: &str,
) -> (
    Store<Node>,
    impl Stream<Item = Result<Node, watcher::Error>> + Send + 'static,
) {
    let api: Api<Node> = Api::all(client.clone());
    let (store, writer) = reflector::store();
    let config = watcher::Config::default().labels(&format!("{CLUSTER_LABEL}={cluster}"));
    let events = watcher(api, config)
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    (store, events)
}

/// Keeps the node store current and syncs a node as soon as its fault annotations change.
pub(crate) async fn follow_faults(
    agent: Arc<Agent>,
    events: impl Stream<Item = Result<Node, watcher::Error>>,
) {
    let mut seen: HashMap<String, (Option<String>, Option<String>)> = HashMap::new();
    let mut tasks = JoinSet::new();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        while tasks.try_join_next().is_some() {}
        let node = match event {
            Ok(node) => node,
            Err(e) => {
                tracing::warn!("node watch: {e}");
                continue;
            }
        };
        let name = node.name_any();
        if !agent.nodes.contains_key(&name) {
            continue;
        }
        let annotation = |k: &str| node.annotations().get(k).cloned();
        let signature = (
            annotation(super::faults::NODE_FAULT_ANNOTATION),
            annotation(super::faults::UNHEALTHY_GPUS_ANNOTATION),
        );
        if seen.get(&name) != Some(&signature) {
            seen.insert(name.clone(), signature);
            let agent = agent.clone();
            tasks.spawn(async move {
                if let Err(e) = sync_node(&agent, &name, false).await {
                    tracing::warn!(node = %name, "applying faults: {e}");
                }
            });
        }
    }
}

/// Heartbeats every node once per interval, the nodes' turns evenly spread.
pub(crate) async fn heartbeats(agent: Arc<Agent>) {
    let mut names: Vec<String> = agent.nodes.keys().cloned().collect();
    names.sort();
    if names.is_empty() {
        return;
    }
    let step = agent.options.heartbeat_interval / names.len() as u32;
    let mut tick = tokio::time::interval(step.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let limit = Arc::new(Semaphore::new(
        agent.options.heartbeats_at_once(names.len()),
    ));
    let last_status: Arc<Mutex<HashMap<String, tokio::time::Instant>>> = Arc::default();
    let mut tasks = JoinSet::new();
    for name in names.iter().cycle() {
        tick.tick().await;
        while tasks.try_join_next().is_some() {}
        let Ok(permit) = limit.clone().acquire_owned().await else {
            return;
        };
        let (agent, name, last_status) = (agent.clone(), name.clone(), last_status.clone());
        tasks.spawn(async move {
            let _permit = permit;
            let now = tokio::time::Instant::now();
            // Re-post status when due; a little early rather than a whole interval late.
            let due = {
                let last = last_status.lock().await;
                last.get(&name).is_none_or(|t| {
                    now.duration_since(*t) + agent.options.heartbeat_interval / 2
                        >= agent.options.node_status_interval
                })
            };
            match sync_node(&agent, &name, true).await {
                Ok(()) if due => {
                    if let Err(e) = post_status(&agent, &name).await {
                        tracing::warn!(node = %name, "node status: {e}");
                    } else {
                        last_status.lock().await.insert(name, now);
                    }
                }
                Ok(()) => {}
                Err(e) => tracing::warn!(node = %name, "heartbeat: {e}"),
            }
        });
    }
}

fn healthy_gpus(n: &SimNode, faults: &Faults) -> u32 {
    let unhealthy = faults
        .unhealthy_gpus
        .keys()
        .filter(|&&i| i < n.gpus())
        .count() as u32;
    n.gpus() - unhealthy
}

/// Status of the node's Ready condition.
pub(crate) fn ready_status(node: &Node) -> Option<String> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

fn ready_since(node: &Node, status: &str) -> Value {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == status => c
            .last_transition_time
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or_else(now_time),
        _ => now_time(),
    }
}

fn allocatable_gpus(node: &Node) -> Option<String> {
    let a = node.status.as_ref()?.allocatable.as_ref()?;
    a.get(GPU_RESOURCE).map(|q| q.0.clone())
}

/// True when the node's topology annotation, healthy-count label and allocatable GPUs match
/// its fault annotations.
pub(crate) fn faults_published(node: &Node) -> bool {
    let faults = Faults::of(node);
    let Some(annotation) = node.annotations().get(TOPOLOGY_ANNOTATION) else {
        return true;
    };
    let Ok(topology) = NodeTopology::parse(annotation) else {
        return false;
    };
    let marked = topology
        .gpus
        .iter()
        .all(|g| g.healthy != faults.unhealthy_gpus.contains_key(&g.index));
    let healthy = topology.healthy_count().to_string();
    marked
        && allocatable_gpus(node).as_ref() == Some(&healthy)
        && node.labels().get(node_labels::HEALTHY_COUNT) == Some(&healthy)
}

/// True when the node is Ready and carries none of the controller-manager's health taints.
pub(crate) fn is_ready_and_untainted(node: &Node) -> bool {
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                t.key == "node.kubernetes.io/not-ready" || t.key == "node.kubernetes.io/unreachable"
            })
        });
    ready_status(node).as_deref() == Some("True") && !tainted
}

/// Makes the node match its desired state: topology annotation and allocatable as its faults
/// say, `Ready=False` if faulted NotReady; with `heartbeat`, renews its Lease. Nodes gone from
/// the API server are left alone (deleting a node is a way to simulate losing it).
pub(crate) async fn sync_node(agent: &Agent, name: &str, heartbeat: bool) -> Result<(), Error> {
    let (Some(sim), Some(node)) = (
        agent.nodes.get(name),
        agent.node_store.get(&ObjectRef::new(name)),
    ) else {
        return Ok(());
    };
    let api: Api<Node> = Api::all(agent.client.clone());
    let faults = Faults::of(&node);
    if let Some(base) = &sim.topology {
        // As the node labeler does, the topology and the healthy-count label go together.
        let faulted = faults.apply(base);
        let desired = faulted.to_annotation();
        let healthy = faulted.healthy_count().to_string();
        if node.annotations().get(TOPOLOGY_ANNOTATION) != Some(&desired)
            || node.labels().get(node_labels::HEALTHY_COUNT) != Some(&healthy)
        {
            let patch = json!({ "metadata": {
                "annotations": { TOPOLOGY_ANNOTATION: desired },
                "labels": { (node_labels::HEALTHY_COUNT): healthy },
            } });
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
        }
    }
    let healthy = healthy_gpus(sim, &faults);
    match faults.node {
        Some(NodeFault::NotReady) => {
            if ready_status(&node).as_deref() == Some("True") {
                let body = json!({ "status": status(sim, healthy, NOT_READY, now_time()) });
                api.patch_status(name, &PatchParams::default(), &Patch::Strategic(body))
                    .await?;
                tracing::info!(node = %name, "fault: kubelet reports NotReady and stops heartbeats");
            }
            return Ok(());
        }
        Some(NodeFault::Unreachable) => return Ok(()),
        None => {}
    }
    let stale = ready_status(&node).as_deref() != Some("True")
        || (sim.topology.is_some() && allocatable_gpus(&node) != Some(healthy.to_string()));
    if heartbeat || stale {
        renew_lease(&agent.client, &node).await?;
    }
    if stale {
        post_status(agent, name).await?;
    }
    Ok(())
}

/// Posts the node's status with `Ready=True` (unless faulted) and its current allocatable.
async fn post_status(agent: &Agent, name: &str) -> Result<(), Error> {
    let (Some(sim), Some(node)) = (
        agent.nodes.get(name),
        agent.node_store.get(&ObjectRef::new(name)),
    ) else {
        return Ok(());
    };
    let faults = Faults::of(&node);
    if faults.node.is_some() {
        return Ok(());
    }
    let body = json!({ "status": status(sim, healthy_gpus(sim, &faults), READY, ready_since(&node, "True")) });
    let api: Api<Node> = Api::all(agent.client.clone());
    api.patch_status(name, &PatchParams::default(), &Patch::Strategic(body))
        .await?;
    Ok(())
}
