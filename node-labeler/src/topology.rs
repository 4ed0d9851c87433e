//! From an [`Inventory`] to the published [`NodeTopology`]: health verdicts, sockets, GPU
//! groups and pair links.
//!
//! Groups are what the scheduler treats as its smallest topology domain, so a group must be
//! a set of GPUs that really talk fast to each other:
//! 1. **NVLink cliques.** Repeatedly take the largest set of not-yet-grouped GPUs in which
//!    every pair has NVLink (ties: most NVLinks in total, then lowest indices). NVSwitch
//!    boxes give one all-GPU group; a DGX-1's hybrid cube-mesh gives two 4-GPU groups (GPU0
//!    also links to GPU4, but {0, 4} is no clique of 4); NVLink-bridged PCIe cards give pairs.
//! 2. **PCIe switches.** GPUs left over are grouped when their path stays below the host
//!    bridge (`PIX`/`PXB`); PCIe paths form a tree, so this relation is an equivalence.
//! 3. Anything else is a group of one.
//!
//! Sockets (CPU-locality domains) come from the NUMA node, or where NVML does not report it
//! (VMs, older boxes), from the GPU's CPU affinity; they are numbered from 0 in NUMA or CPU
//! order.

use std::collections::{BTreeMap, BTreeSet};

use kubetrain::api::topology::{GpuGroup, GpuInfo, GpuLink, NodeTopology, TOPOLOGY_VERSION};
use kubetrain::api::{MigDevice, MigProfile};
use tracing::warn;

use crate::health;
use crate::inventory::{Inventory, MigReading, first_cpu};

/// A MIG device as published: its profile from the name NVML gives it (which carries
/// extensions such as `+me`), else from its measured slices and memory; a device whose
/// profile cannot be told is left out (a wrong profile would send the wrong pods to it).
fn mig_device(reading: &MigReading) -> Option<MigDevice> {
    let named = reading
        .name
        .rsplit_once("MIG ")
        .and_then(|(_, p)| p.trim().parse::<MigProfile>().ok());
    let measured = match (reading.gpu_slices, reading.memory_mib) {
        (Some(g), Some(m)) if g > 0 && m > 0 => Some(MigProfile::from_attributes(
            g,
            reading.compute_slices.unwrap_or(g),
            m,
        )),
        _ => None,
    };
    let Some(profile) = named.or(measured) else {
        warn!(mig = reading.index, uuid = %reading.uuid, name = %reading.name, "MIG device profile unknown; not published");
        return None;
    };
    Some(MigDevice {
        index: reading.index,
        uuid: reading.uuid.clone(),
        gpu_slices: reading.gpu_slices.or(Some(profile.gpu_slices)),
        profile: profile.to_string(),
        memory_mib: reading.memory_mib,
        multiprocessors: reading.multiprocessors,
    })
}

