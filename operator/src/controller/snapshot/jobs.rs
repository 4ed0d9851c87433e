//! The jobs of the snapshot: what each holds, whether it is leaving, and where it is
//! charged.

use std::collections::BTreeMap;

use kube::ResourceExt;

use super::{Inflight, World, level, secs};
use crate::api::annotations::PRODUCT_LABEL;
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::controller::duration_history::predicted_seconds;
use crate::controller::gang::{Gang, GangKey};
use crate::controller::job_key::JobKey;
use crate::controller::validate::{Validated, validate};
use crate::sched;

/// Each job that takes part in this cycle, keyed by its gang.
pub(super) fn models(
    world: &World<'_>,
    gangs: &BTreeMap<GangKey, Gang>,
) -> Vec<(GangKey, sched::Job)> {
    let no_pods = Gang::default();
    world
        .jobs
        .iter()
        .filter_map(|j| {
            let key = JobKey::of(j);
            let own = (key.clone(), j.metadata.uid.clone());
            let gang = own.1.as_ref().and_then(|_| gangs.get(&own));
            let model = job_model(j, &key, gang.unwrap_or(&no_pods), world)?;
            Some((own, model))
        })
        .collect()
}

/// The job's minimum runtime before reclaim: its own, else its Queue's, else its
/// VirtualCluster's, else none.
fn min_runtime(
    job: &TrainingJob,
    queue: &str,
    refs: &crate::controller::validate::Refs<'_>,
) -> i64 {
    let queue = refs.queues.get(queue);
    job.spec
        .checkpoint
        .min_runtime_seconds
        .or_else(|| queue.and_then(|q| q.spec.min_runtime_seconds))
        .or_else(|| {
            queue
                .and_then(|q| refs.vcs.get(&q.spec.virtual_cluster))
                .and_then(|vc| vc.spec.min_runtime_seconds)
        })
        .map_or(0, |s| i64::from(s.max(0)))
}

/// A job whose pods hold GPUs but which no longer validates (its PriorityClass deleted, its
/// namespace moved out of its VirtualCluster, ...) stays charged where it was admitted, in
/// its status's queue at its status's priority, until its pods are gone: as Kueue keeps an
/// admitted workload in its ClusterQueue's usage. Dropped, its GPUs were counted against no
/// team, and the team's guarantee looked free to take from others. None when that queue or
/// its VirtualCluster is gone too, or the templates themselves no longer read: the pods then
/// hold their GPUs on their nodes only.
fn charged_where_admitted(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    refs: &crate::controller::validate::Refs<'_>,
) -> Option<Validated> {
    let queue = status.queue.clone()?;
    let vc = &refs.queues.get(&queue)?.spec.virtual_cluster;
    refs.vcs.get(vc)?;
    Some(Validated {
        tasks: crate::controller::validate::tasks(job, refs).ok()?,
        queue,
        priority: status.priority.unwrap_or(0),
    })
}

/// A replica's placement as the job's status records it, as the core reads a pod's.
fn recorded(r: &crate::api::trainingjob::ReplicaPlacement) -> sched::ReplicaPlacement {
    let whole = |v: i32| u32::try_from(v).unwrap_or(0);
    sched::ReplicaPlacement {
        task: r.task.clone(),
        index: whole(r.index),
        rank: whole(r.rank),
        node: r.node.clone(),
        gpus: r.gpus.iter().map(|&g| sched::GpuIndex(whole(g))).collect(),
        share: r.gpu_share.map(|s| sched::MilliGpu(whole(s))),
    }
}

