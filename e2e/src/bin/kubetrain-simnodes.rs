//! `kubetrain-simnodes`: simulated GPU nodes for a real API server (see
//! `kubetrain_e2e::simnode`).
//!
//! ```text
//! kubetrain-simnodes --cluster e2e/clusters/dev.yaml [--kubeconfig FILE] [--delete-on-exit]
//! kubetrain-simnodes fault not-ready NODE
//! kubetrain-simnodes fault unreachable NODE
//! kubetrain-simnodes fault gpu NODE GPU [--reason "XID 79"]
//! kubetrain-simnodes restore NODE [--gpu GPU]
//! kubetrain-simnodes delete --cluster e2e/clusters/dev.yaml
//! ```
//!
//! Without a subcommand it runs the agent until SIGINT or SIGTERM. Faults are annotations on
//! the Node, so the fault subcommands work against whichever agent runs the node.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kubetrain_e2e::simnode::{ClusterSpec, NodeFault, SimCluster, SimOptions, faults};

#[derive(Parser, Debug)]
#[command(
    name = "kubetrain-simnodes",
    about = "Simulated GPU nodes and a fake kubelet for a real API server"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    /// Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Cluster description (YAML).
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Delete the nodes when stopping (default: leave them; they go NotReady).
    #[arg(long)]
    delete_on_exit: bool,
    /// Lease renewal period per node, in seconds.
    #[arg(long, default_value_t = 10)]
    heartbeat_seconds: u64,
    /// Period of re-posting a node's unchanged status (Ready condition), in seconds, as a
    /// kubelet's report frequency; a status that changed is posted at once.
    #[arg(long, default_value_t = 300)]
    node_status_seconds: u64,
    /// Default Pending → Running delay, in seconds.
    #[arg(long, default_value_t = 1.0)]
    start_seconds: f64,
    /// Default checkpoint acknowledgement delay, in seconds.
    #[arg(long, default_value_t = 2.0)]
    checkpoint_seconds: f64,
    /// Cap on the termination grace period honoured, in seconds.
    #[arg(long, default_value_t = 2.0)]
    max_grace_seconds: f64,
    /// Concurrent API calls for node creates and deletes; the least bound for heartbeats
    /// (one per ten nodes, at most 100) and pods.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Pods handled at once [default: one per two nodes, at least --concurrency, at most 128].
    #[arg(long)]
    pod_concurrency: Option<usize>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Inject a fault into a running simulated node.
    #[command(subcommand)]
    Fault(Fault),
    /// Clear the faults of a node (all, or one GPU's).
    Restore {
        node: String,
        /// Only mark this GPU healthy again.
        #[arg(long)]
        gpu: Option<u32>,
    },
    /// Delete the nodes of a cluster description (and their Leases).
    Delete {
        #[arg(long)]
        cluster: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum Fault {
    /// The kubelet reports Ready=False, then stops its heartbeats.
    NotReady { node: String },
    /// The kubelet goes silent (the controller-manager notices after its grace period).
    Unreachable { node: String },
    /// A GPU turns unhealthy: topology annotation `healthy: false`, one GPU less allocatable.
    Gpu {
        node: String,
        gpu: u32,
        #[arg(long, default_value = "XID 79: GPU has fallen off the bus (simulated)")]
        reason: String,
    },
}

async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}

fn secs(s: f64, what: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(s)
        .with_context(|| format!("--{what} must be a non-negative number"))
}

async fn shutdown_signal() -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube_runtime=warn".into()),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let cli = Cli::parse();
    let client = client(cli.kubeconfig.as_ref()).await?;
    match cli.command {
        Some(Command::Fault(Fault::NotReady { node })) => {
            faults::set_node_fault(&client, &node, Some(NodeFault::NotReady)).await?
        }
        Some(Command::Fault(Fault::Unreachable { node })) => {
            faults::set_node_fault(&client, &node, Some(NodeFault::Unreachable)).await?
        }
        Some(Command::Fault(Fault::Gpu { node, gpu, reason })) => {
            faults::set_gpu_health(&client, &node, gpu, Some(&reason)).await?
        }
        Some(Command::Restore {
            node,
            gpu: Some(gpu),
        }) => faults::set_gpu_health(&client, &node, gpu, None).await?,
        Some(Command::Restore { node, gpu: None }) => faults::restore(&client, &node).await?,
        Some(Command::Delete { cluster }) => {
            let spec = ClusterSpec::from_file(&cluster)?;
            let names: Vec<String> = spec.nodes().into_iter().map(|n| n.name).collect();
            kubetrain_e2e::simnode::delete_nodes(&client, &names).await?;
            tracing::info!(nodes = names.len(), "deleted");
        }
        None => {
            let Some(path) = cli.run.cluster.as_ref() else {
                bail!("--cluster FILE is required (or a subcommand; see --help)");
            };
            let spec = ClusterSpec::from_file(path)?;
            let a = &cli.run;
            let options = SimOptions {
                heartbeat_interval: Duration::from_secs(a.heartbeat_seconds.max(1)),
                node_status_interval: Duration::from_secs(a.node_status_seconds.max(1)),
                start_delay: secs(a.start_seconds, "start-seconds")?,
                checkpoint_delay: secs(a.checkpoint_seconds, "checkpoint-seconds")?,
                max_termination_grace: secs(a.max_grace_seconds, "max-grace-seconds")?,
                concurrency: a.concurrency.max(1),
                pod_concurrency: a.pod_concurrency,
                delete_nodes_on_shutdown: a.delete_on_exit,
            };
            let sim = SimCluster::start_with(client, spec, options).await?;
            tracing::info!(
                nodes = sim.node_names().len(),
                "running; SIGINT or SIGTERM stops"
            );
            shutdown_signal().await?;
            tracing::info!("stopping");
            sim.shutdown().await?;
        }
    }
    Ok(())
}
