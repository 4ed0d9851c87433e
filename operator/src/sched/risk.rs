//! Guarantees at risk: per VirtualCluster and GPU type, whether its guarantee (GPUs and
//! cells) can be obtained now, even by reclaim ([`GuaranteeShortfall`]).
//!
//! Reclaim gives back what other tenants borrow, so borrowed GPUs never put a guarantee at
//! risk. What reclaim cannot give back is capacity that is lost: unhealthy GPUs, cordoned
//! nodes, nodes gone. Of the healthy GPUs on schedulable nodes, a VirtualCluster keeps what
//! its guaranteed jobs hold (a job that must leave, from a cordoned node or an unhealthy
//! GPU, holds nothing) and may claim the rest once every other VirtualCluster's guarantee
//! not yet held is set aside:
//!
//! `obtainable(v) = min(guarantee(v), held(v) + max(0, usable − Σ_w held(w) − Σ_{w≠v} max(0, guarantee(w) − held(w))))`
//!
//! Cells count the same way over whole domains (see `cells`): the domains `v` owns plus the
//! clean ones left once other VirtualClusters' missing cells are set aside, as many as fit
//! in the GPUs it may claim beyond what it holds (the second term above) plus those its own
//! guaranteed jobs hold outside its cells (it could move them). Pods that are not
//! kubetrain's hold what they request until they end, and reclaim cannot free it: their GPUs
//! on schedulable nodes are not usable (a bare pod's GPU left a team 6 of its 8 with the
//! status saying "Obtainable", in an acceptance run), and a node with such pods is not a
//! clean cell, as for placement. Terminating pods are transient and do not count.

use std::collections::BTreeMap;

use super::cells::Cells;
use super::cluster::Cluster;
use super::ids::{FlavorId, IdVec, RunIdx, VcId};
use super::model::{Flavor, Snapshot};
use super::reclaim::RunInfo;
use super::tenants::Tenants;
use super::usage::{self, CellShortfall, GuaranteeShortfall, Usage};

