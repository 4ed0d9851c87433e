//! The node topology annotation: written by the node labeler, read by the operator.
//!
//! One versioned JSON document in the annotation [`TOPOLOGY_ANNOTATION`] on each Node. The
//! operator turns it into the scheduling core's own model; nobody else defines it.
//!
//! Compatibility: fields are only ever added, each with a default, so a reader of version 1
//! reads what a newer labeler of version 1 writes. A change that old readers would
//! misunderstand bumps [`TOPOLOGY_VERSION`], and [`NodeTopology::parse`] rejects versions it
//! does not know rather than guess.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::mig::{MigDevice, MigProfile};

/// Annotation on a Node holding its [`NodeTopology`] as JSON.
pub const TOPOLOGY_ANNOTATION: &str = "gpu.kubetrain.io/topology";
/// Current version of the [`NodeTopology`] document.
pub const TOPOLOGY_VERSION: u32 = 1;

/// The GPUs of one node and how they are connected.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeTopology {
    /// Document version; readers reject versions they do not know.
    pub version: u32,
    /// GPU product name as NVML reports it (for example `NVIDIA H100 80GB HBM3`); when the
    /// GPUs of a node differ, the product most of them have.
    #[serde(default)]
    pub product: String,
    /// NVIDIA driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports (for example `12.4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// Rack of the node, copied from a node label, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// The GPUs.
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    /// GPU groups: sets of GPUs joined by NVLink (cliques) or under one PCIe switch. Every
    /// GPU is in exactly one group.
    #[serde(default)]
    pub groups: Vec<GpuGroup>,
    /// Per pair of GPUs, how they are connected (only pairs with `a < b`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<GpuLink>,
}

/// One GPU.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GpuInfo {
    /// NVML index of the GPU on the node.
    pub index: u32,
    /// GPU UUID.
    #[serde(default)]
    pub uuid: String,
    /// Product name.
    #[serde(default)]
    pub product: String,
    /// Memory in MiB.
    #[serde(default)]
    pub memory_mib: u64,
    /// CUDA compute capability, for example `9.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// Whether MIG mode is enabled.
    #[serde(default)]
    pub mig_enabled: bool,
    /// NUMA node (socket) the GPU is attached to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// CPU-locality domain of the GPU, numbered from 0 on each node: GPUs with the same
    /// `socket` share a NUMA node (or, where NUMA is not reported, the same CPU affinity).
    /// This is the socket level of the scheduler's topology tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// CPUs close to the GPU, as a Linux CPU list (for example `0-15,32-47`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_affinity: Option<String>,
    /// PCIe bus id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// False when the GPU had uncorrectable ECC errors, pending page retirement or a
    /// critical XID event; the scheduler does not place work on it.
    #[serde(default = "default_true")]
    pub healthy: bool,
    /// Why the GPU is unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_reason: Option<String>,
    /// Critical XID errors seen on this GPU since the labeler started (application-caused
    /// XIDs such as 13, 31 and 43 are not listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xids: Vec<u64>,
    /// The MIG devices the GPU is partitioned into (only when `migEnabled`), in MIG device
    /// index order. A MIG-enabled GPU without any is not partitioned yet: nothing can run
    /// on it until an admin creates instances.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigDevice>,
}

impl GpuInfo {
    /// The PCIe bus id without its domain padding differences, for matching ids that come
    /// from different sources (`00000000:07:00.0` and `0000:07:00.0` are the same device).
    pub fn normalized_bus_id(&self) -> Option<String> {
        self.pci_bus_id.as_deref().map(normalize_pci_bus_id)
    }
}

/// Normalises a PCIe bus id to `dddd:bb:dd.f` in lower case; ids NVML reports carry an
/// 8-digit domain, sysfs and other tools a 4-digit one.
pub fn normalize_pci_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) if rest.contains(':') => {
            let domain = domain.trim_start_matches('0');
            format!("{:0>4}:{rest}", domain)
        }
        _ => id,
    }
}

fn default_true() -> bool {
    true
}