/// A job as the core sees it, or None when it takes no part in this cycle (finished,
/// suspended without pods, invalid, deleted, or waiting out a retry backoff). A new job is a
/// candidate before its status says Queued.
fn job_model(
    job: &TrainingJob,
    key: &JobKey,
    gang: &Gang,
    world: &World<'_>,
) -> Option<sched::Job> {
    // Deleted, held only by a finalizer (foreground deletion, as Argo CD prunes): the garbage
    // collector is deleting its pods, which are room coming free (`Orphans`).
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = job.status.clone().unwrap_or_default();
    let inflight = world.inflight.get(key);
    if status.phase.is_finished() && gang.active().next().is_none() {
        return None;
    }
    let Validated {
        queue,
        priority,
        tasks,
    } = validated(job, &status, gang, inflight, world)?;
    let (placement, bonus) = held(gang, inflight, &status);
    // Stopped for a preemption or a drain, its pods holding nothing any more (exited after
    // their checkpoint, or gone), and not yet back in its queue (a drained job waits a few
    // seconds there): it keeps its place in the core, where the jobs behind it wait for it.
    // Left out, they took the GPUs it needed meanwhile, and it preempted them on its return
    // (an acceptance run saw one drain cost three preemptions).
    let returning = placement.is_empty() && status.phase == Phase::Preempting && !job.spec.suspend;
    let running = if placement.is_empty() {
        if !returning && !waits_to_start(job, &status, gang) {
            return None;
        }
        None
    } else {
        let stop = stopping(job, key, &status, gang, world);
        let held = Held {
            placement,
            bonus,
            inflight,
        };
        Some(running(job, &status, gang, held, stop, &queue, world))
    };
    Some(sched::Job {
        id: key.to_string(),
        queue,
        priority,
        queued_at: status
            .queued_at
            .as_ref()
            .or(job.metadata.creation_timestamp.as_ref())
            .map(secs)
            .unwrap_or(world.now),
        user: job
            .spec
            .user
            .clone()
            .unwrap_or_else(|| job.namespace().unwrap_or_default()),
        gpu_types: gpu_types(job, &tasks),
        tasks,
        topology: topology_of(job),
        retries: status.retries.max(0) as u32,
        preemptions: status.preemptions.max(0) as u32,
        predicted_duration_seconds: predicted_seconds(job, &status)
            .or_else(|| world.predictions.get(key).copied()),
        running,
        returning,
    })
}

/// The GPU types the job accepts: `spec.gpuTypes`, or, without it, the products its GPU
/// tasks' templates restrict `gpu.kubetrain.io/product` to (a `nodeSelector`, a required
/// node affinity `In`), common to all of them. The node filter keeps the job to those nodes
/// either way; naming them here is what lets the core weigh them as a set and the learned
/// workload mix count the shape for those types only. Empty: any type.
fn gpu_types(job: &TrainingJob, tasks: &[sched::Task]) -> Vec<sched::Flavor> {
    if !job.spec.gpu_types.is_empty() {
        return job
            .spec
            .gpu_types
            .iter()
            .cloned()
            .map(sched::Flavor::new)
            .collect();
    }
    tasks
        .iter()
        .filter(|t| t.gpus != sched::GpuDemand::None)
        .filter_map(|t| t.constraints.allowed_values(PRODUCT_LABEL))
        .reduce(|a, b| a.intersection(&b).cloned().collect())
        .map_or_else(Vec::new, |products| {
            products.into_iter().map(sched::Flavor::new).collect()
        })
}

/// The job's queue, priority and tasks: as it validates, or where it was admitted when it
/// no longer does but still holds GPUs; its tasks kept off the nodes that refused it.
fn validated(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    gang: &Gang,
    inflight: Option<&Inflight>,
    world: &World<'_>,
) -> Option<Validated> {
    // Asked only of a job that does not validate: the common path builds no placement twice.
    let holds_gpus = || inflight.is_some() || gang.active().any(|m| m.placement.is_some());
    let mut v = match validate(job, &world.refs) {
        Ok(v) => v,
        Err(_) if holds_gpus() => charged_where_admitted(job, status, &world.refs)?,
        Err(_) => return None,
    };
    if let Some(avoid) =
        crate::controller::placement_rules::avoid_refused_nodes(&status.refused_nodes, world.now)
    {
        for t in &mut v.tasks {
            t.constraints.affinities.push(avoid.clone());
        }
    }
    Some(v)
}

/// Whether a job that holds nothing and is not returning is a candidate to start.
fn waits_to_start(job: &TrainingJob, status: &TrainingJobStatus, gang: &Gang) -> bool {
    // A Pending job that validates is queued in all but its status: the scheduler takes it
    // at once rather than after the reconciler's first status write, and when its pods exist
    // by the time that reconcile runs, one write records Queued and Running together.
    if job.spec.suspend || !matches!(status.phase, Phase::Pending | Phase::Queued) {
        return false;
    }
    // Pods of the job that hold nothing are still there: a short job finished before its
    // reconciler wrote Running, or an earlier attempt's pods are still being deleted. Their
    // names are the ones an admission would create, so it would take them for its own (409)
    // and post a second `Admitted`; the reconciler records the outcome first (`lifecycle`,
    // `queued`). Seen as 0.18 extra admissions per job in Setup C.
    gang.is_empty()
}

/// What a job holds: its placement, whether as bonus, and its admission in flight.
struct Held<'a> {
    placement: Vec<sched::ReplicaPlacement>,
    bonus: bool,
    inflight: Option<&'a Inflight>,
}

