//! Predicted run times, learned from the runs the cluster has already seen (issue 53).
//!
//! A finished run is recorded under its [`Identity`] at every [`Level`] it has (finest
//! first: name and image, name, user, GPU count); a new run is predicted by the finest level
//! that has seen enough runs, as the median of that level's last runs: one run that hung or
//! crashed moves a median little, where it drags a mean anywhere. A run that failed early (a
//! typo, a missing file, a crash at start-up) says nothing about how long the job runs, and
//! is not recorded.
//!
//! The history is bounded twice: the last [`Settings::runs_kept`] runs per identity, and
//! [`Settings::max_identities`] identities in all, the least recently recorded one evicted
//! first. Recording a run touches at most four identities, each in time logarithmic in the
//! (bounded) number of identities, so a finished job costs the same whatever the history
//! holds. Pure: no client, no clock; the controller ([`crate::controller`]'s duration
//! history) and the simulator ([`crate::sim`]'s predictions) drive the same code.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

pub mod identity;

pub use identity::{Identity, Key, Level, normalise_name};

/// How much the predictor keeps, and what it trusts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Runs kept per identity (the median's sample).
    pub runs_kept: usize,
    /// Identities kept in all; the least recently recorded one goes first.
    pub max_identities: usize,
    /// Runs an identity needs before it predicts.
    pub min_runs: usize,
    /// A failed run shorter than this failed early and is not recorded.
    pub early_failure_seconds: i64,
}

/// Runs per identity kept by default.
pub const DEFAULT_RUNS_KEPT: usize = 10;
/// Identities kept by default: about 100 bytes each stored, well under a ConfigMap's 1 MiB.
pub const DEFAULT_MAX_IDENTITIES: usize = 5000;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            runs_kept: DEFAULT_RUNS_KEPT,
            max_identities: DEFAULT_MAX_IDENTITIES,
            min_runs: 1,
            early_failure_seconds: 600,
        }
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    /// Failed for good. Recorded only when it ran at least
    /// [`Settings::early_failure_seconds`] and at least half the median of its finest
    /// known identity: a failure that late (out of memory near the end, a deadline) used
    /// its GPUs about as long as a success; one earlier says nothing of the job's length.
    Failed,
}

/// Why a run was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// A failure before [`Settings::early_failure_seconds`], or before half the median of
    /// its identity's runs.
    EarlyFailure,
    /// Shorter than a second: nothing ran.
    NoRunTime,
}

/// A predicted run time, and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prediction {
    pub seconds: i64,
    /// The finest level that had enough runs.
    pub level: Level,
    /// The runs of that level the median was taken over.
    pub runs: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Runs {
    /// Seconds, oldest first.
    seconds: VecDeque<i64>,
    /// When it was last recorded, in records: its place in the eviction order.
    touched: u64,
}

/// The history of run times, per identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Predictor {
    settings: Settings,
    runs: HashMap<Key, Runs>,
    /// Each identity by when it was last recorded, oldest first.
    by_touch: BTreeMap<u64, Key>,
    clock: u64,
}

impl Predictor {
    pub fn new(settings: Settings) -> Self {
        Predictor {
            settings,
            runs: HashMap::new(),
            by_touch: BTreeMap::new(),
            clock: 0,
        }
    }

    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Identities kept.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Records a finished run of `seconds` under every level of `id`, unless it failed
    /// early.
    pub fn record(&mut self, id: &Identity, outcome: Outcome, seconds: i64) -> Result<(), Skipped> {
        if seconds < 1 {
            return Err(Skipped::NoRunTime);
        }
        let keys = id.keys();
        if outcome == Outcome::Failed {
            let usual = keys.iter().find_map(|k| self.median_of(k));
            if seconds < self.settings.early_failure_seconds
                || usual.is_some_and(|(m, _)| seconds < m / 2)
            {
                return Err(Skipped::EarlyFailure);
            }
        }
        for key in keys {
            self.push(key, seconds);
        }
        Ok(())
    }

    /// The run time of a new run of `id`: the median of the finest level with at least
    /// [`Settings::min_runs`] runs; none when no level has.
    pub fn predict(&self, id: &Identity) -> Option<Prediction> {
        id.keys().iter().find_map(|k| {
            let (seconds, runs) = self.median_of(k)?;
            (runs as usize >= self.settings.min_runs.max(1)).then_some(Prediction {
                seconds,
                level: k.level,
                runs,
            })
        })
    }

