//! The job's `podFailurePolicy`: which of its rules, if any, a failed pod matches. Matching is
//! the Job controller's (`pkg/controller/job/pod_failure_policy.go`): rules in order, the
//! first match decides; an exit-code rule looks at every init container and container that
//! terminated with a non-zero code; a condition rule at the pod's conditions.

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};

use crate::api::trainingjob::{
    ExitCodeOperator, PodFailurePolicy, PodFailurePolicyAction, PodFailurePolicyOnExitCodes,
    PodFailurePolicyOnPodCondition,
};

/// The rule a failed pod matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Match {
    /// Its place in `spec.podFailurePolicy.rules`.
    pub index: usize,
    pub action: PodFailurePolicyAction,
    /// What in the pod matched, for the job's message.
    pub what: String,
}

impl Match {
    /// "container c exited with code 42 (podFailurePolicy rule 0: FailJob)".
    pub fn describe(&self) -> String {
        format!(
            "{} (podFailurePolicy rule {}: {:?})",
            self.what, self.index, self.action
        )
    }
}

/// The first rule of `policy` that the failed pod's `status` matches.
pub(super) fn first_match(policy: &PodFailurePolicy, status: &PodStatus) -> Option<Match> {
    policy.rules.iter().enumerate().find_map(|(index, rule)| {
        let what = match (&rule.on_exit_codes, &rule.on_pod_conditions) {
            (Some(codes), _) => exit_code_match(codes, status),
            (None, Some(conditions)) => condition_match(conditions, status),
            // The schema requires one of the two; a rule with neither matches nothing.
            (None, None) => None,
        }?;
        Some(Match {
            index,
            action: rule.action,
            what,
        })
    })
}

/// The first init container or container, of the one named if the rule names one, that
/// terminated with a non-zero code the rule accepts. Exit code 0 never matches: it is no
/// failure, even under `NotIn`.
fn exit_code_match(rule: &PodFailurePolicyOnExitCodes, status: &PodStatus) -> Option<String> {
    let statuses = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    statuses
        .filter(|c: &&ContainerStatus| rule.container_name.as_ref().is_none_or(|n| *n == c.name))
        .find_map(|c| {
            let code = c.state.as_ref()?.terminated.as_ref()?.exit_code;
            let listed = rule.values.contains(&code);
            let accepted = match rule.operator {
                ExitCodeOperator::In => listed,
                ExitCodeOperator::NotIn => !listed,
            };
            (code != 0 && accepted).then(|| format!("container {} exited with code {code}", c.name))
        })
}

/// The first of the rule's conditions that the pod has, with its status.
fn condition_match(rule: &[PodFailurePolicyOnPodCondition], status: &PodStatus) -> Option<String> {
    let conditions = status.conditions.as_deref().unwrap_or_default();
    rule.iter().find_map(|want| {
        conditions
            .iter()
            .find(|c| c.type_ == want.type_ && c.status == want.status.as_str())
            .map(|c| {
                let why = c
                    .reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(", reason {r}"));
                format!("pod condition {}={}{why}", c.type_, c.status)
            })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        serde_json::from_value(json!({ "rules": rules })).expect("policy")
    }

    fn status(value: serde_json::Value) -> PodStatus {
        serde_json::from_value(value).expect("pod status")
    }

    fn exited(name: &str, code: i32) -> serde_json::Value {
        json!({"name": name, "ready": false, "restartCount": 0, "image": "x", "imageID": "",
               "state": {"terminated": {"exitCode": code}}})
    }

    /// Kubernetes, `pod_failure_policy_test.go`, `TestMatchPodFailurePolicy`: "ignore rule
    /// matched for exit codes", "FailJob rule matched for exit codes", "no match"; "default -
    /// container not in the rule's name": the container named must be the one that failed;
    /// and "second rule matched": the first match wins, in order.
    #[test]
    fn exit_code_rules_match_in_order_and_by_container() {
        let p = policy(json!([
            {"action": "Ignore", "onExitCodes": {"containerName": "sidecar", "operator": "In",
                                                 "values": [1, 2, 3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42, 7]}},
        ]));
        let s = status(json!({"phase": "Failed", "containerStatuses": [exited("main", 42)]}));
        let m = first_match(&p, &s).expect("a match");
        assert_eq!((m.index, m.action), (1, PodFailurePolicyAction::FailJob));
        assert_eq!(m.what, "container main exited with code 42");
        let s = status(json!({"phase": "Failed", "containerStatuses": [exited("main", 2)]}));
        let m = first_match(&p, &s).expect("a match");
        assert_eq!(
            (m.index, m.action),
            (2, PodFailurePolicyAction::Count),
            "rule 0 names another container"
        );
        let s = status(json!({"phase": "Failed", "containerStatuses": [
            exited("main", 0), exited("sidecar", 2)]}));
        assert_eq!(first_match(&p, &s).map(|m| m.index), Some(0));
        let s = status(json!({"phase": "Failed", "containerStatuses": [exited("main", 7)]}));
        assert_eq!(first_match(&p, &s), None);
    }

    /// `TestMatchPodFailurePolicy` "no match with exit code 0 under NotIn" and the init
    /// container cases: exit code 0 is no failure under any operator, and an init container
    /// that failed is looked at as a container is.
    #[test]
    fn exit_code_zero_never_matches_and_init_containers_count() {
        let p = policy(json!([{"action": "FailJob",
                               "onExitCodes": {"operator": "NotIn", "values": [1]}}]));
        let s = status(json!({"phase": "Failed", "containerStatuses": [exited("main", 0)]}));
        assert_eq!(first_match(&p, &s), None);
        let s = status(
            json!({"phase": "Failed", "initContainerStatuses": [exited("init", 5)],
                              "containerStatuses": [{"name": "main", "ready": false,
                              "restartCount": 0, "image": "x", "imageID": "",
                              "state": {"waiting": {"reason": "PodInitializing"}}}]}),
        );
        assert_eq!(
            first_match(&p, &s).map(|m| m.what),
            Some("container init exited with code 5".to_string())
        );
    }

    /// `TestMatchPodFailurePolicy` "ignore rule matched for pod conditions" and "no match for
    /// pod condition with status False": the condition's status must be the rule's (default
    /// `True`).
    #[test]
    fn condition_rules_match_type_and_status() {
        let p = policy(json!([{"action": "Ignore",
                               "onPodConditions": [{"type": "DisruptionTarget"}]}]));
        let s = status(json!({"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}));
        assert_eq!(
            first_match(&p, &s).map(|m| m.what),
            Some("pod condition DisruptionTarget=True, reason PreemptionByScheduler".to_string())
        );
        let s = status(json!({"phase": "Failed", "conditions": [
            {"type": "DisruptionTarget", "status": "False"}]}));
        assert_eq!(first_match(&p, &s), None);
        let p = policy(json!([{"action": "Count",
                               "onPodConditions": [{"type": "DisruptionTarget",
                                                    "status": "False"}]}]));
        assert_eq!(first_match(&p, &s).map(|m| m.index), Some(0));
    }
}
