//! `kubectl kubetrain`: what the scheduler thinks of your jobs, read from the objects the
//! operator writes. This library turns TrainingJobs, Queues and VirtualClusters into rows and
//! reports and prints them as a table, JSON or YAML; `main.rs` talks to the API server.
//!
//! Nothing here recomputes scheduling: a job's place in its queue is the scheduler's
//! (`status.queuePosition`), and why it waits is the operator's: the condition message for
//! people, and `status.waiting`, the same wait as fields, which `why` reads rather than
//! parse the message (an older operator's status has no such field: `why` then falls back
//! to the message).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kubetrain::api::WaitDetails;
use kubetrain::api::reasons::WaitCode;
use kubetrain::api::trainingjob::EXACT_QUEUE_POSITIONS;
use kubetrain::api::{Phase, Queue, StopPolicy, TrainingJob, VirtualCluster};
use serde::Serialize;

/// How to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

/// Widest REASON cell of the jobs table; `why` prints the whole reason.
pub const REASON_WIDTH: usize = 60;

/// A table of text cells, printed as kubectl prints its tables: upper-case headers, columns
/// left-aligned and three spaces apart, no trailing spaces.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_uppercase()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().take(n).enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            let mut line = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                if i > 0 {
                    line.push_str("   ");
                }
                line.push_str(cell);
                if i + 1 < n {
                    line.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// One line: newlines and runs of spaces become one space; longer than `max` characters is
/// cut with "...".
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(3)).collect();
    format!("{}...", cut.trim_end())
}

/// An age as kubectl prints it (`45s`, `3m12s`, `25m`, `5h3m`, `20h`, `3d4h`, `12d`, `2y`).
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

fn age_of(t: Option<&Time>, now: Timestamp) -> String {
    t.map_or_else(
        || "<unknown>".into(),
        |t| age(now.as_second() - t.0.as_second()),
    )
}

fn condition<'a>(conds: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conds.iter().find(|c| c.type_ == kind)
}

/// Whether the job waits for the scheduler: not yet running, not suspended, not finished.
pub fn is_waiting(job: &TrainingJob) -> bool {
    let Some(status) = &job.status else {
        return true;
    };
    let admitted = condition(&status.conditions, "Admitted").is_some_and(|c| c.status == "True");
    match status.phase {
        Phase::Pending => true,
        Phase::Queued | Phase::Retrying => !admitted || status.queue_position.is_some(),
        _ => false,
    }
}

/// The sentence that says why the job is where it is: the wait reason (the Admitted
/// condition's message) while it waits, what is wrong with its spec while it is invalid,
/// else the status message of a job that is stopped (suspended, retrying, failed). Empty for
/// a job that runs or succeeded.
pub fn reason(job: &TrainingJob) -> String {
    let Some(status) = &job.status else {
        return "Not yet seen by the operator.".into();
    };
    if let Some(c) = condition(&status.conditions, "Valid").filter(|c| c.status == "False") {
        return c.message.clone();
    }
    match status.phase {
        Phase::Pending | Phase::Queued => condition(&status.conditions, "Admitted")
            .filter(|c| c.status == "False")
            .map(|c| c.message.clone())
            .or_else(|| status.message.clone())
            .unwrap_or_default(),
        Phase::Suspended | Phase::Retrying | Phase::Failed | Phase::Preempting => {
            status.message.clone().unwrap_or_default()
        }
        // Admitted: what it waits for is its replicas.
        Phase::Starting => condition(&status.conditions, "Running")
            .filter(|c| c.status == "False")
            .map(|c| c.message.clone())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The user a job runs for: `spec.user`, else its namespace (as the scheduler counts it).
pub fn user_of(job: &TrainingJob) -> String {
    job.spec
        .user
        .clone()
        .unwrap_or_else(|| job.namespace().unwrap_or_default())
}

/// One job, as `jobs` and `queue` list it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobRow {
    pub namespace: String,
    pub name: String,
    pub phase: String,
    pub queue: String,
    /// The scheduler's place of the job in its queue (1 is next), while it waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i32>,
    /// When the scheduler estimates the waiting job starts (`status.estimatedStartTime`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_start: Option<Time>,
    /// The estimate as the table shows it: `+25m` (in about 25 minutes), `now` once it is due, `unknown` for a
    /// waiting job without one, `-` for a job that does not wait.
    #[serde(skip)]
    pub start: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<f64>,
    pub user: String,
    pub age: String,
    /// The whole reason (the table cuts it to one short line).
    pub reason: String,
}

impl JobRow {
    pub fn of(job: &TrainingJob, now: Timestamp) -> JobRow {
        let status = job.status.as_ref();
        JobRow {
            namespace: job.namespace().unwrap_or_default(),
            name: job.name_any(),
            phase: status.map(|s| s.phase).unwrap_or_default().to_string(),
            queue: queue_of(job),
            position: status.and_then(|s| s.queue_position),
            estimated_start: status.and_then(|s| s.estimated_start_time.clone()),
            start: start_of(job, now),
            gpus: status.and_then(|s| s.gpus),
            user: user_of(job),
            age: age_of(job.metadata.creation_timestamp.as_ref(), now),
            reason: reason(job),
        }
    }
}

/// A waiting job's estimated start, relative to now (see [`JobRow::start`]).
fn start_of(job: &TrainingJob, now: Timestamp) -> String {
    if !is_waiting(job) {
        return "-".into();
    }
    match job
        .status
        .as_ref()
        .and_then(|s| s.estimated_start_time.as_ref())
    {
        Some(t) if t.0 > now => format!("+{}", age(t.0.as_second() - now.as_second())),
        Some(_) => "now".into(),
        None => "unknown".into(),
    }
}

fn dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// A place in queue as the tables show it: beyond the first places, where the operator keeps
/// it exact, `~` says it is approximate (it may read up to a third more than the true place).
fn place(position: Option<i32>) -> String {
    match position {
        Some(p) if u32::try_from(p).is_ok_and(|p| p > EXACT_QUEUE_POSITIONS) => format!("~{p}"),
        p => dash(p),
    }
}

/// Sorts rows as the tables show them: by namespace, queue, place in queue (jobs without one
/// after), then name.
pub fn sort_rows(rows: &mut [JobRow]) {
    rows.sort_by(|a, b| {
        (
            &a.namespace,
            &a.queue,
            a.position.unwrap_or(i32::MAX),
            &a.name,
        )
            .cmp(&(
                &b.namespace,
                &b.queue,
                b.position.unwrap_or(i32::MAX),
                &b.name,
            ))
    });
}

/// The jobs table; with `namespaces` a NAMESPACE column comes first (as `kubectl get -A`).
pub fn jobs_table(rows: &[JobRow], namespaces: bool) -> Table {
    let mut headers = vec![
        "name", "phase", "queue", "position", "start", "gpus", "age", "reason",
    ];
    if namespaces {
        headers.insert(0, "namespace");
    }
    let mut t = Table::new(&headers);
    for r in rows {
        let mut cells = vec![
            r.name.clone(),
            r.phase.clone(),
            r.queue.clone(),
            place(r.position),
            r.start.clone(),
            dash(r.gpus),
            r.age.clone(),
            one_line(&r.reason, REASON_WIDTH),
        ];
        if namespaces {
            cells.insert(0, r.namespace.clone());
        }
        t.row(cells);
    }
    t
}

/// `queue NAME`: the queue's numbers and its waiting jobs in the scheduler's order.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueueReport {
    pub name: String,
    pub virtual_cluster: String,
    pub policy: String,
    pub gpus_in_use: String,
    pub bonus_gpus: String,
    pub running: i32,
    pub admitted: i32,
    pub pending: i32,
    /// The hold on the queue (its `spec.stopPolicy`, or a queue's above it) as the
    /// operator's `Ready` condition tells it (reason `Held` or `HeldAndDraining`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    pub jobs: Vec<JobRow>,
    /// Queues lie under this one: the list names each job's queue.
    #[serde(skip)]
    pub children: bool,
}

