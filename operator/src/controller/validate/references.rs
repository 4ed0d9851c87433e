//! What a job refers to: its queue (named, or its VirtualCluster's default), that queue's
//! VirtualCluster and parent chain, the namespace's owner, and its priority.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

use super::{Invalid, Refs};
use crate::api::{Queue, TrainingJob, VirtualCluster};

/// Whether `vc` owns `namespace` (by name or by label selector).
pub fn owns_namespace(
    vc: &VirtualCluster,
    namespace: &str,
    namespaces: &BTreeMap<String, Namespace>,
) -> bool {
    if vc.spec.namespaces.iter().any(|n| n == namespace) {
        return true;
    }
    let Some(selector) = &vc.spec.namespace_selector else {
        return false;
    };
    let labels = namespaces
        .get(namespace)
        .map(|n| n.labels().clone())
        .unwrap_or_default();
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_match = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.clone().unwrap_or_default();
        match e.operator.as_str() {
            "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&e.key),
            "DoesNotExist" => !labels.contains_key(&e.key),
            _ => false,
        }
    });
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|m| m.is_empty());
    !empty && labels_match && exprs_match
}

/// Why a VirtualCluster's `spec.defaultQueue` cannot be used (the queue does not exist, or
/// belongs to another VirtualCluster), or None when it can or is unset. A CEL rule cannot
/// see other objects, so the operator checks it: the VirtualCluster's `Ready` condition and
/// the `Valid` condition of jobs that rely on it.
pub fn default_queue_problem(
    vc: &VirtualCluster,
    queues: &BTreeMap<String, std::sync::Arc<Queue>>,
) -> Option<String> {
    let name = vc.spec.default_queue.as_ref()?;
    match queues.get(name) {
        None => Some(format!("queue {name} does not exist")),
        Some(q) if q.spec.virtual_cluster != vc.name_any() => Some(format!(
            "queue {name} belongs to VirtualCluster {}, not {}",
            q.spec.virtual_cluster,
            vc.name_any()
        )),
        Some(_) => None,
    }
}

/// The namespaces `vc` owns that other VirtualClusters own too, each with those others'
/// names. A namespace should belong to one tenant: its jobs may use the queues of every
/// owner, and those naming no queue take the `defaultQueue` of the first owner by name that
/// sets one. The VirtualCluster's `Ready` condition says so. Namespaces named in
/// `spec.namespaces` count whether they exist yet or not; a selector counts the namespaces
/// that exist.
pub fn shared_namespaces(
    vc: &VirtualCluster,
    vcs: &BTreeMap<String, std::sync::Arc<VirtualCluster>>,
    namespaces: &BTreeMap<String, Namespace>,
) -> Vec<(String, Vec<String>)> {
    let name = vc.name_any();
    let candidates: BTreeSet<&str> = vc
        .spec
        .namespaces
        .iter()
        .map(String::as_str)
        .chain(namespaces.keys().map(String::as_str))
        .collect();
    candidates
        .into_iter()
        .filter(|ns| owns_namespace(vc, ns, namespaces))
        .filter_map(|ns| {
            let others: Vec<String> = vcs
                .values()
                .filter(|o| o.name_any() != name && owns_namespace(o, ns, namespaces))
                .map(|o| o.name_any())
                .collect();
            (!others.is_empty()).then(|| (ns.to_string(), others))
        })
        .collect()
}

/// Why `queue`'s chain of parents is unusable, if it is: a parent that does not exist, one
/// of another VirtualCluster, or a cycle. The scheduling core then admits none of its jobs
/// (`Tenants::build` skips the queue); the Queue's `Ready` condition and its jobs' `Valid`
/// say why, where the fix is the Queue's, not the job's.
pub fn queue_parent_problem(
    queue: &Queue,
    queues: &BTreeMap<String, std::sync::Arc<Queue>>,
) -> Option<String> {
    let mut chain = vec![queue.name_any()];
    let mut cur = queue;
    while let Some(parent) = &cur.spec.parent {
        if chain.contains(parent) {
            chain.push(parent.clone());
            return Some(format!("its parents form a cycle ({})", chain.join(" → ")));
        }
        let Some(p) = queues.get(parent) else {
            return Some(format!("parent queue {parent} does not exist"));
        };
        if p.spec.virtual_cluster != queue.spec.virtual_cluster {
            return Some(format!(
                "parent queue {parent} belongs to VirtualCluster {}, not {}",
                p.spec.virtual_cluster, queue.spec.virtual_cluster
            ));
        }
        chain.push(parent.clone());
        cur = p;
    }
    None
}

