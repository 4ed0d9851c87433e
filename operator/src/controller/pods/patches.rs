//! The merge patches that mark a running pod: a checkpoint request, and whether it runs on
//! borrowed (bonus) GPUs.

use crate::api::annotations::{
    BONUS_ANNOTATION, CHECKPOINT_REQUESTED, PREEMPTED_FOR, PREEMPTION_REASON,
};
use crate::api::reasons::PreemptionCause;

/// The merge patch that asks a pod to checkpoint: the request's time (RFC 3339) and, when the
/// scheduler preempts, why (a suspension gives none) and, for a reclaim or priority
/// preemption, the job the room is for.
pub fn checkpoint_request_patch(
    at: &str,
    reason: Option<PreemptionCause>,
    preempted_for: Option<&str>,
) -> serde_json::Value {
    let mut annotations = serde_json::json!({ CHECKPOINT_REQUESTED: at });
    if let Some(r) = reason {
        annotations[PREEMPTION_REASON] = r.as_str().into();
    }
    if let Some(b) = preempted_for {
        annotations[PREEMPTED_FOR] = b.into();
    }
    serde_json::json!({"metadata": {"annotations": annotations}})
}

/// The merge patch that marks a pod as running on borrowed capacity, or not.
pub fn bonus_patch(bonus: bool) -> serde_json::Value {
    serde_json::json!({"metadata": {"annotations": {BONUS_ANNOTATION: bonus.to_string()}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Pod;

    use crate::controller::pods::tests::{job, placed, read};
    use crate::controller::pods::{PodSettings, gang_pods};

    /// The marks the scheduler and the reconciler patch onto running pods read back.
    #[test]
    fn patches_read_back() {
        let mut pod = gang_pods(
            &job(),
            &[placed(0, 0, "n1", &[0])],
            true,
            0,
            &PodSettings::default(),
            &|_| false,
        )
        .expect("pods")
        .remove(0);
        let apply = |pod: &mut Pod, patch: serde_json::Value| {
            let ann = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
            for (k, v) in patch["metadata"]["annotations"]
                .as_object()
                .expect("annotations")
            {
                ann.insert(k.clone(), v.as_str().expect("string").into());
            }
        };
        apply(&mut pod, bonus_patch(false));
        apply(
            &mut pod,
            checkpoint_request_patch("2026-01-01T00:00:00Z", Some(PreemptionCause::Drain), None),
        );
        let m = read(&pod);
        assert!(!m.bonus);
        let request = m.checkpoint_request.expect("request");
        assert_eq!(request.reason, Some(PreemptionCause::Drain));
        assert_eq!(
            request.at,
            Some("2026-01-01T00:00:00Z".parse().expect("time"))
        );
        assert_eq!(
            checkpoint_request_patch("t", None, None)["metadata"]["annotations"]
                .as_object()
                .map(|a| a.len()),
            Some(1)
        );
    }
}
