//! The labeler's loop: observe the GPUs, work out what to publish, publish it; again after
//! each interval, or at once when NVML reports a health event.
//!
//! Without NVML (no driver, no GPU) the labeler keeps running: it publishes
//! `present=false`, says why once in the log, and retries NVML on every refresh, so a node
//! whose driver is installed later (by the GPU operator, say) gets labelled without a
//! restart.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kubetrain::api::NodeTopology;
use kubetrain::api::load::NodeLoad;
use serde::Serialize;
use tokio::sync::Notify;
use tracing::{error, info, warn};

use crate::health::XidLog;
use crate::load::{LoadWindow, PublishRule};
use crate::metrics::Metrics;
use crate::nvml;
use crate::publish::{self, Desired, FIELD_MANAGER, Outcome, Publisher};
use crate::source::{self, FileError, Observation};

/// Why one refresh failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The topology file is unusable.
    #[error(transparent)]
    File(#[from] FileError),
    /// Reading or patching the Node failed.
    #[error("API request for Node {node} failed: {source}")]
    Kube {
        /// The Node.
        node: String,
        /// The error.
        source: kube::Error,
    },
}

/// Where GPU facts come from, with the state NVML needs between refreshes.
pub struct Observer {
    file: Option<PathBuf>,
    nvml: Option<Arc<nvml::Handle>>,
    xids: XidLog,
    refresh: Arc<Notify>,
    stop: Arc<AtomicBool>,
    watch_events: bool,
    watcher: Option<std::thread::JoinHandle<()>>,
    last_absence: Option<String>,
}

impl Observer {
    /// Observes through NVML, or through `file` when given.
    pub fn new(file: Option<PathBuf>) -> Observer {
        Observer {
            file,
            nvml: None,
            xids: XidLog::default(),
            refresh: Arc::new(Notify::new()),
            stop: Arc::new(AtomicBool::new(false)),
            watch_events: true,
            watcher: None,
            last_absence: None,
        }
    }

    /// Reads NVML without watching its events (for one-shot reads such as `--dry-run`).
    pub fn without_events(mut self) -> Observer {
        self.watch_events = false;
        self
    }

    /// The NVML handle, once NVML has been initialised by an observation.
    pub fn nvml(&self) -> Option<Arc<nvml::Handle>> {
        self.nvml.clone()
    }

    /// Notified when a health event asks for a refresh before the interval ends.
    pub fn refresh_requested(&self) -> Arc<Notify> {
        self.refresh.clone()
    }

    /// Reads the GPUs once. Only a bad topology file is an error; NVML trouble is an
    /// [`Observation::Absent`].
    pub async fn observe(&mut self) -> Result<Observation, FileError> {
        let observation = match &self.file {
            Some(path) => source::read_file(path)?,
            None => self.observe_nvml().await,
        };
        match &observation {
            Observation::Absent(reason) => {
                if self.last_absence.as_deref() != Some(reason) {
                    warn!(
                        reason = %reason,
                        "no GPU information; publishing gpu.kubetrain.io/present=false and no topology"
                    );
                }
                self.last_absence = Some(reason.clone());
            }
            _ => {
                if self.last_absence.take().is_some() {
                    info!("GPU information available again");
                }
            }
        }
        Ok(observation)
    }