/// The running part of a job that holds GPUs: since when, its checkpoint terms, and whether
/// it is leaving (`stop`, from [`stopping`]).
fn running(
    job: &TrainingJob,
    status: &TrainingJobStatus,
    gang: &Gang,
    held: Held<'_>,
    (preempting, checkpoint_request): (bool, Option<sched::CheckpointRequest>),
    queue: &str,
    world: &World<'_>,
) -> sched::Running {
    let Held {
        mut placement,
        bonus,
        inflight,
    } = held;
    let started = status
        .admitted_at
        .as_ref()
        .map(secs)
        .or_else(|| gang.first_created().map(|t| t.as_second()))
        .or(inflight.map(|f| f.at))
        .unwrap_or(world.now);
    placement.sort_by_key(|p| p.rank);
    sched::Running {
        placement,
        bonus,
        started_at: started,
        last_checkpoint: status.last_checkpoint_time.as_ref().map(secs),
        checkpoint_grace_seconds: i64::from(job.spec.checkpoint.grace_period_seconds.max(0)),
        min_runtime_seconds: min_runtime(job, queue, &world.refs),
        preempting,
        checkpoint_request,
    }
}

/// Where the job holds GPUs: its pods' placements, the admission in flight's for pods the
/// cache does not show yet, and, for a gang leaving pod by pod, what its status records;
/// and whether it holds them as bonus.
fn held(
    gang: &Gang,
    inflight: Option<&Inflight>,
    status: &TrainingJobStatus,
) -> (Vec<sched::ReplicaPlacement>, bool) {
    let mut placement = gang.placement();
    let mut bonus = gang.bonus();
    if let Some(f) = inflight {
        // Pods the cache does not show yet still hold their GPUs.
        add_missing(&mut placement, f.placement.iter().cloned());
        bonus |= f.bonus;
    }
    // A gang stopped for a preemption or a drain leaves pod by pod: until its last pod is
    // gone, the GPUs of those gone already are still its own (its status records them), as
    // they are once it is `returning`. Counted free in that gap, another team's job started
    // on them and was reclaimed for the drained job seconds later (the e2e drain test, when
    // the pod on the node that stays schedulable went first).
    if status.phase == Phase::Preempting && !placement.is_empty() {
        add_missing(&mut placement, status.placement.iter().map(recorded));
    }
    (placement, bonus)
}

/// Adds the replicas of `more` that `placement` does not place yet.
fn add_missing(
    placement: &mut Vec<sched::ReplicaPlacement>,
    more: impl IntoIterator<Item = sched::ReplicaPlacement>,
) {
    for r in more {
        if !placement
            .iter()
            .any(|q| q.task == r.task && q.index == r.index)
        {
            placement.push(r);
        }
    }
}

/// Whether the job is on its way out (preempting, suspended, finishing, its pods leaving),
/// and the scheduler's checkpoint request it leaves for, if any.
fn stopping(
    job: &TrainingJob,
    key: &JobKey,
    status: &TrainingJobStatus,
    gang: &Gang,
    world: &World<'_>,
) -> (bool, Option<sched::CheckpointRequest>) {
    // Pods being deleted still hold their GPUs until their containers stop.
    let leaving = gang.leaving();
    // Pods on their way out still hold their GPUs; we cannot tell which, so count the job
    // as preempting until they are gone. A request the scheduler withdrew leaves the job
    // Preempting until its reconciler runs: it is not leaving.
    let withdrawn = crate::controller::preemption::withdrawn(job, status, gang);
    // A request this scheduler wrote counts from the moment it was written.
    let asked = world
        .asked
        .get(key)
        .filter(|_| gang.scheduler_request().is_none());
    let preempting = leaving
        || gang.checkpoint_requested()
        || asked.is_some()
        || (matches!(
            status.phase,
            Phase::Preempting
                | Phase::Retrying
                | Phase::Succeeded
                | Phase::Failed
                | Phase::Suspended
        ) && !withdrawn)
        || job.spec.suspend;
    let checkpoint_request = crate::controller::preemption::request(job, status, gang)
        .or_else(|| asked.map(|a| crate::controller::preemption::asked(job, status, gang, a)));
    (preempting, checkpoint_request)
}

/// The job's topology constraint, as the core reads it.
fn topology_of(job: &TrainingJob) -> sched::TopologyConstraint {
    sched::TopologyConstraint {
        required: job
            .spec
            .topology
            .as_ref()
            .and_then(|t| t.required)
            .map(level),
        preferred: job
            .spec
            .topology
            .as_ref()
            .and_then(|t| t.preferred)
            .map(level),
    }
}
