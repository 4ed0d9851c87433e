//! `kubectl-kubetrain`: run as `kubectl kubetrain ...` once it is on PATH (kubectl finds
//! executables named `kubectl-<name>` and passes the remaining arguments on).

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use kubectl_kubetrain::{
    JobRow, Output, QueueReport, VcRow, WhyReport, jobs_table, sort_rows, stop_policy_note,
    structured, user_of, vc_rows, vc_table,
};
use kubetrain::api::{Queue, StopPolicy, TrainingJob, VirtualCluster};

/// The field manager of the plugin's writes (a job's `spec.suspend`, a queue's
/// `spec.stopPolicy`).
const MANAGER: &str = "kubectl-kubetrain";

#[derive(Parser, Debug)]
#[command(
    name = "kubectl kubetrain",
    bin_name = "kubectl kubetrain",
    version,
    about = "kubetrain jobs, queues and VirtualClusters as the scheduler sees them"
)]
struct Cli {
    /// Namespace of the jobs (default: the kubeconfig context's, else `default`).
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    context: Option<String>,
    /// Path of the kubeconfig (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Act as this user, as kubectl's --as (impersonation; --mine then means that user).
    #[arg(long = "as", global = true, value_name = "USER")]
    as_user: Option<String>,
    /// Act as this group, repeatable; needs --as, as kubectl's --as-group.
    #[arg(
        long = "as-group",
        global = true,
        value_name = "GROUP",
        requires = "as_user"
    )]
    as_group: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Output::Table)]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List TrainingJobs with their phase, place in queue and why they wait.
    Jobs {
        /// Jobs of all namespaces.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Only the jobs of the current user (`spec.user`; a job without one runs for its
        /// namespace). The user is the API server's name for your credentials; use --user
        /// when that differs.
        #[arg(long, conflicts_with = "user")]
        mine: bool,
        /// Only the jobs of this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// A queue's usage and its waiting jobs in the scheduler's order; a parent queue's
    /// include those of the queues under it, as its status counts them.
    Queue {
        /// The Queue's name.
        name: String,
    },
    /// Why a job waits, what holds it back and what would let it start.
    Why {
        /// The TrainingJob's name.
        job: String,
    },
    /// Suspend a job: it is not admitted, and if it runs it is checkpointed and stopped.
    Suspend {
        /// The TrainingJob's name.
        job: String,
    },
    /// Resume a suspended job: it goes back to its queue.
    Resume {
        /// The TrainingJob's name.
        job: String,
    },
    /// Hold a queue (`spec.stopPolicy: Hold`): it, and the queues under it, admit no new
    /// job; admitted jobs run on. With --drain (`HoldAndDrain`) they also checkpoint and
    /// come back to wait.
    Hold {
        /// The Queue's name.
        queue: String,
        /// Also stop the queue's running jobs, the checkpoint-aware way.
        #[arg(long)]
        drain: bool,
    },
    /// Release a held queue (`spec.stopPolicy: None`): it admits jobs again. (Slurm's
    /// hold/release; `resume` is a job's.)
    Release {
        /// The Queue's name.
        queue: String,
    },
    /// Guarantee, GPUs in use, bonus (borrowed) and lent GPUs per GPU type, and the limit.
    Vc {
        /// One VirtualCluster (default: all).
        name: Option<String>,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli).await {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

async fn client(cli: &Cli) -> anyhow::Result<(Client, String)> {
    let opts = KubeConfigOptions {
        context: cli.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&cli.kubeconfig, &cli.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &opts).await?
        }
        (None, Some(_)) => Config::from_kubeconfig(&opts).await?,
        (None, None) => Config::infer()
            .await
            .context("no kubeconfig (set KUBECONFIG or --kubeconfig)")?,
    };
    let mut config = config;
    if let Some(user) = &cli.as_user {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !cli.as_group.is_empty() {
        config.auth_info.impersonate_groups = Some(cli.as_group.clone());
    }
    let namespace = cli
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    Ok((Client::try_from(config)?, namespace))
}

/// The user name the API server gives these credentials.
async fn current_user(client: &Client) -> anyhow::Result<String> {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .context("asking the API server who you are (use --user NAME instead)")?;
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .filter(|u| !u.is_empty())
        .context("the API server did not say who you are (use --user NAME instead)")
}

fn print_table_or<T: serde::Serialize>(
    output: Output,
    value: &T,
    table: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    let text = match output {
        Output::Table => table(),
        other => structured(value, other)?,
    };
    print!("{text}");
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let (client, namespace) = client(&cli).await?;
    let now = Timestamp::now();
    let jobs_here: Api<TrainingJob> = Api::namespaced(client.clone(), &namespace);
    match &cli.command {
        Command::Jobs {
            all_namespaces,
            mine,
            user,
        } => {
            let api: Api<TrainingJob> = if *all_namespaces {
                Api::all(client.clone())
            } else {
                jobs_here
            };
            let user = match (user, mine) {
                (Some(u), _) => Some(u.clone()),
                (None, true) => Some(current_user(&client).await?),
                (None, false) => None,
            };
            let jobs = api.list(&ListParams::default()).await?;
            let mut rows: Vec<JobRow> = jobs
                .items
                .iter()
                .filter(|j| user.as_ref().is_none_or(|u| &user_of(j) == u))
                .map(|j| JobRow::of(j, now))
                .collect();
            sort_rows(&mut rows);
            print_table_or(cli.output, &rows, || {
                if rows.is_empty() {
                    if *all_namespaces {
                        "No TrainingJobs found.\n".to_string()
                    } else {
                        format!("No TrainingJobs found in namespace {namespace}.\n")
                    }
                } else {
                    jobs_table(&rows, *all_namespaces).render()
                }
            })
        }
        Command::Queue { name } => {
            let queues: Api<Queue> = Api::all(client.clone());
            let queue = queues
                .get_opt(name)
                .await?
                .with_context(|| format!("queue {name} not found"))?;
            // A queue takes jobs from every namespace its VirtualCluster owns; without the
            // right to list them all, show this namespace's.
            let all: Api<TrainingJob> = Api::all(client.clone());
            let jobs = match all.list(&ListParams::default()).await {
                Ok(l) => l.items,
                Err(kube::Error::Api(e)) if e.code == 403 => {
                    eprintln!(
                        "note: not allowed to list jobs of all namespaces; showing namespace {namespace} only"
                    );
                    jobs_here.list(&ListParams::default()).await?.items
                }
                Err(e) => return Err(e.into()),
            };
            let all_queues = queues.list(&ListParams::default()).await?.items;
            let report = QueueReport::of(&queue, &all_queues, &jobs, now);
            print_table_or(cli.output, &report, || report.render())
        }
        Command::Why { job } => {
            let j = jobs_here
                .get_opt(job)
                .await?
                .with_context(|| format!("TrainingJob {job} not found in namespace {namespace}"))?;
            let report = WhyReport::of(&j);
            print_table_or(cli.output, &report, || report.render())
        }
        Command::Suspend { job } | Command::Resume { job } => {
            let suspend = matches!(cli.command, Command::Suspend { .. });
            let verb = if suspend { "suspended" } else { "resumed" };
            let current = jobs_here
                .get_opt(job)
                .await?
                .with_context(|| format!("TrainingJob {job} not found in namespace {namespace}"))?;
            // A finished job neither runs nor waits: suspending or resuming it would change a
            // field and nothing else.
            if let Some(phase) = current
                .status
                .as_ref()
                .map(|s| s.phase)
                .filter(|p| p.is_finished())
            {
                let action = if suspend { "suspend" } else { "resume" };
                bail!("TrainingJob {job} has finished ({phase}): there is nothing to {action}");
            }
            let patch = serde_json::json!({ "spec": { "suspend": suspend } });
            let params = PatchParams {
                field_manager: Some(MANAGER.into()),
                ..PatchParams::default()
            };
            let j = match jobs_here.patch(job, &params, &Patch::Merge(&patch)).await {
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    bail!("TrainingJob {job} not found in namespace {namespace}")
                }
                r => r?,
            };
            print_table_or(
                cli.output,
                &serde_json::json!({
                    "namespace": namespace, "name": job, "suspend": j.spec.suspend
                }),
                || format!("trainingjob.kubetrain.io/{job} {verb}\n"),
            )
        }
        Command::Hold { queue, drain } => {
            let policy = if *drain {
                StopPolicy::HoldAndDrain
            } else {
                StopPolicy::Hold
            };
            set_stop_policy(&client, cli.output, queue, policy).await
        }
        Command::Release { queue } => {
            set_stop_policy(&client, cli.output, queue, StopPolicy::None).await
        }
        Command::Vc { name } => {
            let api: Api<VirtualCluster> = Api::all(client.clone());
            let vcs = match name {
                Some(n) => vec![
                    api.get_opt(n)
                        .await?
                        .with_context(|| format!("VirtualCluster {n} not found"))?,
                ],
                None => api.list(&ListParams::default()).await?.items,
            };
            let rows: Vec<VcRow> = vcs.iter().flat_map(vc_rows).collect();
            print_table_or(cli.output, &rows, || {
                if rows.is_empty() {
                    "No VirtualClusters found.\n".to_string()
                } else {
                    vc_table(&rows).render()
                }
            })
        }
    }
}

