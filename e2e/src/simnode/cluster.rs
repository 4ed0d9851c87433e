//! The cluster description: node groups read from YAML, expanded into one [`SimNode`] per node.
//!
//! ```yaml
//! name: dev                      # cluster name: node names and the sim.kubetrain.io/cluster label
//! nodeGroups:
//!   - name: a100                 # nodes are <cluster>-<group>-<i> unless namePrefix is given
//!     count: 4
//!     racks: 2                   # nodes spread over racks in contiguous blocks
//!     cpu: "128"                 # Kubernetes quantities; defaults 64 and 512Gi
//!     memory: 1Ti
//!     gpu:
//!       count: 8
//!       product: NVIDIA A100-SXM4-80GB   # as NVML names it; the flavor label is sanitised
//!       memoryMib: 81920
//!       topology: nvswitch       # nvswitch | two-nvlink-groups | pcie-pairs
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Error;
use super::topology::{TopologyKind, build_topology, gpu_labels};
use kubetrain::api::NodeTopology;
use kubetrain::api::node_labels;

/// A simulated cluster: named groups of identical nodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// Cluster name: the default node-name prefix and the value of the
    /// `sim.kubetrain.io/cluster` label on every node.
    pub name: String,
    /// The node groups.
    pub node_groups: Vec<NodeGroup>,
}

/// A group of identical nodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeGroup {
    /// Group name (part of the default node names).
    pub name: String,
    /// Number of nodes.
    pub count: u32,
    /// Node names are `<namePrefix><i>`; default `<cluster>-<group>-`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// Number of racks the nodes are spread over (contiguous blocks); 0 means no rack label.
    #[serde(default = "one")]
    pub racks: u32,
    /// Rack names are `<rackPrefix><k>`; default `<cluster>-rack-` (so groups share racks
    /// unless they say otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_prefix: Option<String>,
    /// CPU capacity (a Kubernetes quantity).
    #[serde(default = "default_cpu")]
    pub cpu: String,
    /// Memory capacity (a Kubernetes quantity).
    #[serde(default = "default_memory")]
    pub memory: String,
    /// Pod capacity.
    #[serde(default = "default_pods")]
    pub pods: u32,
    /// GPUs of each node; absent for CPU-only nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSpec>,
    /// Extra node labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The GPUs of each node of a group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuSpec {
    /// GPUs per node.
    pub count: u32,
    /// Product name as NVML reports it, for example `NVIDIA A100-SXM4-80GB`.
    pub product: String,
    /// Flavor label value; default: the product sanitised for a label value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    /// Memory per GPU in MiB; default: read from a `NNGB` in the product name, else 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// How the GPUs of a node are connected.
    #[serde(default)]
    pub topology: TopologyKind,
}

fn one() -> u32 {
    1
}
fn default_cpu() -> String {
    "64".into()
}
fn default_memory() -> String {
    "512Gi".into()
}
fn default_pods() -> u32 {
    110
}

/// One node as the agent publishes it (before faults).
#[derive(Clone, Debug, PartialEq)]
pub struct SimNode {
    /// Node name.
    pub name: String,
    /// Position of the node in the whole cluster (0-based), used for its fake address.
    pub ordinal: u32,
    /// Labels the agent owns on the node.
    pub labels: BTreeMap<String, String>,
    /// CPU capacity.
    pub cpu: String,
    /// Memory capacity.
    pub memory: String,
    /// Pod capacity.
    pub pods: u32,
    /// The topology annotation with every GPU healthy; `None` on CPU-only nodes.
    pub topology: Option<NodeTopology>,
    /// Fake InternalIP of the node (172.16.0.0/12).
    pub address: String,
}

impl SimNode {
    /// Number of GPUs.
    pub fn gpus(&self) -> u32 {
        self.topology.as_ref().map_or(0, |t| t.gpus.len() as u32)
    }
}

/// Label on every node the agent manages.
pub const SIMULATED_LABEL: &str = "kubetrain.io/simulated";
/// Label with the [`ClusterSpec::name`] of the cluster a node belongs to.
pub const CLUSTER_LABEL: &str = "sim.kubetrain.io/cluster";

impl ClusterSpec {
    /// Parses and validates a cluster description.
    pub fn from_yaml(yaml: &str) -> Result<ClusterSpec, Error> {
        let spec: ClusterSpec =
            serde_norway::from_str(yaml).map_err(|e| Error::Spec(e.to_string()))?;
        spec.validate()?;
        Ok(spec)
    }

