//! Properties that hold for any input: label values are always valid, and GPU groups are
//! always a partition of the GPUs into NVLink cliques and NVLink-free rest.

use kubetrain::api::topology::PcieLevel;
use kubetrain_node_labeler::inventory::{GpuReading, Inventory, PairReading};
use kubetrain_node_labeler::labels::{self, is_valid_value, sanitize_value};
use kubetrain_node_labeler::publish::Desired;
use kubetrain_node_labeler::topology;
use proptest::prelude::*;

fn any_level() -> impl Strategy<Value = Option<PcieLevel>> {
    prop::option::of(prop::sample::select(PcieLevel::ALL.to_vec()))
}

/// A random node: up to 12 GPUs, random NVLink counts (mostly none) and PCIe levels,
/// random products, NUMA nodes and health.
fn any_inventory() -> impl Strategy<Value = Inventory> {
    (1usize..=12).prop_flat_map(|n| {
        let pairs = n * (n - 1) / 2;
        (
            prop::collection::vec(
                (prop_oneof![3 => Just(0u32), 1 => 1u32..=18], any_level()),
                pairs,
            ),
            prop::collection::vec(
                (
                    ".{0,80}",
                    0u64..200_000,
                    prop::option::of(0u32..4),
                    any::<bool>(),
                    prop::option::of(0u64..3),
                ),
                n,
            ),
            prop::option::of(".{0,40}"),
            prop::option::of(".{0,20}"),
        )
            .prop_map(move |(links, gpus, driver, cuda)| {
                let mut pairs = Vec::new();
                let mut k = 0;
                for a in 0..n as u32 {
                    for b in a + 1..n as u32 {
                        let (nvlinks, pcie) = links[k];
                        k += 1;
                        pairs.push(PairReading {
                            a,
                            b,
                            nvlinks,
                            pcie,
                        });
                    }
                }
                let gpus = gpus
                    .into_iter()
                    .enumerate()
                    .map(|(i, (product, memory_mib, numa_node, mig_enabled, ecc))| {
                        let mut g = GpuReading {
                            index: i as u32,
                            product,
                            memory_mib,
                            numa_node,
                            mig_enabled,
                            compute_capability: Some(format!("{}.{}", i % 13, i % 10)),
                            ..Default::default()
                        };
                        g.health.ecc_uncorrected_volatile = ecc;
                        g
                    })
                    .collect();
                Inventory {
                    driver_version: driver,
                    cuda_version: cuda,
                    gpus,
                    pairs,
                }
            })
    })
}

proptest! {
    #[test]
    fn sanitised_values_are_valid_and_stable(raw in ".{0,100}") {
        let v = sanitize_value(&raw);
        prop_assert!(is_valid_value(&v), "{raw:?} -> {v:?}");
        prop_assert_eq!(sanitize_value(&v), v.clone());
        if is_valid_value(&raw) && !raw.contains("--") {
            prop_assert_eq!(v, raw);
        }
    }

    #[test]
    fn every_published_label_is_valid(inventory in any_inventory()) {
        let t = topology::build(&inventory, None);
        let desired = Desired::new(Some(&t));
        for (k, v) in &desired.labels {
            prop_assert!(labels::is_ours(k));
            prop_assert!(is_valid_value(v), "{k}={v:?}");
        }
        prop_assert_eq!(&desired.labels[labels::PRESENT], "true");
        prop_assert_eq!(&desired.labels[labels::COUNT], &inventory.gpus.len().to_string());
    }

    #[test]
    fn groups_partition_gpus_into_nvlink_cliques_and_the_rest(inventory in any_inventory()) {
        let t = topology::build(&inventory, None);
        t.validate().map_err(|e| TestCaseError::fail(e.to_string()))?;
        for g in &t.groups {
            if g.nvlink {
                prop_assert!(g.gpus.len() >= 2);
                for (i, a) in g.gpus.iter().enumerate() {
                    for b in &g.gpus[i + 1..] {
                        prop_assert!(inventory.nvlinks(*a, *b) > 0, "{a}-{b} in {:?}", g.gpus);
                    }
                }
            }
        }
        // Whatever is left outside NVLink groups has no NVLink among itself: the cliques
        // took every NVLink pair they could.
        let rest: Vec<u32> = t.groups.iter().filter(|g| !g.nvlink).flat_map(|g| g.gpus.clone()).collect();
        for a in &rest {
            for b in &rest {
                prop_assert!(a == b || inventory.nvlinks(*a, *b) == 0);
            }
        }
        // Deterministic: the same readings give the same document.
        prop_assert_eq!(topology::build(&inventory, None), t);
    }
}
