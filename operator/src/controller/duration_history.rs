//! The run times of the cluster's finished jobs, for predicting how long a new one runs
//! (issue 53; the predictor itself is [`crate::predict`]).
//!
//! Each scheduling cycle, the leader records the jobs that finished since it last looked
//! ([`DurationHistory::record_finished`]): each once, by UID, however many cycles and
//! failovers see it; a job's identity ([`identity_of`]) is its namespace, user, name without
//! run numbers, images and GPU count. A job seen for the first time gets its prediction
//! ([`prediction_for`]): its own `spec.predictedDurationSeconds`, else the history's, else
//! none; the lifecycle keeps it in `status.prediction` ([`settle`]), and the snapshot gives
//! the core its seconds. The leader keeps the history in the ConfigMap [`CONFIG_MAP`]
//! (`config_store.rs`), as it keeps the workload's shapes.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use super::config_store::Kept;
use crate::api::trainingjob::{Prediction, PredictionLevel, PredictionSource};
use crate::api::{Phase, TrainingJob, TrainingJobStatus};
use crate::predict::{self, Identity, Level, Outcome, Predictor, StoredRuns, normalise_name};

/// The ConfigMap, in the operator's namespace, that keeps the history.
pub const CONFIG_MAP: &str = "kubetrain-duration-history";
/// Its data key.
pub const DATA_KEY: &str = "durations.json";
/// How long after it finished a job is still recorded: the cache shows a finished job
/// within seconds, so this only bounds the UIDs kept to know what was recorded.
pub const RECORD_WINDOW_SECONDS: i64 = 600;
/// Most UIDs of recently finished jobs kept (the newest): with the predictor's identities,
/// the stored history stays well under a ConfigMap's 1 MiB.
pub const MAX_RECORDED: usize = 2000;

/// The identity of a job's run: namespace, user (`spec.user`, else the namespace: all the
/// operator knows of who submitted it), name without run numbers, the containers' images
/// (sorted, each once) and the GPUs it asks for.
pub fn identity_of(job: &TrainingJob) -> Identity {
    let namespace = job.namespace().unwrap_or_default();
    let mut images: Vec<String> = job
        .spec
        .tasks
        .iter()
        .filter_map(|t| t.pod_template().ok()?.spec)
        .flat_map(|s| s.containers.into_iter().filter_map(|c| c.image))
        .collect();
    images.sort_unstable();
    images.dedup();
    Identity {
        user: job.spec.user.clone().unwrap_or_else(|| namespace.clone()),
        namespace,
        name: normalise_name(&job.name_any()),
        images: images.join(","),
        gpu_milli: (super::lifecycle::requested_gpus(job) * 1000.0).round() as u64,
    }
}

fn level(l: Level) -> PredictionLevel {
    match l {
        Level::NameAndImage => PredictionLevel::NameAndImage,
        Level::Name => PredictionLevel::Name,
        Level::User => PredictionLevel::User,
        Level::Gpus => PredictionLevel::Gpus,
    }
}

/// The job's prediction now: its spec's, else the history's, else none.
pub fn prediction_for(job: &TrainingJob, predictor: &Predictor) -> Prediction {
    if let Some(seconds) = job.spec.predicted_duration_seconds {
        return Prediction {
            seconds: Some(seconds),
            source: PredictionSource::User,
            level: None,
            runs: None,
        };
    }
    match predictor.predict(&identity_of(job)) {
        Some(p) => Prediction {
            seconds: Some(p.seconds),
            source: PredictionSource::History,
            level: Some(level(p.level)),
            runs: Some(i32::try_from(p.runs).unwrap_or(i32::MAX)),
        },
        None => Prediction {
            seconds: None,
            source: PredictionSource::None,
            level: None,
            runs: None,
        },
    }
}

/// Whether the job's status may take a prediction from the history ([`settle`]): it has
/// none, or the spec's, which may have been removed. The reconciler looks the history up
/// only then.
pub fn needs_prediction(job: &TrainingJob) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.prediction.as_ref())
        .is_none_or(|p| p.source == PredictionSource::User)
}

/// What `status.prediction` is to say: the spec's value whenever it has one; else the one
/// made when the job was first seen, kept for the job's life (a prediction that moved each
/// time another run finished would reorder the queue and cost a write each time); else, for
/// a job never predicted or whose spec value was removed, `learned` (the history's now).
pub fn settle(
    old: Option<Prediction>,
    spec: Option<i64>,
    learned: Option<&Prediction>,
) -> Option<Prediction> {
    if let Some(seconds) = spec {
        return Some(Prediction {
            seconds: Some(seconds),
            source: PredictionSource::User,
            level: None,
            runs: None,
        });
    }
    match old {
        Some(p) if p.source != PredictionSource::User => Some(p),
        old => learned.cloned().or(old),
    }
}

