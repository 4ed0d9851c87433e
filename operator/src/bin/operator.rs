//! The kubetrain operator: schedules and reconciles TrainingJobs, Queues and VirtualClusters.
//! `kubetrain-operator reserve-gpu` is instead the container of a GPU reservation pod
//! ([`kubetrain::reservation_agent`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use kube::Client;
use kubetrain::controller::context::Settings;
use kubetrain::controller::leader::LeaderSettings;
use kubetrain::controller::pods::{Binding, GpuBinding, PodSettings};
use kubetrain::controller::reservations::ReservationSettings;
use kubetrain::controller::workload::{self, WorkloadSettings};
use kubetrain::controller::{self, Config};
use kubetrain::duration_flag::parse as parse_duration;
use tracing::info;

#[derive(Parser, Debug)]
#[command(
    name = "kubetrain-operator",
    version,
    about = "Runs deep-learning training jobs on shared GPU clusters",
    // A flag given twice takes its last value: the Helm chart's `operator.extraArgs` come
    // after the flags it sets, and override them rather than stopping the operator.
    args_override_self = true
)]
struct Args {
    /// Without a subcommand, the operator runs (with the flags below).
    #[command(subcommand)]
    command: Option<Command>,
    /// Log format.
    #[arg(long, global = true, env = "KUBETRAIN_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Address of /metrics, /healthz and /readyz; `off` disables them.
    #[arg(long, env = "KUBETRAIN_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    http_addr: String,
    /// Who binds pods to the nodes kubetrain chose: the cluster's scheduler, after its own
    /// checks (volumes, device plugins, DRA, taints), or kubetrain directly by nodeName.
    #[arg(long, env = "KUBETRAIN_BINDING", value_enum, default_value_t = Binding::Scheduler)]
    binding: Binding,
    /// With `--binding scheduler`: the kube-scheduler profile (`schedulerName`) that binds
    /// the gang's pods, when not `default-scheduler` (a profile of the cluster's scheduler,
    /// or a second scheduler, that knows the GPU nodes). Unset: `default-scheduler`.
    #[arg(long, env = "KUBETRAIN_SCHEDULER_NAME")]
    scheduler_name: Option<String>,
    /// With `--binding scheduler`: how long a pod may stay Unschedulable before its gang's
    /// admission is rolled back and the job placed again elsewhere.
    #[arg(long, env = "KUBETRAIN_UNSCHEDULABLE_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    unschedulable_timeout: Duration,
    /// How long an admitted gang may take until every replica runs (pulling images,
    /// starting containers); then it stops and retries, counted against maxRetries. `0`
    /// waits for ever.
    #[arg(long, env = "KUBETRAIN_START_TIMEOUT", default_value = "10m", value_parser = parse_duration)]
    start_timeout: Duration,
    /// Whether a job within its team's guarantee whose GPUs are free but scattered over
    /// nodes may move the team's smaller jobs (they checkpoint and start again elsewhere).
    #[arg(long, env = "KUBETRAIN_CONSOLIDATION", default_value_t = true, action = clap::ArgAction::Set)]
    consolidation: bool,
    /// How the chosen GPU indices reach the containers.
    #[arg(long, env = "KUBETRAIN_GPU_BINDING", value_enum, default_value_t = GpuBinding::Auto)]
    gpu_binding: GpuBinding,
    /// Port for MASTER_PORT in every replica.
    #[arg(long, default_value_t = 23456)]
    master_port: i32,
    /// Image of the reservation pods that hold shared GPUs from a device plugin (it runs
    /// `kubetrain-operator reserve-gpu`): the operator's own image.
    /// Without it, the image of the operator's own pod's first container (read once at
    /// start), else `ghcr.io/kubetrain/operator:<version>`.
    #[arg(long, env = "KUBETRAIN_RESERVATION_IMAGE")]
    reservation_image: Option<String>,
    /// ServiceAccount of the reservation pods, allowed to patch pods in the operator's
    /// namespace (each reports the device it was given on itself).
    #[arg(long, env = "KUBETRAIN_RESERVATION_SERVICE_ACCOUNT", default_value_t = ReservationSettings::default().service_account)]
    reservation_service_account: String,
    /// PriorityClass of the reservation pods: a high one keeps kube-scheduler from
    /// preempting a reservation for another pod while shares use its GPU (the installs make
    /// and name `kubetrain-gpu-reservation`). Unset: none.
    #[arg(long, env = "KUBETRAIN_RESERVATION_PRIORITY_CLASS")]
    reservation_priority_class: Option<String>,
    /// Namespace of the leader-election Lease and of the GPU reservation pods (the
    /// operator's own namespace).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    namespace: String,
    /// This replica's identity in leader election.
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// How long a standby waits, having seen the leader's Lease unchanged, before it takes
    /// over. Judged on each replica's own clock, so clocks that disagree do not matter.
    #[arg(long, env = "KUBETRAIN_LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader goes on leading when it cannot renew its Lease; it steps down
    /// after that, before a standby may take over. Shorter than the lease duration.
    #[arg(long, env = "KUBETRAIN_LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// Time between tries to take or renew the Lease. Shorter than the renew deadline.
    #[arg(long, env = "KUBETRAIN_LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// Time between scheduling cycles when nothing changes: "5s", "500ms", "1m"; a bare
    /// number is seconds. At least 1 s.
    #[arg(long, env = "KUBETRAIN_RESYNC", default_value = "5s", value_parser = parse_duration)]
    resync: Duration,
    /// Former spelling of `--resync` in whole seconds; still accepted, and wins when given.
    #[arg(long, hide = true)]
    resync_seconds: Option<u64>,
    /// Job arrivals whose replica shapes make the workload's shape distribution, which the
    /// fragmentation score weighs placements by; kept in the ConfigMap
    /// `kubetrain-workload-history` across restarts. 0 turns learning off.
    #[arg(long, env = "KUBETRAIN_WORKLOAD_HISTORY", default_value_t = workload::DEFAULT_HISTORY,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(workload::MAX_HISTORY)))]
    workload_history: u32,
    /// A YAML or JSON list of the workload's replica shapes
    /// (`{gpus: 1 | "500m", cpu: "8", memory: "32Gi", gpuTypes: [A100], count: 30}`), used
    /// instead of the learned history.
    #[arg(long, env = "KUBETRAIN_WORKLOAD_SHAPES")]
    workload_shapes: Option<PathBuf>,
}

