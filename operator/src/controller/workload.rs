//! The workload's replica-shape distribution, for the fragmentation score
//! ([`crate::sched`]'s `frag`, after FGD): FGD weighs a node's fragments by the shapes the
//! cluster *receives*, and the snapshot's own jobs miss exactly the shapes that no longer fit.
//!
//! Two sources, in order:
//! - **Supplied** (`--workload-shapes FILE`): a YAML or JSON list of shapes with counts, read
//!   once at start ([`read_shapes`]); nothing is learned then.
//! - **Learned**: a [`History`] of the last N arrivals (`--workload-history`, 0: off). An
//!   arrival is a TrainingJob, by UID, that a scheduling cycle sees for the first time; each
//!   of its GPU tasks adds its replica shape `replicas` times. The leader keeps the history
//!   in the ConfigMap [`CONFIG_MAP`] ([`store`], `config_store.rs`) so a restart or failover
//!   resumes it.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::{Client, ResourceExt};
use serde::{Deserialize, Serialize};
use tracing::debug;

use super::config_store::{self, ConfigStore, Kept};
use super::job_key::JobKey;
use super::resources::parse_milli;
use crate::api::TrainingJob;
use crate::sched::{self, Flavor, GpuDemand, MilliGpu, WorkloadShape};

/// The ConfigMap, in the operator's namespace, that keeps the learned history.
pub const CONFIG_MAP: &str = "kubetrain-workload-history";
/// Its data key.
pub const DATA_KEY: &str = "history.json";
/// Arrivals kept by default.
pub const DEFAULT_HISTORY: u32 = 2000;
/// Most arrivals kept: about 50 bytes each keeps the ConfigMap well under its 1 MiB.
pub const MAX_HISTORY: u32 = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    // The cause is in the message, not a `source`: logged and printed once.
    #[error("reading workload shapes from {file}: {error}")]
    Read {
        file: PathBuf,
        error: std::io::Error,
    },
    #[error("{file} is not a YAML or JSON list of workload shapes: {error}")]
    Parse {
        file: PathBuf,
        error: serde_norway::Error,
    },
    #[error("{file}, shape {entry} (counting from 1): {reason}")]
    Shape {
        file: PathBuf,
        entry: usize,
        reason: String,
    },
    #[error("{0} lists no shapes (leave --workload-shapes out to learn them from arrivals)")]
    Empty(PathBuf),
    #[error("the stored workload history is unreadable: {0}")]
    Stored(String),
}

/// Where the workload's shapes come from, and how many arrivals are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadSettings {
    /// Shapes from configuration; when not empty, nothing is learned.
    pub supplied: Vec<WorkloadShape>,
    /// Arrivals in the learned history; 0: none learned.
    pub history: u32,
    /// Least time between two writes of the history's ConfigMap.
    pub save_interval: Duration,
}

impl Default for WorkloadSettings {
    fn default() -> Self {
        WorkloadSettings {
            supplied: Vec::new(),
            history: DEFAULT_HISTORY,
            save_interval: Duration::from_secs(60),
        }
    }
}

impl WorkloadSettings {
    /// Whether the history is learned (and so loaded and saved).
    pub fn learns(&self) -> bool {
        self.supplied.is_empty() && self.history > 0
    }
}

/// One replica shape, without a count.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Shape {
    gpus: GpuDemand,
    cpu_milli: u64,
    memory_bytes: u64,
    gpu_types: Vec<Flavor>,
}

impl Shape {
    /// The job's GPU tasks' shapes and replicas (one entry per distinct shape).
    fn of_job(job: &sched::Job) -> Vec<(Shape, u32)> {
        let mut parts: BTreeMap<Shape, u32> = BTreeMap::new();
        for t in &job.tasks {
            if t.gpus.milli() == 0 || t.replicas == 0 {
                continue;
            }
            let shape = Shape {
                gpus: t.gpus,
                cpu_milli: t.cpu_milli,
                memory_bytes: t.memory_bytes,
                gpu_types: job.gpu_types.clone(),
            };
            let n = parts.entry(shape).or_default();
            *n = n.saturating_add(t.replicas);
        }
        parts.into_iter().collect()
    }
}

/// One arrival: a job's UID and its replica shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Arrival {
    uid: String,
    parts: Vec<(Shape, u32)>,
}

