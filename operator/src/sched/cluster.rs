//! The cluster during one cycle ([`Cluster`]): a ledger per GPU, CPU and memory of each
//! node, and the index of free capacity (nodes bucketed by free whole GPUs per flavor, racks
//! ordered by free GPUs) that lets placement find a best-fit node in O(log n) instead of
//! scanning the cluster.
//!
//! Every amount is a [`Ledger`]: `held` by running work, `releasing` (held by jobs that are
//! being preempted, or by pods of no job on their way out) and `reserved` (promised to a job
//! that waits for those releases). What can be used *now* is `cap - held - max(releasing,
//! reserved)`; what can be used *after the releases* is `cap - held - reserved`. Reserving
//! after-release capacity therefore never lets a job now take what a preemption is freeing for
//! someone else.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{GpuDemand, GpuIndex, Node, Snapshot, Topology, TopologyLevel};

use super::ids::{FlavorId, IdVec, NodeId, RackId};

/// Whether a placement uses capacity free now, or capacity free once releases complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Now,
    AfterRelease,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub cap: u64,
    pub held: u64,
    pub releasing: u64,
    pub reserved: u64,
}

impl Ledger {
    pub fn avail(&self, mode: Mode) -> u64 {
        let used = match mode {
            Mode::Now => self.held + self.releasing.max(self.reserved),
            Mode::AfterRelease => self.held + self.reserved,
        };
        self.cap.saturating_sub(used)
    }
    fn take(&mut self, amount: u64, mode: Mode) {
        match mode {
            Mode::Now => self.held += amount,
            Mode::AfterRelease => self.reserved += amount,
        }
    }
    fn give_back(&mut self, amount: u64, mode: Mode) {
        match mode {
            Mode::Now => self.held -= amount,
            Mode::AfterRelease => self.reserved -= amount,
        }
    }
    fn release(&mut self, amount: u64) {
        let a = amount.min(self.held);
        self.held -= a;
        self.releasing += a;
    }
    fn unrelease(&mut self, amount: u64) {
        let a = amount.min(self.releasing);
        self.releasing -= a;
        self.held += a;
    }
}

/// Per-GPU ledger in milli-GPUs (cap 1000, or 0 when unhealthy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GpuLedger {
    pub cap: u16,
    pub held: u16,
    pub releasing: u16,
    pub reserved: u16,
}

impl GpuLedger {
    pub fn avail(&self, mode: Mode) -> u16 {
        let used = match mode {
            Mode::Now => self.held + self.releasing.max(self.reserved),
            Mode::AfterRelease => self.held + self.reserved,
        };
        self.cap.saturating_sub(used)
    }
    fn as_ledger(&self) -> Ledger {
        Ledger {
            cap: self.cap.into(),
            held: self.held.into(),
            releasing: self.releasing.into(),
            reserved: self.reserved.into(),
        }
    }
    fn set(&mut self, l: Ledger) {
        // Amounts on one GPU are at most 1000 by construction.
        self.held = l.held.min(u64::from(u16::MAX)) as u16;
        self.releasing = l.releasing.min(u64::from(u16::MAX)) as u16;
        self.reserved = l.reserved.min(u64::from(u16::MAX)) as u16;
    }
    fn update(&mut self, f: impl FnOnce(&mut Ledger)) {
        let mut l = self.as_ledger();
        f(&mut l);
        self.set(l);
    }
}

