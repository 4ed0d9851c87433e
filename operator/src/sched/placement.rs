//! Gang placement: all replicas of a job, or none.
//!
//! The search tries domains from the smallest that can hold the job to the largest, and
//! scores candidates within a domain as follows (each score, and why):
//!
//! 1. **Replicas on nodes the job already uses first** (fewest nodes): every extra node adds
//!    network hops to the job's collectives.
//! 2. **Least fragmentation for a job's first replica when it carries all the job's whole
//!    GPUs** (a single-replica job, or a job of shares or CPU only), on capacity free now
//!    anywhere in the flavor: among a bounded pool of candidates (the first
//!    few nodes of each free-whole-GPU bucket that holds it; for a share also the nodes whose
//!    partly used GPUs have the least room that fits, from the share index), the node whose
//!    fragmentation for the workload's shape mix (`frag`, FGD) grows least. This weighs CPU
//!    and memory left, partly used GPUs and how often each shape occurs: small replicas fill
//!    partly used nodes and leave whole nodes whole, unless that strands CPU-starved GPUs. A
//!    whole-GPU replica does not split the flavor's *last* node with the most free GPUs while
//!    another candidate holds it (so one largest block stays for a waiting big job). Ties: best fit (fewest free whole
//!    GPUs), the wanted NVLink kind, the fuller rack, index.
//!    Otherwise (gangs, reclaim plans, restricted node sets) **best fit for the rest of the
//!    gang**: when a gang opens a new node, the node
//!    with the *fewest* free GPUs that still holds *all remaining* GPUs of the gang is chosen,
//!    so the job ends on one node when it can and large free nodes stay whole for large jobs
//!    (fragmentation-aware, like a buddy allocator keeping large cells free).
//! 3. **Otherwise the largest free node**: when no node holds the rest, take the emptiest
//!    one; this minimises the number of nodes the gang spans.
//! 4. **Racks**: a gang larger than a node first tries one rack (the rack with the fewest
//!    free GPUs that still holds it, again best fit), then the whole flavor, opening nodes in
//!    racks it already uses first (fewest racks).
//! 5. **Within a node**, whole GPUs come from the GPU group with the fewest free GPUs that
//!    holds them (smallest topology domain, keeping NVLink groups whole), and shares go to the
//!    partly used GPU with the least room (packing fractions together); a share placed by
//!    fragmentation goes to the GPU of its node where fragmentation grows least.
//! 6. **NVLink reservation**: replicas of one GPU or a fraction do not need NVLink; they try
//!    PCIe nodes and groups before NVLink ones, so the last NVLink-whole groups stay for
//!    multi-GPU replicas, which try NVLink first.
//!
//! Ranks follow topology: nodes in the order the gang opened them, GPUs in topology order
//! within a node, so ranks are contiguous per node.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::cluster::{Cluster, Mode, Take};
use super::frag::{Mix, rank};
use super::ids::{FlavorId, IdVec, NodeId, RackId};
use super::model::{GpuDemand, GpuIndex, ReplicaPlacement, Snapshot, TopologyLevel};

/// One replica to place.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Demand {
    pub gpu: GpuDemand,
    pub cpu: u64,
    pub mem: u64,
    pub task: u16,
    pub index: u32,
}

/// A gang to place on one flavor.
#[derive(Clone, Debug)]
pub(crate) struct Request<'a> {
    /// Sorted: most whole GPUs first, then shares, then CPU-only replicas.
    pub demands: &'a [Demand],
    pub flavor: FlavorId,
    pub required: Option<TopologyLevel>,
    pub preferred: Option<TopologyLevel>,
    pub whole_gpus: u32,
    pub nvlink_wanted: bool,
    /// The nodes each task may use, for a job with node constraints (see `constraints`).
    pub filter: Option<&'a NodeFilter>,
    /// The workload's shape mix that candidates' fragmentation is scored against.
    pub mix: &'a Mix,
}

impl Request<'_> {
    fn admits(&self, d: &Demand, n: NodeId) -> bool {
        self.filter.is_none_or(|f| f.admits(d.task, n))
    }
}

/// Which nodes a replica may use, by node (shared by the jobs of one template).
pub(crate) type NodeMask = std::rc::Rc<IdVec<NodeId, bool>>;

