//! What the labeler read about a node's GPUs, before any interpretation.
//!
//! NVML ([`crate::nvml`]), an `nvidia-smi topo -m` capture ([`crate::topo_matrix`]) or a JSON
//! file all produce this plain struct; [`crate::topology`] turns it into the published
//! [`kubetrain::api::NodeTopology`]. Keeping the readings apart from the interpretation is
//! what lets the grouping logic be tested on captures of real machines without their GPUs.

use kubetrain::api::topology::PcieLevel;
use serde::{Deserialize, Serialize};

/// Everything read about one node's GPUs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// NVIDIA driver version, for example `580.159.04`.
    #[serde(default)]
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports, for example `13.0`.
    #[serde(default)]
    pub cuda_version: Option<String>,
    /// The GPUs, in NVML index order.
    #[serde(default)]
    pub gpus: Vec<GpuReading>,
    /// How pairs of GPUs are connected; a pair that is missing is unknown.
    #[serde(default)]
    pub pairs: Vec<PairReading>,
}

/// What was read about one GPU. `None` means the reading was not available (not supported by
/// the GPU or the driver), never a default value.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GpuReading {
    /// NVML index.
    pub index: u32,
    /// GPU UUID (`GPU-…`).
    #[serde(default)]
    pub uuid: String,
    /// Product name, for example `NVIDIA H100 80GB HBM3`.
    #[serde(default)]
    pub product: String,
    /// Total memory in MiB.
    #[serde(default)]
    pub memory_mib: u64,
    /// CUDA compute capability, `major.minor`.
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// MIG mode currently enabled.
    #[serde(default)]
    pub mig_enabled: bool,
    /// NUMA node the GPU is attached to.
    #[serde(default)]
    pub numa_node: Option<u32>,
    /// CPUs close to the GPU as a Linux CPU list (`0-15,32-47`).
    #[serde(default)]
    pub cpu_affinity: Option<String>,
    /// PCIe bus id.
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    /// Health signals.
    #[serde(default)]
    pub health: HealthReading,
    /// The MIG devices of a MIG-enabled GPU, in MIG device index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig_devices: Vec<MigReading>,
}

/// What was read about one MIG device. As for a GPU, `None` is "not available".
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MigReading {
    /// MIG device index on the parent GPU.
    pub index: u32,
    /// MIG device UUID.
    #[serde(default)]
    pub uuid: String,
    /// Name as NVML or `nvidia-smi -L` gives it; ends in the profile
    /// (`NVIDIA H100 80GB HBM3 MIG 3g.40gb`, `MIG 1g.5gb`).
    #[serde(default)]
    pub name: String,
    /// Memory in MiB.
    #[serde(default)]
    pub memory_mib: Option<u64>,
    /// Compute slices of the GPU instance.
    #[serde(default)]
    pub gpu_slices: Option<u32>,
    /// Compute slices of the compute instance.
    #[serde(default)]
    pub compute_slices: Option<u32>,
    /// Streaming multiprocessors.
    #[serde(default)]
    pub multiprocessors: Option<u32>,
}

/// How two GPUs (`a < b`) are connected.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PairReading {
    /// Lower GPU index.
    pub a: u32,
    /// Higher GPU index.
    pub b: u32,
    /// NVLinks between them, directly or through NVSwitch.
    #[serde(default)]
    pub nvlinks: u32,
    /// Closest common PCIe ancestor, when known.
    #[serde(default)]
    pub pcie: Option<PcieLevel>,
}

/// Health signals of one GPU. `None` is "no signal" (NotSupported, ECC off), which is not a
/// fault.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct HealthReading {
    /// Uncorrectable ECC errors since the driver was loaded.
    #[serde(default)]
    pub ecc_uncorrected_volatile: Option<u64>,
    /// Pages waiting to be retired at the next reboot/reset (pre-Ampere page retirement).
    #[serde(default)]
    pub pages_pending_retirement: Option<bool>,
    /// Row remapping waiting for a GPU reset (Ampere and later).
    #[serde(default)]
    pub row_remap_pending: Option<bool>,
    /// Row remapping failed: the memory has an error that could not be remapped.
    #[serde(default)]
    pub row_remap_failed: Option<bool>,
    /// NVML answered `GpuLost`: the GPU fell off the bus.
    #[serde(default)]
    pub lost: bool,
    /// XID errors seen by the event watcher since the labeler started.
    #[serde(default)]
    pub xids: Vec<u64>,
}

impl Inventory {
    /// The reading for the pair `a`, `b` in either order.
    pub fn pair(&self, a: u32, b: u32) -> Option<&PairReading> {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        self.pairs.iter().find(|p| p.a == a && p.b == b)
    }

    /// NVLinks between `a` and `b` (0 when unknown).
    pub fn nvlinks(&self, a: u32, b: u32) -> u32 {
        self.pair(a, b).map_or(0, |p| p.nvlinks)
    }
}

/// Formats CPU numbers as a Linux CPU list: `[0,1,2,3,8]` → `0-3,8`.
pub fn cpu_list(cpus: impl IntoIterator<Item = u32>) -> String {
    let mut cpus: Vec<u32> = cpus.into_iter().collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The first CPU of a Linux CPU list (`48-63,176-191` → 48), for ordering.
pub fn first_cpu(list: &str) -> Option<u32> {
    list.split([',', '-']).next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_cpu_lists() {
        assert_eq!(cpu_list([0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_list(0..16), "0-15");
        assert_eq!(cpu_list([]), "");
        assert_eq!(first_cpu("48-63,176-191"), Some(48));
    }
}
