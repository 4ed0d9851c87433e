//! Tenant accounting: guarantees, bonus, limits, queue shares and user limits ([`Tenants`]).
//!
//! All amounts are milli-GPUs. Per VirtualCluster and flavor the core tracks *guaranteed*
//! usage (jobs admitted within the guarantee, plus room promised by a planned reclaim) and
//! *bonus* usage (jobs admitted on idle capacity beyond it). A job is guaranteed when
//! `guaranteed + need ≤ guarantee` for its flavor. Limits (VC limit, queue maxShare along the
//! queue's ancestors, per-user limit) cap guaranteed and bonus usage together.
//!
//! Fairness: VCs take turns in order of their *weighted dominant share* — for the guaranteed
//! phase the largest fraction of any flavor's guarantee in use, for the bonus phase the
//! largest fraction of any flavor's capacity borrowed, divided by the VC's weight
//! (dominant-resource fairness over GPU types). Within a VC, queues take turns in order of
//! usage divided by entitlement (`share` percent of the parent's entitlement, the root being
//! the VC's guarantee), so a queue below its share goes first and unused share flows to
//! siblings.

use std::collections::BTreeMap;

use super::ids::{FlavorId, IdVec, QueueId, VcId};
use super::model::{Gpus, Queue, Snapshot};
use super::wait::WaitReason;

#[derive(Clone, Debug, Default)]
pub(crate) struct Tenants {
    pub vc_names: IdVec<VcId, String>,
    pub vc_by_name: BTreeMap<String, VcId>,
    pub queue_by_name: BTreeMap<String, QueueId>,
    /// Per queue: its VC, or None when the VC is unknown or the hierarchy is broken.
    pub queue_vc: IdVec<QueueId, Option<VcId>>,
    /// Per queue: itself and its ancestors.
    pub chain: IdVec<QueueId, Vec<QueueId>>,
    pub queue_max: IdVec<QueueId, Option<u64>>,
    pub entitlement: IdVec<QueueId, u64>,
    /// Per queue: whether its share and its siblings' add up to at most 100 %, so that each
    /// is a firm part of their parent's entitlement, which a queue below it may take back
    /// (see [`Tenants::parting`]). Overlapping shares (the default, 100 each) only order
    /// admission.
    pub firm: IdVec<QueueId, bool>,
    /// `[vc][flavor]` guaranteed milli-GPUs.
    pub guarantee: IdVec<VcId, IdVec<FlavorId, u64>>,
    pub limit: IdVec<VcId, Option<u64>>,
    pub weight: IdVec<VcId, u64>,
    /// Per VC: deleted, waiting for its admitted jobs (see `VirtualCluster::terminating`).
    pub vc_terminating: IdVec<VcId, bool>,
    /// Capacity per flavor (healthy GPUs on schedulable nodes), milli.
    pub flavor_cap: IdVec<FlavorId, u64>,
    pub guar_used: IdVec<VcId, IdVec<FlavorId, u64>>,
    pub bonus_used: IdVec<VcId, IdVec<FlavorId, u64>>,
    pub vc_used: IdVec<VcId, u64>,
    pub queue_used: IdVec<QueueId, u64>,
    /// Per queue (its own and its descendants'): what this cycle's preemption plans charged
    /// for their beneficiaries, which wait again in the next cycle (see `beyond_share`).
    pub promised: IdVec<QueueId, u64>,
    pub user_used: BTreeMap<(QueueId, String), u64>,
}

/// What a leaving job frees: its queue, its user, its milli-GPUs.
pub(crate) type Freed<'a> = (QueueId, &'a str, u64);

pub(crate) fn gpus(milli: u64) -> u32 {
    milli.div_ceil(1000).min(u64::from(u32::MAX)) as u32
}

impl Tenants {
    pub fn build(
        snap: &Snapshot,
        flavor_by_name: &BTreeMap<String, FlavorId>,
        flavor_cap: IdVec<FlavorId, u64>,
    ) -> Tenants {
        let nf = flavor_cap.len();
        let mut t = Tenants {
            flavor_cap,
            ..Default::default()
        };
        t.add_virtual_clusters(snap, flavor_by_name, nf);
        t.add_queues(snap);
        t.set_firm(snap);
        t
    }

