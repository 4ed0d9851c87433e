//! Building blocks for end-to-end scenarios: an isolated corner of the shared control plane.
//!
//! Tests of one binary share the API server and the operator, so each scenario gets its own
//! namespace, its own GPU type (flavor) on its own simulated nodes, and VirtualClusters and
//! Queues with unique names; its jobs name that GPU type, so they land only on its nodes.

use std::time::Duration;

use crate::simnode::{ClusterSpec, SimCluster, SimHandle};
use crate::{ControlPlane, Operator};

pub struct Scenario {
    pub cp: &'static ControlPlane,
    pub ns: String,
    /// Unique suffix for cluster-scoped names.
    pub id: String,
    /// The scenario's GPU type.
    pub flavor: String,
    pub sim: SimHandle,
}

impl Scenario {
    /// A namespace and `nodes` simulated nodes with `gpus` GPUs each (NVSwitch, `racks`
    /// racks), with the shared operator running.
    pub async fn new(name: &str, nodes: u32, gpus: u32, racks: u32) -> Scenario {
        let _ = Operator::shared();
        Self::build(name, nodes, gpus, racks, "nvswitch").await
    }

    /// The same with another GPU topology per node (`nvswitch`, `two-nvlink-groups`,
    /// `pcie-pairs`).
    pub async fn with_topology(
        name: &str,
        nodes: u32,
        gpus: u32,
        racks: u32,
        topology: &str,
    ) -> Scenario {
        let _ = Operator::shared();
        Self::build(name, nodes, gpus, racks, topology).await
    }

    /// For tests that run their own operators.
    pub async fn without_operator(name: &str, nodes: u32, gpus: u32, racks: u32) -> Scenario {
        Self::build(name, nodes, gpus, racks, "nvswitch").await
    }

    /// The same as [`new`](Self::new), its nodes in a zone of their own
    /// (`topology.kubernetes.io/zone`: the scenario's id): the node lifecycle controller
    /// judges a zone's disruption from its own nodes, so faults here leave the other tests'
    /// nodes (all in the unlabelled zone) judged as before.
    pub async fn in_own_zone(name: &str, nodes: u32, gpus: u32) -> Scenario {
        let _ = Operator::shared();
        Self::build_with(name, nodes, gpus, 1, "nvswitch", true).await
    }

    async fn build(name: &str, nodes: u32, gpus: u32, racks: u32, topology: &str) -> Scenario {
        Self::build_with(name, nodes, gpus, racks, topology, false).await
    }

