//! `status.waiting` from the scheduler's reason: the same numbers and names as the
//! `Admitted=False` message (`WaitReason`'s `Display`), as fields. Both read the one
//! `WaitReason` the status publishes (`waiting::publish`), and the derived numbers (GPUs
//! left, GPUs short) come from the one place the message takes them from
//! ([`WaitReason::room`]), so the two never disagree.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::api::TopologyLevel;
use crate::api::WaitDetails;
use crate::sched::{self, Gpus, WaitReason};

/// The wait's fields, for `status.waiting`.
pub fn of(reason: &WaitReason) -> WaitDetails {
    let details = WaitDetails::new(reason.code().as_str());
    match reason {
        WaitReason::Invalid { .. } | WaitReason::NeverFits { .. } => details,
        WaitReason::QuotaExhausted { .. }
        | WaitReason::OverLimit { .. }
        | WaitReason::QueueMaxShare { .. }
        | WaitReason::UserLimit { .. } => limits(reason, details),
        WaitReason::NoFit { .. }
        | WaitReason::NodesUnavailable { .. }
        | WaitReason::ReservedForCells { .. } => room(reason, details),
        WaitReason::WaitingForPreemption { .. }
        | WaitReason::WaitingForTerminatingPods { .. }
        | WaitReason::WaitingForMinRuntime { .. }
        | WaitReason::BehindQueueHead { .. }
        | WaitReason::BehindReservation { .. }
        | WaitReason::Returning { .. }
        | WaitReason::BehindReturningJob { .. }
        | WaitReason::QueueTerminating { .. }
        | WaitReason::VirtualClusterTerminating { .. }
        | WaitReason::QueueHeld { .. } => others(reason, details),
    }
}

/// GPUs as the status writes them: decimals, shared GPUs as their share.
fn gpus(g: Gpus) -> f64 {
    g.0 as f64 / 1000.0
}

/// Waits against a guarantee or a hard limit: what is used of it, what the job needs,
/// and what must free up (absent for a job larger than the limit itself).
fn limits(reason: &WaitReason, details: WaitDetails) -> WaitDetails {
    let details = WaitDetails {
        short_gpus: reason.room().map(|r| gpus(r.short)),
        ..details
    };
    match reason {
        WaitReason::QuotaExhausted {
            virtual_cluster,
            guaranteed_gpus,
            in_use_gpus,
            needed_gpus,
            share_kept_by,
            required,
        } => WaitDetails {
            virtual_cluster: Some(virtual_cluster.clone()),
            guarantee_gpus: Some(f64::from(*guaranteed_gpus)),
            used_gpus: Some(gpus(*in_use_gpus)),
            requested_gpus: Some(gpus(*needed_gpus)),
            share_kept_by: share_kept_by.clone(),
            required_topology: required.map(topology),
            ..details
        },
        WaitReason::OverLimit {
            virtual_cluster,
            limit_gpus,
            in_use_gpus,
            needed_gpus,
        } => WaitDetails {
            virtual_cluster: Some(virtual_cluster.clone()),
            limit_gpus: Some(f64::from(*limit_gpus)),
            used_gpus: Some(gpus(*in_use_gpus)),
            requested_gpus: Some(gpus(*needed_gpus)),
            ..details
        },
        WaitReason::QueueMaxShare {
            queue,
            max_gpus,
            in_use_gpus,
            needed_gpus,
        } => WaitDetails {
            queue: Some(queue.clone()),
            limit_gpus: Some(gpus(*max_gpus)),
            used_gpus: Some(gpus(*in_use_gpus)),
            requested_gpus: Some(gpus(*needed_gpus)),
            ..details
        },
        WaitReason::UserLimit {
            user,
            queue,
            limit_gpus,
            in_use_gpus,
            needed_gpus,
        } => WaitDetails {
            user: Some(user.clone()),
            queue: Some(queue.clone()),
            limit_gpus: Some(f64::from(*limit_gpus)),
            used_gpus: Some(gpus(*in_use_gpus)),
            requested_gpus: Some(gpus(*needed_gpus)),
            ..details
        },
        _ => details,
    }
}

/// Waits for room in the shape the job needs: the free GPUs, the nodes that are back, the
/// cells kept for others.
fn room(reason: &WaitReason, details: WaitDetails) -> WaitDetails {
    match reason {
        WaitReason::NoFit {
            flavors,
            needed_gpus,
            largest_per_replica,
            required,
            largest_free_on_node,
            free_gpus,
            on_allowed_nodes,
            guarantee_at_risk,
        } => WaitDetails {
            gpu_types: flavors.iter().map(|f| f.0.clone()).collect(),
            requested_gpus: Some(gpus(*needed_gpus)),
            per_replica_gpus: Some(f64::from(*largest_per_replica)),
            required_topology: required.map(topology),
            free_gpus_on_one_node: Some(f64::from(*largest_free_on_node)),
            free_gpus: Some(f64::from(*free_gpus)),
            on_allowed_nodes: *on_allowed_nodes,
            guarantee_at_risk: guarantee_at_risk.is_some(),
            virtual_cluster: guarantee_at_risk.clone(),
            ..details
        },
        WaitReason::NodesUnavailable { count, nodes } => WaitDetails {
            node_count: Some(i32::try_from(*count).unwrap_or(i32::MAX)),
            nodes: nodes.clone(),
            ..details
        },
        WaitReason::ReservedForCells { flavor } => WaitDetails {
            gpu_types: vec![flavor.0.clone()],
            ..details
        },
        _ => details,
    }
}