/// `name` and the names of the queues under it, by `spec.parent` (a line that loops never
/// reaches it: the operator refuses such parents, and the walk stops after every queue).
fn subtree(name: &str, queues: &[Queue]) -> std::collections::BTreeSet<String> {
    let parent: std::collections::BTreeMap<String, &str> = queues
        .iter()
        .filter_map(|q| q.spec.parent.as_deref().map(|p| (q.name_any(), p)))
        .collect();
    let under = |q: &str| {
        let mut at = q;
        for _ in 0..=queues.len() {
            if at == name {
                return true;
            }
            match parent.get(at) {
                Some(p) => at = p,
                None => return false,
            }
        }
        false
    };
    let mut out: std::collections::BTreeSet<String> = queues
        .iter()
        .map(|q| q.name_any())
        .filter(|q| under(q))
        .collect();
    out.insert(name.to_string());
    out
}

impl QueueReport {
    /// `jobs`: the cluster's TrainingJobs; those that wait in this queue or in a queue under
    /// it (`queues`: the cluster's Queues, read for `spec.parent`) are kept, as the status
    /// numbers count them: this queue's first, then each queue under it by name, each in
    /// its place in queue (jobs the scheduler has not ordered yet last, oldest first).
    pub fn of(
        queue: &Queue,
        queues: &[Queue],
        jobs: &[TrainingJob],
        now: Timestamp,
    ) -> QueueReport {
        let name = queue.name_any();
        let status = queue.status.clone().unwrap_or_default();
        let subtree = subtree(&name, queues);
        let mut waiting: Vec<&TrainingJob> = jobs
            .iter()
            .filter(|j| subtree.contains(&queue_of(j)) && is_waiting(j))
            .collect();
        waiting.sort_by_key(|j| {
            let s = j.status.as_ref();
            let q = queue_of(j);
            (
                q != name,
                q,
                s.and_then(|s| s.queue_position).unwrap_or(i32::MAX),
                s.and_then(|s| s.queued_at.as_ref()).map(|t| t.0),
                j.namespace(),
                j.name_any(),
            )
        });
        QueueReport {
            virtual_cluster: queue.spec.virtual_cluster.clone(),
            policy: serde_json::to_value(queue.spec.policy)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            gpus_in_use: status.gpus_in_use.to_string(),
            bonus_gpus: status.bonus_gpus.to_string(),
            running: status.running,
            admitted: status.admitted,
            pending: status.pending,
            held: status
                .conditions
                .iter()
                .find(|c| {
                    c.type_ == "Ready" && matches!(c.reason.as_str(), "Held" | "HeldAndDraining")
                })
                .map(|c| c.message.clone()),
            jobs: waiting.into_iter().map(|j| JobRow::of(j, now)).collect(),
            children: subtree.len() > 1,
            name,
        }
    }

