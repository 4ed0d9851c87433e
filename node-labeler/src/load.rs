//! GPU load: NVML samples of each GPU's utilisation and memory in use, kept over a sliding
//! window ([`LoadWindow`]), summarised as the published [`NodeLoad`], and written only when
//! the [`PublishRule`] says the change matters.
//!
//! The summary is what placement of a GPU share needs: the mean utilisation over the window
//! (how busy the GPU is) and the *highest* memory in use (a share must fit beside the peak,
//! not the average). Values are rounded before they are compared ([`PublishRule::round`]),
//! so sampling noise never causes a write.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use kubetrain::api::load::{GpuLoad, LOAD_VERSION, NodeLoad};

/// One NVML sample of one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Percent of the last sample period in which a kernel ran (NVML `utilization.gpu`).
    pub utilization_percent: u32,
    /// Memory in use, MiB.
    pub memory_used_mib: u64,
    /// Total memory, MiB.
    pub memory_total_mib: u64,
}

/// The samples of each GPU over the last `capacity` sample periods.
#[derive(Clone, Debug)]
pub struct LoadWindow {
    capacity: usize,
    window: Duration,
    samples: BTreeMap<u32, VecDeque<Sample>>,
}

impl LoadWindow {
    /// A window of `window`, sampled every `period` (at least one sample).
    pub fn new(window: Duration, period: Duration) -> LoadWindow {
        let capacity = (window.as_millis() / period.as_millis().max(1)).max(1) as usize;
        LoadWindow {
            capacity,
            window,
            samples: BTreeMap::new(),
        }
    }

    /// Adds one round of samples, by GPU index. A GPU missing from a round (NVML did not
    /// answer for it) keeps its older samples, which age out as rounds go by; a GPU that
    /// has not answered for a whole window is dropped from the summary.
    pub fn push(&mut self, round: &BTreeMap<u32, Sample>) {
        for (index, samples) in &mut self.samples {
            if !round.contains_key(index) {
                samples.pop_front();
            }
        }
        self.samples.retain(|_, s| !s.is_empty());
        for (index, sample) in round {
            let samples = self.samples.entry(*index).or_default();
            if samples.len() == self.capacity {
                samples.pop_front();
            }
            samples.push_back(*sample);
        }
    }

    /// The summary of the window so far: mean utilisation, peak memory in use.
    pub fn summary(&self) -> NodeLoad {
        let gpus = self
            .samples
            .iter()
            .map(|(index, samples)| {
                let n = samples.len() as u64;
                let utilization: u64 = samples.iter().map(|s| s.utilization_percent as u64).sum();
                GpuLoad {
                    index: *index,
                    utilization_percent: (utilization / n.max(1)).min(100) as u32,
                    memory_used_mib: samples.iter().map(|s| s.memory_used_mib).max().unwrap_or(0),
                    memory_total_mib: samples.back().map_or(0, |s| s.memory_total_mib),
                }
            })
            .collect();
        NodeLoad {
            version: LOAD_VERSION,
            window_seconds: self.window.as_secs() as u32,
            gpus,
        }
    }
}

/// When a new summary is worth a Node write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishRule {
    /// Never two writes closer than this: at most one write per node per `min_interval`.
    pub min_interval: Duration,
    /// A summary that differs at all from the published one (after rounding) is written
    /// once the published one is this old.
    pub max_age: Duration,
    /// Utilisation is rounded to multiples of this many points; a move of two steps or
    /// more is written as soon as `min_interval` allows.
    pub utilization_step: u32,
    /// Memory in use is rounded to multiples of this many MiB; a move of two steps or more
    /// is written as soon as `min_interval` allows.
    pub memory_step_mib: u64,
}

impl Default for PublishRule {
    fn default() -> Self {
        PublishRule {
            min_interval: Duration::from_secs(60),
            max_age: Duration::from_secs(600),
            utilization_step: 10,
            memory_step_mib: 1024,
        }
    }
}

impl PublishRule {
    /// The summary as it is compared and published: utilisation and memory rounded to
    /// their steps, so that noise below a step never shows as a change.
    pub fn round(&self, load: &NodeLoad) -> NodeLoad {
        let round = |v: u64, step: u64| (v + step / 2) / step.max(1) * step.max(1);
        NodeLoad {
            gpus: load
                .gpus
                .iter()
                .map(|g| GpuLoad {
                    utilization_percent: round(
                        g.utilization_percent as u64,
                        self.utilization_step as u64,
                    )
                    .min(100) as u32,
                    memory_used_mib: round(g.memory_used_mib, self.memory_step_mib),
                    ..g.clone()
                })
                .collect(),
            ..load.clone()
        }
    }