/// Waits on other jobs (leaving, or ahead in line) and on queues and VirtualClusters being
/// deleted.
fn others(reason: &WaitReason, details: WaitDetails) -> WaitDetails {
    match reason {
        WaitReason::WaitingForPreemption { reason, victims } => WaitDetails {
            jobs: victims.clone(),
            preemption_reason: Some(reason.to_string()),
            ..details
        },
        WaitReason::WaitingForTerminatingPods { pods_of } => WaitDetails {
            jobs: pods_of.clone(),
            ..details
        },
        WaitReason::WaitingForMinRuntime { until, victims } => WaitDetails {
            jobs: victims.clone(),
            until: Timestamp::from_second(*until).ok().map(Time),
            ..details
        },
        WaitReason::BehindQueueHead { queue, head }
        | WaitReason::BehindReturningJob { queue, head } => WaitDetails {
            queue: Some(queue.clone()),
            jobs: vec![head.clone()],
            ..details
        },
        WaitReason::BehindReservation { queue, head, at } => WaitDetails {
            queue: Some(queue.clone()),
            jobs: vec![head.clone()],
            until: Timestamp::from_second(*at).ok().map(Time),
            ..details
        },
        WaitReason::Returning { queue }
        | WaitReason::QueueTerminating { queue }
        | WaitReason::QueueHeld { queue, .. } => WaitDetails {
            queue: Some(queue.clone()),
            ..details
        },
        WaitReason::VirtualClusterTerminating { virtual_cluster } => WaitDetails {
            virtual_cluster: Some(virtual_cluster.clone()),
            ..details
        },
        _ => details,
    }
}

