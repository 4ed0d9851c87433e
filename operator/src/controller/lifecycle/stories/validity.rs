//! An invalid spec: a job that holds nothing waits in Pending until a change fixes it; a running
//! one runs on; every condition observes a spec edit.

use super::*;

#[test]
fn an_invalid_job_waits_in_pending_until_fixed() {
    let mut s = Story::new(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.world.queue = None;
    let fx = s.tick();
    assert_eq!(s.phase(), Phase::Pending);
    assert_eq!(s.says(ConditionType::Valid), ("False", "UnknownQueue"));
    assert_eq!(s.status().reason.as_deref(), Some("UnknownQueue"));
    assert_eq!(
        s.status().message.as_deref(),
        Some("queue q does not exist")
    );
    assert_eq!(reasons(&fx), ["UnknownQueue"]);
    assert_eq!(fx.events[0].type_, EventType::Warning);
    assert_eq!(fx.requeue, Some(Duration::from_secs(15)));
    // Reported once.
    let fx = s.after(15).tick();
    assert!(fx.events.is_empty());

    // Fixed: valid again, as an Event says beside the Warning before it, and queued.
    s.world.validity = Ok(());
    s.world.queue = Some("q".into());
    let fx = s.after(15).tick();
    assert_eq!(s.says(ConditionType::Valid), ("True", "Valid"));
    assert_eq!(s.phase(), Phase::Queued);
    assert_ne!(s.status().reason.as_deref(), Some("UnknownQueue"));
    assert_eq!(reasons(&fx), ["Valid", "Queued"]);
    // A new job valid from the start has no such Event.
    let mut s = Story::new(1);
    assert_eq!(reasons(&s.tick()), ["Queued"]);
}

#[test]
fn a_running_job_whose_spec_turns_invalid_keeps_running() {
    let mut s = Story::running(1);
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.says(ConditionType::Valid), ("False", "UnknownQueue"));
    assert_eq!(reasons(&fx), ["UnknownQueue"]);
    // It does not wait: its Event says it runs on (an admin read "waits" of a running job).
    assert!(
        fx.events[0].note.contains("runs on"),
        "{}",
        fx.events[0].note
    );
    s.world.validity = Ok(());
    let fx = s.after(1).tick();
    assert_eq!(reasons(&fx), ["Valid"]);
}

#[test]
fn a_spec_edit_is_observed_by_every_condition() {
    let mut s = Story::running(1);
    assert!(s.status().conditions.len() > 2);
    s.job.metadata.generation = Some(2);
    s.job.spec.priority = Some(5);
    let fx = s.after(1).tick();
    assert_eq!(s.phase(), Phase::Running);
    assert!(fx.events.is_empty(), "nothing happened: {:?}", reasons(&fx));
    assert_eq!(s.status().observed_generation, Some(2));
    for c in &s.status().conditions {
        assert_eq!(c.observed_generation, Some(2), "{}", c.type_);
    }
}

/// A job waiting in its queue that turns invalid (its queue deleted, say) is not admitted for
/// that reason now: `Admitted=False` says it, not the wait it had.
#[test]
fn a_waiting_job_that_turns_invalid_says_so_on_admitted() {
    let mut s = Story::new(1);
    s.world.wait = Some((WaitReason::QueueTerminating { queue: "q".into() }, Some(1)));
    s.tick();
    assert_eq!(
        s.says(ConditionType::Admitted),
        ("False", "QueueTerminating")
    );
    s.world.validity = Err(Invalid::UnknownQueue("q".into()));
    s.world.wait = None;
    s.after(5).tick();
    assert_eq!(s.phase(), Phase::Pending);
    assert_eq!(s.says(ConditionType::Admitted), ("False", "UnknownQueue"));
}
