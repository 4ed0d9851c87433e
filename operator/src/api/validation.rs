//! The CRDs' CEL rules (`x-kubernetes-validations`): every check the API server can make
//! from the object alone, so a bad manifest is rejected at `kubectl apply` with the field
//! named. What needs other objects (an unknown queue, a GPU type no node has) stays with the
//! controller's `Valid=False` condition.
//!
//! The rules live in one table rather than on the Rust types because several attach inside
//! the embedded PodTemplateSpec schema, which is not ours to annotate.

use serde_json::{Value, json};

/// One CEL rule and where in a CRD's schema it applies.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Plural of the CRD.
    pub crd: &'static str,
    /// Property path from the top of `openAPIV3Schema`; `[]` marks an array's items.
    pub at: &'static [&'static str],
    /// The CEL expression; `self` is the value at `at`.
    pub rule: &'static str,
    /// What `kubectl apply` prints, naming the field.
    pub message: &'static str,
    /// A CEL expression for the message, where the message should quote the value (the API
    /// server prints no value of its own for a rule's error); `message` is its fallback.
    pub message_expression: Option<&'static str>,
    /// The field the error is reported on, relative to `at` (empty: `at` itself).
    pub field_path: &'static str,
    /// `FieldValueInvalid` or `FieldValueForbidden` (a `FieldValueDuplicate` would print
    /// "Duplicate value" in place of the message).
    pub reason: &'static str,
}

/// Each container and init container of a task's pod template.
const CONTAINER_PATHS: [&[&str]; 2] = [
    &[
        "spec",
        "tasks",
        "[]",
        "template",
        "spec",
        "containers",
        "[]",
    ],
    &[
        "spec",
        "tasks",
        "[]",
        "template",
        "spec",
        "initContainers",
        "[]",
    ],
];
/// Each container's `resources` (`claims`, `limits`, `requests`). The whole-GPU rules sit
/// here, not on the container: the API server's CEL copies the schema of every property of
/// an object on each field access (26 for a Container, 3 for its `resources`), and it
/// evaluates the rules on every TrainingJob write, status applies included. Moving them here
/// took CEL from 12.5 % of the API server's CPU for TrainingJob creates to 10 %, and for
/// status applies to 6 % (docs/benchmarks-control-plane.md).
const RESOURCE_PATHS: [&[&str]; 2] = [
    &[
        "spec",
        "tasks",
        "[]",
        "template",
        "spec",
        "containers",
        "[]",
        "resources",
    ],
    &[
        "spec",
        "tasks",
        "[]",
        "template",
        "spec",
        "initContainers",
        "[]",
        "resources",
    ],
];

/// Whole GPUs only: Kubernetes itself rejects a fractional extended resource in a pod, and
/// the operator would otherwise floor `500m` to no GPU at all.
const WHOLE_GPU_LIMIT: &str = "!has(self.limits) || !('nvidia.com/gpu' in self.limits) \
    || (isQuantity(string(self.limits['nvidia.com/gpu'])) \
        && quantity(string(self.limits['nvidia.com/gpu'])).isInteger() \
        && quantity(string(self.limits['nvidia.com/gpu'])).isGreaterThan(quantity('-1')))";
const WHOLE_GPU_REQUEST: &str = "!has(self.requests) || !('nvidia.com/gpu' in self.requests) \
    || (isQuantity(string(self.requests['nvidia.com/gpu'])) \
        && quantity(string(self.requests['nvidia.com/gpu'])).isInteger() \
        && quantity(string(self.requests['nvidia.com/gpu'])).isGreaterThan(quantity('-1')))";
const WHOLE_GPU_MESSAGE: &str = "must be a whole number of GPUs, 0 or more; for a fraction \
    of one GPU leave it out and set the task's gpuShare (thousandths of a GPU)";
/// Kubernetes does not overcommit extended resources: a pod whose GPU request differs from
/// its limit, or has no limit, is refused when the operator creates it, long after apply.
const GPU_REQUEST_IS_LIMIT: &str = "!has(self.requests) || !('nvidia.com/gpu' in self.requests) \
    || (has(self.limits) && 'nvidia.com/gpu' in self.limits \
        && (!isQuantity(string(self.requests['nvidia.com/gpu'])) \
            || !isQuantity(string(self.limits['nvidia.com/gpu'])) \
            || (!quantity(string(self.requests['nvidia.com/gpu'])) \
                   .isLessThan(quantity(string(self.limits['nvidia.com/gpu']))) \
               && !quantity(string(self.requests['nvidia.com/gpu'])) \
                   .isGreaterThan(quantity(string(self.limits['nvidia.com/gpu']))))))";
