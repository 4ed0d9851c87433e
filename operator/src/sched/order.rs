//! Queue policies: the order in which a VirtualCluster offers its pending jobs.
//!
//! Each queue is a line ordered by its policy — FIFO (`queued_at`, then id as read, `b2`
//! before `b10`), Priority (higher first, then FIFO), ShortestPredictedFirst (shortest
//! prediction first, jobs without one after them in FIFO order) or UserFair (the user
//! holding the fewest GPUs in the queue next, FIFO within a user; usage is updated as jobs
//! are admitted, which is dominant-resource fairness with GPUs as the dominant resource). A
//! VC interleaves its queues: the next job comes from the non-empty queue with the lowest
//! usage/entitlement.
//!
//! In a queue with `priority_preemption`, priority comes first whatever the policy, which
//! then orders the jobs of one priority. Preemption takes only lower-priority victims, so
//! its beneficiary is always ahead of them: otherwise a FIFO (or fair, or shortest-first)
//! line would offer the freed GPUs to the victim again, the next cycle preempt it again,
//! and so on (seen as 24 preemptions of one job in 2 s). Kueue and Volcano order by
//! priority first too.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use super::ids::{IdVec, JobIdx, QueueId, VcId};
use super::model::{QueuePolicy, Snapshot};
use super::tenants::Tenants;

#[derive(Clone, Debug)]
enum Line {
    Ordered(VecDeque<JobIdx>),
    /// Each user's jobs in FIFO order (by priority first where priority leads), with the
    /// priority that leads when it does: the next user is taken among those whose front job
    /// has the highest.
    UserFair(BTreeMap<String, VecDeque<(Reverse<i32>, JobIdx)>>),
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
                .map(|&(_, j)| j),
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
                let j = v.pop_front().map(|(_, j)| j);
                if v.is_empty() {
                    m.remove(&user);
                }
                j
            }
        }
    }

    /// The user a UserFair line serves next: the one holding the fewest GPUs in the queue
    /// (among those whose next job has the highest priority, where priority leads).
    fn user_to_serve(
        m: &BTreeMap<String, VecDeque<(Reverse<i32>, JobIdx)>>,
        q: QueueId,
        t: &Tenants,
    ) -> Option<String> {
        m.iter()
            .filter_map(|(u, v)| Some((v.front()?.0, u)))
            .min_by_key(|&(priority, u)| {
                (
                    priority,
                    t.user_used.get(&(q, u.clone())).copied().unwrap_or(0),
                    u.clone(),
                )
            })
            .map(|(_, u)| u.clone())
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
        let fifo = |j: JobIdx| (snap.job(j).queued_at, NaturalId(snap.job(j).id.as_str()));
        // Priority leads where it may preempt (see the module), and in a Priority queue.
        let leads =
            snap.queue(q).priority_preemption || snap.queue(q).policy == QueuePolicy::Priority;
        let first = |j: JobIdx| Reverse(if leads { snap.job(j).priority } else { 0 });
        let line = match snap.queue(q).policy {
            QueuePolicy::Fifo | QueuePolicy::Priority => {
                jobs.sort_by(|&a, &b| (first(a), fifo(a)).cmp(&(first(b), fifo(b))));
                Line::Ordered(jobs.into())
            }
            QueuePolicy::ShortestPredictedFirst => {
                let key = |j: JobIdx| {
                    let p = snap.job(j).predicted_duration_seconds;
                    (first(j), p.is_none(), p.unwrap_or(0), fifo(j))
                };
                jobs.sort_by(|&a, &b| key(a).cmp(&key(b)));
                Line::Ordered(jobs.into())
            }
            QueuePolicy::UserFair => {
                jobs.sort_by(|&a, &b| (first(a), fifo(a)).cmp(&(first(b), fifo(b))));
                let mut m: BTreeMap<String, VecDeque<(Reverse<i32>, JobIdx)>> = BTreeMap::new();
                for j in jobs {
                    m.entry(snap.job(j).user.clone())
                        .or_default()
                        .push_back((first(j), j));
                }
                Line::UserFair(m)
            }
        };
        out[vc].lines.push(QueueLine { queue: q, line });
    }
    out
}

/// A job id compared as people read numbered names: `burst2` before `burst10`. Jobs created
/// in the same second (`queued_at` has whole seconds) are told apart by their ids, and a
/// loop that submits `burst1` … `burst10` expects them in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NaturalId<'a>(&'a str);

impl Ord for NaturalId<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        natural_cmp(self.0, other.0)
    }
}

impl PartialOrd for NaturalId<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Runs of digits compare by their value, everything else byte by byte; equal values with
/// different spellings (`07`, `7`) fall back to the plain comparison, so the order is total.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    while let (Some(&c), Some(&d)) = (x.first(), y.first()) {
        if c.is_ascii_digit() && d.is_ascii_digit() {
            let run = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
            let (n, m) = (run(x), run(y));
            // Leading zeros dropped (one digit kept), without allocating: this runs in
            // every cycle's sort of every queue.
            let trim = |s: &'_ [u8]| -> usize {
                s.iter()
                    .take_while(|&&b| b == b'0')
                    .count()
                    .min(s.len() - 1)
            };
            let (p, q) = (&x[trim(&x[..n])..n], &y[trim(&y[..m])..m]);
            let by_value = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
            if by_value != Ordering::Equal {
                return by_value;
            }
            (x, y) = (&x[n..], &y[m..]);
        } else {
            if c != d {
                return c.cmp(&d);
            }
            (x, y) = (&x[1..], &y[1..]);
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names_sort_as_read() {
        let mut ids = vec![
            "ns/burst10",
            "ns/burst2",
            "ns/burst1",
            "ns/b",
            "ns/burst02",
            "ns/a10b",
        ];
        ids.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            ids,
            [
                "ns/a10b",
                "ns/b",
                "ns/burst1",
                "ns/burst02",
                "ns/burst2",
                "ns/burst10"
            ]
        );
        // Total: different spellings of one number are still ordered, never equal.
        assert_eq!(natural_cmp("x07", "x7"), "x07".cmp("x7"));
        assert_eq!(natural_cmp("same", "same"), std::cmp::Ordering::Equal);
    }
}
