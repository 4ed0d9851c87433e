//! What the tenants use, as users read it (`kubectl get queues`, `kubectl get vc`, the
//! metrics): per VirtualCluster and GPU type the GPUs guaranteed, in use, bonus and lent; per
//! queue the GPUs in use and of those the bonus ones; the GPUs of each type in the cluster.
//!
//! The numbers count what the snapshot's jobs hold when the cycle starts (admissions of this
//! cycle count from the next one, once their pods exist; jobs being preempted count until
//! they are gone), with this cycle's changes of standing applied: a promoted job's GPUs are
//! no longer bonus, a demoted job's are. GPUs count by the type of the node under each replica. A VirtualCluster's bonus and
//! lent do not depend on the flags its jobs were admitted with (see [`settle_bonus_and_lent`]),
//! so that its numbers always add up.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::cluster::Cluster;
use super::ids::{FlavorId, QueueId};
use super::model::{Flavor, ReplicaPlacement, Snapshot, TopologyLevel};
use super::tenants::Tenants;

/// One VirtualCluster's numbers for one GPU type (amounts in milli-GPUs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlavorUsage {
    /// Guaranteed GPUs.
    pub guaranteed: u32,
    pub in_use_milli: u64,
    /// Of `in_use_milli`, held by jobs that are leaving (preempted, drained, suspended) until
    /// their pods are gone.
    pub leaving_milli: u64,
    /// In use beyond the guarantee.
    pub bonus_milli: u64,
    /// Idle guarantee that other tenants borrow.
    pub lent_milli: u64,
    /// Set when the guarantee (GPUs or cells) cannot be obtained now, even by reclaim.
    pub at_risk: Option<GuaranteeShortfall>,
    /// The fewest GPUs the guaranteed cells hold, per level the `count` smallest domains of
    /// the type in the cluster, the largest over levels ([`cells_gpus`]); 0 without cells.
    /// Cells count towards `guaranteed`: above it, the tenant can never hold all its cells
    /// as guaranteed GPUs, and the clean domains set aside for the missing ones stay set
    /// aside for good.
    pub cells_gpus: u32,
}

/// A guarantee the cluster cannot currently honour, even by reclaiming every borrowed GPU:
/// GPUs of the type are unhealthy, on cordoned nodes or gone, or the guarantees of all
/// VirtualClusters add up to more than the cluster has, and what is left does not cover this
/// VirtualCluster's guarantee once other VirtualClusters' guarantees are set aside (what a
/// VirtualCluster's guaranteed jobs hold is its own). See `risk`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuaranteeShortfall {
    pub flavor: Flavor,
    pub guaranteed_gpus: u32,
    /// Guaranteed GPUs it holds, or could obtain by reclaim.
    pub obtainable_gpus: u32,
    /// Healthy GPUs of the type on schedulable nodes.
    pub usable_gpus: u32,
    /// Of `usable_gpus`, held by pods kubetrain does not schedule.
    pub foreign_gpus: u32,
    /// GPUs of the type on the cluster's nodes, usable or not.
    pub cluster_gpus: u32,
    /// What the guarantees of all VirtualClusters for the type add up to.
    pub all_guaranteed_gpus: u32,
    /// One entry per topology level the guarantee has cells of.
    pub cells: Vec<CellShortfall>,
}

/// Why a guarantee cannot be obtained: the reason of a VirtualCluster's `GuaranteeAtRisk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShortfallCause {
    /// GPUs of the type are unhealthy or on cordoned nodes (a node that is gone only
    /// lowers what the cluster has).
    CapacityLost,
    /// Every GPU of the type is usable, but the guarantees add up to more.
    GuaranteesExceedCapacity,
}

impl ShortfallCause {
    pub fn as_str(self) -> &'static str {
        match self {
            ShortfallCause::CapacityLost => "CapacityLost",
            ShortfallCause::GuaranteesExceedCapacity => "GuaranteesExceedCapacity",
        }
    }
}

impl GuaranteeShortfall {
    pub fn cause(&self) -> ShortfallCause {
        if self.usable_gpus >= self.cluster_gpus && self.all_guaranteed_gpus > self.cluster_gpus {
            ShortfallCause::GuaranteesExceedCapacity
        } else {
            ShortfallCause::CapacityLost
        }
    }
}

