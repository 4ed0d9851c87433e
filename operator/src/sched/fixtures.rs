//! Builders for tests: small clusters, tenants and jobs in a few lines.

use super::GuaranteeShortfall;
use super::decisions::{Admission, Decisions, PreemptionReason};
use super::model::*;

pub const GIB: u64 = 1 << 30;

pub fn node(name: &str, flavor: &str, gpus: u32, rack: Option<&str>) -> Node {
    Node {
        name: name.into(),
        flavor: Flavor::new(flavor),
        allocatable: Resources {
            cpu_milli: 96_000,
            memory_bytes: 1024 * GIB,
            gpus,
        },
        rack: rack.map(Into::into),
        topology: Topology::default(),
        unhealthy_gpus: vec![],
        schedulable: true,
        foreign: Resources::default(),
        ..Default::default()
    }
}

pub fn vc(name: &str, flavor: &str, gpus: u32) -> VirtualCluster {
    VirtualCluster {
        name: name.into(),
        guarantee: if gpus > 0 {
            vec![FlavorGuarantee {
                flavor: Flavor::new(flavor),
                gpus,
                cells: vec![],
            }]
        } else {
            vec![]
        },
        ..Default::default()
    }
}

pub fn queue(name: &str, vc: &str) -> Queue {
    Queue {
        name: name.into(),
        virtual_cluster: vc.into(),
        ..Default::default()
    }
}

/// A pending job: `replicas` × `gpus` whole GPUs.
pub fn job(id: &str, queue: &str, replicas: u32, gpus: u32) -> Job {
    Job {
        id: id.into(),
        queue: queue.into(),
        priority: 0,
        queued_at: 0,
        user: "alice".into(),
        tasks: vec![Task {
            name: "worker".into(),
            replicas,
            cpu_milli: 1000,
            memory_bytes: GIB,
            gpus: if gpus == 0 {
                GpuDemand::None
            } else {
                GpuDemand::Whole(gpus)
            },
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A pending job of `replicas` fractional replicas.
pub fn share_job(id: &str, queue: &str, replicas: u32, milli: u32) -> Job {
    let mut j = job(id, queue, replicas, 0);
    j.tasks[0].gpus = GpuDemand::Share(MilliGpu(milli));
    j
}

/// Make `j` a running job placed replica by replica on (node, gpus).
pub fn run(
    mut j: Job,
    places: &[(&str, &[u32])],
    bonus: bool,
    started: i64,
    checkpoint: Option<i64>,
) -> Job {
    let share = match j.tasks[0].gpus {
        GpuDemand::Share(m) => Some(m),
        _ => None,
    };
    j.running = Some(Running {
        placement: places
            .iter()
            .enumerate()
            .map(|(i, (n, g))| ReplicaPlacement {
                task: j.tasks[0].name.clone(),
                index: i as u32,
                rank: i as u32,
                node: (*n).into(),
                gpus: g.iter().map(|&x| GpuIndex(x)).collect(),
                share,
            })
            .collect(),
        bonus,
        started_at: started,
        last_checkpoint: checkpoint,
        checkpoint_grace_seconds: 60,
        min_runtime_seconds: 0,
        preempting: false,
        checkpoint_request: None,
    });
    j
}

/// `j` running where a cycle admitted it (placement and bonus flag), since `started`.
pub fn run_admitted(mut j: Job, a: &Admission, started: i64) -> Job {
    j.running = Some(Running {
        placement: a.placement.clone(),
        bonus: a.bonus,
        started_at: started,
        last_checkpoint: None,
        checkpoint_grace_seconds: 60,
        min_runtime_seconds: 0,
        preempting: false,
        checkpoint_request: None,
    });
    j
}

pub fn snapshot(
    now: i64,
    nodes: Vec<Node>,
    vcs: Vec<VirtualCluster>,
    queues: Vec<Queue>,
    jobs: Vec<Job>,
) -> Snapshot {
    Snapshot {
        now,
        nodes,
        virtual_clusters: vcs,
        queues,
        jobs,
        workload: vec![],
    }
}

/// A queue whose higher-priority jobs may preempt its lower-priority ones.
pub fn pqueue(name: &str, vc: &str) -> Queue {
    let mut q = queue(name, vc);
    q.priority_preemption = true;
    q.policy = QueuePolicy::Priority;
    q
}

/// A job of `replicas` × `gpus` with a priority.
pub fn pjob(id: &str, queue: &str, replicas: u32, gpus: u32, priority: i32) -> Job {
    let mut j = job(id, queue, replicas, gpus);
    j.priority = priority;
    j
}

/// Every victim, sorted, for comparisons that do not depend on decision order.
pub fn victims(d: &Decisions) -> Vec<String> {
    let mut v: Vec<String> = d.victims().map(str::to_string).collect();
    v.sort();
    v
}

pub fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// The distinct nodes of a job's admission, sorted; panics when the job is not admitted.
pub fn nodes_of(d: &Decisions, job: &str) -> Vec<String> {
    let a = d
        .admission(job)
        .unwrap_or_else(|| panic!("{job} is not admitted: {d:?}"));
    let mut n: Vec<String> = a.placement.iter().map(|p| p.node.clone()).collect();
    n.sort();
    n.dedup();
    n
}

/// What the VirtualCluster's guarantee of that GPU type lacks, if anything.
pub fn at_risk(d: &Decisions, vc: &str, flavor: &str) -> Option<GuaranteeShortfall> {
    d.usage.virtual_clusters[vc].flavors[&Flavor::new(flavor)]
        .at_risk
        .clone()
}

/// `q` with `share` percent of its VirtualCluster's (or parent's) guarantee.
pub fn shared(mut q: Queue, share: u32) -> Queue {
    q.share = share;
    q
}

/// Whether `job` was not admitted and waits with the reason `code`.
pub fn waits_with(d: &Decisions, job: &str, code: &str) -> bool {
    d.admission(job).is_none() && d.waiting_reason(job).is_some_and(|r| r.code() == code)
}

/// Why `victim` is preempted, if it is.
pub fn reason_of(d: &Decisions, victim: &str) -> Option<PreemptionReason> {
    d.preemptions
        .iter()
        .find(|p| p.victims.iter().any(|v| v == victim))
        .map(|p| p.reason)
}
