//! The controller's pure layer, checked: the modules that translate objects and decide (the
//! snapshot, the lifecycle, the pod protocol's reader and writer, the planning halves of
//! reservations and preemption, validation, usage) import no `Context`, no client, no
//! runtime and no clock. They take what they read as arguments, `now` included, so every
//! one of them is tested without a cluster. The shells (`trainingjob`, `scheduler`,
//! `queue`, `virtualcluster`, `reservation_writes`, `withdrawal`, ...) do the I/O.

/// Each pure module's source, by path.
const PURE: &[(&str, &str)] = &[
    ("conditions.rs", include_str!("conditions.rs")),
    ("cycle_plan.rs", include_str!("cycle_plan.rs")),
    ("duration_history.rs", include_str!("duration_history.rs")),
    ("gang.rs", include_str!("gang.rs")),
    ("job_key.rs", include_str!("job_key.rs")),
    ("node_health.rs", include_str!("node_health.rs")),
    ("placement_rules.rs", include_str!("placement_rules.rs")),
    ("pods/mod.rs", include_str!("pods/mod.rs")),
    ("pods/patches.rs", include_str!("pods/patches.rs")),
    ("pods/service.rs", include_str!("pods/service.rs")),
    ("preemption.rs", include_str!("preemption.rs")),
    ("reservations.rs", include_str!("reservations.rs")),
    ("resources.rs", include_str!("resources.rs")),
    ("snapshot/mod.rs", include_str!("snapshot/mod.rs")),
    ("snapshot/jobs.rs", include_str!("snapshot/jobs.rs")),
    ("snapshot/nodes.rs", include_str!("snapshot/nodes.rs")),
    ("usage.rs", include_str!("usage.rs")),
    ("validate/mod.rs", include_str!("validate/mod.rs")),
    (
        "validate/references.rs",
        include_str!("validate/references.rs"),
    ),
    (
        "validate/templates.rs",
        include_str!("validate/templates.rs"),
    ),
    ("wait_details.rs", include_str!("wait_details.rs")),
    ("../predict/mod.rs", include_str!("../predict/mod.rs")),
    (
        "../predict/identity.rs",
        include_str!("../predict/identity.rs"),
    ),
    ("waiting.rs", include_str!("waiting.rs")),
    ("lifecycle/mod.rs", include_str!("lifecycle/mod.rs")),
    ("lifecycle/failure.rs", include_str!("lifecycle/failure.rs")),
    (
        "lifecycle/finished.rs",
        include_str!("lifecycle/finished.rs"),
    ),
    (
        "lifecycle/placed_again.rs",
        include_str!("lifecycle/placed_again.rs"),
    ),
    ("lifecycle/policy.rs", include_str!("lifecycle/policy.rs")),
    (
        "lifecycle/preempting.rs",
        include_str!("lifecycle/preempting.rs"),
    ),
    ("lifecycle/queued.rs", include_str!("lifecycle/queued.rs")),
    ("lifecycle/running.rs", include_str!("lifecycle/running.rs")),
    (
        "lifecycle/validity.rs",
        include_str!("lifecycle/validity.rs"),
    ),
];

/// What I/O looks like in a module's source: the shared context, a client or an API handle,
/// the async runtime, and a clock.
const IO: &[&str] = &[
    "super::context",
    "Context>",
    "&Context",
    "kube::Client",
    "kube::Api",
    "Api<",
    "Client::",
    ".await",
    "async fn",
    "tokio::",
    "::now()",
    "Instant::",
    "SystemTime",
];

/// A module's code before its tests.
fn code(source: &str) -> &str {
    source.split("#[cfg(test)]").next().unwrap_or(source)
}

#[test]
fn the_pure_layer_does_no_io_and_reads_no_clock() {
    let mut found = Vec::new();
    for (path, source) in PURE {
        for (n, line) in code(source).lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            for io in IO.iter().filter(|io| line.contains(**io)) {
                found.push(format!("controller/{path}:{}: {io}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "I/O in the pure layer:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_io() {
    let shell = "use super::context::Context;\nasync fn f(ctx: &Context) { g().await }\n";
    assert!(IO.iter().filter(|io| code(shell).contains(**io)).count() >= 3);
    assert_eq!(
        code("fn f() {}\n#[cfg(test)]\nasync fn t() {}"),
        "fn f() {}\n"
    );
}