/// The image of the operator's own container, when it runs in a pod (`POD_NAME`): so the
/// reservation pods run the same build, whatever registry or tag the install chose.
async fn own_image(client: &Client, namespace: &str, pod: Option<&str>) -> Option<String> {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), namespace);
    let found = pods.get_opt(pod?).await.ok()??;
    found.spec?.containers.into_iter().next()?.image
}

#[derive(Subcommand, Debug, PartialEq, Eq)]
enum Command {
    /// The container of a GPU reservation pod: writes the device the device plugin gave it
    /// (NVIDIA_VISIBLE_DEVICES) on its own pod's `kubetrain.io/reserved-device` annotation,
    /// then holds the GPU until SIGTERM. Needs POD_NAME and POD_NAMESPACE.
    ReserveGpu,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn init_tracing(format: LogFormat) {
    // The API server of `make run` and the tests has a self-signed certificate; the client
    // warns about that on every connection.
    let default = "info,kube_client=warn,kube_runtime=warn,kube_client::client::tls=error";
    let directives = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let filter = tracing_subscriber::EnvFilter::new(directives.as_deref().unwrap_or(default));
    // Colour only on a terminal: a log file or a log collector gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A client of the API server from the kubeconfig or the pod's service account.
async fn client() -> anyhow::Result<Client> {
    let mut config = kube::Config::infer().await?;
    kubetrain::controller::context::identify(&mut config);
    Ok(Client::try_from(config)?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing(args.log_format);
    if let Some(Command::ReserveGpu) = args.command {
        // An error ends the process with status 1 and its message, so the pod restarts
        // and `kubectl logs` says why. A container given no device says so before the
        // API server is asked anything.
        let reservation = kubetrain::reservation_agent::Reservation::from_env()?;
        reservation.hold(client().await?).await?;
        return Ok(());
    }
    // A bad shapes file stops the operator before it does anything.
    let supplied = supplied_shapes(args.workload_shapes.as_deref())?;
    let client = client().await?;
    let version = client.apiserver_version().await?;
    info!(server = %version.git_version, "connected to the API server");
    check_crds(&client).await?;
    let reservation_image = match args.reservation_image.clone() {
        Some(image) => image,
        None => own_image(&client, &args.namespace, args.identity.as_deref())
            .await
            .unwrap_or_else(|| ReservationSettings::default().image),
    };
    let config = config(args, supplied, reservation_image)?;
    config.leader.check().map_err(anyhow::Error::msg)?;
    controller::run(client, config).await?;
    Ok(())
}

/// The workload shapes of `--workload-shapes`, if given: then the history is not learned.
fn supplied_shapes(
    file: Option<&std::path::Path>,
) -> anyhow::Result<Vec<kubetrain::sched::WorkloadShape>> {
    Ok(match file {
        Some(file) => {
            let shapes = workload::read_shapes(file)?;
            info!(file = %file.display(), shapes = shapes.len(), "workload shapes supplied; the history is not learned");
            shapes
        }
        None => Vec::new(),
    })
}

/// Stops the operator when one of its CRDs is not installed, saying how to install it.
async fn check_crds(client: &Client) -> anyhow::Result<()> {
    let crds: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(client.clone());
    for (plural, _) in kubetrain::api::crds() {
        if crds
            .get_opt(&format!("{plural}.kubetrain.io"))
            .await?
            .is_none()
        {
            anyhow::bail!(
                "CRD {plural}.kubetrain.io is not installed: kubectl apply --server-side -f crds/"
            );
        }
    }
    Ok(())
}

/// The leader election identity: `--identity`, else the host's name and the process id.
fn identity(given: Option<String>) -> String {
    given.unwrap_or_else(|| {
        // A pod's HOSTNAME is its name; a shell does not export its own, so ask the kernel.
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| {
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
            })
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "kubetrain".into());
        format!("{host}-{}", std::process::id())
    })
}

/// The operator's configuration from its flags.
fn config(
    args: Args,
    supplied: Vec<kubetrain::sched::WorkloadShape>,
    reservation_image: String,
) -> anyhow::Result<Config> {
    let identity = identity(args.identity);
    let http = match args.http_addr.as_str() {
        "off" | "" => None,
        a => Some(a.parse::<SocketAddr>()?),
    };
    Ok(Config {
        settings: Settings {
            pods: PodSettings {
                binding: args.binding,
                scheduler_name: args.scheduler_name.filter(|n| !n.is_empty()),
                gpu_binding: args.gpu_binding,
                master_port: args.master_port,
                reservation: ReservationSettings {
                    namespace: args.namespace.clone(),
                    image: reservation_image,
                    service_account: args.reservation_service_account,
                    priority_class: args.reservation_priority_class.filter(|c| !c.is_empty()),
                },
            },
            resync: args
                .resync_seconds
                .map(Duration::from_secs)
                .unwrap_or(args.resync)
                .max(Duration::from_secs(1)),
            unschedulable_timeout: args.unschedulable_timeout,
            start_timeout: (!args.start_timeout.is_zero()).then_some(args.start_timeout),
            workload: WorkloadSettings {
                supplied,
                history: args.workload_history,
                ..WorkloadSettings::default()
            },
            sched: kubetrain::sched::Options {
                consolidation: args.consolidation,
                ..Default::default()
            },
            ..Settings::default()
        },
        leader: LeaderSettings {
            namespace: args.namespace,
            name: "kubetrain-operator".into(),
            identity,
            duration: args.leader_elect_lease_duration,
            renew_deadline: args.leader_elect_renew_deadline,
            retry: args.leader_elect_retry_period,
        },
        http,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_election_durations_are_flags() {
        let args = Args::try_parse_from(["kubetrain-operator"]).expect("defaults parse");
        assert_eq!(
            (
                args.leader_elect_lease_duration,
                args.leader_elect_renew_deadline,
                args.leader_elect_retry_period
            ),
            (
                LeaderSettings::DEFAULT_DURATION,
                LeaderSettings::DEFAULT_RENEW_DEADLINE,
                LeaderSettings::DEFAULT_RETRY
            )
        );
        let args = Args::try_parse_from([
            "kubetrain-operator",
            "--leader-elect-lease-duration=1m",
            "--leader-elect-renew-deadline=40s",
            "--leader-elect-retry-period=5s",
        ])
        .expect("flags parse");
        assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(60));
        assert_eq!(args.leader_elect_renew_deadline, Duration::from_secs(40));
        assert_eq!(args.leader_elect_retry_period, Duration::from_secs(5));
    }

    #[test]
    fn resync_flag_and_its_old_spelling() {
        let args = Args::try_parse_from(["kubetrain-operator"]).expect("defaults parse");
        assert_eq!(args.resync, Duration::from_secs(5));
        assert_eq!(args.resync_seconds, None);
        let args = Args::try_parse_from(["kubetrain-operator", "--resync=2m"]).expect("2m");
        assert_eq!(args.resync, Duration::from_secs(120));
        let args =
            Args::try_parse_from(["kubetrain-operator", "--resync-seconds", "9"]).expect("old");
        assert_eq!(args.resync_seconds, Some(9));
        assert!(Args::try_parse_from(["kubetrain-operator", "--resync=often"]).is_err());
        let args = Args::try_parse_from(["kubetrain-operator", "--resync=5s", "--resync=10s"])
            .expect("a flag given twice");
        assert_eq!(args.resync, Duration::from_secs(10), "the last one wins");
    }

    #[test]
    fn the_operator_runs_without_a_subcommand_and_reserve_gpu_is_one() {
        let args = Args::try_parse_from(["kubetrain-operator", "--binding", "direct"])
            .expect("operator flags");
        assert_eq!(args.command, None);
        assert!(matches!(args.binding, Binding::Direct));
        let args = Args::try_parse_from([
            "kubetrain-operator",
            "--binding=direct",
            "--gpu-binding",
            "device-plugin",
            "--resync",
            "10s",
            "--log-format",
            "json",
        ])
        .expect("several operator flags");
        assert_eq!(args.command, None);
        assert!(matches!(args.log_format, LogFormat::Json));
        assert_eq!(args.resync, Duration::from_secs(10));

        let args = Args::try_parse_from(["kubetrain-operator", "reserve-gpu"]).expect("reserve");
        assert_eq!(args.command, Some(Command::ReserveGpu));
        for argv in [
            ["kubetrain-operator", "reserve-gpu", "--log-format=json"],
            ["kubetrain-operator", "--log-format=json", "reserve-gpu"],
        ] {
            let args = Args::try_parse_from(argv).expect("reserve with a log format");
            assert_eq!(args.command, Some(Command::ReserveGpu));
            assert!(matches!(args.log_format, LogFormat::Json), "{argv:?}");
        }
        assert!(
            Args::try_parse_from(["kubetrain-operator", "reserve-gpu", "--binding=direct"])
                .is_err()
        );
        assert!(Args::try_parse_from(["kubetrain-operator", "reserve-gpus"]).is_err());
    }

    #[test]
    fn workload_flags() {
        let args = Args::try_parse_from(["kubetrain-operator"]).expect("defaults parse");
        assert_eq!(args.workload_history, 2000);
        assert_eq!(args.workload_shapes, None);
        let args = Args::try_parse_from(["kubetrain-operator", "--workload-history=0"]).expect("0");
        assert_eq!(args.workload_history, 0);
        assert!(Args::try_parse_from(["kubetrain-operator", "--workload-history=20000"]).is_err());
    }
}
