//! The simulated-node agent against the real control plane (kube-apiserver, etcd and the
//! controller-manager's node lifecycle controller). Each test runs its own simulated cluster,
//! named after its own namespace so that parallel tests keep apart.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubetrain::api::annotations::{
    CHECKPOINT_DONE, CHECKPOINT_REQUESTED, PRODUCT_LABEL, RACK_LABEL, RESERVATION_LABEL,
    RESERVED_DEVICE_ANNOTATION, sim,
};
use kubetrain::api::{NodeTopology, TOPOLOGY_ANNOTATION};
use kubetrain_e2e::ControlPlane;
use kubetrain_e2e::simnode::{ClusterSpec, NodeFault, SimCluster, SimHandle, SimOptions};
use serde_json::json;

const GPU: &str = "nvidia.com/gpu";

struct Setup {
    cp: &'static ControlPlane,
    client: Client,
    ns: String,
    sim: SimHandle,
}

impl Setup {
    /// A namespace and a simulated cluster from `file`, named after the namespace.
    async fn start(prefix: &str, file: &str, options: SimOptions) -> Setup {
        let cp = ControlPlane::shared();
        let client = cp.client().await.expect("client");
        let ns = cp.namespace(prefix).await.expect("namespace");
        let spec = ClusterSpec::from_file(file)
            .expect("cluster description")
            .named(&ns);
        let sim = SimCluster::start_with(client.clone(), spec, options)
            .await
            .expect("simulated cluster starts");
        Setup {
            cp,
            client,
            ns,
            sim,
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Creates a one-container pod bound to `node` with the given annotations.
    async fn pod(&self, name: &str, node: &str, annotations: BTreeMap<&str, &str>) -> Pod {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": name, "annotations": annotations },
            "spec": {
                "nodeName": node, "restartPolicy": "Never",
                "containers": [{ "name": "main", "image": "trainer:latest",
                                 "resources": { "limits": { GPU: "1" } } }],
            },
        }))
        .expect("pod");
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("create pod")
    }

    /// Waits until pod `name` satisfies `check`, returning it.
    async fn pod_where(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(&Pod) -> bool,
    ) -> Pod {
        object_where(self.pods(), name, what, timeout, check).await
    }

    /// Waits until node `name` satisfies `check`, returning it.
    async fn node_where(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(&Node) -> bool,
    ) -> Node {
        object_where(self.nodes(), name, what, timeout, check).await
    }

    async fn finish(self) {
        self.sim.shutdown().await.expect("shutdown");
        self.cp
            .delete_namespace(&self.ns)
            .await
            .expect("delete namespace");
    }
}

/// Waits until the object `name` exists and satisfies `check`, returning it.
async fn object_where<K>(
    api: Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&K) -> bool,
) -> K
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let label = format!("{} {name}: {what}", K::kind(&()).to_lowercase());
    ControlPlane::eventually(&label, timeout, || {
        let api = api.clone();
        let check = &check;
        async move { api.get_opt(name).await.ok().flatten().filter(|o| check(o)) }
    })
    .await
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn terminated(pod: &Pod) -> Option<ContainerStateTerminated> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .clone()
}

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)?;
    Some(c.status.clone())
}

fn taints(node: &Node) -> Vec<String> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    taints
        .into_iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

fn ready(node: &Node) -> Option<String> {
    let c = node
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some(c.status.clone())
}

fn quantity(
    node: &Node,
    field: fn(
        &k8s_openapi::api::core::v1::NodeStatus,
    )
        -> Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    name: &str,
) -> Option<String> {
    field(node.status.as_ref()?)?.get(name).map(|q| q.0.clone())
}

fn allocatable(node: &Node, name: &str) -> Option<String> {
    quantity(node, |s| s.allocatable.as_ref(), name)
}

fn capacity(node: &Node, name: &str) -> Option<String> {
    quantity(node, |s| s.capacity.as_ref(), name)
}

