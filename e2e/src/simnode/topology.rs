//! What a simulated node's GPUs would read through NVML: GPUs with index, UUID, product,
//! memory and NUMA node, and per-pair links (NVLink count and closest common PCIe ancestor).
//! The node labeler's own library turns these readings into the topology annotation and
//! the labels ([`kubetrain_node_labeler::topology::build`], [`labels`]), so every e2e run
//! exercises the real grouping code.
//!
//! GPUs are spread over two sockets (the first half on NUMA node 0), adjacent pairs share a
//! PCIe switch, as on DGX-style boards.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use kubetrain::api::topology::{NodeTopology, PcieLevel};
use kubetrain_node_labeler::inventory::{GpuReading, Inventory, PairReading};
use kubetrain_node_labeler::{labels, topology};

/// How the GPUs of a node are connected.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// All GPUs joined through NVSwitch (one NVLink group, as DGX A100/H100).
    #[default]
    #[serde(rename = "nvswitch")]
    NvSwitch,
    /// Two NVLink groups of half the GPUs each, one per socket.
    TwoNvlinkGroups,
    /// No NVLink; pairs of GPUs under one PCIe switch.
    PciePairs,
}

/// NVLinks between two GPUs of one NVSwitch node (A100: 12 links each).
const NVSWITCH_LINKS: u32 = 12;
/// NVLinks between two GPUs of one NVLink group.
const GROUP_LINKS: u32 = 2;

impl TopologyKind {
    /// Whether `gpus` GPUs can take this shape.
    pub fn check(self, gpus: u32) -> Result<(), String> {
        match self {
            TopologyKind::NvSwitch => Ok(()),
            TopologyKind::TwoNvlinkGroups | TopologyKind::PciePairs if gpus.is_multiple_of(2) => {
                Ok(())
            }
            _ => Err(format!(
                "topology {self:?} needs an even number of GPUs, not {gpus}"
            )),
        }
    }
}

/// Socket (NUMA node) of GPU `i` of `n`: pairs of GPUs stay together, the first half of the
/// pairs is on socket 0.
fn socket(i: u32, n: u32) -> u32 {
    let pairs = n.div_ceil(2);
    if pairs >= 2 { (i / 2) * 2 / pairs } else { 0 }
}

/// A stable fake GPU UUID from the node name and index.
fn uuid(node: &str, index: u32) -> String {
    let h = |seed: u64| {
        node.bytes().chain(index.to_le_bytes()).fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    };
    let (a, b) = (h(0xcbf2_9ce4_8422_2325), h(0x84222325_cbf29ce4));
    format!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// The compute capability NVML reads on a GPU of this product name, for the products the
/// simulated clusters use and their kin (NVIDIA's CUDA GPU list); unknown names have none,
/// as the labeler then publishes no family.
pub fn compute_capability(product: &str) -> Option<&'static str> {
    let words: Vec<String> = product
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_uppercase)
        .collect();
    let has = |model: &str| words.iter().any(|w| w == model);
    Some(if has("B200") || has("B100") || has("GB200") {
        "10.0"
    } else if has("H100") || has("H200") || has("H800") || has("GH200") {
        "9.0"
    } else if has("L4") || has("L40") || has("L40S") {
        "8.9"
    } else if has("A10") || has("A40") || has("A6000") {
        "8.6"
    } else if has("A100") || has("A800") || has("A30") {
        "8.0"
    } else if has("T4") {
        "7.5"
    } else if has("V100") {
        "7.0"
    } else if has("P100") {
        "6.0"
    } else {
        return None;
    })
}