    /// Each VirtualCluster of the snapshot (the first of a name): its guarantee per flavor,
    /// limit, weight and whether it is terminating; its usage starts at zero.
    fn add_virtual_clusters(
        &mut self,
        snap: &Snapshot,
        flavor_by_name: &BTreeMap<String, FlavorId>,
        nf: usize,
    ) {
        let t = self;
        for vc in &snap.virtual_clusters {
            if t.vc_by_name.contains_key(&vc.name) {
                continue;
            }
            let mut g = IdVec::filled(0u64, nf);
            for fg in &vc.guarantee {
                if let Some(&f) = flavor_by_name.get(fg.flavor.as_str()) {
                    g[f] += u64::from(fg.gpus) * 1000;
                }
            }
            let id = t.vc_names.push(vc.name.clone());
            t.vc_by_name.insert(vc.name.clone(), id);
            t.guarantee.push(g);
            t.limit.push(vc.limit_gpus.map(|l| u64::from(l) * 1000));
            t.weight.push(u64::from(vc.weight.max(1)));
            t.vc_terminating.push(vc.terminating);
        }
        let nv = t.vc_names.len();
        t.guar_used = IdVec::filled(IdVec::filled(0, nf), nv);
        t.bonus_used = IdVec::filled(IdVec::filled(0, nf), nv);
        t.vc_used = IdVec::filled(0, nv);
    }

    /// Each queue of the snapshot (the first of a name): its VC, its line of ancestors, its
    /// entitlement and its cap; a queue of an unknown VC or a broken line stays unusable.
    fn add_queues(&mut self, snap: &Snapshot) {
        let t = self;
        let nq = snap.queues.len();
        for (i, q) in snap.queues.iter().enumerate() {
            t.queue_by_name
                .entry(q.name.clone())
                .or_insert(QueueId(i as u32));
        }
        let total_cap: u64 = t.flavor_cap.iter().sum();
        t.queue_vc = IdVec::filled(None, nq);
        t.chain = IdVec::filled(Vec::new(), nq);
        t.queue_max = IdVec::filled(None, nq);
        t.entitlement = IdVec::filled(0, nq);
        t.queue_used = IdVec::filled(0, nq);
        t.promised = IdVec::filled(0, nq);
        for (i, q) in snap.queues.iter().enumerate() {
            let i = QueueId(i as u32);
            if t.queue_by_name.get(&q.name) != Some(&i) {
                continue; // duplicate name
            }
            let Some(&vc) = t.vc_by_name.get(&q.virtual_cluster) else {
                continue;
            };
            let Some(chain) = t.line_of(snap, i, q) else {
                continue;
            };
            let vc_guar: u64 = t.guarantee[vc].iter().sum();
            let mut ent = vc_guar;
            for &qi in chain.iter().rev() {
                ent = ent * u64::from(snap.queue(qi).share.min(100)) / 100;
            }
            let base = t.limit[vc].unwrap_or(total_cap);
            t.queue_max[i] = (q.max_share < 100).then(|| base * u64::from(q.max_share) / 100);
            t.entitlement[i] = ent;
            t.queue_vc[i] = Some(vc);
            t.chain[i] = chain;
        }
    }

    /// Queue `i` (`q`) and its ancestors, walking up the parents; None when a cycle, a
    /// missing parent or a parent in another VC makes the queue unusable.
    fn line_of(&self, snap: &Snapshot, i: QueueId, q: &Queue) -> Option<Vec<QueueId>> {
        let mut chain = vec![i];
        let mut cur = q;
        while let Some(p) = &cur.parent {
            match self.queue_by_name.get(p) {
                Some(&pi)
                    if !chain.contains(&pi)
                        && snap.queue(pi).virtual_cluster == q.virtual_cluster =>
                {
                    chain.push(pi);
                    cur = snap.queue(pi);
                }
                _ => return None,
            }
        }
        Some(chain)
    }

    /// Whether each queue's share and its siblings' (the usable queues of one VC with the
    /// same parent, or none) add up to at most 100 % (see [`Tenants::firm`]).
    fn set_firm(&mut self, snap: &Snapshot) {
        let nq = snap.queues.len();
        let mut shares: BTreeMap<(VcId, Option<QueueId>), u64> = BTreeMap::new();
        let sibling_group = |t: &Tenants, q: QueueId| {
            let vc = t.queue_vc[q]?;
            Some((vc, t.chain[q].get(1).copied()))
        };
        for (i, q) in snap.queues.iter().enumerate() {
            if let Some(g) = sibling_group(self, QueueId(i as u32)) {
                *shares.entry(g).or_insert(0) += u64::from(q.share.min(100));
            }
        }
        self.firm = (0..nq)
            .map(|i| sibling_group(self, QueueId(i as u32)).is_some_and(|g| shares[&g] <= 100))
            .collect();
    }

    /// Where the queue lines of `q` and `r` part: the top-most queue of `r`'s line that is
    /// not in `q`'s. A share reclaim for a job of `q` takes from what that queue uses beyond
    /// its entitlement. None when `r` is `q` or one of its ancestors, or of another VC.
    pub fn parting(&self, q: QueueId, r: QueueId) -> Option<QueueId> {
        if self.queue_vc[q].is_none() || self.queue_vc[q] != self.queue_vc[r] {
            return None;
        }
        self.chain[r]
            .iter()
            .rev()
            .find(|s| !self.chain[q].contains(s))
            .copied()
    }

