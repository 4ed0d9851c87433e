//! Buddy packing: a VirtualCluster's guaranteed work goes first into the cell domains it
//! already owns before it binds a clean one, as HiveD's buddy allocation fills a partly used
//! cell before it splits a whole one. Its other cells stay whole for the jobs that need all
//! of one (issue 49: an 8-GPU job took a second node while 13 GPUs of the first were free,
//! and the team's 16-GPU job, within its two node cells, then found no whole node).

use super::cluster::Mode;
use super::cycle_state::{Cycle, Pending, scope};
use super::ids::FlavorId;
use super::placement::{Request, Scope, Trial, place};

impl Cycle<'_> {
    /// A guaranteed placement of `p` on `f` within the cell domains its VC owns (see
    /// `Cells::own_nodes`), if its VC has cells of `f` and one fits there.
    pub(super) fn place_in_own_cells(
        &mut self,
        p: &Pending,
        f: FlavorId,
        req: &Request,
    ) -> Option<Trial> {
        let mut own = self.cells.own_nodes(&self.c, f, p.vc);
        if let Scope::Nodes(allowed) = scope(p) {
            own.retain(|n| allowed.contains(n));
        }
        if own.is_empty() {
            return None;
        }
        let trial = place(&mut self.c, req, Mode::Now, Scope::Nodes(&own))?;
        if self.cells.accepts(&self.c, &self.t, &trial, p.vc, p.milli) {
            return Some(trial);
        }
        trial.undo(&mut self.c);
        None
    }
}
