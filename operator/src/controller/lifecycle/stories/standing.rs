//! Guaranteed or bonus: a gang admitted on borrowed GPUs, promoted into its team's guarantee,
//! demoted out of it, and no longer bonus once it holds nothing.

use super::*;

#[test]
fn a_gang_on_borrowed_gpus_is_admitted_as_bonus() {
    let mut s = Story::new(1).admitted("Pending");
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert_eq!(s.phase(), Phase::Starting);
    assert!(s.status().bonus);
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
}

/// A promotion re-marks the pods that still run; a replica that already finished keeps its
/// old mark, and does not keep the job on bonus.
#[test]
fn a_promoted_gang_is_no_longer_bonus_though_a_finished_pod_says_so() {
    let mut s = Story::running(2);
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert!(s.status().bonus);
    s.pods[1].status.get_or_insert_with(Default::default).phase = Some("Succeeded".into());
    annotate(&mut s.pods[0], BONUS_ANNOTATION, "false");
    s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(!s.status().bonus);
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("True", "AdmittedWithinGuarantee")
    );
}

/// A demotion (more important jobs of the team now fill its guarantee) re-marks the pods:
/// the job says it runs on borrowed GPUs and may be preempted by a reclaim.
#[test]
fn a_demoted_gang_runs_on_as_bonus() {
    let mut s = Story::running(2);
    s.tick();
    assert!(!s.status().bonus);
    s.annotate_all(BONUS_ANNOTATION, "true");
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(s.status().bonus);
    assert_eq!(s.says(ConditionType::Admitted), ("True", "AdmittedAsBonus"));
    // An admin sees when it became reclaimable (found in a day-2 run: no Event said so).
    assert_eq!(reasons(&fx), vec!["Demoted"]);
    s.annotate_all(BONUS_ANNOTATION, "false");
    let fx = s.after(1).tick();
    assert!(!s.status().bonus);
    assert_eq!(reasons(&fx), vec!["Promoted"]);
    assert!(reasons(&s.after(1).tick()).is_empty(), "once per change");
}

/// A failed job runs on nobody's GPUs: it no longer says it borrows them, though a replica
/// that still ran when another failed was marked bonus.
#[test]
fn a_failed_job_is_no_longer_bonus() {
    let mut s = Story::running(2);
    s.job.status.as_mut().expect("status").retries = 2;
    s.annotate_all(BONUS_ANNOTATION, "true");
    s.tick();
    assert!(s.status().bonus);
    set_phase(&mut s.pods[0], "Failed");
    s.after(10).tick();
    assert_eq!(s.phase(), Phase::Failed);
    assert!(!s.status().bonus);
}