    /// Milli-GPUs `q` uses beyond its entitlement, when its share is firm (else 0: nothing
    /// of it can be taken back). A job a plan of this cycle makes room for is not counted:
    /// it waits again in the next cycle, where the queue's other waiting jobs (victims taken
    /// back for it among them) may come first, so it holds nothing of the share yet.
    pub fn beyond_share(&self, q: QueueId) -> u64 {
        if !self.firm[q] {
            return 0;
        }
        self.queue_used[q]
            .saturating_sub(self.promised[q])
            .saturating_sub(self.entitlement[q])
    }

    /// Charges what a preemption plan promises its beneficiary in `q`.
    pub fn promise(&mut self, q: QueueId, milli: u64) {
        for &qi in &self.chain[q] {
            self.promised[qi] += milli;
        }
    }

    /// Whether `need` more keeps `q` and each of its ancestors within its entitlement, once
    /// `freed` (queue, milli of jobs leaving) is credited to the queues that hold it.
    pub fn within_share_after(&self, q: QueueId, need: u64, freed: &[Freed]) -> bool {
        self.queue_vc[q].is_some()
            && self.chain[q].iter().all(|&qi| {
                self.queue_used[qi].saturating_sub(self.freed_under(qi, freed)) + need
                    <= self.entitlement[qi]
            })
    }

    /// Of `freed`, what queue `qi` (itself or one of its descendants) holds.
    fn freed_under(&self, qi: QueueId, freed: &[Freed]) -> u64 {
        freed
            .iter()
            .filter(|(fq, _, _)| self.chain[*fq].contains(&qi))
            .map(|x| x.2)
            .sum()
    }

    /// Whether `need` more fits the VC's guarantee for a flavor.
    /// A flavor no node has any more (a running job whose nodes are all gone) has none.
    pub fn within_guarantee(&self, vc: VcId, f: FlavorId, need: u64) -> bool {
        match (self.guar_used[vc].get(f), self.guarantee[vc].get(f)) {
            (Some(used), Some(g)) => used + need <= *g,
            _ => false,
        }
    }

    /// Limits that would stop `need` more: VC limit, queue maxShare, user limit. The reason
    /// is the first limit the job is larger than, where there is one: the job never starts
    /// under it (and holds back nobody in a strict queue), which the user must be told rather
    /// than a limit it would pass once others' jobs end. Else the first limit it exceeds now.
    pub fn check_limits(
        &self,
        snap: &Snapshot,
        q: QueueId,
        user: &str,
        need: u64,
    ) -> Result<(), WaitReason> {
        let Some(vc) = self.queue_vc[q] else {
            return Ok(());
        };
        let mut exceeded: Option<WaitReason> = None;
        if let Some(l) = self.limit[vc]
            && self.vc_used[vc] + need > l
        {
            let r = WaitReason::OverLimit {
                virtual_cluster: self.vc_names[vc].clone(),
                limit_gpus: gpus(l),
                in_use_gpus: Gpus(self.vc_used[vc]),
                needed_gpus: Gpus(need),
            };
            if need > l {
                return Err(r);
            }
            exceeded.get_or_insert(r);
        }
        for &qi in &self.chain[q] {
            if let Some(m) = self.queue_max[qi]
                && self.queue_used[qi] + need > m
            {
                let r = WaitReason::QueueMaxShare {
                    queue: snap.queue(qi).name.clone(),
                    max_gpus: Gpus(m),
                    in_use_gpus: Gpus(self.queue_used[qi]),
                    needed_gpus: Gpus(need),
                };
                if need > m {
                    return Err(r);
                }
                exceeded.get_or_insert(r);
            }
        }
        if let Some(l) = snap.queue(q).user_limit {
            let used = self
                .user_used
                .get(&(q, user.to_string()))
                .copied()
                .unwrap_or(0);
            let l = u64::from(l) * 1000;
            if used + need > l {
                let r = WaitReason::UserLimit {
                    user: user.to_string(),
                    queue: snap.queue(q).name.clone(),
                    limit_gpus: gpus(l),
                    in_use_gpus: Gpus(used),
                    needed_gpus: Gpus(need),
                };
                if need > l {
                    return Err(r);
                }
                exceeded.get_or_insert(r);
            }
        }
        exceeded.map_or(Ok(()), Err)
    }