/// Cells of one level: guaranteed, and obtainable now (owned, or clean and not needed by
/// other VirtualClusters' cells).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellShortfall {
    pub level: TopologyLevel,
    pub guaranteed: u32,
    pub obtainable: u32,
    /// Domains of the level that could be a cell: every GPU healthy, schedulable, no pods
    /// that are not kubetrain's.
    pub usable: u32,
}

impl fmt::Display for GuaranteeShortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flavor = &self.flavor;
        write!(
            f,
            "{} of {} guaranteed {flavor} GPUs can be obtained now, even by reclaim",
            self.obtainable_gpus, self.guaranteed_gpus
        )?;
        for c in &self.cells {
            write!(
                f,
                "; {} of {} guaranteed {flavor} {} cells ({} usable in the cluster)",
                c.obtainable, c.guaranteed, c.level, c.usable
            )?;
        }
        match self.cause() {
            // Each cause that is there, and only those: an acceptance run read "the rest are
            // unhealthy or cordoned" with all 32 GPUs healthy, and later blamed pods
            // kubetrain does not schedule when there were none.
            ShortfallCause::CapacityLost => {
                if self.usable_gpus < self.cluster_gpus {
                    write!(
                        f,
                        ": {} of the {} {flavor} GPUs are healthy on schedulable nodes, the \
                         rest are unhealthy or cordoned",
                        self.usable_gpus, self.cluster_gpus
                    )?;
                } else {
                    write!(
                        f,
                        ": all {} {flavor} GPUs are healthy on schedulable nodes",
                        self.cluster_gpus
                    )?;
                }
                if self.foreign_gpus > 0 {
                    write!(
                        f,
                        "; pods kubetrain does not schedule hold {} of them, which reclaim \
                         cannot free (a node or rack with such pods is no usable cell either)",
                        self.foreign_gpus
                    )?;
                } else if self.cells.iter().any(|c| c.obtainable < c.guaranteed) {
                    write!(
                        f,
                        "; guaranteed jobs hold part of every node or rack a missing cell could \
                         take (guaranteed work is not moved: the cell comes back as they end)"
                    )?;
                }
                write!(f, "; other VirtualClusters' guarantees take their part.")
            }
            ShortfallCause::GuaranteesExceedCapacity => write!(
                f,
                ": the guarantees of all VirtualClusters add up to {} {flavor} GPUs, more than \
                 the {} in the cluster, and other VirtualClusters' guarantees take their part.",
                self.all_guaranteed_gpus, self.cluster_gpus
            ),
        }
    }
}

/// One VirtualCluster's numbers, per GPU type (CPU-only and unknown nodes under the empty
/// flavor).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VcUsage {
    pub flavors: BTreeMap<Flavor, FlavorUsage>,
}

/// One queue's GPUs, in milli-GPUs: its own jobs' and those of every queue under it, the
/// scope its `maxShare` and `share` are checked on (`Tenants::chain`), so that a parent
/// whose limit holds its children back does not read as idle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueUsage {
    pub milli_gpus: u64,
    /// Of `milli_gpus`, held by bonus jobs.
    pub bonus_milli_gpus: u64,
    /// Of `milli_gpus`, held by jobs that are leaving (preempted, drained, suspended) until
    /// their pods are gone.
    pub leaving_milli_gpus: u64,
    /// The most the queue may hold (`maxShare` percent of its VirtualCluster's limit, or of
    /// the cluster's usable GPUs without one); None at `maxShare: 100`, or when its line of
    /// parents is broken (it admits nothing then).
    pub max_milli_gpus: Option<u64>,
    /// The queues above it, its parent first, as the core resolved `spec.parent`: its jobs
    /// count in each of them too. Empty for a top-level queue, or when the line is broken.
    pub ancestors: Vec<String>,
}

/// The usage part of a cycle's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Every VirtualCluster of the snapshot, and any a running job's queue names.
    pub virtual_clusters: BTreeMap<String, VcUsage>,
    /// Every queue of the snapshot, and any a running job names.
    pub queues: BTreeMap<String, QueueUsage>,
    /// GPUs per type, on every node (healthy or not, schedulable or not).
    pub capacity: BTreeMap<Flavor, u32>,
}

