//! The numbers behind `kubectl get queues` and `kubectl get vc`, once per scheduling cycle:
//! the GPUs as the core reports them ([`sched::Usage`], this cycle's promotions and demotions included),
//! and the jobs counted by phase, which only the TrainingJobs' status tells. A queue's numbers
//! are those of its subtree (its own jobs and those of the queues under it), the scope its
//! `maxShare` is checked on; jobs count up the same lines of parents the core resolved
//! ([`sched::QueueUsage::ancestors`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::validate::{Refs, effective_queue};
use crate::api::{Phase, TrainingJob};
use crate::sched;

/// Per-queue numbers, of the queue's subtree but for `unfinished`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueUsage {
    pub pending: i32,
    pub admitted: i32,
    pub running: i32,
    /// Milli-GPUs in use, and of those, bonus and leaving (from the core).
    pub milli_gpus: u64,
    pub bonus_milli_gpus: u64,
    pub leaving_milli_gpus: u64,
    /// The most the queue may hold by its `maxShare` (from the core); None at 100.
    pub max_milli_gpus: Option<u64>,
    /// Seconds since the oldest pending job entered the queue.
    pub oldest_pending_seconds: Option<i64>,
    /// When (Unix seconds) the oldest pending job entered the queue.
    pub oldest_pending_since: Option<i64>,
    /// Jobs not finished that name this queue (its own only).
    pub unfinished: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VcUsage {
    /// Per GPU type, from the core (the empty type: CPU-only or unknown nodes).
    pub flavors: BTreeMap<String, sched::FlavorUsage>,
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

/// `gpus` is the cycle's [`sched::Decisions::usage`]; `refs` resolve each job's queue
/// ([`effective_queue`]), and a job with none counts nowhere.
/// When the job last entered its queue (Unix seconds): when `Admitted` last turned False,
/// else the latest of its first queueing, its last preemption and its retry's end (a status
/// not yet written since it was requeued), else its creation. A job preempted or retried
/// keeps its place in line by `status.queuedAt`; the time it has waited since coming back
/// is what the queueing-delay metric and a queue's oldest pending job report, not its run.
pub fn waiting_since(job: &TrainingJob) -> Option<i64> {
    let status = job.status.as_ref();
    let admitted = status.and_then(|s| {
        super::conditions::get(&s.conditions, crate::api::reasons::ConditionType::Admitted)
    });
    if let Some(c) = admitted.filter(|c| c.status == "False") {
        return Some(c.last_transition_time.0.as_second());
    }
    status
        .and_then(|s| {
            [
                s.queued_at.as_ref(),
                s.last_preemption.as_ref().map(|p| &p.at),
                s.retry_at.as_ref(),
            ]
            .into_iter()
            .flatten()
            .map(|t| t.0.as_second())
            .max()
        })
        .or_else(|| {
            job.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second())
        })
}

pub fn compute(
    snapshot: &sched::Snapshot,
    gpus: &sched::Usage,
    jobs: &[Arc<TrainingJob>],
    refs: &Refs<'_>,
) -> Usage {
    let mut usage = gpu_usage(gpus);
    let queue_vc: BTreeMap<&str, &str> = snapshot
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.virtual_cluster.as_str()))
        .collect();
    // Counts by phase, from the jobs themselves: in the job's queue and each queue above it.
    for job in jobs {
        let Ok(queue) = effective_queue(job, refs) else {
            continue;
        };
        let vc = queue_vc.get(queue.as_str()).map(|v| v.to_string());
        let ancestors = gpus
            .queues
            .get(&queue)
            .map_or(&[][..], |q| &q.ancestors[..]);
        let mut line: Vec<String> = Vec::with_capacity(1 + ancestors.len());
        line.push(queue);
        line.extend(ancestors.iter().cloned());
        count_job(&mut usage, job, line, vc, snapshot.now);
    }
    usage
}

/// The GPU numbers of the core's usage, per queue, per VirtualCluster and per flavor; the
/// job counts still 0.
fn gpu_usage(gpus: &sched::Usage) -> Usage {
    Usage {
        queues: gpus
            .queues
            .iter()
            .map(|(name, q)| {
                let numbers = QueueUsage {
                    milli_gpus: q.milli_gpus,
                    bonus_milli_gpus: q.bonus_milli_gpus,
                    leaving_milli_gpus: q.leaving_milli_gpus,
                    max_milli_gpus: q.max_milli_gpus,
                    ..Default::default()
                };
                (name.clone(), numbers)
            })
            .collect(),
        vcs: gpus
            .virtual_clusters
            .iter()
            .map(|(name, vc)| {
                let flavors = vc
                    .flavors
                    .iter()
                    .map(|(f, n)| (f.0.clone(), n.clone()))
                    .collect();
                (
                    name.clone(),
                    VcUsage {
                        flavors,
                        ..Default::default()
                    },
                )
            })
            .collect(),
        capacity: gpus
            .capacity
            .iter()
            .map(|(f, n)| (f.0.clone(), *n))
            .collect(),
        computed: true,
    }
}

