//! Why a job waits, as numbers and names rather than a sentence: `status.waiting`. The
//! `Admitted=False` condition's message says the same for people; this is for the plugin,
//! dashboards and alerts, which read fields instead of parsing English.
//!
//! One struct for every wait: which fields are set depends on `code` (the table in
//! `docs/user-guide.md`, "Why a job waits, field by field"), and a field a wait does not
//! have is absent, never zero. GPU counts are decimals, as `status.gpus`: shared GPUs count
//! as their share.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::TopologyLevel;

/// Why the job waits, field by field: what the `Admitted=False` condition's message is built
/// from. Set while the job waits in its queue; unset once it is admitted, and while it is
/// suspended, retrying or finished.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WaitDetails {
    /// The wait code: the `Admitted` condition's reason (for example `QuotaExhausted`;
    /// it is `Waiting` before the scheduler's first word on the job).
    pub code: String,
    /// GPUs the job needs in all (with `QuotaExhausted`, `OverLimit`, `ExceedsLimit`, and
    /// with `QueueMaxShare`, `UserLimit` and `NoFit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_gpus: Option<f64>,
    /// GPUs in use against what the job waits on: the VirtualCluster's guarantee
    /// (`QuotaExhausted`) or limit (`OverLimit`), the queue's `maxShare` (`QueueMaxShare`),
    /// the user's GPUs in the queue (`UserLimit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_gpus: Option<f64>,
    /// The VirtualCluster's guarantee for the job's GPU types (`QuotaExhausted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee_gpus: Option<f64>,
    /// The hard limit the job waits on: the VirtualCluster's `spec.limit` (`OverLimit`), the
    /// queue's `maxShare` in GPUs (`QueueMaxShare`), the queue's per-user limit
    /// (`UserLimit`); with `ExceedsLimit`, the limit smaller than the job itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_gpus: Option<f64>,
    /// How many GPUs must free up within the guarantee or limit before the job fits it
    /// (`QuotaExhausted`, `OverLimit`, `QueueMaxShare`, `UserLimit`). Unset when the job is
    /// larger than the guarantee or limit itself: no freeing makes room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_gpus: Option<f64>,
    /// Free whole GPUs of the job's types (`NoFit`; of the nodes its constraints allow
    /// when `onAllowedNodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_gpus: Option<f64>,
    /// The most free whole GPUs on one node of the job's types (`NoFit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_gpus_on_one_node: Option<f64>,
    /// The most GPUs one replica of the job needs (`NoFit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_replica_gpus: Option<f64>,
    /// `freeGpus` and `freeGpusOnOneNode` count only the nodes the job's node selector,
    /// required affinity and tolerations allow (`NoFit`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_allowed_nodes: bool,
    /// The job is within its VirtualCluster's guarantee, but that guarantee cannot all be
    /// obtained now, even by reclaim (`NoFit`; the VirtualCluster's `GuaranteeAtRisk`
    /// condition says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guarantee_at_risk: bool,
    /// The job's `topology.required`, within one domain of which its GPUs must lie
    /// (`QuotaExhausted`, `NoFit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_topology: Option<TopologyLevel>,
    /// The GPU types the job may use (`NoFit`; empty: any type), or whose free GPUs are kept
    /// as whole cells (`ReservedForCells`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_types: Vec<String>,
    /// The VirtualCluster the wait is about (`QuotaExhausted`, `OverLimit`, and `NoFit`
    /// with `guaranteeAtRisk`, `VirtualClusterTerminating`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_cluster: Option<String>,
    /// The queue the wait is about (`QueueMaxShare`: the queue at its maximum, which may be
    /// one above the job's; `UserLimit`, `BehindQueueHead`, and
    /// with `Returning`, `BehindReturningJob` and `QueueTerminating`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The user at the per-user limit (`UserLimit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The sibling queue that uses more than its share of the guarantee with jobs of higher
    /// priority than this one, so its share is not taken back for it (`QuotaExhausted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_kept_by: Option<String>,
    /// The jobs (`namespace/name`) the wait is on: those asked to leave for it
    /// (`WaitingForPreemption`), those it would preempt once their minimum runtime is over
    /// (`WaitingForMinRuntime`), those whose terminating pods hold its GPUs
    /// (`WaitingForTerminatingPods`), the one ahead of it (with `BehindQueueHead`
    /// and `BehindReturningJob`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
    /// With `WaitingForPreemption`: why the jobs it waits on were asked to leave
    /// (`Reclaim`, `Priority`, `QueueShare`, `Consolidation`, `Drain` or `UnhealthyGpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_reason: Option<String>,
    /// When the jobs it waits on are preempted at the latest (`WaitingForMinRuntime`), or
    /// when the reservation it would delay begins (`BehindReservation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Time>,
    /// How many cordoned or not-ready nodes of its GPU types the job would fit with
    /// (`NodesUnavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<i32>,
    /// The first few of those nodes by name (`NodesUnavailable`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

impl WaitDetails {
    /// A wait with its code and no numbers yet.
    pub fn new(code: impl Into<String>) -> WaitDetails {
        WaitDetails {
            code: code.into(),
            ..WaitDetails::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field is camelCase, and a wait writes only the fields it has: no zeros, no
    /// empty lists, no `false` (a dashboard reads an absent field as "not this wait's").
    #[test]
    fn a_wait_writes_only_its_own_fields_in_camel_case() {
        let quota = WaitDetails {
            requested_gpus: Some(8.0),
            used_gpus: Some(6.5),
            guarantee_gpus: Some(8.0),
            short_gpus: Some(6.5),
            virtual_cluster: Some("nlp".into()),
            ..WaitDetails::new("QuotaExhausted")
        };
        assert_eq!(
            serde_json::to_value(&quota).expect("json"),
            serde_json::json!({
                "code": "QuotaExhausted", "requestedGpus": 8.0, "usedGpus": 6.5,
                "guaranteeGpus": 8.0, "shortGpus": 6.5, "virtualCluster": "nlp",
            })
        );
        assert_eq!(
            serde_json::to_value(WaitDetails::new("Waiting")).expect("json"),
            serde_json::json!({"code": "Waiting"})
        );
    }

    /// A newer operator's field is ignored and a missing one is absent: the plugin reads
    /// whatever operator wrote the status.
    #[test]
    fn unknown_fields_and_missing_ones_read_back() {
        let read: WaitDetails = serde_json::from_value(serde_json::json!({
            "code": "NoFit", "freeGpus": 3, "onAllowedNodes": true, "someNewField": [1],
        }))
        .expect("reads");
        assert_eq!(
            read,
            WaitDetails {
                free_gpus: Some(3.0),
                on_allowed_nodes: true,
                ..WaitDetails::new("NoFit")
            }
        );
    }
}