/// Which nodes each task of a job may use, from its node constraints; the search looks only
/// at `nodes`, and every replica is checked against its own task's set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeFilter {
    /// Per task, indexed by node; None: every node.
    pub per_task: Vec<Option<NodeMask>>,
    /// Nodes at least one task may use: the search scope.
    pub nodes: Vec<NodeId>,
    /// Tells constrained shapes apart in the no-fit memo.
    pub id: usize,
}

impl NodeFilter {
    pub fn admits(&self, task: u16, n: NodeId) -> bool {
        match self.per_task.get(usize::from(task)) {
            Some(Some(mask)) => mask.get(n).copied().unwrap_or(false),
            _ => true,
        }
    }
}

/// One replica on one node, if its task may use the node and the node has room.
#[allow(clippy::too_many_arguments)] // one replica's whole demand, spelled out
fn take(
    c: &mut Cluster,
    req: &Request,
    n: NodeId,
    d: &Demand,
    mode: Mode,
    nv: bool,
    group: Option<usize>,
) -> Option<Take> {
    if !req.admits(d, n) {
        return None;
    }
    c.try_take(n, d.gpu, d.cpu, d.mem, mode, nv, group)
}

/// Where the search may look.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope<'a> {
    /// Every node of the flavor, through the free index (capacity free now only).
    Flavor,
    /// Only these nodes.
    Nodes(&'a [NodeId]),
}

/// A placement that has been applied to the cluster (undo it with [`Trial::undo`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Trial {
    /// (demand position, take), in placement order.
    pub takes: Vec<(usize, Take)>,
    pub node_order: Vec<NodeId>,
}

impl Trial {
    pub fn undo(self, c: &mut Cluster) {
        self.lift(c);
    }

    /// Takes the placement off the cluster for a while, to be [`Self::restore`]d.
    pub fn lift(&self, c: &mut Cluster) {
        for (_, t) in self.takes.iter().rev() {
            c.undo(t);
        }
    }

    /// Applies a [`Self::lift`]ed placement again.
    pub fn restore(&self, c: &mut Cluster) {
        for (_, t) in &self.takes {
            c.redo(t);
        }
    }

    /// Replica placements with ranks that follow topology: nodes in the order the gang
    /// opened them, then GPU topology order, then task and index; except that rank 0 is the
    /// first task's first replica.
    pub fn placements(
        &self,
        c: &Cluster,
        snap: &Snapshot,
        demands: &[Demand],
        task_names: &[&str],
    ) -> Vec<ReplicaPlacement> {
        // Rank 0 (MASTER_ADDR) is the first task's first replica, as Kubeflow's operators
        // make the Master rank 0: its node comes first, then the others in placement order.
        let first = self
            .takes
            .iter()
            .find(|(di, _)| (demands[*di].task, demands[*di].index) == (0, 0))
            .map(|(_, t)| t.node);
        let mut rows: Vec<(RankKey, ReplicaPlacement)> = self
            .takes
            .iter()
            .map(|(di, t)| {
                let d = &demands[*di];
                let n = &c.nodes[t.node];
                let node_pos = if Some(t.node) == first {
                    0
                } else {
                    self.node_order
                        .iter()
                        .position(|&x| x == t.node)
                        .map_or(usize::MAX, |p| p + 1)
                };
                let not_first = (d.task, d.index) != (0, 0);
                let gpu_pos = t
                    .gpus
                    .iter()
                    .map(|&(g, _)| n.gpu_pos[g as usize])
                    .min()
                    .unwrap_or(u8::MAX);
                let share = match d.gpu {
                    GpuDemand::Share(m) => Some(m),
                    _ => None,
                };
                let mut gpus: Vec<GpuIndex> = t
                    .gpus
                    .iter()
                    .map(|&(g, _)| GpuIndex(u32::from(g)))
                    .collect();
                gpus.sort_by_key(|g| n.gpu_pos[g.0 as usize]);
                (
                    RankKey {
                        node_pos,
                        not_first,
                        gpu_pos,
                        task: d.task,
                        index: d.index,
                        shape: (d.gpu, d.cpu, d.mem),
                    },
                    ReplicaPlacement {
                        task: task_names
                            .get(d.task as usize)
                            .copied()
                            .unwrap_or_default()
                            .to_string(),
                        index: d.index,
                        rank: 0,
                        node: snap.nodes[n.src as usize].name.clone(),
                        gpus,
                        share,
                    },
                )
            })
            .collect();
        first_gpus_in_replica_order(&mut rows);
        rows.sort_by_key(|r| r.0.order());
        rows.into_iter()
            .enumerate()
            .map(|(rank, (_, mut p))| {
                p.rank = rank as u32;
                p
            })
            .collect()
    }
}

