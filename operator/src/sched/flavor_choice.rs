//! Which of its GPU types a job that accepts several goes to (issue 56).
//!
//! A job that accepts several types (any, or the set it lists) is scored on all of them
//! together: on each type the placement it would get there (`placement::place`, the best
//! node of the type), and the fragmentation that placement adds, plus the type's scarcity,
//! compared by FGD's coarse score (see `frag`).
//!
//! **Scarcity.** A type that the rest of the workload asks more of per GPU than of the
//! job's least-asked type is worth keeping for the jobs that need it. Each milli-GPU the
//! job takes there counts as `(d(f) − d_min) / d̄` milli-GPUs of fragmentation, where `d`
//! is the workload mix's demand per GPU of a type ([`Mix::demand_per_gpu`]: every shape's
//! demand spread over the GPUs of the types it accepts), `d_min` its least value among the
//! types compared and `d̄` its mean over all GPUs ([`Mix::mean_demand_per_gpu`]). Put
//! otherwise: the GPU capacity it takes there is capacity that the jobs bound to the type
//! will miss, in proportion to how much more they ask of it than of the job's cheapest
//! choice, measured against the average claim on a GPU. Only the mix enters: a shape that
//! accepts any type adds the same to every type, so with no jobs bound to types the cost is
//! zero everywhere and nothing changes; a job without GPUs takes nothing and pays nothing.
//! A placement that fragments much less still wins over a scarce type's cost: the two are
//! in one unit and one score. Measured on openb's pod lists that name GPU models (issue 56,
//! `docs/benchmarks-placement.md`), where the tie-break alone left kubetrain 0.9–1.2 points
//! below FGD at 100 % load.
//!
//! Ties, in order: the type the workload asks less of per GPU (so that the rule also holds
//! where the coarse score cannot tell costs apart), for a job without GPUs a type where it
//! goes on nodes with no idle GPU (as `frag_pick` within a type), then the type whose
//! placement starts at the lowest node index: the same fixed node order as within a type.
//! Nothing here reads the order in which a job lists its types: they come in the cluster's
//! order (`digest`), and the ranking is a sort on the scores.

use super::cluster::Mode;
use super::cycle_state::{Cycle, Pending, scope};
use super::frag;
use super::ids::{FlavorId, NodeId};
use super::model::GpuDemand;
use super::placement::place;

/// A type's place in the ranking, lower first: (score, the type's demand per GPU as the bits
/// of a non-negative float, a job without GPUs beside idle GPUs, first node, type).
type Rank = (i64, u64, bool, NodeId, FlavorId);

impl<'a> Cycle<'a> {
    /// `flavors`, the job's acceptable types to try, best first (see the module).
    pub(super) fn rank_flavors(&mut self, p: &Pending, flavors: &[FlavorId]) -> Vec<FlavorId> {
        if flavors.len() < 2 || self.mix.is_empty() {
            return flavors.to_vec();
        }
        let least = flavors
            .iter()
            .map(|&f| self.mix.demand_per_gpu(f))
            .fold(f64::INFINITY, f64::min);
        let mut ranked: Vec<Rank> = flavors.iter().map(|&f| self.rank_of(p, f, least)).collect();
        ranked.sort_unstable();
        ranked.into_iter().map(|x| x.4).collect()
    }

    /// The rank of type `f` for job `p`; `least` is the least demand per GPU among the types
    /// compared. A type where the job does not fit now ranks last (and is remembered so).
    fn rank_of(&mut self, p: &Pending, f: FlavorId, least: f64) -> Rank {
        let demand = self.mix.demand_per_gpu(f).max(0.0).to_bits();
        let last = (i64::MAX, demand, true, NodeId(u32::MAX), f);
        let key = self.shape(p, f);
        if self.no_fit.contains(&key) {
            return last;
        }
        let req = self.request(p, f);
        let Some(trial) = place(&mut self.c, &req, Mode::Now, scope(p)) else {
            self.no_fit.insert(key);
            return last;
        };
        let mut nodes: Vec<NodeId> = trial.takes.iter().map(|t| t.1.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut scratch = Vec::new();
        let after: f64 = nodes
            .iter()
            .map(|&n| self.mix.frag_now(&self.c, n, &mut scratch))
            .sum();
        trial.undo(&mut self.c);
        let before: f64 = nodes
            .iter()
            .map(|&n| self.mix.frag_now(&self.c, n, &mut scratch))
            .sum();
        let after = after + self.scarcity(p, f, least);
        let no_gpu = p.demands.iter().all(|d| d.gpu == GpuDemand::None);
        let beside_idle = no_gpu && nodes.iter().any(|&n| self.c.nodes[n].has_idle_gpu());
        let first = nodes.first().copied().unwrap_or(NodeId(u32::MAX));
        (-frag::rank(after - before), demand, beside_idle, first, f)
    }

    /// The milli-GPUs of fragmentation that taking the job's GPUs on `f` counts as, for the
    /// jobs that need `f` more than the job's least-asked type (see the module).
    fn scarcity(&self, p: &Pending, f: FlavorId, least: f64) -> f64 {
        let mean = self.mix.mean_demand_per_gpu();
        if mean <= 0.0 {
            return 0.0;
        }
        p.milli as f64 * ((self.mix.demand_per_gpu(f) - least) / mean)
    }
}
