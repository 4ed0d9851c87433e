//! The kubetrain operator.
//!
//! Until the controllers land (see the Controllers issue) it connects, checks that the CRDs
//! are installed, and logs what it watches: it never pretends to schedule.

use clap::{Parser, ValueEnum};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource, ResourceExt};
use kubetrain::api::{Queue, TrainingJob, VirtualCluster};
use tracing::{info, warn};

#[derive(Parser, Debug)]
#[command(name = "kubetrain-operator", version, about = "Runs deep-learning training jobs on shared GPU clusters")]
struct Args {
    /// Log format.
    #[arg(long, env = "KUBETRAIN_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Logs every change of one kind, as a stand-in for its controller.
async fn watch<K>(api: Api<K>)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    info!(%kind, "watching");
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    loop {
        match stream.try_next().await {
            Ok(Some(Event::Apply(obj))) => info!(%kind, name = %obj.name_any(), namespace = obj.namespace().unwrap_or_default(), "changed"),
            Ok(Some(Event::Delete(obj))) => info!(%kind, name = %obj.name_any(), namespace = obj.namespace().unwrap_or_default(), "deleted"),
            Ok(Some(Event::InitDone)) => info!(%kind, "initial list done"),
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => warn!(%kind, error = %e, "watch error; retrying"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing(args.log_format);
    let client = Client::try_default().await?;
    let version = client.apiserver_version().await?;
    info!(server = %version.git_version, "connected to the API server");
    for (plural, _) in kubetrain::api::crds() {
        let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
            Api::all(client.clone());
        if crds.get_opt(&format!("{plural}.kubetrain.io")).await?.is_none() {
            anyhow::bail!("CRD {plural}.kubetrain.io is not installed: kubectl apply -f crds/");
        }
    }
    info!("the scheduler and controllers are not implemented yet; watching only");
    let watchers = futures::future::join_all([
        tokio::spawn(watch(Api::<VirtualCluster>::all(client.clone()))),
        tokio::spawn(watch(Api::<Queue>::all(client.clone()))),
        tokio::spawn(watch(Api::<TrainingJob>::all(client.clone()))),
        tokio::spawn(watch(Api::<Node>::all(client.clone()))),
    ]);
    tokio::select! {
        _ = watchers => {}
        _ = tokio::signal::ctrl_c() => info!("shutting down"),
    }
    Ok(())
}
