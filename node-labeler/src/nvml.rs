//! Reading a node's GPUs through NVML (nvml-wrapper) into a plain [`Inventory`].
//!
//! nvml-wrapper loads `libnvidia-ml.so.1` from the host driver at run time, so the labeler
//! builds and starts anywhere; [`init`] is where "no driver here" shows up, and
//! [`describe_init_error`] turns it into a sentence for the log.
//!
//! Every optional reading that NVML answers with an error becomes `None` ("no signal"), never
//! a guessed value. Only the facts a topology cannot be published without (how many GPUs, and
//! each one's UUID and name) fail the whole read, which the caller reports as "no GPU
//! information" instead of publishing half a topology. A GPU that fell off the bus
//! (`GpuLost`) is kept, marked lost, so it is published as unhealthy.
//!
//! NVLink peers come from each active link's remote PCI address: another local GPU is a
//! direct link; an NVIDIA device that is not one of our GPUs is an NVSwitch, and two GPUs that
//! both reach the switch fabric count the smaller of their switch-link counts as their NVLinks
//! (which is what `nvidia-smi topo -m` prints as `NV12` on a DGX A100).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kubetrain::api::topology::{PcieLevel, normalize_pci_bus_id};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, TopologyLevel};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id::{
    NVML_FI_DEV_REMAPPED_FAILURE, NVML_FI_DEV_REMAPPED_PENDING,
};
use nvml_wrapper::{Device, Nvml};
use tracing::{debug, info, warn};

use crate::health::XidLog;
use crate::inventory::{GpuReading, HealthReading, Inventory, MigReading, PairReading, cpu_list};

pub use nvml_wrapper::Nvml as Handle;

/// Most NVLinks a GPU has (NVML's `NVML_NVLINK_MAX_LINKS`).
const MAX_NVLINKS: u32 = 18;
/// CPU affinity words asked for: 16 × 64 = 1024 CPUs.
const AFFINITY_WORDS: usize = 16;
/// PCI vendor id of NVIDIA, in the low 16 bits of `pci_device_id`.
const NVIDIA_VENDOR: u32 = 0x10de;

/// Why the GPUs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An NVML call every topology needs failed.
    #[error("NVML {call} failed{}: {source}", gpu.map(|g| format!(" on GPU {g}")).unwrap_or_default())]
    Call {
        /// The call, for example `device_count`.
        call: &'static str,
        /// GPU index, when the call was per GPU.
        gpu: Option<u32>,
        /// The NVML error.
        source: NvmlError,
    },
}

/// Loads and initialises NVML.
pub fn init() -> Result<Nvml, NvmlError> {
    Nvml::init()
}

/// A sentence for the log saying why NVML is not usable here.
pub fn describe_init_error(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(inner) => format!(
            "NVML library libnvidia-ml.so.1 could not be loaded ({inner}): this node has no \
             NVIDIA driver, or the driver is not mounted into the labeler's pod"
        ),
        NvmlError::DriverNotLoaded => {
            "the NVIDIA driver is installed but not loaded (no GPU, or the kernel module failed)"
                .to_string()
        }
        NvmlError::NoPermission => {
            "NVML init was refused: no permission to open the /dev/nvidia* devices".to_string()
        }
        other => format!("NVML init failed: {other}"),
    }
}

fn call<T>(call: &'static str, gpu: Option<u32>, r: Result<T, NvmlError>) -> Result<T, ReadError> {
    r.map_err(|source| ReadError::Call { call, gpu, source })
}

/// Turns an optional reading into `None` when NVML cannot answer, logging why at debug.
fn optional<T>(what: &str, gpu: u32, r: Result<T, NvmlError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported) => None,
        Err(e) => {
            debug!(gpu, error = %e, "NVML {what} unavailable");
            None
        }
    }
}

