//! What one scheduling cycle does, decided before anything is written: step 2 of
//! `scheduler::cycle` (observe → plan → carry out).
//!
//! [`plan`] turns what the cycle observed (the caches, the admissions and checkpoint requests
//! in flight, the waits the jobs' statuses say, the last usage, the time) into a [`CyclePlan`]:
//! the snapshot and the core's decisions, the usage, the reservations to make or remove, each
//! waiting job's published wait and which of them need a status write, the jobs counted by
//! phase, and the API calls the decisions call for, each resolved to its job (gangs to create,
//! requests to withdraw, victims to ask, beneficiaries to tell, bonus marks to change). It
//! holds no client, no `Context` and no clock (`pure_layer` checks it): every cycle is a
//! story told in `cycle_plan/stories.rs`. The one piece of leader state it touches, the
//! learned workload history, it reaches through [`Inputs::shapes`], which the shell supplies.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::job_key::JobKey;
use super::reservations;
use super::snapshot::{self, World};
use super::usage::{self, Usage};
use super::waiting::{Published, publish};
use crate::api::{Phase, TrainingJob};
use crate::sched;

/// What the cycle observed, and what it plans with.
pub struct Inputs<'a> {
    /// The caches and the scheduler's memory, as the snapshot reads them (`world.now` is the
    /// cycle's time).
    pub world: World<'a>,
    /// What the core may do (`--consolidation`, victim selection).
    pub options: &'a sched::Options,
    /// The waits the jobs' statuses say: the last cycle's publications.
    pub published: &'a BTreeMap<JobKey, Published>,
    /// The last cycle's usage.
    pub usage: &'a Usage,
    /// The workload's shapes for the fragmentation score, given the snapshot: the supplied
    /// ones, or the learned history's after it recorded the snapshot's arrivals.
    pub shapes: &'a dyn Fn(&sched::Snapshot) -> Vec<sched::WorkloadShape>,
}

/// A victim to ask for a checkpoint, with every preemption that names it, in the core's order.
#[derive(Debug)]
pub struct Ask {
    pub victim: Arc<TrainingJob>,
    pub preemptions: Vec<Arc<sched::Preemption>>,
}

/// What the cycle carries out, in the order it does.
#[derive(Debug)]
pub struct CyclePlan {
    /// Nodes and jobs in the snapshot, and the core's preemptions (for the log).
    pub nodes: usize,
    pub jobs: usize,
    pub preemptions: usize,
    /// Every waiting job's wait as its status is to say it (`waiting::publish`).
    pub waiting: BTreeMap<JobKey, Published>,
    /// Jobs whose published wait changed, or that no longer wait: their reconciler writes it.
    pub reconcile: Vec<JobKey>,
    /// The numbers of the Queue and VirtualCluster status.
    pub usage: Usage,
    /// Whether they differ from the last cycle's (the Queue and VirtualCluster controllers
    /// rewrite their status at once).
    pub usage_changed: bool,
    /// Jobs in the cache by phase, every phase named (the `kubetrain_jobs` metric).
    pub by_phase: BTreeMap<String, i64>,
    /// Gangs to create, in the core's order.
    pub admissions: Vec<(Arc<TrainingJob>, sched::Admission)>,
    /// Checkpoint requests to take back from victims of cancelled preemptions: carried out
    /// before any victim is asked.
    pub withdrawals: Vec<(Arc<TrainingJob>, sched::Cancellation)>,
    /// Victims to ask for a checkpoint, one entry per victim.
    pub asks: Vec<Ask>,
    /// The jobs room is made for, each with its `MakingRoom` Event's note.
    pub making_room: Vec<(Arc<TrainingJob>, String)>,
    /// Jobs whose pods' bonus mark changes, with the new mark: promotions (false), then
    /// demotions (true).
    pub marks: Vec<(Arc<TrainingJob>, bool)>,
    /// GPU reservations for shares on device-plugin nodes.
    pub reservations: reservations::Plan,
}

/// The cycle's plan: the snapshot, the core's decisions and everything that follows from
/// them without the API.
pub fn plan(inputs: &Inputs<'_>) -> CyclePlan {
    let world = &inputs.world;
    let mut snap = snapshot::build(world);
    snap.workload = (inputs.shapes)(&snap);
    let decisions = sched::schedule_with(&snap, inputs.options);
    let usage = usage::compute(&snap, &decisions.usage, world.jobs, &world.refs);
    let estimates = sched::start_estimates(&snap, &decisions);
    let (waiting, reconcile) =
        publications(inputs.published, &decisions.waiting, &estimates, world.now);
    let usage_changed = *inputs.usage != usage;
    let jobs = Jobs::new(world.jobs);
    let sched::Decisions {
        admissions,
        preemptions,
        promotions,
        demotions,
        cancellations,
        ..
    } = decisions;
    let preemptions: Vec<Arc<sched::Preemption>> = preemptions.into_iter().map(Arc::new).collect();
    CyclePlan {
        nodes: snap.nodes.len(),
        jobs: snap.jobs.len(),
        preemptions: preemptions.len(),
        waiting,
        reconcile,
        usage,
        usage_changed,
        by_phase: by_phase(world.jobs),
        admissions: jobs.resolve(admissions, |a| &a.job),
        withdrawals: jobs.resolve(cancellations, |c| &c.job),
        asks: asks(&jobs, &preemptions),
        making_room: making_room(&jobs, &preemptions),
        marks: marks(&jobs, promotions, demotions),
        reservations: reservations::plan(world.pods, world.reservation_namespace),
    }
}