/// Where a replica goes in rank order, and what it asks (replicas of one shape on one node
/// may trade GPUs).
struct RankKey {
    node_pos: usize,
    not_first: bool,
    gpu_pos: u8,
    task: u16,
    index: u32,
    shape: Shape,
}

/// What a replica asks: GPUs, CPU, memory.
type Shape = (GpuDemand, u64, u64);

impl RankKey {
    fn order(&self) -> (usize, bool, u8, u16, u32) {
        (
            self.node_pos,
            self.not_first,
            self.gpu_pos,
            self.task,
            self.index,
        )
    }
}

/// Replicas of one shape on one node take that node's GPU sets in task and index order, so
/// that the first replica, which goes first in rank order on its node, also has the first
/// GPUs and the node's ranks still follow GPU topology. Which of identical replicas holds
/// which identical set changes nothing the placement charged.
fn first_gpus_in_replica_order(rows: &mut [(RankKey, ReplicaPlacement)]) {
    let mut groups: BTreeMap<(usize, Shape), Vec<usize>> = BTreeMap::new();
    for (i, (k, _)) in rows.iter().enumerate() {
        groups.entry((k.node_pos, k.shape)).or_default().push(i);
    }
    for members in groups.into_values().filter(|m| m.len() > 1) {
        let mut slots: Vec<(u8, Vec<GpuIndex>)> = members
            .iter()
            .map(|&i| (rows[i].0.gpu_pos, rows[i].1.gpus.clone()))
            .collect();
        slots.sort_by_key(|s| s.0);
        let mut order = members.clone();
        order.sort_by_key(|&i| (rows[i].0.task, rows[i].0.index));
        for (i, (pos, gpus)) in order.into_iter().zip(slots) {
            rows[i].0.gpu_pos = pos;
            rows[i].1.gpus = gpus;
        }
    }
}

/// Place the whole gang or nothing. On success the capacity is taken (`mode` decides from
/// which pool) and the trial is returned; on failure the cluster is unchanged.
pub(crate) fn place(c: &mut Cluster, req: &Request, mode: Mode, scope: Scope) -> Option<Trial> {
    debug_assert!(mode == Mode::Now || matches!(scope, Scope::Nodes(_)));
    let g = req.whole_gpus;
    let facts = c.facts.get(req.flavor)?;
    let fits_node = g <= facts.max_node_gpus;
    let has_racks = c.racks.iter().any(|r| r.flavor == req.flavor);
    match req.required {
        Some(TopologyLevel::GpuGroup) => single_group(c, req, mode, scope),
        Some(TopologyLevel::Node) => spread(c, req, mode, scope, true),
        Some(TopologyLevel::Rack) => in_one_rack(c, req, mode, scope),
        None => {
            if req.preferred == Some(TopologyLevel::GpuGroup)
                && let Some(t) = single_group(c, req, mode, scope)
            {
                return Some(t);
            }
            if !fits_node
                && has_racks
                && let Some(t) = in_one_rack(c, req, mode, scope)
            {
                return Some(t);
            }
            spread(c, req, mode, scope, false)
        }
    }
}