/// Milli-GPUs held by one placed replica.
fn replica_milli(p: &ReplicaPlacement) -> u64 {
    match p.share {
        Some(m) => u64::from(m.0),
        None => p.gpus.len() as u64 * 1000,
    }
}

/// `map[key]`, inserted as the default when absent; clones the key only then (one cycle of a
/// large simulation looks up thousands of running jobs' queues).
fn slot<'m, K, Q, V>(map: &'m mut BTreeMap<K, V>, key: &Q) -> &'m mut V
where
    K: Ord + Borrow<Q>,
    Q: Ord + ToOwned<Owned = K> + ?Sized,
    V: Default,
{
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// GPUs per type on every node of `snap`, healthy or not, schedulable or not.
pub(crate) fn capacity(snap: &Snapshot) -> BTreeMap<Flavor, u32> {
    let mut out: BTreeMap<Flavor, u32> = BTreeMap::new();
    for n in snap.nodes.iter().filter(|n| !n.flavor.is_cpu_only()) {
        *out.entry(n.flavor.clone()).or_default() += n.allocatable.gpus;
    }
    out
}

/// The usage of `snap`'s running jobs once the `promoted` jobs (ids) are guaranteed and the
/// `demoted` ones bonus. A job counts in its queue and in each queue above it by the lines
/// `t` resolved for the limits (`Tenants::chain`), so a queue reads what its `maxShare` is
/// checked against.
pub(crate) fn report(
    snap: &Snapshot,
    c: &Cluster,
    t: &Tenants,
    promoted: &[String],
    demoted: &[String],
) -> Usage {
    let mut usage = Usage {
        capacity: capacity(snap),
        ..Usage::default()
    };
    let queue_vc: BTreeMap<&str, &str> = snap
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.virtual_cluster.as_str()))
        .collect();
    for vc in &snap.virtual_clusters {
        let entry = usage.virtual_clusters.entry(vc.name.clone()).or_default();
        for g in &vc.guarantee {
            let f = entry.flavors.entry(g.flavor.clone()).or_default();
            f.guaranteed += g.gpus;
            if let Some(&id) = c.flavor_by_name.get(g.flavor.as_str()) {
                for cell in &g.cells {
                    f.cells_gpus = f.cells_gpus.max(cells_gpus(c, id, cell.level, cell.count));
                }
            }
        }
    }
    for (i, q) in snap.queues.iter().enumerate() {
        let entry = usage.queues.entry(q.name.clone()).or_default();
        let i = QueueId(i as u32);
        // A duplicate name is not the queue the tenants know by it.
        if t.queue_by_name.get(&q.name) != Some(&i) {
            continue;
        }
        entry.max_milli_gpus = t.queue_max[i];
        entry.ancestors = t.chain[i]
            .iter()
            .skip(1)
            .map(|&a| snap.queue(a).name.clone())
            .collect();
    }
    let promoted: BTreeSet<&str> = promoted.iter().map(String::as_str).collect();
    let demoted: BTreeSet<&str> = demoted.iter().map(String::as_str).collect();
    let no_flavor = Flavor::default();
    for j in &snap.jobs {
        let Some(r) = &j.running else { continue };
        let milli: u64 = r.placement.iter().map(replica_milli).sum();
        let id = j.id.as_str();
        let bonus = (r.bonus && !promoted.contains(id)) || demoted.contains(id);
        let count = |q: &mut QueueUsage| {
            q.milli_gpus += milli;
            if bonus {
                q.bonus_milli_gpus += milli;
            }
            if r.preempting {
                q.leaving_milli_gpus += milli;
            }
        };
        // A queue of a broken line (or none the snapshot knows) has no chain: its own
        // jobs count in it alone.
        match t.queue_by_name.get(j.queue.as_str()).map(|&q| &t.chain[q]) {
            Some(line) if !line.is_empty() => {
                for &qi in line {
                    count(slot(&mut usage.queues, snap.queue(qi).name.as_str()));
                }
            }
            _ => count(slot(&mut usage.queues, j.queue.as_str())),
        }
        let Some(vc) = queue_vc.get(j.queue.as_str()) else {
            continue;
        };
        let flavors = &mut slot(&mut usage.virtual_clusters, *vc).flavors;
        for p in &r.placement {
            let flavor = c
                .node_by_name
                .get(&p.node)
                .map_or(&no_flavor, |&n| &snap.nodes[c.nodes[n].src as usize].flavor);
            let f = slot(flavors, flavor);
            f.in_use_milli += replica_milli(p);
            if r.preempting {
                f.leaving_milli += replica_milli(p);
            }
        }
    }
    settle_bonus_and_lent(&mut usage);
    usage
}

