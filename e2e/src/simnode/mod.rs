//! Simulated GPU nodes, in the spirit of kwok: Node objects from a [`ClusterSpec`], kept Ready
//! with Lease and status heartbeats, and a fake kubelet for the pods bound to them.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), kubetrain_e2e::simnode::Error> {
//! use kubetrain_e2e::simnode::{ClusterSpec, NodeFault, SimCluster};
//! let spec = ClusterSpec::from_file("e2e/clusters/dev.yaml")?.named("my-test");
//! let sim = SimCluster::start(client, spec).await?; // nodes exist and heartbeat from here on
//! sim.wait_ready(std::time::Duration::from_secs(30)).await?; // controller-manager lifted taints
//! let node = &sim.node_names()[0];
//! sim.set_gpu_unhealthy(node, 3, "XID 79").await?;
//! sim.set_node_fault(node, NodeFault::NotReady).await?;
//! sim.restore_node(node).await?;
//! sim.shutdown().await?; // stops the agent and deletes its nodes
//! # Ok(()) }
//! ```
//!
//! Pods whose `spec.nodeName` is one of the cluster's nodes go Pending → Running after a start
//! delay, then Succeeded / Failed / OOMKilled as their `sim.kubetrain.io/*` annotations
//! (`kubetrain::api::annotations::sim`) direct; see [`pods`] for the details, [`faults`] for
//! fault injection and [`cluster`] for the YAML format. The same agent runs as the
//! `kubetrain-simnodes` binary.

pub mod cluster;
pub mod faults;
mod nodes;
pub mod pods;
pub mod topology;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::Api;
use tokio::task::JoinSet;

pub use cluster::{ClusterSpec, GpuSpec, NodeGroup, SimNode};
pub use faults::NodeFault;
pub use topology::TopologyKind;

/// Errors of the simulated-node agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster description is unreadable or inconsistent.
    #[error("cluster description: {0}")]
    Spec(String),
    /// An API call failed.
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    /// Something did not happen in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A node name that is not one of this agent's.
    #[error("node {0} is not managed by this simulated cluster")]
    UnknownNode(String),
}

/// How the agent behaves. The defaults suit tests against the local control plane.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Lease renewal period of each node (a kubelet's is 10 s); nodes are spread over it.
    pub heartbeat_interval: Duration,
    /// How often each node's unchanged status (Ready condition) is re-posted, as a kubelet's
    /// `nodeStatusReportFrequency` (5 min). The Lease is what keeps a node Ready for the
    /// controller-manager; a status that is not what it should be is posted at once.
    pub node_status_interval: Duration,
    /// Pending → Running delay when the pod has no `sim.kubetrain.io/start-seconds`.
    pub start_delay: Duration,
    /// Checkpoint acknowledgement delay without `sim.kubetrain.io/checkpoint-delay-seconds`.
    pub checkpoint_delay: Duration,
    /// Cap on the termination grace period honoured before a deleted pod is removed
    /// (a pod deleted with `gracePeriodSeconds: 30` is gone after this long).
    pub max_termination_grace: Duration,
    /// Bound on concurrent API calls for node creates and deletes, and the least bound for
    /// heartbeats and pods (see [`SimOptions::heartbeats_at_once`] and
    /// [`SimOptions::pods_at_once`]).
    pub concurrency: usize,
    /// Bound on pods handled at once (each reconcile makes about one API call). `None`: one
    /// per two nodes, at least `concurrency` and at most [`MAX_POD_CONCURRENCY`]. One agent
    /// plays every node's kubelet; with a fixed bound, a cluster of hundreds of nodes started,
    /// checkpointed and stopped its pods behind one shared backlog (tens of seconds at 300
    /// nodes with 16) that real kubelets, one per node, do not have.
    pub pod_concurrency: Option<usize>,
    /// Whether [`SimHandle::shutdown`] deletes the nodes (and their Leases).
    pub delete_nodes_on_shutdown: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            heartbeat_interval: Duration::from_secs(10),
            node_status_interval: Duration::from_secs(300),
            start_delay: Duration::from_secs(1),
            checkpoint_delay: Duration::from_secs(2),
            max_termination_grace: Duration::from_secs(2),
            concurrency: 16,
            pod_concurrency: None,
            delete_nodes_on_shutdown: true,
        }
    }
}

/// Most pods the agent handles at once by default: well under the API server's default of
/// 200 mutating requests in flight.
pub const MAX_POD_CONCURRENCY: usize = 128;

/// Most heartbeats the agent has in flight by default.
pub const MAX_HEARTBEAT_CONCURRENCY: usize = 100;