/// The last `capacity` arrivals and the replica count of each shape among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    capacity: usize,
    /// Oldest first.
    window: VecDeque<Arrival>,
    /// UIDs of the arrivals in the window.
    seen: HashSet<String>,
    /// UIDs that left the window while their job may still exist: a long-running job is one
    /// arrival, not one more every time the window passes it. Pruned to the jobs that exist.
    aged_out: HashSet<String>,
    counts: BTreeMap<Shape, u64>,
    /// Changed since the last `take_changed`.
    changed: bool,
}

impl History {
    pub fn new(capacity: u32) -> Self {
        History {
            capacity: capacity as usize,
            window: VecDeque::new(),
            seen: HashSet::new(),
            aged_out: HashSet::new(),
            counts: BTreeMap::new(),
            changed: false,
        }
    }

    /// Arrivals in the window.
    pub fn len(&self) -> usize {
        self.window.len()
    }

    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    /// Records the job as an arrival unless it was seen before; false when it was, or when it
    /// asks for no GPUs (it adds no shape).
    pub fn record(&mut self, uid: &str, job: &sched::Job) -> bool {
        if self.capacity == 0 || self.seen.contains(uid) || self.aged_out.contains(uid) {
            return false;
        }
        let parts = Shape::of_job(job);
        if parts.is_empty() {
            return false;
        }
        self.push(Arrival {
            uid: uid.to_string(),
            parts,
        });
        self.changed = true;
        true
    }

    fn push(&mut self, arrival: Arrival) {
        while self.window.len() >= self.capacity {
            let Some(old) = self.window.pop_front() else {
                break;
            };
            for (shape, n) in &old.parts {
                if let Some(c) = self.counts.get_mut(shape) {
                    *c = c.saturating_sub(u64::from(*n));
                    if *c == 0 {
                        self.counts.remove(shape);
                    }
                }
            }
            self.seen.remove(&old.uid);
            self.aged_out.insert(old.uid);
        }
        for (shape, n) in &arrival.parts {
            *self.counts.entry(shape.clone()).or_default() += u64::from(*n);
        }
        self.seen.insert(arrival.uid.clone());
        self.window.push_back(arrival);
    }

    /// Forgets the aged-out UIDs of jobs that no longer exist.
    pub fn retain_aged_out(&mut self, exists: impl Fn(&str) -> bool) {
        self.aged_out.retain(|uid| exists(uid));
    }

    /// The distribution: each shape in the window with its replica count.
    pub fn shapes(&self) -> Vec<WorkloadShape> {
        self.counts
            .iter()
            .map(|(s, &count)| WorkloadShape {
                gpus: s.gpus,
                cpu_milli: s.cpu_milli,
                memory_bytes: s.memory_bytes,
                gpu_types: s.gpu_types.clone(),
                count,
            })
            .collect()
    }

    /// The stored form: a table of distinct shapes, and the arrivals, oldest first, as
    /// `[uid, shape index, replicas]` rows (one per shape of an arrival).
    pub fn to_stored(&self) -> Stored {
        let index: BTreeMap<&Shape, usize> = self
            .counts
            .keys()
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let mut aged_out: Vec<String> = self.aged_out.iter().cloned().collect();
        aged_out.sort_unstable();
        Stored {
            version: 1,
            shapes: self.counts.keys().map(StoredShape::of).collect(),
            arrivals: self
                .window
                .iter()
                .flat_map(|a| {
                    a.parts
                        .iter()
                        .map(|(s, n)| (a.uid.clone(), index.get(s).copied().unwrap_or(0), *n))
                })
                .collect(),
            aged_out,
        }
    }

    /// The history of `capacity` arrivals from its stored form; of more arrivals than that,
    /// the newest are kept.
    pub fn from_stored(capacity: u32, stored: Stored) -> Result<History, WorkloadError> {
        if stored.version != 1 {
            return Err(WorkloadError::Stored(format!(
                "version {} is not 1",
                stored.version
            )));
        }
        let shapes = stored
            .shapes
            .iter()
            .map(StoredShape::shape)
            .collect::<Result<Vec<_>, _>>()
            .map_err(WorkloadError::Stored)?;
        let mut history = History::new(capacity);
        history.aged_out = stored.aged_out.into_iter().collect();
        if capacity == 0 {
            return Ok(history);
        }
        let mut current: Option<Arrival> = None;
        for (uid, shape, n) in stored.arrivals {
            let shape = shapes.get(shape).cloned().ok_or_else(|| {
                WorkloadError::Stored(format!(
                    "arrival {uid} names shape {shape} of {}",
                    shapes.len()
                ))
            })?;
            match current.as_mut() {
                Some(a) if a.uid == uid => a.parts.push((shape, n)),
                _ => {
                    if let Some(a) = current.replace(Arrival {
                        uid,
                        parts: vec![(shape, n)],
                    }) {
                        history.push(a);
                    }
                }
            }
        }
        if let Some(a) = current {
            history.push(a);
        }
        Ok(history)
    }