/// A set of closely connected GPUs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GpuGroup {
    /// GPU indices in the group.
    pub gpus: Vec<u32>,
    /// True when every pair in the group is joined by NVLink (or NVSwitch).
    #[serde(default)]
    pub nvlink: bool,
    /// NUMA node (socket) of the group, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// CPU-locality domain of the group (see [`GpuInfo::socket`]), when all its GPUs share
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
}

/// How two GPUs are connected.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GpuLink {
    /// Lower GPU index.
    pub a: u32,
    /// Higher GPU index.
    pub b: u32,
    /// Number of NVLinks between them (0 when none).
    #[serde(default)]
    pub nvlinks: u32,
    /// Closest common PCIe ancestor: `board`, `switch`, `multi-switch`, `host-bridge`,
    /// `numa`, `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie: Option<String>,
}

impl GpuLink {
    /// The PCIe level as a type; `None` when absent or written by a newer labeler with a
    /// level this reader does not know.
    pub fn pcie_level(&self) -> Option<PcieLevel> {
        self.pcie.as_deref().and_then(|s| s.parse().ok())
    }
}

/// Closest common PCIe ancestor of two GPUs, from nearest to farthest (the order of
/// NVML's `nvmlGpuTopologyLevel_t` and of `nvidia-smi topo -m`'s legend). Serialised as
/// [`PcieLevel::as_str`].
#[derive(
    Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum PcieLevel {
    /// Same board (for example the two GPUs of a K80); NVML `INTERNAL`.
    Board,
    /// At most one PCIe switch (`PIX`); NVML `SINGLE`.
    Switch,
    /// Several PCIe switches, no host bridge (`PXB`); NVML `MULTIPLE`.
    MultiSwitch,
    /// Through a PCIe host bridge (`PHB`); NVML `HOSTBRIDGE`.
    HostBridge,
    /// Between host bridges within a NUMA node (`NODE`); NVML `NODE`.
    Numa,
    /// Across NUMA nodes over the SMP interconnect (`SYS`); NVML `SYSTEM`.
    System,
}

impl PcieLevel {
    /// Every level, nearest first.
    pub const ALL: [PcieLevel; 6] = [
        PcieLevel::Board,
        PcieLevel::Switch,
        PcieLevel::MultiSwitch,
        PcieLevel::HostBridge,
        PcieLevel::Numa,
        PcieLevel::System,
    ];

    /// The string written in [`GpuLink::pcie`].
    pub fn as_str(self) -> &'static str {
        match self {
            PcieLevel::Board => "board",
            PcieLevel::Switch => "switch",
            PcieLevel::MultiSwitch => "multi-switch",
            PcieLevel::HostBridge => "host-bridge",
            PcieLevel::Numa => "numa",
            PcieLevel::System => "system",
        }
    }

    /// True when the path between the two GPUs stays below the host bridge (same board or
    /// PCIe switch tree), which is what makes a PCIe GPU group.
    pub fn below_host_bridge(self) -> bool {
        self <= PcieLevel::MultiSwitch
    }
}

impl fmt::Display for PcieLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PcieLevel {
    type Err = TopologyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PcieLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| TopologyError::Invalid(format!("unknown PCIe level {s:?}")))
    }
}

/// Why a topology annotation could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// Not JSON, or not shaped like a [`NodeTopology`].
    #[error("topology annotation is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a labeler with a document version this reader does not know.
    #[error("topology annotation has version {found}, this reader knows version {known}")]
    UnsupportedVersion {
        /// Version found in the document.
        found: u32,
        /// Version this reader knows.
        known: u32,
    },
    /// Well-formed JSON that breaks one of the document's rules.
    #[error("topology annotation is inconsistent: {0}")]
    Invalid(String),
}

