//! The numbers behind `kubectl get queues` and `kubectl get vc`, computed once per
//! scheduling cycle from the snapshot and the jobs' phases.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::validate::{Refs, effective_queue};
use crate::api::{Phase, TrainingJob};
use crate::sched;

/// Per-queue numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueUsage {
    pub pending: i32,
    pub admitted: i32,
    pub running: i32,
    /// Milli-GPUs in use, and of those, bonus.
    pub milli_gpus: u64,
    pub bonus_milli_gpus: u64,
    /// Seconds since the oldest pending job entered the queue.
    pub oldest_pending_seconds: Option<i64>,
    /// When (Unix seconds) the oldest pending job entered the queue.
    pub oldest_pending_since: Option<i64>,
    /// Jobs not finished that name this queue.
    pub unfinished: i32,
}

/// Per-VirtualCluster and per-flavor numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlavorNumbers {
    pub guaranteed: u32,
    pub in_use_milli: u64,
    pub bonus_milli: u64,
    pub lent_milli: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VcUsage {
    pub flavors: BTreeMap<String, FlavorNumbers>,
    pub pending: i32,
    pub running: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub queues: BTreeMap<String, QueueUsage>,
    pub vcs: BTreeMap<String, VcUsage>,
    /// Physical GPUs per flavor (healthy, on schedulable or not nodes).
    pub capacity: BTreeMap<String, u32>,
    /// Whether a cycle has run since start (status is written only after one has).
    pub computed: bool,
}

/// Milli-GPUs held by one placed replica.
fn replica_milli(p: &sched::ReplicaPlacement) -> u64 {
    match p.share {
        Some(m) => u64::from(m.0),
        None => p.gpus.len() as u64 * 1000,
    }
}

/// `refs` resolve each job's queue ([`effective_queue`]); a job with none counts nowhere.
pub fn compute(snapshot: &sched::Snapshot, jobs: &[Arc<TrainingJob>], refs: &Refs<'_>) -> Usage {
    let mut usage = Usage {
        computed: true,
        ..Default::default()
    };
    let node_flavor: BTreeMap<&str, &str> = snapshot
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.flavor.as_str()))
        .collect();
    for n in &snapshot.nodes {
        if !n.flavor.is_cpu_only() {
            *usage.capacity.entry(n.flavor.0.clone()).or_default() += n.allocatable.gpus;
        }
    }
    let queue_vc: BTreeMap<&str, &str> = snapshot
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.virtual_cluster.as_str()))
        .collect();
    for vc in &snapshot.virtual_clusters {
        let entry = usage.vcs.entry(vc.name.clone()).or_default();
        for g in &vc.guarantee {
            entry
                .flavors
                .entry(g.flavor.0.clone())
                .or_default()
                .guaranteed += g.gpus;
        }
    }
    for q in &snapshot.queues {
        usage.queues.entry(q.name.clone()).or_default();
    }
    // GPUs held, from the snapshot's placements.
    for j in &snapshot.jobs {
        let Some(r) = &j.running else { continue };
        let milli: u64 = r.placement.iter().map(replica_milli).sum();
        let q = usage.queues.entry(j.queue.clone()).or_default();
        q.milli_gpus += milli;
        if r.bonus {
            q.bonus_milli_gpus += milli;
        }
        let Some(vc) = queue_vc.get(j.queue.as_str()) else {
            continue;
        };
        for p in &r.placement {
            let flavor = node_flavor
                .get(p.node.as_str())
                .copied()
                .unwrap_or_default();
            usage
                .vcs
                .entry(vc.to_string())
                .or_default()
                .flavors
                .entry(flavor.to_string())
                .or_default()
                .in_use_milli += replica_milli(p);
        }
    }
    settle_bonus_and_lent(&mut usage);
    // Counts by phase, from the jobs themselves.
    for job in jobs {
        let Ok(queue) = effective_queue(job, refs) else {
            continue;
        };
        let status = job.status.clone().unwrap_or_default();
        let vc = queue_vc.get(queue.as_str()).map(|v| v.to_string());
        let q = usage.queues.entry(queue).or_default();
        if !status.phase.is_finished() {
            q.unfinished += 1;
        }
        match status.phase {
            Phase::Pending | Phase::Queued | Phase::Retrying => {
                q.pending += 1;
                let entered = status
                    .queued_at
                    .as_ref()
                    .or(job.metadata.creation_timestamp.as_ref())
                    .map_or(snapshot.now, |t| t.0.as_second());
                let since = (snapshot.now - entered).max(0);
                q.oldest_pending_seconds =
                    Some(q.oldest_pending_seconds.map_or(since, |o| o.max(since)));
                q.oldest_pending_since =
                    Some(q.oldest_pending_since.map_or(entered, |o| o.min(entered)));
                if let Some(vc) = vc {
                    usage.vcs.entry(vc).or_default().pending += 1;
                }
            }
            Phase::Running | Phase::Preempting => {
                if status.started_at.is_some() {
                    q.running += 1;
                } else {
                    q.admitted += 1;
                }
                if let Some(vc) = vc {
                    usage.vcs.entry(vc).or_default().running += 1;
                }
            }
            _ => {}
        }
    }
    usage
}

