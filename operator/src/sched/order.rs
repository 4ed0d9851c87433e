//! Queue policies: the order in which a VirtualCluster offers its pending jobs.
//!
//! Each queue is a line ordered by its policy — FIFO (`queued_at`, then id), Priority
//! (higher first, then FIFO), ShortestPredictedFirst (shortest prediction first, jobs
//! without one after them in FIFO order) or UserFair (the user holding the fewest GPUs in
//! the queue next, FIFO within a user; usage is updated as jobs are admitted, which is
//! dominant-resource fairness with GPUs as the dominant resource). A VC interleaves its
//! queues: the next job comes from the non-empty queue with the lowest usage/entitlement.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use super::ids::{IdVec, JobIdx, QueueId, VcId};
use super::model::{QueuePolicy, Snapshot};
use super::tenants::Tenants;

#[derive(Clone, Debug)]
enum Line {
    Ordered(VecDeque<JobIdx>),
    UserFair(BTreeMap<String, VecDeque<JobIdx>>),
}

#[derive(Clone, Debug)]
struct QueueLine {
    queue: QueueId,
    line: Line,
}

/// The pending jobs of one VirtualCluster, queue by queue.
#[derive(Clone, Debug, Default)]
pub(crate) struct VcLines {
    lines: Vec<QueueLine>,
}

impl VcLines {
    /// The job `next` would return, left in its line.
    pub fn peek(&self, t: &Tenants) -> Option<JobIdx> {
        let i = self.line_to_serve(t)?;
        let l = &self.lines[i];
        match &l.line {
            Line::Ordered(v) => v.front().copied(),
            Line::UserFair(m) => m
                .get(&Self::user_to_serve(m, l.queue, t)?)?
                .front()
                .copied(),
        }
    }

    /// The next job to consider, or None when every queue is empty.
    pub fn next(&mut self, t: &Tenants) -> Option<JobIdx> {
        let i = self.line_to_serve(t)?;
        let l = &mut self.lines[i];
        match &mut l.line {
            Line::Ordered(v) => v.pop_front(),
            Line::UserFair(m) => {
                let user = Self::user_to_serve(m, l.queue, t)?;
                let v = m.get_mut(&user)?;
                let j = v.pop_front();
                if v.is_empty() {
                    m.remove(&user);
                }
                j
            }
        }
    }

    /// The user a UserFair line serves next: the one holding the fewest GPUs in the queue.
    fn user_to_serve(
        m: &BTreeMap<String, VecDeque<JobIdx>>,
        q: QueueId,
        t: &Tenants,
    ) -> Option<String> {
        m.keys()
            .min_by_key(|u| {
                (
                    t.user_used.get(&(q, (*u).clone())).copied().unwrap_or(0),
                    (*u).clone(),
                )
            })
            .cloned()
    }

    /// The non-empty line with the lowest usage against its entitlement.
    fn line_to_serve(&self, t: &Tenants) -> Option<usize> {
        let mut best: Option<((u64, u64), usize)> = None;
        for (i, l) in self.lines.iter().enumerate() {
            let empty = match &l.line {
                Line::Ordered(v) => v.is_empty(),
                Line::UserFair(m) => m.is_empty(),
            };
            if empty {
                continue;
            }
            let key = t.queue_key(l.queue);
            if best.is_none_or(|b| key < b.0) {
                best = Some((key, i));
            }
        }
        best.map(|(_, i)| i)
    }
}

/// Build each VC's lines from the pending jobs (`pending` holds (job, queue)).
pub(crate) fn build(
    snap: &Snapshot,
    t: &Tenants,
    pending: &[(JobIdx, QueueId)],
) -> IdVec<VcId, VcLines> {
    let mut per_queue: BTreeMap<QueueId, Vec<JobIdx>> = BTreeMap::new();
    for &(j, q) in pending {
        per_queue.entry(q).or_default().push(j);
    }
    let mut out = IdVec::filled(VcLines::default(), t.vc_names.len());
    for (q, mut jobs) in per_queue {
        let Some(vc): Option<VcId> = t.queue_vc[q] else {
            continue;
        };
        let fifo = |j: JobIdx| (snap.job(j).queued_at, snap.job(j).id.as_str());
        let line = match snap.queue(q).policy {
            QueuePolicy::Fifo => {
                jobs.sort_by(|&a, &b| fifo(a).cmp(&fifo(b)));
                Line::Ordered(jobs.into())
            }
            QueuePolicy::Priority => {
                jobs.sort_by(|&a, &b| {
                    (Reverse(snap.job(a).priority), fifo(a))
                        .cmp(&(Reverse(snap.job(b).priority), fifo(b)))
                });
                Line::Ordered(jobs.into())
            }
            QueuePolicy::ShortestPredictedFirst => {
                let key = |j: JobIdx| {
                    let p = snap.job(j).predicted_duration_seconds;
                    (p.is_none(), p.unwrap_or(0), fifo(j))
                };
                jobs.sort_by(|&a, &b| key(a).cmp(&key(b)));
                Line::Ordered(jobs.into())
            }
            QueuePolicy::UserFair => {
                jobs.sort_by(|&a, &b| fifo(a).cmp(&fifo(b)));
                let mut m: BTreeMap<String, VecDeque<JobIdx>> = BTreeMap::new();
                for j in jobs {
                    m.entry(snap.job(j).user.clone()).or_default().push_back(j);
                }
                Line::UserFair(m)
            }
        };
        out[vc].lines.push(QueueLine { queue: q, line });
    }
    out
}