/// Builds the topology document of a node; `rack` comes from the Node's own labels.
pub fn build(inventory: &Inventory, rack: Option<String>) -> NodeTopology {
    let mut readings: Vec<_> = inventory.gpus.iter().collect();
    readings.sort_by_key(|g| g.index);
    let sockets = sockets(inventory);

    let gpus: Vec<GpuInfo> = readings
        .iter()
        .map(|g| {
            let verdict = health::assess(&g.health);
            GpuInfo {
                index: g.index,
                uuid: g.uuid.clone(),
                product: g.product.clone(),
                memory_mib: g.memory_mib,
                compute_capability: g.compute_capability.clone(),
                mig_enabled: g.mig_enabled,
                numa_node: g.numa_node,
                socket: sockets.get(&g.index).copied(),
                cpu_affinity: g.cpu_affinity.clone(),
                pci_bus_id: g.pci_bus_id.clone(),
                healthy: verdict.healthy,
                unhealthy_reason: verdict.reason,
                xids: g
                    .health
                    .xids
                    .iter()
                    .copied()
                    .filter(|x| health::is_critical_xid(*x))
                    .collect(),
                mig: if g.mig_enabled {
                    g.mig_devices.iter().filter_map(mig_device).collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();

    let indices: Vec<u32> = gpus.iter().map(|g| g.index).collect();
    let groups = groups(inventory, &indices)
        .into_iter()
        .map(|(members, nvlink)| {
            let common = |f: &dyn Fn(&GpuInfo) -> Option<u32>| {
                let values: BTreeSet<Option<u32>> = gpus
                    .iter()
                    .filter(|g| members.contains(&g.index))
                    .map(f)
                    .collect();
                match values.into_iter().collect::<Vec<_>>()[..] {
                    [Some(v)] => Some(v),
                    _ => None,
                }
            };
            GpuGroup {
                numa_node: common(&|g| g.numa_node),
                socket: common(&|g| g.socket),
                gpus: members,
                nvlink,
            }
        })
        .collect();

    let mut links: Vec<GpuLink> = inventory
        .pairs
        .iter()
        .filter(|p| p.a != p.b && indices.contains(&p.a) && indices.contains(&p.b))
        .map(|p| GpuLink {
            a: p.a.min(p.b),
            b: p.a.max(p.b),
            nvlinks: p.nvlinks,
            pcie: p.pcie.map(|l| l.as_str().to_string()),
        })
        .collect();
    links.sort_by_key(|l| (l.a, l.b));
    links.dedup_by_key(|l| (l.a, l.b));

    NodeTopology {
        version: TOPOLOGY_VERSION,
        product: main_product(&gpus),
        driver_version: inventory.driver_version.clone(),
        cuda_version: inventory.cuda_version.clone(),
        rack,
        gpus,
        groups,
        links,
    }
}

/// The product most GPUs have (ties: the one of the lowest index).
fn main_product(gpus: &[GpuInfo]) -> String {
    let mut counts: BTreeMap<&str, (usize, u32)> = BTreeMap::new();
    for g in gpus {
        let e = counts.entry(g.product.as_str()).or_insert((0, g.index));
        e.0 += 1;
        e.1 = e.1.min(g.index);
    }
    counts
        .into_iter()
        .max_by_key(|(_, (n, first))| (*n, std::cmp::Reverse(*first)))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// Socket number per GPU index, from NUMA node or else CPU affinity.
fn sockets(inventory: &Inventory) -> BTreeMap<u32, u32> {
    #[derive(PartialEq, Eq, PartialOrd, Ord, Clone)]
    enum Locality {
        Numa(u32),
        Cpus(u32, String),
    }
    let keyed: Vec<(u32, Locality)> = inventory
        .gpus
        .iter()
        .filter_map(|g| {
            let key = match (g.numa_node, &g.cpu_affinity) {
                (Some(n), _) => Locality::Numa(n),
                (None, Some(cpus)) => Locality::Cpus(first_cpu(cpus)?, cpus.clone()),
                (None, None) => return None,
            };
            Some((g.index, key))
        })
        .collect();
    let distinct: BTreeSet<Locality> = keyed.iter().map(|(_, k)| k.clone()).collect();
    let ids: BTreeMap<Locality, u32> = distinct.into_iter().zip(0..).collect();
    keyed.into_iter().map(|(i, k)| (i, ids[&k])).collect()
}

/// GPU groups, each `(sorted members, joined by NVLink)`, sorted by first member.
fn groups(inventory: &Inventory, indices: &[u32]) -> Vec<(Vec<u32>, bool)> {
    let mut left: BTreeSet<u32> = indices.iter().copied().collect();
    let mut out = Vec::new();

    // 1. NVLink cliques, largest first.
    while let Some(clique) = best_nvlink_clique(inventory, &left) {
        for g in &clique {
            left.remove(g);
        }
        out.push((clique, true));
    }

    // 2. PCIe switch trees among the rest (union-find over pairs below the host bridge).
    let mut parent: BTreeMap<u32, u32> = left.iter().map(|g| (*g, *g)).collect();
    fn root(parent: &BTreeMap<u32, u32>, mut g: u32) -> u32 {
        while parent[&g] != g {
            g = parent[&g];
        }
        g
    }
    for p in &inventory.pairs {
        let close = p.pcie.is_some_and(|l| l.below_host_bridge());
        if close && left.contains(&p.a) && left.contains(&p.b) {
            let (ra, rb) = (root(&parent, p.a), root(&parent, p.b));
            if ra != rb {
                parent.insert(ra.max(rb), ra.min(rb));
            }
        }
    }
    let mut by_root: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for g in &left {
        by_root.entry(root(&parent, *g)).or_default().push(*g);
    }
    out.extend(by_root.into_values().map(|members| (members, false)));
    out.sort_by_key(|(members, _)| members.first().copied());
    out
}

/// The best NVLink clique of at least two GPUs among `left`: largest, then most NVLinks in
/// total, then lowest indices. Maximal cliques are enumerated with Bron–Kerbosch (pivoting)
/// over bitsets, which is instant for the ≤ 64 GPUs a node can have.
fn best_nvlink_clique(inventory: &Inventory, left: &BTreeSet<u32>) -> Option<Vec<u32>> {
    let nodes: Vec<u32> = left.iter().copied().take(64).collect();
    let n = nodes.len();
    let mut adj = vec![0u64; n];
    for i in 0..n {
        for j in 0..n {
            if i != j && inventory.nvlinks(nodes[i], nodes[j]) > 0 {
                adj[i] |= 1 << j;
            }
        }
    }
    let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let mut cliques = Vec::new();
    bron_kerbosch(0, all, 0, &adj, &mut cliques);

    let members = |set: u64| -> Vec<u32> {
        (0..n)
            .filter(|i| set & (1 << i) != 0)
            .map(|i| nodes[i])
            .collect()
    };
    let weight = |m: &[u32]| -> u64 {
        let mut w = 0;
        for (i, a) in m.iter().enumerate() {
            for b in &m[i + 1..] {
                w += u64::from(inventory.nvlinks(*a, *b));
            }
        }
        w
    };
    cliques
        .into_iter()
        .filter(|c| c.count_ones() >= 2)
        .map(members)
        .max_by(|x, y| {
            (x.len(), weight(x))
                .cmp(&(y.len(), weight(y)))
                // Lower indices win ties: compare reversed.
                .then_with(|| y.cmp(x))
        })
}

fn bron_kerbosch(r: u64, mut p: u64, mut x: u64, adj: &[u64], out: &mut Vec<u64>) {
    if p == 0 {
        if x == 0 {
            out.push(r);
        }
        return;
    }
    let pivot = (0..adj.len())
        .filter(|u| (p | x) & (1 << u) != 0)
        .max_by_key(|u| (p & adj[*u]).count_ones())
        .unwrap_or(0);
    let mut candidates = p & !adj[pivot];
    while candidates != 0 {
        let v = candidates.trailing_zeros() as usize;
        candidates &= candidates - 1;
        bron_kerbosch(r | (1 << v), p & adj[v], x & adj[v], adj, out);
        p &= !(1 << v);
        x |= 1 << v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{GpuReading, PairReading};
    use kubetrain::api::topology::PcieLevel;

    fn inventory(n: u32, pairs: &[(u32, u32, u32, Option<PcieLevel>)]) -> Inventory {
        Inventory {
            gpus: (0..n)
                .map(|index| GpuReading {
                    index,
                    ..Default::default()
                })
                .collect(),
            pairs: pairs
                .iter()
                .map(|(a, b, nvlinks, pcie)| PairReading {
                    a: *a,
                    b: *b,
                    nvlinks: *nvlinks,
                    pcie: *pcie,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_triangle_with_a_tail_keeps_the_triangle_whole() {
        // 0-1-2 all joined, 2-3 joined: {0,1,2} then {3} alone.
        let inv = inventory(
            4,
            &[
                (0, 1, 1, None),
                (0, 2, 1, None),
                (1, 2, 1, None),
                (2, 3, 4, None),
            ],
        );
        let t = build(&inv, None);
        let groups: Vec<_> = t
            .groups
            .iter()
            .map(|g| (g.gpus.clone(), g.nvlink))
            .collect();
        assert_eq!(groups, vec![(vec![0, 1, 2], true), (vec![3], false)]);
    }

    #[test]
    fn pcie_switch_trees_group_and_host_bridges_split() {
        let inv = inventory(
            4,
            &[
                (0, 1, 0, Some(PcieLevel::Switch)),
                (0, 2, 0, Some(PcieLevel::HostBridge)),
                (1, 2, 0, Some(PcieLevel::HostBridge)),
                (2, 3, 0, Some(PcieLevel::MultiSwitch)),
            ],
        );
        let t = build(&inv, None);
        let groups: Vec<_> = t.groups.iter().map(|g| g.gpus.clone()).collect();
        assert_eq!(groups, vec![vec![0, 1], vec![2, 3]]);
        assert!(!t.has_nvlink());
        t.validate().unwrap();
    }

    #[test]
    fn no_gpus_no_groups() {
        let t = build(&Inventory::default(), Some("r1".into()));
        assert!(t.gpus.is_empty() && t.groups.is_empty());
        assert_eq!(t.rack.as_deref(), Some("r1"));
    }
}
