//! `kubetrain-node-labeler`: the DaemonSet binary. See the library docs for the pipeline.
//!
//! Exit status: 0 after a clean shutdown or a dry run (with or without GPUs); non-zero only
//! for misconfiguration (bad flags, unusable topology file, no Kubernetes client config) or,
//! with `--once`, a failed publish.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use kubetrain_node_labeler::load::PublishRule;
use kubetrain_node_labeler::metrics::{self, Metrics};
use kubetrain_node_labeler::publish::Publisher;
use kubetrain_node_labeler::run::{self, DryRun, Observer};
use kubetrain_node_labeler::source;
use tracing_subscriber::EnvFilter;

/// Publishes this node's NVIDIA GPU inventory, topology and health as
/// `gpu.kubetrain.io/*` labels and the `gpu.kubetrain.io/topology` annotation.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Name of the Node to label (from the downward API in the DaemonSet).
    #[arg(long, env = "NODE_NAME", required_unless_present = "dry_run")]
    node_name: Option<String>,

    /// Describe the node from this file instead of NVML: a NodeTopology or inventory
    /// document (JSON/YAML), or an `nvidia-smi topo -m` capture.
    #[arg(long, env = "TOPOLOGY_FILE")]
    topology_file: Option<PathBuf>,

    /// Print what would be published and exit, without contacting the API server.
    #[arg(long)]
    dry_run: bool,

    /// Output format of --dry-run.
    #[arg(long, value_enum, default_value_t = Format::Yaml)]
    output: Format,

    /// Publish once and exit (non-zero if that failed).
    #[arg(long, conflicts_with = "dry_run")]
    once: bool,

    /// Time between refreshes, at least 1 s: a duration as the operator's flags take it
    /// (`60s`, `5m`, `1h 30m`, `1m30s`) or whole seconds (`90`).
    #[arg(long, env = "REFRESH_INTERVAL", default_value = "60s", value_parser = parse_interval)]
    interval: Duration,

    /// Node label to copy the rack from into the topology ("" for none).
    #[arg(long, env = "RACK_LABEL", default_value = kubetrain::api::node_labels::RACK)]
    rack_label: String,

    /// Time between GPU load samples (utilisation and memory in use, through NVML); `0s`
    /// turns load sampling, the load annotation and the DCGM-named metrics off.
    #[arg(long, env = "LOAD_SAMPLE_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    load_sample_interval: Duration,

    /// The window the published load summarises (mean utilisation, peak memory in use).
    #[arg(long, env = "LOAD_WINDOW", default_value = "5m", value_parser = parse_interval)]
    load_window: Duration,

    /// Fewest seconds between two writes of the load annotation: at most one Node write
    /// per this interval for the load.
    #[arg(long, env = "LOAD_MIN_WRITE_INTERVAL", default_value = "60s", value_parser = parse_interval)]
    load_min_write_interval: Duration,

    /// Address of `/metrics` (per-GPU load under DCGM's metric names); empty for none.
    #[arg(long, env = "METRICS_ADDR", default_value = "0.0.0.0:9402")]
    metrics_addr: String,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Format {
    Yaml,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

/// `--load-sample-interval`: a duration, `0s` allowed (off).
fn parse_duration(s: &str) -> Result<Duration, String> {
    kubetrain::duration_flag::parse(s)
}

/// `--interval`: a duration as the operator's flags take it ([`kubetrain::duration_flag`]),
/// at least one second, so that a slip (`0`, `5ms`) does not refresh in a tight loop.
fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = kubetrain::duration_flag::parse(s)?;
    if d < Duration::from_secs(1) {
        return Err(format!(
            "the interval must be at least one second, not {s:?}"
        ));
    }
    Ok(d)
}

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_logging(args.log_format);

    // A bad topology file is a misconfiguration: fail before anything is published.
    if let Some(path) = &args.topology_file {
        source::read_file(path)?;
    }
    let mut observer = Observer::new(args.topology_file.clone());

    if args.dry_run {
        let mut observer = observer.without_events();
        let observation = observer.observe().await?;
        let report = DryRun::new(args.node_name.clone(), &observation);
        let text = match args.output {
            Format::Yaml => serde_norway::to_string(&report)?,
            Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        };
        print!("{text}");
        return Ok(());
    }

    let Some(node_name) = args.node_name.clone() else {
        bail!("--node-name (or NODE_NAME) is required");
    };
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes client configuration (in-cluster or kubeconfig)")?;
    let publisher = Publisher::new(client, node_name);

    if args.once {
        let outcome = run::refresh_once(&mut observer, &publisher, &args.rack_label).await?;
        tracing::info!(?outcome, "published once");
        return Ok(());
    }
    let load = (!args.load_sample_interval.is_zero()).then(|| {
        let metrics = Arc::new(Metrics::default());
        if !args.metrics_addr.is_empty() {
            match args.metrics_addr.parse::<SocketAddr>() {
                Ok(addr) => {
                    tokio::spawn(metrics::serve(addr, metrics.clone()));
                }
                Err(e) => tracing::error!(addr = %args.metrics_addr, error = %e, "bad --metrics-addr; no /metrics"),
            }
        }
        let rule = PublishRule {
            min_interval: args.load_min_write_interval,
            ..PublishRule::default()
        };
        run::LoadReporter::new(args.load_sample_interval, args.load_window, rule, metrics)
    });
    run::run(
        observer,
        publisher,
        args.rack_label,
        args.interval,
        load,
        shutdown_signal(),
    )
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interval takes the operator's duration syntax (`1h 30m`, `1m30s`, `1500ms` were
    /// refused before), at least one second.
    #[test]
    fn intervals_take_the_operators_duration_syntax() {
        for (text, secs) in [
            ("90", 90),
            ("60s", 60),
            ("5m", 300),
            ("1h 30m", 5400),
            ("1m30s", 90),
            ("2min", 120),
        ] {
            assert_eq!(
                parse_interval(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
            assert_eq!(
                parse_interval(text),
                kubetrain::duration_flag::parse(text),
                "{text}"
            );
        }
        assert_eq!(parse_interval("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("500ms").is_err());
        assert!(parse_interval("m").is_err());
        assert!(parse_interval("soon").is_err());
        let args = Args::try_parse_from([
            "kubetrain-node-labeler",
            "--node-name=n0",
            "--interval=1h 30m",
        ])
        .expect("parses");
        assert_eq!(args.interval, Duration::from_secs(5400));
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
