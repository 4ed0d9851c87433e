//! The VirtualCluster reconciler: status (guaranteed, in use, bonus, lent), the
//! `OverCommitted` condition when guarantees exceed the physical cluster, `GuaranteeAtRisk`
//! when lost capacity leaves part of the guarantee unobtainable even by reclaim (the core's
//! numbers), and `Ready=False` when the spec cannot work as written (a default queue that is
//! missing or another VirtualCluster's, cells larger than the guarantee, a namespace another
//! VirtualCluster owns too: [`configuration_problems`]). A finalizer keeps a deleted VirtualCluster until the jobs of its
//! queues that hold GPUs have finished: gone earlier, they would run on charged to no tenant,
//! neither guaranteed nor bonus, and nothing would reclaim them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::Event as Finalizer;
use kube::{Api, ResourceExt};
use tracing::{debug, instrument};

use super::caches::Caches;
use super::conditions;
use super::context::{Context, SchedulerState};
use super::error::{self, Error, Reconciler};
use super::finalizing;
use super::metrics::{Metrics, VcLabels};
use super::status;
use super::usage::VcUsage;
use super::validate;
use super::validate::effective_queue;
use super::writer::Writer;
use crate::api::reasons::{VirtualClusterConditionType as Type, VirtualClusterReason as Reason};
use crate::api::virtualcluster::FlavorUsage;
use crate::api::{GpuAmount, VirtualCluster, VirtualClusterStatus};
use crate::sched;

pub const FINALIZER: &str = "kubetrain.io/virtualcluster-jobs";

#[instrument(skip_all, fields(vc = %vc.name_any()))]
pub async fn reconcile(vc: Arc<VirtualCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    // The reconcile's one reading of the clock: every condition it sets changes at `t`.
    let t = Time(Timestamp::now());
    let api: Api<VirtualCluster> = Api::all(ctx.writer.client.clone());
    finalizing::reconcile(&api, FINALIZER, vc, |event| async {
        match event {
            Finalizer::Apply(vc) => apply(&vc, &ctx, &t).await,
            Finalizer::Cleanup(vc) => cleanup(&vc, &ctx, &t).await,
        }
    })
    .await
}

/// The jobs of the VirtualCluster's queues that hold or are about to hold GPUs
/// ([`Context::holds_gpus`]). From the job cache, as for queues (`queue::unfinished_jobs`): letting the
/// finalizer go cannot be undone, and the cache is newer than the last cycle's usage.
fn admitted_jobs(vc: &VirtualCluster, ctx: &Context) -> i32 {
    let name = vc.name_any();
    let maps = ctx.caches.ref_maps();
    let refs = maps.refs();
    let ours = |queue: &str| {
        maps.queues
            .get(queue)
            .is_some_and(|q| q.spec.virtual_cluster == name)
    };
    let mut admitted = 0;
    for j in ctx.caches.stores.jobs.state() {
        if effective_queue(&j, &refs).is_ok_and(|q| ours(&q)) && ctx.holds_gpus(&j) {
            admitted += 1;
        }
    }
    admitted
}

/// The conditions an admin acts on, in the status that needs acting on: entering it (or
/// changing its reason) is an Event too, so `kubectl get events` and alerts on Warnings see
/// it, not only the conditions in `kubectl describe` (an acceptance run found no Event on a
/// VirtualCluster over a whole day-2 session).
const WATCHED: [(&str, &str); 4] = [
    (Type::Ready.as_str(), "False"),
    (Type::OverCommitted.as_str(), "True"),
    (Type::GuaranteeAtRisk.as_str(), "True"),
    (Type::AboveLimit.as_str(), "True"),
];

/// Whether entering `c` is news rather than trouble: a deletion under way, or the
/// scheduler's own checkpoint-long overshoot of a limit while victims leave.
fn expected(c: &Condition) -> bool {
    matches!(
        (Type::from_name(&c.type_), Reason::from_name(&c.reason)),
        (Some(Type::Ready), Some(Reason::Terminating))
            | (Some(Type::AboveLimit), Some(Reason::JobsLeaving))
    )
}

async fn write_status(
    vc: &VirtualCluster,
    writer: &Writer,
    status: VirtualClusterStatus,
) -> Result<(), Error> {
    if vc.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<VirtualCluster> = Api::all(writer.client.clone());
    status::apply(&api, &vc.name_any(), &status).await?;
    let old = vc.status.as_ref().map_or(&[][..], |s| &s.conditions[..]);
    status::announce(writer, vc, old, &status.conditions, &WATCHED, expected).await;
    Ok(())
}