const GPU_REQUEST_IS_LIMIT_MESSAGE: &str = "a GPU request needs a limit of the same number \
    (Kubernetes does not overcommit GPUs): set only limits['nvidia.com/gpu'], and the request \
    defaults to it";
/// Where in each task's pod template kubetrain decides in place of the template: it chooses
/// the gang's nodes and hands the pods to kube-scheduler, and restarts the gang as a whole,
/// so these would be overridden or leave the pods pending. Each rule sits on the field
/// itself, so it is evaluated only where the field is set.
const TEMPLATE_FIELDS_DECIDED: [(&[&str], &str, &str); 5] = [
    (
        &["spec", "tasks", "[]", "template", "spec", "restartPolicy"],
        "self == 'Never'",
        "kubetrain restarts the whole gang after a failure (spec.maxRetries, spec.backoff), \
         so its pods run with restartPolicy: Never; remove restartPolicy (OnFailure or Always \
         would restart one replica in place, out of step with the others)",
    ),
    (
        &["spec", "tasks", "[]", "template", "spec", "nodeName"],
        "size(self) == 0",
        "kubetrain chooses the nodes of the gang: remove nodeName, and use nodeSelector or \
         node affinity to keep the pods to some nodes",
    ),
    (
        &["spec", "tasks", "[]", "template", "spec", "schedulerName"],
        "self == 'default-scheduler'",
        "kubetrain places the gang and kube-scheduler (default-scheduler) binds its pods: \
         remove schedulerName; another scheduler's name (volcano, kai-scheduler, ...) would \
         leave them pending",
    ),
    (
        &[
            "spec",
            "tasks",
            "[]",
            "template",
            "spec",
            "affinity",
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
        "size(self) == 0",
        "required pod affinity is not supported: kubetrain places the gang without it and \
         kube-scheduler would refuse the nodes chosen; use spec.topology to keep replicas \
         together, or a preferred term",
    ),
    (
        &[
            "spec",
            "tasks",
            "[]",
            "template",
            "spec",
            "affinity",
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
        "size(self) == 0",
        "required pod anti-affinity is not supported: kubetrain places the gang without it \
         and kube-scheduler would refuse the nodes chosen; a replica that needs a node of its \
         own can ask for all of the node's GPUs",
    ),
];

/// Every rule of the three CRDs, in the order the CRDs list them.
pub fn rules() -> Vec<Rule> {
    [
        job_shape_rules(),
        job_running_rules(),
        job_field_rules(),
        queue_rules(),
        virtualcluster_rules(),
        gpu_resource_rules(),
        template_rules(),
    ]
    .concat()
}

/// A TrainingJob's tasks and name: unique task names, one required task, and pod and
/// Service names that are valid DNS labels.
fn job_shape_rules() -> Vec<Rule> {
    vec![
        Rule {
            crd: "trainingjobs",
            at: &["spec"],
            rule: "self.tasks.all(t, self.tasks.exists_one(u, u.name == t.name))",
            message: "spec.tasks: task names must be unique in the job",
            field_path: ".tasks",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &["spec"],
            rule: "self.tasks.exists(t, !has(t.requiredForCompletion) || t.requiredForCompletion)",
            message: "spec.tasks: at least one task must be requiredForCompletion, or the job \
                      could never succeed",
            field_path: ".tasks",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            // At the top, where the job's name is visible: pods are named
            // `<job>-<task>-<index>` and a pod name is a DNS label.
            at: &[],
            rule: "self.spec.tasks.all(t, size(self.metadata.name) + size(t.name) \
                   + size(string((has(t.replicas) ? t.replicas : 1) - 1)) + 2 <= 63)",
            message: "metadata.name and spec.tasks[].name are too long together: the pod \
                      names <job>-<task>-<index> must fit in 63 characters",
            field_path: ".spec.tasks",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            // At the top, where the name is visible: the job's headless Service is named
            // after it, and a Service name is a DNS-1035 label (Kubeflow's operators ask the
            // same of a job's name).
            at: &[],
            rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
            message: "metadata.name must consist of lower-case letters, digits and '-', start \
                      with a letter and end with a letter or digit (a DNS-1035 label): the \
                      job's Service and pods are named after it",
            field_path: ".metadata.name",
            reason: "FieldValueInvalid",
            // `metadata.name: Invalid value: "llm.v2": must consist ...`, as the API
            // server's own checks of a value read
            message_expression: Some(
                "'\"' + self.metadata.name + '\": must consist of lower-case letters, \
                 digits and \\'-\\', start with a letter and end with a letter or digit (a \
                 DNS-1035 label): the job\\'s Service and pods are named after it'",
            ),
        },
    ]
}

/// What cannot change under a running TrainingJob: its queue, its user and its gang's shape.
fn job_running_rules() -> Vec<Rule> {
    vec![
        Rule {
            crd: "trainingjobs",
            // At the top, where the status is visible: a job that holds GPUs is charged to
            // its queue's team and counted against its user's limit; moved under them, it
            // would run uncharged (Kueue, likewise, lets a workload's queue change only
            // while it is not admitted).
            at: &[],
            rule: "!has(oldSelf.status) || !has(oldSelf.status.phase) \
                   || !(oldSelf.status.phase in ['Starting', 'Running', 'Preempting']) \
                   || (has(self.spec.queue) ? self.spec.queue : '') \
                   == (has(oldSelf.spec.queue) ? oldSelf.spec.queue : '')",
            message: "cannot change while the job runs: its GPUs are charged to its queue's \
                      team. Set spec.suspend: true first (the job checkpoints and stops), then \
                      move it; or let it finish",
            field_path: ".spec.queue",
            reason: "FieldValueForbidden",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &[],
            rule: "!has(oldSelf.status) || !has(oldSelf.status.phase) \
                   || !(oldSelf.status.phase in ['Starting', 'Running', 'Preempting']) \
                   || (has(self.spec.user) ? self.spec.user : '') \
                   == (has(oldSelf.spec.user) ? oldSelf.spec.user : '')",
            message: "cannot change while the job runs: its GPUs count against its user's \
                      limit in the queue. Set spec.suspend: true first, or let it finish",
            field_path: ".spec.user",
            reason: "FieldValueForbidden",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            // At the top, where the status is visible. Only the gang's shape (task names,
            // replicas) is compared: its pods are named and counted by it, so a change under
            // a running gang would leave strays or holes. A template change takes effect at
            // the next attempt.
            at: &[],
            rule: "!has(oldSelf.status) || !has(oldSelf.status.phase) \
                   || !(oldSelf.status.phase in ['Starting', 'Running', 'Preempting']) \
                   || (self.spec.tasks.map(t, t.name) == oldSelf.spec.tasks.map(t, t.name) \
                   && self.spec.tasks.map(t, has(t.replicas) ? t.replicas : 1) \
                   == oldSelf.spec.tasks.map(t, has(t.replicas) ? t.replicas : 1))",
            message: "tasks and replicas cannot change while the job runs: set \
                      spec.suspend: true first (the job checkpoints and stops), change \
                      them, then set it back; or delete and re-create the job",
            field_path: ".spec.tasks",
            reason: "FieldValueForbidden",
            message_expression: None,
        },
    ]
}

/// A TrainingJob's single fields: gpuShare against nvidia.com/gpu, backoff bounds and the
/// pod failure policy.
fn job_field_rules() -> Vec<Rule> {
    vec![
        Rule {
            crd: "trainingjobs",
            at: &["spec", "tasks", "[]"],
            rule: "!has(self.gpuShare) || self.template.spec.containers.all(c, \
                   !has(c.resources) \
                   || ((!has(c.resources.limits) || !('nvidia.com/gpu' in c.resources.limits)) \
                   && (!has(c.resources.requests) || !('nvidia.com/gpu' in c.resources.requests))))",
            message: "spec.tasks[].gpuShare cannot be set together with a container's \
                      nvidia.com/gpu: use gpuShare for a fraction of one GPU, nvidia.com/gpu \
                      for whole GPUs",
            field_path: ".gpuShare",
            reason: "FieldValueForbidden",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &["spec", "backoff"],
            rule: "self.initialSeconds <= self.maxSeconds",
            message: "spec.backoff.initialSeconds must not exceed spec.backoff.maxSeconds",
            field_path: ".initialSeconds",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &["spec", "podFailurePolicy", "rules", "[]"],
            rule: "has(self.onExitCodes) != has(self.onPodConditions)",
            message: "spec.podFailurePolicy.rules[]: set exactly one of onExitCodes and \
                      onPodConditions",
            field_path: "",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &["spec", "podFailurePolicy", "rules", "[]", "onExitCodes"],
            rule: "self.operator != 'In' || !self.values.exists(v, v == 0)",
            message: "spec.podFailurePolicy.rules[].onExitCodes.values: 0 cannot be used with \
                      operator In (exit code 0 is a success, never a failure)",
            field_path: ".values",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "trainingjobs",
            at: &["spec", "podFailurePolicy", "rules", "[]", "onExitCodes"],
            rule: "self.values.all(v, self.values.exists_one(w, w == v))",
            message: "spec.podFailurePolicy.rules[].onExitCodes.values must be distinct",
            field_path: ".values",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
    ]
}

/// A Queue's parent and VirtualCluster.
fn queue_rules() -> Vec<Rule> {
    vec![
        Rule {
            crd: "queues",
            at: &[],
            rule: "!has(self.spec.parent) || self.spec.parent != self.metadata.name",
            message: "spec.parent: a queue cannot be its own parent",
            field_path: ".spec.parent",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "queues",
            // At the top, where the status is visible: the jobs a queue runs are charged to
            // its VirtualCluster, so moving it under them would leave them counted in one team
            // and run in another's queue (Kueue makes a LocalQueue's ClusterQueue immutable).
            at: &[],
            rule: "!has(oldSelf.status) || self.spec.virtualCluster == oldSelf.spec.virtualCluster \
                   || ((!has(oldSelf.status.admitted) || oldSelf.status.admitted == 0) \
                   && (!has(oldSelf.status.running) || oldSelf.status.running == 0))",
            message: "spec.virtualCluster cannot change while the queue has admitted or running \
                      jobs: let them finish (or suspend them) first, or create a queue in the \
                      other VirtualCluster and point the jobs' spec.queue at it",
            field_path: ".spec.virtualCluster",
            reason: "FieldValueForbidden",
            message_expression: None,
        },
    ]
}

/// A VirtualCluster's guarantee and limit.
fn virtualcluster_rules() -> Vec<Rule> {
    vec![
        Rule {
            crd: "virtualclusters",
            at: &["spec"],
            rule: "!has(self.guarantee) \
                   || self.guarantee.all(g, self.guarantee.exists_one(h, h.flavor == g.flavor))",
            message: "spec.guarantee: each GPU type (flavor) may appear only once",
            field_path: ".guarantee",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
        Rule {
            crd: "virtualclusters",
            at: &["spec"],
            rule: "!has(self.limit) || !has(self.guarantee) \
                   || self.limit.gpus >= self.guarantee.map(g, g.gpus).sum()",
            message: "spec.limit.gpus must be at least the sum of spec.guarantee[].gpus, or \
                      the guarantee could never be used",
            field_path: ".limit.gpus",
            reason: "FieldValueInvalid",
            message_expression: None,
        },
    ]
}

/// Whole GPUs, and a GPU request equal to its limit, on each container's `resources`.
fn gpu_resource_rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for at in RESOURCE_PATHS {
        rules.push(Rule {
            crd: "trainingjobs",
            at,
            rule: WHOLE_GPU_LIMIT,
            message: WHOLE_GPU_MESSAGE,
            field_path: ".limits['nvidia.com/gpu']",
            reason: "FieldValueInvalid",
            message_expression: None,
        });
        rules.push(Rule {
            crd: "trainingjobs",
            at,
            rule: WHOLE_GPU_REQUEST,
            message: WHOLE_GPU_MESSAGE,
            field_path: ".requests['nvidia.com/gpu']",
            reason: "FieldValueInvalid",
            message_expression: None,
        });
        rules.push(Rule {
            crd: "trainingjobs",
            at,
            rule: GPU_REQUEST_IS_LIMIT,
            message: GPU_REQUEST_IS_LIMIT_MESSAGE,
            field_path: ".requests['nvidia.com/gpu']",
            reason: "FieldValueInvalid",
            message_expression: None,
        });
    }
    rules
}

/// The pod template fields kubetrain decides in place of the template (see
/// `TEMPLATE_FIELDS_DECIDED`).
fn template_rules() -> Vec<Rule> {
    TEMPLATE_FIELDS_DECIDED
        .into_iter()
        .map(|(at, rule, message)| Rule {
            crd: "trainingjobs",
            at,
            rule,
            message,
            field_path: "",
            reason: "FieldValueForbidden",
            message_expression: None,
        })
        .collect()
}

/// Size bounds: a pod needs a container (the Pod schema says so only in Go code), and the CEL
/// cost estimator needs upper bounds, without which it assumes lists, maps and strings as
/// large as a whole request and rejects the rules above as too expensive. Each upper bound
/// is far above what a real pod template holds.
const BOUNDS: &[(&str, &[&str], &str, u64)] = &[
    (
        "trainingjobs",
        &["spec", "tasks", "[]", "template", "spec", "containers"],
        "minItems",
        1,
    ),
    (
        "trainingjobs",
        &["spec", "tasks", "[]", "template", "spec", "containers"],
        "maxItems",
        64,
    ),
    (
        "trainingjobs",
        &["spec", "tasks", "[]", "template", "spec", "initContainers"],
        "maxItems",
        64,
    ),
    ("virtualclusters", &["spec", "guarantee"], "maxItems", 64),
];
/// Under each container: the resource maps and their quantities.
const RESOURCE_MAPS: [&str; 2] = ["limits", "requests"];
const MAX_RESOURCES: u64 = 64;
const MAX_QUANTITY_LENGTH: u64 = 64;

/// Where a rule's path leads nowhere: the table and the Rust types disagree.
#[derive(Debug, thiserror::Error)]
#[error("{crd}: no schema at {path}")]
pub struct MissingSchema {
    crd: &'static str,
    path: String,
}

/// The schema object at `at` under `schema`.
fn schema_at<'a>(
    crd: &'static str,
    schema: &'a mut Value,
    at: &[&str],
) -> Result<&'a mut serde_json::Map<String, Value>, MissingSchema> {
    let missing = || MissingSchema {
        crd,
        path: at.join("."),
    };
    let mut node = schema;
    for step in at {
        let next = if *step == "[]" {
            node.get_mut("items")
        } else {
            node.get_mut("properties").and_then(|p| p.get_mut(*step))
        };
        node = next.ok_or_else(missing)?;
    }
    node.as_object_mut().ok_or_else(missing)
}

/// Adds the rules of `crd`, and the bounds they need, to its `openAPIV3Schema` (as JSON).
pub fn attach(crd: &'static str, schema: &mut Value) -> Result<(), MissingSchema> {
    for (_, at, keyword, value) in BOUNDS.iter().filter(|b| b.0 == crd) {
        schema_at(crd, schema, at)?.insert((*keyword).into(), json!(value));
    }
    if crd == "trainingjobs" {
        for at in CONTAINER_PATHS {
            let resources = schema_at(crd, schema, at)?
                .get_mut("properties")
                .and_then(|p| p.get_mut("resources"))
                .ok_or(MissingSchema {
                    crd,
                    path: format!("{}.resources", at.join(".")),
                })?;
            for map in RESOURCE_MAPS {
                let Some(m) = resources["properties"].get_mut(map) else {
                    continue;
                };
                m["maxProperties"] = json!(MAX_RESOURCES);
                m["additionalProperties"]["maxLength"] = json!(MAX_QUANTITY_LENGTH);
            }
        }
    }
    for r in rules().into_iter().filter(|r| r.crd == crd) {
        // A fieldPath must lead into the schema, and a CRD's schema may describe only the
        // name and generateName of its metadata: the name, then, so that an error about it
        // names `metadata.name` instead of `<nil>`.
        if r.field_path.starts_with(".metadata.name") {
            schema_at(crd, schema, &[])?
                .entry("properties")
                .or_insert_with(|| json!({}))["metadata"] =
                json!({"type": "object", "properties": {"name": {"type": "string"}}});
        }
        let obj = schema_at(crd, schema, r.at)?;
        let list = obj
            .entry("x-kubernetes-validations")
            .or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            let mut v = json!({ "rule": r.rule, "message": r.message, "reason": r.reason });
            if let Some(e) = r.message_expression {
                v["messageExpression"] = json!(e);
            }
            if !r.field_path.is_empty() {
                v["fieldPath"] = json!(r.field_path);
            }
            list.push(v);
        }
    }
    Ok(())
}
