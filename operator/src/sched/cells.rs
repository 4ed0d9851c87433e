//! Topology guarantees through cells, bound lazily.
//!
//! A guarantee of "N cells of level L" (GPU group, node or rack) of a flavor promises N whole
//! domains of that level. Cells are not pinned to machines (that would fragment the
//! cluster and idle them): a domain is *bound* to a VC only by use — it is owned by VC `v`
//! when all guaranteed (non-bonus) GPUs in it are `v`'s, *clean* when it holds no guaranteed
//! GPUs and nothing foreign (free or bonus only: it can be emptied by reclaim), and *mixed*
//! otherwise. The invariant, per flavor and level, is
//!
//! `clean domains ≥ Σ_v max(0, cells_v − domains owned by v)`
//!
//! so every VC can always get its missing cells back by reclaiming bonus jobs from clean
//! domains. A guaranteed placement that would break it (by dirtying a clean domain that is
//! spoken for, or mixing another VC's domain) is refused; placement then retries on domains
//! the VC already owns or that are already mixed (buddy-style: fill partly used cells before
//! splitting a whole one). Bonus placements never change ownership, because they can be
//! reclaimed. Promoting a running bonus job binds its domains like a guaranteed placement, so
//! it is refused on the same terms (`promote`): the job stays bonus and reclaimable. When the invariant is already broken (guarantees over the cluster), moves that
//! do not make it worse are allowed.

use std::collections::BTreeMap;

use super::cluster::{Cluster, NodeState};
use super::ids::{FlavorId, Id, IdVec, NodeId, RackId, RunIdx, VcId};
use super::model::{Snapshot, TopologyLevel};
use super::placement::Trial;
use super::reclaim::{Held, RunInfo};
use super::tenants::Tenants;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Clean,
    Vc(VcId),
    Mixed,
}

fn merge(o: Owner, vc: VcId) -> Owner {
    match o {
        Owner::Clean => Owner::Vc(vc),
        Owner::Vc(v) if v == vc => o,
        _ => Owner::Mixed,
    }
}

#[derive(Clone, Debug, Default)]
struct Table {
    owners: Vec<Owner>,
    want: IdVec<VcId, i64>,
    bound: IdVec<VcId, i64>,
    /// Domains that were clean or bindable when the cycle began (every GPU healthy,
    /// schedulable, nothing foreign).
    eligible: i64,
    /// GPUs of each domain.
    sizes: Vec<u32>,
}

impl Table {
    /// Milli-GPUs of count guarantees that cannot be met beside every missing cell: the
    /// smallest clean domains are set aside for the missing cells (each VC's own count
    /// need is met first from its own), and what VCs still miss beyond that must fit in
    /// the GPUs that neither guaranteed jobs hold nor the set-aside domains cover (free or
    /// bonus, so reclaimable). `usable` and the guarantees and uses are milli-GPUs of the
    /// table's flavor.
    fn count_shortfall(&self, usable: u64, guarantee: &[u64], used: &[u64]) -> u64 {
        let mut clean: Vec<u64> = (0..self.owners.len())
            .filter(|&d| self.owners[d] == Owner::Clean)
            .map(|d| u64::from(self.sizes[d]) * 1000)
            .collect();
        clean.sort_unstable();
        let mut aside = clean.into_iter();
        let (mut set_aside, mut missing) = (0u64, 0u64);
        for (w, (&g, &u)) in guarantee.iter().zip(used).enumerate() {
            let cells = self.want.get(VcId(w as u32)).copied().unwrap_or(0)
                - self.bound.get(VcId(w as u32)).copied().unwrap_or(0);
            let mine: u64 = aside.by_ref().take(cells.max(0) as usize).sum();
            set_aside += mine;
            missing += g.saturating_sub(u).saturating_sub(mine);
        }
        let held: u64 = used.iter().sum();
        let room = usable.saturating_sub(held).saturating_sub(set_aside);
        missing.saturating_sub(room)
    }

    /// Cells the VCs miss.
    fn missing(&self) -> i64 {
        self.want
            .iter()
            .zip(&self.bound)
            .map(|(w, b)| (w - b).max(0))
            .sum()
    }
    fn set(&mut self, d: usize, new: Owner) {
        let old = self.owners[d];
        if old == new {
            return;
        }
        if let Owner::Vc(v) = old {
            self.bound[v] -= 1;
        }
        if let Owner::Vc(v) = new {
            self.bound[v] += 1;
        }
        self.owners[d] = new;
    }
}