/// The seconds the core orders the job by: the spec's, else its status's from the history.
pub fn predicted_seconds(job: &TrainingJob, status: &TrainingJobStatus) -> Option<i64> {
    job.spec.predicted_duration_seconds.or_else(|| {
        status
            .prediction
            .as_ref()
            .filter(|p| p.source == PredictionSource::History)
            .and_then(|p| p.seconds)
    })
}

/// How long the job's last run took, and how it ended; `None` for a job not finished, or
/// not run in one piece (preempted or retried: its last run is not the whole of it).
pub fn finished_run(status: &TrainingJobStatus) -> Option<(Outcome, i64, i64)> {
    let outcome = match status.phase {
        Phase::Succeeded => Outcome::Succeeded,
        Phase::Failed => Outcome::Failed,
        _ => return None,
    };
    if status.preemptions > 0 || status.retries > 0 || status.infrastructure_retries > 0 {
        return None;
    }
    let finished = status.finished_at.as_ref()?.0.as_second();
    let started = status
        .started_at
        .as_ref()
        .or(status.admitted_at.as_ref())?
        .0
        .as_second();
    Some((outcome, finished - started, finished))
}

/// The predictor, and the jobs it has recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct DurationHistory {
    predictor: Predictor,
    /// UIDs of the runs recorded that finished within [`RECORD_WINDOW_SECONDS`], with their
    /// finish: a run is recorded once.
    recorded: BTreeMap<String, i64>,
    changed: bool,
}

impl DurationHistory {
    pub fn new(settings: predict::Settings) -> Self {
        DurationHistory {
            predictor: Predictor::new(settings),
            recorded: BTreeMap::new(),
            changed: false,
        }
    }

    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    /// Records the jobs that finished within [`RECORD_WINDOW_SECONDS`] before `now` and were
    /// not recorded yet; forgets the UIDs of runs older than that. Returns how many were
    /// recorded (a failure judged early counts as seen, not recorded).
    pub fn record_finished(&mut self, jobs: &[Arc<TrainingJob>], now: i64) -> usize {
        let since = now - RECORD_WINDOW_SECONDS;
        let before = self.recorded.len();
        self.recorded.retain(|_, finished| *finished >= since);
        let mut recorded = 0;
        for job in jobs {
            let Some(status) = job.status.as_ref() else {
                continue;
            };
            let Some((outcome, seconds, finished)) = finished_run(status) else {
                continue;
            };
            let Some(uid) = job.metadata.uid.as_ref() else {
                continue;
            };
            if finished < since || self.recorded.contains_key(uid) {
                continue;
            }
            self.recorded.insert(uid.clone(), finished);
            if self
                .predictor
                .record(&identity_of(job), outcome, seconds)
                .is_ok()
            {
                recorded += 1;
            }
        }
        while self.recorded.len() > MAX_RECORDED {
            let oldest = self
                .recorded
                .iter()
                .min_by_key(|(uid, f)| (**f, (*uid).clone()))
                .map(|(uid, _)| uid.clone());
            match oldest {
                Some(uid) => self.recorded.remove(&uid),
                None => break,
            };
        }
        if recorded > 0 || self.recorded.len() != before {
            self.changed = true;
        }
        recorded
    }

    pub fn from_json(settings: predict::Settings, text: &str) -> Result<Self, String> {
        let stored: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if stored.version != 1 {
            return Err(format!("version {} is not 1", stored.version));
        }
        Ok(DurationHistory {
            predictor: Predictor::from_stored(settings, &stored.identities)?,
            recorded: stored.recorded,
            changed: false,
        })
    }
}

impl Kept for DurationHistory {
    fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn mark_changed(&mut self) {
        self.changed = true;
    }

    fn to_json(&self) -> String {
        let stored = Stored {
            version: 1,
            identities: self.predictor.to_stored(),
            recorded: self.recorded.clone(),
        };
        // Strings and integers always serialize.
        serde_json::to_string(&stored).unwrap_or_default()
    }
}

