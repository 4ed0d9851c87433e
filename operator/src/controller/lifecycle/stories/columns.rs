//! What `kubectl get tj` prints and how conditions are kept: the NODES and GPUS columns, a
//! condition's transition time under a new reason.

use super::*;

/// `status.nodes` lists the gang's nodes once each, in rank order, for `kubectl get tj -o
/// wide` (its printed column would show only the first of `placement[*].node`); it goes
/// with the placement.
#[test]
fn the_nodes_column_lists_every_node_of_the_gang() {
    let mut s = Story::new(3);
    s.world.nodes.insert("n2".into(), up());
    s.tick();
    s.pods = vec![
        replica(0, "n2", "Running"),
        replica(1, "n1", "Running"),
        replica(2, "n2", "Running"),
    ];
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert_eq!(s.status().nodes.as_deref(), Some("n2,n1"));
    s.job.spec.suspend = true;
    s.after(1).tick();
    s.pods_gone();
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.status().nodes, None);
}

/// `kubectl get tj`'s GPUS column: three shares of 0.3 are 0.9, not 0.8999999999999999.
#[test]
fn requested_gpus_add_up_without_float_noise() {
    let mut j = job(3);
    j.spec.tasks[0].gpu_share = Some(300);
    assert_eq!(requested_gpus(&j).to_string(), "0.9");
    j.spec.tasks[0].gpu_share = Some(100);
    assert_eq!(requested_gpus(&j).to_string(), "0.3");
    assert_eq!(requested_gpus(&job(4)).to_string(), "4");
}

/// JobSet, `pkg/controllers/jobset_controller_test.go`, `TestUpdateConditions` "existing
/// conditions, update reason/message but keep status same" (the condition is updated, its
/// `lastTransitionTime` kept). In kubetrain a gang demoted onto borrowed GPUs keeps
/// `Admitted=True` with the new reason `AdmittedAsBonus` and a new message, its transition time
/// still its admission's; and a waiting job whose wait reason changes keeps `Admitted=False`
/// with the new reason, its transition time still when it began to wait.
#[test]
fn jobset_a_new_reason_keeps_the_conditions_transition_time() {
    let mut s = Story::running(2);
    assert_eq!(
        s.condition(ConditionType::Admitted).last_transition_time,
        at(0)
    );
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.after(100).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
    let c = s.condition(ConditionType::Admitted);
    assert_eq!(c.last_transition_time, at(0));
    assert!(c.message.contains("borrowed"), "{}", c.message);

    let mut s = Story::new(1);
    s.world.wait = Some((
        WaitReason::QuotaExhausted {
            virtual_cluster: "vc".into(),
            guaranteed_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
            share_kept_by: None,
            required: None,
        },
        Some(2),
    ));
    s.tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "QuotaExhausted"));
    s.world.wait = Some((
        WaitReason::OverLimit {
            virtual_cluster: "vc".into(),
            limit_gpus: 8,
            in_use_gpus: Gpus(8000),
            needed_gpus: Gpus(1000),
        },
        Some(2),
    ));
    s.after(50).tick();
    assert_eq!(s.says(ConditionType::Admitted), ("False", "OverLimit"));
    assert_eq!(
        s.condition(ConditionType::Admitted).last_transition_time,
        at(0)
    );
}

/// `status.prediction` (the PREDICTED columns of `kubectl get tj -o wide`): a new job takes
/// the history's prediction and keeps it while more runs finish; the spec's own value wins
/// at once, and when it is removed the history's comes back.
#[test]
fn a_job_keeps_the_prediction_made_when_it_was_first_seen_unless_its_spec_gives_one() {
    use crate::api::trainingjob::{Prediction, PredictionLevel, PredictionSource};
    let learned = |seconds: i64, runs: i32| Prediction {
        seconds: Some(seconds),
        source: PredictionSource::History,
        level: Some(PredictionLevel::Name),
        runs: Some(runs),
    };
    let mut s = Story::new(1);
    s.world.prediction = Some(learned(3600, 3));
    s.tick();
    assert_eq!(s.status().prediction, Some(learned(3600, 3)));
    // Another run finished meanwhile: the job's prediction stays as it was made.
    s.world.prediction = Some(learned(4000, 4));
    s.after(1).tick();
    assert_eq!(s.status().prediction, Some(learned(3600, 3)));
    s.job.spec.predicted_duration_seconds = Some(600);
    s.after(1).tick();
    let p = s.status().prediction.clone().expect("set");
    assert_eq!(
        (p.source, p.seconds, p.runs),
        (PredictionSource::User, Some(600), None)
    );
    s.job.spec.predicted_duration_seconds = None;
    s.after(1).tick();
    assert_eq!(s.status().prediction, Some(learned(4000, 4)));
}