/// The fewest GPUs `count` cells of `level` of type `f` hold: the `count` smallest domains of
/// the type in the cluster, healthy or not (all of them when there are fewer: then
/// `GuaranteeAtRisk` says the cells are missing).
pub(crate) fn cells_gpus(c: &Cluster, f: FlavorId, level: TopologyLevel, count: u32) -> u32 {
    let nodes = || c.nodes.iter().filter(move |n| n.flavor == f);
    let mut sizes: Vec<u32> = match level {
        TopologyLevel::Node => nodes().map(|n| n.gpus.len() as u32).collect(),
        TopologyLevel::GpuGroup => nodes()
            .flat_map(|n| n.groups.iter().map(|g| g.len() as u32))
            .collect(),
        TopologyLevel::Rack => c
            .racks
            .iter()
            .filter(|r| r.flavor == f)
            .map(|r| r.nodes.iter().map(|&n| c.nodes[n].gpus.len() as u32).sum())
            .collect(),
    };
    sizes.retain(|&s| s > 0);
    sizes.sort_unstable();
    sizes.iter().take(count as usize).sum()
}

/// Bonus and lent per GPU type, so that a VirtualCluster's numbers add up whatever flag its
/// jobs were admitted with: bonus is what a tenant uses beyond its guarantee; what all
/// tenants borrow comes first out of GPUs nobody is guaranteed, and only the rest out of
/// other tenants' idle guarantees, shared among those in proportion to how much of their
/// guarantee is idle. So no tenant is said to lend more than it has idle, and the GPUs
/// lent never exceed the GPUs borrowed.
fn settle_bonus_and_lent(usage: &mut Usage) {
    let mut flavors: BTreeMap<Flavor, (u64, u64, u64)> = BTreeMap::new(); // guaranteed, borrowed, idle
    for u in usage.virtual_clusters.values_mut() {
        for (flavor, f) in u.flavors.iter_mut() {
            let guaranteed = u64::from(f.guaranteed) * 1000;
            f.bonus_milli = f.in_use_milli.saturating_sub(guaranteed);
            f.lent_milli = 0;
            let t = flavors.entry(flavor.clone()).or_default();
            t.0 += guaranteed;
            t.1 += f.bonus_milli;
            t.2 += guaranteed.saturating_sub(f.in_use_milli);
        }
    }
    for (flavor, (guaranteed, borrowed, idle)) in flavors {
        let capacity = u64::from(usage.capacity.get(&flavor).copied().unwrap_or(0)) * 1000;
        let unowned = capacity.saturating_sub(guaranteed);
        let from_guarantees = borrowed.saturating_sub(unowned).min(idle);
        if from_guarantees == 0 {
            continue;
        }
        // Proportional shares, rounded down; the milli-GPUs left over go one each to the
        // tenants in name order, so the shares sum exactly to what is borrowed.
        let mut left = from_guarantees;
        let mut lenders: Vec<&mut FlavorUsage> = usage
            .virtual_clusters
            .values_mut()
            .filter_map(|u| u.flavors.get_mut(&flavor))
            .filter(|f| u64::from(f.guaranteed) * 1000 > f.in_use_milli)
            .collect();
        for f in lenders.iter_mut() {
            let own_idle = u64::from(f.guaranteed) * 1000 - f.in_use_milli;
            let share =
                (u128::from(from_guarantees) * u128::from(own_idle) / u128::from(idle)) as u64;
            f.lent_milli = share;
            left -= share;
        }
        for f in lenders.iter_mut() {
            if left == 0 {
                break;
            }
            if f.lent_milli < u64::from(f.guaranteed) * 1000 - f.in_use_milli {
                f.lent_milli += 1;
                left -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::fixtures::*;
    use crate::sched::schedule;

    /// The cycle that promotes a bonus job reports its GPUs as guaranteed already; a job
    /// still bonus, a pending job and the GPUs of a node the snapshot does not know count as
    /// before the refactor: by the placements, under the type of the node.
    #[test]
    fn usage_counts_this_cycles_promotions_and_every_placed_replica() {
        let nodes = vec![node("n0", "A100", 8, None), node("n1", "H100", 4, None)];
        let vcs = vec![vc("a", "A100", 4), vc("c", "A100", 4)];
        let queues = vec![queue("qa", "a"), queue("qc", "c")];
        let jobs = vec![
            run(
                job("c/was-bonus", "qc", 1, 4),
                &[("n0", &[0, 1, 2, 3])],
                true,
                0,
                None,
            ),
            run(
                job("c/borrows", "qc", 1, 2),
                &[("n1", &[0, 1])],
                true,
                0,
                None,
            ),
            run(job("a/lost", "qa", 1, 1), &[("gone", &[0])], false, 0, None),
            job("a/j", "qa", 1, 8),
        ];
        let d = schedule(&snapshot(100, nodes, vcs, queues, jobs));
        assert_eq!(d.promotions, vec!["c/was-bonus".to_string()]);
        let u = &d.usage;
        assert_eq!(
            u.queues["qc"],
            QueueUsage {
                milli_gpus: 6_000,
                bonus_milli_gpus: 2_000,
                ..Default::default()
            }
        );
        assert_eq!(u.queues["qa"].milli_gpus, 1_000);
        assert_eq!(numbers(u, "c", "A100"), (4_000, 0, 0));
        assert_eq!(numbers(u, "c", "H100"), (2_000, 2_000, 0));
        assert_eq!(numbers(u, "a", ""), (1_000, 1_000, 0));
        assert_eq!(numbers(u, "a", "A100"), (0, 0, 0));
        assert_eq!(
            u.capacity,
            [(Flavor::new("A100"), 8), (Flavor::new("H100"), 4)].into()
        );
    }

    /// A parent whose `maxShare` holds its child back reads what the child's jobs hold, the
    /// number the limit is checked against (an acceptance run: `alpha-root` showed 0 GPUs
    /// while a job of `alpha-dev` waited on "alpha-root holds 4 GPUs of its maximum of
    /// 3.2"), with its maximum; the child counts only its own line.
    #[test]
    fn a_parent_queue_counts_the_gpus_of_the_queues_under_it() {
        let mut root = queue("alpha-root", "alpha");
        root.max_share = 10;
        let mut dev = queue("alpha-dev", "alpha");
        dev.parent = Some("alpha-root".into());
        let mut ops = queue("alpha-ops", "alpha");
        ops.parent = Some("alpha-root".into());
        let leaving = |mut j: crate::sched::Job| {
            if let Some(r) = j.running.as_mut() {
                r.preempting = true;
            }
            j
        };
        let jobs = vec![
            run(
                job("a/one", "alpha-dev", 1, 2),
                &[("n0", &[0, 1])],
                false,
                0,
                None,
            ),
            leaving(run(
                job("a/two", "alpha-dev", 1, 2),
                &[("n0", &[2, 3])],
                true,
                0,
                None,
            )),
            job("a/waits", "alpha-ops", 1, 2),
        ];
        let snap = snapshot(
            100,
            vec![node("n0", "A100", 8, None), node("n1", "A100", 24, None)],
            vec![vc("alpha", "A100", 8)],
            vec![root, dev, ops],
            jobs,
        );
        let d = schedule(&snap);
        let r = d.waiting_reason("a/waits").expect("waits").to_string();
        assert!(
            r.contains("alpha-root holds 2 GPUs of its maximum of 3.2"),
            "{r}"
        );
        let q = &d.usage.queues;
        assert_eq!(
            q["alpha-root"],
            QueueUsage {
                milli_gpus: 4_000,
                bonus_milli_gpus: 2_000,
                leaving_milli_gpus: 2_000,
                max_milli_gpus: Some(3_200),
                ancestors: vec![],
            }
        );
        assert_eq!(
            (q["alpha-dev"].milli_gpus, q["alpha-dev"].max_milli_gpus),
            (4_000, None)
        );
        assert_eq!(q["alpha-dev"].ancestors, vec!["alpha-root".to_string()]);
        assert_eq!(q["alpha-ops"].milli_gpus, 0);
    }

    /// Two node cells of a type whose smallest nodes have 4 and 8 GPUs hold at least 12,
    /// more than the 8 guaranteed; one rack cell at least the smaller rack's 8.
    #[test]
    fn cells_hold_at_least_their_smallest_domains() {
        use crate::sched::model::CellGuarantee;
        let nodes = vec![
            node("n0", "A100", 8, Some("r1")),
            node("n1", "A100", 4, Some("r1")),
            node("n2", "A100", 8, Some("r2")),
            node("n3", "H100", 2, Some("r2")),
        ];
        let mut a = vc("a", "A100", 8);
        let cells = |level, count| CellGuarantee { level, count };
        a.guarantee[0].cells = vec![cells(TopologyLevel::Node, 2)];
        let mut b = vc("b", "A100", 8);
        b.guarantee[0].cells = vec![cells(TopologyLevel::Rack, 1)];
        let c = vc("c", "A100", 4);
        let d = schedule(&snapshot(100, nodes, vec![a, b, c], vec![], vec![]));
        let cells_gpus =
            |v: &str| d.usage.virtual_clusters[v].flavors[&Flavor::new("A100")].cells_gpus;
        assert_eq!(
            (cells_gpus("a"), cells_gpus("b"), cells_gpus("c")),
            (12, 8, 0)
        );
    }

    fn vc_usage(flavors: &[(&str, u32, u64)]) -> VcUsage {
        VcUsage {
            flavors: flavors
                .iter()
                .map(|&(f, guaranteed, in_use_milli)| {
                    (
                        Flavor::new(f),
                        FlavorUsage {
                            guaranteed,
                            in_use_milli,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
        }
    }

    fn usage(capacity: &[(&str, u32)], vcs: Vec<(&str, VcUsage)>) -> Usage {
        let mut u = Usage {
            capacity: capacity.iter().map(|&(f, n)| (Flavor::new(f), n)).collect(),
            virtual_clusters: vcs.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            ..Default::default()
        };
        settle_bonus_and_lent(&mut u);
        u
    }

    fn numbers(u: &Usage, vc: &str, flavor: &str) -> (u64, u64, u64) {
        let f = &u.virtual_clusters[vc].flavors[&Flavor::new(flavor)];
        (f.in_use_milli, f.bonus_milli, f.lent_milli)
    }

    /// With every GPU healthy, cells short because pods kubetrain does not schedule hold
    /// part of every node: the message says so, not "unhealthy or cordoned"; without such
    /// pods, it names the guaranteed jobs spread over the domains, not them.
    #[test]
    fn a_shortfall_names_each_cause_that_is_there() {
        let shortfall = GuaranteeShortfall {
            flavor: Flavor::new("A100"),
            guaranteed_gpus: 16,
            obtainable_gpus: 16,
            usable_gpus: 32,
            foreign_gpus: 4,
            cluster_gpus: 32,
            all_guaranteed_gpus: 24,
            cells: vec![CellShortfall {
                level: TopologyLevel::Node,
                guaranteed: 2,
                obtainable: 0,
                usable: 0,
            }],
        };
        let text = shortfall.to_string();
        assert!(
            text.contains("all 32 A100 GPUs are healthy")
                && text.contains("pods kubetrain does not schedule hold 4 of them")
                && !text.contains("unhealthy or cordoned")
                && !text.contains("guaranteed jobs hold part"),
            "{text}"
        );
        let lost = GuaranteeShortfall {
            usable_gpus: 24,
            ..shortfall.clone()
        };
        assert!(lost.to_string().contains("unhealthy or cordoned"));
        // no such pods: the guaranteed jobs spread over the domains are the cause
        let spread = GuaranteeShortfall {
            foreign_gpus: 0,
            ..shortfall
        }
        .to_string();
        assert!(
            spread.contains("guaranteed jobs hold part of every node or rack")
                && !spread.contains("pods kubetrain does not schedule"),
            "{spread}"
        );
    }

    #[test]
    fn bonus_is_what_is_used_beyond_the_guarantee_per_gpu_type() {
        // Team a is guaranteed 8 A100 and 0 H100 and uses 10 A100 and 2 H100: 2 + 2 bonus,
        // whatever flags its jobs were admitted with.
        let u = usage(
            &[("A100", 16), ("H100", 10)],
            vec![
                ("a", vc_usage(&[("A100", 8, 10_000), ("H100", 0, 2_000)])),
                ("b", vc_usage(&[("A100", 8, 0), ("H100", 8, 8_000)])),
            ],
        );
        assert_eq!(numbers(&u, "a", "A100"), (10_000, 2_000, 0));
        assert_eq!(numbers(&u, "a", "H100"), (2_000, 2_000, 0));
        // All 16 A100 are guaranteed, so a's 2 borrowed A100 are b's idle ones. b uses all
        // its 8 H100; a's 2 H100 are the 2 nobody is guaranteed, so b lends none.
        assert_eq!(numbers(&u, "b", "A100"), (0, 0, 2_000));
        assert_eq!(numbers(&u, "b", "H100"), (8_000, 0, 0));
    }

    #[test]
    fn a_shared_gpu_counts_as_its_share() {
        let u = usage(
            &[("A100", 8)],
            vec![
                ("a", vc_usage(&[("A100", 1, 1_750)])),
                ("b", vc_usage(&[("A100", 7, 0)])),
            ],
        );
        assert_eq!(numbers(&u, "a", "A100"), (1_750, 750, 0));
        assert_eq!(numbers(&u, "b", "A100"), (0, 0, 750));
    }

    #[test]
    fn borrowing_comes_from_unguaranteed_gpus_first_and_lent_never_exceeds_borrowed() {
        // 16 GPUs, 12 guaranteed (a 4, b 8), 4 nobody's. c borrows 6: 4 of them are the
        // unguaranteed GPUs, 2 come out of a's and b's idle guarantees, shared 1:2.
        let u = usage(
            &[("A100", 16)],
            vec![
                ("a", vc_usage(&[("A100", 4, 0)])),
                ("b", vc_usage(&[("A100", 8, 0)])),
                ("c", vc_usage(&[("A100", 0, 6_000)])),
            ],
        );
        let lent: u64 = ["a", "b", "c"]
            .iter()
            .map(|v| numbers(&u, v, "A100").2)
            .sum();
        assert_eq!(lent, 2_000);
        assert_eq!(numbers(&u, "a", "A100").2, 666 + 1);
        assert_eq!(numbers(&u, "b", "A100").2, 1_333);
        // Two idle tenants are not both said to lend the same borrowed GPUs.
        let u = usage(
            &[("A100", 16)],
            vec![
                ("a", vc_usage(&[("A100", 8, 0)])),
                ("b", vc_usage(&[("A100", 8, 0)])),
                ("c", vc_usage(&[("A100", 0, 4_000)])),
            ],
        );
        assert_eq!(
            numbers(&u, "a", "A100").2 + numbers(&u, "b", "A100").2,
            4_000
        );
    }

    /// The GPUs a team's leaving jobs hold (whole GPUs and shares), which the
    /// VirtualCluster's `AboveLimit` tells from a lowered limit.
    #[test]
    fn leaving_jobs_gpus_are_counted_per_team() {
        let leaving = |mut j: crate::sched::Job| {
            if let Some(r) = j.running.as_mut() {
                r.preempting = true;
            }
            j
        };
        let jobs = vec![
            leaving(run(
                job("t/whole", "q", 1, 2),
                &[("n0", &[0, 1])],
                false,
                0,
                None,
            )),
            leaving(run(
                share_job("t/share", "q", 1, 250),
                &[("n0", &[2])],
                false,
                0,
                None,
            )),
            run(job("t/staying", "q", 1, 1), &[("n0", &[3])], false, 0, None),
        ];
        let snap = snapshot(
            1_000,
            vec![node("n0", "A100", 8, None)],
            vec![vc("a", "A100", 8)],
            vec![queue("q", "a")],
            jobs,
        );
        let u = &schedule(&snap).usage.virtual_clusters["a"];
        let leaving: u64 = u.flavors.values().map(|f| f.leaving_milli).sum();
        assert_eq!(leaving, 2_250);
    }
}