/// The history as the ConfigMap keeps it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    version: u32,
    /// Least recently recorded first.
    identities: Vec<StoredRuns>,
    #[serde(default)]
    recorded: BTreeMap<String, i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, uid: &str, status: serde_json::Value) -> Arc<TrainingJob> {
        let j: TrainingJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubetrain.io/v1alpha1",
            "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": "ml", "uid": uid},
            "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {
                "containers": [{"name": "c", "image": "train:1",
                    "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}]},
            "status": status,
        }))
        .expect("a TrainingJob");
        Arc::new(j)
    }

    fn done(phase: &str, started: &str, finished: &str) -> serde_json::Value {
        serde_json::json!({"phase": phase, "startedAt": started, "finishedAt": finished})
    }

    const T0: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    #[test]
    fn a_jobs_identity_is_its_namespace_user_name_images_and_gpus() {
        let j = job("bert-run7", "u1", serde_json::json!({}));
        let id = identity_of(&j);
        assert_eq!(
            (id.namespace.as_str(), id.user.as_str(), id.name.as_str()),
            ("ml", "ml", "bert-run")
        );
        assert_eq!((id.images.as_str(), id.gpu_milli), ("train:1", 8000));
    }

    #[test]
    fn each_finished_run_is_recorded_once_and_predicts_the_next() {
        let mut h = DurationHistory::new(predict::Settings::default());
        let runs = vec![
            job(
                "bert-1",
                "u1",
                done("Succeeded", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),
            ),
            job(
                "bert-2",
                "u2",
                done("Succeeded", "2026-01-01T00:10:00Z", "2026-01-01T01:05:00Z"),
            ),
            job("bert-3", "u3", serde_json::json!({"phase": "Running"})),
        ];
        let now = T0 + 3900;
        assert_eq!(h.record_finished(&runs, now), 2);
        assert!(h.take_changed());
        assert_eq!(h.record_finished(&runs, now + 10), 0, "each run once");
        let next = job("bert-4", "u4", serde_json::json!({}));
        let p = prediction_for(&next, h.predictor());
        assert_eq!(p.source, PredictionSource::History);
        assert_eq!(
            (p.seconds, p.level, p.runs),
            (Some(3450), Some(PredictionLevel::NameAndImage), Some(2))
        );
        // The stored form keeps what was recorded: a new leader does not record them again.
        let back = DurationHistory::from_json(predict::Settings::default(), &h.to_json())
            .expect("reads back");
        let mut again = back.clone();
        assert_eq!(again.record_finished(&runs, now + 20), 0);
        assert_eq!(prediction_for(&next, back.predictor()), p);
        assert!(DurationHistory::from_json(predict::Settings::default(), "{}").is_err());
    }

    #[test]
    fn runs_long_finished_preempted_or_failed_early_are_not_recorded() {
        let mut h = DurationHistory::new(predict::Settings::default());
        let mut preempted = done("Succeeded", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
        preempted["preemptions"] = 1.into();
        let runs = [
            job(
                "old",
                "u1",
                done("Succeeded", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),
            ),
            job("p", "u2", preempted),
            job(
                "crash",
                "u3",
                done("Failed", "2026-01-01T00:59:00Z", "2026-01-01T01:00:00Z"),
            ),
        ];
        // An hour past the first run's end: outside the window.
        assert_eq!(h.record_finished(&runs[..1], T0 + 3600 + 3600), 0);
        assert_eq!(h.record_finished(&runs[1..], T0 + 3700), 0);
        assert!(h.predictor().is_empty());
    }

    #[test]
    fn the_spec_wins_and_a_prediction_is_kept_once_made() {
        let history = Prediction {
            seconds: Some(3600),
            source: PredictionSource::History,
            level: Some(PredictionLevel::Name),
            runs: Some(3),
        };
        let none = Prediction {
            seconds: None,
            source: PredictionSource::None,
            level: None,
            runs: None,
        };
        let user = settle(Some(history.clone()), Some(60), Some(&none)).expect("set");
        assert_eq!(
            (user.source, user.seconds),
            (PredictionSource::User, Some(60))
        );
        // Made once, kept: later runs do not move it.
        assert_eq!(
            settle(Some(none.clone()), None, Some(&history)),
            Some(none.clone())
        );
        // A new job takes the history's; the spec's value removed, so does an old one.
        assert_eq!(settle(None, None, Some(&history)), Some(history.clone()));
        assert_eq!(settle(Some(user), None, Some(&history)), Some(history));
        assert_eq!(settle(None, None, None), None);
    }

    #[test]
    fn a_full_history_stays_well_under_a_config_maps_limit() {
        let settings = predict::Settings::default();
        let mut h = DurationHistory::new(settings);
        for i in 0..settings.max_identities {
            let id = Identity {
                user: format!("user-{i}"),
                gpu_milli: 1000,
                ..Identity::default()
            };
            for _ in 0..settings.runs_kept {
                h.predictor
                    .record(&id, Outcome::Succeeded, 864_000)
                    .expect("recorded");
            }
        }
        for i in 0..MAX_RECORDED {
            h.recorded
                .insert(format!("{i:08}-aaaa-bbbb-cccc-dddddddddddd"), T0);
        }
        let bytes = h.to_json().len();
        assert!(bytes < 900 * 1024, "{bytes} bytes");
    }
}
