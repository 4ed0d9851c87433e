//! The scheduling core: a pure library, snapshot in, decisions out. No I/O, no clock, no
//! kube: [`schedule`] takes a [`Snapshot`] (nodes, VirtualClusters, Queues, pending and
//! running jobs, `now`) and returns [`Decisions`] (admissions with full placements,
//! preemptions, a [`WaitReason`] for every job left waiting, promotions and demotions, and the [`Usage`]
//! users see). Same snapshot, same decisions: every map is ordered and every tie is broken by
//! an index or an id.
//!
//! # One cycle
//!
//! 1. **State** (`cluster`). Each node gets ledgers for CPU, memory and each GPU (milli-GPUs):
//!    `held`, `releasing` (jobs being preempted) and `reserved` (promised to a job waiting for
//!    those releases). Running jobs are charged, foreign pods take the highest free GPUs,
//!    unhealthy GPUs have no capacity, cordoned nodes are left out of the index. The free
//!    index buckets nodes by free whole GPUs per flavor (and racks by free GPUs, partly used
//!    GPUs by room left), so finding candidate nodes is a B-tree range walk, not a cluster
//!    scan. The workload's shape mix (`frag`) is learned from the snapshot's jobs.
//!    A victim of a reclaim, priority or queue-share preemption whose beneficiary is no longer pending and
//!    that has not acknowledged its checkpoint is no longer leaving: the preemption is
//!    withdrawn (`cancel`) and the job counts as running from here on.
//! 2. **Usage and standing** (`tenants`). Running jobs are charged to their VC, queue (and
//!    ancestors) and user, as guaranteed or bonus, decided afresh each cycle: a VC's jobs
//!    fill its guarantee per GPU type most important first (priority, then the standing they
//!    have, then most work to lose), the rest are bonus. A bonus job that gets in is
//!    *promoted* (no longer preemptible by reclaim), unless binding its GPUs to its VC would
//!    leave another VC's cell guarantee unobtainable (`cells`): then it stays bonus,
//!    reclaimable. A guaranteed job that no longer gets in is *demoted*. With cells, the
//!    fill by priority comes first, the cells are built from the jobs that stay guaranteed
//!    (a demoted job binds nothing), then promotions are weighed (`standing`); one the
//!    cells refuse displaces a lower-priority guaranteed job whose domain then comes clean.
//! 3. **Guaranteed phase.** VCs take turns by weighted dominant share of their guarantee in
//!    use (at equal shares the VC whose next job has waited longest first); a VC offers jobs from its queues (`order`: the queue furthest below its share
//!    first, the queue's policy inside it). A job within its VC's guarantee for a flavor of
//!    its preference list is placed (`placement`: the candidate node that adds the least
//!    fragmentation for the shape mix; a job accepting any GPU type tries the types in the
//!    order of the fragmentation it would add there) on free capacity, keeping other VCs' cell
//!    guarantees obtainable; a VC with cells fills the domains it already holds first
//!    (`buddy`). If it does not fit, a **reclaim** is planned (`reclaim`): victims
//!    are other VCs' bonus jobs, chosen per candidate domain for least lost work; the gang is
//!    placed on the capacity free once they are gone and that capacity is reserved. A plan
//!    placing the job guaranteed keeps other VCs' cell guarantees obtainable too, so the room
//!    it waits for is room the next cycle gives it. Jobs beyond their guarantee, or that
//!    found neither, are deferred (a job a limit blocks first plans its priority preemption
//!    on the types within its guarantee, see step 5). In a strict queue (`Queue::strict`)
//!    the first job that does not start holds back the jobs behind it: they are deferred
//!    untried, and wait with `BehindQueueHead` unless it starts in the bonus phase (a job
//!    larger than a limit holds back nobody). In a backfill queue (`backfill`) the same job
//!    gets a reservation at its earliest predicted start (`estimate`) in the bonus phase,
//!    and the jobs behind it start there on idle capacity where they do not delay it, or
//!    wait with `BehindReservation` (`BehindQueueHead` when the start cannot be predicted).
//! 4. **Bonus phase.** Deferred jobs borrow idle capacity, VCs taking turns by weighted
//!    dominant share of borrowed GPUs (dominant-resource fairness over GPU types), at equal
//!    shares the VC whose next job has waited longest first, up to limits. Bonus jobs never
//!    cause preemption.
//! 5. **Priority preemption** for jobs still waiting in queues that allow it: victims are
//!    lower-priority jobs of the same queue, chosen like reclaim victims. A job a limit
//!    blocks (VC limit, queue maxShare, user limit) takes part too: the victims' usage is
//!    credited against the limits whose scope holds them and their capacity against node fit
//!    together; a job larger than a limit evicts nobody. When no such plan exists, one plan
//!    may combine the queue's lower-priority jobs with other VCs' bonus jobs, if the job
//!    then ends within its VC's guarantee (recorded as a priority and a reclaim preemption).
//!    A job a limit blocks plans on the types within its guarantee first (both kinds of
//!    plan), then on the others, as the guaranteed and bonus phases would once the limit is
//!    freed: so its plan is the one the next cycle keeps. Its plan on the types within its
//!    guarantee is made at its turn in the guaranteed phase, where the next cycle gives it
//!    its turn: planned only in this phase, after the bonus phase had lent that guarantee to
//!    other VCs (admissions no plan takes back in the cycle that made them), it freed the
//!    limit for room on another type, and the next cycle reclaimed the borrowers instead.
//!    Likewise a job that fits nowhere now (within its guarantee or borrowed) plans at its
//!    turn: in the guaranteed phase when the plan leaves it within its guarantee, else at
//!    its turn in the bonus phase; so the lower-priority jobs behind it in its queue do not
//!    take the free part of the room it needs, to be preempted for it in the next cycle.
//!    Then, for any queue, a **queue-share** preemption: a job whose queue stays within its
//!    share of the VC's guarantee takes it back from its VC's sibling queue lines that use
//!    more than theirs, where the shares at that level are firm (add up to at most 100 %;
//!    `Tenants::firm`). Victims are jobs of no higher priority, taken from a line only while
//!    it is beyond its share (Volcano's rule, so a victim never reclaims in turn), and the
//!    job must end within its own share and its VC's guarantee, credited against limits
//!    like a priority plan.
//!    Last, a **consolidation**: a job within its VC's guarantee that does not fit although
//!    enough whole GPUs of its type are free, scattered, moves smaller jobs of its own VC
//!    (no more important than itself; with cells of the type, its guaranteed jobs of any
//!    priority, since its own placements split its cells) out of the way, chosen like reclaim victims, provided each
//!    victim fits at once on capacity free now elsewhere (that room is held for the rest of
//!    the cycle); victims checkpoint, return to their queue and start again there.
//! 6. Everything else waits with a typed reason: limits (VC limit, queue maxShare, user
//!    limit), `QuotaExhausted` (beyond guarantee, nothing idle), `NoFit` (within quota, with the
//!    largest free block), `ReservedForCells`, `WaitingForPreemption`,
//!    `WaitingForTerminatingPods` (a deleted job's pods hold the room it needs),
//!    `WaitingForMinRuntime`, `NeverFits`, `NodesUnavailable` (it fits only with cordoned or
//!    not-ready nodes back), `Invalid`, `BehindQueueHead`, `QueueTerminating`
//!    (its queue or one above it was deleted and admits nothing new).
//! 7. **Usage report** (`usage`): per VirtualCluster and GPU type guaranteed, in use, bonus
//!    and lent, per queue in use and bonus, with this cycle's promotions; the controller
//!    only formats it for the Queue and VirtualCluster status and the metrics. A guarantee
//!    that lost capacity (unhealthy GPUs, cordoned or gone nodes) cannot cover, even by
//!    reclaim, is reported at risk with the numbers (`risk`, as the cycle starts).
//!
//! # Why it is fast
//!
//! Capacity only shrinks within a cycle, so a job shape (flavor, topology, replica demands)
//! that did not fit once will not fit later in the cycle: the first failure is memoised and
//! every later job of that shape is answered in O(log n); the same holds for victim searches
//! per VC and shape. Placement scores a bounded pool of candidates: the first few nodes of
//! each free-GPU bucket and, for a share, the best-fitting partly used GPUs from the share
//! index, each score costing O(GPUs per node + shapes kept), with at most
//! `frag::MAX_SHAPES` shapes; a job accepting any type is placed once per type to rank
//! them. Nodes are only scanned linearly inside a rack or a reclaim domain. Limits are
//! checked before placement.
//!
//! # Guarantees the properties check
//!
//! No GPU (or fraction of one) is given twice and fractions never exceed 1000 milli; a gang
//! is whole or absent, with ranks contiguous per node; no VC goes above its limit; a VC below
//! its guarantee with a fitting pending job gets an admission or a reclaim plan; only other
//! VCs' bonus jobs that have run their minimum runtime are reclaim victims, and only its own
//! VC's jobs of other queues and no higher priority are queue-share victims, and its own VC's
//! smaller jobs of no higher priority consolidation victims; each beneficiary
//! fits once its victims are gone; only unacknowledged reclaim and priority victims whose
//! beneficiary no longer waits are withdrawn, and all of them; a strict queue has at most one
//! job that holds back the others, and those name it; decisions are deterministic (see
//! `proptests`).
//!
//! # Options
//!
//! [`schedule_with`] takes [`Options`]; the operator always runs the defaults. The simulator
//! turns them to measure a design choice on the same code (e.g. `VictimSelection::Scattered`
//! and `CountOnly` against the default whole-domain victim selection, `docs/benchmarks.md`).
//!
//! # Known simplifications
//!
//! Node constraints (`constraints`: selectors, required affinity, taints, volume affinity)
//! are checked per replica and node; a job with any, or on a cluster with tainted nodes,
//! searches only the nodes its tasks accept, and a task that no node accepts waits with
//! `NeverFits` naming the rule. `PreferNoSchedule` taints are not weighed.
//! Jobs already being preempted count as free for planning, whoever they were preempted
//! for. Foreign pods' GPUs are assumed to be the highest-numbered free ones. Cell guarantees
//! are per flavor and level, bound lazily (see `cells`), not a full HiveD cell hierarchy.
//! A move (consolidation) checks only that each victim fits at once elsewhere; the next
//! cycle admits it again like any waiting job, so a job that arrives meanwhile may take
//! that room first (KAI moves its victims within the same session).