    pub fn from_json(capacity: u32, text: &str) -> Result<History, WorkloadError> {
        let stored: Stored =
            serde_json::from_str(text).map_err(|e| WorkloadError::Stored(e.to_string()))?;
        History::from_stored(capacity, stored)
    }
}

impl Kept for History {
    fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn mark_changed(&mut self) {
        self.changed = true;
    }

    fn to_json(&self) -> String {
        // A struct of strings and integers always serializes.
        serde_json::to_string(&self.to_stored()).unwrap_or_default()
    }
}

/// The history as the ConfigMap keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    pub version: u32,
    pub shapes: Vec<StoredShape>,
    /// `[uid, index into shapes, replicas]`, oldest arrival first.
    pub arrivals: Vec<(String, usize, u32)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aged_out: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredShape {
    /// Milli-GPUs: below 1000 a share, else whole GPUs.
    pub gpu_milli: u64,
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_types: Vec<String>,
}

impl StoredShape {
    fn of(s: &Shape) -> StoredShape {
        StoredShape {
            gpu_milli: s.gpus.milli(),
            cpu_milli: s.cpu_milli,
            memory_bytes: s.memory_bytes,
            gpu_types: s.gpu_types.iter().map(|f| f.0.clone()).collect(),
        }
    }

    fn shape(&self) -> Result<Shape, String> {
        Ok(Shape {
            gpus: gpu_demand(self.gpu_milli)?,
            cpu_milli: self.cpu_milli,
            memory_bytes: self.memory_bytes,
            gpu_types: self.gpu_types.iter().cloned().map(Flavor::new).collect(),
        })
    }
}

/// Milli-GPUs as a demand: a share below one GPU, or whole GPUs.
fn gpu_demand(milli: u64) -> Result<GpuDemand, String> {
    match milli {
        0 => Err("a shape asks for no GPUs".into()),
        m if m < 1000 => Ok(GpuDemand::Share(MilliGpu(m as u32))),
        m if m.is_multiple_of(1000) => Ok(GpuDemand::Whole(
            u32::try_from(m / 1000).map_err(|_| format!("{m} milli-GPUs is too many"))?,
        )),
        m => Err(format!(
            "{m} milli-GPUs is neither a share of one GPU (below 1) nor whole GPUs"
        )),
    }
}

/// Records the snapshot's jobs that the history has not seen as arrivals (`jobs`: every
/// TrainingJob in the cache, for their UIDs; the snapshot names a job `namespace/name`), and
/// forgets aged-out UIDs of jobs that are gone. Returns how many arrived.
pub fn learn(history: &mut History, snap: &sched::Snapshot, jobs: &[Arc<TrainingJob>]) -> usize {
    let uids: BTreeMap<String, String> = jobs
        .iter()
        .filter_map(|j| Some((JobKey::of(j).to_string(), j.uid()?)))
        .collect();
    let mut arrived = 0;
    for job in &snap.jobs {
        if let Some(uid) = uids.get(&job.id)
            && history.record(uid, job)
        {
            debug!(job = %job.id, %uid, "arrival recorded in the workload history");
            arrived += 1;
        }
    }
    let exists: HashSet<&str> = uids.values().map(String::as_str).collect();
    history.retain_aged_out(|uid| exists.contains(uid));
    arrived
}

/// One entry of a `--workload-shapes` file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShapeEntry {
    gpus: Amount,
    #[serde(default)]
    cpu: Option<Amount>,
    #[serde(default)]
    memory: Option<Amount>,
    #[serde(default)]
    gpu_types: Vec<String>,
    #[serde(default = "one")]
    count: u64,
}

fn one() -> u64 {
    1
}

/// A number or a Kubernetes quantity (`8`, `0.5`, `"500m"`, `"32Gi"`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Int(u64),
    Float(f64),
    Text(String),
}

