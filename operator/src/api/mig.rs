//! MIG (Multi-Instance GPU) devices in the node contract: the slices a MIG-enabled GPU is
//! partitioned into, as the node labeler reads them through NVML and publishes them in the
//! topology annotation ([`super::topology::GpuInfo::mig`]).
//!
//! A slice is named by its profile the way NVIDIA names it (`nvidia-smi -L`, the device
//! plugin's mixed strategy, GPU feature discovery): `3g.40gb` is a GPU instance of 3 of the
//! GPU's 7 compute slices with 40 GB of memory; `1c.3g.40gb` a compute instance of 1 slice
//! inside such a GPU instance; `1g.10gb+me` a 1-slice instance that also owns the media
//! engines. [`MigProfile`] is that name, parsed once, so every reader compares profiles the
//! same way.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One MIG device (a compute instance inside a GPU instance) of a MIG-enabled GPU.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MigDevice {
    /// The MIG device's index on its parent GPU (NVML's MIG device handle index,
    /// `nvidia-smi`'s `MIG Dev`).
    pub index: u32,
    /// The MIG device's UUID (`MIG-…`; older drivers: `MIG-GPU-<uuid>/<gi>/<ci>`).
    #[serde(default)]
    pub uuid: String,
    /// Profile, for example `3g.40gb` (see [`MigProfile`]).
    pub profile: String,
    /// Memory of the slice in MiB, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Compute slices of its GPU instance (the `3` of `3g.40gb`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_slices: Option<u32>,
    /// Streaming multiprocessors of the slice, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiprocessors: Option<u32>,
}

/// Why a MIG profile name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a MIG profile (expected `<g>g.<memory>gb`, optionally `<c>c.` before it and `+<extension>` after it, for example `3g.40gb`, `1c.3g.40gb` or `1g.10gb+me`)"
)]
pub struct MigProfileError(pub String);

/// A MIG profile name: `[<c>c.]<g>g.<memory>gb[+<extension>]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MigProfile {
    /// Compute slices of the compute instance, when it is smaller than its GPU instance.
    pub compute_slices: Option<u32>,
    /// Compute slices of the GPU instance.
    pub gpu_slices: u32,
    /// Memory in GB, as the name rounds it.
    pub memory_gb: u32,
    /// Extensions after `+` (`me`, `gfx`, `me.all`), in the order written.
    pub extensions: Vec<String>,
}

impl MigProfile {
    /// The profile of a slice from what NVML measures: `gpu_slices` and `compute_slices`
    /// from the device's attributes, memory rounded up to whole GB (NVIDIA's rounding:
    /// 40,448 MiB is `40gb`, 4,864 MiB `5gb`). Extensions cannot be seen this way.
    pub fn from_attributes(gpu_slices: u32, compute_slices: u32, memory_mib: u64) -> MigProfile {
        MigProfile {
            compute_slices: (compute_slices > 0 && compute_slices < gpu_slices)
                .then_some(compute_slices),
            gpu_slices,
            memory_gb: memory_mib.div_ceil(1024) as u32,
            extensions: Vec::new(),
        }
    }
}

impl FromStr for MigProfile {
    type Err = MigProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MigProfileError(s.to_string());
        let (base, extensions) = match s.split_once('+') {
            Some((base, ext)) => {
                let extensions: Vec<String> = ext.split('+').map(str::to_string).collect();
                let valid = |e: &String| {
                    !e.is_empty()
                        && e.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.')
                };
                if !extensions.iter().all(valid) {
                    return Err(err());
                }
                (base, extensions)
            }
            None => (s, Vec::new()),
        };
        let count = |part: &str, unit: &str| -> Option<u32> {
            let n = part.strip_suffix(unit)?;
            (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                .then(|| n.parse().ok())
                .flatten()
                .filter(|n| *n > 0)
        };
        let parts: Vec<&str> = base.split('.').collect();
        let (compute_slices, gpu, memory) = match parts.as_slice() {
            [gpu, memory] => (None, *gpu, *memory),
            [compute, gpu, memory] => (Some(count(compute, "c").ok_or_else(err)?), *gpu, *memory),
            _ => return Err(err()),
        };
        let profile = MigProfile {
            compute_slices,
            gpu_slices: count(gpu, "g").ok_or_else(err)?,
            memory_gb: count(memory, "gb").ok_or_else(err)?,
            extensions,
        };
        if profile
            .compute_slices
            .is_some_and(|c| c > profile.gpu_slices)
        {
            return Err(err());
        }
        Ok(profile)
    }
}

impl fmt::Display for MigProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.compute_slices {
            write!(f, "{c}c.")?;
        }
        write!(f, "{}g.{}gb", self.gpu_slices, self.memory_gb)?;
        for e in &self.extensions {
            write!(f, "+{e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_the_profiles_nvidia_names() {
        for name in [
            "3g.40gb",
            "1g.5gb",
            "7g.80gb",
            "1c.3g.40gb",
            "1g.10gb+me",
            "1g.12gb+me.all",
        ] {
            let p: MigProfile = name.parse().unwrap();
            assert_eq!(p.to_string(), name);
        }
        let p: MigProfile = "1c.3g.40gb".parse().unwrap();
        assert_eq!(
            (p.compute_slices, p.gpu_slices, p.memory_gb),
            (Some(1), 3, 40)
        );
    }

    #[test]
    fn refuses_what_is_not_a_profile() {
        for name in [
            "",
            "3g",
            "40gb",
            "g.40gb",
            "3g.gb",
            "0g.10gb",
            "3x.40gb",
            "4c.3g.40gb",
            "3g.40gb+",
            "3g.40gb+ME",
            "a.3g.40gb",
            "1c.2c.3g.40gb",
        ] {
            assert!(name.parse::<MigProfile>().is_err(), "{name} accepted");
        }
    }

    #[test]
    fn names_a_slice_from_its_measured_attributes_as_nvidia_rounds_memory() {
        // Memory sizes of the H100 80GB and A100 40GB slices in `nvidia-smi`'s MIG table.
        assert_eq!(
            MigProfile::from_attributes(3, 3, 40_448).to_string(),
            "3g.40gb"
        );
        assert_eq!(
            MigProfile::from_attributes(2, 2, 20_096).to_string(),
            "2g.20gb"
        );
        assert_eq!(
            MigProfile::from_attributes(1, 1, 9_984).to_string(),
            "1g.10gb"
        );
        assert_eq!(
            MigProfile::from_attributes(1, 1, 4_864).to_string(),
            "1g.5gb"
        );
        assert_eq!(
            MigProfile::from_attributes(3, 1, 40_448).to_string(),
            "1c.3g.40gb"
        );
    }
}