/// Cell ownership for every (flavor, level) some VC has cells of.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cells {
    tables: BTreeMap<(FlavorId, TopologyLevel), Table>,
    /// First GPU-group domain of each node.
    group_base: IdVec<NodeId, usize>,
}

impl Cells {
    /// The cells as the running jobs `binds` names (guaranteed ones) leave them.
    pub fn build(
        snap: &Snapshot,
        c: &Cluster,
        t: &Tenants,
        runs: &IdVec<RunIdx, RunInfo>,
        binds: impl Fn(RunIdx) -> bool,
    ) -> Cells {
        let mut cells = Cells::default();
        let nv = t.vc_names.len();
        for vc in &snap.virtual_clusters {
            let Some(&v) = t.vc_by_name.get(&vc.name) else {
                continue;
            };
            for g in &vc.guarantee {
                let Some(&f) = c.flavor_by_name.get(g.flavor.as_str()) else {
                    continue;
                };
                for cell in &g.cells {
                    let tb = cells
                        .tables
                        .entry((f, cell.level))
                        .or_insert_with(|| Table {
                            want: IdVec::filled(0, nv),
                            bound: IdVec::filled(0, nv),
                            ..Default::default()
                        });
                    tb.want[v] += i64::from(cell.count);
                }
            }
        }
        if cells.tables.is_empty() {
            return cells;
        }
        let mut base = 0;
        for n in &c.nodes {
            cells.group_base.push(base);
            base += n.groups.len();
        }
        let eligible_node = |n: &NodeState, i: NodeId| {
            n.schedulable
                && n.gpus.iter().all(|g| g.cap > 0)
                && snap.nodes[n.src as usize].foreign.gpus == 0
                && !n.gpus.is_empty()
                && i.ix() < c.nodes.len()
        };
        for (&(f, level), tb) in cells.tables.iter_mut() {
            let size = match level {
                TopologyLevel::GpuGroup => base,
                TopologyLevel::Node => c.nodes.len(),
                TopologyLevel::Rack => c.racks.len(),
            };
            tb.owners = vec![Owner::Mixed; size];
            tb.sizes = vec![0; size];
            let mut clean = vec![false; size];
            match level {
                TopologyLevel::Rack => {
                    for (r, rg) in c.racks.iter_enumerated() {
                        tb.sizes[r.ix()] =
                            rg.nodes.iter().map(|&n| c.nodes[n].gpus.len() as u32).sum();
                        clean[r.ix()] = rg.flavor == f
                            && !rg.nodes.is_empty()
                            && rg.nodes.iter().all(|&n| eligible_node(&c.nodes[n], n));
                    }
                }
                _ => {
                    for (i, n) in c.nodes.iter_enumerated() {
                        if n.flavor != f || !eligible_node(n, i) {
                            continue;
                        }
                        if level == TopologyLevel::Node {
                            clean[i.ix()] = true;
                            tb.sizes[i.ix()] = n.gpus.len() as u32;
                        } else {
                            for (g, gpus) in n.groups.iter().enumerate() {
                                clean[cells.group_base[i] + g] = true;
                                tb.sizes[cells.group_base[i] + g] = gpus.len() as u32;
                            }
                        }
                    }
                }
            }
            for (d, &cl) in clean.iter().enumerate() {
                if cl {
                    tb.set(d, Owner::Clean);
                }
            }
            tb.eligible = clean.iter().filter(|&&cl| cl).count() as i64;
        }
        for (_, r) in runs.iter_enumerated().filter(|&(i, r)| !r.gone && binds(i)) {
            let Some(vc) = r.vc else { continue };
            let touched: Vec<(NodeId, Vec<u8>)> = r
                .takes
                .iter()
                .map(|(n, g, _, _)| (*n, g.iter().map(|x| x.0).collect()))
                .collect();
            cells.apply(c, r.flavor, &touched, vc);
        }
        cells
    }