/// Bonus and lent per GPU type, so that a VirtualCluster's numbers add up whatever flag its
/// jobs were admitted with: bonus is what a tenant uses beyond its guarantee; what all
/// tenants borrow comes first out of GPUs nobody is guaranteed, and only the rest out of
/// other tenants' idle guarantees, shared among those in proportion to how much of their
/// guarantee is idle. So no tenant is said to lend more than it has idle, and the GPUs
/// lent never exceed the GPUs borrowed.
fn settle_bonus_and_lent(usage: &mut Usage) {
    let mut flavors: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new(); // guaranteed, borrowed, idle
    for u in usage.vcs.values_mut() {
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
        let mut lenders: Vec<&mut FlavorNumbers> = usage
            .vcs
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

    #[test]
    fn a_job_naming_no_queue_counts_in_its_default_queue() {
        use crate::controller::validate::fixtures::{World, job};
        let w = World::new();
        let queue = |name: &str, vc: &str| sched::Queue {
            name: name.into(),
            virtual_cluster: vc.into(),
            parent: None,
            share: 100,
            max_share: 100,
            user_limit: None,
            policy: sched::QueuePolicy::Fifo,
            priority_preemption: false,
        };
        let snapshot = sched::Snapshot {
            now: 1_000,
            queues: vec![queue("vision", "a"), queue("nlp", "b")],
            ..Default::default()
        };
        let jobs = vec![
            // team-a's VirtualCluster a has defaultQueue vision.
            Arc::new(job("team-a", None, None, &[None])),
            // team-b's VirtualCluster b has none: the job counts nowhere.
            Arc::new(job("team-b", None, None, &[None])),
            Arc::new(job("team-b", Some("nlp"), None, &[None])),
        ];
        let u = compute(&snapshot, &jobs, &w.refs());
        assert_eq!(
            (u.queues["vision"].pending, u.queues["vision"].unfinished),
            (1, 1)
        );
        assert_eq!(
            (u.queues["nlp"].pending, u.queues["nlp"].unfinished),
            (1, 1)
        );
        assert_eq!(u.vcs["a"].pending, 1);
        assert_eq!(u.vcs["b"].pending, 1);
        assert_eq!(u.queues.len(), 2, "{:?}", u.queues.keys());
    }

    fn vc(flavors: &[(&str, u32, u64)]) -> VcUsage {
        VcUsage {
            flavors: flavors
                .iter()
                .map(|&(f, guaranteed, in_use_milli)| {
                    (
                        f.to_string(),
                        FlavorNumbers {
                            guaranteed,
                            in_use_milli,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            ..Default::default()
        }
    }

    fn usage(capacity: &[(&str, u32)], vcs: Vec<(&str, VcUsage)>) -> Usage {
        let mut u = Usage {
            capacity: capacity.iter().map(|&(f, n)| (f.to_string(), n)).collect(),
            vcs: vcs.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            ..Default::default()
        };
        settle_bonus_and_lent(&mut u);
        u
    }

    fn numbers(u: &Usage, vc: &str, flavor: &str) -> (u64, u64, u64) {
        let f = &u.vcs[vc].flavors[flavor];
        (f.in_use_milli, f.bonus_milli, f.lent_milli)
    }

    #[test]
    fn bonus_is_what_is_used_beyond_the_guarantee_per_gpu_type() {
        // Team a is guaranteed 8 A100 and 0 H100 and uses 10 A100 and 2 H100: 2 + 2 bonus,
        // whatever flags its jobs were admitted with.
        let u = usage(
            &[("A100", 16), ("H100", 10)],
            vec![
                ("a", vc(&[("A100", 8, 10_000), ("H100", 0, 2_000)])),
                ("b", vc(&[("A100", 8, 0), ("H100", 8, 8_000)])),
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
                ("a", vc(&[("A100", 1, 1_750)])),
                ("b", vc(&[("A100", 7, 0)])),
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
                ("a", vc(&[("A100", 4, 0)])),
                ("b", vc(&[("A100", 8, 0)])),
                ("c", vc(&[("A100", 0, 6_000)])),
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
                ("a", vc(&[("A100", 8, 0)])),
                ("b", vc(&[("A100", 8, 0)])),
                ("c", vc(&[("A100", 0, 4_000)])),
            ],
        );
        assert_eq!(
            numbers(&u, "a", "A100").2 + numbers(&u, "b", "A100").2,
            4_000
        );
    }
}