    async fn observe_nvml(&mut self) -> Observation {
        let handle = match &self.nvml {
            Some(h) => h.clone(),
            None => match nvml::init() {
                Ok(n) => {
                    info!("NVML initialised");
                    let n = Arc::new(n);
                    if self.watch_events {
                        let refresh = self.refresh.clone();
                        self.watcher = Some(nvml::watch_events(
                            n.clone(),
                            self.xids.clone(),
                            self.stop.clone(),
                            move || refresh.notify_one(),
                        ));
                    }
                    self.nvml = Some(n.clone());
                    n
                }
                Err(e) => return Observation::Absent(nvml::describe_init_error(&e)),
            },
        };
        let xids = self.xids.clone();
        match tokio::task::spawn_blocking(move || nvml::read_inventory(&handle, &xids)).await {
            Ok(Ok(inventory)) if inventory.gpus.is_empty() => {
                Observation::Absent("NVML works but reports no GPUs".into())
            }
            Ok(Ok(inventory)) => Observation::Inventory(inventory),
            Ok(Err(e)) => Observation::Absent(format!("reading the GPUs failed: {e}")),
            Err(e) => Observation::Absent(format!("reading the GPUs panicked: {e}")),
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// What `--dry-run` prints: what would be applied to the Node, with the topology annotation
/// decoded for reading (it is published as compact JSON).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DryRun {
    /// The Node that would be written, when known.
    pub node: Option<String>,
    /// Field manager of the apply.
    pub field_manager: &'static str,
    /// Why there is no GPU information, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_gpu_reason: Option<String>,
    /// Labels that would be applied.
    pub labels: std::collections::BTreeMap<String, String>,
    /// The topology annotation, decoded; absent when none would be published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<NodeTopology>,
}

impl DryRun {
    /// The dry-run report for an observation (no rack: the Node is not read).
    pub fn new(node: Option<String>, observation: &Observation) -> DryRun {
        let topology = observation.topology(None);
        DryRun {
            node,
            field_manager: FIELD_MANAGER,
            no_gpu_reason: match observation {
                Observation::Absent(reason) => Some(reason.clone()),
                _ => None,
            },
            labels: Desired::new(topology.as_ref()).labels,
            topology,
        }
    }
}

/// One refresh: observe, read the Node (for its rack), publish if anything changed.
pub async fn refresh_once(
    observer: &mut Observer,
    publisher: &Publisher,
    rack_label: &str,
) -> Result<Outcome, RunError> {
    let observation = observer.observe().await?;
    let kube = |source| RunError::Kube {
        node: publisher.node_name().to_string(),
        source,
    };
    let node = publisher.node().await.map_err(kube)?;
    let topology = observation.topology(publish::rack_of(&node, rack_label));
    let desired = Desired::new(topology.as_ref());
    let outcome = publisher.publish(&node, &desired).await.map_err(kube)?;
    if outcome == Outcome::Applied {
        info!(
            node = publisher.node_name(),
            gpus = topology.as_ref().map_or(0, |t| t.gpus.len()),
            healthy = topology.as_ref().map_or(0, |t| t.healthy_count()),
            "published GPU labels and topology"
        );
    }
    Ok(outcome)
}

/// Samples the GPUs' load through NVML, keeps the window, serves the samples on `/metrics`
/// and publishes the load annotation when its [`PublishRule`] says so.
pub struct LoadReporter {
    /// Time between samples.
    pub period: Duration,
    window: LoadWindow,
    rule: PublishRule,
    last: Option<(NodeLoad, Instant)>,
    metrics: Arc<Metrics>,
}

impl LoadReporter {
    /// A reporter sampling every `period` over `window`.
    pub fn new(
        period: Duration,
        window: Duration,
        rule: PublishRule,
        metrics: Arc<Metrics>,
    ) -> Self {
        LoadReporter {
            period,
            window: LoadWindow::new(window, period),
            rule,
            last: None,
            metrics,
        }
    }

    /// One sample round; publishes when due. Without NVML (no driver yet, or a topology
    /// file) there is nothing to sample and nothing is written.
    pub async fn sample(&mut self, observer: &Observer, publisher: &Publisher) {
        let Some(handle) = observer.nvml() else {
            return;
        };
        let round = match tokio::task::spawn_blocking(move || nvml::read_load(&handle)).await {
            Ok(round) => round,
            Err(e) => {
                warn!(error = %e, "load sampling panicked");
                return;
            }
        };
        for (index, (uuid, sample)) in &round {
            self.metrics
                .observe(publisher.node_name(), *index, uuid, sample);
        }
        self.window
            .push(&round.into_iter().map(|(i, (_, s))| (i, s)).collect());
        let next = self.rule.round(&self.window.summary());
        let last = self.last.as_ref().map(|(l, at)| (l, at.elapsed()));
        if next.gpus.is_empty() || !self.rule.due(last, &next) {
            return;
        }
        match publisher.publish_load(&next).await {
            Ok(()) => {
                self.metrics.load_writes.inc();
                self.last = Some((next, Instant::now()));
            }
            Err(e) => {
                warn!(node = publisher.node_name(), error = %e, "load annotation not written; retrying at the next sample")
            }
        }
    }
}

/// Refreshes every `interval` and on health events, and samples the load every
/// `load.period` when given, until `shutdown` completes. Errors are logged and retried at the
/// next refresh.
pub async fn run(
    mut observer: Observer,
    publisher: Publisher,
    rack_label: String,
    interval: Duration,
    mut load: Option<LoadReporter>,
    shutdown: impl Future<Output = ()>,
) {
    let refresh = observer.refresh_requested();
    tokio::pin!(shutdown);
    // Without a reporter the ticker exists but its branch is disabled.
    let mut sampling = tokio::time::interval(
        load.as_ref()
            .map_or(Duration::from_secs(3600), |l| l.period),
    );
    loop {
        if let Err(e) = refresh_once(&mut observer, &publisher, &rack_label).await {
            error!(error = %e, "refresh failed; retrying after the interval");
        }
        let next_refresh = tokio::time::sleep(interval);
        tokio::pin!(next_refresh);
        loop {
            tokio::select! {
                _ = &mut next_refresh => break,
                _ = refresh.notified() => {
                    info!("health event; refreshing now");
                    break;
                }
                _ = sampling.tick(), if load.is_some() => {
                    if let Some(load) = load.as_mut() {
                        load.sample(&observer, &publisher).await;
                    }
                }
                _ = &mut shutdown => {
                    info!("shutting down");
                    return;
                }
            }
        }
    }
}
