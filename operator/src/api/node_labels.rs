//! The node contract: the labels the node labeler publishes on each GPU node and the operator,
//! the simulated nodes and users' `nodeSelector`s read. Defined once, here, with the one
//! label-value sanitiser, so every writer and reader spells them the same way.
//!
//! Labels carry the coarse facts (present, product, count, memory, family, NVLink, driver,
//! CUDA, healthy count); the detail lives in the topology annotation
//! ([`super::topology::TOPOLOGY_ANNOTATION`]).

/// Prefix of every label (and the annotation) the labeler owns.
pub const PREFIX: &str = "gpu.kubetrain.io/";
/// `true` when the node has usable NVIDIA GPUs, `false` otherwise.
pub const PRESENT: &str = "gpu.kubetrain.io/present";
/// Sanitised product name, for example `NVIDIA-H100-80GB-HBM3`: the GPU type (flavor) that
/// VirtualCluster guarantees and `spec.gpuTypes` name.
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
/// `true` when some GPU of the node has MIG mode enabled.
pub const MIG: &str = "gpu.kubetrain.io/mig";
/// Start of the per-profile MIG device count labels: `gpu.kubetrain.io/mig-3g.40gb.count`
/// ([`mig_count_label`]).
pub const MIG_COUNT_PREFIX: &str = "gpu.kubetrain.io/mig-";

/// The label counting a node's MIG devices of `profile`: `gpu.kubetrain.io/mig-<profile>.count`,
/// with each `+` of a profile's extensions written `-` (`1g.10gb+me` →
/// `mig-1g.10gb-me.count`), since label names allow no `+`.
pub fn mig_count_label(profile: &str) -> String {
    format!("{MIG_COUNT_PREFIX}{}.count", profile.replace('+', "-"))
}

/// Rack of the node (the well-known topology label; read when the topology annotation has
/// none).
pub const RACK: &str = "topology.kubernetes.io/rack";

/// Longest label value Kubernetes accepts.
pub const MAX_VALUE_LEN: usize = 63;

/// Makes any text a valid label value: characters outside `[A-Za-z0-9._-]` become `-`,
/// runs of `-` shrink to one, the result is cut to 63 characters and trimmed until it
/// starts and ends with an alphanumeric character. May return the empty string.
/// `NVIDIA A100 (PCIe) 40GB` → `NVIDIA-A100-PCIe-40GB`.
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
            sanitize_value("NVIDIA A100 (PCIe) 40GB"),
            "NVIDIA-A100-PCIe-40GB"
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
    fn sanitised_values_are_valid() {
        for raw in ["x", "-a-", "a b c", "((()))", &"ab-".repeat(30), "α GPU"] {
            assert!(is_valid_value(&sanitize_value(raw)), "{raw:?}");
        }
        assert!(!is_valid_value("-a"));
        assert!(!is_valid_value(&"a".repeat(64)));
    }
}