/// The guarantees at risk, by VirtualCluster name and GPU type, as the cycle starts (this
/// cycle's promotions applied).
pub(crate) fn shortfalls(
    snap: &Snapshot,
    c: &Cluster,
    t: &Tenants,
    cells: &Cells,
    runs: &IdVec<RunIdx, RunInfo>,
) -> BTreeMap<(String, Flavor), GuaranteeShortfall> {
    let nf = c.flavor_names.len();
    // What each VC's guaranteed jobs hold for sure, per flavor (milli).
    let mut held: IdVec<VcId, IdVec<FlavorId, u64>> =
        IdVec::filled(IdVec::filled(0, nf), t.vc_names.len());
    // The staying guaranteed jobs' GPUs per VC.
    let mut stay: IdVec<VcId, Vec<RunIdx>> = IdVec::filled(Vec::new(), t.vc_names.len());
    for (i, r) in runs.iter_enumerated().filter(|(_, r)| !r.gone && !r.bonus) {
        let Some(vc) = r.vc else { continue };
        let stays = r.takes.iter().all(|(n, gpus, _, _)| {
            let node = &c.nodes[*n];
            node.schedulable
                && gpus
                    .iter()
                    .all(|&(g, _)| node.gpus.get(usize::from(g)).is_some_and(|l| l.cap > 0))
        });
        if stays && let Some(h) = held[vc].get_mut(r.flavor) {
            *h += r.milli;
            stay[vc].push(i);
        }
    }
    // Per GPU type, once: the GPUs on the nodes, and what all guarantees add up to (what a
    // shortfall's cause is told by).
    let in_cluster = usage::capacity(snap);
    let mut all_guaranteed: BTreeMap<&Flavor, u32> = BTreeMap::new();
    for g in snap.virtual_clusters.iter().flat_map(|w| &w.guarantee) {
        let sum = all_guaranteed.entry(&g.flavor).or_default();
        *sum = sum.saturating_add(g.gpus);
    }
    // GPUs of each type that pods kubetrain does not schedule hold on schedulable nodes
    let mut foreign: IdVec<FlavorId, u32> = IdVec::filled(0, nf);
    for n in c.nodes.iter().filter(|n| n.schedulable) {
        if let Some(x) = foreign.get_mut(n.flavor) {
            *x += snap.nodes[n.src as usize]
                .foreign
                .gpus
                .min(n.healthy_gpus());
        }
    }
    let mut out = BTreeMap::new();
    for vc in &snap.virtual_clusters {
        let Some(&v) = t.vc_by_name.get(&vc.name) else {
            continue;
        };
        for g in &vc.guarantee {
            if g.gpus == 0 && g.cells.iter().all(|c| c.count == 0) {
                continue;
            }
            let f = c.flavor_by_name.get(g.flavor.as_str()).copied();
            let usable = f.map_or(0, |f| c.facts[f].total_gpus);
            let foreign_gpus = f.map_or(0, |f| foreign[f]);
            // Milli-GPUs v may claim beyond what it holds.
            let mut claimable = 0;
            let obtainable = match f {
                Some(f) => {
                    let guar = |w: VcId| t.guarantee[w][f];
                    let all_held: u64 = held.iter().map(|h| h[f]).sum();
                    let others_missing: u64 = t
                        .vc_names
                        .ids()
                        .filter(|&w| w != v)
                        .map(|w| guar(w).saturating_sub(held[w][f]))
                        .sum();
                    let free = (u64::from(usable.saturating_sub(foreign_gpus)) * 1000)
                        .saturating_sub(all_held)
                        .saturating_sub(others_missing);
                    claimable = free;
                    (guar(v).min(held[v][f] + free) / 1000) as u32
                }
                None => 0,
            };
            let mut levels: Vec<_> = g.cells.iter().map(|c| c.level).collect();
            levels.sort_unstable();
            levels.dedup();
            let cell_rows: Vec<CellShortfall> = levels
                .into_iter()
                .map(|level| {
                    let guaranteed: u32 = g
                        .cells
                        .iter()
                        .filter(|c| c.level == level)
                        .map(|c| c.count)
                        .sum();
                    let (obtainable, usable) = f.map_or((0, 0), |f| {
                        // its own jobs outside its cells could make room for one
                        let movable: u64 = stay[v]
                            .iter()
                            .filter(|&&i| runs[i].flavor == f)
                            .map(|&i| cells.outside_own(c, f, level, v, &runs[i].takes))
                            .sum();
                        let (_, o, u) =
                            cells.standing(c, f, level, v, (claimable + movable) / 1000);
                        (o, u)
                    });
                    CellShortfall {
                        level,
                        guaranteed,
                        obtainable: (obtainable.max(0) as u32).min(guaranteed),
                        usable: usable.max(0) as u32,
                    }
                })
                .collect();
            let short =
                obtainable < g.gpus || cell_rows.iter().any(|c| c.obtainable < c.guaranteed);
            if short {
                out.insert(
                    (vc.name.clone(), g.flavor.clone()),
                    GuaranteeShortfall {
                        flavor: g.flavor.clone(),
                        guaranteed_gpus: g.gpus,
                        obtainable_gpus: obtainable.min(g.gpus),
                        usable_gpus: usable,
                        foreign_gpus,
                        cluster_gpus: in_cluster.get(&g.flavor).copied().unwrap_or(0),
                        all_guaranteed_gpus: all_guaranteed.get(&g.flavor).copied().unwrap_or(0),
                        cells: cell_rows,
                    },
                );
            }
        }
    }
    out
}

/// Put each shortfall on its VirtualCluster's usage for the GPU type.
pub(crate) fn attach(usage: &mut Usage, at_risk: BTreeMap<(String, Flavor), GuaranteeShortfall>) {
    for ((vc, flavor), s) in at_risk {
        usage
            .virtual_clusters
            .entry(vc)
            .or_default()
            .flavors
            .entry(flavor)
            .or_default()
            .at_risk = Some(s);
    }
}
