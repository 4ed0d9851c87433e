//! What makes two runs "the same job": a run's [`Identity`], and the [`Level`]s at which
//! it is matched, finest first.
//!
//! Most training jobs recur (Alibaba PAI, NSDI'22): the same user resubmits the same script
//! with a new run number, a new image tag, a new seed. The finest level matches the name
//! with those numbers stripped *and* the image; each coarser level drops what differs most
//! between runs, down to the GPU count alone, which any run of the cluster shares. A level
//! whose distinguishing field the identity lacks (the simulator's trace has no names) is
//! skipped rather than matched on an empty field.

use std::fmt;

/// How close a match is, finest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Namespace, user, normalised name, images and GPU count.
    NameAndImage,
    /// Namespace, user, normalised name and GPU count: a new image tag is the same job.
    Name,
    /// Namespace, user and GPU count: the user's other jobs of that size.
    User,
    /// The GPU count alone: every run of that size in the cluster.
    Gpus,
}

impl Level {
    /// Finest first.
    pub const ALL: [Level; 4] = [Level::NameAndImage, Level::Name, Level::User, Level::Gpus];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::NameAndImage => "NameAndImage",
            Level::Name => "Name",
            Level::User => "User",
            Level::Gpus => "Gpus",
        }
    }

    pub fn from_name(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as the predictor knows it. Empty strings are unknown fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub namespace: String,
    /// Who submitted it (`spec.user`, else the namespace; the tenant in the simulator).
    pub user: String,
    /// The job's name as [`normalise_name`] leaves it.
    pub name: String,
    /// The containers' images, sorted and joined, as one field.
    pub images: String,
    /// GPUs the job asks for, in thousandths (a share is below 1000).
    pub gpu_milli: u64,
}

/// An identity at one level, hashed: what the history is keyed by. A 64-bit hash keeps the
/// stored history small whatever the names' lengths; two identities that collide merely
/// share their runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub level: Level,
    pub hash: u64,
}

impl Identity {
    /// The keys this identity is matched at, finest first: a level is left out when a field
    /// it adds to the next coarser one is unknown.
    pub fn keys(&self) -> Vec<Key> {
        let gpus = self.gpu_milli.to_string();
        let mut out = Vec::with_capacity(Level::ALL.len());
        let who = !self.namespace.is_empty() || !self.user.is_empty();
        if who && !self.name.is_empty() {
            if !self.images.is_empty() {
                out.push(Key::of(
                    Level::NameAndImage,
                    &[&self.namespace, &self.user, &self.name, &self.images, &gpus],
                ));
            }
            out.push(Key::of(
                Level::Name,
                &[&self.namespace, &self.user, &self.name, &gpus],
            ));
        }
        if who {
            out.push(Key::of(Level::User, &[&self.namespace, &self.user, &gpus]));
        }
        out.push(Key::of(Level::Gpus, &[&gpus]));
        out
    }
}

impl Key {
    /// FNV-1a over the level and the fields, each followed by a separator no Kubernetes
    /// name holds: stable across processes, unlike the standard library's hasher, so a
    /// stored history keeps matching after a restart.
    fn of(level: Level, fields: &[&str]) -> Key {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let bytes = level.as_str().bytes().chain(std::iter::once(0)).chain(
            fields
                .iter()
                .flat_map(|f| f.bytes().chain(std::iter::once(0))),
        );
        for b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
        Key { level, hash: h }
    }
}

/// The alphabet of the random suffix `metadata.generateName` adds (no vowels, no digits that
/// look like letters).
const GENERATED: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Words that a run counter follows (`run3`, `trial12`): the counter is stripped, the word
/// kept.
const COUNTED: &[&str] = &["run", "trial", "attempt", "try", "iter", "exp", "v", "r"];