/// The queue a job is in: `spec.queue` when set, else the `defaultQueue` of the
/// VirtualCluster that owns the job's namespace (the first by name that sets one, when
/// several own it). The one place that answers "which queue": validation, the snapshot,
/// usage numbers, the Queue finalizer and `status.queue` all ask it.
pub fn effective_queue(job: &TrainingJob, refs: &Refs<'_>) -> Result<String, Invalid> {
    if let Some(q) = &job.spec.queue {
        return Ok(q.clone());
    }
    let ns = job.namespace().unwrap_or_default();
    let owners: Vec<&std::sync::Arc<VirtualCluster>> = refs
        .vcs
        .values()
        .filter(|vc| owns_namespace(vc, &ns, refs.namespaces))
        .collect();
    let Some(vc) = owners.iter().find(|vc| vc.spec.default_queue.is_some()) else {
        let detail = if owners.is_empty() {
            // spec.queue cannot help: a queue runs only the jobs of its VirtualCluster's
            // namespaces.
            "no VirtualCluster owns it, so no queue takes its jobs; an admin adds the \
             namespace to a VirtualCluster (spec.namespaces or spec.namespaceSelector)"
                .to_string()
        } else {
            let names: Vec<String> = owners.iter().map(|v| v.name_any()).collect();
            format!(
                "VirtualCluster {} sets no spec.defaultQueue; set spec.queue or a defaultQueue",
                names.join(", ")
            )
        };
        return Err(Invalid::NoQueue {
            namespace: ns,
            detail,
        });
    };
    let queue = vc.spec.default_queue.clone().unwrap_or_default();
    match default_queue_problem(vc, refs.queues) {
        Some(problem) => Err(Invalid::DefaultQueueInvalid {
            vc: vc.name_any(),
            queue,
            problem,
        }),
        None => Ok(queue),
    }
}

/// The `spec.priorityClassName` of a task's template, if it names one. Read from the raw
/// template: the snapshot asks every cycle, and this needs no decoding of the whole pod.
fn priority_class_name(task: &crate::api::trainingjob::TaskSpec) -> Option<&str> {
    task.template
        .pointer("/spec/priorityClassName")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
}

