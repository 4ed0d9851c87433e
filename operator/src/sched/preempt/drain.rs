//! Drain: every job with a replica on a draining node, or on a GPU turned unhealthy,
//! checkpoints and leaves, for nobody. It is the first step of a cycle, before any job is
//! offered room.

use crate::sched::cycle_state::Cycle;
use crate::sched::decisions::{Beneficiary, Preemption, PreemptionReason};
use crate::sched::ids::NodeId;
use crate::sched::model::StopPolicy;
use crate::sched::reclaim::{self as search, RunInfo};

impl<'a> Cycle<'a> {
    /// Every job with a replica on a draining node, or on a GPU turned unhealthy, checkpoints
    /// and leaves, whatever its minimum runtime: a drain waits for nobody's guarantee, and a
    /// sick GPU may not last. Its usage comes off its guarantee and its capacity counts as
    /// leaving, like any victim's; its limits still count it, since it comes back.
    pub(in crate::sched) fn drain(&mut self) {
        for i in self.runs.ids() {
            let r = &self.runs[i];
            if r.gone {
                continue;
            }
            let Some((reason, beneficiary)) = self.must_leave(r) else {
                continue;
            };
            self.uncharge(i);
            // It comes back to its queue: its limits keep its room from this cycle on, as
            // in the cycles while it leaves (`charge_jobs_that_return`).
            let r = &self.runs[i];
            if let Some(q) = r.queue {
                self.t.hold_limits(q, &self.snap.job(r.job).user, r.milli);
            }
            search::release(&mut self.c, &self.runs[i]);
            self.runs[i].gone = true;
            let r = &self.runs[i];
            self.out.preemptions.push(Preemption {
                beneficiary,
                reason,
                victims: vec![self.snap.job(r.job).id.clone()],
                lost_gpu_seconds: r.lost,
            });
        }
    }

    /// Why a running job must leave where it runs, and what makes it (see [`Self::drain`]).
    fn must_leave(&self, r: &RunInfo) -> Option<(PreemptionReason, Beneficiary)> {
        // A queue held with `HoldAndDrain` (or under one) sends its jobs back, wherever
        // they run; the queue is what makes them leave.
        let held = r.queue.and_then(|q| self.held_by(q));
        if let Some((q, StopPolicy::HoldAndDrain)) = held {
            let queue = Beneficiary::Queue(self.snap.queue(q).name.clone());
            return Some((PreemptionReason::QueueHold, queue));
        }
        let node = |n: NodeId| &self.snap.nodes[self.c.nodes[n].src as usize];
        if let Some(&n) = r.nodes.iter().find(|&&n| node(n).draining) {
            let node = Beneficiary::Node(node(n).name.clone());
            return Some((PreemptionReason::Drain, node));
        }
        r.takes.iter().find_map(|(n, gpus, _, _)| {
            let ledgers = &self.c.nodes[*n].gpus;
            gpus.iter()
                .find(|(g, _)| ledgers.get(usize::from(*g)).is_some_and(|l| l.cap == 0))
                .map(|(g, _)| {
                    (
                        PreemptionReason::UnhealthyGpu,
                        Beneficiary::Gpu {
                            node: node(*n).name.clone(),
                            index: u32::from(*g),
                        },
                    )
                })
        })
    }
}