    fn median_of(&self, key: &Key) -> Option<(i64, u32)> {
        let runs = self.runs.get(key)?;
        let mut s: Vec<i64> = runs.seconds.iter().copied().collect();
        if s.is_empty() {
            return None;
        }
        s.sort_unstable();
        let n = s.len();
        let m = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2
        };
        Some((m, u32::try_from(n).unwrap_or(u32::MAX)))
    }

    fn push(&mut self, key: Key, seconds: i64) {
        if self.settings.runs_kept == 0 || self.settings.max_identities == 0 {
            return;
        }
        self.clock += 1;
        let clock = self.clock;
        if let Some(r) = self.runs.get_mut(&key) {
            self.by_touch.remove(&r.touched);
            r.touched = clock;
        } else {
            while self.runs.len() >= self.settings.max_identities {
                let Some((_, old)) = self.by_touch.pop_first() else {
                    break;
                };
                self.runs.remove(&old);
            }
            self.runs.insert(
                key,
                Runs {
                    seconds: VecDeque::new(),
                    touched: clock,
                },
            );
        }
        self.by_touch.insert(clock, key);
        if let Some(r) = self.runs.get_mut(&key) {
            if r.seconds.len() >= self.settings.runs_kept {
                r.seconds.pop_front();
            }
            r.seconds.push_back(seconds);
        }
    }

    /// The stored form: identities, least recently recorded first.
    pub fn to_stored(&self) -> Vec<StoredRuns> {
        self.by_touch
            .values()
            .filter_map(|k| {
                let r = self.runs.get(k)?;
                Some(StoredRuns {
                    level: k.level.as_str().to_string(),
                    key: format!("{:016x}", k.hash),
                    seconds: r.seconds.iter().copied().collect(),
                })
            })
            .collect()
    }

    /// The history from its stored form, within `settings`' bounds (the most recently
    /// recorded identities and runs kept).
    pub fn from_stored(settings: Settings, stored: &[StoredRuns]) -> Result<Predictor, String> {
        let mut p = Predictor::new(settings);
        for s in stored {
            let level = Level::from_name(&s.level)
                .ok_or_else(|| format!("unknown identity level {:?}", s.level))?;
            let hash = u64::from_str_radix(&s.key, 16)
                .map_err(|_| format!("identity key {:?} is not 16 hex digits", s.key))?;
            let key = Key { level, hash };
            for &secs in &s.seconds {
                if secs >= 1 {
                    p.push(key, secs);
                }
            }
        }
        Ok(p)
    }
}