    fn domains(
        &self,
        c: &Cluster,
        level: TopologyLevel,
        touched: &[(NodeId, Vec<u8>)],
    ) -> Vec<usize> {
        let mut out = Vec::new();
        for (n, gpus) in touched {
            if gpus.is_empty() {
                continue;
            }
            let node = &c.nodes[*n];
            match level {
                TopologyLevel::Node => out.push(n.ix()),
                TopologyLevel::Rack => out.extend(node.rack.map(|r| r.ix())),
                TopologyLevel::GpuGroup => {
                    for (gi, g) in node.groups.iter().enumerate() {
                        if gpus.iter().any(|x| g.contains(x)) {
                            out.push(self.group_base[*n] + gi);
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn apply(&mut self, c: &Cluster, f: FlavorId, touched: &[(NodeId, Vec<u8>)], vc: VcId) {
        let keys: Vec<(FlavorId, TopologyLevel)> =
            self.tables.keys().filter(|k| k.0 == f).copied().collect();
        for k in keys {
            let ds = self.domains(c, k.1, touched);
            let tb = self.tables.get_mut(&k).expect("key from the map");
            for d in ds {
                let o = tb.owners[d];
                tb.set(d, merge(o, vc));
            }
        }
    }

    fn touched(trial: &Trial) -> Vec<(NodeId, Vec<u8>)> {
        trial
            .takes
            .iter()
            .map(|(_, t)| (t.node, t.gpus.iter().map(|x| x.0).collect()))
            .collect()
    }

    /// The node under GPU-group domain `d`.
    fn group_node(&self, d: usize) -> NodeId {
        NodeId::new(
            self.group_base
                .iter()
                .as_slice()
                .partition_point(|&b| b <= d)
                - 1,
        )
    }

    /// The nodes a domain of `level` spans.
    fn nodes_of<'c>(
        &self,
        c: &'c Cluster,
        level: TopologyLevel,
        d: usize,
    ) -> impl Iterator<Item = NodeId> + 'c {
        let (rack, one): (&[NodeId], Option<NodeId>) = match level {
            TopologyLevel::Rack => (&c.racks[RackId::new(d)].nodes, None),
            TopologyLevel::Node => (&[], Some(NodeId::new(d))),
            TopologyLevel::GpuGroup => (&[], Some(self.group_node(d))),
        };
        rack.iter().copied().chain(one)
    }

    /// Per level of a flavor's `tables`, the clean domains its missing cells may take once
    /// the larger levels' missing cells have set theirs aside (the smallest clean ones: they
    /// leave the most to the levels below), smallest first. A domain counts once across the
    /// levels: counted per level on its own, the last clean rack was also two clean nodes for
    /// another VC's node cell, a promotion that dirtied the last node outside it passed, and
    /// both cells were lost for good, with nothing to reclaim and no warning (an acceptance
    /// run).
    fn available(
        &self,
        c: &Cluster,
        tables: &BTreeMap<TopologyLevel, &Table>,
    ) -> BTreeMap<TopologyLevel, Vec<usize>> {
        let mut aside = vec![false; c.nodes.len()];
        let mut out = BTreeMap::new();
        for (&level, tb) in tables.iter().rev() {
            let mut free: Vec<usize> = (0..tb.owners.len())
                .filter(|&d| tb.owners[d] == Owner::Clean)
                .filter(|&d| self.nodes_of(c, level, d).all(|n| !aside[n.ix()]))
                .collect();
            free.sort_by_key(|&d| (tb.sizes[d], d));
            // a GPU group set aside leaves the rest of its node to nobody below it
            if level != TopologyLevel::GpuGroup {
                for &d in free.iter().take(tb.missing() as usize) {
                    for n in self.nodes_of(c, level, d) {
                        aside[n.ix()] = true;
                    }
                }
            }
            out.insert(level, free);
        }
        out
    }

    /// Missing cells of a flavor's `tables` that no clean domain is left for.
    fn cells_short(&self, c: &Cluster, tables: &BTreeMap<TopologyLevel, &Table>) -> i64 {
        let free = self.available(c, tables);
        tables
            .iter()
            .map(|(level, tb)| (tb.missing() - free[level].len() as i64).max(0))
            .sum()
    }

    /// The tables of flavor `f`, by level.
    fn of_flavor(&self, f: FlavorId) -> BTreeMap<TopologyLevel, &Table> {
        self.tables
            .iter()
            .filter(|(k, _)| k.0 == f)
            .map(|(k, tb)| (k.1, tb))
            .collect()
    }

    /// Whether a guaranteed placement of `vc` (`milli` GPUs) keeps every cell guarantee
    /// obtainable, and every VC's count guarantee beside them.
    pub fn accepts(&self, c: &Cluster, t: &Tenants, trial: &Trial, vc: VcId, milli: u64) -> bool {
        let Some((_, t0)) = trial.takes.first() else {
            return true;
        };
        let f = c.nodes[t0.node].flavor;
        self.accepts_touched(c, t, f, &Self::touched(trial), vc, milli)
    }

    /// Whether some VirtualCluster guarantees cells of GPU type `f`: they weigh in on
    /// promotions there.
    pub fn guard(&self, f: FlavorId) -> bool {
        self.tables.keys().any(|k| k.0 == f)
    }

    /// Promote a running bonus job of `vc` (its GPUs become guaranteed, no longer
    /// reclaimable) when that keeps every cell guarantee obtainable, as a guaranteed
    /// placement must; returns whether it may be promoted. A bonus job on a clean domain
    /// that another VC's missing cells need stays bonus, so it can still be reclaimed.
    pub fn promote(&mut self, c: &Cluster, t: &Tenants, r: &RunInfo, vc: VcId) -> bool {
        if self.tables.is_empty() {
            return true;
        }
        let touched: Vec<(NodeId, Vec<u8>)> = r
            .takes
            .iter()
            .map(|(n, g, _, _)| (*n, g.iter().map(|x| x.0).collect()))
            .collect();
        if !self.accepts_touched(c, t, r.flavor, &touched, vc, r.milli) {
            return false;
        }
        self.apply(c, r.flavor, &touched, vc);
        true
    }

    /// A move that makes the cells' slack negative, or the count guarantees' shortfall
    /// positive, and either worse than it was, is refused: packing a VC into another's
    /// domain can leave the clean domain a cell needs as the only room another VC's count
    /// guarantee had (when the invariant is already broken, moves that do not make it worse
    /// are allowed).
    fn accepts_touched(
        &self,
        c: &Cluster,
        t: &Tenants,
        f: FlavorId,
        touched: &[(NodeId, Vec<u8>)],
        vc: VcId,
        milli: u64,
    ) -> bool {
        // most placements are of types without cells: nothing to weigh, nothing to allocate
        if !self.tables.keys().any(|k| k.0 == f) {
            return true;
        }
        let usable = c.facts.get(f).map_or(0, |x| u64::from(x.total_gpus) * 1000);
        let guarantee: Vec<u64> = t
            .guarantee
            .iter()
            .map(|g| g.get(f).copied().unwrap_or(0))
            .collect();
        let used: Vec<u64> = t
            .guar_used
            .iter()
            .map(|g| g.get(f).copied().unwrap_or(0))
            .collect();
        let mut used_after = used.clone();
        if let Some(u) = used_after.get_mut(vc.ix()) {
            *u += milli;
        }
        let before = self.of_flavor(f);
        let after: BTreeMap<TopologyLevel, Table> = before
            .iter()
            .map(|(&level, &tb)| {
                let mut after = tb.clone();
                for d in self.domains(c, level, touched) {
                    let o = after.owners[d];
                    after.set(d, merge(o, vc));
                }
                (level, after)
            })
            .collect();
        for (level, tb) in &before {
            let short_before = tb.count_shortfall(usable, &guarantee, &used);
            let short = after[level].count_shortfall(usable, &guarantee, &used_after);
            if short > 0 && short > short_before {
                return false;
            }
        }
        let short_before = self.cells_short(c, &before);
        let short = self.cells_short(c, &after.iter().map(|(&l, tb)| (l, tb)).collect());
        short == 0 || short <= short_before
    }

    /// `vc`'s cells of a flavor and level: (guaranteed, obtainable now, eligible domains).
    /// Obtainable are the domains it owns plus the clean ones other VCs' missing cells leave
    /// it (reclaim can empty a clean domain; an owned or mixed one holds guaranteed jobs),
    /// smallest first, as far as the `gpus` it may still claim reach.
    pub fn standing(
        &self,
        c: &Cluster,
        f: FlavorId,
        level: TopologyLevel,
        vc: VcId,
        gpus: u64,
    ) -> (i64, i64, i64) {
        let Some(tb) = self.tables.get(&(f, level)) else {
            return (0, 0, 0);
        };
        let want = tb.want[vc];
        let others: i64 = tb
            .want
            .iter_enumerated()
            .filter(|&(w, _)| w != vc)
            .map(|(w, &n)| (n - tb.bound[w]).max(0))
            .sum();
        // the clean domains the larger levels' missing cells leave, smallest first
        let free = self
            .available(c, &self.of_flavor(f))
            .remove(&level)
            .unwrap_or_default();
        let mut left = gpus;
        let affordable = free
            .iter()
            .take_while(|&&d| {
                let s = u64::from(tb.sizes[d]);
                let ok = s <= left;
                left = left.saturating_sub(s);
                ok
            })
            .count() as i64;
        let clean = free.len() as i64;
        let obtainable = (tb.bound[vc] + (clean - others).max(0).min(affordable)).min(want);
        (want, obtainable, tb.eligible)
    }

    /// Milli-GPUs of `takes` (a running job of `vc`) outside the domains of a level `vc`
    /// owns: GPUs it could free to form a cell elsewhere.
    pub fn outside_own(
        &self,
        c: &Cluster,
        f: FlavorId,
        level: TopologyLevel,
        vc: VcId,
        takes: &[Held],
    ) -> u64 {
        let Some(tb) = self.tables.get(&(f, level)) else {
            return 0;
        };
        let mut out = 0;
        for (n, gpus, _, _) in takes {
            for &(g, milli) in gpus {
                let node = &c.nodes[*n];
                let d = match level {
                    TopologyLevel::Node => Some(n.ix()),
                    TopologyLevel::Rack => node.rack.map(|r| r.ix()),
                    TopologyLevel::GpuGroup => node
                        .groups
                        .iter()
                        .position(|gr| gr.contains(&g))
                        .map(|gi| self.group_base[*n] + gi),
                };
                if d.is_none_or(|d| tb.owners[d] != Owner::Vc(vc)) {
                    out += u64::from(milli);
                }
            }
        }
        out
    }

    /// Whether `vc` is guaranteed cells of GPU type `f`.
    pub fn has_cells(&self, f: FlavorId, vc: VcId) -> bool {
        self.tables
            .iter()
            .any(|(k, tb)| k.0 == f && tb.want.get(vc).is_some_and(|&w| w > 0))
    }

    /// Nodes of GPU type `f` in the cell domains `vc` already owns, at every level it has
    /// cells of (empty when it has none): buddy packing puts its guaranteed work there
    /// before it binds a clean domain, so that its other cells stay whole for the jobs that
    /// need all of one (issue 49: an 8-GPU job took a second node while 13 GPUs of the
    /// first were free, and the team's 16-GPU job then found no whole node).
    pub fn own_nodes(&self, c: &Cluster, f: FlavorId, vc: VcId) -> Vec<NodeId> {
        let mine: Vec<(TopologyLevel, &Table)> = self
            .tables
            .iter()
            .filter(|(k, tb)| k.0 == f && tb.want.get(vc).is_some_and(|&w| w > 0))
            .map(|(k, tb)| (k.1, tb))
            .collect();
        if mine.is_empty() {
            return Vec::new();
        }
        let nodes = c.facts.get(f).map(|x| x.nodes.clone()).unwrap_or_default();
        nodes
            .into_iter()
            .filter(|&n| {
                mine.iter().all(|&(level, tb)| {
                    self.node_domains(c, level, n)
                        .iter()
                        .any(|&d| tb.owners[d] == Owner::Vc(vc))
                })
            })
            .collect()
    }

    /// The domains of `level` node `n` lies in (or, for GPU groups, holds).
    fn node_domains(&self, c: &Cluster, level: TopologyLevel, n: NodeId) -> Vec<usize> {
        let node = &c.nodes[n];
        match level {
            TopologyLevel::Node => vec![n.ix()],
            TopologyLevel::Rack => node.rack.map(|r| r.ix()).into_iter().collect(),
            TopologyLevel::GpuGroup => (0..node.groups.len())
                .map(|g| self.group_base[n] + g)
                .collect(),
        }
    }

    /// Record a guaranteed placement.
    pub fn bind(&mut self, c: &Cluster, trial: &Trial, vc: VcId) {
        if self.tables.is_empty() {
            return;
        }
        let Some((_, t0)) = trial.takes.first() else {
            return;
        };
        let f = c.nodes[t0.node].flavor;
        let touched = Self::touched(trial);
        self.apply(c, f, &touched, vc);
    }

    /// Nodes of a flavor where a guaranteed placement of `vc` mixes no other VC's domain and
    /// dirties no clean domain, unless `vc` still misses cells of that level (binding one
    /// is then what its guarantee asks).
    pub fn allowed_nodes(&self, c: &Cluster, f: FlavorId, vc: VcId) -> Vec<NodeId> {
        let nodes = c.facts.get(f).map(|x| x.nodes.clone()).unwrap_or_default();
        nodes
            .into_iter()
            .filter(|&n| {
                self.tables
                    .iter()
                    .filter(|(k, _)| k.0 == f)
                    .all(|(&(_, level), tb)| {
                        let ds = self.node_domains(c, level, n);
                        // a VC still missing cells of this level may also bind a clean
                        // domain: that leaves the slack as it is
                        let missing = tb.want[vc] > tb.bound[vc];
                        ds.iter().any(|&d| {
                            matches!(tb.owners[d], Owner::Mixed)
                                || tb.owners[d] == Owner::Vc(vc)
                                || (missing && tb.owners[d] == Owner::Clean)
                        }) || ds.is_empty()
                    })
            })
            .collect()
    }
}
