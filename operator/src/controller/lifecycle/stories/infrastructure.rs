//! What the platform does is not the job's fault: a node lost, a GPU turned unhealthy, a share's
//! reservation lost, a pod evicted, garbage-collected or deleted; the gang restarts without
//! counting a retry, and a pod stuck on a lost node is deleted with no grace.

use super::*;

#[test]
fn a_lost_node_restarts_the_gang_without_counting_a_retry() {
    let mut s = Story::running(2);
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
    assert_eq!(
        fx.events[0].action.as_deref(),
        Some("InfrastructureFailure1")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);

    // Once the platform's allowance is used up, the failure counts.
    let mut s = Story::running(1);
    s.job
        .status
        .as_mut()
        .expect("status")
        .infrastructure_retries = 3;
    s.world.nodes.clear();
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("node n1 is gone"))
    );
}

#[test]
fn a_replica_failing_on_an_unhealthy_gpu_is_not_the_jobs_fault() {
    let mut s = Story::running(2);
    s.world.nodes.insert(
        "n1".into(),
        NodeState::Up {
            unhealthy_gpus: [1].into_iter().collect(),
        },
    );
    s.pods[1].status.as_mut().expect("status").phase = Some("Failed".into());
    s.after(10).tick();
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert!(
        s.status()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("on GPU 1 of node n1, which turned unhealthy"))
    );
}

/// A share runs on the device its GPU's reservation was given; kube-scheduler preempting
/// that reservation for another pod (or someone deleting it) hands the device back to the
/// plugin while the share still uses it. The share stops and runs again on a GPU held anew,
/// as on a lost node, without counting a retry (an acceptance run found it ran on, the
/// device given to the preemptor, with no word of it).
#[test]
fn a_share_whose_reservation_is_lost_restarts_without_counting_a_retry() {
    let mut s = Story::running(1);
    let pod = &mut s.pods[0];
    annotate(pod, GPU_SHARE_ANNOTATION, "500");
    annotate(pod, GPU_ASSIGNMENT_ANNOTATION, "device-plugin");
    annotate(pod, NODE_ANNOTATION, "n1");
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(JOB_LABEL.into(), "llm".into());
    annotate(pod, RESERVATION_UID_ANNOTATION, "r-1");
    let gpu = reservations::held_through(pod).expect("a share held through a reservation");
    let mut reservation =
        reservations::reservation_pod(&gpu, None, &reservations::ReservationSettings::default());
    reservation.metadata.uid = Some("r-1".into());
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation.clone()))].into();
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Running, "held: {:?}", reasons(&fx));
    // Preempted: kube-scheduler deletes it.
    reservation.metadata.deletion_timestamp = Some(at(10));
    s.world.reservations = [("llm-worker-0".to_string(), Arc::new(reservation))].into();
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let message = s.status().message.clone().unwrap_or_default();
    assert!(
        message.contains("reservation kubetrain-gpu-n1-0 is being deleted")
            && message.contains("no longer held from the device plugin"),
        "{message}"
    );
}

#[test]
fn a_pod_stuck_terminating_on_a_lost_node_is_force_deleted() {
    let mut s = Story::running(1);
    s.pods[0].metadata.deletion_timestamp = Some(at(5));
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    // Graceful deletion not overdue yet.
    s.now = 4;
    let fx = s.tick();
    assert!(fx.pod_deletions.is_empty());
    s.now = 5;
    let fx = s.tick();
    assert_eq!(
        fx.pod_deletions,
        [PodDeletion {
            pod: "llm-worker-0".into(),
            force: true
        }]
    );
}

/// Kubernetes, `pkg/controller/job/pod_failure_policy_test.go`, `TestMatchPodFailurePolicy`
/// "ignore rule matched for pod conditions": a pod that failed with `DisruptionTarget=True`
/// (here set by the pod garbage collector, reason `DeletionByPodGC`, on a pod whose node was
/// deleted) is ignored: not counted against the backoff limit. kubetrain documents node loss
/// as not the job's fault (docs/user-guide.md, `maxRetries`): the replica's failure on a gone
/// node must restart the gang without counting a retry.
#[test]
fn k8s_a_pod_failed_by_pod_gc_on_a_deleted_node_is_not_counted() {
    let mut s = Story::running(2);
    // The node is deleted; the pod GC marks its pods Failed before deleting them.
    s.world.nodes.clear();
    s.pods[0].status = Some(
        serde_json::from_value(json!({"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
             "message": "PodGC: node no longer exists"}
        ]}))
        .expect("pod status"),
    );
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0, "node loss is not the job's fault");
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "WQ job: turn on
/// PodReplacementPolicy but not set PodReplacementPolicy": a terminating pod (deleted while it
/// ran) is counted as failed (`expectedFailed: 2` for one failed and one terminating pod).
/// kubetrain treats a replica removed by someone else as the platform's doing
/// (`Failure::Infrastructure`: "node lost, GPU unhealthy, pod removed"): the gang restarts
/// at once and no retry is counted.
#[test]
fn k8s_a_pod_deleted_while_running_is_not_a_counted_failure_differs() {
    let mut s = Story::running(2);
    s.pods[1].metadata.deletion_timestamp = Some(at(10));
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert!(message(&s).contains("llm-worker-1 stopped: the pod was removed"));
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
}