#[allow(clippy::too_many_arguments)] // the search parameters, spelled out
fn candidates(
    c: &Cluster,
    req: &Request,
    mode: Mode,
    scope: Scope,
    min_free: u32,
    largest: bool,
    limit: usize,
    out: &mut Vec<NodeId>,
) {
    match scope {
        Scope::Flavor if !largest && c.racks.iter().any(|r| r.flavor == req.flavor) => {
            // Best fit, and among equally fitting nodes the one in the rack with the fewest
            // free GPUs: emptier racks stay whole for rack-sized gangs. A bounded pool keeps
            // this cheap; nodes are indexed rack by rack, so the pool spans few racks.
            let pool = limit.max(RACK_POOL);
            c.bucket_candidates(req.flavor, min_free, false, req.nvlink_wanted, pool, out);
            let key = |n: NodeId| {
                let node = &c.nodes[n];
                let rack_free = node.rack.map_or(u32::MAX, |r| c.racks[r].free_now);
                (
                    node.whole_avail(mode),
                    node.nvlink != req.nvlink_wanted,
                    rack_free,
                    n,
                )
            };
            out.sort_by_key(|&n| key(n));
            out.truncate(limit);
        }
        Scope::Flavor => {
            c.bucket_candidates(req.flavor, min_free, largest, req.nvlink_wanted, limit, out)
        }
        Scope::Nodes(list) => {
            let mut v: Vec<(u32, bool, NodeId)> = list
                .iter()
                .filter(|&&n| c.nodes[n].schedulable && c.nodes[n].flavor == req.flavor)
                .map(|&n| (c.nodes[n].whole_avail(mode), c.nodes[n].nvlink, n))
                .filter(|&(f, _, _)| f >= min_free)
                .collect();
            v.sort_by_key(|&(f, nv, n)| {
                let f = if largest { u32::MAX - f } else { f };
                (f, nv != req.nvlink_wanted, n)
            });
            out.clear();
            out.extend(v.into_iter().take(limit).map(|x| x.2));
        }
    }
}

/// Candidate nodes looked at to prefer fuller racks among equally fitting nodes.
const RACK_POOL: usize = 64;

