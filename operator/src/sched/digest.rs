//! Digest: each pending job checked and turned into what the phases search with
//! ([`Pending`]): its queue and VirtualCluster, one demand per replica, the GPU types that
//! could ever hold it, and the nodes its constraints allow. A job that can never start here
//! waits with the reason it does not fit (`NeverFits`, or `NodesUnavailable` when nodes that
//! take no new work now would hold it).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::cluster::FlavorFacts;
use super::constraints::{self, Mismatch, NodeConstraints};
use super::cycle_state::{Cycle, FilterKey, Pending};
use super::decisions::WaitReason;
use super::ids::{FlavorId, IdVec, JobIdx, NodeId, QueueId, RackId, VcId};
use super::model::{Flavor, GpuDemand, Job, StopPolicy, TopologyLevel};
use super::placement::{Demand, NodeFilter, NodeMask};

/// What a job needs of one GPU type at least, for the "never fits" checks.
struct Shape {
    largest_replica: u32,
    whole: u32,
    level: Option<TopologyLevel>,
}

impl Shape {
    /// Whether a type with these facts could ever hold the job: a node for its largest
    /// replica, and all its GPUs in the type and in one domain of its required level.
    fn fits(&self, x: &FlavorFacts) -> bool {
        self.largest_replica <= x.max_node_gpus
            && self.whole <= x.total_gpus
            && self.whole <= x.max_in(self.level)
    }
}

fn sort_key(d: &Demand) -> (u8, Reverse<u64>, u16, u32) {
    match d.gpu {
        GpuDemand::Whole(k) => (0, Reverse(u64::from(k)), d.task, d.index),
        GpuDemand::Share(m) => (1, Reverse(u64::from(m.0)), d.task, d.index),
        GpuDemand::None => (2, Reverse(0), d.task, d.index),
    }
}

/// One demand per replica of the job, in task order; an invalid job (no replicas, too many
/// tasks, a share outside 1..=999 milli) says why.
fn demands_of(job: &Job) -> Result<Vec<Demand>, WaitReason> {
    let invalid = |m: String| Err(WaitReason::Invalid { message: m });
    if job.tasks.is_empty() || job.tasks.iter().all(|t| t.replicas == 0) {
        return invalid("it has no replicas".into());
    }
    if job.tasks.len() > usize::from(u16::MAX) {
        return invalid("it has too many tasks".into());
    }
    let mut demands = Vec::new();
    for (ti, t) in job.tasks.iter().enumerate() {
        let gpu = match t.gpus {
            GpuDemand::Whole(0) => GpuDemand::None,
            GpuDemand::Share(m) if m.0 == 0 || m.0 >= 1000 => {
                return invalid(format!(
                    "task {} asks for a GPU share of {} milli; a share is 1 to 999",
                    t.name, m.0
                ));
            }
            g => g,
        };
        for index in 0..t.replicas {
            demands.push(Demand {
                gpu,
                cpu: t.cpu_milli,
                mem: t.memory_bytes,
                task: ti as u16,
                index,
            });
        }
    }
    Ok(demands)
}

impl<'a> Cycle<'a> {
    /// Validate pending jobs and turn them into demands; invalid ones get their reason.
    pub(super) fn digest(&mut self) -> IdVec<JobIdx, Option<Pending>> {
        let snap = self.snap;
        // reserve-and-pack: jobs that accept any type try the types fewest jobs ask for first
        let mut asked: BTreeMap<FlavorId, usize> = BTreeMap::new();
        for j in snap.jobs.iter().filter(|j| j.running.is_none()) {
            for f in &j.gpu_types {
                if let Some(&id) = self.c.flavor_by_name.get(f.as_str()) {
                    *asked.entry(id).or_default() += 1;
                }
            }
        }
        let mut any_gpu: Vec<FlavorId> = self
            .c
            .flavor_names
            .ids()
            .filter(|&f| !self.c.flavor_names[f].is_empty() && self.c.facts[f].total_gpus > 0)
            .collect();
        any_gpu.sort_by_key(|&f| {
            (
                asked.get(&f).copied().unwrap_or(0),
                self.c.flavor_names[f].clone(),
            )
        });
        let mut any_cpu: Vec<FlavorId> = self
            .c
            .flavor_names
            .ids()
            .filter(|&f| !self.c.facts[f].nodes.is_empty())
            .collect();
        any_cpu.sort_by_key(|&f| {
            (
                !self.c.flavor_names[f].is_empty(),
                self.c.flavor_names[f].clone(),
            )
        });

        let mut out: IdVec<JobIdx, Option<Pending>> = IdVec::new();
        for (j, job) in snap.jobs.iter().enumerate() {
            let j = JobIdx(j as u32);
            let digested = match job.running {
                Some(_) => None,
                None => self
                    .digest_one(j, &any_gpu, &any_cpu)
                    .map_err(|reason| self.wait(j, reason))
                    .ok(),
            };
            out.push(digested);
        }
        out
    }