/// One node's state during a cycle.
#[derive(Clone, Debug)]
pub(crate) struct NodeState {
    /// Index of the node in the snapshot.
    pub src: u32,
    pub flavor: FlavorId,
    pub rack: Option<RackId>,
    pub schedulable: bool,
    /// Has at least one NVLink group.
    pub nvlink: bool,
    pub cpu: Ledger,
    pub mem: Ledger,
    pub gpus: Vec<GpuLedger>,
    /// Topology order: groups of GPU positions (indices into `gpus`).
    pub groups: Vec<Vec<u8>>,
    pub group_nvlink: Vec<bool>,
    /// Position of each GPU in topology order (for ranks).
    pub gpu_pos: Vec<u8>,
    /// Whole GPUs usable now, as the node's entry in the flavor's `buckets` (kept 0 for an
    /// unschedulable node, which has none).
    pub free_now: u8,
    /// Whole GPUs free now and once releases complete ([`NodeState::whole_avail`]), for
    /// every node; kept by `reindex`, so readers do not walk the node's GPUs (placement and
    /// victim search read them for thousands of nodes per plan).
    whole: [u8; 2],
    /// This node's entries (room now, GPU) in the flavor's `share_index`.
    pub share_keys: Vec<(u16, u8)>,
    /// What the node's fragmentation score depends on besides its flavor, folded into one
    /// word ([`NodeState::fold_state`]); kept by `reindex`, so placement compares nodes by it
    /// without folding thousands of nodes per replica.
    pub state: u64,
}

impl NodeState {
    /// The node's NVLink kind, CPU and memory left now and the rooms left on its GPUs (as a
    /// set), folded into one word. Two states folding alike would cost the later node its
    /// fragmentation score, not a wrong placement; with 64 bits that is not expected in a
    /// cluster's lifetime.
    pub fn fold_state(&self) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rooms = [0u16; 16];
        let mut extra: u64 = 0;
        for (i, g) in self.gpus.iter().enumerate() {
            let r = g.avail(Mode::Now);
            match rooms.get_mut(i) {
                Some(x) => *x = r,
                // more than 16 GPUs: the rest are summed (order-free) into the state
                None => extra = extra.wrapping_add(u64::from(r).wrapping_mul(K)),
            }
        }
        let k = self.gpus.len().min(16);
        rooms[..k].sort_unstable();
        let mut h = u64::from(self.nvlink) ^ extra;
        let mut mix = |x: u64| h = (h.rotate_left(5) ^ x).wrapping_mul(K);
        mix(self.cpu.avail(Mode::Now));
        mix(self.mem.avail(Mode::Now));
        mix(k as u64);
        for &r in &rooms[..k] {
            mix(u64::from(r));
        }
        h
    }

    /// Some GPU capacity (whole or part of a GPU) is free now.
    pub fn has_idle_gpu(&self) -> bool {
        self.gpus.iter().any(|g| g.avail(Mode::Now) > 0)
    }

    /// Healthy GPUs free in whole in `mode` (as `reindex` last counted them).
    pub fn whole_avail(&self, mode: Mode) -> u32 {
        let kept = u32::from(self.whole[mode as usize]);
        debug_assert_eq!(kept, self.count_whole(mode), "whole GPUs kept by reindex");
        kept
    }

    /// Healthy GPUs free in whole in `mode`, counted on the GPUs.
    fn count_whole(&self, mode: Mode) -> u32 {
        self.gpus
            .iter()
            .filter(|g| g.cap > 0 && g.avail(mode) == 1000)
            .count() as u32
    }

    /// Count the whole GPUs free now and once releases complete again.
    fn recount_whole(&mut self) {
        // at most 255 GPUs a node (`Cluster::build`)
        self.whole = [Mode::Now, Mode::AfterRelease].map(|m| self.count_whole(m) as u8);
    }
    pub fn healthy_gpus(&self) -> u32 {
        self.gpus.iter().filter(|g| g.cap > 0).count() as u32
    }

    /// The healthy GPUs of the node's largest GPU group.
    pub fn largest_group(&self) -> u32 {
        self.groups
            .iter()
            .map(|g| g.iter().filter(|&&x| self.gpus[x as usize].cap > 0).count() as u32)
            .max()
            .unwrap_or(0)
    }
}

/// Capacity taken by one replica on one node (for undo and for the decision).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Take {
    pub node: NodeId,
    pub gpus: Vec<(u8, u16)>,
    pub cpu: u64,
    pub mem: u64,
    pub mode: Mode,
}

/// A rack's nodes of one flavor.
#[derive(Clone, Debug, Default)]
pub(crate) struct RackGroup {
    pub flavor: FlavorId,
    pub nodes: Vec<NodeId>,
    pub free_now: u32,
    pub healthy_gpus: u32,
}

