//! The Node labels the labeler owns, all under [`PREFIX`].
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

/// Prefix of every label (and the annotation) the labeler owns.
pub const PREFIX: &str = "gpu.kubetrain.io/";
/// `true` when the node has usable NVIDIA GPUs, `false` otherwise.
pub const PRESENT: &str = "gpu.kubetrain.io/present";
/// Sanitised product name, for example `NVIDIA-H100-80GB-HBM3`.
pub const PRODUCT: &str = "gpu.kubetrain.io/product";
/// Number of GPUs.
pub const COUNT: &str = "gpu.kubetrain.io/count";
/// Memory of one GPU of the node's product, in MiB.
pub const MEMORY_MIB: &str = "gpu.kubetrain.io/memory-mib";
/// Architecture family from the compute capability: `volta`, `ampere`, `hopper`, ….
pub const FAMILY: &str = "gpu.kubetrain.io/family";
/// `true` when some GPUs are joined by NVLink.
pub const NVLINK: &str = "gpu.kubetrain.io/nvlink";
/// Driver version.
pub const DRIVER: &str = "gpu.kubetrain.io/driver";
/// Highest CUDA version the driver supports.
pub const CUDA: &str = "gpu.kubetrain.io/cuda";
/// Number of healthy GPUs.
pub const HEALTHY_COUNT: &str = "gpu.kubetrain.io/healthy-count";

/// Longest label value Kubernetes accepts.
pub const MAX_VALUE_LEN: usize = 63;

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

/// Makes any text a valid label value: characters outside `[A-Za-z0-9._-]` become `-`,
/// runs of `-` shrink to one, the result is cut to 63 characters and trimmed until it
/// starts and ends with an alphanumeric character. May return the empty string.
pub fn sanitize_value(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    // All characters are ASCII now, so byte truncation is safe.
    out.truncate(MAX_VALUE_LEN);
    out.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The Kubernetes label-value rule (`validation.IsValidLabelValue`).
pub fn is_valid_value(value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    let bytes = value.as_bytes();
    value.len() <= MAX_VALUE_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// True for label keys the labeler owns.
pub fn is_ours(key: &str) -> bool {
    key.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_real_product_names() {
        assert_eq!(
            sanitize_value("NVIDIA H100 80GB HBM3"),
            "NVIDIA-H100-80GB-HBM3"
        );
        assert_eq!(
            sanitize_value("NVIDIA A100-SXM4-80GB"),
            "NVIDIA-A100-SXM4-80GB"
        );
        assert_eq!(
            sanitize_value("Tesla V100-SXM2-16GB"),
            "Tesla-V100-SXM2-16GB"
        );
        assert_eq!(
            sanitize_value("NVIDIA GeForce RTX 4090"),
            "NVIDIA-GeForce-RTX-4090"
        );
        assert_eq!(sanitize_value("  (weird) / name!  "), "weird-name");
        assert_eq!(sanitize_value("***"), "");
        assert_eq!(sanitize_value(&"a".repeat(70)).len(), 63);
    }

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
    fn no_topology_is_present_false_only() {
        let l = labels(None);
        assert_eq!(l.len(), 1);
        assert_eq!(l[PRESENT], "false");
        assert_eq!(labels(Some(&NodeTopology::default()))[PRESENT], "false");
    }
}
