//! The Node labels the labeler publishes, all under [`PREFIX`]; the keys and the value
//! sanitiser are the node contract of [`kubetrain::api::node_labels`].
//!
//! Labels are what `nodeSelector`s, flavors and `kubectl get nodes -L` use, so they carry the
//! coarse facts (present, product, count, memory, family, NVLink, driver, CUDA, healthy
//! count); the detail lives in the topology annotation. Every value is checked against the
//! Kubernetes label-value rules (at most 63 characters, alphanumeric at both ends, `-`, `_`
//! and `.` inside): product names such as `NVIDIA A100-SXM4-80GB` or `Tesla V100-SXM2-16GB`
//! are sanitised, and a value that sanitises to nothing is left out rather than published
//! wrong.

use std::collections::BTreeMap;

use kubetrain::api::NodeTopology;

pub use kubetrain::api::node_labels::{
    COUNT, CUDA, DRIVER, FAMILY, HEALTHY_COUNT, MAX_VALUE_LEN, MEMORY_MIB, MIG, NVLINK, PREFIX,
    PRESENT, PRODUCT, is_ours, is_valid_value, mig_count_label, sanitize_value,
};

/// The full set of labels for a node: with `None` (no GPU, no NVML) only `present=false`.
pub fn labels(topology: Option<&NodeTopology>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let topology = match topology {
        Some(t) if !t.gpus.is_empty() => t,
        _ => {
            out.insert(PRESENT.to_string(), "false".to_string());
            return out;
        }
    };
    let mut put = |key: &str, value: &str| {
        let value = sanitize_value(value);
        if !value.is_empty() {
            out.insert(key.to_string(), value);
        }
    };
    put(PRESENT, "true");
    put(PRODUCT, &topology.product);
    put(COUNT, &topology.gpus.len().to_string());
    let main: Vec<_> = topology
        .gpus
        .iter()
        .filter(|g| g.product == topology.product)
        .collect();
    if let Some(memory) = main.iter().map(|g| g.memory_mib).min().filter(|m| *m > 0) {
        put(MEMORY_MIB, &memory.to_string());
    }
    if let Some(family) = main
        .iter()
        .find_map(|g| g.compute_capability.as_deref())
        .and_then(family)
    {
        put(FAMILY, family);
    }
    put(
        NVLINK,
        if topology.has_nvlink() {
            "true"
        } else {
            "false"
        },
    );
    if let Some(driver) = &topology.driver_version {
        put(DRIVER, driver);
    }
    if let Some(cuda) = &topology.cuda_version {
        put(CUDA, cuda);
    }
    put(HEALTHY_COUNT, &topology.healthy_count().to_string());
    if topology.gpus.iter().any(|g| g.mig_enabled) {
        put(MIG, "true");
        for (profile, count) in topology.mig_profile_counts() {
            put(&mig_count_label(&profile), &count.to_string());
        }
    }
    out
}

/// Architecture family of a compute capability (`8.0` → `ampere`), named as NVIDIA's GPU
/// feature discovery names them.
pub fn family(compute_capability: &str) -> Option<&'static str> {
    let (major, minor) = compute_capability.split_once('.')?;
    let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    Some(match (major, minor) {
        (1, _) => "tesla",
        (2, _) => "fermi",
        (3, _) => "kepler",
        (5, _) => "maxwell",
        (6, _) => "pascal",
        (7, m) if m < 5 => "volta",
        (7, _) => "turing",
        (8, m) if m < 9 => "ampere",
        (8, _) => "ada-lovelace",
        (9, _) => "hopper",
        (10..=12, _) => "blackwell",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_families() {
        assert_eq!(family("7.0"), Some("volta"));
        assert_eq!(family("7.5"), Some("turing"));
        assert_eq!(family("8.0"), Some("ampere"));
        assert_eq!(family("8.9"), Some("ada-lovelace"));
        assert_eq!(family("9.0"), Some("hopper"));
        assert_eq!(family("10.0"), Some("blackwell"));
        assert_eq!(family("x"), None);
    }

    #[test]
    fn mig_nodes_count_their_devices_per_profile() {
        use kubetrain::api::{GpuInfo, MigDevice};
        let device = |index, profile: &str| MigDevice {
            index,
            profile: profile.into(),
            ..Default::default()
        };
        let gpu = |index, mig: Vec<MigDevice>| GpuInfo {
            index,
            mig_enabled: !mig.is_empty(),
            mig,
            healthy: true,
            ..Default::default()
        };
        let t = NodeTopology {
            gpus: vec![
                gpu(0, vec![device(0, "3g.40gb"), device(1, "1g.10gb+me")]),
                gpu(1, vec![device(0, "3g.40gb")]),
                gpu(2, vec![]),
            ],
            ..Default::default()
        };
        let l = labels(Some(&t));
        assert_eq!(l[MIG], "true");
        assert_eq!(l["gpu.kubetrain.io/mig-3g.40gb.count"], "2");
        assert_eq!(l["gpu.kubetrain.io/mig-1g.10gb-me.count"], "1");
        let whole = NodeTopology {
            gpus: vec![gpu(0, vec![])],
            ..Default::default()
        };
        assert!(labels(Some(&whole)).keys().all(|k| !k.contains("mig")));
    }

    #[test]
    fn no_topology_is_present_false_only() {
        let l = labels(None);
        assert_eq!(l.len(), 1);
        assert_eq!(l[PRESENT], "false");
        assert_eq!(labels(Some(&NodeTopology::default()))[PRESENT], "false");
    }
}
