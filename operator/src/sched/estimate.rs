//! When a waiting job is expected to start, from the predicted ends of the running jobs and
//! the jobs ahead of it; and the same arithmetic for a `Backfill` queue's reservation.
//!
//! Each GPU type is a [`Timeline`] of free milli-GPUs over time. A running job holds its GPUs
//! until it is predicted to end (`started_at + predicted_duration_seconds`); one past its
//! prediction, or on its way out, is assumed to end within [`OVERRUN_SECONDS`]; one without
//! a prediction holds them for ever. The waiting jobs then take their turn in queue order
//! (each queue's places, the queues interleaved place by place): each gets the earliest time
//! its GPUs are free on one of its types for as long as it is predicted to run (for ever
//! without a prediction), and holds them from then on, so the jobs behind it fill only the
//! gaps it leaves (what a `Backfill` queue does; a `Strict` queue's jobs never start before
//! the one ahead). A job whose GPUs never come free on this account depends on a job without
//! a prediction: its start is [`StartEstimate::Unknown`].
//!
//! What it leaves out, and so how much to trust it (the user guide says the same): GPUs of
//! one type count as interchangeable, so a gang whose GPUs come free scattered over nodes may
//! start later than estimated; guarantees and limits are not modelled (a job waiting for its
//! team's limit has no estimate), nor jobs that arrive later with a higher priority, nor
//! preemption. The estimate is as good as the predictions: a job that overruns moves every
//! estimate behind it.

use std::collections::BTreeMap;

use super::decisions::{Decisions, WaitReason};
use super::model::{Flavor, Job, QueueingStrategy, Snapshot};

/// How long a job past its predicted end, or asked to leave, is assumed still to run: it is
/// about to end, but when exactly is not known.
pub const OVERRUN_SECONDS: i64 = 60;

/// When a waiting job is expected to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartEstimate {
    /// At this time (seconds, the snapshot's epoch).
    At(i64),
    /// It depends on a running (or earlier waiting) job without a predicted duration, or on
    /// something the estimate does not model (a limit, a held or deleted queue, a job that
    /// can never fit).
    Unknown,
}

/// Free milli-GPUs of one GPU type over time: a step function, each step `(from, free)`
/// lasting until the next one's `from`, the last for ever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Timeline {
    steps: Vec<(i64, i64)>,
}

impl Timeline {
    /// `free` milli-GPUs at every time.
    pub(crate) fn new(free: i64) -> Timeline {
        Timeline {
            steps: vec![(i64::MIN, free)],
        }
    }

    /// The index of the step that starts at `t`, split off the one holding it if needed.
    fn split(&mut self, t: i64) -> usize {
        let i = self.steps.partition_point(|&(from, _)| from <= t) - 1;
        if self.steps[i].0 == t {
            return i;
        }
        let free = self.steps[i].1;
        self.steps.insert(i + 1, (t, free));
        i + 1
    }

    /// Adds `delta` milli-GPUs from `from` until `until` (for ever when None).
    pub(crate) fn add(&mut self, from: i64, until: Option<i64>, delta: i64) {
        if until.is_some_and(|u| u <= from) || delta == 0 {
            return;
        }
        let a = self.split(from);
        let b = until.map_or(self.steps.len(), |u| self.split(u));
        for step in &mut self.steps[a..b] {
            step.1 += delta;
        }
    }

    /// `milli` taken from `from` until `until` (for ever when None).
    pub(crate) fn hold(&mut self, from: i64, until: Option<i64>, milli: u64) {
        self.add(from, until, -(milli as i64));
    }

    /// The earliest time from `not_before` on at which `need` milli-GPUs are free for `dur`
    /// seconds (for ever when None); None when never.
    pub(crate) fn earliest(&self, need: u64, dur: Option<i64>, not_before: i64) -> Option<i64> {
        let need = need as i64;
        let mut i = self.steps.partition_point(|&(from, _)| from <= not_before) - 1;
        let mut start = not_before;
        loop {
            let end = dur.map(|d| start.saturating_add(d.max(1)));
            let mut k = i;
            let fails = loop {
                if k >= self.steps.len() || (k > i && end.is_some_and(|e| self.steps[k].0 >= e)) {
                    break None;
                }
                if self.steps[k].1 < need {
                    break Some(k);
                }
                k += 1;
            };
            let Some(k) = fails else {
                return Some(start);
            };
            // The last step lasts for ever: short there, short for good.
            i = k + 1;
            start = self.steps.get(i)?.0;
        }
    }
}