fn topology(node: &Node) -> NodeTopology {
    let annotation = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TOPOLOGY_ANNOTATION))
        .expect("topology annotation");
    NodeTopology::parse(annotation).expect("topology annotation parses")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_appear_with_capacity_labels_topology_and_leases() {
    let s = Setup::start(
        "sim-nodes",
        "e2e/clusters/mixed.yaml",
        SimOptions::default(),
    )
    .await;
    let names = s.sim.node_names();
    assert_eq!(names.len(), 7);
    let leases: Api<Lease> = Api::namespaced(s.client.clone(), "kube-node-lease");
    for name in &names {
        let node = s.nodes().get(name).await.expect("node exists");
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("kubetrain.io/simulated").map(String::as_str),
            Some("true"),
            "{name}"
        );
        assert_eq!(capacity(&node, "pods").as_deref(), Some("110"), "{name}");
        assert!(
            leases
                .get(name)
                .await
                .expect("lease")
                .spec
                .and_then(|s| s.renew_time)
                .is_some(),
            "{name}"
        );
        if name.contains("-cpu-") {
            assert_eq!(capacity(&node, GPU), None, "CPU node {name} has no GPUs");
            assert!(!labels.contains_key(PRODUCT_LABEL));
            continue;
        }
        let t = topology(&node);
        assert_eq!(
            capacity(&node, GPU),
            Some(t.gpus.len().to_string()),
            "{name}"
        );
        assert_eq!(allocatable(&node, GPU), capacity(&node, GPU), "{name}");
        assert_eq!(
            labels.get("gpu.kubetrain.io/present").map(String::as_str),
            Some("true")
        );
        assert_eq!(
            labels.get("gpu.kubetrain.io/count"),
            Some(&t.gpus.len().to_string())
        );
        assert_eq!(
            t.rack.as_ref(),
            labels.get(RACK_LABEL),
            "{name}: rack in label and annotation"
        );
        assert!(
            t.gpus
                .iter()
                .all(|g| g.healthy && g.uuid.starts_with("GPU-") && g.memory_mib > 0)
        );
        let (groups, nvlink) = (t.groups.len(), t.has_nvlink());
        if name.contains("-h100-") {
            assert_eq!(labels[PRODUCT_LABEL], "NVIDIA-H100-80GB-HBM3");
            assert_eq!(capacity(&node, "cpu").as_deref(), Some("192"));
            assert_eq!((groups, nvlink), (1, true), "{name}: one NVSwitch group");
        } else if name.contains("-v100-") {
            assert_eq!(labels[PRODUCT_LABEL], "Tesla-V100-SXM2-32GB");
            assert_eq!((groups, nvlink), (2, true), "{name}: two NVLink groups");
        } else {
            assert_eq!(labels[PRODUCT_LABEL], "Tesla-T4");
            assert_eq!((groups, nvlink), (2, false), "{name}: PCIe pairs");
        }
    }
    // The same through kubectl, the way a user looks.
    let out = s
        .cp
        .kubectl_ok(&[
            "get", "nodes", "-l", &format!("sim.kubetrain.io/cluster={},gpu.kubetrain.io/product=Tesla-V100-SXM2-32GB", s.ns),
            "-o", "jsonpath={range .items[*]}{.metadata.labels.topology\\.kubernetes\\.io/rack}:{.status.allocatable.nvidia\\.com/gpu} {end}",
        ])
        .expect("kubectl get nodes");
    let mut racks: Vec<&str> = out.split_whitespace().collect();
    racks.sort();
    assert_eq!(
        racks,
        [format!("{}-rack-0:8", s.ns), format!("{}-rack-1:8", s.ns)]
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhealthy_gpu_is_published_and_restored() {
    let s = Setup::start("sim-gpu", "e2e/clusters/dev.yaml", SimOptions::default()).await;
    let node = s.sim.node_names()[1].clone();
    s.sim
        .set_gpu_unhealthy(&node, 3, "XID 79")
        .await
        .expect("GPU fault");
    let n = s.nodes().get(&node).await.expect("node");
    assert_eq!(allocatable(&n, GPU).as_deref(), Some("7"));
    assert_eq!(capacity(&n, GPU).as_deref(), Some("8"));
    let t = topology(&n);
    let gpu3 = t.gpu(3).expect("GPU 3");
    assert!(!gpu3.healthy);
    assert_eq!(gpu3.unhealthy_reason.as_deref(), Some("XID 79"));
    assert_eq!(t.healthy_count(), 7);
    let healthy_label = |n: &Node| {
        let labels = n.metadata.labels.as_ref()?;
        labels
            .get(kubetrain::api::node_labels::HEALTHY_COUNT)
            .cloned()
    };
    assert_eq!(
        healthy_label(&n).as_deref(),
        Some("7"),
        "as the labeler publishes it"
    );
    // Other nodes are untouched.
    let other = s.nodes().get(&s.sim.node_names()[0]).await.expect("node");
    assert_eq!(allocatable(&other, GPU).as_deref(), Some("8"));

    s.sim.set_gpu_healthy(&node, 3).await.expect("GPU repair");
    let n = s.nodes().get(&node).await.expect("node");
    assert_eq!(allocatable(&n, GPU).as_deref(), Some("8"));
    assert_eq!(topology(&n).healthy_count(), 8);
    assert_eq!(healthy_label(&n).as_deref(), Some("8"));
    s.finish().await;
}

/// The one long test: nodes stay Ready and untainted past the controller-manager's 40 s
/// grace; a node whose kubelet goes silent is marked unreachable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_stay_ready_past_the_grace_period_unless_silent() {
    let s = Setup::start("sim-ready", "e2e/clusters/dev.yaml", SimOptions::default()).await;
    s.sim
        .wait_ready(Duration::from_secs(60))
        .await
        .expect("nodes Ready and untainted");
    let names = s.sim.node_names();
    let (healthy, silent) = (&names[..3], &names[3]);
    s.sim
        .set_node_fault(silent, NodeFault::Unreachable)
        .await
        .expect("fault");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(50) {
        for name in healthy {
            let node = s.nodes().get(name).await.expect("node");
            assert_eq!(
                ready(&node).as_deref(),
                Some("True"),
                "{name} after {:?}",
                started.elapsed()
            );
            assert!(
                taints(&node).is_empty(),
                "{name} tainted after {:?}: {:?}",
                started.elapsed(),
                taints(&node)
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    s.node_where(
        silent,
        "tainted unreachable",
        Duration::from_secs(30),
        |node| {
            ready(node).as_deref() == Some("Unknown")
                && taints(node).contains(&"node.kubernetes.io/unreachable:NoExecute".to_string())
        },
    )
    .await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_fault_is_seen_by_the_controller_manager_and_freezes_pods() {
    let s = Setup::start(
        "sim-notready",
        "e2e/clusters/dev.yaml",
        SimOptions::default(),
    )
    .await;
    let node = s.sim.node_names()[2].clone();
    s.sim
        .set_node_fault(&node, NodeFault::NotReady)
        .await
        .expect("fault");
    s.node_where(&node, "the not-ready taint", Duration::from_secs(30), |n| {
        taints(n).contains(&"node.kubernetes.io/not-ready:NoExecute".to_string())
    })
    .await;
    // A pod bound to the dead node is not started.
    s.pod("frozen", &node, BTreeMap::new()).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pod = s.pods().get("frozen").await.expect("pod");
    assert!(
        pod.status
            .as_ref()
            .and_then(|st| st.start_time.as_ref())
            .is_none(),
        "pod on a NotReady node was started"
    );

    s.sim.restore_node(&node).await.expect("restore");
    s.pod_where(
        "frozen",
        "Running after the node recovered",
        Duration::from_secs(15),
        |p| phase(p) == "Running",
    )
    .await;
    s.node_where(&node, "the taints lifted", Duration::from_secs(30), |n| {
        taints(n).is_empty()
    })
    .await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_goes_pending_running_succeeded() {
    let s = Setup::start(
        "sim-succeed",
        "e2e/clusters/dev.yaml",
        SimOptions::default(),
    )
    .await;
    let node = s.sim.node_names()[0].clone();
    s.pod(
        "job",
        &node,
        BTreeMap::from([(sim::START_SECONDS, "2"), (sim::RUN_SECONDS, "3")]),
    )
    .await;
    let pending = s
        .pod_where(
            "job",
            "accepted (Pending with a start time)",
            Duration::from_secs(10),
            |p| p.status.as_ref().is_some_and(|st| st.start_time.is_some()),
        )
        .await;
    assert_eq!(phase(&pending), "Pending");
    let waiting = pending
        .status
        .as_ref()
        .and_then(|st| st.container_statuses.as_ref())
        .expect("container statuses");
    assert_eq!(
        waiting[0]
            .state
            .as_ref()
            .and_then(|st| st.waiting.as_ref())
            .and_then(|w| w.reason.as_deref()),
        Some("ContainerCreating")
    );

    let running = s
        .pod_where("job", "Running", Duration::from_secs(10), |p| {
            phase(p) == "Running"
        })
        .await;
    let accepted_at = pending
        .status
        .as_ref()
        .and_then(|st| st.start_time.clone())
        .expect("start time")
        .0;
    let status = running.status.as_ref().expect("status");
    let started_at = status.container_statuses.as_ref().expect("statuses")[0]
        .state
        .as_ref()
        .and_then(|st| st.running.as_ref())
        .and_then(|r| r.started_at.clone())
        .expect("running since")
        .0;
    let start_delay = started_at.duration_since(accepted_at).as_secs_f64();
    assert!(
        (1.0..=4.0).contains(&start_delay),
        "start delay {start_delay} s, want about 2"
    );
    assert_eq!(condition(&running, "Ready").as_deref(), Some("True"));
    let ip = status.pod_ip.as_deref().expect("pod IP");
    assert!(ip.starts_with("10.244."), "{ip}");

    let done = s
        .pod_where("job", "Succeeded", Duration::from_secs(10), |p| {
            phase(p) == "Succeeded"
        })
        .await;
    let t = terminated(&done).expect("terminated");
    assert_eq!((t.exit_code, t.reason.as_deref()), (0, Some("Completed")));
    let ran = t
        .finished_at
        .expect("finished")
        .0
        .duration_since(started_at)
        .as_secs_f64();
    assert!((2.0..=5.0).contains(&ran), "ran {ran} s, want about 3");
    assert_eq!(condition(&done, "Ready").as_deref(), Some("False"));
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_fail_with_exit_code_or_oom_and_ips_are_unique() {
    let s = Setup::start("sim-fail", "e2e/clusters/dev.yaml", SimOptions::default()).await;
    let node = s.sim.node_names()[1].clone();
    s.pod(
        "exit3",
        &node,
        BTreeMap::from([(sim::RUN_SECONDS, "1"), (sim::EXIT_CODE, "3")]),
    )
    .await;
    s.pod(
        "oom",
        &node,
        BTreeMap::from([(sim::RUN_SECONDS, "1"), (sim::OOM, "true")]),
    )
    .await;
    s.pod("forever", &node, BTreeMap::new()).await;

    let failed = s
        .pod_where("exit3", "Failed", Duration::from_secs(15), |p| {
            phase(p) == "Failed"
        })
        .await;
    let t = terminated(&failed).expect("terminated");
    assert_eq!((t.exit_code, t.reason.as_deref()), (3, Some("Error")));
    let oom = s
        .pod_where("oom", "Failed", Duration::from_secs(15), |p| {
            phase(p) == "Failed"
        })
        .await;
    let t = terminated(&oom).expect("terminated");
    assert_eq!((t.exit_code, t.reason.as_deref()), (137, Some("OOMKilled")));

    // Without a run time the pod keeps running.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let forever = s.pods().get("forever").await.expect("pod");
    assert_eq!(phase(&forever), "Running");
    let ips: std::collections::BTreeSet<_> = [&failed, &oom, &forever]
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();
    assert_eq!(ips.len(), 3, "pod IPs {ips:?}");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_request_is_acknowledged_after_its_delay_or_never() {
    let s = Setup::start("sim-ckpt", "e2e/clusters/dev.yaml", SimOptions::default()).await;
    let node = s.sim.node_names()[0].clone();
    s.pod(
        "saver",
        &node,
        BTreeMap::from([(sim::CHECKPOINT_DELAY, "1")]),
    )
    .await;
    s.pod(
        "stuck",
        &node,
        BTreeMap::from([(sim::CHECKPOINT_DELAY, "never")]),
    )
    .await;
    for name in ["saver", "stuck"] {
        s.pod_where(name, "Running", Duration::from_secs(10), |p| {
            phase(p) == "Running"
        })
        .await;
    }
    let requested = Timestamp::now().to_string();
    let patch =
        Patch::Merge(json!({ "metadata": { "annotations": { CHECKPOINT_REQUESTED: requested } } }));
    for name in ["saver", "stuck"] {
        s.pods()
            .patch(name, &PatchParams::default(), &patch)
            .await
            .expect("request checkpoint");
    }
    let asked = Instant::now();
    let saved = s
        .pod_where("saver", "checkpoint-done", Duration::from_secs(10), |p| {
            p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(CHECKPOINT_DONE))
        })
        .await;
    assert!(
        asked.elapsed() >= Duration::from_millis(700),
        "acknowledged after {:?}, want about 1 s",
        asked.elapsed()
    );
    let done: Timestamp = saved.metadata.annotations.as_ref().expect("annotations")
        [CHECKPOINT_DONE]
        .parse()
        .expect("checkpoint-done is RFC 3339");
    assert!(
        done >= requested.parse::<Timestamp>().expect("request time"),
        "done {done} before request {requested}"
    );

    tokio::time::sleep(Duration::from_secs(3)).await;
    let stuck = s.pods().get("stuck").await.expect("pod");
    assert!(
        !stuck
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(CHECKPOINT_DONE)),
        "never means never"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_is_stopped_and_removed_within_the_capped_grace() {
    let s = Setup::start("sim-delete", "e2e/clusters/dev.yaml", SimOptions::default()).await;
    let node = s.sim.node_names()[3].clone();
    s.pod("victim", &node, BTreeMap::new()).await;
    s.pod_where("victim", "Running", Duration::from_secs(10), |p| {
        phase(p) == "Running"
    })
    .await;
    let asked = Instant::now();
    s.pods()
        .delete(
            "victim",
            &DeleteParams {
                grace_period_seconds: Some(30),
                ..Default::default()
            },
        )
        .await
        .expect("delete");
    // Still there, terminating, right after the request (the grace period is honoured) ...
    let terminating = s.pods().get("victim").await.expect("pod still exists");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    // ... and gone after min(30 s, 2 s).
    let pods = s.pods();
    ControlPlane::eventually("the pod to be removed", Duration::from_secs(10), || {
        let pods = pods.clone();
        async move {
            pods.get_opt("victim")
                .await
                .ok()
                .and_then(|p| p.is_none().then_some(()))
        }
    })
    .await;
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "removed after {took:?}, want about 2 s"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_restart_keeps_pod_timers() {
    let keep = SimOptions {
        delete_nodes_on_shutdown: false,
        ..SimOptions::default()
    };
    let s = Setup::start("sim-restart", "e2e/clusters/dev.yaml", keep.clone()).await;
    let node = s.sim.node_names()[0].clone();
    s.pod("steady", &node, BTreeMap::from([(sim::RUN_SECONDS, "6")]))
        .await;
    let running = s
        .pod_where("steady", "Running", Duration::from_secs(10), |p| {
            phase(p) == "Running"
        })
        .await;
    let started_at = running
        .status
        .as_ref()
        .and_then(|st| st.container_statuses.as_ref())
        .expect("statuses")[0]
        .state
        .as_ref()
        .and_then(|st| st.running.as_ref())
        .and_then(|r| r.started_at.clone())
        .expect("running since")
        .0;
    let Setup {
        cp,
        client,
        ns,
        sim,
    } = s;
    let spec = sim.spec().clone();
    sim.shutdown().await.expect("stop");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sim = SimCluster::start_with(client.clone(), spec, SimOptions::default())
        .await
        .expect("restart");
    let s = Setup {
        cp,
        client,
        ns,
        sim,
    };
    let done = s
        .pod_where("steady", "Succeeded", Duration::from_secs(15), |p| {
            phase(p) == "Succeeded"
        })
        .await;
    let finished = terminated(&done)
        .and_then(|t| t.finished_at)
        .expect("finished")
        .0;
    let ran = finished.duration_since(started_at).as_secs_f64();
    assert!(
        (5.0..=8.0).contains(&ran),
        "ran {ran} s across the restart, want about 6"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservation_pods_report_distinct_devices_of_their_node() {
    let s = Setup::start(
        "sim-reserve",
        "e2e/clusters/dev.yaml",
        SimOptions::default(),
    )
    .await;
    let nodes = s.sim.node_names();
    let reservation = |name: &str, node: &str| -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": name, "labels": { RESERVATION_LABEL: "true" } },
            "spec": {
                "nodeName": node,
                "containers": [{ "name": "reserve", "image": "kubetrain-operator",
                                 "args": ["reserve-gpu"],
                                 "resources": { "limits": { GPU: "1" } } }],
            },
        }))
        .expect("pod")
    };
    for (name, node) in [("r-a", &nodes[0]), ("r-b", &nodes[0]), ("r-c", &nodes[1])] {
        s.pods()
            .create(&PostParams::default(), &reservation(name, node))
            .await
            .expect("create reservation");
    }
    s.pod("plain", &nodes[0], BTreeMap::new()).await;
    let device = |p: &Pod| {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RESERVED_DEVICE_ANNOTATION).cloned())
    };
    let mut got = BTreeMap::new();
    for name in ["r-a", "r-b", "r-c"] {
        let pod = s
            .pod_where(name, "reserved device", Duration::from_secs(10), |p| {
                phase(p) == "Running" && device(p).is_some()
            })
            .await;
        got.insert(name, device(&pod).expect("device"));
    }
    // The UUIDs the node's labeler published, lowest index first.
    let mut uuids = Vec::new();
    for node in &nodes[..2] {
        let mut gpus = topology(&s.nodes().get(node).await.expect("node")).gpus;
        gpus.sort_by_key(|g| g.index);
        uuids.push(gpus.into_iter().map(|g| g.uuid).collect::<Vec<_>>());
    }
    let mut first_node = [got["r-a"].clone(), got["r-b"].clone()];
    first_node.sort_by_key(|d| uuids[0].iter().position(|u| u == d));
    assert_eq!(
        first_node.to_vec(),
        uuids[0][..2].to_vec(),
        "the two lowest GPUs of the first node, one each: {got:?}"
    );
    assert_eq!(got["r-c"], uuids[1][0], "the other node's own first GPU");
    let plain = s.pods().get("plain").await.expect("pod");
    assert_eq!(phase(&plain), "Running");
    assert_eq!(device(&plain), None, "only reservations report a device");

    // A finished reservation's device is free again for the next one.
    s.pods()
        .delete("r-a", &DeleteParams::default())
        .await
        .expect("delete");
    ControlPlane::eventually("r-a gone", Duration::from_secs(10), || async {
        s.pods()
            .get_opt("r-a")
            .await
            .ok()
            .and_then(|p| p.is_none().then_some(()))
    })
    .await;
    s.pods()
        .create(&PostParams::default(), &reservation("r-d", &nodes[0]))
        .await
        .expect("create reservation");
    let next = s
        .pod_where("r-d", "reserved device", Duration::from_secs(10), |p| {
            device(p).is_some()
        })
        .await;
    assert_eq!(device(&next), Some(got["r-a"].clone()), "the freed device");
    s.finish().await;
}