    /// Reads a cluster description file; a relative path is taken from the repository root
    /// (so `e2e/clusters/dev.yaml` works from tests and from the repository).
    pub fn from_file(path: impl AsRef<Path>) -> Result<ClusterSpec, Error> {
        let path = path.as_ref();
        let path = if path.is_relative() && !path.exists() {
            crate::repo_root().join(path)
        } else {
            path.to_path_buf()
        };
        let yaml = std::fs::read_to_string(&path)
            .map_err(|e| Error::Spec(format!("{}: {e}", path.display())))?;
        Self::from_yaml(&yaml).map_err(|e| Error::Spec(format!("{}: {e}", path.display())))
    }

    /// A cluster of one group (builder for tests).
    pub fn single(name: &str, group: NodeGroup) -> ClusterSpec {
        ClusterSpec {
            name: name.into(),
            node_groups: vec![group],
        }
    }

    /// The same cluster under another name. Node names and racks that follow the default
    /// pattern change with it, which is how parallel tests sharing one API server keep
    /// their nodes apart (`spec.named(&namespace)`).
    pub fn named(mut self, name: &str) -> ClusterSpec {
        self.name = name.into();
        self
    }

    /// Checks names, counts and topology shapes.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Spec(m));
        if !is_dns_label(&self.name) {
            return bad(format!("cluster name {:?} is not a DNS label", self.name));
        }
        let mut groups = BTreeSet::new();
        for g in &self.node_groups {
            if !is_dns_label(&g.name) {
                return bad(format!("group name {:?} is not a DNS label", g.name));
            }
            if !groups.insert(&g.name) {
                return bad(format!("group {} appears twice", g.name));
            }
            if g.racks > g.count.max(1) {
                return bad(format!(
                    "group {}: more racks ({}) than nodes",
                    g.name, g.racks
                ));
            }
            if let Some(gpu) = &g.gpu {
                if gpu.count == 0 {
                    return bad(format!(
                        "group {}: gpu.count must be > 0 (omit gpu)",
                        g.name
                    ));
                }
                if gpu.product.trim().is_empty() {
                    return bad(format!("group {}: gpu.product is empty", g.name));
                }
                gpu.topology
                    .check(gpu.count)
                    .map_err(|m| Error::Spec(format!("group {}: {m}", g.name)))?;
                if let Some(f) = &gpu.flavor
                    && (f.is_empty() || node_labels::sanitize_value(f) != *f)
                {
                    return bad(format!(
                        "group {}: flavor {f:?} is not a label value",
                        g.name
                    ));
                }
            }
        }
        let mut names = BTreeSet::new();
        for n in self.nodes() {
            if n.name.len() > 253 || !n.name.split('.').all(is_dns_label) {
                return bad(format!("node name {:?} is not a DNS subdomain", n.name));
            }
            if !names.insert(n.name.clone()) {
                return bad(format!("node name {} appears twice", n.name));
            }
        }
        Ok(())
    }

    /// Every node of the cluster, group by group.
    pub fn nodes(&self) -> Vec<SimNode> {
        let mut out = Vec::new();
        let mut ordinal = 0u32;
        for g in &self.node_groups {
            let prefix = g
                .name_prefix
                .clone()
                .unwrap_or_else(|| format!("{}-{}-", self.name, g.name));
            let rack_prefix = g
                .rack_prefix
                .clone()
                .unwrap_or_else(|| format!("{}-rack-", self.name));
            for i in 0..g.count {
                let name = format!("{prefix}{i}");
                let rack = (g.racks > 0).then(|| {
                    format!(
                        "{rack_prefix}{}",
                        u64::from(i) * u64::from(g.racks) / u64::from(g.count)
                    )
                });
                let mut labels = g.labels.clone();
                labels.insert("kubernetes.io/hostname".into(), name.clone());
                labels.insert("kubernetes.io/os".into(), "linux".into());
                labels.insert("kubernetes.io/arch".into(), "amd64".into());
                labels.insert(SIMULATED_LABEL.into(), "true".into());
                labels.insert(CLUSTER_LABEL.into(), self.name.clone());
                labels.insert("sim.kubetrain.io/group".into(), g.name.clone());
                if let Some(rack) = &rack {
                    labels.insert(kubetrain::api::annotations::RACK_LABEL.into(), rack.clone());
                }
                // GPU nodes carry what the node labeler publishes from their readings
                // (CPU-only nodes have no labeler, as on a real cluster).
                let topology = g.gpu.as_ref().map(|gpu| {
                    let memory = gpu
                        .memory_mib
                        .unwrap_or_else(|| memory_from_product(&gpu.product));
                    let topology = build_topology(
                        &name,
                        gpu.topology,
                        gpu.count,
                        &gpu.product,
                        memory,
                        rack.clone(),
                    );
                    labels.extend(gpu_labels(&topology));
                    if let Some(flavor) = &gpu.flavor {
                        labels.insert(node_labels::PRODUCT.into(), flavor.clone());
                    }
                    topology
                });
                out.push(SimNode {
                    address: {
                        let o = ordinal + 1;
                        format!(
                            "172.{}.{}.{}",
                            16 + (o >> 16) % 16,
                            (o >> 8) & 0xff,
                            o & 0xff
                        )
                    },
                    name,
                    ordinal,
                    labels,
                    cpu: g.cpu.clone(),
                    memory: g.memory.clone(),
                    pods: g.pods,
                    topology,
                });
                ordinal += 1;
            }
        }
        out
    }
}