/// When `job`, running, is predicted to end: `started_at + predicted`, at least
/// [`OVERRUN_SECONDS`] from now once it is past it or on its way out; None when it has no
/// prediction (it holds its GPUs for ever, as far as anyone can tell).
pub(crate) fn predicted_end(job: &Job, now: i64) -> Option<i64> {
    let r = job.running.as_ref()?;
    let soon = now + OVERRUN_SECONDS;
    if r.preempting {
        return Some(soon);
    }
    let end = r
        .started_at
        .saturating_add(job.predicted_duration_seconds?.max(0));
    Some(end.max(soon))
}

/// Whether the reason is a wait the estimate does not model: it has none.
fn unmodelled(reason: &WaitReason) -> bool {
    matches!(
        reason,
        WaitReason::Invalid { .. }
            | WaitReason::NeverFits { .. }
            | WaitReason::OverLimit { .. }
            | WaitReason::QueueMaxShare { .. }
            | WaitReason::UserLimit { .. }
            | WaitReason::QueueTerminating { .. }
            | WaitReason::VirtualClusterTerminating { .. }
            | WaitReason::QueueHeld { .. }
    )
}

/// The cluster's GPU types as timelines: every schedulable node's healthy GPUs less what
/// other pods hold (for ever; those on their way out, for [`OVERRUN_SECONDS`]), less what the
/// running jobs and this cycle's admissions hold until they are predicted to end.
fn timelines<'s>(snap: &'s Snapshot, d: &Decisions) -> BTreeMap<&'s str, Timeline> {
    let now = snap.now;
    let mut flavor_of: BTreeMap<&str, &str> = BTreeMap::new();
    let mut lines: BTreeMap<&str, Timeline> = BTreeMap::new();
    for n in snap.nodes.iter().filter(|n| n.schedulable) {
        if n.flavor.is_cpu_only() {
            continue;
        }
        flavor_of.insert(&n.name, n.flavor.as_str());
        let healthy = n
            .allocatable
            .gpus
            .saturating_sub(n.unhealthy_gpus.len() as u32);
        let usable = healthy.saturating_sub(n.foreign.gpus);
        let line = lines
            .entry(n.flavor.as_str())
            .or_insert_with(|| Timeline::new(0));
        line.add(i64::MIN, None, i64::from(usable) * 1000);
        for h in &n.held {
            let milli = h
                .share
                .map_or(h.gpus.len() as u64 * 1000, |m| u64::from(m.0));
            let until = h.leaving.as_ref().map(|_| now + OVERRUN_SECONDS);
            line.hold(i64::MIN, until, milli);
        }
    }
    let mut hold = |node: &str, gpus: usize, share: Option<u32>, until: Option<i64>| {
        if let Some(line) = flavor_of.get(node).and_then(|f| lines.get_mut(f)) {
            let milli = share.map_or(gpus as u64 * 1000, u64::from);
            line.hold(i64::MIN, until, milli);
        }
    };
    for job in &snap.jobs {
        let Some(r) = &job.running else { continue };
        let until = predicted_end(job, now);
        for p in &r.placement {
            hold(&p.node, p.gpus.len(), p.share.map(|m| m.0), until);
        }
    }
    let by_id: BTreeMap<&str, &Job> = snap.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    for a in &d.admissions {
        let until = by_id
            .get(a.job.as_str())
            .and_then(|j| j.predicted_duration_seconds)
            .map(|p| now.saturating_add(p.max(1)));
        for p in &a.placement {
            hold(&p.node, p.gpus.len(), p.share.map(|m| m.0), until);
        }
    }
    lines
}