/// Static facts per flavor, for quick "never fits" answers.
#[derive(Clone, Debug, Default)]
pub(crate) struct FlavorFacts {
    pub nodes: Vec<NodeId>,
    pub max_node_gpus: u32,
    pub max_group_gpus: u32,
    pub max_rack_gpus: u32,
    pub total_gpus: u32,
    /// The most CPU (milli) and memory (bytes) one schedulable node of the type has.
    pub max_node_cpu: u64,
    pub max_node_mem: u64,
}

impl FlavorFacts {
    /// Counts node `n` of the type in (its GPUs, its largest node and group, its CPU and
    /// memory); racks are summed by the caller.
    pub fn count(&mut self, n: &NodeState) {
        let healthy = n.healthy_gpus();
        self.max_node_gpus = self.max_node_gpus.max(healthy);
        self.max_node_cpu = self.max_node_cpu.max(n.cpu.cap);
        self.max_node_mem = self.max_node_mem.max(n.mem.cap);
        self.max_group_gpus = self.max_group_gpus.max(n.largest_group());
        self.total_gpus += healthy;
    }

    /// The most GPUs one domain of `level` holds (no level: the whole flavor).
    pub fn max_in(&self, level: Option<TopologyLevel>) -> u32 {
        match level {
            Some(TopologyLevel::GpuGroup) => self.max_group_gpus,
            Some(TopologyLevel::Node) => self.max_node_gpus,
            Some(TopologyLevel::Rack) => self.max_rack_gpus,
            None => self.total_gpus,
        }
    }
}

/// The cluster during a cycle.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cluster {
    pub nodes: IdVec<NodeId, NodeState>,
    pub node_by_name: BTreeMap<String, NodeId>,
    pub flavor_names: IdVec<FlavorId, String>,
    pub flavor_by_name: BTreeMap<String, FlavorId>,
    pub facts: IdVec<FlavorId, FlavorFacts>,
    /// `[flavor][free whole GPUs now]` → (has NVLink, node).
    pub buckets: IdVec<FlavorId, Vec<BTreeSet<(bool, NodeId)>>>,
    /// Partly used GPUs with room left now, per flavor: (room, node, GPU), least room first
    /// (best fit for a share is the first entry at or above its size).
    pub share_index: IdVec<FlavorId, BTreeSet<(u16, NodeId, u8)>>,
    pub racks: IdVec<RackId, RackGroup>,
    /// Per flavor: (free now, rack group).
    pub rack_index: IdVec<FlavorId, BTreeSet<(u32, RackId)>>,
    /// Nodes with healthy GPUs that take no new work now (cordoned, not ready): the few a
    /// job that fits no schedulable node may be waiting for.
    pub away: Vec<NodeId>,
}

fn build_topology(n: &Node, count: usize) -> (Vec<Vec<u8>>, Vec<bool>) {
    let default;
    let topo = if n.topology.groups.is_empty() {
        default = Topology::default_for(count as u32);
        &default
    } else {
        &n.topology
    };
    let mut seen = vec![false; count];
    let mut groups = Vec::new();
    let mut nvl = Vec::new();
    for g in &topo.groups {
        let members: Vec<u8> = g
            .gpus
            .iter()
            .filter(|i| (i.0 as usize) < count && !std::mem::replace(&mut seen[i.0 as usize], true))
            .map(|i| i.0 as u8)
            .collect();
        if !members.is_empty() {
            groups.push(members);
            nvl.push(g.nvlink);
        }
    }
    for (i, s) in seen.iter().enumerate() {
        if !s {
            groups.push(vec![i as u8]);
            nvl.push(false);
        }
    }
    (groups, nvl)
}