impl NodeTopology {
    /// Reads an annotation value: JSON of a version this reader knows, internally
    /// consistent (see [`NodeTopology::validate`]).
    pub fn parse(annotation: &str) -> Result<NodeTopology, TopologyError> {
        #[derive(Deserialize)]
        struct VersionOnly {
            #[serde(default)]
            version: u32,
        }
        let VersionOnly { version } = serde_json::from_str(annotation)?;
        if version != TOPOLOGY_VERSION {
            return Err(TopologyError::UnsupportedVersion {
                found: version,
                known: TOPOLOGY_VERSION,
            });
        }
        let topology: NodeTopology = serde_json::from_str(annotation)?;
        topology.validate()?;
        Ok(topology)
    }

    /// The annotation value: compact JSON.
    pub fn to_annotation(&self) -> String {
        // Serialising plain structs of strings and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Checks the document's rules: GPU indices unique, every GPU in exactly one group,
    /// groups and links naming only known GPUs, links with `a < b` and known PCIe levels.
    pub fn validate(&self) -> Result<(), TopologyError> {
        let mut indices = BTreeSet::new();
        for gpu in &self.gpus {
            if !indices.insert(gpu.index) {
                return Err(TopologyError::Invalid(format!(
                    "GPU index {} appears twice",
                    gpu.index
                )));
            }
        }
        let mut grouped = BTreeSet::new();
        for group in &self.groups {
            if group.gpus.is_empty() {
                return Err(TopologyError::Invalid("empty GPU group".into()));
            }
            for index in &group.gpus {
                if !indices.contains(index) {
                    return Err(TopologyError::Invalid(format!(
                        "group names unknown GPU {index}"
                    )));
                }
                if !grouped.insert(*index) {
                    return Err(TopologyError::Invalid(format!(
                        "GPU {index} is in more than one group"
                    )));
                }
            }
        }
        if grouped != indices {
            return Err(TopologyError::Invalid(
                "some GPUs are in no group".to_string(),
            ));
        }
        for gpu in &self.gpus {
            validate_mig(gpu)?;
        }
        for link in &self.links {
            if link.a >= link.b || !indices.contains(&link.a) || !indices.contains(&link.b) {
                return Err(TopologyError::Invalid(format!(
                    "link {}-{} must join two known GPUs with a < b",
                    link.a, link.b
                )));
            }
            if let Some(pcie) = &link.pcie {
                pcie.parse::<PcieLevel>()?;
            }
        }
        Ok(())
    }

    /// Number of MIG devices of each profile on the node, profiles in name order.
    pub fn mig_profile_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for device in self.gpus.iter().flat_map(|g| &g.mig) {
            *counts.entry(device.profile.clone()).or_default() += 1;
        }
        counts
    }

    /// The GPU with this index.
    pub fn gpu(&self, index: u32) -> Option<&GpuInfo> {
        self.gpus.iter().find(|g| g.index == index)
    }

    /// How GPUs `a` and `b` are connected, in either order.
    pub fn link(&self, a: u32, b: u32) -> Option<&GpuLink> {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        self.links.iter().find(|l| l.a == a && l.b == b)
    }

    /// Number of GPUs marked healthy.
    pub fn healthy_count(&self) -> usize {
        self.gpus.iter().filter(|g| g.healthy).count()
    }

    /// True when some group is joined by NVLink.
    pub fn has_nvlink(&self) -> bool {
        self.groups.iter().any(|g| g.nvlink)
    }
}

