//! The numbers behind `kubectl get queues` and `kubectl get vc`, computed once per
//! scheduling cycle from the snapshot and the jobs' phases.

use std::collections::BTreeMap;
use std::sync::Arc;

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

pub fn compute(snapshot: &sched::Snapshot, jobs: &[Arc<TrainingJob>]) -> Usage {
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
    let mut bonus_by_flavor: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
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
                .unwrap_or_default()
                .to_string();
            let f = usage
                .vcs
                .entry(vc.to_string())
                .or_default()
                .flavors
                .entry(flavor.clone())
                .or_default();
            f.in_use_milli += replica_milli(p);
            if r.bonus {
                f.bonus_milli += replica_milli(p);
                *bonus_by_flavor
                    .entry(flavor)
                    .or_default()
                    .entry(vc.to_string())
                    .or_default() += replica_milli(p);
            }
        }
    }
    // Lent: a VC's idle guarantee that other VCs' bonus jobs are using.
    for (vc, u) in usage.vcs.iter_mut() {
        for (flavor, f) in u.flavors.iter_mut() {
            let idle = (u64::from(f.guaranteed) * 1000)
                .saturating_sub(f.in_use_milli - f.bonus_milli.min(f.in_use_milli));
            let others: u64 = bonus_by_flavor
                .get(flavor)
                .map(|m| m.iter().filter(|(v, _)| *v != vc).map(|(_, b)| *b).sum())
                .unwrap_or(0);
            f.lent_milli = idle.min(others);
        }
    }
    // Counts by phase, from the jobs themselves.
    for job in jobs {
        let status = job.status.clone().unwrap_or_default();
        let q = usage.queues.entry(job.spec.queue.clone()).or_default();
        if !status.phase.is_finished() {
            q.unfinished += 1;
        }
        let vc = queue_vc.get(job.spec.queue.as_str()).map(|v| v.to_string());
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

/// Milli-GPUs as whole GPUs for the printer columns (rounded up: a shared GPU is in use).
pub fn gpus(milli: u64) -> i32 {
    i32::try_from(milli.div_ceil(1000)).unwrap_or(i32::MAX)
}