impl Cluster {
    pub fn build(snap: &Snapshot) -> Cluster {
        let mut c = Cluster::default();
        let mut rack_ids: BTreeMap<(FlavorId, &str), RackId> = BTreeMap::new();
        // Index nodes rack by rack (then by name), so a rack's nodes are neighbours in the
        // free-capacity index and ties between equal nodes stay within as few racks as
        // possible; the order no longer depends on the order the caller listed them in.
        let mut order: Vec<usize> = (0..snap.nodes.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&snap.nodes[a], &snap.nodes[b]);
            (x.rack.as_deref(), x.name.as_str()).cmp(&(y.rack.as_deref(), y.name.as_str()))
        });
        for src in order {
            let n = &snap.nodes[src];
            if c.node_by_name.contains_key(&n.name) {
                continue; // duplicate names: the first wins
            }
            let flavor = c.flavor_id_or_insert(n.flavor.as_str());
            let count = (n.allocatable.gpus.min(255)) as usize;
            let (groups, group_nvlink) = build_topology(n, count);
            let mut gpu_pos = vec![0u8; count];
            for (p, i) in groups.iter().flatten().enumerate() {
                gpu_pos[*i as usize] = p as u8;
            }
            let mut gpus = vec![
                GpuLedger {
                    cap: 1000,
                    ..Default::default()
                };
                count
            ];
            for u in &n.unhealthy_gpus {
                if let Some(g) = gpus.get_mut(u.0 as usize) {
                    g.cap = 0;
                }
            }
            let rack = n.rack.as_deref().map(|r| {
                let next = RackId(rack_ids.len() as u32);
                *rack_ids.entry((flavor, r)).or_insert(next)
            });
            let idx = c.nodes.push(NodeState {
                src: src as u32,
                flavor,
                rack,
                schedulable: n.schedulable,
                nvlink: group_nvlink.iter().any(|&b| b),
                cpu: Ledger {
                    cap: n.allocatable.cpu_milli,
                    held: n.foreign.cpu_milli,
                    ..Default::default()
                },
                mem: Ledger {
                    cap: n.allocatable.memory_bytes,
                    held: n.foreign.memory_bytes,
                    ..Default::default()
                },
                gpus,
                groups,
                group_nvlink,
                gpu_pos,
                free_now: 0,
                whole: [0; 2],
                share_keys: Vec::new(),
                state: 0,
            });
            // Pods of no job hold their room as a running replica does; a leaving one's is
            // `releasing`: taken now, free to plans that wait.
            for h in &n.held {
                let share = h.share.map(|m| m.0);
                let (cpu, mem) = (h.cpu_milli, h.memory_bytes);
                c.charge_running(idx, &h.gpus, share, cpu, mem, h.leaving.is_some());
            }
            c.node_by_name.insert(n.name.clone(), idx);
        }
        c.racks = IdVec::filled(RackGroup::default(), rack_ids.len());
        for (&(f, _), &id) in &rack_ids {
            c.racks[id].flavor = f;
        }
        c
    }

    fn flavor_id_or_insert(&mut self, name: &str) -> FlavorId {
        if let Some(&id) = self.flavor_by_name.get(name) {
            return id;
        }
        let id = self.flavor_names.push(name.to_string());
        self.flavor_by_name.insert(name.to_string(), id);
        id
    }

    /// Charge a running replica's resources (before [`Cluster::index`]).
    pub fn charge_running(
        &mut self,
        node: NodeId,
        gpus: &[GpuIndex],
        share: Option<u32>,
        cpu: u64,
        mem: u64,
        releasing: bool,
    ) {
        let n = &mut self.nodes[node];
        let amount = share.map_or(1000, |s| s.min(1000));
        let f = |l: &mut Ledger, a: u64| {
            l.held += a;
            if releasing {
                l.release(a);
            }
        };
        f(&mut n.cpu, cpu);
        f(&mut n.mem, mem);
        for g in gpus {
            if let Some(gl) = n.gpus.get_mut(g.0 as usize) {
                gl.update(|l| f(l, u64::from(amount)));
            }
        }
    }

    /// Charge foreign GPUs to the highest-numbered GPUs left, then build the free index.
    pub fn index(&mut self, snap: &Snapshot) {
        for (i, n) in snap.nodes.iter().enumerate() {
            let Some(&idx) = self.node_by_name.get(&n.name) else {
                continue;
            };
            if self.nodes[idx].src as usize != i {
                continue;
            }
            let st = &mut self.nodes[idx];
            let mut left = n.foreign.gpus;
            for g in st.gpus.iter_mut().rev() {
                if left == 0 {
                    break;
                }
                if g.cap > 0 && g.held == 0 && g.releasing == 0 {
                    g.held = 1000;
                    left -= 1;
                }
            }
        }
        let nf = self.flavor_names.len();
        self.facts = IdVec::filled(FlavorFacts::default(), nf);
        self.buckets = IdVec::filled(Vec::new(), nf);
        self.share_index = IdVec::filled(BTreeSet::new(), nf);
        self.rack_index = IdVec::filled(BTreeSet::new(), nf);
        self.away.clear();
        for (i, n) in self.nodes.iter_enumerated() {
            let f = n.flavor;
            let healthy = n.healthy_gpus();
            if !n.schedulable && healthy > 0 {
                self.away.push(i);
            }
            let facts = &mut self.facts[f];
            if n.schedulable {
                facts.nodes.push(i);
                facts.count(n);
                if let Some(r) = n.rack {
                    self.racks[r].nodes.push(i);
                    self.racks[r].healthy_gpus += healthy;
                }
            }
            let b = &mut self.buckets[f];
            if b.len() <= n.gpus.len() {
                b.resize(n.gpus.len() + 1, BTreeSet::new());
            }
        }
        for r in &self.racks {
            let f = &mut self.facts[r.flavor];
            f.max_rack_gpus = f.max_rack_gpus.max(r.healthy_gpus);
        }
        for i in self.nodes.ids() {
            self.nodes[i].free_now = 0;
            self.reindex(i, true);
        }
    }

    /// Recompute a node's free counts and move it in the indexes.
    fn reindex(&mut self, idx: NodeId, first: bool) {
        let n = &mut self.nodes[idx];
        n.state = n.fold_state();
        n.recount_whole();
        let n = &self.nodes[idx];
        if !n.schedulable {
            return;
        }
        let f = n.flavor;
        let old = n.free_now;
        let new = n.whole[Mode::Now as usize];
        let key = (n.nvlink, idx);
        let rack = n.rack;
        let room = |(i, g): (usize, &GpuLedger)| {
            let a = g.avail(Mode::Now);
            (g.cap > 0 && a > 0 && a < 1000).then_some((a, i as u8))
        };
        let same = n
            .gpus
            .iter()
            .enumerate()
            .filter_map(room)
            .eq(n.share_keys.iter().copied());
        let keys: Option<Vec<(u16, u8)>> =
            (!same).then(|| n.gpus.iter().enumerate().filter_map(room).collect());
        if first || old != new {
            if !first {
                self.buckets[f][old as usize].remove(&key);
            }
            self.buckets[f][new as usize].insert(key);
            if let Some(r) = rack {
                let rg = &mut self.racks[r];
                if !first {
                    self.rack_index[f].remove(&(rg.free_now, r));
                }
                rg.free_now = rg.free_now + u32::from(new) - if first { 0 } else { u32::from(old) };
                self.rack_index[f].insert((rg.free_now, r));
            }
        }
        let n = &mut self.nodes[idx];
        n.free_now = new;
        if let Some(keys) = keys {
            for &(a, g) in &n.share_keys {
                self.share_index[f].remove(&(a, idx, g));
            }
            for &(a, g) in &keys {
                self.share_index[f].insert((a, idx, g));
            }
            n.share_keys = keys;
        }
    }

    /// Try to take one replica's resources on a node; `group` restricts whole GPUs to one
    /// GPU group. Applies the take and returns it, or leaves the node untouched.
    #[allow(clippy::too_many_arguments)] // one replica's whole demand, spelled out
    pub fn try_take(
        &mut self,
        idx: NodeId,
        d: GpuDemand,
        cpu: u64,
        mem: u64,
        mode: Mode,
        nvlink_wanted: bool,
        group: Option<usize>,
    ) -> Option<Take> {
        self.take_with(idx, cpu, mem, mode, |n| {
            Some(match d {
                GpuDemand::None => Vec::new(),
                GpuDemand::Whole(k) => choose_whole(n, k, mode, nvlink_wanted, group)?
                    .into_iter()
                    .map(|g| (g, 1000))
                    .collect(),
                GpuDemand::Share(m) => vec![(
                    choose_share(n, m.0.min(1000) as u16, mode, nvlink_wanted)?,
                    m.0.min(1000) as u16,
                )],
            })
        })
    }

    /// Takes `cpu`, `mem` and the GPUs `gpus` picks on node `idx`, or leaves the node untouched
    /// when it is unschedulable, short of CPU or memory, or `gpus` finds none.
    fn take_with(
        &mut self,
        idx: NodeId,
        cpu: u64,
        mem: u64,
        mode: Mode,
        gpus: impl FnOnce(&NodeState) -> Option<Vec<(u8, u16)>>,
    ) -> Option<Take> {
        let n = &self.nodes[idx];
        if !n.schedulable || n.cpu.avail(mode) < cpu || n.mem.avail(mode) < mem {
            return None;
        }
        let t = Take {
            node: idx,
            gpus: gpus(n)?,
            cpu,
            mem,
            mode,
        };
        self.apply(&t, true);
        Some(t)
    }

    fn apply(&mut self, t: &Take, add: bool) {
        let n = &mut self.nodes[t.node];
        let op = |l: &mut Ledger, a: u64| {
            if add {
                l.take(a, t.mode)
            } else {
                l.give_back(a, t.mode)
            }
        };
        op(&mut n.cpu, t.cpu);
        op(&mut n.mem, t.mem);
        for &(g, a) in &t.gpus {
            n.gpus[g as usize].update(|l| op(l, u64::from(a)));
        }
        self.reindex(t.node, false);
    }

    pub fn undo(&mut self, t: &Take) {
        self.apply(t, false);
    }

    /// Applies again a take that was undone.
    pub fn redo(&mut self, t: &Take) {
        self.apply(t, true);
    }

    /// Move a running replica's resources to (or back from) `releasing`.
    pub fn set_releasing(
        &mut self,
        node: NodeId,
        gpus: &[(u8, u16)],
        cpu: u64,
        mem: u64,
        on: bool,
    ) {
        let n = &mut self.nodes[node];
        let op = |l: &mut Ledger, a: u64| if on { l.release(a) } else { l.unrelease(a) };
        // What is free now moves only where a reservation is larger than what is releasing:
        // most often only the room once releases complete does.
        let mut now_moved = false;
        for (l, a) in [(&mut n.cpu, cpu), (&mut n.mem, mem)] {
            let before = l.avail(Mode::Now);
            op(l, a);
            now_moved |= l.avail(Mode::Now) != before;
        }
        for &(g, a) in gpus {
            if let Some(gl) = n.gpus.get_mut(g as usize) {
                let before = gl.avail(Mode::Now);
                gl.update(|l| op(l, u64::from(a)));
                now_moved |= gl.avail(Mode::Now) != before;
            }
        }
        if now_moved {
            self.reindex(node, false);
        } else {
            // the node's state and its places in the indexes depend on what is free now only
            n.recount_whole();
        }
    }

    /// Nodes of a flavor with at least `min_free` whole GPUs free now, best fit (fewest
    /// free) first or largest first; NVLink nodes last unless `nvlink_first`.
    pub fn bucket_candidates(
        &self,
        flavor: FlavorId,
        min_free: u32,
        largest: bool,
        nvlink_first: bool,
        limit: usize,
        out: &mut Vec<NodeId>,
    ) {
        out.clear();
        let Some(b) = self.buckets.get(flavor) else {
            return;
        };
        let lo = (min_free as usize).min(b.len());
        let mut visit = |set: &BTreeSet<(bool, NodeId)>| {
            let it: Box<dyn Iterator<Item = &(bool, NodeId)>> = if nvlink_first {
                Box::new(
                    set.range((true, NodeId(0))..)
                        .chain(set.range(..(true, NodeId(0)))),
                )
            } else {
                Box::new(set.iter())
            };
            for &(_, n) in it {
                if out.len() >= limit {
                    return true;
                }
                out.push(n);
            }
            out.len() >= limit
        };
        if largest {
            for set in b[lo..].iter().rev() {
                if visit(set) {
                    return;
                }
            }
        } else {
            for set in &b[lo..] {
                if visit(set) {
                    return;
                }
            }
        }
    }

    /// Take one share on a given GPU of a node now (the GPU `frag` chose),
    /// or leave the node untouched when it does not fit there.
    pub fn try_take_share_on(
        &mut self,
        idx: NodeId,
        gpu: u8,
        m: u16,
        cpu: u64,
        mem: u64,
    ) -> Option<Take> {
        self.take_with(idx, cpu, mem, Mode::Now, |n| {
            let g = n.gpus.get(gpu as usize)?;
            (g.cap > 0 && g.avail(Mode::Now) >= m).then(|| vec![(gpu, m)])
        })
    }

    /// Most whole GPUs free now on one node, and in total, over some flavors.
    /// The same as [`Cluster::free_summary`], of the schedulable nodes among `nodes`.
    pub fn free_summary_on(&self, nodes: &[NodeId]) -> (u32, u32) {
        nodes
            .iter()
            .map(|&n| &self.nodes[n])
            .filter(|n| n.schedulable)
            .fold((0, 0), |(largest, total), n| {
                (
                    largest.max(u32::from(n.free_now)),
                    total + u32::from(n.free_now),
                )
            })
    }

    pub fn free_summary(&self, flavors: &[FlavorId]) -> (u32, u32) {
        let mut largest = 0;
        let mut total = 0;
        for &f in flavors {
            if let Some(b) = self.buckets.get(f) {
                for (free, set) in b.iter().enumerate() {
                    if !set.is_empty() {
                        largest = largest.max(free as u32);
                        total += free as u32 * set.len() as u32;
                    }
                }
            }
        }
        (largest, total)
    }
}

