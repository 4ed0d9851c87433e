//! Kubernetes objects → the scheduling core's node constraints (`sched::constraints`): a pod
//! template's `nodeSelector`, required node affinity and tolerations, and a node's labels
//! and taints.

use std::collections::BTreeMap;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, PersistentVolume, PersistentVolumeClaim, PodSpec,
};
use kube::ResourceExt;

use super::node_health::lifecycle_taint;
use crate::sched::constraints::{
    Affinity, NodeConstraints, Requirement, SelectorOperator, Taint, TaintEffect, Term, Toleration,
};

/// The node's hard taints, as the core matches them against tolerations.
pub fn node_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| !lifecycle_taint(&t.key))
        .filter_map(|t| {
            Some(Taint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: TaintEffect::parse(&t.effect)?,
            })
        })
        .collect()
}

pub fn node_labels(node: &Node) -> BTreeMap<String, String> {
    node.labels().clone()
}

/// Where a pod of this spec may run. An operator or effect Kubernetes does not know is an
/// error (the API server would refuse the pod).
pub fn pod_constraints(spec: &PodSpec) -> Result<NodeConstraints, String> {
    let mut c = NodeConstraints {
        node_selector: spec.node_selector.clone().unwrap_or_default(),
        ..Default::default()
    };
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    if let Some(selector) = required {
        let terms = selector
            .node_selector_terms
            .iter()
            .map(|t| {
                Ok(Term {
                    expressions: requirements(t.match_expressions.as_deref())?,
                    fields: requirements(t.match_fields.as_deref())?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        c.affinities.push(Affinity {
            source: "required node affinity".into(),
            terms,
        });
    }
    for t in spec.tolerations.iter().flatten() {
        let exists = match t.operator.as_deref() {
            None | Some("Equal") => false,
            Some("Exists") => true,
            Some(other) => {
                return Err(format!(
                    "toleration operator {other:?} is neither Equal nor Exists"
                ));
            }
        };
        let effect = match t.effect.as_deref() {
            None | Some("") => None,
            Some(e) => Some(
                TaintEffect::parse(e)
                    .ok_or_else(|| format!("toleration effect {e:?} is not a taint effect"))?,
            ),
        };
        c.tolerations.push(Toleration {
            key: t.key.clone().unwrap_or_default(),
            exists,
            value: t.value.clone().unwrap_or_default(),
            effect,
        });
    }
    Ok(c)
}

/// Node selector requirements (of a pod's affinity or a PersistentVolume's).
pub fn requirements(rs: Option<&[NodeSelectorRequirement]>) -> Result<Vec<Requirement>, String> {
    rs.into_iter()
        .flatten()
        .map(|r| {
            Ok(Requirement {
                key: r.key.clone(),
                operator: SelectorOperator::parse(&r.operator).ok_or_else(|| {
                    format!("node selector operator {:?} is not known", r.operator)
                })?,
                values: r.values.clone().unwrap_or_default(),
            })
        })
        .collect()
}

/// The node affinity of the volume bound to each claim, by `namespace/claim`: a pod that
/// mounts the claim can only run where the volume can be attached (a local disk's node, a
/// zonal disk's zone). Claims not yet bound, and volumes without node affinity, say nothing.
pub fn volume_affinities(
    claims: &[Arc<PersistentVolumeClaim>],
    volumes: &[Arc<PersistentVolume>],
) -> BTreeMap<String, Affinity> {
    let by_name: BTreeMap<String, &PersistentVolume> =
        volumes.iter().map(|v| (v.name_any(), v.as_ref())).collect();
    let mut out = BTreeMap::new();
    for c in claims {
        let Some(pv) = c
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_ref())
            .and_then(|name| by_name.get(name))
        else {
            continue;
        };
        let Some(required) = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
        else {
            continue;
        };
        // A term the operator cannot read keeps nothing out; kube-scheduler would reject
        // the pod, and the volume's own validation makes this unreachable in practice.
        let terms: Vec<Term> = required
            .node_selector_terms
            .iter()
            .filter_map(|t| {
                Some(Term {
                    expressions: requirements(t.match_expressions.as_deref()).ok()?,
                    fields: requirements(t.match_fields.as_deref()).ok()?,
                })
            })
            .collect();
        if terms.is_empty() {
            continue;
        }
        out.insert(
            format!("{}/{}", c.namespace().unwrap_or_default(), c.name_any()),
            Affinity {
                source: format!(
                    "node affinity of PersistentVolume {} (claim {})",
                    pv.name_any(),
                    c.name_any()
                ),
                terms,
            },
        );
    }
    out
}

/// Keeps a job off the nodes the cluster's scheduler refused for it, until each refusal
/// expires (`status.refusedNodes`, written when an admission is rolled back).
pub fn avoid_refused_nodes(
    refused: &[crate::api::trainingjob::RefusedNode],
    now: i64,
) -> Option<Affinity> {
    let nodes: Vec<String> = refused
        .iter()
        .filter(|r| r.until.0.as_second() > now)
        .map(|r| r.node.clone())
        .collect();
    (!nodes.is_empty()).then(|| Affinity {
        source: "nodes the scheduler refused for this job".into(),
        terms: vec![Term {
            expressions: vec![],
            fields: vec![Requirement {
                key: "metadata.name".into(),
                operator: SelectorOperator::NotIn,
                values: nodes,
            }],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).expect("pod spec")
    }

    #[test]
    fn a_template_becomes_constraints() {
        let c = pod_constraints(&spec(serde_json::json!({
            "containers": [{"name": "c"}],
            "nodeSelector": {"kubetrain.io/rack": "r1"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        })))
        .expect("valid");
        assert_eq!(c.node_selector["kubetrain.io/rack"], "r1");
        assert_eq!(
            c.affinities[0].terms[0].expressions[0].operator,
            SelectorOperator::In
        );
        assert_eq!(
            c.tolerations,
            vec![Toleration {
                key: "nvidia.com/gpu".into(),
                exists: true,
                value: String::new(),
                effect: Some(TaintEffect::NoSchedule),
            }]
        );
        let bad = pod_constraints(&spec(serde_json::json!({
            "containers": [{"name": "c"}],
            "tolerations": [{"key": "k", "operator": "Matches"}]
        })));
        assert!(bad.unwrap_err().contains("Matches"));
    }

    #[test]
    fn a_bound_volume_brings_its_node_affinity() {
        let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "local-a"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-1"]}]}]}}}
        }))
        .expect("pv");
        let bound: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "data", "namespace": "ml"},
            "spec": {"volumeName": "local-a"}
        }))
        .expect("pvc");
        let unbound: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "scratch", "namespace": "ml"},
            "spec": {}
        }))
        .expect("pvc");
        let m = volume_affinities(&[Arc::new(bound), Arc::new(unbound)], &[Arc::new(pv)]);
        assert_eq!(m.len(), 1);
        let a = &m["ml/data"];
        assert_eq!(
            a.source,
            "node affinity of PersistentVolume local-a (claim data)"
        );
        assert_eq!(a.terms[0].expressions[0].values, ["gpu-1"]);
    }

    #[test]
    fn lifecycle_taints_are_left_to_schedulability() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "spec": {"taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}
        }))
        .expect("node");
        assert_eq!(
            node_taints(&node),
            vec![Taint {
                key: "nvidia.com/gpu".into(),
                value: "present".into(),
                effect: TaintEffect::NoSchedule,
            }]
        );
    }
}