/// A job's priority: `spec.priority` when set; else the value of the PriorityClass its
/// task templates name (the highest if tasks differ); else the value of the cluster's
/// `globalDefault` PriorityClass (the lowest, if a race made several, as the API server's
/// Priority admission picks); else 0. A template naming a PriorityClass that does not exist
/// is invalid whether or not `spec.priority` is set: its pods would be rejected.
pub fn effective_priority(job: &TrainingJob, refs: &Refs<'_>) -> Result<i32, Invalid> {
    let mut named: Option<i32> = None;
    for t in &job.spec.tasks {
        let Some(class) = priority_class_name(t) else {
            continue;
        };
        let pc = refs
            .priority_classes
            .get(class)
            .ok_or_else(|| Invalid::UnknownPriorityClass {
                task: t.name.clone(),
                class: class.to_string(),
            })?;
        named = Some(named.map_or(pc.value, |v| v.max(pc.value)));
    }
    if let Some(p) = job.spec.priority {
        return Ok(p);
    }
    if let Some(p) = named {
        return Ok(p);
    }
    Ok(refs
        .priority_classes
        .values()
        .filter(|pc| pc.global_default)
        .map(|pc| pc.value)
        .min()
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use crate::controller::validate::fixtures::*;
    use crate::controller::validate::*;

    #[test]
    fn a_job_without_a_queue_runs_in_its_virtual_clusters_default_queue() {
        let w = World::new();
        let refs = w.refs();
        // spec.queue wins, even over a default.
        assert_eq!(
            effective_queue(&job("team-a", Some("x"), None, &[None]), &refs),
            Ok("x".into())
        );
        assert_eq!(
            effective_queue(&job("team-a", None, None, &[None]), &refs),
            Ok("vision".into())
        );
        let v = validate(&job("team-a", None, None, &[None]), &refs).expect("valid");
        assert_eq!(v.queue, "vision");
    }

    #[test]
    fn no_queue_and_no_default_is_invalid_naming_the_namespace() {
        let w = World::new();
        let refs = w.refs();
        let e = effective_queue(&job("team-b", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "NoQueue");
        assert!(e.to_string().contains("namespace team-b"), "{e}");
        assert!(e.to_string().contains("VirtualCluster b"), "{e}");
        let e = validate(&job("nobody", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "NoQueue");
        assert!(e.to_string().contains("no VirtualCluster owns it"), "{e}");
    }

    /// A parent that is missing, of another tenant, or part of a cycle makes the queue
    /// unusable: its jobs are told the queue is at fault, naming the problem.
    #[test]
    fn a_queue_with_a_broken_parent_chain_is_named() {
        let mut w = World::new();
        let child = |name: &str, vc: &str, parent: &str| {
            let mut q: Queue = (*queue(name, vc).1).clone();
            q.spec.parent = Some(parent.into());
            (name.to_string(), std::sync::Arc::new(q))
        };
        for (name, q) in [
            child("orphan", "a", "gone"),
            child("crossed", "a", "nlp"),
            child("cyc-a", "a", "cyc-b"),
            child("cyc-b", "a", "cyc-a"),
            child("fine", "a", "vision"),
        ] {
            w.queues.insert(name, q);
        }
        let problem = |q: &str| queue_parent_problem(&w.queues[q], &w.queues);
        assert_eq!(
            problem("orphan").as_deref(),
            Some("parent queue gone does not exist")
        );
        assert_eq!(
            problem("crossed").as_deref(),
            Some("parent queue nlp belongs to VirtualCluster b, not a")
        );
        assert_eq!(
            problem("cyc-a").as_deref(),
            Some("its parents form a cycle (cyc-a → cyc-b → cyc-a)")
        );
        assert_eq!(problem("fine"), None);
        let e = validate(&job("team-a", Some("cyc-a"), None, &[None]), &w.refs()).unwrap_err();
        assert_eq!(e.reason(), "InvalidQueueParent");
        assert!(e.to_string().contains("must fix its spec.parent"), "{e}");
    }

    /// A namespace two VirtualClusters own, by name or by selector, is reported on both;
    /// a selector alone counts only namespaces that exist.
    #[test]
    fn a_namespace_owned_twice_is_reported_on_each_owner() {
        let mut w = World::new();
        let (name, e) = vc("e", &["team-a", "team-e"], None);
        w.vcs.insert(name, e);
        let mut f: VirtualCluster = (*vc("f", &[], None).1).clone();
        f.spec.namespace_selector = Some(
            serde_json::from_value(serde_json::json!({"matchLabels": {"tenant": "f"}}))
                .expect("selector"),
        );
        w.vcs.insert("f".into(), std::sync::Arc::new(f));
        let labelled: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "team-e", "labels": {"tenant": "f"}}}))
        .expect("namespace");
        w.namespaces.insert("team-e".into(), labelled);
        let shared = |v: &str| shared_namespaces(&w.vcs[v], &w.vcs, &w.namespaces);
        assert_eq!(
            shared("a"),
            vec![("team-a".to_string(), vec!["e".to_string()])]
        );
        assert_eq!(
            shared("e"),
            vec![
                ("team-a".to_string(), vec!["a".to_string()]),
                ("team-e".to_string(), vec!["f".to_string()]),
            ]
        );
        assert_eq!(
            shared("f"),
            vec![("team-e".to_string(), vec!["e".to_string()])]
        );
        assert_eq!(shared("b"), vec![]);
    }

    #[test]
    fn a_default_queue_of_another_tenant_or_missing_is_invalid() {
        let w = World::new();
        let refs = w.refs();
        assert_eq!(default_queue_problem(&w.vcs["a"], &w.queues), None);
        assert_eq!(default_queue_problem(&w.vcs["b"], &w.queues), None);
        let p = default_queue_problem(&w.vcs["c"], &w.queues).expect("foreign");
        assert!(p.contains("belongs to VirtualCluster b"), "{p}");
        let p = default_queue_problem(&w.vcs["d"], &w.queues).expect("missing");
        assert!(p.contains("does not exist"), "{p}");
        let e = validate(&job("team-c", None, None, &[None]), &refs).unwrap_err();
        assert_eq!(e.reason(), "DefaultQueueInvalid");
        assert!(e.to_string().contains("VirtualCluster c"), "{e}");
        // A job naming its queue does not depend on the default.
        assert_eq!(
            effective_queue(&job("team-c", Some("other"), None, &[None]), &refs),
            Ok("other".into())
        );
    }

    #[test]
    fn priority_comes_from_spec_then_classes_then_the_global_default() {
        let w = World::new()
            .class("high", 1000, false)
            .class("low", 10, false);
        let refs = w.refs();
        let p = |j: TrainingJob| effective_priority(&j, &refs);
        assert_eq!(p(job("team-a", None, Some(5), &[Some("high")])), Ok(5));
        assert_eq!(p(job("team-a", None, None, &[Some("high")])), Ok(1000));
        // The highest when tasks differ.
        assert_eq!(
            p(job(
                "team-a",
                None,
                None,
                &[Some("low"), None, Some("high")]
            )),
            Ok(1000)
        );
        assert_eq!(p(job("team-a", None, None, &[None])), Ok(0));
        // No class named: the global default, the lowest if several claim it.
        let w = World::new()
            .class("default", 100, true)
            .class("also-default", 50, true)
            .class("high", 1000, false);
        let refs = w.refs();
        assert_eq!(
            effective_priority(&job("team-a", None, None, &[None]), &refs),
            Ok(50)
        );
        assert_eq!(
            effective_priority(&job("team-a", None, None, &[Some("high")]), &refs),
            Ok(1000)
        );
        let v = validate(&job("team-a", None, None, &[Some("high")]), &refs).expect("valid");
        assert_eq!(v.priority, 1000);
    }

    #[test]
    fn a_missing_priority_class_is_invalid_even_with_spec_priority() {
        let w = World::new().class("high", 1000, false);
        let refs = w.refs();
        for priority in [None, Some(3)] {
            let e =
                validate(&job("team-a", None, priority, &[None, Some("nope")]), &refs).unwrap_err();
            assert_eq!(e.reason(), "UnknownPriorityClass");
            assert!(
                e.to_string().contains("task t1") && e.to_string().contains("nope"),
                "{e}"
            );
        }
    }
}
