//! `kubetrain-node-labeler`: the DaemonSet binary. See the library docs for the pipeline.
//!
//! Exit status: 0 after a clean shutdown or a dry run (with or without GPUs); non-zero only
//! for misconfiguration (bad flags, unusable topology file, no Kubernetes client config) or,
//! with `--once`, a failed publish.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
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

    /// Time between refreshes, for example `60s`, `5m` or `90` (seconds).
    #[arg(long, env = "REFRESH_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    interval: Duration,

    /// Node label to copy the rack from into the topology ("" for none).
    #[arg(long, env = "RACK_LABEL", default_value = kubetrain::api::node_labels::RACK)]
    rack_label: String,

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

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 60s, 5m or 1h"))?;
    let seconds = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("unknown unit {unit:?} in {s:?} (use s, m or h)")),
    };
    if seconds == 0 {
        return Err("the interval must be at least one second".into());
    }
    Ok(Duration::from_secs(seconds))
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
    run::run(
        observer,
        publisher,
        args.rack_label,
        args.interval,
        shutdown_signal(),
    )
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_intervals() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("m").is_err());
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