/// The job's name without what changes from one run to the next: the `generateName`
/// suffix (five characters of its alphabet, last), numbers (run counters, dates,
/// timestamps), hashes (seven or more hex digits, at least one a digit), and the counter
/// after a word such as `run` or `v`. Words that end in digits and name a model
/// (`resnet50`, `gpt2`) are kept: a ResNet-50 is not a ResNet-101.
pub fn normalise_name(name: &str) -> String {
    let mut tokens: Vec<&str> = name.split(['-', '.', '_']).collect();
    if tokens.len() > 1
        && let Some(last) = tokens.last()
        && last.len() == 5
        && last.chars().all(|c| GENERATED.contains(c))
    {
        tokens.pop();
    }
    let kept: Vec<String> = tokens
        .into_iter()
        .filter(|t| !t.is_empty())
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()))
        .filter(|t| !is_hash(t))
        .map(|t| strip_counter(t).to_string())
        .collect();
    kept.join("-")
}

fn is_hash(t: &str) -> bool {
    t.len() >= 7
        && t.chars().all(|c| c.is_ascii_hexdigit())
        && t.chars().any(|c| c.is_ascii_digit())
}

/// `run3` → `run`; other words as they are.
fn strip_counter(t: &str) -> &str {
    let word = t.trim_end_matches(|c: char| c.is_ascii_digit());
    if word.len() < t.len() && COUNTED.contains(&word.to_ascii_lowercase().as_str()) {
        word
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_numbers_dates_hashes_and_generated_suffixes_are_stripped() {
        for (name, want) in [
            ("bert-finetune-17", "bert-finetune"),
            ("bert-finetune-18", "bert-finetune"),
            ("bert-finetune-run3", "bert-finetune-run"),
            ("bert-finetune-20240107-1530", "bert-finetune"),
            ("bert-finetune-3f9a2c1d", "bert-finetune"),
            ("bert-finetune-x7k2q", "bert-finetune"),
            ("llama.v2.sweep.7", "llama-v-sweep"),
            ("resnet50-imagenet", "resnet50-imagenet"),
            ("gpt2-small-trial12", "gpt2-small-trial"),
            ("x7k2q", "x7k2q"),
            ("1234", ""),
        ] {
            assert_eq!(normalise_name(name), want, "{name}");
        }
        // A model's size is part of the name; a decade of a word is not a hash.
        assert_ne!(normalise_name("resnet50-a"), normalise_name("resnet101-a"));
        assert_eq!(normalise_name("deadbeef-job"), "deadbeef-job");
    }

    #[test]
    fn levels_go_from_the_name_and_image_down_to_the_gpu_count() {
        let full = Identity {
            namespace: "ns".into(),
            user: "ana".into(),
            name: "bert".into(),
            images: "train:1".into(),
            gpu_milli: 8000,
        };
        let levels: Vec<Level> = full.keys().iter().map(|k| k.level).collect();
        assert_eq!(levels, Level::ALL.to_vec());
        // A new image tag: the same job at every level but the first.
        let new_tag = Identity {
            images: "train:2".into(),
            ..full.clone()
        };
        let (a, b) = (full.keys(), new_tag.keys());
        assert_ne!(a[0], b[0]);
        assert_eq!(a[1..], b[1..]);
        // Another user of the same size shares only the GPU count.
        let other = Identity {
            user: "bo".into(),
            ..full.clone()
        };
        assert_eq!(other.keys()[3], a[3]);
        assert!(other.keys()[..3].iter().all(|k| !a.contains(k)));
    }

    #[test]
    fn a_level_whose_fields_are_unknown_is_skipped() {
        // The simulator's trace: a tenant and a GPU count, no name, no image.
        let tenant = Identity {
            user: "vc3".into(),
            gpu_milli: 4000,
            ..Identity::default()
        };
        let levels: Vec<Level> = tenant.keys().iter().map(|k| k.level).collect();
        assert_eq!(levels, vec![Level::User, Level::Gpus]);
        let nameless_image = Identity {
            name: String::new(),
            images: "img".into(),
            ..tenant.clone()
        };
        assert_eq!(nameless_image.keys(), tenant.keys());
        for l in Level::ALL {
            assert_eq!(Level::from_name(l.as_str()), Some(l));
        }
    }
}