    /// Whether `need` more passes every limit once `freed` (queue, user, milli of jobs
    /// leaving) is credited: each freed amount counts against the limits whose scope holds it
    /// (the VC, the queue and its ancestors, the user in the queue).
    pub fn limits_pass_after(
        &self,
        snap: &Snapshot,
        q: QueueId,
        user: &str,
        need: u64,
        freed: &[Freed],
    ) -> bool {
        let Some(vc) = self.queue_vc[q] else {
            return true;
        };
        let sum = |keep: &dyn Fn(QueueId, &str) -> bool| -> u64 {
            freed
                .iter()
                .filter(|(fq, fu, _)| keep(*fq, fu))
                .map(|x| x.2)
                .sum()
        };
        if let Some(l) = self.limit[vc] {
            let f = sum(&|fq, _| self.queue_vc[fq] == Some(vc));
            if self.vc_used[vc].saturating_sub(f) + need > l {
                return false;
            }
        }
        for &qi in &self.chain[q] {
            if let Some(m) = self.queue_max[qi] {
                let f = self.freed_under(qi, freed);
                if self.queue_used[qi].saturating_sub(f) + need > m {
                    return false;
                }
            }
        }
        if let Some(l) = snap.queue(q).user_limit {
            let used = self
                .user_used
                .get(&(q, user.to_string()))
                .copied()
                .unwrap_or(0);
            let f = sum(&|fq, fu| fq == q && fu == user);
            if used.saturating_sub(f) + need > u64::from(l) * 1000 {
                return false;
            }
        }
        true
    }

    /// Whether `need` is more than a limit allows even with nothing else running: no
    /// preemption can make room for it.
    pub fn above_a_limit(&self, snap: &Snapshot, q: QueueId, need: u64) -> bool {
        let Some(vc) = self.queue_vc[q] else {
            return false;
        };
        self.limit[vc].is_some_and(|l| need > l)
            || self.chain[q]
                .iter()
                .any(|&qi| self.queue_max[qi].is_some_and(|m| need > m))
            || snap
                .queue(q)
                .user_limit
                .is_some_and(|l| need > u64::from(l) * 1000)
    }

    /// Counts `milli` against the limits of `q`'s scope only (the VirtualCluster's `limit`,
    /// the queues' `maxShare`, the user's `userLimit`), not against the guarantee: room a
    /// job will need back under its team's caps.
    pub fn hold_limits(&mut self, q: QueueId, user: &str, milli: u64) {
        self.charge_scope(q, user, milli, true);
    }

    /// Adds (or removes) `milli` to the usage the limits read: the VirtualCluster's, each
    /// queue's up the chain, the user's in the queue.
    fn charge_scope(&mut self, q: QueueId, user: &str, milli: u64, add: bool) {
        let Some(vc) = self.queue_vc[q] else { return };
        let op = |x: &mut u64| adjust(x, milli, add);
        op(&mut self.vc_used[vc]);
        for &qi in &self.chain[q] {
            op(&mut self.queue_used[qi]);
        }
        op(self.user_used.entry((q, user.to_string())).or_insert(0));
    }

    /// Add (or with `add == false` remove) usage.
    pub fn charge(
        &mut self,
        q: QueueId,
        user: &str,
        f: FlavorId,
        milli: u64,
        bonus: bool,
        add: bool,
    ) {
        let Some(vc) = self.queue_vc[q] else { return };
        // A flavor no node has any more (the job's nodes are all gone) has no per-flavor
        // usage; the job still counts for its VirtualCluster, queues and user.
        let per_flavor = if bonus {
            self.bonus_used[vc].get_mut(f)
        } else {
            self.guar_used[vc].get_mut(f)
        };
        if let Some(x) = per_flavor {
            adjust(x, milli, add);
        }
        self.charge_scope(q, user, milli, add);
    }

    /// Weighted dominant share of the guarantee in use (guaranteed phase turn order).
    pub fn guaranteed_share(&self, vc: VcId) -> f64 {
        let mut s: f64 = 0.0;
        for (f, &g) in self.guarantee[vc].iter_enumerated() {
            if g > 0 {
                s = s.max(self.guar_used[vc][f] as f64 / g as f64);
            }
        }
        s / self.weight[vc] as f64
    }

    /// Weighted dominant share of borrowed capacity (bonus phase turn order).
    pub fn bonus_share(&self, vc: VcId) -> f64 {
        let mut s: f64 = 0.0;
        for (f, &cap) in self.flavor_cap.iter_enumerated() {
            if cap > 0 {
                s = s.max(self.bonus_used[vc][f] as f64 / cap as f64);
            }
        }
        s / self.weight[vc] as f64
    }

    /// Queue turn order inside a VC: usage over entitlement, smallest first.
    pub fn queue_key(&self, q: QueueId) -> (u64, u64) {
        match self.queue_used[q]
            .saturating_mul(1_000_000)
            .checked_div(self.entitlement[q])
        {
            Some(ratio) => (ratio, 0),
            None => (u64::MAX, self.queue_used[q]),
        }
    }
}

/// Adds `milli` to a usage (or with `add == false` removes it, never below 0).
fn adjust(x: &mut u64, milli: u64, add: bool) {
    if add {
        *x += milli
    } else {
        *x = x.saturating_sub(milli)
    }
}