async fn apply(vc: &VirtualCluster, ctx: &Context, t: &Time) -> Result<Action, Error> {
    let Some(mut status) = computed_status(vc, ctx, t) else {
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let generation = vc.metadata.generation;
    let problems = configuration_problems(vc, &ctx.caches, &ctx.scheduler);
    match problems.first() {
        // The first problem's reason; every problem's message.
        Some((reason, _)) => conditions::set(
            &mut status.conditions,
            Type::Ready,
            false,
            reason,
            problems
                .iter()
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            generation,
            t,
        ),
        None => conditions::set(
            &mut status.conditions,
            Type::Ready,
            true,
            Reason::Ready,
            "Guarantee and usage are up to date.",
            generation,
            t,
        ),
    };
    write_status(vc, &ctx.writer, status).await?;
    Ok(Action::requeue(Duration::from_secs(5)))
}

/// What in the spec cannot work as written, each as the `Ready=False` reason and a message,
/// the most pressing first. CEL rules cannot see other objects or the nodes, so the operator
/// says these:
/// - `DefaultQueueInvalid`: `spec.defaultQueue` names a queue that is missing or another
///   VirtualCluster's (the jobs that rely on it are `Valid=False` too);
/// - `CellsExceedGuarantee`: a type's cells hold more GPUs than its `gpus`, which they count
///   towards, so the tenant can never hold them all as guaranteed, and the clean domains set
///   aside for the cells it misses stay set aside for good;
/// - `NamespaceConflict`: another VirtualCluster owns one of its namespaces too, so that
///   namespace's jobs may use either's queues;
/// - `UnknownGpuType`: no node has a GPU type it guarantees (a typo reads only as
///   `OverCommitted` otherwise).
fn configuration_problems(
    vc: &VirtualCluster,
    caches: &Caches,
    scheduler: &SchedulerState,
) -> Vec<(Reason, String)> {
    let maps = caches.ref_maps();
    let mut problems = Vec::new();
    if let Some(problem) = validate::default_queue_problem(vc, &maps.queues) {
        problems.push((
            Reason::DefaultQueueInvalid,
            format!(
                "spec.defaultQueue cannot be used: {problem}; jobs of the tenant that name no \
                 queue are not valid."
            ),
        ));
    }
    // Only once some node has a GPU type: before, every type would read unknown.
    let unknown: Vec<&str> = vc
        .spec
        .guarantee
        .iter()
        .map(|g| g.flavor.as_str())
        .filter(|f| !maps.flavors.is_empty() && !maps.flavors.contains(*f))
        .collect();
    if !unknown.is_empty() {
        problems.push((
            Reason::UnknownGpuType,
            format!(
                "No node has GPU type {}: the guarantee of it can never be used. GPU types \
                 are the nodes' gpu.kubetrain.io/product label; the cluster has {}.",
                unknown.join(", "),
                maps.flavors.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let cells: Vec<String> = {
        let state = scheduler.state();
        let flavors = state.usage.vcs.get(&vc.name_any()).map(|u| &u.flavors);
        vc.spec
            .guarantee
            .iter()
            .filter(|g| !g.cells.is_empty())
            .filter_map(|g| {
                let held = flavors?.get(&g.flavor)?.cells_gpus;
                (i64::from(held) > i64::from(g.gpus)).then(|| {
                    format!(
                        "{}: its cells hold at least {held} GPUs, more than the {} of \
                         spec.guarantee's gpus they count towards; raise gpus to {held} or \
                         guarantee fewer cells",
                        g.flavor, g.gpus
                    )
                })
            })
            .collect()
    };
    if !cells.is_empty() {
        problems.push((
            Reason::CellsExceedGuarantee,
            format!(
                "Cells cannot be held within the guarantee ({}).",
                cells.join("; ")
            ),
        ));
    }
    let shared: Vec<String> = validate::shared_namespaces(vc, &maps.vcs, &maps.namespaces)
        .into_iter()
        .map(|(ns, others)| format!("{ns} is owned by {} too", others.join(", ")))
        .collect();
    if !shared.is_empty() {
        problems.push((
            Reason::NamespaceConflict,
            format!(
                "A namespace should belong to one VirtualCluster ({}): its jobs may use the \
                 queues of each owner, and those naming no queue take the defaultQueue of the \
                 first owner by name that sets one. Remove it from all but one.",
                shared.join("; ")
            ),
        ));
    }
    problems
}

/// A deleted VirtualCluster admits nothing new into its queues (the core's
/// `VirtualClusterTerminating`, so nothing is reclaimed for it either) and goes once the jobs
/// of its queues that hold GPUs are done; they are not preempted for the deletion, and its
/// guarantee covers them meanwhile. Waiting jobs do not hold it: they stay, and are
/// `UnknownVirtualCluster` once it is gone.
async fn cleanup(vc: &VirtualCluster, ctx: &Context, t: &Time) -> Result<Action, Error> {
    let admitted = admitted_jobs(vc, ctx);
    if admitted == 0 {
        debug!("no job of its queues holds GPUs; the finalizer goes");
        ctx.metrics.forget_virtual_cluster(&vc.name_any());
        return Ok(Action::await_change());
    }
    if let Some(mut status) = computed_status(vc, ctx, t) {
        conditions::set(
            &mut status.conditions,
            Type::Ready,
            false,
            Reason::Terminating,
            format!(
                "The VirtualCluster is being deleted: its queues admit no new jobs, and \
                 deletion waits for its {admitted} running job(s) to finish or be deleted."
            ),
            vc.metadata.generation,
            t,
        );
        write_status(vc, &ctx.writer, status).await?;
    }
    Err(Error::VirtualClusterNotEmpty {
        virtual_cluster: vc.name_any(),
        jobs: admitted,
    })
}

/// The status from the last cycle's usage, every condition but `Ready`; None before the
/// first cycle.
fn computed_status(vc: &VirtualCluster, ctx: &Context, t: &Time) -> Option<VirtualClusterStatus> {
    let name = vc.name_any();
    let (u, capacity, computed) = {
        let state = ctx.scheduler.state();
        (
            state.usage.vcs.get(&name).cloned().unwrap_or_default(),
            state.usage.capacity.clone(),
            state.usage.computed,
        )
    };
    if !computed {
        return None;
    }
    let mut status = vc.status.clone().unwrap_or_default();
    usage_fields(vc, &u, &mut status);

    // A GPU type no node has is `Ready=False UnknownGpuType` (a typo, most likely): read as
    // a real type it would also be "over-committed" and "at risk", which misleads.
    let maps = ctx.caches.ref_maps();
    let known = |flavor: &str| maps.flavors.is_empty() || maps.flavors.contains(flavor);
    let guaranteed = guaranteed_in_all(&ctx.caches.stores.vcs.state());
    over_committed(vc, &guaranteed, &capacity, &known, &mut status, t);
    guarantee_at_risk(vc, &u, &known, &mut status, t);
    above_limit(
        vc,
        &mut status,
        GpuAmount::from_milli(u.flavors.values().map(|f| f.leaving_milli).sum()),
        vc.metadata.generation,
        t,
    );
    record_metrics(&ctx.metrics, name, &status);
    Some(status)
}

/// The usage numbers of the status: per flavor and summed, and the job counts.
fn usage_fields(vc: &VirtualCluster, u: &VcUsage, status: &mut VirtualClusterStatus) {
    status.flavors = u
        .flavors
        .iter()
        .filter(|(f, _)| !f.is_empty())
        .map(|(flavor, f)| FlavorUsage {
            flavor: flavor.clone(),
            guaranteed: i32::try_from(f.guaranteed).unwrap_or(i32::MAX),
            in_use: GpuAmount::from_milli(f.in_use_milli),
            bonus: GpuAmount::from_milli(f.bonus_milli),
            lent: GpuAmount::from_milli(f.lent_milli),
        })
        .collect();
    status.guaranteed_gpus = vc.spec.guarantee.iter().map(|g| g.gpus.max(0)).sum();
    status.in_use_gpus = status.flavors.iter().map(|f| f.in_use).sum();
    status.bonus_gpus = status.flavors.iter().map(|f| f.bonus).sum();
    status.lent_gpus = status.flavors.iter().map(|f| f.lent).sum();
    status.pending = u.pending;
    status.running = u.running;
    status.observed_generation = vc.metadata.generation;
}

/// All VirtualClusters' guarantees, summed per flavor.
fn guaranteed_in_all(vcs: &[Arc<VirtualCluster>]) -> BTreeMap<String, i64> {
    let mut guaranteed: BTreeMap<String, i64> = BTreeMap::new();
    for other in vcs {
        for g in &other.spec.guarantee {
            *guaranteed.entry(g.flavor.clone()).or_default() += i64::from(g.gpus.max(0));
        }
    }
    guaranteed
}

/// `OverCommitted`: all VCs' guarantees for a flavor above what the cluster has of it.
fn over_committed(
    vc: &VirtualCluster,
    guaranteed: &BTreeMap<String, i64>,
    capacity: &BTreeMap<String, u32>,
    known: &dyn Fn(&str) -> bool,
    status: &mut VirtualClusterStatus,
    t: &Time,
) {
    let over: Vec<String> = vc
        .spec
        .guarantee
        .iter()
        .filter(|g| known(&g.flavor))
        .filter_map(|g| {
            let total = guaranteed.get(&g.flavor).copied().unwrap_or(0);
            let have = i64::from(capacity.get(&g.flavor).copied().unwrap_or(0));
            (total > have).then(|| {
                format!(
                    "{}: {total} guaranteed in all, {have} in the cluster",
                    g.flavor
                )
            })
        })
        .collect();
    let generation = vc.metadata.generation;
    if over.is_empty() {
        conditions::set(
            &mut status.conditions,
            Type::OverCommitted,
            false,
            Reason::WithinCapacity,
            "All guarantees fit the cluster.",
            generation,
            t,
        );
    } else {
        conditions::set(
            &mut status.conditions,
            Type::OverCommitted,
            true,
            Reason::GuaranteesExceedCapacity,
            format!(
                "Guarantees exceed the cluster ({}); not every guarantee can be honoured at once.",
                over.join("; ")
            ),
            generation,
            t,
        );
    }
}

/// `GuaranteeAtRisk`: lost capacity (unhealthy GPUs, cordoned or gone nodes) or guarantees
/// beyond the cluster leave part of the guarantee unobtainable, even by reclaim (the core's
/// numbers). Lost capacity names the reason when both apply: it is the one an admin did not
/// choose.
fn guarantee_at_risk(
    vc: &VirtualCluster,
    u: &VcUsage,
    known: &dyn Fn(&str) -> bool,
    status: &mut VirtualClusterStatus,
    t: &Time,
) {
    let shortfalls: Vec<&sched::GuaranteeShortfall> = u
        .flavors
        .iter()
        .filter(|(flavor, _)| known(flavor))
        .filter_map(|(_, f)| f.at_risk.as_ref())
        .collect();
    let at_risk: Vec<String> = shortfalls.iter().map(ToString::to_string).collect();
    let cause = shortfalls
        .iter()
        .map(|s| s.cause())
        .min_by_key(|c| *c != sched::ShortfallCause::CapacityLost)
        .unwrap_or(sched::ShortfallCause::CapacityLost);
    let generation = vc.metadata.generation;
    if at_risk.is_empty() {
        conditions::set(
            &mut status.conditions,
            Type::GuaranteeAtRisk,
            false,
            Reason::Obtainable,
            "The whole guarantee can be obtained, by reclaim if need be.",
            generation,
            t,
        );
    } else {
        conditions::set(
            &mut status.conditions,
            Type::GuaranteeAtRisk,
            true,
            cause.as_str(),
            at_risk.join(" "),
            generation,
            t,
        );
    }
}

/// The VirtualCluster's GPU gauges: guaranteed, in use and bonus.
fn record_metrics(metrics: &Metrics, name: String, status: &VirtualClusterStatus) {
    let labels = VcLabels {
        virtual_cluster: name,
    };
    metrics
        .gpus_guaranteed
        .get_or_create(&labels)
        .set(i64::from(status.guaranteed_gpus));
    metrics
        .gpus_in_use
        .get_or_create(&labels)
        .set(status.in_use_gpus.milli() as f64 / 1000.0);
    metrics
        .gpus_bonus
        .get_or_create(&labels)
        .set(status.bonus_gpus.milli() as f64 / 1000.0);
}

/// `AboveLimit`: a limit lowered below what the tenant holds cuts nothing back (running jobs
/// run on, as in Kueue), and new jobs wait with `OverLimit`; without this condition the
/// VirtualCluster said nothing of it. While the GPUs above the limit are those of jobs
/// already leaving (`leaving`: the victims of a preemption that a limit needed, which hold
/// their GPUs while they checkpoint), it is True with reason `JobsLeaving`: nobody lowered
/// the limit, and the excess is going (an acceptance run read `LimitLowered` there, and an
/// alert on the condition cannot tell the two apart by status alone). No condition without
/// a limit.
fn above_limit(
    vc: &VirtualCluster,
    status: &mut VirtualClusterStatus,
    leaving: GpuAmount,
    generation: Option<i64>,
    t: &Time,
) {
    let Some(limit) = vc.spec.limit.as_ref() else {
        conditions::remove(&mut status.conditions, Type::AboveLimit);
        return;
    };
    let cap = GpuAmount::whole(u32::try_from(limit.gpus).unwrap_or(0));
    let held = status.in_use_gpus;
    let (status_true, reason, message) = if held.milli() <= cap.milli() {
        (
            false,
            Reason::WithinLimit,
            format!("Holds {held} of its limit of {cap} GPUs."),
        )
    } else if held.milli().saturating_sub(leaving.milli()) <= cap.milli() {
        (
            true,
            Reason::JobsLeaving,
            format!(
                "Holds {held} GPUs, above its limit of {cap}, while jobs holding {leaving} GPUs \
                 checkpoint and leave; it is back within the limit once they are gone. New \
                 jobs wait (OverLimit) meanwhile."
            ),
        )
    } else {
        (
            true,
            Reason::LimitLowered,
            format!(
                "Holds {held} GPUs, above its limit of {cap}: running jobs are not cut back; \
                 new jobs wait (OverLimit) until the tenant is below the limit."
            ),
        )
    };
    conditions::set(
        &mut status.conditions,
        Type::AboveLimit,
        status_true,
        reason,
        message,
        generation,
        t,
    );
}

/// A VirtualCluster whose deletion waits for its jobs is not failing: it looks again soon,
/// and nothing is counted.
pub fn error_policy(vc: Arc<VirtualCluster>, err: &Error, ctx: Arc<Context>) -> Action {
    match err {
        Error::VirtualClusterNotEmpty { .. } => Action::requeue(Duration::from_secs(5)),
        _ => error::retry(Reconciler::VirtualCluster, vc.as_ref(), err, &ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit lowered under what the tenant holds says so (an admin's run: nothing did),
    /// and the condition goes with the limit. Above it only by jobs already leaving (the
    /// victims a limit needed, checkpointing), it says that instead.
    #[test]
    fn a_limit_below_what_the_tenant_holds_is_a_condition() {
        let mut vc: VirtualCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "VirtualCluster",
            "metadata": {"name": "nlp"}, "spec": {"limit": {"gpus": 16}}
        }))
        .expect("vc");
        let t = Time(Timestamp::UNIX_EPOCH);
        let mut status = VirtualClusterStatus {
            in_use_gpus: GpuAmount::whole(24),
            ..Default::default()
        };
        let none = GpuAmount::whole(0);
        let reason = |status: &VirtualClusterStatus| {
            let c = conditions::get(&status.conditions, Type::AboveLimit).expect("condition");
            (c.status.clone(), c.reason.clone(), c.message.clone())
        };
        above_limit(&vc, &mut status, none, None, &t);
        let (s, r, m) = reason(&status);
        assert_eq!((s.as_str(), r.as_str()), ("True", "LimitLowered"));
        assert!(m.contains("Holds 24 GPUs, above its limit of 16"), "{m}");
        // 4 of the 8 above it leaving: the limit still holds the rest back
        above_limit(&vc, &mut status, GpuAmount::whole(4), None, &t);
        assert_eq!(reason(&status).1, "LimitLowered");
        above_limit(&vc, &mut status, GpuAmount::whole(8), None, &t);
        let (s, r, m) = reason(&status);
        assert_eq!((s.as_str(), r.as_str()), ("True", "JobsLeaving"));
        assert!(
            m.contains("while jobs holding 8 GPUs checkpoint and leave"),
            "{m}"
        );
        status.in_use_gpus = GpuAmount::whole(16);
        above_limit(&vc, &mut status, none, None, &t);
        assert_eq!(reason(&status).0, "False");
        vc.spec.limit = None;
        above_limit(&vc, &mut status, none, None, &t);
        assert!(conditions::get(&status.conditions, Type::AboveLimit).is_none());
    }
}
