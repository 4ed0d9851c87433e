//! What one cycle carries through its phases: the [`Cycle`] (ledgers, tenants, this cycle's
//! memos and decisions) and a digested pending job ([`Pending`]). The phases (`cycle.rs`),
//! the digest (`digest.rs`), the standing and the preemption kinds (`preempt/`) are `impl
//! Cycle` blocks in files of their own: each reads the state here, none reads another's.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use super::cells::Cells;
use super::cluster::Cluster;
use super::constraints::NodeConstraints;
use super::decisions::Decisions;
use super::frag::Mix;
use super::ids::{Claimant, FlavorId, IdVec, JobIdx, NodeId, QueueId, RunIdx, VcId};
use super::model::{GpuDemand, Snapshot, TopologyLevel};
use super::options::Options;
use super::placement::{Demand, NodeFilter, NodeMask, Scope};
use super::preempt::kind::Kind;
use super::reclaim::RunInfo;
use super::tenants::Tenants;

/// A pending job, digested.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) job: JobIdx,
    pub(super) queue: QueueId,
    pub(super) vc: VcId,
    pub(super) milli: u64,
    pub(super) demands: Vec<Demand>,
    pub(super) whole: u32,
    pub(super) largest_replica: u32,
    pub(super) flavors: Vec<FlavorId>,
    pub(super) nvlink: bool,
    /// Set when node constraints keep some task off some nodes.
    pub(super) filter: Option<Rc<NodeFilter>>,
}

/// Where to search for a job: the whole flavor, or the nodes its constraints allow.
pub(super) fn scope(p: &Pending) -> Scope<'_> {
    p.filter
        .as_ref()
        .map_or(Scope::Flavor, |f| Scope::Nodes(&f.nodes))
}

/// A node filter's identity in one cycle: its tasks' masks (by address: the masks live in
/// `Cycle::masks` for the whole cycle) and the GPU types searched.
pub(super) type FilterKey = (Vec<Option<usize>>, Vec<FlavorId>);

/// A victim search that found nothing: who asked, the kind, the claiming job's priority
/// where the kind depends on it, whether a limit blocked the job, and the shape. Victims
/// and capacity only shrink within a cycle, so an equal search finds nothing either.
pub(super) type NoVictims = (Claimant, Kind, i32, bool, ShapeKey);

pub(super) type ShapeKey = (
    FlavorId,
    Option<TopologyLevel>,
    Option<TopologyLevel>,
    Vec<(GpuDemand, u64, u64)>,
    Option<usize>,
);

pub(super) struct Cycle<'a> {
    pub(super) snap: &'a Snapshot,
    pub(super) opts: Options,
    pub(super) c: Cluster,
    /// The workload's shape mix that fragmentation is scored against (empty: no scores).
    pub(super) mix: &'a Mix,
    pub(super) t: Tenants,
    pub(super) cells: Cells,
    pub(super) runs: IdVec<RunIdx, RunInfo>,
    pub(super) on_node: IdVec<NodeId, Vec<RunIdx>>,
    pub(super) out: Decisions,
    /// Shapes that did not fit a flavor now: capacity only shrinks within a cycle.
    pub(super) no_fit: BTreeSet<ShapeKey>,
    /// Victim searches that found nothing this cycle ([`NoVictims`]).
    pub(super) no_victims: BTreeSet<NoVictims>,
    /// Jobs a cell guarantee kept from capacity that would otherwise fit.
    pub(super) cells_blocked: BTreeSet<JobIdx>,
    /// VirtualClusters and types whose guarantee cannot be obtained now, even by reclaim
    /// (`risk`): a job within such a guarantee that finds no room is told so.
    pub(super) at_risk: BTreeSet<(VcId, FlavorId)>,
    /// Consolidation searches left this cycle ([`CONSOLIDATION_SEARCHES`](super::preempt::CONSOLIDATION_SEARCHES)).
    pub(super) consolidations_left: usize,
    /// This cycle's admissions, as `out.admissions` lists them: the job, its VC, its GPU
    /// type and its milli-GPUs (`settle_with_admissions`).
    pub(super) admitted: Vec<(JobIdx, VcId, FlavorId, u64)>,
    /// Set while a plan is made at a job's turn in phase 1: only a plan that leaves the job
    /// within its guarantee may be made there, before other teams' guaranteed admissions.
    pub(super) guaranteed_plans_only: bool,
    /// Whether any node has a taint that keeps pods out (then every job is checked).
    pub(super) any_taints: bool,
    /// Node masks per distinct set of constraints (jobs of one template share them), and
    /// the node filters per distinct list of masks.
    pub(super) masks: RefCell<HashMap<&'a NodeConstraints, Option<NodeMask>>>,
    pub(super) filters: RefCell<HashMap<FilterKey, Rc<NodeFilter>>>,
}

/// Approximate bytes of the per-cycle node state the core builds for a snapshot (ledgers,
/// topology, free index), for the memory budget. Diagnostic only.
pub fn state_bytes(snap: &Snapshot) -> usize {
    use std::mem::size_of;
    let mut c = Cluster::build(snap);
    c.index(snap);
    let per_node: usize = c
        .nodes
        .iter()
        .map(|n| {
            size_of::<super::cluster::NodeState>()
                + n.gpus.capacity() * size_of::<super::cluster::GpuLedger>()
                + n.groups
                    .iter()
                    .map(|g| size_of::<Vec<u8>>() + g.capacity())
                    .sum::<usize>()
                + n.group_nvlink.capacity()
                + n.gpu_pos.capacity()
        })
        .sum();
    // name map, bucket and rack index entries (B-tree nodes ~ 2× the key size)
    let index = c
        .node_by_name
        .keys()
        .map(|k| k.capacity() + 48)
        .sum::<usize>()
        + c.nodes.len() * 2 * size_of::<(bool, NodeId)>();
    per_node + index
}