/// The core's topology level as the API names it (`spec.topology.required`'s values).
fn topology(level: sched::TopologyLevel) -> TopologyLevel {
    match level {
        sched::TopologyLevel::GpuGroup => TopologyLevel::GpuGroup,
        sched::TopologyLevel::Node => TopologyLevel::Node,
        sched::TopologyLevel::Rack => TopologyLevel::Rack,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{Flavor, PreemptionReason};

    fn quota(in_use: u64, needed: u64) -> WaitReason {
        WaitReason::QuotaExhausted {
            virtual_cluster: "nlp".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(in_use),
            needed_gpus: Gpus(needed),
            share_kept_by: Some("vision".into()),
            required: Some(sched::TopologyLevel::Rack),
        }
    }

    /// The guarantee in use: the numbers the message says, "needs 1.5, 0.75 more than are
    /// left", as fields; a job larger than the whole guarantee has no shortfall to free.
    #[test]
    fn a_quota_wait_carries_the_numbers_of_its_message() {
        let r = quota(8_250, 1_500);
        assert!(
            r.to_string()
                .contains("this job needs 1.5, 1.5 more than are left"),
            "{r}"
        );
        assert_eq!(
            of(&r),
            WaitDetails {
                virtual_cluster: Some("nlp".into()),
                guarantee_gpus: Some(8.0),
                used_gpus: Some(8.25),
                requested_gpus: Some(1.5),
                short_gpus: Some(1.5),
                share_kept_by: Some("vision".into()),
                required_topology: Some(TopologyLevel::Rack),
                ..WaitDetails::new("QuotaExhausted")
            }
        );
        assert_eq!(of(&quota(6_500, 2_000)).short_gpus, Some(0.5));
        let larger = of(&quota(0, 24_000));
        assert_eq!(
            (larger.requested_gpus, larger.short_gpus),
            (Some(24.0), None)
        );
    }

    /// Each hard limit names what it limits, the limit, what is in use and what must free
    /// up; a job larger than the limit itself is `ExceedsLimit`, with nothing to free.
    #[test]
    fn a_limit_wait_names_its_limit_and_what_must_free_up() {
        let over = |needed| WaitReason::OverLimit {
            virtual_cluster: "nlp".into(),
            limit_gpus: 20,
            in_use_gpus: Gpus(17_000),
            needed_gpus: Gpus(needed),
        };
        assert_eq!(
            of(&over(8_000)),
            WaitDetails {
                virtual_cluster: Some("nlp".into()),
                limit_gpus: Some(20.0),
                used_gpus: Some(17.0),
                requested_gpus: Some(8.0),
                short_gpus: Some(5.0),
                ..WaitDetails::new("OverLimit")
            }
        );
        let exceeds = of(&over(24_000));
        assert_eq!(
            (exceeds.code.as_str(), exceeds.short_gpus),
            ("ExceedsLimit", None)
        );
        let share = of(&WaitReason::QueueMaxShare {
            queue: "dev".into(),
            max_gpus: Gpus(4_500),
            in_use_gpus: Gpus(3_000),
            needed_gpus: Gpus(2_000),
        });
        assert_eq!(
            (share.queue.as_deref(), share.limit_gpus, share.short_gpus),
            (Some("dev"), Some(4.5), Some(0.5))
        );
        let user = of(&WaitReason::UserLimit {
            user: "bob".into(),
            queue: "dev".into(),
            limit_gpus: 4,
            in_use_gpus: Gpus(4_000),
            needed_gpus: Gpus(1_000),
        });
        assert_eq!(
            (user.user.as_deref(), user.code.as_str(), user.short_gpus),
            (Some("bob"), "UserLimit", Some(1.0))
        );
    }

    /// No room in the job's shape: the free GPUs in all and on one node, the shape asked,
    /// and the VirtualCluster whose guarantee is at risk.
    #[test]
    fn a_room_wait_carries_the_free_gpus_and_the_nodes() {
        let no_fit = of(&WaitReason::NoFit {
            flavors: vec![Flavor::new("A100")],
            needed_gpus: Gpus(16_000),
            largest_per_replica: 8,
            required: Some(sched::TopologyLevel::GpuGroup),
            largest_free_on_node: 3,
            free_gpus: 7,
            on_allowed_nodes: true,
            guarantee_at_risk: Some("nlp".into()),
        });
        assert_eq!(
            no_fit,
            WaitDetails {
                gpu_types: vec!["A100".into()],
                requested_gpus: Some(16.0),
                per_replica_gpus: Some(8.0),
                required_topology: Some(TopologyLevel::GpuGroup),
                free_gpus_on_one_node: Some(3.0),
                free_gpus: Some(7.0),
                on_allowed_nodes: true,
                guarantee_at_risk: true,
                virtual_cluster: Some("nlp".into()),
                ..WaitDetails::new("NoFit")
            }
        );
        let nodes = of(&WaitReason::nodes_unavailable(vec!["n2", "n1", "n2"]));
        assert_eq!(
            (nodes.node_count, nodes.nodes),
            (Some(2), vec!["n1".to_string(), "n2".to_string()])
        );
        let cells = of(&WaitReason::ReservedForCells {
            flavor: Flavor::new("H100"),
        });
        assert_eq!(
            (cells.code.as_str(), cells.gpu_types),
            ("ReservedForCells", vec!["H100".to_string()])
        );
    }

    /// Waits on other jobs name them; waits on a queue or VirtualCluster name it.
    #[test]
    fn a_wait_on_other_jobs_names_them() {
        let preempting = of(&WaitReason::WaitingForPreemption {
            reason: PreemptionReason::QueueShare,
            victims: vec!["a/x".into(), "a/y".into()],
        });
        assert_eq!(preempting.jobs, ["a/x", "a/y"]);
        assert_eq!(preempting.preemption_reason.as_deref(), Some("QueueShare"));
        let young = of(&WaitReason::WaitingForMinRuntime {
            until: 1_795_795_697,
            victims: vec!["a/young".into()],
        });
        assert_eq!(
            young.until.map(|t| t.0.to_string()).as_deref(),
            Some("2026-11-27T16:08:17Z")
        );
        let pods = of(&WaitReason::WaitingForTerminatingPods {
            pods_of: vec!["a/old".into()],
        });
        assert_eq!(pods.jobs, ["a/old"]);
        for (r, code) in [
            (
                WaitReason::BehindQueueHead {
                    queue: "q".into(),
                    head: "a/h".into(),
                },
                "BehindQueueHead",
            ),
            (
                WaitReason::BehindReturningJob {
                    queue: "q".into(),
                    head: "a/h".into(),
                },
                "BehindReturningJob",
            ),
        ] {
            let d = of(&r);
            assert_eq!(
                (d.code.as_str(), d.queue.as_deref(), d.jobs),
                (code, Some("q"), vec!["a/h".to_string()])
            );
        }
        let gone = of(&WaitReason::QueueTerminating { queue: "q".into() });
        assert_eq!(gone.queue.as_deref(), Some("q"));
        let vc = of(&WaitReason::VirtualClusterTerminating {
            virtual_cluster: "nlp".into(),
        });
        assert_eq!(
            (vc.code.as_str(), vc.virtual_cluster.as_deref()),
            ("VirtualClusterTerminating", Some("nlp"))
        );
    }

    /// A spec that cannot be scheduled has its code and nothing else: its `Valid`
    /// condition, or the message, says why.
    #[test]
    fn an_unschedulable_spec_has_its_code_only() {
        let invalid = WaitReason::Invalid {
            message: "zero replicas".into(),
        };
        assert_eq!(of(&invalid), WaitDetails::new("Invalid"));
        let never = WaitReason::NeverFits {
            message: "no node has 16 GPUs".into(),
        };
        assert_eq!(of(&never), WaitDetails::new("NeverFits"));
        let back = of(&WaitReason::Returning { queue: "q".into() });
        assert_eq!(
            (back.code.as_str(), back.queue.as_deref()),
            ("Returning", Some("q"))
        );
    }
}