impl Amount {
    /// Thousandths of the unit.
    fn milli(&self) -> Result<u64, String> {
        match self {
            Amount::Int(n) => n
                .checked_mul(1000)
                .ok_or_else(|| format!("{n} is too large")),
            Amount::Float(f) if f.is_finite() && *f >= 0.0 => Ok((f * 1000.0).round() as u64),
            Amount::Float(f) => Err(format!("{f} is not an amount")),
            Amount::Text(s) => parse_milli(s)
                .map_err(|e| e.to_string())
                .and_then(|m| u64::try_from(m).map_err(|_| format!("{s} is too large"))),
        }
    }
}

impl ShapeEntry {
    fn shape(&self) -> Result<WorkloadShape, String> {
        let gpus = self
            .gpus
            .milli()
            .and_then(gpu_demand)
            .map_err(|e| format!("gpus: {e}"))?;
        let cpu_milli = match &self.cpu {
            Some(a) => a.milli().map_err(|e| format!("cpu: {e}"))?,
            None => 0,
        };
        let memory_bytes = match &self.memory {
            Some(a) => a.milli().map_err(|e| format!("memory: {e}"))? / 1000,
            None => 0,
        };
        if self.count == 0 {
            return Err("count must be at least 1".into());
        }
        Ok(WorkloadShape {
            gpus,
            cpu_milli,
            memory_bytes,
            gpu_types: self.gpu_types.iter().cloned().map(Flavor::new).collect(),
            count: self.count,
        })
    }
}

/// The shapes of `text`, a YAML (or JSON) list of `{gpus, cpu, memory, gpuTypes, count}`;
/// `file` names it in errors.
pub fn parse_shapes(file: &Path, text: &str) -> Result<Vec<WorkloadShape>, WorkloadError> {
    let entries: Vec<serde_norway::Value> =
        serde_norway::from_str(text).map_err(|error| WorkloadError::Parse {
            file: file.to_path_buf(),
            error,
        })?;
    if entries.is_empty() {
        return Err(WorkloadError::Empty(file.to_path_buf()));
    }
    entries
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_norway::from_value::<ShapeEntry>(v)
                .map_err(|e| e.to_string())
                .and_then(|e| e.shape())
                .map_err(|reason| WorkloadError::Shape {
                    file: file.to_path_buf(),
                    entry: i + 1,
                    reason,
                })
        })
        .collect()
}

/// The shapes of the file `--workload-shapes` names.
pub fn read_shapes(file: &Path) -> Result<Vec<WorkloadShape>, WorkloadError> {
    let text = std::fs::read_to_string(file).map_err(|error| WorkloadError::Read {
        file: file.to_path_buf(),
        error,
    })?;
    parse_shapes(file, &text)
}

/// The ConfigMap that keeps the history.
pub fn store(client: Client, namespace: &str) -> ConfigStore {
    ConfigStore::new(client, namespace, CONFIG_MAP, DATA_KEY)
}

