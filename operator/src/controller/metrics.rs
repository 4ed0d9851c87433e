//! Prometheus metrics, served on `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::sched::PreemptionReason;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VcLabels {
    pub virtual_cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub queue: String,
}

/// A failed reconcile: which reconciler, and the error's variant (`Error::metric_label`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub controller: &'static str,
    pub error: &'static str,
}

/// A gauge of fractional values (GPUs, of which a job may hold a share).
pub type FractionGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The reconcilers, as the `controller` label names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reconciler {
    TrainingJob,
    Queue,
    VirtualCluster,
}

impl Reconciler {
    pub const ALL: [Reconciler; 3] = [
        Reconciler::TrainingJob,
        Reconciler::Queue,
        Reconciler::VirtualCluster,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reconciler::TrainingJob => "trainingjob",
            Reconciler::Queue => "queue",
            Reconciler::VirtualCluster => "virtualcluster",
        }
    }
}

/// Every metric the operator exports.
pub struct Metrics {
    pub registry: Registry,
    pub jobs: Family<PhaseLabels, Gauge>,
    pub queueing_delay: Family<QueueLabels, Histogram>,
    pub admissions: Family<QueueLabels, Counter>,
    pub cycle_seconds: Histogram,
    pub preemptions: Family<ReasonLabels, Counter>,
    pub gpus_guaranteed: Family<VcLabels, Gauge>,
    /// GPUs as fractions, like the status: a shared GPU counts as its share.
    pub gpus_in_use: Family<VcLabels, FractionGauge>,
    pub gpus_bonus: Family<VcLabels, FractionGauge>,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub workload_history_arrivals: Gauge,
    /// 1 while this replica holds the leader Lease, else 0.
    pub leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubetrain");
        let jobs = Family::<PhaseLabels, Gauge>::default();
        registry.register("jobs", "TrainingJobs by phase", jobs.clone());
        let queueing_delay = Family::<QueueLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1.0, 2.0, 16))
        });
        registry.register(
            "queueing_delay_seconds",
            "Time from entering the queue to admission",
            queueing_delay.clone(),
        );
        let admissions = Family::<QueueLabels, Counter>::default();
        registry.register("admissions", "Jobs admitted", admissions.clone());
        let cycle_seconds = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        registry.register(
            "scheduling_cycle_seconds",
            "Duration of one scheduling cycle (snapshot and decisions)",
            cycle_seconds.clone(),
        );
        let preemptions = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "preemptions",
            "Jobs asked to checkpoint and leave, by reason",
            preemptions.clone(),
        );
        let gpus_guaranteed = Family::<VcLabels, Gauge>::default();
        registry.register(
            "virtualcluster_gpus_guaranteed",
            "Guaranteed GPUs per VirtualCluster",
            gpus_guaranteed.clone(),
        );
        let gpus_in_use = Family::<VcLabels, FractionGauge>::default();
        registry.register(
            "virtualcluster_gpus_in_use",
            "GPUs held per VirtualCluster",
            gpus_in_use.clone(),
        );
        let gpus_bonus = Family::<VcLabels, FractionGauge>::default();
        registry.register(
            "virtualcluster_gpus_bonus",
            "GPUs held beyond the guarantee per VirtualCluster",
            gpus_bonus.clone(),
        );
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Reconciliations that failed and were retried, by controller and error",
            reconcile_errors.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease and schedules, 0 while it stands by",
            leader.clone(),
        );
        let workload_history_arrivals = Gauge::default();
        registry.register(
            "workload_history_arrivals",
            "Job arrivals in the learned workload history (the shape mix of the fragmentation score)",
            workload_history_arrivals.clone(),
        );
        // The series a rate or an alert reads exist from the start, at zero: a counter that
        // first appears at 1 hides that first increment from `increase()`, and a family with
        // no series is left out of /metrics altogether, HELP line and all.
        for reason in PreemptionReason::ALL {
            let _ = preemptions.get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            });
        }
        for reconciler in Reconciler::ALL {
            let _ = reconcile_errors.get_or_create(&ErrorLabels {
                controller: reconciler.name(),
                error: "kube",
            });
        }
        Metrics {
            registry,
            jobs,
            queueing_delay,
            admissions,
            cycle_seconds,
            preemptions,
            gpus_guaranteed,
            gpus_in_use,
            gpus_bonus,
            reconcile_errors,
            workload_history_arrivals,
            leader,
        }
    }
}

impl Metrics {
    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Drops a deleted VirtualCluster's gauges. Kept, they froze at their last values: a
    /// tenant that no longer exists still "guaranteed" its GPUs in every sum, and the
    /// guarantee-not-met alert could fire for it.
    pub fn forget_virtual_cluster(&self, name: &str) {
        let labels = VcLabels {
            virtual_cluster: name.to_string(),
        };
        self.gpus_guaranteed.remove(&labels);
        self.gpus_in_use.remove(&labels);
        self.gpus_bonus.remove(&labels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alerts on `increase(kubetrain_reconcile_errors_total[...]) > 0` and the preemption
    /// rates see the first event only if the series existed before it.
    #[test]
    fn counters_alerts_read_exist_at_zero_from_the_start() {
        let text = Metrics::default().encode();
        for line in [
            "# HELP kubetrain_reconcile_errors ",
            r#"kubetrain_reconcile_errors_total{controller="trainingjob",error="kube"} 0"#,
            r#"kubetrain_reconcile_errors_total{controller="queue",error="kube"} 0"#,
            "# HELP kubetrain_preemptions ",
            r#"kubetrain_preemptions_total{reason="Reclaim"} 0"#,
            r#"kubetrain_preemptions_total{reason="UnhealthyGpu"} 0"#,
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn a_deleted_virtual_cluster_leaves_no_series() {
        let m = Metrics::default();
        for vc in ["gone", "kept"] {
            let labels = VcLabels {
                virtual_cluster: vc.into(),
            };
            m.gpus_guaranteed.get_or_create(&labels).set(16);
            m.gpus_in_use.get_or_create(&labels).set(8.0);
            m.gpus_bonus.get_or_create(&labels).set(0.5);
        }
        m.forget_virtual_cluster("gone");
        let text = m.encode();
        assert!(!text.contains(r#"virtual_cluster="gone""#), "{text}");
        for metric in ["guaranteed", "in_use", "bonus"] {
            let line =
                format!(r#"kubetrain_virtualcluster_gpus_{metric}{{virtual_cluster="kept"}}"#);
            assert!(text.contains(&line), "{line} missing from:\n{text}");
        }
    }
}