/// What NVML would read on a node with `n` GPUs of `product`, all healthy.
pub fn readings(
    node: &str,
    kind: TopologyKind,
    n: u32,
    product: &str,
    memory_mib: u64,
) -> Inventory {
    let gpus = (0..n)
        .map(|i| GpuReading {
            index: i,
            uuid: uuid(node, i),
            product: product.into(),
            memory_mib,
            numa_node: Some(socket(i, n)),
            pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x07 + 0x10 * i)),
            compute_capability: compute_capability(product).map(str::to_string),
            ..Default::default()
        })
        .collect();
    let mut pairs = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let pcie = if a / 2 == b / 2 {
                PcieLevel::Switch
            } else if socket(a, n) == socket(b, n) {
                PcieLevel::Numa
            } else {
                PcieLevel::System
            };
            let nvlinks = match kind {
                TopologyKind::NvSwitch => NVSWITCH_LINKS,
                TopologyKind::TwoNvlinkGroups if (a < n / 2) == (b < n / 2) => GROUP_LINKS,
                _ => 0,
            };
            pairs.push(PairReading {
                a,
                b,
                nvlinks,
                pcie: Some(pcie),
            });
        }
    }
    Inventory {
        driver_version: Some("550.54.15".into()),
        cuda_version: Some("12.4".into()),
        gpus,
        pairs,
    }
}

/// The topology annotation the labeler publishes for those readings.
pub fn build_topology(
    node: &str,
    kind: TopologyKind,
    n: u32,
    product: &str,
    memory_mib: u64,
    rack: Option<String>,
) -> NodeTopology {
    topology::build(&readings(node, kind, n, product, memory_mib), rack)
}

/// The `gpu.kubetrain.io/*` labels the labeler publishes for a topology.
pub fn gpu_labels(topology: &NodeTopology) -> BTreeMap<String, String> {
    labels::labels(Some(topology))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_a_valid_annotation() {
        for kind in [
            TopologyKind::NvSwitch,
            TopologyKind::TwoNvlinkGroups,
            TopologyKind::PciePairs,
        ] {
            for n in [2, 4, 8] {
                let t = build_topology("n-0", kind, n, "NVIDIA A100-SXM4-80GB", 81920, None);
                let parsed = NodeTopology::parse(&t.to_annotation()).unwrap();
                assert_eq!(parsed, t);
                assert_eq!(t.healthy_count(), n as usize);
                assert_eq!(t.links.len(), (n * (n - 1) / 2) as usize);
            }
        }
        let single = build_topology("n-0", TopologyKind::NvSwitch, 1, "x", 0, None);
        single.validate().unwrap();
    }

    #[test]
    fn products_have_their_families() {
        let family = |product| {
            gpu_labels(&build_topology(
                "n-0",
                TopologyKind::NvSwitch,
                8,
                product,
                1,
                None,
            ))
            .get(kubetrain::api::node_labels::FAMILY)
            .cloned()
        };
        assert_eq!(family("NVIDIA A100-SXM4-80GB").as_deref(), Some("ampere"));
        assert_eq!(family("NVIDIA H100 80GB HBM3").as_deref(), Some("hopper"));
        assert_eq!(family("Tesla V100-SXM2-32GB").as_deref(), Some("volta"));
        assert_eq!(family("Tesla T4").as_deref(), Some("turing"));
        assert_eq!(family("NVIDIA L40S").as_deref(), Some("ada-lovelace"));
        assert_eq!(family("NVIDIA A10").as_deref(), Some("ampere"));
        assert_eq!(family("p"), None);
    }

    #[test]
    fn shapes_match_their_names() {
        let t = build_topology("n-0", TopologyKind::TwoNvlinkGroups, 8, "p", 1, None);
        assert_eq!(t.groups.len(), 2);
        assert_eq!(t.groups[1].gpus, vec![4, 5, 6, 7]);
        assert_eq!(t.groups[1].numa_node, Some(1));
        assert_eq!(t.link(0, 3).unwrap().nvlinks, GROUP_LINKS);
        assert_eq!(t.link(3, 4).unwrap().nvlinks, 0);
        let p = build_topology("n-0", TopologyKind::PciePairs, 8, "p", 1, None);
        assert_eq!(p.groups.len(), 4);
        assert!(!p.has_nvlink());
        assert_eq!(p.link(2, 3).unwrap().pcie_level(), Some(PcieLevel::Switch));
        assert_eq!(p.link(0, 7).unwrap().pcie_level(), Some(PcieLevel::System));
        let uuids: std::collections::BTreeSet<_> = p.gpus.iter().map(|g| g.uuid.clone()).collect();
        assert_eq!(uuids.len(), 8);
        assert_ne!(uuid("a", 0), uuid("b", 0));
    }
}
