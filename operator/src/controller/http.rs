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
async fn serve(listener: tokio::net::TcpListener, health: Arc<Health>) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health);
    axum::serve(listener, app).await
}

/// Binds `addr` now, so that an address in use stops the operator at start (as a Deployment
/// whose probes could never answer should), then serves in a task of its own.
pub async fn spawn(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
    tokio::spawn(async move {
        if let Err(e) = serve(listener, health).await {
            tracing::warn!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address another process holds stops the operator at start (an admin's second
    /// `make run` served no /metrics and no probes, and said so only in a warning).
    #[tokio::test]
    async fn an_address_in_use_is_an_error_at_start() {
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let addr = taken.local_addr().expect("its address");
        let health = Health::new(Arc::new(super::super::metrics::Metrics::default()));
        let err = spawn(addr, health).await.expect_err("the port is taken");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    }
}