    pub(super) fn digest_one(
        &self,
        j: JobIdx,
        any_gpu: &[FlavorId],
        any_cpu: &[FlavorId],
    ) -> Result<Pending, WaitReason> {
        let job = self.snap.job(j);
        let (queue, vc) = self.admitting_queue(job)?;
        let mut demands = demands_of(job)?;
        demands.sort_by_key(sort_key);
        let whole_gpus = |d: &Demand| match d.gpu {
            GpuDemand::Whole(k) => k,
            _ => 0,
        };
        let whole: u32 = demands.iter().map(whole_gpus).sum();
        let largest_replica = demands.iter().map(whole_gpus).max().unwrap_or(0);
        let uses_gpu = demands.iter().any(|d| d.gpu != GpuDemand::None);
        let mut flavors = self.acceptable_flavors(job, uses_gpu, any_gpu, any_cpu);
        let level = job.topology.required;
        let shape = Shape {
            largest_replica,
            whole,
            level,
        };
        if flavors.is_empty() || !flavors.iter().any(|&f| shape.fits(&self.c.facts[f])) {
            return Err(self.never_fits(job, &flavors, &shape, uses_gpu));
        }
        flavors.retain(|&f| shape.fits(&self.c.facts[f]));
        self.fits_a_node(&demands, &flavors)?;
        let filter = self.node_filter(job, &mut flavors)?;
        let nvlink = largest_replica >= 2
            || job.topology.required == Some(TopologyLevel::GpuGroup)
            || job.topology.preferred == Some(TopologyLevel::GpuGroup);
        Ok(Pending {
            job: j,
            queue,
            vc,
            milli: job.gpu_milli(),
            demands,
            whole,
            largest_replica,
            flavors,
            nvlink,
            filter,
        })
    }

    /// The job's queue and its VirtualCluster, when the queue admits jobs now: it exists,
    /// belongs to a VirtualCluster, and neither it (nor a queue above it) nor the
    /// VirtualCluster is being deleted.
    fn admitting_queue(&self, job: &Job) -> Result<(QueueId, VcId), WaitReason> {
        let invalid = |m: String| Err(WaitReason::Invalid { message: m });
        let Some(&queue) = self.t.queue_by_name.get(&job.queue) else {
            return invalid(format!("queue {} does not exist", job.queue));
        };
        let Some(vc) = self.t.queue_vc[queue] else {
            return invalid(format!(
                "queue {} has no valid VirtualCluster or parent",
                job.queue
            ));
        };
        if let Some(&closed) = self.t.chain[queue]
            .iter()
            .find(|&&q| self.snap.queue(q).terminating)
        {
            return Err(WaitReason::QueueTerminating {
                queue: self.snap.queue(closed).name.clone(),
            });
        }
        // After the queue's own deletion: the queue is the nearer thing to fix.
        if self.t.vc_terminating[vc] {
            return Err(WaitReason::VirtualClusterTerminating {
                virtual_cluster: self.t.vc_names[vc].clone(),
            });
        }
        // Last: a hold is lifted by a patch, a deletion never.
        if let Some((holder, policy)) = self.held_by(queue) {
            return Err(WaitReason::QueueHeld {
                queue: self.snap.queue(holder).name.clone(),
                policy,
            });
        }
        Ok((queue, vc))
    }

    /// The queue that holds `queue` (it, or the nearest above it with the strongest
    /// `stopPolicy` of its chain), and that policy; `None` when nothing holds it.
    pub(super) fn held_by(&self, queue: QueueId) -> Option<(QueueId, StopPolicy)> {
        let strongest = self.t.chain[queue]
            .iter()
            .map(|&q| self.snap.queue(q).stop)
            .max()?;
        let holder = self.t.chain[queue]
            .iter()
            .copied()
            .find(|&q| self.snap.queue(q).stop == strongest)?;
        (strongest != StopPolicy::None).then_some((holder, strongest))
    }