/// Counts `job` by its phase in each queue of `line` (its queue, then those above it) and
/// in its VirtualCluster `vc`.
fn count_job(
    usage: &mut Usage,
    job: &TrainingJob,
    line: Vec<String>,
    vc: Option<String>,
    now: i64,
) {
    let status = job.status.clone().unwrap_or_default();
    if !status.phase.is_finished() {
        usage.queues.entry(line[0].clone()).or_default().unfinished += 1;
    }
    match status.phase {
        Phase::Pending | Phase::Queued | Phase::Retrying => {
            let entered = waiting_since(job).unwrap_or(now);
            let since = (now - entered).max(0);
            for name in line {
                let q = usage.queues.entry(name).or_default();
                q.pending += 1;
                q.oldest_pending_seconds =
                    Some(q.oldest_pending_seconds.map_or(since, |o| o.max(since)));
                q.oldest_pending_since =
                    Some(q.oldest_pending_since.map_or(entered, |o| o.min(entered)));
            }
            if let Some(vc) = vc {
                usage.vcs.entry(vc).or_default().pending += 1;
            }
        }
        phase if phase.holds_gpus() => {
            let started = status.started_at.is_some();
            for name in line {
                let q = usage.queues.entry(name).or_default();
                if started {
                    q.running += 1;
                } else {
                    q.admitted += 1;
                }
            }
            if let Some(vc) = vc {
                usage.vcs.entry(vc).or_default().running += 1;
            }
        }
        _ => {}
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
            ..Default::default()
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
        let decisions = sched::schedule(&snapshot);
        let u = compute(&snapshot, &decisions.usage, &jobs, &w.refs());
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

    /// A parent queue's row tells its subtree: the jobs of the queue under it count in it too,
    /// by the line of parents the core resolved (an acceptance run: `alpha-root` read 0
    /// running and 0 GPUs while its `maxShare` held back `alpha-dev`'s jobs).
    #[test]
    fn a_parent_queue_counts_the_jobs_of_the_queues_under_it() {
        use crate::api::TrainingJobStatus;
        use crate::controller::validate::fixtures::{World, job};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let w = World::new();
        let at = |s: i64| Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("time"));
        let with = |phase: Phase, started: bool| {
            let mut j = job("team-a", Some("alpha-dev"), None, &[None]);
            j.metadata.creation_timestamp = Some(at(400));
            j.status = Some(TrainingJobStatus {
                phase,
                started_at: started.then(|| at(500)),
                ..Default::default()
            });
            Arc::new(j)
        };
        let jobs = vec![
            with(Phase::Running, true),
            with(Phase::Running, true),
            with(Phase::Queued, false),
        ];
        let gpus = sched::Usage {
            queues: [
                (
                    "alpha-root".to_string(),
                    sched::QueueUsage {
                        milli_gpus: 4_000,
                        max_milli_gpus: Some(3_200),
                        ..Default::default()
                    },
                ),
                (
                    "alpha-dev".to_string(),
                    sched::QueueUsage {
                        milli_gpus: 4_000,
                        ancestors: vec!["alpha-root".into()],
                        ..Default::default()
                    },
                ),
            ]
            .into(),
            ..Default::default()
        };
        let snapshot = sched::Snapshot {
            now: 1_000,
            ..Default::default()
        };
        let u = compute(&snapshot, &gpus, &jobs, &w.refs());
        for q in ["alpha-root", "alpha-dev"] {
            let n = &u.queues[q];
            assert_eq!(
                (n.running, n.pending, n.milli_gpus, n.oldest_pending_since),
                (2, 1, 4_000, Some(400)),
                "{q}"
            );
        }
        assert_eq!(u.queues["alpha-root"].max_milli_gpus, Some(3_200));
        // The finalizer's count stays the queue's own.
        assert_eq!(
            (
                u.queues["alpha-root"].unfinished,
                u.queues["alpha-dev"].unfinished
            ),
            (0, 3)
        );
    }

    /// A job preempted after hours of running has waited since it came back, not since it
    /// was first queued (an admin found a 71 s wait recorded as 334 s): from Admitted=False
    /// once written, from the preemption before that.
    #[test]
    fn a_requeued_job_waits_from_its_return() {
        use crate::api::TrainingJobStatus;
        use crate::api::trainingjob::{PreemptionOutcome, PreemptionRecord};
        use crate::controller::validate::fixtures::job;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let at = |s: i64| Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("time"));
        let mut j = job("team-a", None, None, &[None]);
        j.metadata.creation_timestamp = Some(at(1_000));
        assert_eq!(waiting_since(&j), Some(1_000));
        let mut status = TrainingJobStatus {
            queued_at: Some(at(1_010)),
            ..Default::default()
        };
        j.status = Some(status.clone());
        assert_eq!(waiting_since(&j), Some(1_010));
        status.last_preemption = Some(PreemptionRecord {
            outcome: PreemptionOutcome::CheckpointSaved,
            at: at(9_000),
            reason: Some("Reclaim".into()),
            lost_gpu_seconds: 0,
        });
        j.status = Some(status.clone());
        assert_eq!(waiting_since(&j), Some(9_000));
        crate::controller::conditions::set(
            &mut status.conditions,
            crate::api::reasons::ConditionType::Admitted,
            false,
            "QuotaExhausted",
            "waits",
            None,
            &at(9_005),
        );
        j.status = Some(status);
        assert_eq!(waiting_since(&j), Some(9_005));
    }
}