    /// Whether to write `next` (already [`PublishRule::round`]ed) given the last write:
    /// what it published and how long ago. Always the first time.
    pub fn due(&self, last: Option<(&NodeLoad, Duration)>, next: &NodeLoad) -> bool {
        let Some((published, age)) = last else {
            return true;
        };
        if published == next || age < self.min_interval {
            return false;
        }
        age >= self.max_age || self.moved_much(published, next)
    }

    /// True when a GPU appeared or went, or its utilisation or memory moved two steps or more.
    fn moved_much(&self, published: &NodeLoad, next: &NodeLoad) -> bool {
        if published.gpus.len() != next.gpus.len() {
            return true;
        }
        published.gpus.iter().zip(&next.gpus).any(|(a, b)| {
            a.index != b.index
                || a.utilization_percent.abs_diff(b.utilization_percent)
                    >= 2 * self.utilization_step
                || a.memory_used_mib.abs_diff(b.memory_used_mib) >= 2 * self.memory_step_mib
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(utilization_percent: u32, memory_used_mib: u64) -> Sample {
        Sample {
            utilization_percent,
            memory_used_mib,
            memory_total_mib: 81_559,
        }
    }

    fn round(samples: &[(u32, Sample)]) -> BTreeMap<u32, Sample> {
        samples.iter().copied().collect()
    }

    #[test]
    fn the_summary_is_the_mean_utilisation_and_the_peak_memory_of_the_window() {
        let mut w = LoadWindow::new(Duration::from_secs(30), Duration::from_secs(10));
        w.push(&round(&[(0, sample(90, 10_000)), (1, sample(0, 0))]));
        w.push(&round(&[(0, sample(30, 40_000)), (1, sample(0, 0))]));
        w.push(&round(&[(0, sample(60, 20_000)), (1, sample(10, 500))]));
        let s = w.summary();
        assert_eq!((s.version, s.window_seconds), (LOAD_VERSION, 30));
        assert_eq!(
            (s.gpus[0].utilization_percent, s.gpus[0].memory_used_mib),
            (60, 40_000)
        );
        assert_eq!(s.gpus[1].utilization_percent, 3);
        // The window slides: the 40 GB peak leaves after three more rounds.
        for _ in 0..3 {
            w.push(&round(&[(0, sample(0, 1_000)), (1, sample(0, 0))]));
        }
        assert_eq!(
            (
                w.summary().gpus[0].utilization_percent,
                w.summary().gpus[0].memory_used_mib
            ),
            (0, 1_000)
        );
    }

    #[test]
    fn a_gpu_that_stops_answering_ages_out_of_the_summary() {
        let mut w = LoadWindow::new(Duration::from_secs(20), Duration::from_secs(10));
        w.push(&round(&[(0, sample(50, 0)), (1, sample(50, 0))]));
        w.push(&round(&[(0, sample(50, 0)), (1, sample(50, 0))]));
        w.push(&round(&[(0, sample(50, 0))]));
        assert_eq!(w.summary().gpus.len(), 2);
        w.push(&round(&[(0, sample(50, 0))]));
        assert_eq!(w.summary().gpus.len(), 1);
    }

    #[test]
    fn small_moves_wait_for_max_age_and_large_ones_for_min_interval_only() {
        let rule = PublishRule::default();
        let load = |u: u32, m: u64| {
            rule.round(&NodeLoad {
                version: LOAD_VERSION,
                window_seconds: 300,
                gpus: vec![GpuLoad {
                    index: 0,
                    utilization_percent: u,
                    memory_used_mib: m,
                    memory_total_mib: 81_559,
                }],
            })
        };
        let published = load(40, 10_000);
        let secs = Duration::from_secs;
        assert!(rule.due(None, &published));
        // Noise below a step is no change at all, however old the write.
        assert!(!rule.due(Some((&published, secs(3600))), &load(43, 10_300)));
        // One step: only once the published summary is old.
        assert!(!rule.due(Some((&published, secs(120))), &load(50, 10_000)));
        assert!(rule.due(Some((&published, secs(600))), &load(50, 10_000)));
        // Two steps of utilisation or memory: as soon as min_interval allows.
        assert!(!rule.due(Some((&published, secs(30))), &load(90, 10_000)));
        assert!(rule.due(Some((&published, secs(60))), &load(90, 10_000)));
        assert!(rule.due(Some((&published, secs(60))), &load(40, 30_000)));
    }
}