impl SimOptions {
    /// The bound on heartbeats in flight for a cluster of `nodes` nodes: one per ten nodes,
    /// at least `concurrency`, at most [`MAX_HEARTBEAT_CONCURRENCY`]. Real kubelets renew
    /// their Leases each on its own; with a fixed bound of 16, 1,000 nodes' renewals (100 a
    /// second) fell behind the controller-manager's grace once the API server answered in
    /// more than about 160 ms, and nodes were tainted for the agent's backlog.
    pub fn heartbeats_at_once(&self, nodes: usize) -> usize {
        self.grown(nodes / 10, MAX_HEARTBEAT_CONCURRENCY)
    }

    /// The bound on pods handled at once for a cluster of `nodes` nodes.
    pub fn pods_at_once(&self, nodes: usize) -> usize {
        self.pod_concurrency
            .unwrap_or_else(|| self.grown(nodes / 2, MAX_POD_CONCURRENCY))
            .max(1)
    }

    /// A bound that grows with the cluster (`share` of its nodes): at least `concurrency`,
    /// at most `max` unless `concurrency` is larger.
    fn grown(&self, share: usize, max: usize) -> usize {
        let floor = self.concurrency.max(1);
        share.clamp(floor, max.max(floor))
    }
}

/// State shared by the agent's tasks.
pub(crate) struct Agent {
    pub(crate) client: Client,
    pub(crate) options: SimOptions,
    pub(crate) nodes: HashMap<String, Arc<SimNode>>,
    pub(crate) node_store: kube::runtime::reflector::Store<Node>,
}

/// Deletes nodes and their Leases by name (absent ones are fine): cleans up after an agent
/// that left its nodes behind.
pub async fn delete_nodes(client: &Client, names: &[String]) -> Result<(), Error> {
    nodes::delete_nodes(client, names, SimOptions::default().concurrency).await
}

/// Starts simulated clusters.
pub struct SimCluster;

impl SimCluster {
    /// Creates (or adopts) the nodes of `spec` and starts the agent with default options.
    pub async fn start(client: Client, spec: ClusterSpec) -> Result<SimHandle, Error> {
        Self::start_with(client, spec, SimOptions::default()).await
    }

    /// Creates (or adopts) the nodes of `spec` and starts the agent as tokio tasks of this
    /// process. Returns once every node exists with its status and Lease.
    pub async fn start_with(
        client: Client,
        spec: ClusterSpec,
        options: SimOptions,
    ) -> Result<SimHandle, Error> {
        spec.validate()?;
        let sim_nodes: Vec<SimNode> = spec.nodes();
        nodes::ensure_nodes(&client, &sim_nodes, options.concurrency).await?;

        let (node_store, node_events) = nodes::watch_nodes(&client, &spec.name);
        let agent = Arc::new(Agent {
            client: client.clone(),
            options,
            nodes: sim_nodes
                .into_iter()
                .map(|n| (n.name.clone(), Arc::new(n)))
                .collect(),
            node_store,
        });
        let mut tasks = JoinSet::new();
        tasks.spawn(nodes::follow_faults(agent.clone(), node_events));
        tokio::time::timeout(Duration::from_secs(60), agent.node_store.wait_until_ready())
            .await
            .map_err(|_| Error::Timeout("listing the simulated nodes".into()))?
            .map_err(|_| Error::Timeout("node watch ended".into()))?;
        tasks.spawn(nodes::heartbeats(agent.clone()));
        tasks.spawn(pods::run(agent.clone()));
        tracing::info!(cluster = %spec.name, nodes = agent.nodes.len(), "simulated cluster started");
        Ok(SimHandle { agent, tasks, spec })
    }
}

/// A running simulated cluster. Dropping it stops the agent (leaving the nodes, which then
/// go NotReady); [`SimHandle::shutdown`] stops it and, by default, deletes the nodes.
pub struct SimHandle {
    agent: Arc<Agent>,
    tasks: JoinSet<()>,
    spec: ClusterSpec,
}

impl SimHandle {
    /// The cluster description.
    pub fn spec(&self) -> &ClusterSpec {
        &self.spec
    }

    /// Names of the simulated nodes, in the order of the description.
    pub fn node_names(&self) -> Vec<String> {
        self.spec.nodes().into_iter().map(|n| n.name).collect()
    }

    fn check_node(&self, node: &str) -> Result<(), Error> {
        if self.agent.nodes.contains_key(node) {
            Ok(())
        } else {
            Err(Error::UnknownNode(node.into()))
        }
    }