/// One identity's runs as they are stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRuns {
    /// A [`Level`]'s name.
    pub level: String,
    /// The identity's hash, 16 hex digits.
    pub key: String,
    /// Seconds, oldest first.
    pub seconds: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ns: &str, user: &str, name: &str, image: &str, gpus: u64) -> Identity {
        Identity {
            namespace: ns.into(),
            user: user.into(),
            name: normalise_name(name),
            images: image.into(),
            gpu_milli: gpus * 1000,
        }
    }

    fn ok(p: &mut Predictor, i: &Identity, secs: i64) {
        p.record(i, Outcome::Succeeded, secs).expect("recorded");
    }

    #[test]
    fn a_new_run_is_predicted_by_the_finest_level_that_has_runs() {
        let mut p = Predictor::new(Settings::default());
        let bert = id("ml", "ana", "bert-17", "train:1", 8);
        assert_eq!(p.predict(&bert), None, "nothing seen yet");
        ok(&mut p, &bert, 3600);
        ok(&mut p, &id("ml", "ana", "bert-18", "train:1", 8), 3800);
        let next = p.predict(&id("ml", "ana", "bert-19", "train:1", 8));
        assert_eq!(
            next,
            Some(Prediction {
                seconds: 3700,
                level: Level::NameAndImage,
                runs: 2
            })
        );
        // A new image tag falls back to the name.
        let tag = p
            .predict(&id("ml", "ana", "bert-20", "train:2", 8))
            .expect("by name");
        assert_eq!((tag.level, tag.seconds), (Level::Name, 3700));
        // Another job of the same user and size: the user's level.
        let gpt = p
            .predict(&id("ml", "ana", "gpt", "train:1", 8))
            .expect("by user");
        assert_eq!(gpt.level, Level::User);
        // Another team's job of that size: the GPU count alone.
        let other = p
            .predict(&id("cv", "bo", "yolo", "y:1", 8))
            .expect("by size");
        assert_eq!((other.level, other.runs), (Level::Gpus, 2));
        // Of a size never seen: nothing.
        assert_eq!(p.predict(&id("cv", "bo", "yolo", "y:1", 4)), None);
    }

    #[test]
    fn an_outlier_moves_the_median_little() {
        let mut p = Predictor::new(Settings::default());
        let job = id("ml", "ana", "bert", "i", 8);
        for s in [3500, 3600, 3700, 3650] {
            ok(&mut p, &job, s);
        }
        ok(&mut p, &job, 90_000); // hung for a day
        let got = p.predict(&job).expect("predicted");
        assert_eq!(got.seconds, 3650);
        assert_eq!(got.runs, 5);
    }

    #[test]
    fn early_failures_are_not_recorded_late_ones_are() {
        let mut p = Predictor::new(Settings::default());
        let job = id("ml", "ana", "bert", "i", 8);
        assert_eq!(
            p.record(&job, Outcome::Failed, 30),
            Err(Skipped::EarlyFailure),
            "a crash at start-up"
        );
        assert_eq!(p.predict(&job), None);
        ok(&mut p, &job, 10_000);
        // Past the floor, but before half the usual run time: still early.
        assert_eq!(
            p.record(&job, Outcome::Failed, 4000),
            Err(Skipped::EarlyFailure)
        );
        // Failed near the end: it held its GPUs as long as a success would.
        assert_eq!(p.record(&job, Outcome::Failed, 9000), Ok(()));
        assert_eq!(p.predict(&job).map(|x| x.runs), Some(2));
        assert_eq!(
            p.record(&job, Outcome::Succeeded, 0),
            Err(Skipped::NoRunTime)
        );
    }

    #[test]
    fn history_is_bounded_per_identity_and_in_all() {
        let settings = Settings {
            runs_kept: 3,
            max_identities: 6,
            ..Settings::default()
        };
        let mut p = Predictor::new(settings);
        let job = id("ml", "ana", "bert", "i", 8);
        for s in [100, 5000, 5000, 5000] {
            ok(&mut p, &job, s);
        }
        // Only the last 3 runs: the first (100 s) is gone.
        assert_eq!(
            p.predict(&job).map(|x| (x.seconds, x.runs)),
            Some((5000, 3))
        );
        // Four levels for bert; a second user's job adds three more (the GPU level is
        // shared): seven, one over the bound, so bert's least recently recorded level goes.
        ok(&mut p, &id("cv", "bo", "yolo", "y", 8), 200);
        assert_eq!(p.len(), 6);
        let left = p.predict(&job).expect("still known");
        assert_eq!(left.level, Level::Name, "its finest identity was evicted");
        // Bounds hold over many identities.
        for i in 0..100 {
            ok(&mut p, &id("ns", &format!("u{i}"), "j", "x", 1 + i % 4), 60);
        }
        assert!(p.len() <= 6);
    }

    #[test]
    fn the_stored_form_round_trips_and_keeps_the_eviction_order() {
        let mut p = Predictor::new(Settings::default());
        ok(&mut p, &id("ml", "ana", "bert", "i", 8), 3600);
        ok(&mut p, &id("cv", "bo", "yolo", "y", 1), 60);
        ok(&mut p, &id("ml", "ana", "bert", "i", 8), 3000);
        let stored = p.to_stored();
        let back = Predictor::from_stored(Settings::default(), &stored).expect("reads");
        for i in [
            id("ml", "ana", "bert", "i", 8),
            id("cv", "bo", "yolo", "y", 1),
        ] {
            assert_eq!(back.predict(&i), p.predict(&i));
        }
        assert_eq!(back.to_stored(), stored);
        // Read into a smaller bound, the most recently recorded identities stay.
        let small = Predictor::from_stored(
            Settings {
                max_identities: 4,
                ..Settings::default()
            },
            &stored,
        )
        .expect("reads");
        assert_eq!(small.len(), 4);
        assert_eq!(
            small
                .predict(&id("ml", "ana", "bert", "i", 8))
                .map(|x| x.level),
            Some(Level::NameAndImage)
        );
        let bad = [StoredRuns {
            level: "Nope".into(),
            key: "0".into(),
            seconds: vec![1],
        }];
        assert!(Predictor::from_stored(Settings::default(), &bad).is_err());
    }
}