/// Reads every GPU of the node. XIDs come from the event watcher's log.
pub fn read_inventory(nvml: &Nvml, xids: &XidLog) -> Result<Inventory, ReadError> {
    let count = call("device_count", None, nvml.device_count())?;
    let driver_version = nvml.sys_driver_version().ok();
    let cuda_version = nvml.sys_cuda_driver_version().ok().map(cuda_version);

    let mut gpus = Vec::new();
    let mut devices: Vec<(u32, Device<'_>)> = Vec::new();
    for index in 0..count {
        match nvml.device_by_index(index) {
            Ok(device) => match read_gpu(index, &device, xids)? {
                Some(gpu) => {
                    gpus.push(gpu);
                    devices.push((index, device));
                }
                None => gpus.push(lost_gpu(index)),
            },
            Err(NvmlError::GpuLost) => gpus.push(lost_gpu(index)),
            Err(source) => {
                return Err(ReadError::Call {
                    call: "device_by_index",
                    gpu: Some(index),
                    source,
                });
            }
        }
    }

    let pairs = read_pairs(nvml, &devices, &gpus);
    Ok(Inventory {
        driver_version,
        cuda_version,
        gpus,
        pairs,
    })
}

fn lost_gpu(index: u32) -> GpuReading {
    warn!(
        gpu = index,
        "GPU is lost (fell off the bus); publishing it as unhealthy"
    );
    GpuReading {
        index,
        health: HealthReading {
            lost: true,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// One round of load samples: each GPU's UUID, utilisation over NVML's last sample period and
/// memory in use, by index. A GPU that does not answer (lost, MIG-enabled: NVML reports no
/// utilisation for a MIG parent) is left out of the round.
pub fn read_load(nvml: &Nvml) -> BTreeMap<u32, (String, crate::load::Sample)> {
    let mut round = BTreeMap::new();
    let Ok(count) = nvml.device_count() else {
        return round;
    };
    for index in 0..count {
        let Ok(device) = nvml.device_by_index(index) else {
            continue;
        };
        let utilization = optional("utilization_rates", index, device.utilization_rates());
        let memory = optional("memory_info", index, device.memory_info());
        if let (Some(u), Some(m)) = (utilization, memory) {
            let uuid = device.uuid().unwrap_or_default();
            let sample = crate::load::Sample {
                utilization_percent: u.gpu.min(100),
                memory_used_mib: mib(m.used),
                memory_total_mib: mib(m.total),
            };
            round.insert(index, (uuid, sample));
        }
    }
    round
}

/// `13000` (what `nvmlSystemGetCudaDriverVersion` answers) → `13.0`.
pub fn cuda_version(v: i32) -> String {
    format!(
        "{}.{}",
        nvml_wrapper::cuda_driver_version_major(v),
        nvml_wrapper::cuda_driver_version_minor(v)
    )
}

/// Bytes → MiB.
pub fn mib(bytes: u64) -> u64 {
    bytes / (1024 * 1024)
}

/// NVML's CPU affinity bitmask words (64 CPUs each, lowest first) → a Linux CPU list;
/// `None` when no bit is set.
pub fn affinity_cpus(words: &[u64]) -> Option<String> {
    let list = cpu_list(words.iter().enumerate().flat_map(|(w, bits)| {
        (0..64u32)
            .filter(move |b| bits & (1 << b) != 0)
            .map(move |b| w as u32 * 64 + b)
    }));
    (!list.is_empty()).then_some(list)
}

/// One GPU; `None` when it answered `GpuLost`.
fn read_gpu(index: u32, d: &Device<'_>, xids: &XidLog) -> Result<Option<GpuReading>, ReadError> {
    let uuid = match d.uuid() {
        Err(NvmlError::GpuLost) => return Ok(None),
        r => call("uuid", Some(index), r)?,
    };
    let product = match d.name() {
        Err(NvmlError::GpuLost) => return Ok(None),
        r => call("name", Some(index), r)?,
    };
    let memory_mib = optional("memory_info", index, d.memory_info()).map_or(0, |m| mib(m.total));
    let compute_capability = optional(
        "cuda_compute_capability",
        index,
        d.cuda_compute_capability(),
    )
    .map(|cc| format!("{}.{}", cc.major, cc.minor));
    let mig_enabled = optional("mig_mode", index, d.mig_mode()).is_some_and(|m| m.current == 1);
    let pci_bus_id = optional("pci_info", index, d.pci_info()).map(|p| p.bus_id);
    let numa_node = optional("numa_node_id", index, d.numa_node_id())
        .or_else(|| pci_bus_id.as_deref().and_then(sysfs_numa_node));
    let cpu_affinity = optional("cpu_affinity", index, d.cpu_affinity(AFFINITY_WORDS))
        // c_ulong is u64 on the 64-bit Linux targets NVML supports.
        .and_then(|words| affinity_cpus(&words));

    let mut health = HealthReading {
        xids: xids.for_gpu(&uuid),
        ..Default::default()
    };
    match d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile) {
        Err(NvmlError::GpuLost) => health.lost = true,
        r => health.ecc_uncorrected_volatile = optional("total_ecc_errors", index, r),
    }
    health.pages_pending_retirement = optional(
        "are_pages_pending_retired",
        index,
        d.are_pages_pending_retired(),
    );
    if let Some(samples) = optional(
        "field_values (row remapping)",
        index,
        d.field_values_for(&[
            FieldId(NVML_FI_DEV_REMAPPED_PENDING),
            FieldId(NVML_FI_DEV_REMAPPED_FAILURE),
        ]),
    ) {
        let flag = |i: usize| -> Option<bool> {
            match samples.get(i)?.as_ref().ok()?.value.as_ref().ok()? {
                SampleValue::U32(v) => Some(*v != 0),
                SampleValue::U64(v) => Some(*v != 0),
                SampleValue::I64(v) => Some(*v != 0),
                SampleValue::F64(v) => Some(*v != 0.0),
            }
        };
        health.row_remap_pending = flag(0);
        health.row_remap_failed = flag(1);
    }

    let mig_devices = if mig_enabled {
        read_mig_devices(index, d)
    } else {
        Vec::new()
    };

    Ok(Some(GpuReading {
        index,
        uuid,
        product,
        memory_mib,
        compute_capability,
        mig_enabled,
        numa_node,
        cpu_affinity,
        pci_bus_id,
        health,
        mig_devices,
    }))
}

/// The MIG devices of a MIG-enabled GPU. NVML numbers the handles up to the GPU's maximum;
/// an index without a device answers `NotFound` (or `InvalidArg`) and is skipped. Read only:
/// the labeler never changes a GPU's MIG mode or its instances.
fn read_mig_devices(gpu: u32, d: &Device<'_>) -> Vec<MigReading> {
    let Some(max) = optional("mig_device_count", gpu, d.mig_device_count()) else {
        return Vec::new();
    };
    let mut devices = Vec::new();
    for index in 0..max {
        let mig = match d.mig_device_by_index(index) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound | NvmlError::InvalidArg) => continue,
            Err(e) => {
                debug!(gpu, mig = index, error = %e, "MIG device unavailable");
                continue;
            }
        };
        let attributes = optional("attributes", gpu, mig.attributes());
        devices.push(MigReading {
            index,
            uuid: optional("MIG uuid", gpu, mig.uuid()).unwrap_or_default(),
            name: optional("MIG name", gpu, mig.name()).unwrap_or_default(),
            memory_mib: optional("MIG memory_info", gpu, mig.memory_info())
                .map(|m| mib(m.total))
                .or(attributes.as_ref().map(|a| a.memory_size_mb)),
            gpu_slices: attributes.as_ref().map(|a| a.gpu_instance_slice_count),
            compute_slices: attributes.as_ref().map(|a| a.compute_instance_slice_count),
            multiprocessors: attributes.as_ref().map(|a| a.multiprocessor_count),
        });
    }
    devices
}

/// NUMA node from sysfs, for VMs and drivers where NVML does not answer (-1 means none).
fn sysfs_numa_node(bus_id: &str) -> Option<u32> {
    let path = format!(
        "/sys/bus/pci/devices/{}/numa_node",
        normalize_pci_bus_id(bus_id)
    );
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn read_pairs(nvml: &Nvml, devices: &[(u32, Device<'_>)], gpus: &[GpuReading]) -> Vec<PairReading> {
    let by_bus: BTreeMap<String, u32> = gpus
        .iter()
        .filter_map(|g| Some((normalize_pci_bus_id(g.pci_bus_id.as_deref()?), g.index)))
        .collect();
    let mut direct: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut to_switch: BTreeMap<u32, u32> = BTreeMap::new();
    for (index, device) in devices {
        for link in 0..MAX_NVLINKS {
            let wrapper = device.link_wrapper_for(link);
            match wrapper.is_active() {
                Ok(true) => {}
                Ok(false) => continue,
                // NotSupported: no NVLink on this GPU; InvalidArg: past its last link.
                Err(NvmlError::NotSupported | NvmlError::InvalidArg) => break,
                Err(e) => {
                    debug!(gpu = index, link, error = %e, "NVLink state unavailable");
                    continue;
                }
            }
            match wrapper.remote_pci_info() {
                Ok(remote) => match by_bus.get(&normalize_pci_bus_id(&remote.bus_id)) {
                    Some(peer) if peer != index => {
                        *direct
                            .entry((*index.min(peer), *index.max(peer)))
                            .or_default() += 1;
                    }
                    Some(_) => {}
                    None if remote.pci_device_id & 0xffff == NVIDIA_VENDOR => {
                        *to_switch.entry(*index).or_default() += 1;
                    }
                    None => {
                        debug!(gpu = index, link, remote = %remote.bus_id, "NVLink to a non-NVIDIA device (CPU) ignored")
                    }
                },
                Err(e) => {
                    debug!(gpu = index, link, error = %e, "NVLink remote unknown; link not counted")
                }
            }
        }
    }
    // Each direct link was seen from both ends.
    for n in direct.values_mut() {
        *n = n.div_ceil(2);
    }

    let mut pairs = Vec::new();
    for (i, (a, da)) in devices.iter().enumerate() {
        for (b, db) in &devices[i + 1..] {
            let pcie = optional(
                "topology_common_ancestor",
                *a,
                nvml.topology_common_ancestor(da, db),
            )
            .map(pcie_level);
            let switched = match (to_switch.get(a), to_switch.get(b)) {
                (Some(x), Some(y)) => *x.min(y),
                _ => 0,
            };
            let nvlinks = direct.get(&(*a.min(b), *a.max(b))).copied().unwrap_or(0) + switched;
            pairs.push(PairReading {
                a: *a.min(b),
                b: *a.max(b),
                nvlinks,
                pcie,
            });
        }
    }
    pairs
}

fn pcie_level(level: TopologyLevel) -> PcieLevel {
    match level {
        TopologyLevel::Internal => PcieLevel::Board,
        TopologyLevel::Single => PcieLevel::Switch,
        TopologyLevel::Multiple => PcieLevel::MultiSwitch,
        TopologyLevel::HostBridge => PcieLevel::HostBridge,
        TopologyLevel::Node => PcieLevel::Numa,
        TopologyLevel::System => PcieLevel::System,
    }
}

/// Watches NVML events (critical XIDs, double-bit ECC) on a thread of its own: records XIDs
/// in `xids` and calls `changed` so the labeler refreshes at once. Returns when `stop` is set
/// (within a second), or at once when no GPU supports the events.
pub fn watch_events(
    nvml: Arc<Nvml>,
    xids: XidLog,
    stop: Arc<AtomicBool>,
    changed: impl Fn() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let wanted = EventTypes::CRITICAL_XID_ERROR | EventTypes::DOUBLE_BIT_ECC_ERROR;
        let count = nvml.device_count().unwrap_or(0);
        let mut skip: Vec<u32> = Vec::new();
        // Registering a device that fails releases the whole set, so start again without it.
        let set = loop {
            let mut set = match nvml.create_event_set() {
                Ok(s) => Some(s),
                Err(e) => {
                    warn!(error = %e, "cannot create an NVML event set; XIDs are not watched");
                    return;
                }
            };
            let mut registered = 0;
            let mut failed = None;
            for index in (0..count).filter(|i| !skip.contains(i)) {
                let Ok(device) = nvml.device_by_index(index) else {
                    continue;
                };
                let events = device
                    .supported_event_types()
                    .map(|s| s & wanted)
                    .unwrap_or(EventTypes::empty());
                let Some(current) = set.take() else { break };
                if events.is_empty() {
                    set = Some(current);
                    continue;
                }
                match device.register_events(events, current) {
                    Ok(s) => {
                        set = Some(s);
                        registered += 1;
                    }
                    Err(e) => {
                        warn!(gpu = index, error = %e.error, "cannot watch NVML events on this GPU");
                        failed = Some(index);
                        break;
                    }
                }
            }
            match (failed, set) {
                (Some(index), _) => skip.push(index),
                (None, Some(set)) if registered > 0 => break set,
                _ => {
                    info!("no GPU supports XID/ECC events; health is read on each refresh only");
                    return;
                }
            }
        };
        info!("watching NVML XID and ECC events");
        while !stop.load(Ordering::Relaxed) {
            match set.wait(1000) {
                Ok(event) => {
                    let uuid = event.device.uuid().unwrap_or_default();
                    if event.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
                        let xid = match event.event_data {
                            Some(XidError::Value(x)) => x,
                            _ => 0,
                        };
                        if xids.record(&uuid, xid) {
                            warn!(gpu = %uuid, xid, "critical XID event; marking the GPU unhealthy");
                            changed();
                        } else {
                            info!(gpu = %uuid, xid, "application XID event; GPU stays healthy");
                        }
                    } else {
                        warn!(gpu = %uuid, event = ?event.event_type, "ECC event; refreshing");
                        changed();
                    }
                }
                Err(NvmlError::Timeout) => {}
                Err(e) => {
                    warn!(error = %e, "waiting for NVML events failed");
                    std::thread::sleep(Duration::from_secs(5));
                }
            }
        }
    })
}