impl NodeGroup {
    /// A group of `count` nodes with `gpus` GPUs of `product` each, NVSwitch-connected, in
    /// one rack (builder for tests; set the other fields directly).
    pub fn gpu_nodes(name: &str, count: u32, gpus: u32, product: &str) -> NodeGroup {
        NodeGroup {
            name: name.into(),
            count,
            name_prefix: None,
            racks: 1,
            rack_prefix: None,
            cpu: default_cpu(),
            memory: default_memory(),
            pods: default_pods(),
            gpu: Some(GpuSpec {
                count: gpus,
                product: product.into(),
                flavor: None,
                memory_mib: None,
                topology: TopologyKind::NvSwitch,
            }),
            labels: BTreeMap::new(),
        }
    }
}

/// `80GB` in a product name → 81920 MiB; 0 when the name carries no size.
fn memory_from_product(product: &str) -> u64 {
    product
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| w.strip_suffix("GB"))
        .filter_map(|n| n.parse::<u64>().ok())
        .next()
        .map_or(0, |gb| gb * 1024)
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memory_from_products() {
        assert_eq!(memory_from_product("NVIDIA A100-SXM4-80GB"), 81920);
        assert_eq!(memory_from_product("Tesla T4"), 0);
    }

    #[test]
    fn expands_groups_into_racks() {
        let spec = ClusterSpec::from_yaml(
            "name: t\nnodeGroups:\n- name: a\n  count: 4\n  racks: 2\n  gpu: {count: 8, product: NVIDIA A100-SXM4-80GB}\n- name: cpu\n  count: 1\n",
        )
        .unwrap();
        let nodes = spec.nodes();
        assert_eq!(nodes.len(), 5);
        assert_eq!(nodes[0].name, "t-a-0");
        let racks: Vec<_> = nodes[..4]
            .iter()
            .map(|n| n.labels[kubetrain::api::annotations::RACK_LABEL].clone())
            .collect();
        assert_eq!(racks, ["t-rack-0", "t-rack-0", "t-rack-1", "t-rack-1"]);
        assert_eq!(
            nodes[0].labels[kubetrain::api::annotations::PRODUCT_LABEL],
            "NVIDIA-A100-SXM4-80GB"
        );
        assert_eq!(nodes[0].gpus(), 8);
        assert_eq!(nodes[4].gpus(), 0);
        assert!(!nodes[4].labels.contains_key(node_labels::PRESENT));
        assert_eq!(nodes[0].labels[node_labels::COUNT], "8");
        assert_eq!(nodes[0].labels[node_labels::MEMORY_MIB], "81920");
        assert_eq!(nodes[0].labels[node_labels::NVLINK], "true");
        let addresses: BTreeSet<_> = nodes.iter().map(|n| n.address.clone()).collect();
        assert_eq!(addresses.len(), 5);
    }

    #[test]
    fn shipped_descriptions_parse() {
        let dev = ClusterSpec::from_yaml(include_str!("../../clusters/dev.yaml")).unwrap();
        let nodes = dev.nodes();
        assert_eq!(nodes.len(), 4);
        assert!(nodes.iter().all(|n| n.gpus() == 8));
        let racks: BTreeSet<_> = nodes
            .iter()
            .map(|n| n.labels[kubetrain::api::annotations::RACK_LABEL].clone())
            .collect();
        assert_eq!(racks.len(), 2);
        let mixed = ClusterSpec::from_yaml(include_str!("../../clusters/mixed.yaml")).unwrap();
        assert_eq!(mixed.nodes().len(), 7);
    }

    #[test]
    fn rejects_bad_specs() {
        assert!(ClusterSpec::from_yaml("name: Bad\nnodeGroups: []\n").is_err());
        assert!(
            ClusterSpec::from_yaml("name: t\nnodeGroups:\n- {name: a, count: 1, racks: 2}\n")
                .is_err()
        );
        assert!(
            ClusterSpec::from_yaml(
                "name: t\nnodeGroups:\n- {name: a, count: 1, gpu: {count: 3, product: x, topology: pcie-pairs}}\n"
            )
            .is_err()
        );
        assert!(
            ClusterSpec::from_yaml("name: t\nnodeGroups:\n- {name: a, count: 1, typo: 1}\n")
                .is_err()
        );
    }
}