mod backfill;
mod buddy;
mod cancel;
mod cells;
mod cluster;
pub mod constraints;
mod cycle;
mod cycle_state;
pub mod decisions;
mod digest;
pub mod estimate;
mod flavor_choice;
mod frag;
mod ids;
pub mod model;
mod options;
mod order;
mod placement;
mod preempt;
mod reclaim;
mod risk;
mod standing;
mod tenants;
mod usage;
pub mod wait;

pub use constraints::{NodeConstraints, Taint, TaintEffect, Toleration};
pub use cycle::{schedule, schedule_with};
pub use cycle_state::state_bytes;
pub use decisions::{Admission, Beneficiary, Cancellation, Decisions, Preemption, Waiting};
pub use estimate::{OVERRUN_SECONDS, StartEstimate, start_estimates};
pub use model::*;
pub use options::{Options, VictimSelection};
pub use usage::{
    CellShortfall, FlavorUsage, GuaranteeShortfall, QueueUsage, ShortfallCause, Usage, VcUsage,
};
pub use wait::{Room, WaitCode, WaitReason};

#[cfg(test)]
mod cases;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
pub(crate) mod proptests;
#[cfg(test)]
mod proptests_cells;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod scenarios_backfill;
#[cfg(test)]
mod scenarios_cells;
#[cfg(test)]
mod scenarios_flavors;
#[cfg(test)]
mod scenarios_hold;