/// All GPUs in one group of one node.
fn single_group(c: &mut Cluster, req: &Request, mode: Mode, scope: Scope) -> Option<Trial> {
    let g = req.whole_gpus;
    let mut cand = Vec::new();
    candidates(c, req, mode, scope, g, false, 4096, &mut cand);
    for n in cand {
        let node = &c.nodes[n];
        let mut groups: Vec<(u32, bool, usize)> = (0..node.groups.len())
            .map(|gi| {
                let free = node.groups[gi]
                    .iter()
                    .filter(|&&i| node.gpus[i as usize].avail(mode) == 1000)
                    .count() as u32;
                (free, node.group_nvlink[gi] != req.nvlink_wanted, gi)
            })
            .filter(|x| x.0 >= g)
            .collect();
        groups.sort();
        for (_, _, gi) in groups {
            let mut trial = Trial::default();
            let mut ok = true;
            for (di, d) in req.demands.iter().enumerate() {
                let grp = matches!(d.gpu, GpuDemand::Whole(_)).then_some(gi);
                match take(c, req, n, d, mode, req.nvlink_wanted, grp) {
                    Some(t) => trial.takes.push((di, t)),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                trial.node_order.push(n);
                return Some(trial);
            }
            trial.undo(c);
        }
    }
    None
}

/// The gang within one rack: racks with the fewest free GPUs that hold it first.
fn in_one_rack(c: &mut Cluster, req: &Request, mode: Mode, scope: Scope) -> Option<Trial> {
    let g = req.whole_gpus;
    let racks: Vec<(u32, Vec<NodeId>)> = match scope {
        Scope::Flavor => c.rack_index[req.flavor]
            .range((g, RackId(0))..)
            .map(|&(free, r)| (free, c.racks[r].nodes.clone()))
            .collect(),
        Scope::Nodes(list) => {
            let mut by_rack: std::collections::BTreeMap<RackId, Vec<NodeId>> = Default::default();
            for &n in list {
                if let Some(r) = c.nodes[n].rack {
                    by_rack.entry(r).or_default().push(n);
                }
            }
            let mut v: Vec<(u32, Vec<NodeId>)> = by_rack
                .into_values()
                .map(|ns| (ns.iter().map(|&n| c.nodes[n].whole_avail(mode)).sum(), ns))
                .filter(|x| x.0 >= g)
                .collect();
            v.sort();
            v
        }
    };
    for (_, nodes) in racks {
        if let Some(t) = spread(c, req, mode, Scope::Nodes(&nodes), false) {
            return Some(t);
        }
    }
    None
}

/// Greedy gang placement (scores 1-3, 6 above). `one_node` keeps the whole gang on one node.
fn spread(
    c: &mut Cluster,
    req: &Request,
    mode: Mode,
    scope: Scope,
    one_node: bool,
) -> Option<Trial> {
    if one_node {
        return all_on_one_node(c, req, mode, scope);
    }
    let mut trial = Trial::default();
    let mut remaining: u32 = req.whole_gpus;
    let mut cand = Vec::new();
    for (di, d) in req.demands.iter().enumerate() {
        let k = match d.gpu {
            GpuDemand::Whole(k) => k,
            _ => 0,
        };
        let nv = want(req, d);
        let at = Replica {
            req,
            mode,
            scope,
            d,
            nv,
        };
        // 1. nodes already used by the job
        let mut placed = on_used_node(c, &at, &trial);
        if placed.is_none() && at.opens_the_only_node(&trial, remaining, k) {
            placed = least_fragmenting(c, &at);
        }
        if placed.is_none() {
            placed = best_fit_new_node(c, &at, &trial, remaining, &mut cand);
        }
        match placed {
            Some(t) => {
                if !trial.node_order.contains(&t.node) {
                    trial.node_order.push(t.node);
                }
                trial.takes.push((di, t));
                remaining -= k;
            }
            None => {
                trial.undo(c);
                return None;
            }
        }
    }
    Some(trial)
}

/// The whole gang on the first candidate node that holds every replica.
fn all_on_one_node(c: &mut Cluster, req: &Request, mode: Mode, scope: Scope) -> Option<Trial> {
    let mut cand = Vec::new();
    candidates(c, req, mode, scope, req.whole_gpus, false, 4096, &mut cand);
    for n in cand {
        let mut trial = Trial::default();
        let mut ok = true;
        for (di, d) in req.demands.iter().enumerate() {
            match take(c, req, n, d, mode, want(req, d), None) {
                Some(t) => trial.takes.push((di, t)),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            trial.node_order.push(n);
            return Some(trial);
        }
        trial.undo(c);
    }
    None
}

/// One replica of a gang being spread, and where the search for it may look.
struct Replica<'r> {
    req: &'r Request<'r>,
    mode: Mode,
    scope: Scope<'r>,
    d: &'r Demand,
    /// Whether the replica wants an NVLink node ([`want`]).
    nv: bool,
}

impl Replica<'_> {
    /// Whether this replica may open the gang's only new node on capacity free now anywhere
    /// in the flavor: the case [`least_fragmenting`] scores (`k` is its whole GPUs).
    fn opens_the_only_node(&self, trial: &Trial, remaining: u32, k: u32) -> bool {
        self.mode == Mode::Now
            && matches!(self.scope, Scope::Flavor)
            && remaining <= k
            && trial.node_order.is_empty()
    }
}

/// Score 1: the first node the job already uses that holds the replica.
fn on_used_node(c: &mut Cluster, at: &Replica, trial: &Trial) -> Option<Take> {
    for &n in &trial.node_order {
        if let Some(t) = take(c, at.req, n, at.d, at.mode, at.nv, None) {
            return Some(t);
        }
    }
    None
}

/// Score 2, first part: a replica that needs no more than one new node goes to the candidate
/// whose fragmentation grows least ([`frag_pick`]); a share to the GPU it picked.
fn least_fragmenting(c: &mut Cluster, at: &Replica) -> Option<Take> {
    let (req, d) = (at.req, at.d);
    let (n, gpu) = frag_pick(c, req, d, at.nv)?;
    match (d.gpu, gpu) {
        (GpuDemand::Share(m), Some(g)) if req.admits(d, n) => {
            c.try_take_share_on(n, g, m.0.min(1000) as u16, d.cpu, d.mem)
        }
        _ => take(c, req, n, d, at.mode, at.nv, None),
    }
}

