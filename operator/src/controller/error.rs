//! The controllers' one error type, and what a failed reconcile does: it is counted by
//! reconciler and kind of error (`kubetrain_reconcile_errors_total`), logged with the object
//! and the message, and retried after the object's own backoff ([`super::backoff`]).
//!
//! The metric's labels are bounded: the reconciler, and the error's variant
//! ([`Error::metric_label`]), never its message, which names objects.

use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tracing::warn;

use super::context::Context;
use super::metrics::ErrorLabels;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    /// Adding or removing a finalizer failed, or the object cannot carry one.
    #[error("finalizer: {0}")]
    Finalizer(String),
    /// A Queue being deleted waits for its admitted jobs: not a failure, nothing is counted.
    #[error("queue {queue} still has {jobs} admitted job(s)")]
    QueueNotEmpty { queue: String, jobs: i32 },
    /// A VirtualCluster being deleted waits for the admitted jobs of its queues: not a
    /// failure, nothing is counted.
    #[error("virtual cluster {virtual_cluster} still has {jobs} admitted job(s)")]
    VirtualClusterNotEmpty { virtual_cluster: String, jobs: i32 },
    /// The operator cannot start: its metrics and probes address is taken or not allowed.
    #[error("cannot serve /metrics, /healthz and /readyz on {addr} (--http-addr): {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// The operator cannot start: a cache's watch stopped before its first list.
    #[error("a cache stopped before it synced")]
    CacheClosed,
    /// A part of the leader's work (the scheduler, a reconciler) ended or panicked: the
    /// operator gives up leadership and exits, to be restarted.
    #[error("the {part} stopped: {cause}")]
    Stopped { part: &'static str, cause: String },
}

impl Error {
    /// The error's `error` label on the metric: its variant, in snake case.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Finalizer(_) => "finalizer",
            Error::QueueNotEmpty { .. } => "queue_not_empty",
            Error::VirtualClusterNotEmpty { .. } => "virtual_cluster_not_empty",
            Error::CacheClosed => "cache_closed",
            Error::Listen { .. } => "listen",
            Error::Stopped { .. } => "stopped",
        }
    }
}

// The reconcilers are named by their metric label: `metrics` owns the names.
pub use super::metrics::Reconciler;

/// A failed reconcile of `obj`: counted, logged, and retried after the object's backoff.
pub fn retry<K>(reconciler: Reconciler, obj: &K, err: &Error, ctx: &Context) -> Action
where
    K: Resource<DynamicType = ()>,
{
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ErrorLabels {
            controller: reconciler.name(),
            error: err.metric_label(),
        })
        .inc();
    let delay = ctx.failures.failed(ObjectRef::from_obj(obj).erase());
    let object = match obj.namespace() {
        Some(ns) => format!("{ns}/{}", obj.name_any()),
        None => obj.name_any(),
    };
    warn!(controller = reconciler.name(), %object, error = %err, ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metric_counts_failures_by_reconciler_and_variant_never_by_message() {
        let metrics = super::super::metrics::Metrics::default();
        let errors = [
            Error::Finalizer("object q has no name".into()),
            Error::Finalizer("something else".into()),
            Error::QueueNotEmpty {
                queue: "q".into(),
                jobs: 3,
            },
            Error::VirtualClusterNotEmpty {
                virtual_cluster: "vc".into(),
                jobs: 2,
            },
        ];
        for e in &errors {
            metrics
                .reconcile_errors
                .get_or_create(&ErrorLabels {
                    controller: Reconciler::Queue.name(),
                    error: e.metric_label(),
                })
                .inc();
        }
        let text = metrics.encode();
        assert!(
            text.contains(
                r#"kubetrain_reconcile_errors_total{controller="queue",error="finalizer"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"kubetrain_reconcile_errors_total{controller="queue",error="queue_not_empty"} 1"#
            ),
            "{text}"
        );
        assert!(!text.contains("no name"));
    }
}
