//! The Argo CD health checks (`charts/kubetrain/files/argocd/`, the one copy that the chart
//! and `config/argocd/argocd-cm.yaml` carry) run in Lua 5.1 (Argo CD's gopher-lua is a
//! Lua 5.1) against sample TrainingJobs, Queues and VirtualClusters whose statuses are built
//! from the operator's own status types, so a renamed status field breaks this test. The
//! `argocd-cm.yaml` snippet must carry the scripts verbatim.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubetrain::api::{GpuAmount, Phase, QueueStatus, TrainingJobStatus, VirtualClusterStatus};
use kubetrain_e2e::repo_root;
use mlua::{Lua, Value as LuaValue};
use serde_json::{Value, json};

fn script(file: &str) -> String {
    let path = repo_root().join("charts/kubetrain/files/argocd").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// JSON to Lua the way Argo CD hands objects to its scripts: objects and arrays as tables
/// (arrays from 1), numbers as Lua numbers, `null` as nil.
fn to_lua(lua: &Lua, v: &Value) -> mlua::Result<LuaValue> {
    Ok(match v {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => LuaValue::Number(n.as_f64().unwrap_or_default()),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.set(i + 1, to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table()?;
            for (k, item) in map {
                t.set(k.as_str(), to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// Runs `file` with `obj` set to `object`; returns (status, message).
fn health(file: &str, object: &Value) -> (String, String) {
    let lua = Lua::new();
    let obj = to_lua(&lua, object).expect("object converts");
    lua.globals().set("obj", obj).expect("set obj");
    let hs: mlua::Table = lua
        .load(script(file))
        .set_name(file)
        .eval()
        .unwrap_or_else(|e| panic!("{file} failed on {object}: {e}"));
    let status: String = hs.get("status").expect("hs.status");
    let message: Option<String> = hs.get("message").expect("hs.message");
    (status, message.unwrap_or_default())
}

fn cond(type_: &str, status: bool, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(1),
        last_transition_time: Time(
            k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).expect("time"),
        ),
    }
}

fn object(kind: &str, generation: i64, status: Option<Value>) -> Value {
    let mut o = json!({
        "apiVersion": "kubetrain.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "x", "namespace": "team", "generation": generation},
        "spec": {},
    });
    if let Some(s) = status {
        o["status"] = s;
    }
    o
}

fn job(phase: Phase, message: &str, conditions: Vec<Condition>) -> Value {
    let status = TrainingJobStatus {
        phase,
        message: Some(message.into()),
        observed_generation: Some(1),
        conditions,
        ..Default::default()
    };
    object(
        "TrainingJob",
        1,
        Some(serde_json::to_value(status).expect("status")),
    )
}

const TJ: &str = "trainingjob-health.lua";
const Q: &str = "queue-health.lua";
const VC: &str = "virtualcluster-health.lua";

#[test]
fn trainingjob_health() {
    // Not yet seen by the operator.
    assert_eq!(health(TJ, &object("TrainingJob", 1, None)).0, "Progressing");

    let waiting = job(
        Phase::Queued,
        "VirtualCluster vision uses 16 of its 16 guaranteed GPUs",
        vec![
            cond("Valid", true, "Valid", "ok"),
            cond(
                "Admitted",
                false,
                "QuotaExhausted",
                "VirtualCluster vision uses 16 of its 16 guaranteed GPUs",
            ),
        ],
    );
    let (s, m) = health(TJ, &waiting);
    assert_eq!(s, "Progressing");
    assert!(m.contains("guaranteed GPUs"), "{m}");

    // Its queue held by an admin (stopPolicy): suspended, as a job with spec.suspend is.
    let held = job(
        Phase::Queued,
        "Queue vision is held (stopPolicy: Hold)",
        vec![cond(
            "Admitted",
            false,
            "QueueHeld",
            "Queue vision is held (stopPolicy: Hold)",
        )],
    );
    let (s, m) = health(TJ, &held);
    assert_eq!(s, "Suspended");
    assert!(m.contains("is held"), "{m}");

    for phase in [
        Phase::Pending,
        Phase::Starting,
        Phase::Running,
        Phase::Preempting,
        Phase::Retrying,
    ] {
        assert_eq!(
            health(TJ, &job(phase, "working", vec![])).0,
            "Progressing",
            "{phase}"
        );
    }
    assert_eq!(
        health(
            TJ,
            &job(Phase::Succeeded, "All replicas succeeded.", vec![])
        ),
        ("Healthy".into(), "All replicas succeeded.".into())
    );
    assert_eq!(
        health(TJ, &job(Phase::Suspended, "Suspended", vec![])).0,
        "Suspended"
    );

    let failed = job(
        Phase::Failed,
        "Replica llm-worker-1 failed: OOMKilled. No retries left (3 of 3 used).",
        vec![],
    );
    let (s, m) = health(TJ, &failed);
    assert_eq!(s, "Degraded");
    assert!(m.contains("OOMKilled"), "{m}");

    // A spec the operator rejects (GitOps must fix it): Degraded with the reason.
    let invalid = job(
        Phase::Pending,
        "queue nope not found",
        vec![cond(
            "Valid",
            false,
            "UnknownQueue",
            "Queue nope does not exist",
        )],
    );
    assert_eq!(
        health(TJ, &invalid),
        ("Degraded".into(), "Queue nope does not exist".into())
    );

    // A job that can never fit the cluster is not going to make progress.
    let never = job(
        Phase::Queued,
        "never",
        vec![cond(
            "Admitted",
            false,
            "NeverFits",
            "The job cannot run on the cluster as it is: 16 GPUs per replica",
        )],
    );
    let (s, m) = health(TJ, &never);
    assert_eq!(s, "Degraded");
    assert!(m.contains("cannot run"), "{m}");

    // Nor is one larger than a limit itself, while one that waits for room under it is.
    let admitted = |reason: &str| {
        job(
            Phase::Queued,
            "limited",
            vec![cond("Admitted", false, reason, "VirtualCluster nlp ...")],
        )
    };
    assert_eq!(health(TJ, &admitted("ExceedsLimit")).0, "Degraded");
    assert_eq!(health(TJ, &admitted("OverLimit")).0, "Progressing");

    // A new spec the operator has not looked at yet: whatever the old status says.
    let mut stale = job(Phase::Succeeded, "All replicas succeeded.", vec![]);
    stale["metadata"]["generation"] = json!(2);
    assert_eq!(health(TJ, &stale).0, "Progressing");
}

#[test]
fn queue_health() {
    assert_eq!(health(Q, &object("Queue", 1, None)).0, "Progressing");
    assert_eq!(
        health(Q, &object("Queue", 1, Some(json!({})))).0,
        "Progressing"
    );

    let ready = QueueStatus {
        pending: 2,
        running: 1,
        gpus_in_use: GpuAmount::whole(8),
        bonus_gpus: GpuAmount::from_milli(3_500),
        observed_generation: Some(1),
        conditions: vec![cond(
            "Ready",
            true,
            "Ready",
            "Admitting jobs into VirtualCluster vision.",
        )],
        ..Default::default()
    };
    let ready = object(
        "Queue",
        1,
        Some(serde_json::to_value(&ready).expect("status")),
    );
    assert_eq!(
        health(Q, &ready),
        (
            "Healthy".into(),
            "2 pending, 1 running, 8 GPUs in use (3.5 bonus)".into()
        )
    );

    let orphan = QueueStatus {
        observed_generation: Some(1),
        conditions: vec![cond(
            "Ready",
            false,
            "UnknownVirtualCluster",
            "VirtualCluster nope does not exist; jobs of this queue wait.",
        )],
        ..Default::default()
    };
    let (s, m) = health(
        Q,
        &object(
            "Queue",
            1,
            Some(serde_json::to_value(&orphan).expect("status")),
        ),
    );
    assert_eq!(s, "Degraded");
    assert!(m.contains("does not exist"), "{m}");

    let deleting = QueueStatus {
        observed_generation: Some(1),
        conditions: vec![
            cond("Ready", true, "Ready", "ok"),
            cond(
                "Terminating",
                true,
                "JobsRemain",
                "Queue research still has 3 unfinished job(s)",
            ),
        ],
        ..Default::default()
    };
    let (s, m) = health(
        Q,
        &object(
            "Queue",
            1,
            Some(serde_json::to_value(&deleting).expect("status")),
        ),
    );
    assert_eq!(s, "Progressing");
    assert!(m.contains("3 unfinished"), "{m}");

    let vc_deleting = QueueStatus {
        observed_generation: Some(1),
        conditions: vec![cond(
            "Ready",
            false,
            "VirtualClusterTerminating",
            "VirtualCluster vision is being deleted",
        )],
        ..Default::default()
    };
    let (s, m) = health(
        Q,
        &object(
            "Queue",
            1,
            Some(serde_json::to_value(&vc_deleting).expect("status")),
        ),
    );
    assert_eq!(s, "Progressing");
    assert!(m.contains("being deleted"), "{m}");

    // Held by its stopPolicy: on purpose, nothing to repair.
    for reason in ["Held", "HeldAndDraining"] {
        let held = QueueStatus {
            observed_generation: Some(1),
            conditions: vec![cond(
                "Ready",
                false,
                reason,
                "Held by stopPolicy Hold: the queue admits no new jobs",
            )],
            ..Default::default()
        };
        let (s, m) = health(
            Q,
            &object(
                "Queue",
                1,
                Some(serde_json::to_value(&held).expect("status")),
            ),
        );
        assert_eq!(s, "Suspended", "{reason}");
        assert!(m.contains("Held by stopPolicy"), "{m}");
    }

    let mut stale = ready.clone();
    stale["metadata"]["generation"] = json!(5);
    assert_eq!(health(Q, &stale).0, "Progressing");
}

#[test]
fn virtualcluster_health() {
    assert_eq!(
        health(VC, &object("VirtualCluster", 1, None)).0,
        "Progressing"
    );

    let ok = VirtualClusterStatus {
        guaranteed_gpus: 16,
        in_use_gpus: GpuAmount::from_milli(11_500),
        bonus_gpus: GpuAmount::ZERO,
        lent_gpus: GpuAmount::whole(4),
        observed_generation: Some(1),
        conditions: vec![
            cond(
                "Ready",
                true,
                "Ready",
                "Guarantee and usage are up to date.",
            ),
            cond(
                "OverCommitted",
                false,
                "WithinCapacity",
                "All guarantees fit the cluster.",
            ),
        ],
        ..Default::default()
    };
    let ok_obj = object(
        "VirtualCluster",
        1,
        Some(serde_json::to_value(&ok).expect("status")),
    );
    assert_eq!(
        health(VC, &ok_obj),
        (
            "Healthy".into(),
            "11.5 of 16 guaranteed GPUs in use, 0 bonus, 4 lent".into()
        )
    );

    let mut over = ok.clone();
    over.conditions[1] = cond(
        "OverCommitted",
        true,
        "GuaranteesExceedCapacity",
        "Guarantees exceed the cluster (A100: 48 guaranteed, 32 exist)",
    );
    let (s, m) = health(
        VC,
        &object(
            "VirtualCluster",
            1,
            Some(serde_json::to_value(&over).expect("status")),
        ),
    );
    assert_eq!(s, "Degraded");
    assert!(m.contains("exceed"), "{m}");

    let mut not_ready = ok.clone();
    not_ready.conditions = vec![cond(
        "Ready",
        false,
        "Invalid",
        "namespaceSelector is invalid",
    )];
    assert_eq!(
        health(
            VC,
            &object(
                "VirtualCluster",
                1,
                Some(serde_json::to_value(&not_ready).expect("status"))
            )
        ),
        ("Degraded".into(), "namespaceSelector is invalid".into())
    );

    let mut deleting = ok.clone();
    deleting.conditions[0] = cond(
        "Ready",
        false,
        "Terminating",
        "The VirtualCluster is being deleted: ... its 2 running job(s) to finish or be deleted.",
    );
    let (s, m) = health(
        VC,
        &object(
            "VirtualCluster",
            1,
            Some(serde_json::to_value(&deleting).expect("status")),
        ),
    );
    assert_eq!(s, "Progressing");
    assert!(m.contains("2 running"), "{m}");

    let mut stale = ok_obj.clone();
    stale["metadata"]["generation"] = json!(2);
    assert_eq!(health(VC, &stale).0, "Progressing");
}

/// `argocd-cm.yaml` holds exactly the scripts, under Argo CD's per-kind keys.
#[test]
fn argocd_cm_carries_the_scripts() {
    let path = repo_root().join("config/argocd/argocd-cm.yaml");
    let text = std::fs::read_to_string(&path).expect("argocd-cm.yaml");
    let cm: Value = serde_norway::from_str(&text).expect("argocd-cm.yaml is YAML");
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["metadata"]["name"], "argocd-cm");
    for (kind, file) in [("TrainingJob", TJ), ("Queue", Q), ("VirtualCluster", VC)] {
        let key = format!("resource.customizations.health.kubetrain.io_{kind}");
        assert_eq!(
            cm["data"][&key].as_str(),
            Some(script(file).as_str()),
            "{key} differs from {file}"
        );
    }
}
