//! metav1.Condition bookkeeping: `lastTransitionTime` changes only when the status does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Sets (or replaces) the condition of `type_`, keeping its `lastTransitionTime` when the
/// status is unchanged. Returns whether the status changed (a transition worth an Event).
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: impl AsRef<str>,
    status: bool,
    reason: impl AsRef<str>,
    message: impl Into<String>,
    generation: Option<i64>,
    now: &Time,
) -> bool {
    let (type_, reason) = (type_.as_ref(), reason.as_ref());
    let status = if status { "True" } else { "False" }.to_string();
    let message = message.into();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            let changed = c.status != status;
            if changed {
                c.last_transition_time = now.clone();
            }
            c.status = status;
            c.reason = reason.to_string();
            c.message = message;
            c.observed_generation = generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: type_.to_string(),
                status,
                reason: reason.to_string(),
                message,
                observed_generation: generation,
                last_transition_time: now.clone(),
            });
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn get(conditions: &[Condition], type_: impl AsRef<str>) -> Option<&Condition> {
    let type_ = type_.as_ref();
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present and True.
pub fn is_true(conditions: &[Condition], type_: impl AsRef<str>) -> bool {
    get(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Removes the condition of `type_`; returns whether it was there.
pub fn remove(conditions: &mut Vec<Condition>, type_: impl AsRef<str>) -> bool {
    let type_ = type_.as_ref();
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// The conditions of `new` that now have the status paired with their type in `watched`
/// and did not in `old`, or did for another reason: the transitions worth an Event.
pub fn entered<'a>(
    old: &[Condition],
    new: &'a [Condition],
    watched: &[(&str, &str)],
) -> Vec<&'a Condition> {
    watched
        .iter()
        .filter_map(|&(type_, status)| {
            let now = get(new, type_).filter(|c| c.status == status)?;
            let before = get(old, type_).filter(|c| c.status == status);
            before.is_none_or(|b| b.reason != now.reason).then_some(now)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entering_a_watched_status_or_changing_its_reason_is_a_transition() {
        let mut old = Vec::new();
        set(&mut old, "Ready", true, "Ready", "ok", None, &t(0));
        set(
            &mut old,
            "AboveLimit",
            true,
            "JobsLeaving",
            "m",
            None,
            &t(0),
        );
        let mut new = old.clone();
        let watched = [("Ready", "False"), ("AboveLimit", "True")];
        assert!(entered(&old, &new, &watched).is_empty(), "no change");
        set(
            &mut new,
            "Ready",
            false,
            "UnknownGpuType",
            "no A100",
            None,
            &t(1),
        );
        set(
            &mut new,
            "AboveLimit",
            true,
            "JobsLeaving",
            "other numbers",
            None,
            &t(1),
        );
        let got: Vec<&str> = entered(&old, &new, &watched)
            .iter()
            .map(|c| c.reason.as_str())
            .collect();
        assert_eq!(got, ["UnknownGpuType"], "a message alone is no transition");
        set(
            &mut new,
            "AboveLimit",
            true,
            "LimitLowered",
            "m",
            None,
            &t(2),
        );
        let got: Vec<&str> = entered(&old, &new, &watched)
            .iter()
            .map(|c| c.reason.as_str())
            .collect();
        assert_eq!(got, ["UnknownGpuType", "LimitLowered"]);
        // back to the good side: nothing to tell
        assert!(entered(&new, &old, &[("Ready", "False")]).is_empty());
    }

    fn t(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("valid"))
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut c = Vec::new();
        assert!(set(&mut c, "Valid", true, "Ok", "fine", Some(1), &t(10)));
        assert!(!set(
            &mut c,
            "Valid",
            true,
            "Ok",
            "still fine",
            Some(2),
            &t(20)
        ));
        assert_eq!(c[0].last_transition_time, t(10));
        assert_eq!(c[0].observed_generation, Some(2));
        assert!(set(
            &mut c,
            "Valid",
            false,
            "UnknownQueue",
            "no queue",
            Some(3),
            &t(30)
        ));
        assert_eq!(c[0].last_transition_time, t(30));
        assert!(!is_true(&c, "Valid"));
        assert!(remove(&mut c, "Valid"));
        assert!(c.is_empty());
    }
}
