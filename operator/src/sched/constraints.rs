//! Where a replica may run, decided the way kube-scheduler decides it: the pod's
//! `nodeSelector`, its required node affinity (every operator), the node's `NoSchedule` and
//! `NoExecute` taints against the pod's tolerations, and the node affinity of the
//! PersistentVolumes already bound to the job's claims. kubetrain places gangs itself, so
//! without these it would put pods where the cluster's own rules keep them out.
//!
//! `PreferNoSchedule` taints are not a constraint (kube-scheduler only scores them), and
//! cordoned nodes are the snapshot's `schedulable` flag, not this module's business.
//! Pure data and pure functions: the controller translates the pod template and the volumes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// What of a node the constraints read: its name, labels and taints. The snapshot's
/// `model::Node` is one (so this module needs nothing of `model`, which names its types).
pub trait NodeFacts {
    fn name(&self) -> &str;
    fn labels(&self) -> &BTreeMap<String, String>;
    fn taints(&self) -> &[Taint];
}

/// What a taint does to pods that do not tolerate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// A pod toleration. An empty `key` with `exists` tolerates every taint; no `effect`
/// tolerates every effect.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Toleration {
    pub key: String,
    /// `Exists` rather than `Equal`.
    pub exists: bool,
    pub value: String,
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// The rule of `k8s.io/api/core/v1.Toleration.ToleratesTaint`.
    pub fn tolerates(&self, t: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != t.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != t.key {
            return false;
        }
        if self.exists {
            return true;
        }
        // `Equal` (the default): an empty key needs `Exists`, which the API server enforces.
        !self.key.is_empty() && self.value == t.value
    }
}

/// The operator of one node selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl SelectorOperator {
    pub fn parse(s: &str) -> Option<SelectorOperator> {
        Some(match s {
            "In" => SelectorOperator::In,
            "NotIn" => SelectorOperator::NotIn,
            "Exists" => SelectorOperator::Exists,
            "DoesNotExist" => SelectorOperator::DoesNotExist,
            "Gt" => SelectorOperator::Gt,
            "Lt" => SelectorOperator::Lt,
            _ => return None,
        })
    }
}

/// One requirement on a node label (or, in `Term::fields`, on `metadata.name`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    pub key: String,
    pub operator: SelectorOperator,
    pub values: Vec<String>,
}

impl Requirement {
    /// On a node's label, or (`field`) on its `metadata.name`, the only field Kubernetes
    /// supports.
    fn holds_on(&self, node: &impl NodeFacts, field: bool) -> bool {
        if field {
            self.key == "metadata.name" && self.matches(Some(node.name()))
        } else {
            self.matches(node.labels().get(&self.key).map(String::as_str))
        }
    }

    fn matches(&self, value: Option<&str>) -> bool {
        use SelectorOperator::*;
        match self.operator {
            In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            NotIn => value.is_none_or(|v| self.values.iter().all(|x| x != v)),
            Exists => value.is_some(),
            DoesNotExist => value.is_none(),
            // One integer value, compared as integers; anything else matches nothing.
            Gt | Lt => {
                let (Some(v), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(v), Ok(b)) => {
                        (self.operator == Gt && v > b) || (self.operator == Lt && v < b)
                    }
                    _ => false,
                }
            }
        }
    }
}

/// A node selector term: every requirement holds. A term with no requirement matches no
/// node, as in Kubernetes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Term {
    pub expressions: Vec<Requirement>,
    /// Requirements on node fields; Kubernetes supports only `metadata.name`.
    pub fields: Vec<Requirement>,
}

impl Term {
    /// The values of label `key` this term accepts, when its `In` requirements on the key
    /// restrict it to a list (an empty term matches no node: no value).
    fn allowed_values(&self, key: &str) -> Option<BTreeSet<String>> {
        if self.is_empty() {
            return Some(BTreeSet::new());
        }
        self.expressions
            .iter()
            .filter(|r| r.key == key && r.operator == SelectorOperator::In)
            .map(|r| r.values.iter().cloned().collect::<BTreeSet<_>>())
            .reduce(|a, b| a.intersection(&b).cloned().collect())
    }

    fn matches(&self, node: &impl NodeFacts) -> bool {
        !self.is_empty()
            && self
                .requirements()
                .all(|(r, field)| r.holds_on(node, field))
    }

    fn is_empty(&self) -> bool {
        self.expressions.is_empty() && self.fields.is_empty()
    }

