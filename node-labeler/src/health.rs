//! Is a GPU fit for work? Health signals in, a verdict and a reason out.
//!
//! A GPU is unhealthy when NVML shows a fault that needs an operator or a reset: it fell off
//! the bus, it has uncorrectable ECC errors since the driver loaded, pages wait for
//! retirement, row remapping is pending or failed, or a critical XID event arrived. A signal
//! that is not available (`NotSupported`, ECC off) says nothing: Hopper answers page
//! retirement with `NotSupported` because it remaps rows instead, and that is no fault.
//!
//! XIDs caused by applications (a kernel's illegal address, a killed context) say nothing
//! about the GPU; they are ignored, as NVIDIA's device plugin does. Critical XIDs stay
//! recorded for the labeler's lifetime: restarting the labeler pod (after the GPU was reset
//! or drained) clears them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::inventory::HealthReading;

/// XIDs that applications cause (13 graphics engine exception, 31 MMU fault, 43 stopped
/// channel, 45 preemptive cleanup, 68 video processor exception, 109 context switch
/// timeout): the same list NVIDIA's k8s-device-plugin skips.
pub const APPLICATION_XIDS: [u64; 6] = [13, 31, 43, 45, 68, 109];

/// Most XIDs kept per GPU; only the newest are listed.
const XIDS_KEPT: usize = 8;

/// True when an XID says the GPU itself is at fault.
pub fn is_critical_xid(xid: u64) -> bool {
    !APPLICATION_XIDS.contains(&xid)
}

/// The verdict on one GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// Fit for work.
    pub healthy: bool,
    /// Why not, in a few words; `None` when healthy.
    pub reason: Option<String>,
}

/// Judges one GPU's signals.
pub fn assess(reading: &HealthReading) -> Health {
    let mut reasons = Vec::new();
    if reading.lost {
        reasons.push("GPU lost (fell off the bus)".to_string());
    }
    if let Some(n) = reading.ecc_uncorrected_volatile.filter(|n| *n > 0) {
        reasons.push(format!("{n} uncorrectable ECC errors since driver load"));
    }
    if reading.pages_pending_retirement == Some(true) {
        reasons.push("page retirement pending (reset needed)".to_string());
    }
    if reading.row_remap_failed == Some(true) {
        reasons.push("row remapping failed".to_string());
    }
    if reading.row_remap_pending == Some(true) {
        reasons.push("row remapping pending (reset needed)".to_string());
    }
    let critical: Vec<String> = reading
        .xids
        .iter()
        .filter(|x| is_critical_xid(**x))
        .map(|x| x.to_string())
        .collect();
    if !critical.is_empty() {
        reasons.push(format!("critical XID {}", critical.join(", ")));
    }
    if reasons.is_empty() {
        Health {
            healthy: true,
            reason: None,
        }
    } else {
        Health {
            healthy: false,
            reason: Some(reasons.join("; ")),
        }
    }
}

/// Critical XIDs seen per GPU UUID, shared between the NVML event watcher (writer) and the
/// inventory reader.
#[derive(Clone, Debug, Default)]
pub struct XidLog {
    seen: Arc<Mutex<BTreeMap<String, Vec<u64>>>>,
}

impl XidLog {
    /// Records an XID on a GPU; returns true when it is critical (and so changes the GPU's
    /// health). Application XIDs are not recorded.
    pub fn record(&self, uuid: &str, xid: u64) -> bool {
        if !is_critical_xid(xid) {
            return false;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let xids = seen.entry(uuid.to_string()).or_default();
        xids.retain(|x| *x != xid);
        xids.push(xid);
        if xids.len() > XIDS_KEPT {
            xids.remove(0);
        }
        true
    }

    /// Critical XIDs seen on a GPU, oldest first.
    pub fn for_gpu(&self, uuid: &str) -> Vec<u64> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(uuid).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_signal_is_healthy() {
        // The H100 VM: ECC on with zero errors, page retirement NotSupported.
        let h100 = HealthReading {
            ecc_uncorrected_volatile: Some(0),
            ..Default::default()
        };
        assert_eq!(
            assess(&h100),
            Health {
                healthy: true,
                reason: None
            }
        );
        assert!(assess(&HealthReading::default()).healthy);
    }

    #[test]
    fn faults_are_unhealthy_with_every_reason() {
        let bad = HealthReading {
            ecc_uncorrected_volatile: Some(2),
            pages_pending_retirement: Some(true),
            xids: vec![79],
            ..Default::default()
        };
        let h = assess(&bad);
        assert!(!h.healthy);
        let reason = h.reason.unwrap();
        assert!(reason.contains("2 uncorrectable ECC"), "{reason}");
        assert!(reason.contains("page retirement pending"), "{reason}");
        assert!(reason.contains("XID 79"), "{reason}");
        assert!(
            !assess(&HealthReading {
                row_remap_failed: Some(true),
                ..Default::default()
            })
            .healthy
        );
        assert!(
            !assess(&HealthReading {
                lost: true,
                ..Default::default()
            })
            .healthy
        );
    }

    #[test]
    fn application_xids_are_not_faults() {
        let log = XidLog::default();
        assert!(!log.record("GPU-a", 13));
        assert!(!log.record("GPU-a", 43));
        assert!(log.for_gpu("GPU-a").is_empty());
        assert!(log.record("GPU-a", 48));
        assert!(log.record("GPU-a", 48));
        assert_eq!(log.for_gpu("GPU-a"), vec![48]);
        assert!(log.for_gpu("GPU-b").is_empty());
        assert!(
            assess(&HealthReading {
                xids: vec![13, 31],
                ..Default::default()
            })
            .healthy
        );
    }

    #[test]
    fn keeps_only_the_newest_xids() {
        let log = XidLog::default();
        for xid in 60..80 {
            log.record("GPU-a", xid);
        }
        assert_eq!(log.for_gpu("GPU-a"), (72..80).collect::<Vec<_>>());
    }
}
