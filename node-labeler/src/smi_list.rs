//! `nvidia-smi -L` captures: the GPUs of a node and, on MIG-enabled GPUs, their MIG devices
//! with profile and UUID, as an [`Inventory`] (no links, memory or health: `-L` does not
//! print them).
//!
//! ```text
//! GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-b4895dbf-…)
//!   MIG 3g.40gb     Device  0: (UUID: MIG-7089d0f3-…)
//!   MIG 1g.10gb     Device  1: (UUID: MIG-…)
//! GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-…)
//! ```
//!
//! Older drivers print single spaces and MIG UUIDs of the form `MIG-GPU-<uuid>/<gi>/<ci>`.
//! A GPU with at least one MIG line is taken as MIG-enabled; `-L` cannot tell a MIG-enabled
//! GPU that has no instances yet from a GPU without MIG.

use crate::inventory::{GpuReading, Inventory, MigReading};

/// Why a capture is not an `nvidia-smi -L` listing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmiListError {
    /// A line that is neither a GPU nor a MIG device line.
    #[error(
        "line {line}: not a `GPU n: … (UUID: …)` or `MIG <profile> Device n: (UUID: …)` line: {text}"
    )]
    Line {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// A MIG device line before any GPU line.
    #[error("line {line}: MIG device before any GPU")]
    Orphan {
        /// 1-based line number.
        line: usize,
    },
    /// No GPU at all.
    #[error("no GPU listed")]
    Empty,
}

/// True when `text` looks like an `nvidia-smi -L` capture (its first line lists GPU 0).
pub fn looks_like_list(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| parse_gpu(l).is_some())
}

/// Parses a capture into the readings it holds.
pub fn parse(text: &str) -> Result<Inventory, SmiListError> {
    let mut gpus: Vec<GpuReading> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(gpu) = parse_gpu(line) {
            gpus.push(gpu);
        } else if let Some(mig) = parse_mig(line) {
            let gpu = gpus
                .last_mut()
                .ok_or(SmiListError::Orphan { line: n + 1 })?;
            gpu.mig_enabled = true;
            gpu.mig_devices.push(mig);
        } else {
            return Err(SmiListError::Line {
                line: n + 1,
                text: line.to_string(),
            });
        }
    }
    if gpus.is_empty() {
        return Err(SmiListError::Empty);
    }
    Ok(Inventory {
        gpus,
        ..Default::default()
    })
}

/// `(UUID: X)` at the end of a line → `X` and the text before it.
fn split_uuid(line: &str) -> Option<(&str, &str)> {
    let (head, tail) = line.rsplit_once("(UUID:")?;
    let uuid = tail.trim().strip_suffix(')')?.trim();
    (!uuid.is_empty()).then_some((head.trim(), uuid))
}

/// `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)`.
fn parse_gpu(line: &str) -> Option<GpuReading> {
    let (head, uuid) = split_uuid(line.trim())?;
    let rest = head.strip_prefix("GPU ")?;
    let (index, product) = rest.split_once(':')?;
    Some(GpuReading {
        index: index.trim().parse().ok()?,
        uuid: uuid.to_string(),
        product: product.trim().to_string(),
        ..Default::default()
    })
}

/// `MIG 3g.40gb     Device  0: (UUID: MIG-…)`.
fn parse_mig(line: &str) -> Option<MigReading> {
    let (head, uuid) = split_uuid(line)?;
    let rest = head.strip_prefix("MIG ")?;
    let (profile, device) = rest.split_once("Device")?;
    let index = device.trim().strip_suffix(':')?.trim().parse().ok()?;
    Some(MigReading {
        index,
        uuid: uuid.to_string(),
        name: format!("MIG {}", profile.trim()),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gpus_and_their_mig_devices() {
        let text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-b4)\n  MIG 3g.40gb     Device  0: (UUID: MIG-70)\n  MIG 1g.10gb     Device  1: (UUID: MIG-56)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-c5)\n";
        assert!(looks_like_list(text));
        let inv = parse(text).unwrap();
        assert_eq!(inv.gpus.len(), 2);
        assert!(inv.gpus[0].mig_enabled && !inv.gpus[1].mig_enabled);
        let names: Vec<_> = inv.gpus[0]
            .mig_devices
            .iter()
            .map(|m| (m.index, m.name.as_str(), m.uuid.as_str()))
            .collect();
        assert_eq!(
            names,
            [(0, "MIG 3g.40gb", "MIG-70"), (1, "MIG 1g.10gb", "MIG-56")]
        );
    }

    #[test]
    fn refuses_what_is_not_a_listing_and_names_the_line() {
        assert_eq!(parse(""), Err(SmiListError::Empty));
        assert_eq!(
            parse("  MIG 1g.5gb Device 0: (UUID: MIG-1)\n"),
            Err(SmiListError::Orphan { line: 1 })
        );
        assert!(matches!(
            parse("GPU 0: T4 (UUID: GPU-1)\nsomething else\n"),
            Err(SmiListError::Line { line: 2, .. })
        ));
        assert!(!looks_like_list("\tGPU0\tGPU1\n"));
    }
}