    /// Its label requirements, then its field requirements (flagged `true`).
    fn requirements(&self) -> impl Iterator<Item = (&Requirement, bool)> {
        let labels = self.expressions.iter().map(|r| (r, false));
        labels.chain(self.fields.iter().map(|r| (r, true)))
    }

    /// The requirements of this term that `node` breaks (for wait reasons only: the
    /// placement's checks go through [`Term::matches`], which allocates nothing).
    fn unmatched(&self, node: &impl NodeFacts) -> Vec<Requirement> {
        self.requirements()
            .filter(|(r, field)| !r.holds_on(node, *field))
            .map(|(r, _)| r.clone())
            .collect()
    }
}

impl fmt::Display for Requirement {
    /// As written in the pod spec: `zone In [a, b]`, `gpu Exists`, `gen Gt [3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.key, self.operator)?;
        if !self.values.is_empty() {
            write!(f, " [{}]", self.values.join(", "))?;
        }
        Ok(())
    }
}

/// A required node affinity: the node matches at least one of its terms. `source` names it
/// in wait reasons ("required node affinity", "PersistentVolume data-0").
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Affinity {
    pub source: String,
    pub terms: Vec<Term>,
}

/// Everything that restricts where one task's replicas may run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeConstraints {
    /// `spec.nodeSelector`: every label must be present with this value.
    pub node_selector: BTreeMap<String, String>,
    /// Each must hold: the pod's own required node affinity, and that of each bound volume.
    pub affinities: Vec<Affinity>,
    pub tolerations: Vec<Toleration>,
}

/// Why a node does not take a replica, for wait reasons (kube-scheduler's words where it
/// has them).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mismatch {
    /// A `nodeSelector` label missing or different.
    Selector { key: String, value: String },
    /// None of the terms of this affinity match; `unmatched` are the requirements of its
    /// first term that the node breaks (empty when that term is empty and matches nothing),
    /// `terms` how many it has.
    Affinity {
        source: String,
        unmatched: Vec<Requirement>,
        terms: usize,
    },
    /// A `NoSchedule` or `NoExecute` taint that no toleration tolerates.
    Taint(Taint),
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Selector { key, value } => {
                write!(f, "do not match nodeSelector {key}={value}")
            }
            Mismatch::Affinity {
                source,
                unmatched,
                terms,
            } => {
                let broken = unmatched
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ");
                match (*terms, broken.is_empty()) {
                    (0, _) => write!(f, "do not match the {source} (it has no term)"),
                    (1, false) => write!(f, "do not match the {source} ({broken})"),
                    (1, true) => write!(
                        f,
                        "do not match the {source} (its term is empty and matches no node)"
                    ),
                    (n, false) => write!(
                        f,
                        "do not match the {source} (none of its {n} terms; the first needs {broken})"
                    ),
                    (n, true) => write!(
                        f,
                        "do not match the {source} (none of its {n} terms; the first is empty)"
                    ),
                }
            }
            Mismatch::Taint(t) => write!(f, "have the taint {t}, which the pod does not tolerate"),
        }
    }
}

impl NodeConstraints {
    /// The values the label `key` may have on a node these constraints accept, when they
    /// restrict it to a list: a `nodeSelector` on it, or an affinity each of whose terms has
    /// an `In` on it (a term without one leaves the label free). Several restrictions
    /// intersect. `None`: any value (or none) may do.
    pub fn allowed_values(&self, key: &str) -> Option<BTreeSet<String>> {
        let mut allowed: Option<BTreeSet<String>> = self
            .node_selector
            .get(key)
            .map(|v| BTreeSet::from([v.clone()]));
        for affinity in &self.affinities {
            // An affinity holds when one of its terms does: the union of the terms' lists,
            // unless some term leaves the label free.
            let per_term: Option<Vec<BTreeSet<String>>> = affinity
                .terms
                .iter()
                .map(|t| t.allowed_values(key))
                .collect();
            if let Some(lists) = per_term {
                let union: BTreeSet<String> = lists.into_iter().flatten().collect();
                allowed = Some(match allowed {
                    Some(a) => a.intersection(&union).cloned().collect(),
                    None => union,
                });
            }
        }
        allowed
    }

    /// True when nothing but taints can keep a replica off a node.
    pub fn only_tolerations(&self) -> bool {
        self.node_selector.is_empty() && self.affinities.is_empty()
    }

