//! A reconcile redone or half done: a status write that failed, a pod late in the cache, a pod
//! deletion that failed.

use super::*;

/// Kubernetes, `pkg/controller/job/job_controller_test.go`, `TestSyncJobUpdateRequeue`
/// "generic error" and "conflict error": a sync whose status update fails is requeued and done
/// again. In kubetrain, a reconcile that decided a retry but whose status write failed leaves
/// the job as it was; the next reconcile decides the same, from the failure's own time: one
/// retry counted, the same `retryAt`, one `ReplicaFailed` Event numbered 1, and a further
/// reconcile adds nothing.
#[test]
fn k8s_a_status_write_that_failed_is_redone_without_counting_twice() {
    let mut s = Story::running(2);
    exits_at(&mut s.pods[1], 1, 100);
    s.after(102);
    let gang = Gang::new(s.pods.iter().cloned().map(Arc::new));
    let (lost, _) = next(&s.job, &gang, &s.world, &at(s.now));
    assert_eq!(lost.phase, Phase::Retrying);
    assert_eq!(lost.retry_at, Some(at(110)));
    // The write failed: the job is as it was.
    assert_eq!(s.phase(), Phase::Running);
    let fx = s.after(3).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(s.status().retries, 1);
    assert_eq!(s.status().retry_at, lost.retry_at);
    assert_eq!(reasons(&fx), ["ReplicaFailed"]);
    assert_eq!(fx.events[0].action.as_deref(), Some("ReplicaFailed1"));
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    let fx = s.after(1).tick();
    assert_eq!(s.status().retries, 1);
    assert!(fx.events.is_empty());
}

/// Kubernetes, `job_controller_test.go`, `TestSyncJobExpectations` ("a pod cannot sneak in
/// between counting active pods and checking expectations": the controller creates no
/// replacement for a pod its cache does not show yet). In kubetrain, a gang of two whose second
/// pod is not in the operator's cache yet (the scheduler created both; no admission is in
/// flight any more) is waited for, not torn down as half-created, and runs once the pod shows
/// up: nothing deleted, no restart counted.
#[test]
fn k8s_a_pod_late_in_the_cache_is_waited_for_not_torn_down() {
    let mut s = Story::new(2);
    s.tick();
    s.pods = vec![replica(0, "n1", "Pending")];
    let fx = s.after(2).tick();
    assert_eq!(s.phase(), Phase::Queued);
    assert!(fx.pod_deletions.is_empty());
    assert!(fx.events.is_empty());
    assert_eq!(fx.requeue, Some(Duration::from_secs(1)));
    s.pods.push(replica(1, "n1", "Pending"));
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(fx.pod_deletions.is_empty());
    assert_eq!(s.status().infrastructure_retries, 0);
    assert_eq!(s.status().retries, 0);
}

/// Kubernetes, `job_controller_test.go`, `TestControllerSyncJob` "too many active pods, with
/// controller error" (the deletion fails: the pods stay active, to be deleted by a later sync).
/// In kubetrain the pods to stop follow from the job's state, not from a record of what was
/// asked: when the deletions of a retrying gang, or of a failed job's running replica, fail,
/// the next reconcile asks again, and counts nothing more.
#[test]
fn k8s_a_pod_deletion_that_failed_is_asked_again() {
    let mut s = Story::running(2);
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    // The deletions failed: the pods are as they were.
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Retrying);
    assert_eq!(deleted(&fx), ["llm-worker-0", "llm-worker-1"]);
    assert_eq!(s.status().retries, 1);
    assert!(fx.events.is_empty());

    let mut s = Story::running(2);
    s.job.spec.max_retries = 0;
    exits(&mut s.pods[1], 1);
    let fx = s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    let fx = s.after(1).tick();
    assert_eq!(deleted(&fx), ["llm-worker-0"]);
    assert!(fx.events.is_empty());
}