/// Scores 2 (best fit for the rest of the gang) and 3 (else the largest free node) when a
/// replica opens a new node: in racks the job already uses first, then anywhere in scope.
fn best_fit_new_node(
    c: &mut Cluster,
    at: &Replica,
    trial: &Trial,
    remaining: u32,
    cand: &mut Vec<NodeId>,
) -> Option<Take> {
    for (min_free, largest) in fit_tries(at.d, remaining) {
        let rack_nodes = if let (Scope::Flavor, false) = (at.scope, trial.node_order.is_empty()) {
            nodes_of_used_racks(c, trial)
        } else {
            Vec::new()
        };
        let scopes: [Scope; 2] = [Scope::Nodes(&rack_nodes), at.scope];
        for (si, sc) in scopes.iter().enumerate() {
            if si == 0 && rack_nodes.is_empty() {
                continue;
            }
            let search = Search {
                scope: *sc,
                min_free,
                largest,
            };
            if let Some(t) = first_new_node(c, at, trial, search, cand) {
                return Some(t);
            }
        }
    }
    None
}

/// The (fewest free whole GPUs, largest first) searches for a new node, in order: one that
/// holds the rest of the gang, one that holds the replica (the largest, if the rest does
/// not fit), and for a share any node with room on a partly used GPU.
fn fit_tries(d: &Demand, remaining: u32) -> Vec<(u32, bool)> {
    let need_node = match d.gpu {
        GpuDemand::Whole(k) => k,
        GpuDemand::Share(_) => 1,
        GpuDemand::None => 0,
    };
    let mut tries: Vec<(u32, bool)> = Vec::new();
    if remaining > need_node {
        tries.push((remaining, false));
    }
    tries.push((need_node, remaining > need_node));
    if let GpuDemand::Share(_) = d.gpu {
        // a share also fits the room left on a partly used GPU of a node with no
        // whole GPU free: a flavor-wide first replica finds it through the share
        // index (`frag_pick`), a search in a node list (a rack, a reclaim domain,
        // nodes constraints allow) only here. Else such a job planned a reclaim for
        // a whole GPU and, once a share took part of it, found no room again.
        tries.push((0, false));
    }
    tries
}

/// Every node of the racks the job's nodes are in, rack by rack in the order the job
/// opened them.
fn nodes_of_used_racks(c: &Cluster, trial: &Trial) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = Vec::new();
    let mut seen: Vec<RackId> = Vec::new();
    for &n in &trial.node_order {
        if let Some(r) = c.nodes[n].rack
            && !seen.contains(&r)
        {
            seen.push(r);
            v.extend_from_slice(&c.racks[r].nodes);
        }
    }
    v
}

/// One candidate search for a new node: where, and with which fit.
#[derive(Clone, Copy)]
struct Search<'s> {
    scope: Scope<'s>,
    min_free: u32,
    largest: bool,
}

/// The first candidate the job does not use yet that holds the replica: a pool of 16, then
/// of 512 when the first was full.
fn first_new_node(
    c: &mut Cluster,
    at: &Replica,
    trial: &Trial,
    s: Search,
    cand: &mut Vec<NodeId>,
) -> Option<Take> {
    for limit in [16usize, 512] {
        candidates(
            c, at.req, at.mode, s.scope, s.min_free, s.largest, limit, cand,
        );
        let got = cand.len();
        for &n in cand.iter() {
            if trial.node_order.contains(&n) {
                continue;
            }
            if let Some(t) = take(c, at.req, n, at.d, at.mode, at.nv, None) {
                return Some(t);
            }
        }
        if got < limit {
            break;
        }
    }
    None
}

/// Nodes [`frag_pick`] looks at per free-whole-GPU bucket (and among nodes with room on a
/// partly used GPU, for a share): every node of a cluster of a few thousand. A pool of the
/// first 16 nodes (often 16 copies of one state, or the 16 tightest rooms) placed up to 5
/// points fewer GPUs than scoring every node on openb (Setup A), and 16 distinct states up
/// to 4.6. Nodes in the same state (GPU rooms, CPU and memory left, NVLink kind) score the
/// same and the lowest index wins their tie, so only the first of each state is scored: a
/// bucket of identical empty nodes costs one score.
const FRAG_LOOK: usize = 1024;