/// Volcano, `pkg/controllers/job/job_controller_util_test.go` `TestApplyPolicies` (a
/// `PodEvicted` event takes the job's policy) with `state/running.go` (`RestartJobAction`
/// increments `RetryCount`): a job whose policy is PodEvicted → RestartJob restarts, counting
/// a retry towards `maxRetry`. kubetrain restarts the gang too, but an eviction by the
/// kubelet is the node's doing and counts no retry (docs/user-guide.md, `maxRetries`).
#[test]
fn volcano_an_evicted_pod_restarts_the_job_without_counting_differs() {
    let mut s = Story::running(2);
    s.pods[1].status = Some(
        serde_json::from_value(json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."}))
        .expect("pod status"),
    );
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(s.status().retry_at, Some(at(10)), "no backoff");
    assert_eq!(reasons(&fx), ["InfrastructureFailure"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
}

/// Volcano, `pkg/controllers/job/state/pending.go` (a `PodEvicted` event under the
/// `RestartJob` policy takes a Pending job to `Restarting`, `RetryCount` + 1), with
/// `job_state_test.go` `TestPendingState_Execute` "PendingState- RestartJobAction case":
/// an eviction before the job runs restarts it, counted. kubetrain restarts the gang that has
/// not started yet too, but a kubelet eviction is the node's doing and counts no retry
/// (docs/troubleshooting.md, `InfrastructureFailure`: "eviction ... retries without
/// counting").
#[test]
fn volcano_an_eviction_before_the_gang_started_restarts_it_uncounted_differs() {
    let mut s = Story::new(2);
    s.tick();
    s = s.admitted("Pending");
    s.after(1).tick();
    set_phase(&mut s.pods[0], "Running");
    s.pods[1].status = Some(
        serde_json::from_value(serde_json::json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: ephemeral-storage."}))
        .expect("pod status"),
    );
    let fx = s.after(5).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 0);
    assert_eq!(s.status().infrastructure_retries, 1);
    assert_eq!(reasons(&fx), ["InfrastructureFailure"]);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert_eq!(s.status().queued_at, Some(at(0)));
}

/// A node that stopped being Ready but that Kubernetes has not given up on (no NoExecute
/// taint, as in a zone where most nodes are not ready) may still run its replicas: the gang
/// runs on, marked, and is stopped only once the node is lost.
#[test]
fn a_gang_on_a_node_not_ready_but_not_given_up_on_runs_on_marked() {
    let mut s = Story::running(2);
    s.world.nodes.insert("n1".into(), NodeState::NotReady);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.says(ConditionType::Running), ("True", "NodeNotReady"));
    assert!(
        message(&s).contains("Node(s) n1 not ready"),
        "{}",
        message(&s)
    );
    assert_eq!(reasons(&fx), ["NodeNotReady"]);
    assert!(deleted(&fx).is_empty());
    assert_eq!(s.status().infrastructure_retries, 0);

    // Said once: a later look with the node still not ready posts nothing new.
    let fx = s.after(30).tick();
    assert!(reasons(&fx).is_empty(), "{:?}", reasons(&fx));
    assert_eq!(s.says(ConditionType::Running), ("True", "NodeNotReady"));

    // Ready again: back to AllReplicasRunning, nothing lost.
    s.world.nodes.insert("n1".into(), up());
    let fx = s.after(30).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(
        s.says(ConditionType::Running),
        ("True", "AllReplicasRunning")
    );
    assert_eq!(reasons(&fx), ["Running"]);
    assert_eq!(s.status().infrastructure_retries, 0);

    // Given up on later (tainted NoExecute): stopped as any lost node's gang is.
    s.world.nodes.insert("n1".into(), NodeState::NotReady);
    s.after(10).tick();
    s.world.nodes.insert("n1".into(), NodeState::Lost);
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(
        s.says(ConditionType::Running),
        ("False", "InfrastructureFailure")
    );
    assert_eq!(s.status().infrastructure_retries, 1);
}

/// A gang still starting is not marked (the start timeout stops a gang that never runs).
#[test]
fn a_starting_gang_on_a_node_not_ready_is_not_marked() {
    let mut s = Story::created(2).admitted("Starting");
    s.world.nodes.insert("n1".into(), NodeState::NotReady);
    let fx = s.after(5).tick();
    assert_ne!(s.says(ConditionType::Running).1, "NodeNotReady");
    assert!(!reasons(&fx).contains(&"NodeNotReady"));
}