/// Whole GPUs on a node: within the best-fitting group (fewest free GPUs that still hold
/// them; a group of the wanted NVLink kind on ties), else across the groups with the most
/// free GPUs. Returns positions in topology order.
fn choose_whole(
    n: &NodeState,
    k: u32,
    mode: Mode,
    nvlink_wanted: bool,
    group: Option<usize>,
) -> Option<Vec<u8>> {
    if k == 0 {
        return Some(Vec::new());
    }
    let free_in = |g: usize| -> Vec<u8> {
        n.groups[g]
            .iter()
            .copied()
            .filter(|&i| n.gpus[i as usize].avail(mode) == 1000)
            .collect()
    };
    if let Some(g) = group {
        let f = free_in(g);
        return (f.len() as u32 >= k).then(|| f[..k as usize].to_vec());
    }
    let mut best: Option<(u32, bool, usize)> = None;
    let mut frees: Vec<Vec<u8>> = Vec::with_capacity(n.groups.len());
    for g in 0..n.groups.len() {
        let f = free_in(g);
        let c = f.len() as u32;
        if c >= k {
            let key = (c, n.group_nvlink[g] != nvlink_wanted, g);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        frees.push(f);
    }
    if let Some((_, _, g)) = best {
        return Some(frees[g][..k as usize].to_vec());
    }
    let total: usize = frees.iter().map(Vec::len).sum();
    if total < k as usize {
        return None;
    }
    let mut order: Vec<usize> = (0..frees.len()).collect();
    order.sort_by_key(|&g| (std::cmp::Reverse(frees[g].len()), g));
    let mut out = Vec::with_capacity(k as usize);
    for g in order {
        for &i in &frees[g] {
            if out.len() < k as usize {
                out.push(i);
            }
        }
    }
    out.sort_by_key(|&i| n.gpu_pos[i as usize]);
    Some(out)
}

/// One GPU for a share: the partly used GPU with the least room that still fits (packing
/// shares together), else a free GPU from the group with the fewest free GPUs (keeping
/// large groups whole), non-NVLink first.
fn choose_share(n: &NodeState, m: u16, mode: Mode, nvlink_wanted: bool) -> Option<u8> {
    let mut best: Option<(u16, u8)> = None;
    for (i, g) in n.gpus.iter().enumerate() {
        let a = g.avail(mode);
        if g.cap > 0 && a >= m && a < 1000 && best.is_none_or(|b| (a, i as u8) < b) {
            best = Some((a, i as u8));
        }
    }
    if let Some((_, i)) = best {
        return Some(i);
    }
    fresh_share_gpu(n, mode, nvlink_wanted)
}

/// A free GPU for a share: from the group with the fewest free GPUs (keeping large groups
/// whole), non-NVLink first unless NVLink is wanted.
pub(crate) fn fresh_share_gpu(n: &NodeState, mode: Mode, nvlink_wanted: bool) -> Option<u8> {
    let mut pick: Option<((u32, bool, usize), u8)> = None;
    for g in 0..n.groups.len() {
        let free: Vec<u8> = n.groups[g]
            .iter()
            .copied()
            .filter(|&i| n.gpus[i as usize].avail(mode) == 1000)
            .collect();
        if let Some(&first) = free.first() {
            let key = (free.len() as u32, n.group_nvlink[g] != nvlink_wanted, g);
            if pick.as_ref().is_none_or(|(k, _)| key < *k) {
                pick = Some((key, first));
            }
        }
    }
    pick.map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::fixtures::{node, snapshot};

    /// The counts `reindex` keeps and those counted on the GPUs, both modes, every node.
    fn kept_and_counted(c: &Cluster) -> Vec<([u32; 2], [u32; 2])> {
        let modes = [Mode::Now, Mode::AfterRelease];
        c.nodes
            .iter()
            .map(|n| {
                (
                    modes.map(|m| u32::from(n.whole[m as usize])),
                    modes.map(|m| n.count_whole(m)),
                )
            })
            .collect()
    }

    #[test]
    fn whole_gpu_counts_are_kept_through_takes_and_releases() {
        let mut bad = node("n1", "H100", 4, None);
        bad.unhealthy_gpus = vec![GpuIndex(3)];
        let snap = snapshot(
            0,
            vec![node("n0", "H100", 8, None), bad],
            vec![],
            vec![],
            vec![],
        );
        let mut c = Cluster::build(&snap);
        let n0 = c.node_by_name["n0"];
        let cpu = c.nodes[n0].cpu.cap / 2;
        c.charge_running(n0, &[GpuIndex(0), GpuIndex(1)], None, cpu, 0, false);
        c.index(&snap);
        let agree = |c: &Cluster| {
            let n = &c.nodes[n0];
            kept_and_counted(c).iter().all(|(k, n)| k == n) && n.state == n.fold_state()
        };
        assert!(agree(&c));
        assert_eq!(c.nodes[n0].whole_avail(Mode::Now), 6);
        assert_eq!(c.nodes[c.node_by_name["n1"]].whole_avail(Mode::Now), 3);
        // a reservation of 4 GPUs and the CPU left once releases complete
        let d = GpuDemand::Whole(4);
        let t = c
            .try_take(n0, d, cpu, 0, Mode::AfterRelease, false, None)
            .unwrap();
        assert!(agree(&c));
        assert_eq!(c.nodes[n0].whole_avail(Mode::Now), 2);
        let state = c.nodes[n0].state;
        // the release frees its GPUs once it completes, not now; the CPU it frees is
        // reserved, and what was reserved beyond it is free now
        let held = [(0, 1000), (1, 1000)];
        c.set_releasing(n0, &held, cpu, 0, true);
        assert!(agree(&c));
        assert_ne!(c.nodes[n0].state, state);
        assert_eq!(c.nodes[n0].whole_avail(Mode::Now), 2);
        assert_eq!(c.nodes[n0].whole_avail(Mode::AfterRelease), 4);
        c.set_releasing(n0, &held, cpu, 0, false);
        assert!(agree(&c));
        assert_eq!(c.nodes[n0].state, state);
        c.undo(&t);
        assert!(agree(&c));
        assert_eq!(c.nodes[n0].whole_avail(Mode::AfterRelease), 6);
        // a release with nothing reserved moves nothing free now
        c.set_releasing(n0, &held, cpu, 0, true);
        assert!(agree(&c));
        assert_eq!(c.nodes[n0].whole_avail(Mode::Now), 6);
        assert_eq!(c.nodes[n0].whole_avail(Mode::AfterRelease), 8);
    }
}