    /// Waits until every node is `Ready=True` and free of the `not-ready` / `unreachable`
    /// taints (new nodes carry `node.kubernetes.io/not-ready:NoSchedule` until the
    /// controller-manager sees them Ready).
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), Error> {
        let api: Api<Node> = Api::all(self.agent.client.clone());
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut waiting = None;
            for name in self.agent.nodes.keys() {
                let node = api.get(name).await?;
                if !nodes::is_ready_and_untainted(&node) {
                    waiting = Some(name.clone());
                    break;
                }
            }
            match waiting {
                None => return Ok(()),
                Some(name) if tokio::time::Instant::now() > deadline => {
                    return Err(Error::Timeout(format!(
                        "node {name} to be Ready and untainted"
                    )));
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }

    /// Injects a whole-node fault; returns once the node shows it (for `NotReady`, once
    /// `Ready=False` is posted).
    pub async fn set_node_fault(&self, node: &str, fault: NodeFault) -> Result<(), Error> {
        self.check_node(node)?;
        faults::set_node_fault(&self.agent.client, node, Some(fault)).await?;
        if fault == NodeFault::NotReady {
            self.wait_node(node, "Ready=False", |n| {
                nodes::ready_status(n).as_deref() == Some("False")
            })
            .await?;
        }
        Ok(())
    }

    /// Turns GPU `gpu` of `node` unhealthy; returns once the topology annotation and the
    /// allocatable `nvidia.com/gpu` show it.
    pub async fn set_gpu_unhealthy(&self, node: &str, gpu: u32, reason: &str) -> Result<(), Error> {
        self.check_node(node)?;
        faults::set_gpu_health(&self.agent.client, node, gpu, Some(reason)).await?;
        self.wait_node(node, "the GPU fault to be published", |n| {
            nodes::faults_published(n)
        })
        .await
    }

    /// Turns GPU `gpu` of `node` healthy again; returns once published.
    pub async fn set_gpu_healthy(&self, node: &str, gpu: u32) -> Result<(), Error> {
        self.check_node(node)?;
        faults::set_gpu_health(&self.agent.client, node, gpu, None).await?;
        self.wait_node(node, "the GPU repair to be published", |n| {
            nodes::faults_published(n)
        })
        .await
    }

    /// Clears every fault of `node`; returns once it reports Ready with all GPUs healthy.
    pub async fn restore_node(&self, node: &str) -> Result<(), Error> {
        self.check_node(node)?;
        faults::restore(&self.agent.client, node).await?;
        self.wait_node(node, "Ready=True with every GPU healthy", |n| {
            nodes::ready_status(n).as_deref() == Some("True") && nodes::faults_published(n)
        })
        .await
    }

    async fn wait_node(
        &self,
        node: &str,
        what: &str,
        check: impl Fn(&Node) -> bool,
    ) -> Result<(), Error> {
        let api: Api<Node> = Api::all(self.agent.client.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if check(&api.get(node).await?) {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout(format!("node {node}: {what}")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the agent; deletes the nodes and their Leases when
    /// [`SimOptions::delete_nodes_on_shutdown`] is set (the default).
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.tasks.shutdown().await;
        if self.agent.options.delete_nodes_on_shutdown {
            let names: Vec<String> = self.agent.nodes.keys().cloned().collect();
            nodes::delete_nodes(&self.agent.client, &names, self.agent.options.concurrency).await?;
        }
        tracing::info!(cluster = %self.spec.name, "simulated cluster stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_at_once_grows_with_the_cluster_within_bounds() {
        let o = SimOptions::default();
        assert_eq!(o.pods_at_once(4), 16, "never below the heartbeat bound");
        assert_eq!(o.pods_at_once(100), 50);
        assert_eq!(o.pods_at_once(1000), MAX_POD_CONCURRENCY);
        let fixed = SimOptions {
            pod_concurrency: Some(3),
            ..SimOptions::default()
        };
        assert_eq!(fixed.pods_at_once(1000), 3, "an explicit bound wins");
        let wide = SimOptions {
            concurrency: 200,
            ..SimOptions::default()
        };
        assert_eq!(wide.pods_at_once(10), 200);
    }

    #[test]
    fn heartbeats_at_once_grow_with_the_cluster_within_bounds() {
        let o = SimOptions::default();
        assert_eq!(o.heartbeats_at_once(4), 16);
        assert_eq!(o.heartbeats_at_once(500), 50);
        assert_eq!(o.heartbeats_at_once(1000), MAX_HEARTBEAT_CONCURRENCY);
        assert_eq!(o.heartbeats_at_once(100_000), MAX_HEARTBEAT_CONCURRENCY);
        let wide = SimOptions {
            concurrency: 200,
            ..SimOptions::default()
        };
        assert_eq!(wide.heartbeats_at_once(10), 200);
    }
}
