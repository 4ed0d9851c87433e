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
use super::model::{Flavor, FlavorGuarantee, Snapshot, TopologyLevel};
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
    let (held, stay) = held_by_staying_jobs(c, t, runs);
    let world = World {
        c,
        t,
        cells,
        runs,
        held,
        stay,
        in_cluster: usage::capacity(snap),
        all_guaranteed: all_guaranteed(snap),
        foreign: foreign_gpus(snap, c),
    };
    let mut out = BTreeMap::new();
    for vc in &snap.virtual_clusters {
        let Some(&v) = t.vc_by_name.get(&vc.name) else {
            continue;
        };
        for g in &vc.guarantee {
            if g.gpus == 0 && g.cells.iter().all(|c| c.count == 0) {
                continue;
            }
            if let Some(s) = world.shortfall(v, g) {
                out.insert((vc.name.clone(), g.flavor.clone()), s);
            }
        }
    }
    out
}

/// What each VC's guaranteed jobs hold for sure, per flavor (milli), and which of its
/// guaranteed jobs stay (none of their GPUs on a cordoned node or an unhealthy GPU).
#[allow(clippy::type_complexity)] // two tables by VC, named in the doc comment
fn held_by_staying_jobs(
    c: &Cluster,
    t: &Tenants,
    runs: &IdVec<RunIdx, RunInfo>,
) -> (IdVec<VcId, IdVec<FlavorId, u64>>, IdVec<VcId, Vec<RunIdx>>) {
    let nf = c.flavor_names.len();
    let mut held: IdVec<VcId, IdVec<FlavorId, u64>> =
        IdVec::filled(IdVec::filled(0, nf), t.vc_names.len());
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
    (held, stay)
}

/// What all guarantees add up to, per GPU type (what a shortfall's cause is told by).
fn all_guaranteed(snap: &Snapshot) -> BTreeMap<&Flavor, u32> {
    let mut all_guaranteed: BTreeMap<&Flavor, u32> = BTreeMap::new();
    for g in snap.virtual_clusters.iter().flat_map(|w| &w.guarantee) {
        let sum = all_guaranteed.entry(&g.flavor).or_default();
        *sum = sum.saturating_add(g.gpus);
    }
    all_guaranteed
}

/// GPUs of each type that pods kubetrain does not schedule hold on schedulable nodes.
fn foreign_gpus(snap: &Snapshot, c: &Cluster) -> IdVec<FlavorId, u32> {
    let mut foreign: IdVec<FlavorId, u32> = IdVec::filled(0, c.flavor_names.len());
    for n in c.nodes.iter().filter(|n| n.schedulable) {
        if let Some(x) = foreign.get_mut(n.flavor) {
            *x += snap.nodes[n.src as usize]
                .foreign
                .gpus
                .min(n.healthy_gpus());
        }
    }
    foreign
}

/// Everything a guarantee's standing is computed from, once per cycle.
struct World<'w> {
    c: &'w Cluster,
    t: &'w Tenants,
    cells: &'w Cells,
    runs: &'w IdVec<RunIdx, RunInfo>,
    /// What each VC's staying guaranteed jobs hold, per flavor (milli).
    held: IdVec<VcId, IdVec<FlavorId, u64>>,
    /// The staying guaranteed jobs per VC.
    stay: IdVec<VcId, Vec<RunIdx>>,
    /// The GPUs on the nodes, per GPU type.
    in_cluster: BTreeMap<Flavor, u32>,
    all_guaranteed: BTreeMap<&'w Flavor, u32>,
    foreign: IdVec<FlavorId, u32>,
}

impl World<'_> {
    /// VC `v`'s guarantee `g`, if it cannot be obtained now (GPUs or cells).
    fn shortfall(&self, v: VcId, g: &FlavorGuarantee) -> Option<GuaranteeShortfall> {
        let c = self.c;
        let f = c.flavor_by_name.get(g.flavor.as_str()).copied();
        let usable = f.map_or(0, |f| c.facts[f].total_gpus);
        let foreign_gpus = f.map_or(0, |f| self.foreign[f]);
        // Milli-GPUs v may claim beyond what it holds.
        let (obtainable, claimable) = match f {
            Some(f) => self.obtainable_gpus(v, f, usable, foreign_gpus),
            None => (0, 0),
        };
        let cell_rows = self.cell_rows(v, g, f, claimable);
        let short = obtainable < g.gpus || cell_rows.iter().any(|c| c.obtainable < c.guaranteed);
        short.then(|| GuaranteeShortfall {
            flavor: g.flavor.clone(),
            guaranteed_gpus: g.gpus,
            obtainable_gpus: obtainable.min(g.gpus),
            usable_gpus: usable,
            foreign_gpus,
            cluster_gpus: self.in_cluster.get(&g.flavor).copied().unwrap_or(0),
            all_guaranteed_gpus: self.all_guaranteed.get(&g.flavor).copied().unwrap_or(0),
            cells: cell_rows,
        })
    }

    /// The GPUs of flavor `f` VC `v` can obtain (the module's formula), and the milli-GPUs
    /// it may claim beyond what it holds.
    fn obtainable_gpus(&self, v: VcId, f: FlavorId, usable: u32, foreign_gpus: u32) -> (u32, u64) {
        let (t, held) = (self.t, &self.held);
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
        ((guar(v).min(held[v][f] + free) / 1000) as u32, free)
    }

    /// One row per topology level of the guarantee's cells: guaranteed, obtainable, usable.
    fn cell_rows(
        &self,
        v: VcId,
        g: &FlavorGuarantee,
        f: Option<FlavorId>,
        claimable: u64,
    ) -> Vec<CellShortfall> {
        let mut levels: Vec<_> = g.cells.iter().map(|c| c.level).collect();
        levels.sort_unstable();
        levels.dedup();
        levels
            .into_iter()
            .map(|level| {
                let guaranteed: u32 = g
                    .cells
                    .iter()
                    .filter(|c| c.level == level)
                    .map(|c| c.count)
                    .sum();
                let (obtainable, usable) =
                    f.map_or((0, 0), |f| self.cells_standing(v, f, level, claimable));
                CellShortfall {
                    level,
                    guaranteed,
                    obtainable: (obtainable.max(0) as u32).min(guaranteed),
                    usable: usable.max(0) as u32,
                }
            })
            .collect()
    }

    /// The cells at `level` VC `v` can obtain and those usable, counting its own jobs
    /// outside its cells, which could make room for one.
    fn cells_standing(
        &self,
        v: VcId,
        f: FlavorId,
        level: TopologyLevel,
        claimable: u64,
    ) -> (i64, i64) {
        let (c, cells, runs) = (self.c, self.cells, self.runs);
        let movable: u64 = self.stay[v]
            .iter()
            .filter(|&&i| runs[i].flavor == f)
            .map(|&i| cells.outside_own(c, f, level, v, &runs[i].takes))
            .sum();
        let (_, o, u) = cells.standing(c, f, level, v, (claimable + movable) / 1000);
        (o, u)
    }
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