    /// Whether a replica with these constraints may run on `node`; the first rule it breaks
    /// otherwise (selector, then affinities, then taints, as kube-scheduler's filters run).
    pub fn check(&self, node: &impl NodeFacts) -> Result<(), Mismatch> {
        for (key, value) in &self.node_selector {
            if node.labels().get(key) != Some(value) {
                return Err(Mismatch::Selector {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
        }
        for a in &self.affinities {
            if !a.terms.iter().any(|t| t.matches(node)) {
                return Err(Mismatch::Affinity {
                    source: a.source.clone(),
                    unmatched: a.terms.first().map_or(vec![], |t| t.unmatched(node)),
                    terms: a.terms.len(),
                });
            }
        }
        for t in node.taints() {
            if t.effect != TaintEffect::PreferNoSchedule
                && !self.tolerations.iter().any(|tol| tol.tolerates(t))
            {
                return Err(Mismatch::Taint(t.clone()));
            }
        }
        Ok(())
    }
}

/// kube-scheduler's style of summary: "3 nodes have the taint x:NoSchedule, which the pod
/// does not tolerate; 1 node does not match nodeSelector rack=r9". Most frequent first.
pub fn summarize(counts: &BTreeMap<Mismatch, u32>) -> String {
    let mut v: Vec<(&Mismatch, u32)> = counts.iter().map(|(m, &n)| (m, n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    v.iter()
        .map(|(m, n)| {
            let text = m.to_string();
            if *n == 1 {
                let text = text.replacen("do not match", "does not match", 1).replacen(
                    "have the taint",
                    "has the taint",
                    1,
                );
                format!("1 node {text}")
            } else {
                format!("{n} nodes {text}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::model::Node;
    use proptest::prelude::*;

    fn node(labels: &[(&str, &str)], taints: &[(&str, &str, TaintEffect)]) -> Node {
        Node {
            name: "n1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: taints
                .iter()
                .map(|(k, v, e)| Taint {
                    key: k.to_string(),
                    value: v.to_string(),
                    effect: *e,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn req(key: &str, op: SelectorOperator, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn affinity(terms: Vec<Vec<Requirement>>) -> Affinity {
        Affinity {
            source: "required node affinity".into(),
            terms: terms
                .into_iter()
                .map(|expressions| Term {
                    expressions,
                    fields: vec![],
                })
                .collect(),
        }
    }

    const GPU_TAINT: (&str, &str, TaintEffect) =
        ("nvidia.com/gpu", "present", TaintEffect::NoSchedule);

    #[test]
    fn a_gpu_pool_taint_keeps_out_pods_that_do_not_tolerate_it() {
        let n = node(&[], &[GPU_TAINT]);
        let none = NodeConstraints::default();
        assert_eq!(
            none.check(&n).unwrap_err().to_string(),
            "have the taint nvidia.com/gpu=present:NoSchedule, which the pod does not tolerate"
        );
        let exists = NodeConstraints {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                exists: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(exists.check(&n).is_ok());
        let wrong_value = NodeConstraints {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                value: "absent".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(wrong_value.check(&n).is_err());
        let other_effect = NodeConstraints {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                exists: true,
                effect: Some(TaintEffect::NoExecute),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(other_effect.check(&n).is_err());
        let everything = NodeConstraints {
            tolerations: vec![Toleration {
                exists: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(everything.check(&n).is_ok());
        // PreferNoSchedule is a preference, never a reason to wait.
        let soft = node(&[], &[("x", "", TaintEffect::PreferNoSchedule)]);
        assert!(none.check(&soft).is_ok());
    }

    #[test]
    fn selector_and_affinity_operators() {
        let n = node(&[("rack", "r2"), ("gen", "4")], &[]);
        let with = |a: Affinity| NodeConstraints {
            affinities: vec![a],
            ..Default::default()
        };
        use SelectorOperator::*;
        assert!(
            with(affinity(vec![vec![req("rack", In, &["r1", "r2"])]]))
                .check(&n)
                .is_ok()
        );
        assert!(
            with(affinity(vec![vec![req("rack", NotIn, &["r2"])]]))
                .check(&n)
                .is_err()
        );
        assert!(
            with(affinity(vec![vec![req("zone", NotIn, &["a"])]]))
                .check(&n)
                .is_ok()
        );
        assert!(
            with(affinity(vec![vec![req("rack", Exists, &[])]]))
                .check(&n)
                .is_ok()
        );
        assert!(
            with(affinity(vec![vec![req("rack", DoesNotExist, &[])]]))
                .check(&n)
                .is_err()
        );
        assert!(
            with(affinity(vec![vec![req("gen", Gt, &["3"])]]))
                .check(&n)
                .is_ok()
        );
        assert!(
            with(affinity(vec![vec![req("gen", Lt, &["3"])]]))
                .check(&n)
                .is_err()
        );
        assert!(
            with(affinity(vec![vec![req("rack", Gt, &["3"])]]))
                .check(&n)
                .is_err()
        );
        // Terms are ORed, requirements inside a term ANDed; an empty term matches nothing.
        assert!(
            with(affinity(vec![
                vec![req("rack", In, &["r9"])],
                vec![req("gen", In, &["4"]), req("rack", Exists, &[])],
            ]))
            .check(&n)
            .is_ok()
        );
        assert_eq!(
            with(affinity(vec![vec![]]))
                .check(&n)
                .unwrap_err()
                .to_string(),
            "do not match the required node affinity (its term is empty and matches no node)"
        );
        let by_name = Affinity {
            source: "PersistentVolume data".into(),
            terms: vec![Term {
                expressions: vec![],
                fields: vec![req("metadata.name", In, &["n1"])],
            }],
        };
        assert!(with(by_name).check(&n).is_ok());
        let selector = NodeConstraints {
            node_selector: [("rack".to_string(), "r9".to_string())].into(),
            ..Default::default()
        };
        assert_eq!(
            selector.check(&n).unwrap_err().to_string(),
            "do not match nodeSelector rack=r9"
        );
    }

    /// The message names what the node lacks, as the nodeSelector's names `key=value`: the
    /// requirements of the affinity's first term that the node breaks, the ones it meets
    /// left out.
    #[test]
    fn an_affinity_mismatch_names_the_requirements_the_node_breaks() {
        use SelectorOperator::*;
        let n = node(&[("rack", "r2"), ("gen", "4")], &[]);
        let with = |a: Affinity| NodeConstraints {
            affinities: vec![a],
            ..Default::default()
        };
        let one_term = with(affinity(vec![vec![
            req("gen", In, &["4"]),
            req("gpu.kubetrain.io/product", In, &["H100", "H200"]),
            req("rack", DoesNotExist, &[]),
        ]]));
        assert_eq!(
            one_term.check(&n).unwrap_err().to_string(),
            "do not match the required node affinity \
             (gpu.kubetrain.io/product In [H100, H200] and rack DoesNotExist)"
        );
        let two_terms = with(affinity(vec![
            vec![req("gen", Gt, &["5"])],
            vec![req("rack", In, &["r9"])],
        ]));
        assert_eq!(
            two_terms.check(&n).unwrap_err().to_string(),
            "do not match the required node affinity \
             (none of its 2 terms; the first needs gen Gt [5])"
        );
        let volume = with(Affinity {
            source: "PersistentVolume data".into(),
            terms: vec![Term {
                expressions: vec![],
                fields: vec![req("metadata.name", In, &["n9"])],
            }],
        });
        let mut counts = BTreeMap::new();
        counts.insert(volume.check(&n).unwrap_err(), 1);
        assert_eq!(
            summarize(&counts),
            "1 node does not match the PersistentVolume data (metadata.name In [n9])"
        );
    }

    #[test]
    fn the_summary_counts_nodes_per_reason_most_first() {
        let mut counts = BTreeMap::new();
        counts.insert(
            Mismatch::Selector {
                key: "rack".into(),
                value: "r9".into(),
            },
            1,
        );
        counts.insert(
            Mismatch::Taint(Taint {
                key: "nvidia.com/gpu".into(),
                value: String::new(),
                effect: TaintEffect::NoSchedule,
            }),
            3,
        );
        assert_eq!(
            summarize(&counts),
            "3 nodes have the taint nvidia.com/gpu:NoSchedule, which the pod does not tolerate; \
             1 node does not match nodeSelector rack=r9"
        );
    }

    fn arb_taint() -> impl Strategy<Value = Taint> {
        (
            prop::sample::select(vec!["a", "b", "nvidia.com/gpu"]),
            prop::sample::select(vec!["", "x", "y"]),
            prop::sample::select(vec![
                TaintEffect::NoSchedule,
                TaintEffect::PreferNoSchedule,
                TaintEffect::NoExecute,
            ]),
        )
            .prop_map(|(k, v, effect)| Taint {
                key: k.into(),
                value: v.into(),
                effect,
            })
    }

    fn arb_toleration() -> impl Strategy<Value = Toleration> {
        (
            prop::sample::select(vec!["", "a", "b", "nvidia.com/gpu"]),
            any::<bool>(),
            prop::sample::select(vec!["", "x", "y"]),
            prop::option::of(prop::sample::select(vec![
                TaintEffect::NoSchedule,
                TaintEffect::PreferNoSchedule,
                TaintEffect::NoExecute,
            ])),
        )
            .prop_map(|(k, exists, v, effect)| Toleration {
                key: k.into(),
                // An empty key is only valid with Exists (the API server enforces it).
                exists: exists || k.is_empty(),
                value: if exists || k.is_empty() {
                    String::new()
                } else {
                    v.into()
                },
                effect,
            })
    }

    proptest! {
        /// A node admits a pod exactly when every hard taint is tolerated by some
        /// toleration; adding a toleration never turns an admitting node away, and a
        /// `PreferNoSchedule` taint never does.
        #[test]
        fn taints_against_tolerations(
            taints in prop::collection::vec(arb_taint(), 0..4),
            tolerations in prop::collection::vec(arb_toleration(), 0..4),
            extra in arb_toleration(),
        ) {
            let n = Node { name: "n".into(), taints: taints.clone(), ..Default::default() };
            let c = NodeConstraints { tolerations: tolerations.clone(), ..Default::default() };
            let hard_untolerated = taints.iter().any(|t| {
                t.effect != TaintEffect::PreferNoSchedule
                    && !tolerations.iter().any(|x| x.tolerates(t))
            });
            prop_assert_eq!(c.check(&n).is_ok(), !hard_untolerated);
            let mut more = c.clone();
            more.tolerations.push(extra);
            if c.check(&n).is_ok() {
                prop_assert!(more.check(&n).is_ok());
            }
            let soft_only = Node {
                taints: taints.iter().filter(|t| t.effect == TaintEffect::PreferNoSchedule).cloned().collect(),
                ..n.clone()
            };
            prop_assert!(NodeConstraints::default().check(&soft_only).is_ok());
        }

        /// `In` and `NotIn` on the same values are complements; `Exists` and
        /// `DoesNotExist` too.
        #[test]
        fn selector_operators_are_complements(
            value in prop::option::of(prop::sample::select(vec!["r1", "r2", "r3"])),
            values in prop::collection::vec(prop::sample::select(vec!["r1", "r2", "r3"]), 1..3),
        ) {
            let labels: Vec<(&str, &str)> = value.iter().map(|v| ("rack", *v)).collect();
            let n = node(&labels, &[]);
            let check = |op| NodeConstraints {
                affinities: vec![affinity(vec![vec![req("rack", op, &values)]])],
                ..Default::default()
            }.check(&n).is_ok();
            prop_assert_ne!(check(SelectorOperator::In), check(SelectorOperator::NotIn));
            prop_assert_ne!(check(SelectorOperator::Exists), check(SelectorOperator::DoesNotExist));
        }
    }

    #[test]
    fn allowed_values_are_what_every_restriction_on_the_label_leaves() {
        use SelectorOperator::*;
        let set = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
        let mut c = NodeConstraints::default();
        assert_eq!(c.allowed_values("product"), None);
        // Terms are alternatives: their lists join; a term that leaves the label free frees it.
        c.affinities = vec![affinity(vec![
            vec![req("product", In, &["A100", "H100"])],
            vec![req("product", In, &["V100"]), req("zone", In, &["a"])],
        ])];
        assert_eq!(c.allowed_values("product"), set(&["A100", "H100", "V100"]));
        assert_eq!(c.allowed_values("zone"), None);
        let mut free = c.clone();
        free.affinities[0].terms.push(Term {
            expressions: vec![req("zone", In, &["b"])],
            fields: vec![],
        });
        assert_eq!(free.allowed_values("product"), None);
        // Restrictions that must all hold intersect: another affinity, a selector.
        c.affinities
            .push(affinity(vec![vec![req("product", NotIn, &["A100"])]]));
        assert_eq!(c.allowed_values("product"), set(&["A100", "H100", "V100"]));
        c.affinities.push(affinity(vec![vec![req(
            "product",
            In,
            &["H100", "V100", "T4"],
        )]]));
        assert_eq!(c.allowed_values("product"), set(&["H100", "V100"]));
        c.node_selector.insert("product".into(), "V100".into());
        assert_eq!(c.allowed_values("product"), set(&["V100"]));
    }
}
