//! `/metrics`, `/healthz` and `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::metrics::Metrics;

/// What the endpoints report.
pub struct Health {
    pub metrics: Arc<Metrics>,
    /// Caches synced (a standby is ready too: it can take over at once).
    pub ready: AtomicBool,
}

impl Health {
    /// Not ready until the caches have synced.
    pub fn new(metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Health {
            metrics,
            ready: AtomicBool::new(false),
        })
    }
}

async fn metrics(
    State(h): State<Arc<Health>>,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    (
        StatusCode::OK,
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        h.metrics.encode(),
    )
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(h): State<Arc<Health>>) -> (StatusCode, &'static str) {
    if h.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}

/// Serves until the process stops.
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
    axum::serve(listener, app).await
}

/// Serves in a task of its own; a failure is logged, never fatal.
pub fn spawn(addr: SocketAddr, health: Arc<Health>) {
    tokio::spawn(async move {
        if let Err(e) = serve(addr, health).await {
            tracing::warn!(error = %e, "metrics endpoint stopped");
        }
    });
}