/// Sets the queue's `spec.stopPolicy` (a merge patch of that field alone, as `kubectl
/// patch` would) and says what it now does.
async fn set_stop_policy(
    client: &Client,
    output: Output,
    queue: &str,
    policy: StopPolicy,
) -> anyhow::Result<()> {
    let api: Api<Queue> = Api::all(client.clone());
    let patch = serde_json::json!({ "spec": { "stopPolicy": policy } });
    let params = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    };
    let q = match api.patch(queue, &params, &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(e)) if e.code == 404 => bail!("queue {queue} not found"),
        r => r?,
    };
    print_table_or(
        output,
        &serde_json::json!({ "name": queue, "stopPolicy": q.spec.stop_policy }),
        || stop_policy_note(queue, q.spec.stop_policy),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent_and_takes_flags_after_the_command() {
        Cli::command().debug_assert();
        // kubectl passes everything after `kubectl kubetrain` on, flags after the command.
        let cli = Cli::try_parse_from(["kubectl-kubetrain", "jobs", "-n", "ns", "-o", "json"])
            .expect("parses");
        assert_eq!(cli.namespace.as_deref(), Some("ns"));
        assert_eq!(cli.output, Output::Json);
        let cli = Cli::try_parse_from(["kubectl-kubetrain", "why", "llm", "--context", "prod"])
            .expect("parses");
        assert!(matches!(cli.command, Command::Why { ref job } if job == "llm"));
        assert_eq!(cli.context.as_deref(), Some("prod"));
        assert!(
            Cli::try_parse_from(["kubectl-kubetrain", "jobs", "--mine", "--user", "a"]).is_err()
        );
        assert!(Cli::try_parse_from(["kubectl-kubetrain", "jobs", "-o", "wide"]).is_err());
        let cli =
            Cli::try_parse_from(["kubectl-kubetrain", "hold", "nlp", "--drain"]).expect("parses");
        assert!(matches!(cli.command, Command::Hold { ref queue, drain: true } if queue == "nlp"));
        let cli = Cli::try_parse_from(["kubectl-kubetrain", "release", "nlp"]).expect("parses");
        assert!(matches!(cli.command, Command::Release { ref queue } if queue == "nlp"));
    }
}
