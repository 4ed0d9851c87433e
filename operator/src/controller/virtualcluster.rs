//! The VirtualCluster reconciler: status (guaranteed, in use, bonus, lent), the
//! `OverCommitted` condition when guarantees exceed the physical cluster, `GuaranteeAtRisk`
//! when lost capacity leaves part of the guarantee unobtainable even by reclaim (the core's
//! numbers), and `Ready=False` when `spec.defaultQueue` names a queue that is missing or
//! another VirtualCluster's.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use tracing::instrument;

use super::conditions;
use super::context::Context;
use super::error::{self, Error, Reconciler};
use super::metrics::VcLabels;
use super::status;
use super::validate;
use crate::api::virtualcluster::FlavorUsage;
use crate::api::{GpuAmount, VirtualCluster};
use crate::sched;

/// Condition type: part of the guarantee cannot be obtained now, even by reclaim.
pub const GUARANTEE_AT_RISK: &str = "GuaranteeAtRisk";
// `GuaranteeAtRisk=True`'s reasons are the core's `ShortfallCause`.
/// `GuaranteeAtRisk=False`.
pub const OBTAINABLE: &str = "Obtainable";

#[instrument(skip_all, fields(vc = %vc.name_any()))]
pub async fn reconcile(vc: Arc<VirtualCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = vc.name_any();
    let (u, capacity, computed) = {
        let state = ctx.state();
        (
            state.usage.vcs.get(&name).cloned().unwrap_or_default(),
            state.usage.capacity.clone(),
            state.usage.computed,
        )
    };
    if !computed {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let mut status = vc.status.clone().unwrap_or_default();
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

    // OverCommitted: all VCs' guarantees for a flavor above what the cluster has of it.
    let mut guaranteed: std::collections::BTreeMap<String, i64> = Default::default();
    for other in ctx.stores.vcs.state() {
        for g in &other.spec.guarantee {
            *guaranteed.entry(g.flavor.clone()).or_default() += i64::from(g.gpus.max(0));
        }
    }
    let over: Vec<String> = vc
        .spec
        .guarantee
        .iter()
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
    let t =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let generation = vc.metadata.generation;
    if over.is_empty() {
        conditions::set(
            &mut status.conditions,
            "OverCommitted",
            false,
            "WithinCapacity",
            "All guarantees fit the cluster.",
            generation,
            &t,
        );
    } else {
        conditions::set(
            &mut status.conditions,
            "OverCommitted",
            true,
            "GuaranteesExceedCapacity",
            format!(
                "Guarantees exceed the cluster ({}); not every guarantee can be honoured at once.",
                over.join("; ")
            ),
            generation,
            &t,
        );
    }
    // GuaranteeAtRisk: lost capacity (unhealthy GPUs, cordoned or gone nodes) or guarantees
    // beyond the cluster leave part of the guarantee unobtainable, even by reclaim (the
    // core's numbers). Lost capacity names the reason when both apply: it is the one an
    // admin did not choose.
    let shortfalls: Vec<&sched::GuaranteeShortfall> = u
        .flavors
        .values()
        .filter_map(|f| f.at_risk.as_ref())
        .collect();
    let at_risk: Vec<String> = shortfalls.iter().map(ToString::to_string).collect();
    let cause = shortfalls
        .iter()
        .map(|s| s.cause())
        .min_by_key(|c| *c != sched::ShortfallCause::CapacityLost)
        .unwrap_or(sched::ShortfallCause::CapacityLost);
    if at_risk.is_empty() {
        conditions::set(
            &mut status.conditions,
            GUARANTEE_AT_RISK,
            false,
            OBTAINABLE,
            "The whole guarantee can be obtained, by reclaim if need be.",
            generation,
            &t,
        );
    } else {
        conditions::set(
            &mut status.conditions,
            GUARANTEE_AT_RISK,
            true,
            cause.as_str(),
            at_risk.join(" "),
            generation,
            &t,
        );
    }
    // spec.defaultQueue must name a queue of this VirtualCluster: a CEL rule cannot see the
    // Queue, so the operator says it here (and on the jobs that rely on it).
    match validate::default_queue_problem(&vc, &ctx.ref_maps().queues) {
        Some(problem) => conditions::set(
            &mut status.conditions,
            "Ready",
            false,
            "DefaultQueueInvalid",
            format!(
                "spec.defaultQueue cannot be used: {problem}; jobs of the tenant that name no \
                 queue are not valid."
            ),
            generation,
            &t,
        ),
        None => conditions::set(
            &mut status.conditions,
            "Ready",
            true,
            "Ready",
            "Guarantee and usage are up to date.",
            generation,
            &t,
        ),
    };

    let labels = VcLabels {
        virtual_cluster: name.clone(),
    };
    ctx.metrics
        .gpus_guaranteed
        .get_or_create(&labels)
        .set(i64::from(status.guaranteed_gpus));
    ctx.metrics
        .gpus_in_use
        .get_or_create(&labels)
        .set(status.in_use_gpus.milli() as f64 / 1000.0);
    ctx.metrics
        .gpus_bonus
        .get_or_create(&labels)
        .set(status.bonus_gpus.milli() as f64 / 1000.0);

    if vc.status.as_ref() != Some(&status) {
        let api: Api<VirtualCluster> = Api::all(ctx.client.clone());
        status::apply(&api, &name, &status).await?;
    }
    Ok(Action::requeue(Duration::from_secs(5)))
}

pub fn error_policy(vc: Arc<VirtualCluster>, err: &Error, ctx: Arc<Context>) -> Action {
    error::retry(Reconciler::VirtualCluster, vc.as_ref(), err, &ctx)
}