    async fn build_with(
        name: &str,
        nodes: u32,
        gpus: u32,
        racks: u32,
        topology: &str,
        own_zone: bool,
    ) -> Scenario {
        let cp = ControlPlane::shared();
        let ns = cp.namespace(name).await.expect("namespace");
        let id = ns.clone();
        let flavor = format!("SIM-{}", name.to_uppercase());
        let labels = if own_zone {
            format!("  labels:\n    topology.kubernetes.io/zone: {id}\n")
        } else {
            String::new()
        };
        let yaml = format!(
            "name: {id}\nnodeGroups:\n- name: n\n  count: {nodes}\n  racks: {racks}\n  cpu: \"64\"\n  memory: 512Gi\n{labels}  gpu:\n    count: {gpus}\n    product: {flavor}\n    flavor: {flavor}\n    topology: {topology}\n"
        );
        let spec = ClusterSpec::from_yaml(&yaml).expect("cluster spec");
        let client = cp.client().await.expect("client");
        // `KUBETRAIN_SIM_CONCURRENCY`: the simulated kubelet's bound on pods handled at once
        // (by default it grows with the nodes, see `SimOptions::pod_concurrency`); a smaller
        // one shows how much of a measurement is the simulated kubelet's backlog.
        let mut options = crate::simnode::SimOptions::default();
        if let Some(n) = std::env::var("KUBETRAIN_SIM_CONCURRENCY")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            options.pod_concurrency = Some(n.max(1));
        }
        let sim = SimCluster::start_with(client, spec, options)
            .await
            .expect("simulated nodes");
        sim.wait_ready(Duration::from_secs(60))
            .await
            .expect("nodes ready");
        Scenario {
            cp,
            ns,
            id,
            flavor,
            sim,
        }
    }

    /// A VirtualCluster owning this scenario's namespace (plus `extra_namespaces`), named
    /// `<vc>-<id>`, with `guarantee` GPUs of the scenario's flavor, and one Queue
    /// `<vc>-<id>` with `policy`.
    pub fn tenant(&self, vc: &str, guarantee: u32, policy: &str, extra: &str) -> String {
        let name = format!("{vc}-{}", self.id);
        self.cp.apply(&format!(
            "apiVersion: kubetrain.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: {name}\nspec:\n  namespaces: [{ns}]\n  guarantee:\n  - flavor: {flavor}\n    gpus: {guarantee}\n{extra}---\napiVersion: kubetrain.io/v1alpha1\nkind: Queue\nmetadata:\n  name: {name}\nspec:\n  virtualCluster: {name}\n  policy: {policy}\n",
            ns = self.ns,
            flavor = self.flavor
        ));
        name
    }

    /// A TrainingJob manifest: `replicas` × `gpus` in `queue`, with simulation annotations
    /// (`run-seconds`, `exit-code`, ...) and extra spec lines (indented two spaces).
    pub fn job(
        &self,
        name: &str,
        queue: &str,
        replicas: u32,
        gpus: u32,
        sim: &[(&str, &str)],
        extra_spec: &str,
    ) -> String {
        let ann: String = sim
            .iter()
            .map(|(k, v)| format!("          sim.kubetrain.io/{k}: \"{v}\"\n"))
            .collect();
        let ann = if ann.is_empty() {
            String::new()
        } else {
            format!("        annotations:\n{ann}")
        };
        format!(
            "apiVersion: kubetrain.io/v1alpha1\nkind: TrainingJob\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  queue: {queue}\n  gpuTypes: [{flavor}]\n{extra_spec}  tasks:\n  - name: worker\n    replicas: {replicas}\n    template:\n      metadata:\n{ann}        labels: {{app: test}}\n      spec:\n        containers:\n        - name: trainer\n          image: trainer:latest\n          resources:\n            limits:\n              nvidia.com/gpu: {gpus}\n",
            ns = self.ns,
            flavor = self.flavor
        )
    }

    /// `.status.<field>` of a job.
    pub fn job_status(&self, job: &str, path: &str) -> String {
        self.cp.jsonpath(&["tj", job, "-n", &self.ns], path)
    }

    /// Waits for a job to reach `phase`, failing with its status after `timeout`. `Running`
    /// is the phase once every replica runs (`Starting` before), so a job seen `Running` has
    /// started, and a preemption of it checkpoints.
    pub async fn wait_phase(&self, job: &str, phase: &str, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let now = self.job_status(job, "{.status.phase}");
            if now == phase {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                let status = self.job_status(job, "{.status}");
                let pods = self.cp.jsonpath(
                    &["pods", "-n", &self.ns, "-l", &format!("kubetrain.io/job={job}")],
                    "{range .items[*]}{.metadata.name} {.status.phase} {.metadata.annotations} {.status.containerStatuses}{\"\\n\"}{end}",
                );
                panic!(
                    "job {job} is {now:?}, not {phase:?}, after {timeout:?}; status: {status}\npods:\n{pods}"
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Names of the job's pods that exist now.
    pub fn pods_of(&self, job: &str) -> Vec<String> {
        let out = self.cp.jsonpath(
            &[
                "pods",
                "-n",
                &self.ns,
                "-l",
                &format!("kubetrain.io/job={job}"),
            ],
            "{range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        );
        out.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Reasons of the Events about a job, oldest first.
    pub fn event_reasons(&self, job: &str) -> Vec<String> {
        self.events(job)
            .into_iter()
            .map(|(reason, _)| reason)
            .collect()
    }

    /// `(reason, message)` of the job's Events, oldest first.
    pub fn events(&self, job: &str) -> Vec<(String, String)> {
        let out = self.cp.jsonpath(
            &[
                "events",
                "-n",
                &self.ns,
                "--field-selector",
                &format!("involvedObject.kind=TrainingJob,involvedObject.name={job}"),
                "--sort-by=.metadata.creationTimestamp",
            ],
            "{range .items[*]}{.reason}{\"\\t\"}{.message}{\"\\n\"}{end}",
        );
        out.lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(r, m)| (r.to_string(), m.to_string()))
            .collect()
    }

    /// Records one line of timings for this scenario (printed at the end of `make test`).
    pub fn timing(&self, line: &str) {
        crate::timing(line);
    }

    /// Cleans up: deletes the namespace and stops the simulated nodes.
    pub async fn finish(self) {
        let _ = self.cp.delete_namespace(&self.ns).await;
        let _ = self.sim.shutdown().await;
    }
}
