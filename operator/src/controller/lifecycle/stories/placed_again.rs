//! A gang stopped through no fault of its own and placed again, counting no retry: the cluster's
//! scheduler refuses a pod (or its GPU's reservation), its claims are not ready, or its template or
//! tasks changed.

use super::*;

/// A template fixed while the gang starts (the image name, say) applies at once: the pods
/// made from the old one are stopped and the gang is placed again, in its place and with no
/// retry counted, rather than after the start timeout has cost one. A gang that has started
/// runs on: a template change waits for its next attempt.
#[test]
fn a_template_changed_while_the_gang_starts_starts_it_again() {
    use crate::api::annotations::TEMPLATE_DIGEST_ANNOTATION;
    use crate::controller::pods::template_digest;
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    let old = template_digest(&s.job.spec.tasks[0].template);
    s.annotate_all(TEMPLATE_DIGEST_ANNOTATION, &old);
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    // Unchanged: nothing happens.
    let fx = s.after(2).tick();
    assert!(fx.pod_deletions.is_empty());

    s.job.spec.tasks[0].template["spec"]["containers"][0]["image"] = json!("trainer:fixed");
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.says(ConditionType::Running), ("False", "TemplateChanged"));
    assert_eq!(s.status().reason.as_deref(), Some("TemplateChanged"));
    assert_eq!(reasons(&fx), ["TemplateChanged"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 0);
    s.pods_gone();
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)), "keeps its place");
    assert_eq!(reasons(&fx), ["Requeued"]);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("start again with the changed template")),
        "{:?}",
        s.status().message
    );

    // Started: the change waits for the next attempt.
    let mut s = Story::running(2);
    s.annotate_all(TEMPLATE_DIGEST_ANNOTATION, &old);
    s.job.spec.tasks[0].template["spec"]["containers"][0]["image"] = json!("trainer:fixed");
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.pod_deletions.is_empty());
}

#[test]
fn a_pod_the_cluster_scheduler_refuses_rolls_the_admission_back() {
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![unschedulable("volume node affinity conflict")];
    s.tick();
    assert_eq!(
        s.phase(),
        Phase::Starting,
        "placed, waiting for its binding"
    );
    // Within the deadline: keep waiting.
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty());
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().retry_at, Some(at(60)));
    assert_eq!(s.status().refused_nodes.len(), 1);
    assert_eq!(s.status().refused_nodes[0].node, "n1");
    assert_eq!(s.status().refused_nodes[0].until, at(660));
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "SchedulerRejected")
    );
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    // Back in the queue once the pod is gone, told it is placed again, not retried (an
    // acceptance run read "Backoff over" and a retry count it did not have).
    s.pods.clear();
    s.after(60).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("kube-scheduler refused the one chosen (no retry")),
        "{:?}",
        s.status().message
    );
}

/// A share waiting behind its reservation gate is refused when its GPU's reservation pod
/// is: the device plugin has no GPU free for it on the node kubetrain chose (another pod
/// took it in between). Without this the share waited, gated, until the start timeout.
#[test]
fn a_share_whose_reservation_cannot_be_bound_rolls_the_admission_back() {
    let mut s = Story::new(1);
    s.tick();
    let mut share: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "llm-worker-0", "namespace": "team", "creationTimestamp": stamp(0),
            "labels": {JOB_LABEL: "llm", TASK_LABEL: "worker", INDEX_LABEL: "0"},
            "annotations": {GPUS_ANNOTATION: "0", NODE_ANNOTATION: "n1",
                GPU_SHARE_ANNOTATION: "500", GPU_ASSIGNMENT_ANNOTATION: "device-plugin"}
        },
        "spec": {"containers": [{"name": "c", "image": "x"}],
            "schedulingGates": [{"name": RESERVATION_GATE}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "SchedulingGated", "lastTransitionTime": stamp(0)}]}
    }))
    .expect("pod");
    annotate(&mut share, RANK_ANNOTATION, "0");
    let gpu = reservations::waits_for(&share).expect("a gated share");
    let mut reservation =
        reservations::reservation_pod(&gpu, None, &reservations::ReservationSettings::default());
    reservation.status =
        unschedulable("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.").status;
    s.pods = vec![share];
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation))].into();
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    s.after(30).tick();
    assert_eq!(s.phase(), Phase::Starting, "within the deadline");
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().refused_nodes[0].node, "n1");
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let message = s.status().refused_nodes[0].message.clone();
    assert!(
        message.contains("reservation, pod kubetrain-system/kubetrain-gpu-n1-0, cannot be bound")
            && message.contains("Insufficient nvidia.com/gpu"),
        "{message}"
    );
    // A gated share with no reservation yet (the operator makes it next cycle) waits.
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![gated_share_without_reservation()];
    s.tick();
    s.after(120).tick();
    assert_eq!(s.phase(), Phase::Starting);
}

/// A claim that is not bound is no node's fault: no node is refused (a Kubeflow user's run
/// saw node after node refused for 10 min under the docs' DDP example), and the job is
/// placed again after a wait.
#[test]
fn a_pod_whose_claim_is_unbound_refuses_no_node() {
    let mut s = Story::new(1);
    s.tick();
    s.pods = vec![unschedulable(
        "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. \
         preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
    )];
    s.tick();
    let fx = s.after(60).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert!(s.status().refused_nodes.is_empty());
    assert_eq!(s.status().retry_at, Some(at(120)));
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("not ready on any node")),
        "{:?}",
        s.status().message
    );
    assert_eq!(reasons(&fx), ["SchedulerRejected"]);
}

/// The job's tasks changed while its pods ran (an admission racing the change: the CRD
/// refuses it while the job runs). Fewer replicas: the pod no task has any more is no stray
/// that keeps its GPUs; more: the missing replicas are no "removed" pods. Either way the gang
/// restarts in its new shape, not counted against `maxRetries`.
#[test]
fn a_gang_whose_tasks_changed_restarts_in_the_new_shape() {
    for now in [1, 4] {
        let mut s = Story::running(2);
        for p in &mut s.pods {
            annotate(p, GANG_SIZE_ANNOTATION, "2");
        }
        s.job.spec.tasks[0].replicas = Some(now);
        let fx = s.after(5).tick();
        assert_eq!(s.phase(), Phase::Retrying, "{now} replicas");
        assert_eq!(s.status().retries, 0);
        assert_eq!(fx.stop, Stop::All);
        let message = s.status().message.clone().unwrap_or_default();
        assert!(message.contains("tasks changed"), "{message}");
    }
}