    pub fn render(&self) -> String {
        let mut out = format!(
            "Queue {} (VirtualCluster {}, policy {})\nGPUs in use: {} ({} bonus)   Running: {}   Starting: {}   Pending: {}\n",
            self.name,
            self.virtual_cluster,
            self.policy,
            self.gpus_in_use,
            self.bonus_gpus,
            self.running,
            self.admitted,
            self.pending
        );
        if let Some(held) = &self.held {
            out.push_str(&format!("{held}\n"));
        }
        if self.jobs.is_empty() {
            out.push_str("\nNo jobs waiting.\n");
            return out;
        }
        let mut headers = vec!["position", "namespace", "name", "gpus", "age", "reason"];
        if self.children {
            headers.insert(0, "queue");
        }
        let mut t = Table::new(&headers);
        for r in &self.jobs {
            let mut row = vec![
                place(r.position),
                r.namespace.clone(),
                r.name.clone(),
                dash(r.gpus),
                r.age.clone(),
                one_line(&r.reason, REASON_WIDTH),
            ];
            if self.children {
                row.insert(0, r.queue.clone());
            }
            t.row(row);
        }
        out.push('\n');
        out.push_str(&t.render());
        out
    }
}

/// `why JOB`: the whole story of one job.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WhyReport {
    pub namespace: String,
    pub name: String,
    pub phase: String,
    pub queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<f64>,
    pub gpu_types: Vec<String>,
    /// The Admitted condition's reason code (`QuotaExhausted`, `NoFit`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admitted_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admitted_message: Option<String>,
    /// The Valid condition's message when the spec is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// What holds the job back, in words, from the reason code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// What would let it start: from `status.waiting`, or, from an operator that does
    /// not write it, the advice at the end of the operator's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unblocks_when: Option<String>,
    pub message: String,
    /// Why it waits, field by field, as the operator wrote it (`status.waiting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitDetails>,
}

/// What `hold` and `release` print: the queue and what it does now.
pub fn stop_policy_note(queue: &str, policy: StopPolicy) -> String {
    let what = match policy {
        StopPolicy::None => "released: it admits jobs",
        StopPolicy::Hold => "held: it admits no new jobs; admitted jobs run on",
        StopPolicy::HoldAndDrain => {
            "held and draining: it admits no new jobs; running jobs checkpoint and come back \
             to wait"
        }
    };
    format!("queue.kubetrain.io/{queue} {what}\n")
}

/// The resource a wait reason code says is exhausted (`None`: a code this plugin does not
/// know, from a newer operator). Every code the core gives is matched: a new one does not
/// compile here until it has its words.
pub fn blocking_resource(code: &str) -> Option<&'static str> {
    Some(match WaitCode::from_name(code)? {
        // Both the guarantee in use and a job larger than the whole guarantee wait with it
        // (the message says which): "in use" alone misread the second (an acceptance run).
        WaitCode::QuotaExhausted => {
            "the VirtualCluster's guarantee (in use, or smaller than the job), with too few \
             idle GPUs to borrow"
        }
        WaitCode::OverLimit => "the VirtualCluster's hard GPU limit",
        WaitCode::QueueMaxShare => "the queue's maxShare of GPUs",
        WaitCode::UserLimit => "the queue's per-user GPU limit",
        WaitCode::ExceedsLimit => "a GPU limit smaller than the job itself (the message names it)",
        WaitCode::NoFit => "free GPUs in the shape the job needs (per node / topology)",
        WaitCode::NeverFits => "the cluster itself: no node or domain can ever hold the job",
        WaitCode::NodesUnavailable => {
            "nodes it needs that are cordoned or not ready (the message names them)"
        }
        WaitCode::ReservedForCells => "free GPUs kept as whole cells for other teams' guarantees",
        WaitCode::WaitingForPreemption => "GPUs still held by jobs being preempted for this one",
        WaitCode::WaitingForTerminatingPods => "GPUs held by terminating pods of a deleted job",
        WaitCode::WaitingForMinRuntime => "GPUs held by jobs still within their minimum runtime",
        WaitCode::BehindQueueHead => "a job ahead of it in its strict queue that has not started",
        WaitCode::BehindReservation => {
            "the GPUs reserved for a job ahead of it in its backfill queue, which it would delay"
        }
        WaitCode::Returning => {
            "nothing: stopped for a drain or a preemption, it is on its way back"
        }
        WaitCode::BehindReturningJob => {
            "a job ahead of it, on its way back to the queue after a drain or a preemption"
        }
        WaitCode::QueueTerminating => "its queue, which was deleted and admits nothing new",
        WaitCode::VirtualClusterTerminating => {
            "its VirtualCluster, which was deleted and admits nothing new into its queues"
        }
        WaitCode::QueueHeld => {
            "its queue (or one above it), held by its stopPolicy until it is set back to None"
        }
        WaitCode::Invalid => "the job's spec",
        WaitCode::Waiting => "nothing yet: the next scheduling cycle decides",
    })
}

