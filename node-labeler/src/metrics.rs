//! `/metrics` of the labeler: each GPU's last load sample under the names NVIDIA's DCGM
//! exporter uses (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_FB_FREE`, with
//! its `gpu`, `UUID` and `Hostname` labels), so dashboards built for DCGM read them, and the
//! count of load annotation writes.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tracing::{error, info};

use crate::load::Sample;

/// Labels of one GPU's series, as DCGM's exporter names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GpuLabels {
    /// NVML index.
    pub gpu: String,
    /// GPU UUID.
    #[prometheus(flatten)]
    pub ids: GpuIds,
}

/// The `UUID` and `Hostname` labels (DCGM's spelling).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
#[allow(non_snake_case)]
pub struct GpuIds {
    /// GPU UUID.
    pub UUID: String,
    /// The Node.
    pub Hostname: String,
}

/// The labeler's metrics.
pub struct Metrics {
    registry: Registry,
    utilization: Family<GpuLabels, Gauge>,
    memory_used: Family<GpuLabels, Gauge>,
    memory_free: Family<GpuLabels, Gauge>,
    /// Load annotation writes made.
    pub load_writes: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let utilization = Family::<GpuLabels, Gauge>::default();
        let memory_used = Family::<GpuLabels, Gauge>::default();
        let memory_free = Family::<GpuLabels, Gauge>::default();
        let load_writes = Counter::default();
        registry.register(
            "DCGM_FI_DEV_GPU_UTIL",
            "GPU utilization (in %), last NVML sample",
            utilization.clone(),
        );
        registry.register(
            "DCGM_FI_DEV_FB_USED",
            "Framebuffer memory used (in MiB), last NVML sample",
            memory_used.clone(),
        );
        registry.register(
            "DCGM_FI_DEV_FB_FREE",
            "Framebuffer memory free (in MiB), last NVML sample",
            memory_free.clone(),
        );
        registry.register(
            "kubetrain_labeler_load_writes",
            "Writes of the gpu.kubetrain.io/load annotation",
            load_writes.clone(),
        );
        Metrics {
            registry,
            utilization,
            memory_used,
            memory_free,
            load_writes,
        }
    }
}

impl Metrics {
    /// Records one GPU's latest sample.
    pub fn observe(&self, node: &str, gpu: u32, uuid: &str, sample: &Sample) {
        let labels = GpuLabels {
            gpu: gpu.to_string(),
            ids: GpuIds {
                UUID: uuid.to_string(),
                Hostname: node.to_string(),
            },
        };
        let used = sample.memory_used_mib as i64;
        self.utilization
            .get_or_create(&labels)
            .set(sample.utilization_percent as i64);
        self.memory_used.get_or_create(&labels).set(used);
        self.memory_free
            .get_or_create(&labels)
            .set((sample.memory_total_mib as i64 - used).max(0));
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

async fn serve_metrics(
    State(m): State<Arc<Metrics>>,
) -> ([(&'static str, &'static str); 1], String) {
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
}

/// Serves `/metrics` on `addr` until the process ends; a bind failure is logged, and the
/// labeler goes on without it.
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>) {
    let app = Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics);
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => {
            info!(%addr, "serving /metrics");
            if let Err(e) = axum::serve(listener, app).await {
                error!(error = %e, "/metrics server stopped");
            }
        }
        Err(e) => error!(%addr, error = %e, "cannot serve /metrics"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_samples_under_dcgm_names_and_labels() {
        let m = Metrics::default();
        let sample = Sample {
            utilization_percent: 57,
            memory_used_mib: 1_000,
            memory_total_mib: 81_559,
        };
        m.observe("gpu-a1", 3, "GPU-abc", &sample);
        let text = m.encode();
        assert!(
            text.contains(r#"DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-abc",Hostname="gpu-a1"} 57"#),
            "{text}"
        );
        assert!(
            text.contains(r#"DCGM_FI_DEV_FB_FREE{gpu="3",UUID="GPU-abc",Hostname="gpu-a1"} 80559"#)
        );
        assert!(text.contains("kubetrain_labeler_load_writes_total 0"));
    }
}
