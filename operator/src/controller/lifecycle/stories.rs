//! The lifecycle's transitions, each told as a story.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::*;

#[test]
fn backoff_doubles_up_to_max() {
    assert_eq!(backoff(10, 600, 1), Duration::from_secs(10));
    assert_eq!(backoff(10, 600, 2), Duration::from_secs(20));
    assert_eq!(backoff(10, 600, 4), Duration::from_secs(80));
    assert_eq!(backoff(10, 600, 10), Duration::from_secs(600));
    assert_eq!(backoff(0, 600, 3), Duration::ZERO);
    assert_eq!(backoff(10, 600, 1000), Duration::from_secs(600));
}

fn pod(json: serde_json::Value) -> Pod {
    serde_json::from_value(json).expect("pod")
}

#[test]
fn failures_are_classified() {
    let oom = pod(
        json!({"metadata": {"name": "a"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&oom),
        Some(Failure::Replica {
            pod: "a".into(),
            reason: "OOMKilled".into()
        })
    );
    let exit = pod(
        json!({"metadata": {"name": "b"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 3}}}
        ]}}),
    );
    assert_eq!(
        pod_failure(&exit),
        Some(Failure::Replica {
            pod: "b".into(),
            reason: "exit code 3".into()
        })
    );
    let lost = pod(
        json!({"metadata": {"name": "c"}, "status": {"phase": "Failed", "reason": "NodeLost"}}),
    );
    assert!(matches!(
        pod_failure(&lost),
        Some(Failure::Infrastructure { .. })
    ));
    // Refused or evicted by the kubelet: the node's doing, not the job's.
    for reason in [
        "Evicted",
        "OutOfnvidia.com/gpu",
        "NodeAffinity",
        "UnexpectedAdmissionError",
    ] {
        let refused = pod(json!({"metadata": {"name": "d"}, "status": {
            "phase": "Failed", "reason": reason, "message": "Pod was rejected"}}));
        assert!(
            matches!(pod_failure(&refused), Some(Failure::Infrastructure { ref reason, .. }) if reason.contains("Pod was rejected")),
            "{reason}"
        );
    }
    let app_error = pod(json!({"metadata": {"name": "f"}, "status": {
        "phase": "Failed", "reason": "DeadlineExceeded"}}));
    assert!(matches!(
        pod_failure(&app_error),
        Some(Failure::Replica { .. })
    ));
    let running = pod(json!({"metadata": {"name": "e"}, "status": {"phase": "Running"}}));
    assert_eq!(pod_failure(&running), None);
}