/// Every waiting job's estimated start, by job id (`namespace/name`): see the module.
/// Admitted jobs have none.
pub fn start_estimates(snap: &Snapshot, d: &Decisions) -> BTreeMap<String, StartEstimate> {
    let now = snap.now;
    let mut lines = timelines(snap, d);
    let jobs: BTreeMap<&str, &Job> = snap.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let strategy: BTreeMap<&str, QueueingStrategy> = snap
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.strategy))
        .collect();
    let mut waiting: Vec<(&super::decisions::Waiting, &Job)> = d
        .waiting
        .iter()
        .filter_map(|w| Some((w, *jobs.get(w.job.as_str())?)))
        .collect();
    waiting.sort_by(|(a, x), (b, y)| {
        (a.position.is_none(), a.position, x.queued_at, &x.id).cmp(&(
            b.position.is_none(),
            b.position,
            y.queued_at,
            &y.id,
        ))
    });
    // Per queue, the start of the last job estimated: a strict queue's next job starts no
    // earlier; after an unknown one, a strict or backfill queue's jobs are unknown too.
    let mut last: BTreeMap<&str, StartEstimate> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (w, job) in waiting {
        let strategy = strategy
            .get(job.queue.as_str())
            .copied()
            .unwrap_or_default();
        let ahead = last.get(job.queue.as_str()).copied();
        let not_before = match (strategy, ahead) {
            (QueueingStrategy::Strict, Some(StartEstimate::At(t))) => t.max(now),
            _ => now,
        };
        let blocked = strategy.holds_back() && ahead == Some(StartEstimate::Unknown);
        let need = job.gpu_milli();
        let e = if blocked || unmodelled(&w.reason) || need == 0 {
            StartEstimate::Unknown
        } else {
            let dur = job.predicted_duration_seconds;
            let best = lines
                .iter()
                .filter(|(f, _)| {
                    job.gpu_types.is_empty() || job.gpu_types.contains(&Flavor::new(**f))
                })
                .filter_map(|(f, l)| Some((l.earliest(need, dur, not_before)?, *f)))
                .min();
            match best {
                Some((t, f)) => {
                    if let Some(l) = lines.get_mut(f) {
                        l.hold(t, dur.map(|d| t.saturating_add(d.max(1))), need);
                    }
                    StartEstimate::At(t)
                }
                None => StartEstimate::Unknown,
            }
        };
        if w.position.is_some() {
            last.insert(job.queue.as_str(), e);
        }
        out.insert(w.job.clone(), e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::decisions::Waiting;
    use crate::sched::fixtures::*;
    use crate::sched::model::Queue;

    #[test]
    fn a_timeline_finds_the_first_gap_long_enough() {
        // 8 free, 2 from t=10 to 20 (6 taken), 8 again after
        let mut l = Timeline::new(8000);
        l.hold(10, Some(20), 6000);
        assert_eq!(l.earliest(2000, Some(100), 0), Some(0));
        assert_eq!(l.earliest(2001, Some(100), 0), Some(20));
        assert_eq!(l.earliest(4000, Some(5), 0), Some(0));
        assert_eq!(l.earliest(4000, Some(15), 0), Some(20));
        assert_eq!(l.earliest(2000, None, 0), Some(0));
        assert_eq!(l.earliest(9000, Some(1), 0), None);
        l.hold(30, None, 8000);
        assert_eq!(l.earliest(4000, None, 0), None);
        assert_eq!(l.earliest(4000, Some(10), 12), Some(20));
    }

    fn running(id: &str, gpus: u32, node: &str, started: i64, predicted: Option<i64>) -> Job {
        let idx: Vec<u32> = (0..gpus).collect();
        let mut j = run(job(id, "q", 1, gpus), &[(node, &idx)], false, started, None);
        j.predicted_duration_seconds = predicted;
        j
    }

    fn pending(id: &str, gpus: u32, predicted: Option<i64>) -> Job {
        let mut j = job(id, "q", 1, gpus);
        j.predicted_duration_seconds = predicted;
        j
    }

    fn waiting(jobs: &[(&str, u32)]) -> Decisions {
        Decisions {
            waiting: jobs
                .iter()
                .map(|&(id, pos)| Waiting {
                    job: id.into(),
                    reason: WaitReason::BehindQueueHead {
                        queue: "q".into(),
                        head: "x".into(),
                    },
                    position: Some(pos),
                })
                .collect(),
            ..Decisions::default()
        }
    }

    fn snapshot(strategy: QueueingStrategy, jobs: Vec<Job>) -> Snapshot {
        let mut q: Queue = queue("q", "t");
        q.strategy = strategy;
        Snapshot {
            now: 1000,
            nodes: vec![node("n0", "A100", 8, None)],
            virtual_clusters: vec![vc("t", "A100", 8)],
            queues: vec![q],
            jobs,
            workload: vec![],
        }
    }

    /// A job waiting behind a running job with a prediction starts when that one ends; the
    /// job behind it, which needs the GPUs it takes, after it in turn.
    #[test]
    fn waiting_jobs_start_when_the_jobs_before_them_are_predicted_to_end() {
        let a = pending("ns/a", 8, Some(600));
        let b = pending("ns/b", 4, None);
        let snap = snapshot(
            QueueingStrategy::BestEffort,
            vec![running("ns/r", 6, "n0", 400, Some(3600)), a, b],
        );
        let e = start_estimates(&snap, &waiting(&[("ns/a", 1), ("ns/b", 2)]));
        assert_eq!(e["ns/a"], StartEstimate::At(4000));
        assert_eq!(e["ns/b"], StartEstimate::At(4600));
    }

    /// A running job past its prediction is about to end: the estimate says so, it does not
    /// go back in time.
    #[test]
    fn an_overrunning_job_is_assumed_to_end_soon() {
        let snap = snapshot(
            QueueingStrategy::BestEffort,
            vec![
                running("ns/r", 8, "n0", 0, Some(600)),
                pending("ns/a", 8, None),
            ],
        );
        let e = start_estimates(&snap, &waiting(&[("ns/a", 1)]));
        assert_eq!(e["ns/a"], StartEstimate::At(1000 + OVERRUN_SECONDS));
    }

    /// The GPUs of a running job without a prediction never come free on this account: a job
    /// that needs them has no estimate; one that fits beside it has one.
    #[test]
    fn a_start_behind_a_job_without_prediction_is_unknown() {
        let small = pending("ns/small", 2, Some(60));
        let snap = snapshot(
            QueueingStrategy::BestEffort,
            vec![
                running("ns/r", 4, "n0", 0, None),
                running("ns/s", 2, "n0", 0, Some(3000)),
                pending("ns/big", 8, None),
                small,
            ],
        );
        let e = start_estimates(&snap, &waiting(&[("ns/big", 1), ("ns/small", 2)]));
        assert_eq!(e["ns/big"], StartEstimate::Unknown);
        assert_eq!(e["ns/small"], StartEstimate::At(1000));
    }

    /// In a strict queue a job never starts before the one ahead of it, and after one whose
    /// start is unknown its own is unknown; a backfill queue's job may fill a gap ahead.
    #[test]
    fn a_strict_queue_keeps_its_order_and_a_backfill_queue_fills_gaps() {
        let jobs = || {
            let big = pending("ns/big", 8, Some(1000));
            let small = pending("ns/small", 2, Some(500));
            vec![running("ns/r", 6, "n0", 0, Some(3000)), big, small]
        };
        let order = waiting(&[("ns/big", 1), ("ns/small", 2)]);
        let strict = start_estimates(&snapshot(QueueingStrategy::Strict, jobs()), &order);
        assert_eq!(strict["ns/big"], StartEstimate::At(3000));
        assert_eq!(strict["ns/small"], StartEstimate::At(4000));
        let backfill = start_estimates(&snapshot(QueueingStrategy::Backfill, jobs()), &order);
        assert_eq!(backfill["ns/small"], StartEstimate::At(1000));
        let mut unknown = jobs();
        unknown[0].predicted_duration_seconds = None;
        let e = start_estimates(&snapshot(QueueingStrategy::Strict, unknown), &order);
        assert_eq!(
            (e["ns/big"], e["ns/small"]),
            (StartEstimate::Unknown, StartEstimate::Unknown)
        );
    }

    /// A wait the estimate does not model (a limit, a held queue) has no estimate.
    #[test]
    fn a_wait_for_a_limit_has_no_estimate() {
        let snap = snapshot(QueueingStrategy::BestEffort, vec![pending("ns/a", 2, None)]);
        let d = Decisions {
            waiting: vec![Waiting {
                job: "ns/a".into(),
                reason: WaitReason::QueueHeld {
                    queue: "q".into(),
                    policy: crate::sched::model::StopPolicy::Hold,
                },
                position: Some(1),
            }],
            ..Decisions::default()
        };
        assert_eq!(start_estimates(&snap, &d)["ns/a"], StartEstimate::Unknown);
    }
}