/// The stored history, or an empty one when there is none or it cannot be read: the
/// distribution only tunes placement, so it never stops the operator.
pub async fn load(store: &ConfigStore, capacity: u32) -> History {
    let h = config_store::load_or(
        store,
        |text| History::from_json(capacity, text),
        || History::new(capacity),
    )
    .await;
    debug!(
        configmap = CONFIG_MAP,
        arrivals = h.len(),
        "workload history"
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{Job, Task};

    fn job(id: &str, tasks: &[(GpuDemand, u32)], types: &[&str]) -> Job {
        Job {
            id: id.into(),
            tasks: tasks
                .iter()
                .enumerate()
                .map(|(i, &(gpus, replicas))| Task {
                    name: format!("t{i}"),
                    replicas,
                    cpu_milli: 4000,
                    memory_bytes: 1 << 30,
                    gpus,
                    ..Default::default()
                })
                .collect(),
            gpu_types: types.iter().map(|t| Flavor::new(*t)).collect(),
            queue: "q".into(),
            priority: 0,
            queued_at: 0,
            user: "u".into(),
            topology: Default::default(),
            retries: 0,
            preemptions: 0,
            predicted_duration_seconds: None,
            returning: false,
            running: None,
        }
    }

    fn counts(h: &History) -> Vec<(GpuDemand, u64)> {
        h.shapes().iter().map(|s| (s.gpus, s.count)).collect()
    }

    #[test]
    fn an_arrival_adds_its_gpu_tasks_replicas() {
        let mut h = History::new(10);
        let j = job(
            "ns/a",
            &[
                (GpuDemand::Whole(8), 4),
                (GpuDemand::None, 1),
                (GpuDemand::Share(MilliGpu(500)), 2),
            ],
            &["A100"],
        );
        assert!(h.record("u1", &j));
        assert_eq!(
            counts(&h),
            vec![
                (GpuDemand::Whole(8), 4),
                (GpuDemand::Share(MilliGpu(500)), 2)
            ]
        );
        let s = &h.shapes()[0];
        assert_eq!((s.cpu_milli, s.memory_bytes), (4000, 1 << 30));
        assert_eq!(s.gpu_types, vec![Flavor::new("A100")]);
        // A job without GPUs adds nothing, and is no arrival.
        assert!(!h.record("u2", &job("ns/cpu", &[(GpuDemand::None, 3)], &[])));
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn a_job_seen_again_is_no_new_arrival() {
        let mut h = History::new(10);
        let j = job("ns/a", &[(GpuDemand::Whole(1), 2)], &[]);
        assert!(h.record("u1", &j));
        assert!(h.take_changed());
        assert!(!h.record("u1", &j));
        assert!(!h.take_changed());
        assert_eq!(counts(&h), vec![(GpuDemand::Whole(1), 2)]);
    }

    #[test]
    fn the_window_rolls_and_keeps_counts_of_the_newest() {
        let mut h = History::new(2);
        h.record("u1", &job("ns/a", &[(GpuDemand::Whole(8), 1)], &[]));
        h.record("u2", &job("ns/b", &[(GpuDemand::Whole(1), 3)], &[]));
        h.record("u3", &job("ns/c", &[(GpuDemand::Whole(1), 1)], &[]));
        assert_eq!(h.len(), 2);
        // u1's 8-GPU shape left with it.
        assert_eq!(counts(&h), vec![(GpuDemand::Whole(1), 4)]);
        // u1 still runs: seeing it again does not make it an arrival again...
        assert!(!h.record("u1", &job("ns/a", &[(GpuDemand::Whole(8), 1)], &[])));
        // ...until it is gone (and its UID with it).
        h.retain_aged_out(|uid| uid != "u1");
        assert!(h.record("u1", &job("ns/a", &[(GpuDemand::Whole(8), 1)], &[])));
        assert_eq!(
            counts(&h),
            vec![(GpuDemand::Whole(1), 1), (GpuDemand::Whole(8), 1)]
        );
    }

    #[test]
    fn equal_shapes_of_different_jobs_add_up() {
        let mut h = History::new(100);
        for i in 0..10 {
            let j = job(&format!("ns/j{i}"), &[(GpuDemand::Whole(2), 2)], &[]);
            h.record(&format!("u{i}"), &j);
        }
        h.record("x", &job("ns/x", &[(GpuDemand::Whole(2), 1)], &["H100"]));
        assert_eq!(h.shapes().len(), 2, "another GPU type is another shape");
        assert_eq!(h.shapes()[0].count, 20);
        assert_eq!(h.shapes()[1].count, 1);
    }

    #[test]
    fn zero_capacity_learns_nothing() {
        let mut h = History::new(0);
        assert!(!h.record("u1", &job("ns/a", &[(GpuDemand::Whole(1), 1)], &[])));
        assert!(h.shapes().is_empty());
    }

    #[test]
    fn stored_form_round_trips_compactly() {
        let mut h = History::new(3);
        h.record(
            "u1",
            &job(
                "ns/a",
                &[
                    (GpuDemand::Whole(8), 4),
                    (GpuDemand::Share(MilliGpu(250)), 1),
                ],
                &["A100"],
            ),
        );
        h.record("u2", &job("ns/b", &[(GpuDemand::Whole(8), 2)], &["A100"]));
        h.record("u3", &job("ns/c", &[(GpuDemand::Whole(1), 1)], &[]));
        h.record("u4", &job("ns/d", &[(GpuDemand::Whole(1), 1)], &[]));
        let json = h.to_json();
        let stored: Stored = serde_json::from_str(&json).expect("json");
        assert_eq!(stored.shapes.len(), 2, "one row per distinct shape: {json}");
        assert_eq!(stored.aged_out, vec!["u1".to_string()]);
        assert!(json.contains(r#"["u2",1,2]"#), "{json}");
        let mut back = History::from_json(3, &json).expect("reads back");
        back.changed = h.changed;
        assert_eq!(back, h);
        // A smaller window keeps the newest arrivals.
        let small = History::from_json(1, &json).expect("reads back");
        assert_eq!(counts(&small), vec![(GpuDemand::Whole(1), 1)]);
        assert!(
            !small
                .clone()
                .record("u3", &job("ns/c", &[(GpuDemand::Whole(1), 1)], &[]))
        );
    }

    #[test]
    fn a_damaged_store_is_an_error_not_a_panic() {
        for text in [
            "",
            "{}",
            r#"{"version":2,"shapes":[],"arrivals":[]}"#,
            r#"{"version":1,"shapes":[],"arrivals":[["u",0,1]]}"#,
            r#"{"version":1,"shapes":[{"gpuMilli":1500,"cpuMilli":0,"memoryBytes":0}],"arrivals":[]}"#,
        ] {
            assert!(History::from_json(10, text).is_err(), "{text}");
        }
    }

    #[test]
    fn learn_records_by_uid_and_skips_jobs_without_one() {
        let tj = |name: &str, uid: Option<&str>| {
            let j: TrainingJob = serde_json::from_value(serde_json::json!({
                "apiVersion": "kubetrain.io/v1alpha1",
                "kind": "TrainingJob",
                "metadata": {"name": name, "namespace": "ns", "uid": uid},
                "spec": {"tasks": []},
            }))
            .expect("a TrainingJob");
            Arc::new(j)
        };
        let jobs = vec![tj("a", Some("ua")), tj("b", None)];
        let snap = sched::Snapshot {
            jobs: vec![
                job("ns/a", &[(GpuDemand::Whole(1), 1)], &[]),
                job("ns/b", &[(GpuDemand::Whole(1), 1)], &[]),
            ],
            ..Default::default()
        };
        let mut h = History::new(10);
        assert_eq!(learn(&mut h, &snap, &jobs), 1);
        assert_eq!(learn(&mut h, &snap, &jobs), 0);
    }

    #[test]
    fn a_shapes_file_reads_numbers_and_quantities() {
        let yaml = r#"
- gpus: 8
  cpu: "64"
  memory: 512Gi
  gpuTypes: [A100]
  count: 30
- {gpus: "500m", cpu: 4, memory: "16Gi", count: 70}
- {gpus: 0.25}
"#;
        let shapes = parse_shapes(Path::new("s.yaml"), yaml).expect("parses");
        assert_eq!(shapes[0].gpus, GpuDemand::Whole(8));
        assert_eq!(shapes[0].cpu_milli, 64_000);
        assert_eq!(shapes[0].memory_bytes, 512 << 30);
        assert_eq!(shapes[0].gpu_types, vec![Flavor::new("A100")]);
        assert_eq!(shapes[0].count, 30);
        assert_eq!(shapes[1].gpus, GpuDemand::Share(MilliGpu(500)));
        assert_eq!(shapes[1].memory_bytes, 16 << 30);
        assert_eq!(shapes[2].gpus, GpuDemand::Share(MilliGpu(250)));
        assert_eq!(shapes[2].count, 1);
        let json = r#"[{"gpus": 2, "cpu": "8", "memory": "32Gi", "count": 5}]"#;
        assert_eq!(
            parse_shapes(Path::new("s.json"), json).expect("json")[0].gpus,
            GpuDemand::Whole(2)
        );
    }

    #[test]
    fn a_bad_shapes_file_names_the_file_and_entry() {
        let err = |text: &str| {
            parse_shapes(Path::new("/etc/kt/shapes.yaml"), text)
                .expect_err(text)
                .to_string()
        };
        let e = err("- {gpus: 1}\n- {gpus: 1.5}\n");
        assert!(
            e.contains("/etc/kt/shapes.yaml") && e.contains("shape 2"),
            "{e}"
        );
        let e = err("- {gpus: 1, memory: lots}\n");
        assert!(e.contains("shape 1") && e.contains("memory"), "{e}");
        let e = err("- {gpus: 1, colour: red}\n");
        assert!(e.contains("colour"), "{e}");
        assert!(err("- {gpus: 0}\n").contains("no GPUs"));
        assert!(err("- {gpus: 1, count: 0}\n").contains("count"));
        assert!(err("[]").contains("lists no shapes"));
        assert!(err("gpus: 1").contains("not a YAML or JSON list"));
    }
}