/// A set of [`NodeState::state`] words: they are already well mixed, so hashing them
/// again (the default SipHash) only costs time, a quarter of a large cycle's.
///
/// [`NodeState::state`]: super::cluster::NodeState::state
type StateSet = HashSet<u64, BuildHasherDefault<Prehashed>>;

#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// The node of the flavor where one replica adds the least fragmentation (see `frag`).
/// Candidates: the first node (by index) of every distinct state in every free-whole-GPU
/// bucket that can hold the replica, and for a share among the nodes holding partly used
/// GPUs with room for it (see [`FRAG_LOOK`]). They are compared by FGD's coarse score
/// ([`rank`]); ties: not splitting the flavor's last largest free block, for a replica
/// without GPUs a node with no idle GPU capacity, the wanted NVLink kind, then the lowest
/// node index (a fixed order, so equal nodes fill one after another). For a share also the
/// GPU of that node it fragments least (see [`Mix::frag_delta`]).
///
/// Why the tie for CPU-only replicas: the score sees the CPU and memory a replica takes only
/// once some shape no longer fits, so a node with idle GPUs and a node with none tie at
/// "no change". On the first the replica uses up CPU its idle GPUs need later (GPUs with
/// few cores each, or shared by fractions whose replicas each ask as much CPU as a whole
/// GPU's, run out of CPU first): on a node with no idle GPU it strands nothing.
fn frag_pick(c: &Cluster, req: &Request, d: &Demand, nv: bool) -> Option<(NodeId, Option<u8>)> {
    let f = req.flavor;
    let mut cand: Vec<NodeId> = Vec::new();
    let mut seen = StateSet::default();
    let mut add = |nodes: &mut dyn Iterator<Item = NodeId>, cand: &mut Vec<NodeId>| {
        for n in nodes.take(FRAG_LOOK) {
            debug_assert_eq!(
                c.nodes[n].state,
                c.nodes[n].fold_state(),
                "state kept by reindex"
            );
            if seen.insert(c.nodes[n].state) {
                cand.push(n);
            }
        }
    };
    let min_free = match d.gpu {
        GpuDemand::Whole(k) => k as usize,
        GpuDemand::Share(m) => {
            let m = m.0.min(1000) as u16;
            add(
                &mut c.share_index[f].range((m, NodeId(0), 0)..).map(|x| x.1),
                &mut cand,
            );
            1
        }
        GpuDemand::None => 0,
    };
    if let Some(buckets) = c.buckets.get(f) {
        for set in buckets.iter().skip(min_free) {
            let mut it: Box<dyn Iterator<Item = NodeId>> = if nv {
                Box::new(
                    set.range((true, NodeId(0))..)
                        .chain(set.range(..(true, NodeId(0))))
                        .map(|x| x.1),
                )
            } else {
                Box::new(set.iter().map(|x| x.1))
            };
            add(&mut it, &mut cand);
        }
    }
    let mut scratch = Vec::new();
    // (splits the flavor's last largest free block, score (lower is better), a replica
    // without GPUs on a node with idle GPU capacity, NVLink kind not wanted, node)
    type Key = (bool, i64, bool, bool, NodeId);
    let last_largest = c.buckets.get(f).and_then(|b| {
        let i = b.iter().rposition(|set| !set.is_empty())?;
        (b[i].len() == 1).then_some(i as u32)
    });
    let mut best: Option<(Key, (NodeId, Option<u8>))> = None;
    for &n in &cand {
        let Some((delta, gpu)) = req.mix.frag_delta(c, n, d.gpu, d.cpu, d.mem, &mut scratch) else {
            continue;
        };
        let node = &c.nodes[n];
        let free = node.whole_avail(Mode::Now);
        let key = (
            matches!(d.gpu, GpuDemand::Whole(k) if Some(free) == last_largest && k < free),
            -rank(delta),
            d.gpu == GpuDemand::None && node.has_idle_gpu(),
            node.nvlink != req.nvlink_wanted,
            n,
        );
        if best.as_ref().is_none_or(|b| key < b.0) {
            best = Some((key, (n, gpu)));
        }
    }
    best.map(|b| b.1)
}

fn want(req: &Request, d: &Demand) -> bool {
    req.nvlink_wanted && matches!(d.gpu, GpuDemand::Whole(k) if k >= 2)
}
