//! Placement that keeps the cluster's rules, with real `kubectl`: GPU nodes tainted
//! `nvidia.com/gpu:NoSchedule` take only jobs that tolerate the taint, a `nodeSelector`
//! keeps a gang on the nodes it selects, and a bound local volume keeps the job on its node.

use std::time::Duration;

use kubetrain_e2e::scenario::Scenario;

const T: Duration = Duration::from_secs(60);

/// A TrainingJob of `replicas` × `gpus` whose pod spec carries `pod_spec` (lines indented
/// eight spaces: tolerations, nodeSelector).
fn job(s: &Scenario, name: &str, queue: &str, replicas: u32, gpus: u32, pod_spec: &str) -> String {
    format!(
        "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  queue: {queue}\n  gpuTypes: [{flavor}]\n  tasks:\n  - name: worker\n    replicas: {replicas}\n    template:\n      spec:\n{pod_spec}        containers:\n        - name: trainer\n          image: trainer:latest\n          resources:\n            limits:\n              nvidia.com/gpu: {gpus}\n",
        ns = s.ns,
        flavor = s.flavor
    )
}

/// Nodes the job's pods are bound to, sorted.
fn nodes_of(s: &Scenario, job: &str) -> Vec<String> {
    let out = s.cp.jsonpath(
        &[
            "pods",
            "-n",
            &s.ns,
            "-l",
            &format!("kubetrain.io/job={job}"),
        ],
        "{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
    );
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tainted_gpu_nodes_take_only_jobs_that_tolerate_the_taint() {
    let s = Scenario::new("taints", 2, 8, 1).await;
    let q = s.tenant("taints", 16, "FIFO", "");
    let nodes = s.sim.node_names();
    for n in &nodes {
        s.cp.kubectl_ok(&["taint", "nodes", n, "nvidia.com/gpu=present:NoSchedule"])
            .expect("taint");
    }
    s.cp.apply(&job(&s, "plain", &q, 1, 8, ""));
    s.cp.apply(&job(
        &s,
        "tolerant",
        &q,
        2,
        8,
        "        tolerations:\n        - key: nvidia.com/gpu\n          operator: Exists\n          effect: NoSchedule\n",
    ));
    s.wait_phase("tolerant", "Running", T).await;
    assert_eq!(nodes_of(&s, "tolerant"), nodes);
    // The plain job never fits, and says which taint keeps it out.
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let (reason, message) = (
            s.job_status(
                "plain",
                "{.status.conditions[?(@.type==\"Admitted\")].reason}",
            ),
            s.job_status(
                "plain",
                "{.status.conditions[?(@.type==\"Admitted\")].message}",
            ),
        );
        if reason == "NeverFits" {
            assert!(
                message.contains("2 nodes have the taint nvidia.com/gpu=present:NoSchedule"),
                "{message}"
            );
            assert_eq!(s.job_status("plain", "{.status.reason}"), "NeverFits");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "plain: {reason} {message}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(nodes_of(&s, "plain").is_empty());
    // Lifting the taint from one node lets it run there once the tolerant job is gone.
    s.cp.kubectl_ok(&["delete", "tj", "tolerant", "-n", &s.ns, "--wait=false"])
        .expect("delete");
    s.cp.kubectl_ok(&["taint", "nodes", &nodes[1], "nvidia.com/gpu-"])
        .expect("untaint");
    s.wait_phase("plain", "Running", T).await;
    assert_eq!(nodes_of(&s, "plain"), [nodes[1].clone()]);
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_selector_keeps_a_gang_in_the_rack_it_selects() {
    // 4 nodes in 2 racks; left to itself, best fit would take the first rack.
    let s = Scenario::new("selector", 4, 8, 2).await;
    let q = s.tenant("selector", 32, "FIFO", "");
    let rack_of = |node: &str| {
        s.cp.jsonpath(
            &["node", node],
            "{.metadata.labels.topology\\.kubernetes\\.io/rack}",
        )
    };
    let nodes = s.sim.node_names();
    let second = rack_of(&nodes[3]);
    assert_ne!(rack_of(&nodes[0]), second);
    s.cp.apply(&job(
        &s,
        "gang",
        &q,
        2,
        8,
        &format!("        nodeSelector:\n          topology.kubernetes.io/rack: {second}\n"),
    ));
    s.wait_phase("gang", "Running", T).await;
    let placed = nodes_of(&s, "gang");
    assert_eq!(placed.len(), 2, "{placed:?}");
    for n in &placed {
        assert_eq!(rack_of(n), second, "{placed:?}");
    }
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_where_its_bound_local_volume_is() {
    // Two empty, equal nodes: left to itself, the job would take the first.
    let s = Scenario::new("volumes", 2, 8, 1).await;
    let q = s.tenant("volumes", 16, "FIFO", "");
    let nodes = s.sim.node_names();
    let pv = format!("{}-local", s.id);
    // A static local volume on the second node, bound to the claim at once (no
    // provisioner; the controller-manager's volume binder binds the pair).
    s.cp.apply(&format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {pv}\nspec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: \"\"\n  local: {{path: /mnt/data}}\n  claimRef: {{namespace: {ns}, name: data}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {{key: kubernetes.io/hostname, operator: In, values: [{node}]}}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: {ns}\nspec:\n  storageClassName: \"\"\n  volumeName: {pv}\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 10Gi}}}}\n",
        ns = s.ns,
        node = nodes[1]
    ));
    let deadline = tokio::time::Instant::now() + T;
    while s
        .cp
        .jsonpath(&["pvc", "data", "-n", &s.ns], "{.status.phase}")
        != "Bound"
    {
        assert!(tokio::time::Instant::now() < deadline, "claim not bound");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    s.cp.apply(&job(
        &s,
        "reader",
        &q,
        1,
        8,
        "        volumes:\n        - name: data\n          persistentVolumeClaim: {claimName: data}\n",
    ));
    s.wait_phase("reader", "Running", T).await;
    assert_eq!(nodes_of(&s, "reader"), [nodes[1].clone()]);
    let _ = s.cp.kubectl(&["delete", "pv", &pv, "--wait=false"]);
    s.finish().await;
}

/// A claim of a `WaitForFirstConsumer` class is bound only when kube-scheduler picks a node
/// for its pod. kubetrain cannot know which nodes its volumes allow, places the job on the
/// first node, kube-scheduler refuses to bind there, and kubetrain rolls the admission back
/// and places the job again without that node, where the volume is: no retry counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_first_consumer_claim_runs_on_its_volumes_node_after_a_rollback() {
    let s = Scenario::new("wffc", 2, 8, 1).await;
    let q = s.tenant("wffc", 16, "FIFO", "");
    let nodes = s.sim.node_names();
    let (class, pv) = (format!("{}-local", s.id), format!("{}-wffc", s.id));
    s.cp.apply(&format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: {class}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {pv}\nspec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: {class}\n  local: {{path: /mnt/data}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {{key: kubernetes.io/hostname, operator: In, values: [{node}]}}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: {ns}\nspec:\n  storageClassName: {class}\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 10Gi}}}}\n",
        ns = s.ns,
        node = nodes[1]
    ));
    s.cp.apply(&job(
        &s,
        "reader",
        &q,
        1,
        8,
        "        volumes:\n        - name: data\n          persistentVolumeClaim: {claimName: data}\n",
    ));
    s.wait_phase("reader", "Running", Duration::from_secs(120))
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while s.job_status("reader", "{.status.startedAt}").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "reader never ran");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(nodes_of(&s, "reader"), [nodes[1].clone()]);
    assert_eq!(
        s.cp.jsonpath(&["pvc", "data", "-n", &s.ns], "{.status.phase}"),
        "Bound"
    );
    // The first placement (the first node) was refused and rolled back, not retried.
    let events = s.events("reader");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "SchedulerRejected" && m.contains(&nodes[0])),
        "{events:?}"
    );
    assert_eq!(s.job_status("reader", "{.status.retries}"), "0");
    assert_eq!(
        s.job_status("reader", "{.status.refusedNodes[0].node}"),
        nodes[0]
    );
    let _ = s.cp.kubectl(&["delete", "pv", &pv, "--wait=false"]);
    let _ =
        s.cp.kubectl(&["delete", "storageclass", &class, "--wait=false"]);
    s.finish().await;
}