/// Splits an operator reason into what holds the job and what would unblock it: the last
/// sentence (or, in a one-sentence reason, the clause after the last `; `) is the advice.
pub fn split_advice(message: &str) -> (String, Option<String>) {
    let text = message.trim();
    let body = text.strip_suffix('.').unwrap_or(text);
    if let Some(i) = body.rfind(". ") {
        return (
            format!("{}.", &body[..i]),
            Some(capitalize(&format!("{}.", &body[i + 2..]))),
        );
    }
    if let Some(i) = body.rfind("; ") {
        return (
            format!("{}.", &body[..i]),
            Some(capitalize(&format!("{}.", &body[i + 2..]))),
        );
    }
    (text.to_string(), None)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What would let a waiting job start, from its `status.waiting` (`None`: a code this
/// plugin does not know, from a newer operator, or a field the code needs is missing: the
/// caller falls back to the message). Every code is matched: a new one does not compile here
/// until it has its words.
pub fn unblocks(d: &WaitDetails) -> Option<String> {
    let code = WaitCode::from_name(&d.code)?;
    let jobs = d.jobs.join(", ");
    Some(match code {
        WaitCode::QuotaExhausted => match (d.short_gpus, &d.share_kept_by) {
            (None, _) => "It starts when enough idle GPUs appear: it is larger than the whole \
                          guarantee, and a job within it would start sooner and could not be \
                          preempted."
                .to_string(),
            (Some(short), Some(queue)) => format!(
                "It starts when queue {queue}'s jobs of higher priority free at least {short} \
                 GPUs, when it is given a higher priority, or when enough idle GPUs appear."
            ),
            (Some(short), None) => format!(
                "It starts when the team's own jobs free at least {short} GPUs, or enough idle \
                 GPUs appear."
            ),
        },
        WaitCode::OverLimit => format!(
            "It starts when the team's jobs free {} GPUs, or ask for a higher limit.",
            d.short_gpus?
        ),
        WaitCode::QueueMaxShare => format!(
            "It starts when jobs of queue {} free {} GPUs, or raise the queue's maxShare.",
            d.queue.as_deref()?,
            d.short_gpus?
        ),
        WaitCode::UserLimit => format!(
            "It starts when the other jobs of user {} free {} GPUs.",
            d.user.as_deref()?,
            d.short_gpus?
        ),
        WaitCode::ExceedsLimit => format!(
            "It cannot start as it is: it needs {} GPUs, the limit is {}. Ask for fewer GPUs, \
             or for a higher limit.",
            d.requested_gpus?, d.limit_gpus?
        ),
        WaitCode::NoFit => no_fit_unblocks(d)?,
        WaitCode::NeverFits => "It cannot start as it is: change the job (fewer GPUs per \
                                replica, other GPU types, a looser topology) or the cluster."
            .to_string(),
        WaitCode::NodesUnavailable => format!(
            "It is placed once enough of the {} cordoned or not-ready node(s) are back ({}).",
            d.node_count?,
            d.nodes.join(", ")
        ),
        WaitCode::ReservedForCells => {
            "It starts when partly used capacity of its GPU types frees up.".to_string()
        }
        WaitCode::WaitingForPreemption => format!("It starts once {jobs} are gone."),
        WaitCode::WaitingForTerminatingPods => {
            format!("It starts once the terminating pods of {jobs} are gone.")
        }
        WaitCode::WaitingForMinRuntime => format!(
            "It starts once {jobs} are preempted, at {} at the latest.",
            d.until.as_ref()?.0
        ),
        WaitCode::BehindQueueHead => {
            format!("It starts after {jobs} does, or once {jobs} is deleted.")
        }
        WaitCode::BehindReservation => format!(
            "It starts once it no longer delays {jobs} (reserved from {}), or after {jobs} \
             starts; a shorter spec.predictedDurationSeconds lets it start in the gap.",
            d.until.as_ref()?.0
        ),
        WaitCode::Returning => "Nothing to do: it is back in its queue in a few seconds.".into(),
        WaitCode::BehindReturningJob => {
            format!("Its turn comes after {jobs}'s, in a few seconds.")
        }
        WaitCode::QueueTerminating => format!(
            "Move it to another queue (spec.queue), or re-create queue {} once it is gone.",
            d.queue.as_deref()?
        ),
        WaitCode::VirtualClusterTerminating => format!(
            "Move it to a queue of another VirtualCluster (spec.queue), or re-create \
             VirtualCluster {} once it is gone.",
            d.virtual_cluster.as_deref()?
        ),
        WaitCode::QueueHeld => format!(
            "It is admitted in its turn once an admin lifts the hold \
             (kubectl kubetrain release {}), or move it to another queue (spec.queue).",
            d.queue.as_deref()?
        ),
        WaitCode::Invalid => "Fix the spec and apply it again.".to_string(),
        WaitCode::Waiting => "The next scheduling cycle decides, in a few seconds.".to_string(),
    })
}

/// `NoFit`'s way out: room in the shape the job needs, sooner with a smaller shape.
fn no_fit_unblocks(d: &WaitDetails) -> Option<String> {
    let within = d
        .required_topology
        .map_or_else(String::new, |t| format!(", all within one {t}"));
    let looser = if d.required_topology.is_some() {
        ", a looser topology requirement"
    } else {
        ""
    };
    Some(format!(
        "It starts when running jobs free {} GPUs ({} per replica at most{within}); {} are free, \
         at most {} on one node. Fewer GPUs per replica{looser} or more GPU types would let it \
         start sooner.",
        d.requested_gpus?, d.per_replica_gpus?, d.free_gpus?, d.free_gpus_on_one_node?
    ))
}

impl WhyReport {
    pub fn of(job: &TrainingJob) -> WhyReport {
        let status = job.status.clone().unwrap_or_default();
        let admitted = condition(&status.conditions, "Admitted");
        let invalid = condition(&status.conditions, "Valid")
            .filter(|c| c.status == "False")
            .map(|c| format!("{}: {}", c.reason, c.message));
        // The wait in fields, while the job waits (a status of an older operator has none).
        let details = status.waiting.clone().filter(|_| is_waiting(job));
        // An invalid job waits for its spec whatever its last wait in the queue was.
        let waiting_code = if invalid.is_some() {
            Some("Invalid".to_string())
        } else if let Some(d) = &details {
            Some(d.code.clone())
        } else {
            admitted
                .filter(|c| c.status == "False" && is_waiting(job))
                .map(|c| c.reason.clone())
        };
        let message = reason(job);
        let unblocks_when = if invalid.is_some() {
            Some(
                "Fix the spec, or create what it names, and apply it again: the job recovers by \
                 itself."
                    .to_string(),
            )
        } else {
            // The fields when the operator wrote them; its message's last words otherwise.
            details
                .as_ref()
                .and_then(unblocks)
                .or_else(|| waiting_code.as_ref().and_then(|_| split_advice(&message).1))
        };
        WhyReport {
            namespace: job.namespace().unwrap_or_default(),
            name: job.name_any(),
            phase: status.phase.to_string(),
            queue: queue_of(job),
            position: status.queue_position,
            gpus: status.gpus,
            gpu_types: job.spec.gpu_types.clone(),
            admitted_reason: admitted.map(|c| c.reason.clone()),
            admitted_message: admitted.map(|c| c.message.clone()),
            invalid,
            blocked_by: waiting_code
                .as_deref()
                .and_then(blocking_resource)
                .map(str::to_string),
            unblocks_when,
            message: if message.is_empty() {
                status.message.unwrap_or_default()
            } else {
                message
            },
            waiting: details,
        }
    }

    pub fn render(&self) -> String {
        let mut out = format!(
            "TrainingJob {}/{}: {} in queue {}",
            self.namespace, self.name, self.phase, self.queue
        );
        if self.position.is_some() {
            out.push_str(&format!(", position {}", place(self.position)));
        }
        out.push('\n');
        let types = if self.gpu_types.is_empty() {
            "any type".to_string()
        } else {
            self.gpu_types.join(", ")
        };
        out.push_str(&format!("GPUs:      {} ({types})\n", dash(self.gpus)));
        if let Some(i) = &self.invalid {
            out.push_str(&format!("Valid:     False: {i}\n"));
        }
        if let (Some(r), Some(m)) = (&self.admitted_reason, &self.admitted_message) {
            out.push_str(&format!("Admitted:  {r}: {m}\n"));
        }
        if let Some(b) = &self.blocked_by {
            out.push_str(&format!("Blocked by: {b}\n"));
        }
        if let Some(u) = &self.unblocks_when {
            out.push_str(&format!("Unblocks:  {u}\n"));
        }
        if self.blocked_by.is_none() && !self.message.is_empty() {
            out.push_str(&format!("Status:    {}\n", self.message));
        }
        out
    }
}

/// One VirtualCluster and GPU type: `vc` prints one row each.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VcRow {
    pub virtual_cluster: String,
    pub gpu_type: String,
    pub guarantee: i32,
    pub in_use: String,
    pub bonus: String,
    pub lent: String,
    /// The VirtualCluster's `spec.limit` (all GPU types together), on each of its rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
}

/// The rows of a VirtualCluster: one per GPU type of its status, or its totals when the
/// operator has not written per-type numbers.
pub fn vc_rows(vc: &VirtualCluster) -> Vec<VcRow> {
    let name = vc.name_any();
    let status = vc.status.clone().unwrap_or_default();
    let limit = vc.spec.limit.as_ref().map(|l| l.gpus);
    if status.flavors.is_empty() {
        return vec![VcRow {
            virtual_cluster: name,
            gpu_type: "-".into(),
            guarantee: status.guaranteed_gpus,
            in_use: status.in_use_gpus.to_string(),
            bonus: status.bonus_gpus.to_string(),
            lent: status.lent_gpus.to_string(),
            limit,
        }];
    }
    status
        .flavors
        .iter()
        .map(|f| VcRow {
            virtual_cluster: name.clone(),
            gpu_type: f.flavor.clone(),
            guarantee: f.guaranteed,
            in_use: f.in_use.to_string(),
            bonus: f.bonus.to_string(),
            lent: f.lent.to_string(),
            limit,
        })
        .collect()
}

pub fn vc_table(rows: &[VcRow]) -> Table {
    let mut t = Table::new(&[
        "virtualcluster",
        "gpu type",
        "guarantee",
        "in use",
        "borrowed",
        "lent",
        "limit",
    ]);
    for r in rows {
        t.row(vec![
            r.virtual_cluster.clone(),
            r.gpu_type.clone(),
            r.guarantee.to_string(),
            r.in_use.clone(),
            r.bonus.clone(),
            r.lent.clone(),
            r.limit.map_or_else(|| "-".into(), |l| l.to_string()),
        ]);
    }
    t
}

/// Prints `value` as JSON or YAML (`Output::Table` is the caller's).
pub fn structured<T: Serialize>(value: &T, output: Output) -> anyhow::Result<String> {
    Ok(match output {
        Output::Json => serde_json::to_string_pretty(value)? + "\n",
        Output::Yaml => serde_norway::to_string(value)?,
        Output::Table => anyhow::bail!("not a structured output"),
    })
}

/// The queue a job is in: the one the operator resolved (`status.queue`, which follows a
/// VirtualCluster's `defaultQueue`), else the one it names.
fn queue_of(job: &TrainingJob) -> String {
    job.status
        .as_ref()
        .and_then(|s| s.queue.clone())
        .or_else(|| job.spec.queue.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, status: serde_json::Value) -> TrainingJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1",
            "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": "team-a",
                          "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queue": "q", "gpuTypes": ["A100"], "tasks": [
                {"name": "worker", "template": {"spec": {"containers": []}}}]},
            "status": status,
        }))
        .expect("job")
    }

    /// `job` estimated to start `secs` after [`now`].
    fn estimated(mut job: TrainingJob, secs: i64) -> TrainingJob {
        let at = Timestamp::from_second(now().as_second() + secs).expect("time");
        job.status.as_mut().expect("status").estimated_start_time = Some(Time(at));
        job
    }

    fn waiting(name: &str, position: i32, message: &str) -> TrainingJob {
        job(
            name,
            serde_json::json!({
                "phase": "Queued", "gpus": 8, "queuePosition": position,
                "conditions": [{"type": "Admitted", "status": "False", "reason": "QuotaExhausted",
                    "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }),
        )
    }

    const QUOTA: &str = "VirtualCluster a has 0 of its 8 guaranteed GPUs left (8 in use); this job needs 8, 8 more than are left, and it does not fit on the idle GPUs it may borrow. It starts when the team's own jobs free 8, or enough idle GPUs appear.";

    fn now() -> Timestamp {
        "2026-01-01T00:05:30Z".parse().expect("time")
    }

    #[test]
    fn table_aligns_columns_without_trailing_spaces() {
        let mut t = Table::new(&["name", "phase", "reason"]);
        t.row(vec!["a".into(), "Running".into(), String::new()]);
        t.row(vec!["longer-name".into(), "Queued".into(), "why".into()]);
        assert_eq!(
            t.render(),
            "NAME          PHASE     REASON\n\
             a             Running\n\
             longer-name   Queued    why\n"
        );
    }

    #[test]
    fn reasons_are_one_short_line() {
        assert_eq!(one_line("a\n  b\tc", 60), "a b c");
        let cut = one_line(QUOTA, REASON_WIDTH);
        assert_eq!(cut.chars().count(), REASON_WIDTH);
        assert!(cut.ends_with("...") && cut.starts_with("VirtualCluster a has 0"));
        assert_eq!(one_line("ééééé", 4), "é...");
    }

    #[test]
    fn ages_read_like_kubectl() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (192, "3m12s"),
            (1500, "25m"),
            (5 * 3600 + 180, "5h3m"),
            (20 * 3600, "20h"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (12 * 86400, "12d"),
            (800 * 86400, "2y"),
            (-3, "0s"),
        ] {
            assert_eq!(age(s), want, "{s}");
        }
    }

    #[test]
    fn a_place_beyond_the_exact_head_of_the_queue_reads_as_approximate() {
        let exact = i32::try_from(EXACT_QUEUE_POSITIONS).unwrap();
        assert_eq!(place(None), "-");
        assert_eq!(place(Some(1)), "1");
        assert_eq!(place(Some(exact)), exact.to_string());
        assert_eq!(place(Some(exact + 1)), format!("~{}", exact + 1));
        let rows = vec![JobRow::of(&waiting("far", 400, QUOTA), now())];
        let out = jobs_table(&rows, false).render();
        assert!(out.lines().nth(1).unwrap().contains(" ~400 "), "{out}");
        let why = WhyReport::of(&waiting("far", 400, QUOTA));
        assert!(why.render().contains("position ~400\n"), "{}", why.render());
    }

    #[test]
    fn jobs_table_shows_position_and_the_reason_in_one_line() {
        let mut rows = vec![
            JobRow::of(&waiting("second", 2, QUOTA), now()),
            JobRow::of(
                &job(
                    "runs",
                    serde_json::json!({"phase": "Running", "gpus": 8, "conditions": [
                {"type": "Admitted", "status": "True", "reason": "AdmittedWithinGuarantee",
                 "message": "Admitted: 1 replica(s) on 1 node(s).",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                ),
                now(),
            ),
            JobRow::of(&estimated(waiting("first", 1, QUOTA), 3600), now()),
        ];
        sort_rows(&mut rows);
        let out = jobs_table(&rows, false).render();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "NAME     PHASE     QUEUE   POSITION   START     GPUS   AGE     REASON"
        );
        assert!(
            lines[1].starts_with(
                "first    Queued    q       1          +60m      8      5m30s   VirtualCluster a has 0"
            ),
            "{out}"
        );
        assert!(lines[1].ends_with("..."), "{out}");
        assert!(
            lines[2].starts_with("second   Queued    q       2          unknown"),
            "{out}"
        );
        assert_eq!(
            lines[3],
            "runs     Running   q       -          -         8      5m30s"
        );
        let all = jobs_table(&rows, true).render();
        assert!(all.starts_with("NAMESPACE   NAME"), "{all}");
        assert!(all.lines().nth(1).unwrap().starts_with("team-a      first"));
    }

    #[test]
    fn new_job_without_status_waits() {
        let mut j = waiting("new", 1, QUOTA);
        j.status = None;
        let r = JobRow::of(&j, now());
        assert_eq!((r.phase.as_str(), r.position), ("Pending", None));
        assert_eq!(r.reason, "Not yet seen by the operator.");
        assert!(is_waiting(&j));
    }

    #[test]
    fn why_splits_the_reason_into_block_and_advice() {
        let w = WhyReport::of(&waiting("first", 1, QUOTA));
        assert_eq!(w.position, Some(1));
        assert_eq!(w.admitted_reason.as_deref(), Some("QuotaExhausted"));
        assert_eq!(
            w.unblocks_when.as_deref(),
            Some("It starts when the team's own jobs free 8, or enough idle GPUs appear.")
        );
        let text = w.render();
        assert!(text.starts_with("TrainingJob team-a/first: Queued in queue q, position 1\n"));
        assert!(text.contains("GPUs:      8 (A100)\n"), "{text}");
        assert!(text.contains(&format!("Admitted:  QuotaExhausted: {QUOTA}\n")));
        assert!(text.contains(
            "Blocked by: the VirtualCluster's guarantee (in use, or smaller than the job), with \
             too few idle GPUs to borrow\n"
        ));
        assert!(text.contains("Unblocks:  It starts when the team's own jobs free 8"));
        // one sentence: the advice is the clause after the last "; "
        let (held, advice) = split_advice(
            "Waiting for 1 job(s) to checkpoint and leave (a/x) after a reclaim preemption; the job starts once they are gone.",
        );
        assert!(held.ends_with("reclaim preemption."));
        assert_eq!(
            advice.as_deref(),
            Some("The job starts once they are gone.")
        );
        assert_eq!(split_advice("Plain.").1, None);
    }

    /// `why` reads what would start the job from `status.waiting`, not from the words of
    /// the message, which may change from one operator version to the next.
    #[test]
    fn why_reads_the_wait_from_its_fields() {
        let j = job(
            "fields",
            serde_json::json!({
                "phase": "Queued", "gpus": 8, "queuePosition": 1,
                "waiting": {"code": "QuotaExhausted", "virtualCluster": "a", "guaranteeGpus": 8,
                            "usedGpus": 5, "requestedGpus": 8, "shortGpus": 5},
                "conditions": [{"type": "Admitted", "status": "False", "reason": "QuotaExhausted",
                    "message": "Words of another operator version, which no parser knows",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }),
        );
        let w = WhyReport::of(&j);
        assert_eq!(
            w.unblocks_when.as_deref(),
            Some(
                "It starts when the team's own jobs free at least 5 GPUs, or enough idle GPUs appear."
            )
        );
        assert!(
            w.blocked_by
                .as_deref()
                .is_some_and(|b| b.starts_with("the VirtualCluster's guarantee"))
        );
        assert_eq!(w.waiting.as_ref().and_then(|d| d.short_gpus), Some(5.0));
        // -o json carries the fields as the operator wrote them.
        let json: serde_json::Value =
            serde_json::from_str(&structured(&w, Output::Json).expect("json")).expect("parses");
        assert_eq!(json["waiting"]["shortGpus"], 5.0);
        assert_eq!(json["waiting"]["virtualCluster"], "a");
        // A code this plugin does not know (a newer operator): the message's advice.
        let newer = job(
            "newer",
            serde_json::json!({
                "phase": "Queued", "queuePosition": 1,
                "waiting": {"code": "SomethingNew"},
                "conditions": [{"type": "Admitted", "status": "False", "reason": "SomethingNew",
                    "message": "It waits for something new. It starts when that is done.",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }),
        );
        let w = WhyReport::of(&newer);
        assert_eq!(
            w.unblocks_when.as_deref(),
            Some("It starts when that is done.")
        );
        assert_eq!(w.blocked_by, None);
    }

    /// Every code the operator writes has words from its fields; a field its words need
    /// that is missing leaves them to the message.
    #[test]
    fn every_wait_code_has_its_words_from_the_fields() {
        let full = |code: &str| -> WaitDetails {
            serde_json::from_value(serde_json::json!({
                "code": code, "requestedGpus": 16, "usedGpus": 6, "guaranteeGpus": 8,
                "limitGpus": 12, "shortGpus": 2, "freeGpus": 7, "freeGpusOnOneNode": 3,
                "perReplicaGpus": 8, "requiredTopology": "rack", "gpuTypes": ["A100"],
                "virtualCluster": "nlp", "queue": "q", "user": "bob", "shareKeptBy": "vision",
                "jobs": ["a/x"], "preemptionReason": "Reclaim", "until": "2026-11-27T16:08:17Z",
                "nodeCount": 2, "nodes": ["n1", "n2"]
            }))
            .expect("details")
        };
        for code in WaitCode::ALL {
            let words = unblocks(&full(code.as_str()));
            assert!(
                words.as_deref().is_some_and(|w| w.ends_with('.')),
                "{code}: {words:?}"
            );
        }
        assert_eq!(
            unblocks(&full("NoFit")).as_deref(),
            Some(
                "It starts when running jobs free 16 GPUs (8 per replica at most, all within one \
                 rack); 7 are free, at most 3 on one node. Fewer GPUs per replica, a looser \
                 topology requirement or more GPU types would let it start sooner."
            )
        );
        assert_eq!(
            unblocks(&full("WaitingForMinRuntime")).as_deref(),
            Some("It starts once a/x are preempted, at 2026-11-27T16:08:17Z at the latest.")
        );
        let no_short = WaitDetails {
            short_gpus: None,
            ..full("OverLimit")
        };
        assert_eq!(unblocks(&no_short), None);
        assert_eq!(unblocks(&WaitDetails::new("SomethingNew")), None);
    }

    /// An invalid job is blocked by its spec, with the validation reason, whatever wait its
    /// Admitted condition last had (found in a walk-through: no reason name, no advice).
    #[test]
    fn why_an_invalid_job_names_its_reason_and_the_way_out() {
        let lost = job(
            "lost",
            serde_json::json!({
                "phase": "Pending",
                "conditions": [
                    {"type": "Valid", "status": "False", "reason": "UnknownQueue",
                     "message": "queue q does not exist",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Admitted", "status": "False", "reason": "QueueTerminating",
                     "message": "Queue q is being deleted.",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }),
        );
        let text = WhyReport::of(&lost).render();
        assert!(
            text.contains("Valid:     False: UnknownQueue: queue q does not exist\n"),
            "{text}"
        );
        assert!(text.contains("Blocked by: the job's spec\n"), "{text}");
        assert!(text.contains("Unblocks:  Fix the spec"), "{text}");
    }

    #[test]
    fn queue_lists_its_waiting_jobs_in_the_schedulers_order() {
        let queue: Queue = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"virtualCluster": "a", "policy": "FIFO"},
            "status": {"gpusInUse": 8, "bonusGpus": 0.5, "running": 1, "admitted": 0, "pending": 2,
                       "conditions": []}
        }))
        .expect("queue");
        let jobs = vec![
            waiting("second", 2, QUOTA),
            job(
                "runs",
                serde_json::json!({"phase": "Running", "conditions": []}),
            ),
            waiting("first", 1, QUOTA),
        ];
        let r = QueueReport::of(&queue, std::slice::from_ref(&queue), &jobs, now());
        let names: Vec<&str> = r.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        let text = r.render();
        assert!(text.starts_with("Queue q (VirtualCluster a, policy FIFO)\nGPUs in use: 8 (0.5 bonus)   Running: 1   Starting: 0   Pending: 2\n\nPOSITION   NAMESPACE   NAME"), "{text}");
        let v: serde_json::Value =
            serde_json::from_str(&structured(&r, Output::Json).expect("json")).expect("parses");
        assert_eq!(v["jobs"][1]["position"], 2);
        let y: serde_json::Value =
            serde_norway::from_str(&structured(&r, Output::Yaml).expect("yaml")).expect("parses");
        assert_eq!(y["jobs"][0]["name"], "first");
    }

    /// A parent queue's status counts the jobs of the queues under it (its `maxShare` holds
    /// them back), so its list shows their waiting jobs too, each with its queue: its own
    /// first, then each child's in its own order. A queue elsewhere stays out.
    #[test]
    fn a_parent_queue_lists_the_waiting_jobs_of_the_queues_under_it() {
        let q = |name: &str, parent: Option<&str>| -> Queue {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"virtualCluster": "a", "parent": parent},
            }))
            .expect("queue")
        };
        let queues = [
            q("root", None),
            q("dev", Some("root")),
            q("dev-nightly", Some("dev")),
            q("other", None),
        ];
        let in_queue = |name: &str, queue: &str, position: i32| {
            let mut j = waiting(name, position, QUOTA);
            j.spec.queue = Some(queue.into());
            j
        };
        let jobs = vec![
            in_queue("nightly-1", "dev-nightly", 1),
            in_queue("dev-2", "dev", 2),
            in_queue("elsewhere", "other", 1),
            in_queue("dev-1", "dev", 1),
            in_queue("own", "root", 1),
        ];
        let r = QueueReport::of(&queues[0], &queues, &jobs, now());
        let names: Vec<&str> = r.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["own", "dev-1", "dev-2", "nightly-1"]);
        let text = r.render();
        assert!(text.contains("\nQUEUE         POSITION"), "{text}");
        // A queue with nothing under it lists its own, with no queue column.
        let r = QueueReport::of(&queues[2], &queues, &jobs, now());
        assert_eq!(r.jobs.len(), 1);
        assert!(!r.render().contains("QUEUE"), "{}", r.render());
    }

    /// A held queue's report says so, in the operator's words (its `Ready` condition), and
    /// its waiting jobs name the hold; a queue not held has no such line.
    #[test]
    fn a_held_queue_says_so_in_its_report() {
        let held = "Held by stopPolicy Hold: the queue admits no new jobs while its admitted jobs run on; set stopPolicy to None to resume.";
        let queue: Queue = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"virtualCluster": "a", "stopPolicy": "Hold"},
            "status": {"pending": 1, "conditions": [
                {"type": "Ready", "status": "False", "reason": "Held", "message": held,
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]}
        }))
        .expect("queue");
        let jobs = vec![waiting("w", 1, "Queue q is held (stopPolicy: Hold).")];
        let r = QueueReport::of(&queue, std::slice::from_ref(&queue), &jobs, now());
        assert_eq!(r.held.as_deref(), Some(held));
        let text = r.render();
        assert!(text.contains(&format!("Pending: 1\n{held}\n")), "{text}");
        assert_eq!(
            blocking_resource("QueueHeld"),
            Some(
                "its queue (or one above it), held by its stopPolicy until it is set back to None"
            )
        );
        let mut open = queue.clone();
        open.status = None;
        assert_eq!(QueueReport::of(&open, &[], &jobs, now()).held, None);
        assert_eq!(
            stop_policy_note("q", StopPolicy::HoldAndDrain),
            "queue.kubetrain.io/q held and draining: it admits no new jobs; running jobs checkpoint and come back to wait\n"
        );
    }

    #[test]
    fn vc_rows_per_gpu_type() {
        let vc: VirtualCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1", "kind": "VirtualCluster",
            "metadata": {"name": "team-a"},
            "spec": {"namespaces": ["team-a"], "guarantee": [{"flavor": "A100", "gpus": 8}],
                "limit": {"gpus": 16}},
            "status": {"guaranteedGpus": 8, "inUseGpus": 12, "bonusGpus": 4, "lentGpus": 0,
                "flavors": [{"flavor": "A100", "guaranteed": 8, "inUse": 12, "bonus": 4, "lent": 0},
                            {"flavor": "H100", "guaranteed": 0, "inUse": 0.25, "bonus": 0.25, "lent": 0}],
                "conditions": []}
        }))
        .expect("vc");
        let out = vc_table(&vc_rows(&vc)).render();
        assert_eq!(
            out,
            "VIRTUALCLUSTER   GPU TYPE   GUARANTEE   IN USE   BORROWED   LENT   LIMIT\n\
             team-a           A100       8           12       4          0      16\n\
             team-a           H100       0           0.25     0.25       0      16\n"
        );
        let mut bare = vc.clone();
        bare.status = None;
        bare.spec.limit = None;
        assert_eq!(vc_rows(&bare)[0].gpu_type, "-");
        assert!(
            vc_table(&vc_rows(&bare))
                .render()
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with('-'))
        );
    }
}
