//! Topology building on captures of real machines (see `tests/fixtures/README.md`).
//!
//! Each test reads what the machine reported, builds the topology the labeler would publish,
//! and checks it the way a scheduler would rely on it: which GPUs form a group, whether the
//! group is NVLink, which socket it sits on, and what the labels say.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kubetrain::api::NodeTopology;
use kubetrain::api::topology::PcieLevel;
use kubetrain_node_labeler::inventory::{GpuReading, HealthReading, Inventory};
use kubetrain_node_labeler::labels::{self, is_valid_value};
use kubetrain_node_labeler::nvml;
use kubetrain_node_labeler::publish::Desired;
use kubetrain_node_labeler::source::{Observation, parse_description};
use kubetrain_node_labeler::topo_matrix::TopoMatrix;
use kubetrain_node_labeler::topology;

fn fixture(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The inventory a `topo -m` capture gives, with what the matrix does not say filled in.
fn machine(name: &str, product: &str, memory_mib: u64, cc: &str) -> Inventory {
    let mut inventory = TopoMatrix::parse(&fixture(&format!("{name}.topo.txt")))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .to_inventory();
    for g in &mut inventory.gpus {
        g.uuid = format!("GPU-{name}-{}", g.index);
        g.product = product.to_string();
        g.memory_mib = memory_mib;
        g.compute_capability = Some(cc.to_string());
    }
    inventory.driver_version = Some("535.104.12".into());
    inventory.cuda_version = Some("12.2".into());
    inventory
}

fn groups(t: &NodeTopology) -> Vec<(Vec<u32>, bool)> {
    t.groups
        .iter()
        .map(|g| (g.gpus.clone(), g.nvlink))
        .collect()
}

fn sockets(t: &NodeTopology) -> Vec<Option<u32>> {
    t.gpus.iter().map(|g| g.socket).collect()
}

/// What every published topology must satisfy, whatever the machine.
fn check_publishable(t: &NodeTopology) -> BTreeMap<String, String> {
    t.validate().unwrap();
    assert_eq!(NodeTopology::parse(&t.to_annotation()).unwrap(), *t);
    let desired = Desired::new(Some(t));
    for (k, v) in &desired.labels {
        assert!(labels::is_ours(k), "{k}");
        assert!(is_valid_value(v), "{k}={v}");
    }
    desired.labels
}

const ALL: [(&str, usize); 12] = [
    ("dgx-a100-8x", 8),
    ("dgx1-v100-8x", 8),
    ("dgx1-8x-pcie-paths", 8),
    ("dgx-h200-8x", 8),
    ("hgx-h20-8x", 8),
    ("pcie-rtx4090-8x", 8),
    ("pcie-rtx3090-8x", 8),
    ("pcie-titanx-4x-2socket", 4),
    ("pcie-titanx-4x-1socket", 4),
    ("pcie-rtx3090-4x-nvlink-pairs", 4),
    ("traverse-4gpu-nv3-pairs", 4),
    ("della-a100-2x", 2),
];

#[test]
fn every_capture_parses_and_builds_a_publishable_topology() {
    for (name, gpus) in ALL {
        let inventory = machine(name, "Some GPU", 1024, "8.0");
        assert_eq!(inventory.gpus.len(), gpus, "{name}");
        // Every GPU pair is known, from one side of the matrix.
        assert_eq!(inventory.pairs.len(), gpus * (gpus - 1) / 2, "{name}");
        let t = topology::build(&inventory, None);
        let labels = check_publishable(&t);
        assert_eq!(labels[labels::COUNT], gpus.to_string(), "{name}");
        // The file form of the labeler reads the same capture the same way.
        let Ok(Observation::Inventory(from_file)) =
            parse_description(&fixture(&format!("{name}.topo.txt")))
        else {
            panic!("{name}: not read as a matrix");
        };
        assert_eq!(from_file.pairs, inventory.pairs, "{name}");
    }
}

#[test]
fn dgx_a100_nvswitch_is_one_eight_gpu_nvlink_group() {
    let inv = machine("dgx-a100-8x", "NVIDIA A100-SXM4-80GB", 81920, "8.0");
    let t = topology::build(&inv, Some("rack-7".into()));
    assert_eq!(groups(&t), vec![((0..8).collect(), true)]);
    assert_eq!(t.links.len(), 28);
    assert!(t.links.iter().all(|l| l.nvlinks == 12));
    // NPS4 EPYC: GPUs sit on NUMA nodes 3, 1, 7, 5 in pairs; sockets number them in order.
    let numa: Vec<_> = t.gpus.iter().map(|g| g.numa_node).collect();
    assert_eq!(numa, [3, 3, 1, 1, 7, 7, 5, 5].map(Some));
    assert_eq!(sockets(&t), [1, 1, 0, 0, 3, 3, 2, 2].map(Some));
    assert_eq!(t.gpus[0].cpu_affinity.as_deref(), Some("48-63,176-191"));
    // The group spans NUMA nodes, so it has none of its own.
    assert_eq!(t.groups[0].numa_node, None);
    assert_eq!(t.rack.as_deref(), Some("rack-7"));

    let labels = check_publishable(&t);
    let expected: BTreeMap<String, String> = [
        ("gpu.kubetrain.io/present", "true"),
        ("gpu.kubetrain.io/product", "NVIDIA-A100-SXM4-80GB"),
        ("gpu.kubetrain.io/count", "8"),
        ("gpu.kubetrain.io/memory-mib", "81920"),
        ("gpu.kubetrain.io/family", "ampere"),
        ("gpu.kubetrain.io/nvlink", "true"),
        ("gpu.kubetrain.io/driver", "535.104.12"),
        ("gpu.kubetrain.io/cuda", "12.2"),
        ("gpu.kubetrain.io/healthy-count", "8"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(labels, expected);
}

#[test]
fn dgx1_hybrid_cube_mesh_splits_into_two_nvlink_quads() {
    let inv = machine("dgx1-v100-8x", "Tesla V100-SXM2-16GB", 16160, "7.0");
    assert_eq!(inv.nvlinks(0, 3), 2);
    assert_eq!(inv.nvlinks(0, 4), 2);
    assert_eq!(inv.nvlinks(0, 1), 1);
    assert_eq!(inv.nvlinks(0, 6), 0);
    assert_eq!(inv.pair(0, 6).and_then(|p| p.pcie), Some(PcieLevel::System));

    let t = topology::build(&inv, None);
    // GPU0 also reaches GPU4 over NV2, but {0, 4} is no clique of four: the quads win.
    assert_eq!(
        groups(&t),
        vec![(vec![0, 1, 2, 3], true), (vec![4, 5, 6, 7], true)]
    );
    // Only CPU affinity in this capture: the sockets come from it.
    assert_eq!(sockets(&t), [0, 0, 0, 0, 1, 1, 1, 1].map(Some));
    assert_eq!(t.groups[0].socket, Some(0));
    assert_eq!(t.groups[1].socket, Some(1));
    assert_eq!(t.groups[0].numa_node, None);
    let link = t.link(0, 4).unwrap();
    assert_eq!((link.nvlinks, link.pcie.as_deref()), (2, None));
    let link = t.link(6, 0).unwrap();
    assert_eq!((link.nvlinks, link.pcie.as_deref()), (0, Some("system")));
    let labels = check_publishable(&t);
    assert_eq!(labels[labels::FAMILY], "volta");
    assert_eq!(labels[labels::PRODUCT], "Tesla-V100-SXM2-16GB");
}

#[test]
fn pcie_box_over_two_sockets_has_no_groups_beyond_single_gpus() {
    // 4× Titan X, PHB within a socket: no PCIe switch shared, so no group of two; the
    // socket level is what keeps GPU0+1 and GPU2+3 together.
    let t = topology::build(
        &machine(
            "pcie-titanx-4x-2socket",
            "NVIDIA GeForce GTX TITAN X",
            12288,
            "5.2",
        ),
        None,
    );
    assert_eq!(
        groups(&t),
        vec![
            (vec![0], false),
            (vec![1], false),
            (vec![2], false),
            (vec![3], false)
        ]
    );
    assert_eq!(sockets(&t), [0, 0, 1, 1].map(Some));
    let labels = check_publishable(&t);
    assert_eq!(labels[labels::NVLINK], "false");
    assert_eq!(labels[labels::FAMILY], "maxwell");
    assert_eq!(labels[labels::PRODUCT], "NVIDIA-GeForce-GTX-TITAN-X");
}

#[test]
fn pcie_switch_pairs_form_groups() {
    let t = topology::build(&machine("pcie-titanx-4x-1socket", "X", 1, "5.2"), None);
    assert_eq!(groups(&t), vec![(vec![0, 1], false), (vec![2, 3], false)]);
    assert_eq!(sockets(&t), [0, 0, 0, 0].map(Some));

    let t = topology::build(&machine("dgx1-8x-pcie-paths", "X", 1, "7.0"), None);
    assert_eq!(
        groups(&t),
        vec![
            (vec![0, 1], false),
            (vec![2, 3], false),
            (vec![4, 5], false),
            (vec![6, 7], false)
        ]
    );
    assert_eq!(t.groups[2].numa_node, Some(1));
}

#[test]
fn nvlink_bridged_pairs_are_groups_of_two() {
    let t = topology::build(
        &machine("pcie-rtx3090-4x-nvlink-pairs", "X", 1, "8.6"),
        None,
    );
    assert_eq!(groups(&t), vec![(vec![0, 2], true), (vec![1, 3], true)]);
    assert_eq!(t.link(0, 2).unwrap().nvlinks, 4);

    // NUMA ids need not be contiguous (0 and 8); sockets are.
    let t = topology::build(&machine("traverse-4gpu-nv3-pairs", "X", 1, "7.0"), None);
    assert_eq!(groups(&t), vec![(vec![0, 1], true), (vec![2, 3], true)]);
    assert_eq!(t.groups[1].numa_node, Some(8));
    assert_eq!(t.groups[1].socket, Some(1));
}

#[test]
fn nvswitch_hopper_boxes_are_one_group() {
    for name in ["dgx-h200-8x", "hgx-h20-8x"] {
        let t = topology::build(&machine(name, "X", 1, "9.0"), None);
        assert_eq!(groups(&t), vec![((0..8).collect(), true)], "{name}");
        assert!(t.links.iter().all(|l| l.nvlinks == 18), "{name}");
        assert_eq!(sockets(&t), [0, 0, 0, 0, 1, 1, 1, 1].map(Some), "{name}");
    }
}

#[test]
fn pcie_boxes_without_switches_are_single_gpu_groups_on_two_sockets() {
    for name in ["pcie-rtx4090-8x", "pcie-rtx3090-8x", "della-a100-2x"] {
        let t = topology::build(&machine(name, "X", 1, "8.9"), None);
        assert!(
            t.groups.iter().all(|g| g.gpus.len() == 1 && !g.nvlink),
            "{name}"
        );
        let n = t.gpus.len();
        let expected: Vec<_> = (0..n).map(|i| Some(u32::from(i >= n / 2))).collect();
        assert_eq!(sockets(&t), expected, "{name}");
    }
}

/// The H100 VM: what nvml-wrapper answered (`nvml-calls.txt`), put through the same
/// conversions `nvml::read_inventory` applies.
fn h100_from_nvml_calls() -> Inventory {
    let calls = fixture("nvml/h100-80gb-hbm3-vm/nvml-calls.txt");
    let get = |key: &str| -> &str {
        calls
            .lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(": "))
            .unwrap_or_else(|| panic!("no {key} in nvml-calls.txt"))
    };
    let ok_str = |v: &str| -> String {
        v.strip_prefix("Ok(\"")
            .and_then(|v| v.strip_suffix("\")"))
            .unwrap()
            .to_string()
    };
    let ok_num = |v: &str| -> u64 {
        v.strip_prefix("Ok(")
            .and_then(|v| v.strip_suffix(')'))
            .unwrap()
            .parse()
            .unwrap()
    };
    let not_supported = |v: &str| v == "Err(NotSupported)";

    let cc = get("cuda_cc");
    let number_after = |field: &str| -> u32 {
        let rest = &cc[cc.find(field).unwrap() + field.len()..];
        rest.trim_start_matches([':', ' '])
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let pci = get("pci");
    let bus_id = pci.split('"').nth(1).unwrap().to_string();
    let affinity = get("cpu_affinity(1 word)");
    let words: Vec<u64> = affinity
        .trim_start_matches("Ok([")
        .trim_end_matches("])")
        .split(',')
        .map(|w| w.trim().parse().unwrap())
        .collect();
    assert!(not_supported(get("numa_node_id")));
    assert!(not_supported(get("retired_pages_pending")));
    assert_eq!(get("nvlink 0"), "NotSupported");

    let gpu = GpuReading {
        index: 0,
        uuid: ok_str(get("uuid")),
        product: ok_str(get("name")),
        memory_mib: nvml::mib(ok_num(get("memory"))),
        compute_capability: Some(format!(
            "{}.{}",
            number_after("major"),
            number_after("minor")
        )),
        mig_enabled: get("mig_mode").contains("current: 1"),
        numa_node: None,
        cpu_affinity: nvml::affinity_cpus(&words),
        pci_bus_id: Some(bus_id),
        health: HealthReading {
            ecc_uncorrected_volatile: Some(ok_num(get("ecc_uncorrected_volatile"))),
            pages_pending_retirement: None,
            ..Default::default()
        },
        mig_devices: Vec::new(),
    };
    Inventory {
        driver_version: Some(ok_str(get("driver"))),
        cuda_version: Some(nvml::cuda_version(ok_num(get("cuda_driver_version")) as i32)),
        gpus: vec![gpu],
        pairs: vec![],
    }
}

#[test]
fn single_h100_vm_with_not_supported_answers() {
    let inv = h100_from_nvml_calls();
    let t = topology::build(&inv, None);
    assert_eq!(groups(&t), vec![(vec![0], false)]);
    let gpu = &t.gpus[0];
    assert_eq!(gpu.memory_mib, 81559); // what nvidia-smi shows
    assert_eq!(gpu.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(gpu.cpu_affinity.as_deref(), Some("0-15"));
    assert_eq!(gpu.socket, Some(0));
    assert_eq!(gpu.pci_bus_id.as_deref(), Some("00000000:00:06.0"));
    // NotSupported page retirement is no signal, not a fault.
    assert!(gpu.healthy, "{:?}", gpu.unhealthy_reason);
    assert!(!gpu.mig_enabled);

    let labels = check_publishable(&t);
    let expected: BTreeMap<String, String> = [
        ("gpu.kubetrain.io/present", "true"),
        ("gpu.kubetrain.io/product", "NVIDIA-H100-80GB-HBM3"),
        ("gpu.kubetrain.io/count", "1"),
        ("gpu.kubetrain.io/memory-mib", "81559"),
        ("gpu.kubetrain.io/family", "hopper"),
        ("gpu.kubetrain.io/nvlink", "false"),
        ("gpu.kubetrain.io/driver", "580.159.04"),
        ("gpu.kubetrain.io/cuda", "13.0"),
        ("gpu.kubetrain.io/healthy-count", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(labels, expected);

    // The `topo -m` in the same capture agrees: one GPU on CPUs 0-15, NUMA 0.
    let matrix = TopoMatrix::parse(&fixture("nvml/h100-80gb-hbm3-vm/nvidia-smi.txt")).unwrap();
    assert_eq!(matrix.rows.len(), 1);
    assert_eq!(matrix.rows[0].cpu_affinity.as_deref(), Some("0-15"));
    assert_eq!(matrix.rows[0].numa_affinity, Some(0));
}

/// The labeler's own `--dry-run --output json` on a second H100 VM of the same kind
/// (`dry-run.json`, run on real hardware through NVML, 2026-11-25) publishes what the test
/// builds from the first one's recorded NVML answers: same labels, same topology, only the
/// GPU's UUID differs. So the recorded answers stand for what the binary reads.
#[test]
fn the_binary_on_a_real_h100_publishes_what_the_recorded_answers_build() {
    let run: serde_json::Value =
        serde_json::from_str(&fixture("nvml/h100-80gb-hbm3-vm/dry-run.json")).unwrap();
    let real: NodeTopology = serde_json::from_value(run["topology"].clone()).unwrap();
    let real_labels: BTreeMap<String, String> =
        serde_json::from_value(run["labels"].clone()).unwrap();
    assert_eq!(run["fieldManager"], "kubetrain-node-labeler");
    assert!(run.get("noGpuReason").is_none());

    let mut built = topology::build(&h100_from_nvml_calls(), None);
    assert_ne!(built.gpus[0].uuid, real.gpus[0].uuid, "two machines");
    built.gpus[0].uuid = real.gpus[0].uuid.clone();
    assert_eq!(built, real);
    assert_eq!(check_publishable(&built), real_labels);
}

#[test]
fn an_unhealthy_gpu_is_published_with_its_reason() {
    let mut inv = machine("dgx-a100-8x", "NVIDIA A100-SXM4-80GB", 81920, "8.0");
    inv.gpus[5].health.xids = vec![79];
    inv.gpus[6].health.ecc_uncorrected_volatile = Some(1);
    inv.gpus[7].health.xids = vec![13]; // application error: GPU stays healthy
    let t = topology::build(&inv, None);
    assert_eq!(t.healthy_count(), 6);
    assert_eq!(t.gpus[5].xids, vec![79]);
    assert!(
        t.gpus[5]
            .unhealthy_reason
            .as_deref()
            .unwrap()
            .contains("XID 79")
    );
    assert!(t.gpus[7].healthy && t.gpus[7].xids.is_empty());
    // The topology itself does not change: the group is physical.
    assert_eq!(groups(&t), vec![((0..8).collect(), true)]);
    assert_eq!(check_publishable(&t)[labels::HEALTHY_COUNT], "6");
}

/// The MIG devices of each GPU of a published topology, as `(gpu, [profile…])`.
fn mig_profiles(t: &NodeTopology) -> Vec<(u32, Vec<String>)> {
    t.gpus
        .iter()
        .filter(|g| g.mig_enabled)
        .map(|g| (g.index, g.mig.iter().map(|m| m.profile.clone()).collect()))
        .collect()
}

#[test]
fn mig_listings_publish_each_slice_with_its_profile_and_count_labels() {
    let read = |name: &str| -> NodeTopology {
        let Ok(Observation::Inventory(inventory)) =
            parse_description(&fixture(&format!("{name}.smi.txt")))
        else {
            panic!("{name}: not read as an nvidia-smi -L listing");
        };
        topology::build(&inventory, None)
    };

    let h100 = read("h100-mig-mixed-list");
    let labels = check_publishable(&h100);
    assert_eq!(
        mig_profiles(&h100),
        [(
            0,
            vec![
                "3g.40gb".into(),
                "2g.20gb".into(),
                "1g.10gb".into(),
                "1g.10gb".into()
            ]
        )]
    );
    assert_eq!(
        h100.gpus[0].mig[3].uuid,
        "MIG-0f709664-740c-52b0-ae79-3e4c9ede6d3b"
    );
    assert_eq!(h100.gpus[0].mig[0].gpu_slices, Some(3));
    assert_eq!(labels["gpu.kubetrain.io/mig"], "true");
    assert_eq!(labels["gpu.kubetrain.io/mig-1g.10gb.count"], "2");
    assert_eq!(labels["gpu.kubetrain.io/mig-3g.40gb.count"], "1");
    assert_eq!(labels[labels::PRODUCT], "NVIDIA-H100-80GB-HBM3");

    // An older driver: single spaces, MIG UUIDs that name the parent GPU.
    let a100 = read("a100-40gb-mig-mixed-legacy-uuid-list");
    check_publishable(&a100);
    assert_eq!(
        mig_profiles(&a100),
        [(0, vec!["3g.20gb".into(), "2g.10gb".into(), "1g.5gb".into()])]
    );
    assert_eq!(
        a100.gpus[0].mig[2].uuid,
        "MIG-GPU-4200ccc0-2667-d4cb-9137-f932c716232a/9/0"
    );

    // MIG on one GPU of eight: the other seven stay whole GPUs.
    let mixed = read("a100-80gb-8x-one-gpu-mig-list");
    let labels = check_publishable(&mixed);
    assert_eq!(mixed.gpus.len(), 8);
    assert_eq!(mig_profiles(&mixed), [(0, vec!["4g.40gb".into()])]);
    assert!(
        mixed.gpus[1..]
            .iter()
            .all(|g| !g.mig_enabled && g.mig.is_empty())
    );
    assert_eq!(labels["gpu.kubetrain.io/mig-4g.40gb.count"], "1");
    assert_eq!(labels[labels::COUNT], "8");
}

#[test]
fn a_mig_slice_nvml_names_without_a_profile_is_named_from_its_measured_slices() {
    use kubetrain_node_labeler::inventory::MigReading;
    // The sizes `nvidia-smi` prints for a DGX H100's slices
    // (`dgx-h100-8x-mig-mixed-smi.smi.txt` in the shared captures): 40,448 and 9,984 MiB.
    let slice = |index, name: &str, gpu_slices, memory_mib| MigReading {
        index,
        uuid: format!("MIG-{index}"),
        name: name.into(),
        memory_mib: Some(memory_mib),
        gpu_slices: Some(gpu_slices),
        compute_slices: Some(gpu_slices),
        multiprocessors: None,
    };
    let inventory = Inventory {
        gpus: vec![GpuReading {
            index: 0,
            uuid: "GPU-0".into(),
            product: "NVIDIA H100 80GB HBM3".into(),
            mig_enabled: true,
            mig_devices: vec![
                slice(0, "NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", 1, 9_984),
                slice(1, "", 3, 40_448),
                MigReading {
                    index: 2,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    let t = topology::build(&inventory, None);
    check_publishable(&t);
    // The name wins (it carries `+me`); without one, the measured slices; a slice with
    // neither is not published rather than published wrong.
    assert_eq!(
        mig_profiles(&t),
        [(0, vec!["1g.10gb+me".into(), "3g.40gb".into()])]
    );
}