    /// The GPU types the job may use, in the cluster's order of types (never the order the
    /// user wrote them).
    fn acceptable_flavors(
        &self,
        job: &Job,
        uses_gpu: bool,
        any_gpu: &[FlavorId],
        any_cpu: &[FlavorId],
    ) -> Vec<FlavorId> {
        if !uses_gpu {
            // A job that takes no GPU still keeps off the GPU types it did not list: nodes
            // without GPUs, or of a listed type.
            any_cpu
                .iter()
                .copied()
                .filter(|&f| {
                    let name = self.c.flavor_names[f].as_str();
                    job.gpu_types.is_empty()
                        || name.is_empty()
                        || job.gpu_types.iter().any(|t| t.as_str() == name)
                })
                .collect()
        } else if job.gpu_types.is_empty() {
            any_gpu.to_vec()
        } else {
            // A list of acceptable types is a set: taken in the cluster's order of them (as
            // for a job that accepts any type), never in the order the user wrote them.
            any_gpu
                .iter()
                .copied()
                .filter(|&f| {
                    let name = self.c.flavor_names[f].as_str();
                    job.gpu_types.iter().any(|t| t.as_str() == name)
                })
                .collect()
        }
    }

    /// Why a job that no acceptable GPU type can hold waits: the nodes of its types that
    /// take no new work now would hold it (`NodesUnavailable`), or it never fits, naming
    /// what it is too large for.
    fn never_fits(
        &self,
        job: &Job,
        flavors: &[FlavorId],
        shape: &Shape,
        uses_gpu: bool,
    ) -> WaitReason {
        let Shape {
            largest_replica,
            whole,
            level,
        } = *shape;
        if flavors.is_empty() {
            if let Some(r) = uses_gpu
                .then(|| self.nodes_unavailable(job, shape))
                .flatten()
            {
                return r;
            }
            return WaitReason::NeverFits {
                message: format!(
                    "no schedulable node has GPUs of type {}; list other spec.gpuTypes, or it starts once such a node joins",
                    job.gpu_types
                        .iter()
                        .map(Flavor::to_string)
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
        }
        if let Some(r) = self.nodes_unavailable(job, shape) {
            return r;
        }
        // The most any acceptable type offers, to name what the job is too large for;
        // counted only for such a job, not on every job's way through each cycle.
        let most = |of: &dyn Fn(&FlavorFacts) -> u32| {
            flavors
                .iter()
                .map(|&f| of(&self.c.facts[f]))
                .max()
                .unwrap_or(0)
        };
        let most_node = most(&|x| x.max_node_gpus);
        let most_total = most(&|x| x.total_gpus);
        let most_in_level = most(&|x| x.max_in(level));
        WaitReason::NeverFits {
            message: if largest_replica > most_node {
                format!(
                    "a replica needs {largest_replica} GPUs and no node of the acceptable GPU types has more than {most_node}; use more replicas of fewer GPUs each"
                )
            } else if whole > most_total {
                format!(
                    "the job needs {whole} GPUs and no acceptable GPU type has more than {most_total} in the whole cluster; ask for fewer GPUs, or allow more spec.gpuTypes"
                )
            } else if let Some(l) = level.filter(|_| whole > most_in_level) {
                format!(
                    "the job needs {whole} GPUs within one {l} (topology.required) and no {l} of the acceptable GPU types has more than {most_in_level}; ask for fewer GPUs, or loosen topology.required"
                )
            } else {
                format!(
                    "no one acceptable GPU type has both a node for a replica of {largest_replica} GPUs and room for all {whole}; ask for fewer GPUs, or allow more spec.gpuTypes"
                )
            },
        }
    }

    /// Before a job is told it never fits: whether it would, were the nodes of its GPU
    /// types that take no new work now (cordoned, not ready) back. A cordon is maintenance:
    /// a job that needs the cordoned node was told "can never run on this cluster", with a
    /// Warning, and Argo CD read it Degraded (an acceptance run). Counted only for such a
    /// job, over the nodes of its types.
    fn nodes_unavailable(&self, job: &Job, shape: &Shape) -> Option<WaitReason> {
        let c = &self.c;
        let acceptable = |f: FlavorId| {
            let name = c.flavor_names[f].as_str();
            !name.is_empty()
                && (job.gpu_types.is_empty() || job.gpu_types.iter().any(|t| t.as_str() == name))
        };
        let mut all: IdVec<FlavorId, FlavorFacts> =
            IdVec::filled(FlavorFacts::default(), c.flavor_names.len());
        let mut racks: BTreeMap<(FlavorId, RackId), u32> = BTreeMap::new();
        let mut away: Vec<&str> = Vec::new();
        for n in c.nodes.iter().filter(|n| acceptable(n.flavor)) {
            let healthy = n.healthy_gpus();
            if !n.schedulable && healthy > 0 {
                away.push(self.snap.nodes[n.src as usize].name.as_str());
            }
            all[n.flavor].count(n);
            if let Some(r) = n.rack {
                *racks.entry((n.flavor, r)).or_insert(0) += healthy;
            }
        }
        for (&(f, _), &gpus) in &racks {
            all[f].max_rack_gpus = all[f].max_rack_gpus.max(gpus);
        }
        (!away.is_empty() && all.iter().any(|x| shape.fits(x)))
            .then(|| WaitReason::nodes_unavailable(away))
    }

    /// `NeverFits` when a replica asks for more CPU or memory than any one node of the
    /// acceptable types has: it would wait for GPUs to free up for ever, told it waits for
    /// room (kube-scheduler refuses every node for it as well).
    fn fits_a_node(&self, demands: &[Demand], flavors: &[FlavorId]) -> Result<(), WaitReason> {
        let most = |of: fn(&FlavorFacts) -> u64| {
            flavors
                .iter()
                .map(|&f| of(&self.c.facts[f]))
                .max()
                .unwrap_or(0)
        };
        let cpu = demands.iter().map(|d| d.cpu).max().unwrap_or(0);
        let mem = demands.iter().map(|d| d.mem).max().unwrap_or(0);
        let (most_cpu, most_mem) = (most(|x| x.max_node_cpu), most(|x| x.max_node_mem));
        // A type whose nodes report no CPU or memory at all tells nothing.
        let message = if most_cpu > 0 && cpu > most_cpu {
            format!(
                "a replica requests {} CPUs and no node of the acceptable GPU types has more \
                 than {} allocatable; request less CPU per replica",
                cores(cpu),
                cores(most_cpu)
            )
        } else if most_mem > 0 && mem > most_mem {
            format!(
                "a replica requests {} of memory and no node of the acceptable GPU types has \
                 more than {} allocatable; request less memory per replica",
                gib(mem),
                gib(most_mem)
            )
        } else {
            return Ok(());
        };
        Err(WaitReason::NeverFits { message })
    }

    /// The nodes each task may use, when node constraints rule any out; keeps only the
    /// flavors where every task has a node, and when none is left, waits with `NeverFits`
    /// naming what kept the first such task out, counted per node as kube-scheduler does.
    fn node_filter(
        &self,
        job: &'a Job,
        flavors: &mut Vec<FlavorId>,
    ) -> Result<Option<Rc<NodeFilter>>, WaitReason> {
        if !self.any_taints && job.tasks.iter().all(|t| t.constraints.only_tolerations()) {
            return Ok(None);
        }
        let per_task: Vec<Option<NodeMask>> = job
            .tasks
            .iter()
            .map(|t| self.mask(&t.constraints))
            .collect();
        if per_task.iter().all(Option::is_none) {
            return Ok(None);
        }
        let acceptable = flavors.clone();
        flavors.retain(|&f| {
            job.tasks
                .iter()
                .zip(&per_task)
                .all(|(t, m)| t.replicas == 0 || self.has_node(m, f))
        });
        if flavors.is_empty() {
            return Err(self.no_node_for_a_task(job, &per_task, &acceptable));
        }
        Ok(Some(self.shared_filter(per_task, flavors)))
    }

    /// Whether a task with `mask` has a node of flavor `f`.
    fn has_node(&self, mask: &Option<NodeMask>, f: FlavorId) -> bool {
        mask.as_ref()
            .is_none_or(|m| self.c.facts[f].nodes.iter().any(|&n| m[n]))
    }

    /// Why a job, one of whose tasks has no node of any `acceptable` flavor, waits: the nodes
    /// that take no new work now would hold every task (`NodesUnavailable`), or it never fits.
    fn no_node_for_a_task(
        &self,
        job: &Job,
        per_task: &[Option<NodeMask>],
        acceptable: &[FlavorId],
    ) -> WaitReason {
        let away = self.away_nodes_for_tasks(job, per_task, acceptable);
        if !away.is_empty() {
            return WaitReason::nodes_unavailable(away);
        }
        let (task, _) = job
            .tasks
            .iter()
            .zip(per_task)
            .find(|(t, m)| t.replicas > 0 && acceptable.iter().all(|&f| !self.has_node(m, f)))
            .or_else(|| job.tasks.iter().zip(per_task).find(|(t, _)| t.replicas > 0))
            .expect("a job with replicas");
        let mut counts: BTreeMap<Mismatch, u32> = BTreeMap::new();
        for &f in acceptable {
            for &n in &self.c.facts[f].nodes {
                let node = &self.snap.nodes[self.c.nodes[n].src as usize];
                if let Err(m) = task.constraints.check(node) {
                    *counts.entry(m).or_default() += 1;
                }
            }
        }
        WaitReason::NeverFits {
            message: format!(
                "no node of the acceptable GPU types takes the pods of task {}: {}; change the task's nodeSelector, node affinity or tolerations, or the nodes: the job is placed once a node accepts its pods",
                task.name,
                if counts.is_empty() {
                    "its tasks need nodes no single GPU type has".to_string()
                } else {
                    constraints::summarize(&counts)
                }
            ),
        }
    }

    /// Nodes of an acceptable type that take no new work now (cordoned, not ready) and take
    /// a task's pods, on the types where, with them back, every task of the job has a node.
    fn away_nodes_for_tasks(
        &self,
        job: &Job,
        per_task: &[Option<NodeMask>],
        acceptable: &[FlavorId],
    ) -> Vec<&'a str> {
        let snap: &'a super::model::Snapshot = self.snap;
        let passes = |m: &Option<NodeMask>, n: NodeId| m.as_ref().is_none_or(|m| m[n]);
        let mut away: Vec<&str> = Vec::new();
        for &f in acceptable {
            let of_type = || {
                self.c
                    .nodes
                    .ids()
                    .filter(move |&n| self.c.nodes[n].flavor == f)
            };
            let every_task = job
                .tasks
                .iter()
                .zip(per_task)
                .all(|(t, m)| t.replicas == 0 || of_type().any(|n| passes(m, n)));
            if every_task {
                away.extend(
                    of_type()
                        .filter(|&n| !self.c.nodes[n].schedulable)
                        .filter(|&n| per_task.iter().any(|m| passes(m, n)))
                        .map(|n| snap.nodes[self.c.nodes[n].src as usize].name.as_str()),
                );
            }
        }
        away
    }

    /// The node filter of these masks on `flavors`. Jobs of one template share their masks
    /// (the same `Rc`s) and usually their GPU types: their filter is built once per cycle
    /// and found by identity, not by comparing node lists.
    fn shared_filter(
        &self,
        per_task: Vec<Option<NodeMask>>,
        flavors: &[FlavorId],
    ) -> Rc<NodeFilter> {
        let key: FilterKey = (
            per_task
                .iter()
                .map(|m| m.as_ref().map(|m| Rc::as_ptr(m) as usize))
                .collect(),
            flavors.to_vec(),
        );
        if let Some(f) = self.filters.borrow().get(&key) {
            return f.clone();
        }
        let mut nodes: Vec<NodeId> = flavors
            .iter()
            .flat_map(|&f| self.c.facts[f].nodes.iter().copied())
            .filter(|&n| per_task.iter().any(|m| m.as_ref().is_none_or(|m| m[n])))
            .collect();
        nodes.sort_unstable();
        let mut filters = self.filters.borrow_mut();
        let f = Rc::new(NodeFilter {
            per_task,
            nodes,
            id: filters.len(),
        });
        filters.insert(key, f.clone());
        f
    }

    /// Which nodes (by index) a replica with these constraints may use; None when all.
    fn mask(&self, c: &'a NodeConstraints) -> Option<NodeMask> {
        if let Some(m) = self.masks.borrow().get(c) {
            return m.clone();
        }
        let mask: IdVec<NodeId, bool> = self
            .c
            .nodes
            .iter()
            .map(|n| c.check(&self.snap.nodes[n.src as usize]).is_ok())
            .collect();
        let m = (!mask.iter().all(|&b| b)).then(|| Rc::new(mask));
        self.masks.borrow_mut().insert(c, m.clone());
        m
    }
}

/// Milli-CPUs as cores: `200`, `0.5`.
fn cores(milli: u64) -> String {
    if milli.is_multiple_of(1000) {
        (milli / 1000).to_string()
    } else {
        format!("{:.3}", milli as f64 / 1000.0)
            .trim_end_matches('0')
            .to_string()
    }
}

/// Bytes as GiB: `2048Gi`, `0.5Gi`.
fn gib(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let g = format!("{:.2}", bytes as f64 / GIB);
    format!("{}Gi", g.trim_end_matches('0').trim_end_matches('.'))
}