/// A GPU's MIG devices: only on a MIG-enabled GPU, each index once, each profile a
/// [`MigProfile`].
fn validate_mig(gpu: &GpuInfo) -> Result<(), TopologyError> {
    if !gpu.mig.is_empty() && !gpu.mig_enabled {
        return Err(TopologyError::Invalid(format!(
            "GPU {} lists MIG devices but MIG is not enabled",
            gpu.index
        )));
    }
    let mut seen = BTreeSet::new();
    for device in &gpu.mig {
        if !seen.insert(device.index) {
            return Err(TopologyError::Invalid(format!(
                "GPU {} lists MIG device {} twice",
                gpu.index, device.index
            )));
        }
        device
            .profile
            .parse::<MigProfile>()
            .map_err(|e| TopologyError::Invalid(format!("GPU {}: {e}", gpu.index)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_gpus() -> NodeTopology {
        NodeTopology {
            version: TOPOLOGY_VERSION,
            product: "NVIDIA A100-SXM4-80GB".into(),
            gpus: vec![
                GpuInfo {
                    index: 0,
                    healthy: true,
                    ..Default::default()
                },
                GpuInfo {
                    index: 1,
                    healthy: true,
                    ..Default::default()
                },
            ],
            groups: vec![GpuGroup {
                gpus: vec![0, 1],
                nvlink: true,
                ..Default::default()
            }],
            links: vec![GpuLink {
                a: 0,
                b: 1,
                nvlinks: 12,
                pcie: Some("system".into()),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn round_trips_through_the_annotation() {
        let t = two_gpus();
        assert_eq!(NodeTopology::parse(&t.to_annotation()).unwrap(), t);
        assert_eq!(t.link(1, 0).unwrap().pcie_level(), Some(PcieLevel::System));
    }

    #[test]
    fn rejects_unknown_versions_and_missing_version() {
        let mut t = two_gpus();
        t.version = 2;
        assert!(matches!(
            NodeTopology::parse(&t.to_annotation()),
            Err(TopologyError::UnsupportedVersion { found: 2, known: 1 })
        ));
        assert!(matches!(
            NodeTopology::parse(r#"{"gpus":[]}"#),
            Err(TopologyError::UnsupportedVersion { found: 0, .. })
        ));
    }

    #[test]
    fn mig_devices_need_mig_mode_unique_indices_and_known_profiles() {
        let device = |index, profile: &str| MigDevice {
            index,
            profile: profile.into(),
            ..Default::default()
        };
        let mut t = two_gpus();
        t.gpus[0].mig_enabled = true;
        t.gpus[0].mig = vec![
            device(0, "3g.40gb"),
            device(1, "1g.10gb"),
            device(2, "1g.10gb"),
        ];
        let parsed = NodeTopology::parse(&t.to_annotation()).unwrap();
        assert_eq!(parsed, t);
        assert_eq!(
            parsed.mig_profile_counts().into_iter().collect::<Vec<_>>(),
            vec![("1g.10gb".to_string(), 2), ("3g.40gb".to_string(), 1)]
        );

        let mut twice = t.clone();
        twice.gpus[0].mig[2].index = 1;
        let mut not_enabled = t.clone();
        not_enabled.gpus[0].mig_enabled = false;
        let mut unknown = t.clone();
        unknown.gpus[0].mig[0].profile = "half".into();
        for (bad, says) in [
            (twice, "MIG device 1 twice"),
            (not_enabled, "MIG is not enabled"),
            (unknown, "`half` is not a MIG profile"),
        ] {
            let err = NodeTopology::parse(&bad.to_annotation())
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_topology_without_mig_reads_and_writes_as_before() {
        let t = two_gpus();
        assert!(!t.to_annotation().contains("mig\""));
        assert!(t.mig_profile_counts().is_empty());
    }

    #[test]
    fn missing_fields_take_their_defaults() {
        let t = NodeTopology::parse(
            r#"{"version":1,"gpus":[{"index":0}],"groups":[{"gpus":[0]}],"future":1}"#,
        )
        .unwrap();
        assert!(t.gpus[0].healthy);
        assert!(t.links.is_empty());
    }

    #[test]
    fn rejects_a_gpu_in_two_groups_or_none() {
        let mut t = two_gpus();
        t.groups.push(GpuGroup {
            gpus: vec![1],
            ..Default::default()
        });
        assert!(matches!(t.validate(), Err(TopologyError::Invalid(_))));
        let mut t = two_gpus();
        t.groups[0].gpus = vec![0];
        assert!(matches!(t.validate(), Err(TopologyError::Invalid(_))));
    }

    #[test]
    fn normalizes_bus_ids() {
        assert_eq!(normalize_pci_bus_id("00000000:07:00.0"), "0000:07:00.0");
        assert_eq!(normalize_pci_bus_id("0000:B7:00.0"), "0000:b7:00.0");
        assert_eq!(normalize_pci_bus_id("00000001:07:00.0"), "0001:07:00.0");
    }
}