/// The jobs of the cache by the key the core names them with (`snapshot::job_model`).
struct Jobs<'a>(BTreeMap<JobKey, &'a Arc<TrainingJob>>);

impl<'a> Jobs<'a> {
    fn new(jobs: &'a [Arc<TrainingJob>]) -> Self {
        Jobs(jobs.iter().map(|j| (JobKey::of(j), j)).collect())
    }

    fn get(&self, id: &str) -> Option<Arc<TrainingJob>> {
        let key: JobKey = id.parse().ok()?;
        self.0.get(&key).map(|j| Arc::clone(j))
    }

    /// Each item with the job it names (`id`); those of a job not in the cache are dropped.
    fn resolve<T>(&self, items: Vec<T>, id: impl Fn(&T) -> &str) -> Vec<(Arc<TrainingJob>, T)> {
        items
            .into_iter()
            .filter_map(|item| Some((self.get(id(&item))?, item)))
            .collect()
    }
}

/// Every waiting job's wait (and estimated start) as its status is to say it, and the jobs whose status must
/// change: their published wait changed, or they no longer wait.
fn publications(
    published: &BTreeMap<JobKey, Published>,
    waiting: &[sched::Waiting],
    estimates: &BTreeMap<String, sched::StartEstimate>,
    now: i64,
) -> (BTreeMap<JobKey, Published>, Vec<JobKey>) {
    let said: BTreeMap<JobKey, Published> = waiting
        .iter()
        .filter_map(|w| {
            let job: JobKey = w.job.parse().ok()?;
            let estimate = match estimates.get(&w.job) {
                Some(&sched::StartEstimate::At(t)) => Some(t),
                Some(sched::StartEstimate::Unknown) | None => None,
            };
            let said = publish(published.get(&job), &w.reason, w.position, estimate, now);
            Some((job, said))
        })
        .collect();
    let changed = said
        .iter()
        .filter(|(job, now_said)| published.get(*job) != Some(*now_said))
        .map(|(job, _)| job.clone())
        .chain(
            published
                .keys()
                .filter(|job| !said.contains_key(*job))
                .cloned(),
        )
        .collect();
    (said, changed)
}

/// The jobs by phase, every phase named (a job with no status is `Pending`).
fn by_phase(jobs: &[Arc<TrainingJob>]) -> BTreeMap<String, i64> {
    let mut counts: BTreeMap<String, i64> = [
        Phase::Pending,
        Phase::Queued,
        Phase::Starting,
        Phase::Running,
        Phase::Preempting,
        Phase::Retrying,
        Phase::Suspended,
        Phase::Succeeded,
        Phase::Failed,
    ]
    .iter()
    .map(|p| (p.to_string(), 0))
    .collect();
    for j in jobs {
        let phase = j.status.as_ref().map(|s| s.phase).unwrap_or_default();
        *counts.entry(phase.to_string()).or_default() += 1;
    }
    counts
}

/// Every victim is asked at once: a victim's grace period runs from its own request, and the
/// beneficiary waits for the last of them. A job named by two preemptions is asked for them
/// in order. Victims in the order of their names.
fn asks(jobs: &Jobs<'_>, preemptions: &[Arc<sched::Preemption>]) -> Vec<Ask> {
    let mut by_victim: BTreeMap<&str, Vec<Arc<sched::Preemption>>> = BTreeMap::new();
    for preemption in preemptions {
        for victim in &preemption.victims {
            by_victim
                .entry(victim.as_str())
                .or_default()
                .push(Arc::clone(preemption));
        }
    }
    by_victim
        .into_iter()
        .filter_map(|(victim, preemptions)| {
            Some(Ask {
                victim: jobs.get(victim)?,
                preemptions,
            })
        })
        .collect()
}

/// The job the room is made for says so too: its wait reason names the victims only while
/// it waits, and afterwards `kubectl describe` showed nothing of why it waited (an
/// acceptance run). A drain or an unhealthy GPU makes room for no job.
fn making_room(
    jobs: &Jobs<'_>,
    preemptions: &[Arc<sched::Preemption>],
) -> Vec<(Arc<TrainingJob>, String)> {
    preemptions
        .iter()
        .filter(|p| p.reason.for_a_job())
        .filter_map(|p| Some((jobs.get(p.beneficiary.job()?)?, making_room_note(p))))
        .collect()
}

/// Which jobs are bonus follows priority: the pods' mark (and with it the job's status)
/// follows each change of standing.
fn marks(
    jobs: &Jobs<'_>,
    promotions: Vec<String>,
    demotions: Vec<String>,
) -> Vec<(Arc<TrainingJob>, bool)> {
    let promoted = promotions.into_iter().map(|id| (id, false));
    promoted
        .chain(demotions.into_iter().map(|id| (id, true)))
        .filter_map(|(id, bonus)| Some((jobs.get(&id)?, bonus)))
        .collect()
}

/// The beneficiary's Event of a preemption: who was asked to leave, and why.
pub fn making_room_note(p: &sched::Preemption) -> String {
    const NAMED: usize = 5;
    let mut victims = p.victims[..p.victims.len().min(NAMED)].join(", ");
    if p.victims.len() > NAMED {
        victims.push_str(&format!(" and {} more", p.victims.len() - NAMED));
    }
    format!(
        "{} preemption to make room for this job: asked {} job(s) to checkpoint and leave \
         ({victims}); it starts once they are gone.",
        p.reason,
        p.victims.len()
    )
}

#[cfg(test)]
mod stories;
