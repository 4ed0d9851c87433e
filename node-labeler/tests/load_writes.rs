//! How many Node writes the load annotation costs, on 1,000 simulated nodes of 8 GPUs over
//! two hours of 10-second NVML samples, under a stated load model: each GPU alternates
//! between idle spells and jobs (both lasting 10 to 60 minutes, uniformly); a job runs at a
//! utilisation of its own (30–100 %) with ±10 points of noise per sample and holds a memory
//! size of its own (2–80 GB) with ±256 MiB of noise. The labeler publishes what the
//! [`PublishRule`] lets through.
//!
//! Run with `--nocapture` to see the measured rate.

use std::collections::BTreeMap;
use std::time::Duration;

use kubetrain_node_labeler::load::{LoadWindow, PublishRule, Sample};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

#[derive(Clone, Copy)]
struct Gpu {
    busy: bool,
    left: u64,
    utilization: u64,
    memory: u64,
}

impl Gpu {
    fn step(&mut self, rng: &mut Rng, period: u64) -> Sample {
        if self.left <= period {
            self.busy = !self.busy;
            self.left = rng.range(600, 3600);
            self.utilization = rng.range(30, 100);
            self.memory = rng.range(2_048, 81_920);
        } else {
            self.left -= period;
        }
        let (utilization, memory) = if self.busy {
            (
                (self.utilization + rng.range(0, 20))
                    .saturating_sub(10)
                    .min(100),
                (self.memory + rng.range(0, 512)).saturating_sub(256),
            )
        } else {
            (0, 0)
        };
        Sample {
            utilization_percent: utilization as u32,
            memory_used_mib: memory,
            memory_total_mib: 81_559,
        }
    }
}

#[test]
fn load_reporting_costs_at_most_one_node_write_per_node_per_minute() {
    const NODES: usize = 1_000;
    const PERIOD: u64 = 10;
    const HOURS: u64 = 1;
    let rule = PublishRule::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut writes = 0u64;
    let mut first_writes = 0u64;
    for _ in 0..NODES {
        let mut gpus: Vec<Gpu> = (0..8)
            .map(|_| Gpu {
                busy: rng.next().is_multiple_of(2),
                left: rng.range(1, 3600),
                utilization: rng.range(30, 100),
                memory: rng.range(2_048, 81_920),
            })
            .collect();
        let mut window = LoadWindow::new(Duration::from_secs(300), Duration::from_secs(PERIOD));
        let mut last: Option<(_, u64)> = None;
        for t in (0..HOURS * 3600).step_by(PERIOD as usize) {
            let round: BTreeMap<u32, Sample> = gpus
                .iter_mut()
                .enumerate()
                .map(|(i, g)| (i as u32, g.step(&mut rng, PERIOD)))
                .collect();
            window.push(&round);
            let next = rule.round(&window.summary());
            let due = rule.due(
                last.as_ref()
                    .map(|(l, at)| (l, Duration::from_secs(t - at))),
                &next,
            );
            if due {
                if last.is_none() {
                    first_writes += 1;
                }
                writes += 1;
                last = Some((next, t));
            }
        }
    }
    let minutes = (HOURS * 60) as f64;
    let per_node_minute = (writes - first_writes) as f64 / NODES as f64 / minutes;
    println!(
        "{writes} load writes from {NODES} nodes in {HOURS} h: {per_node_minute:.3} per node per minute after the first"
    );
    assert!(per_node_minute <= 1.0, "{per_node_minute}");
    // Jobs start and end every 10–60 minutes on each of 8 GPUs, so the load does change:
    // a rule that never wrote would pass the bound above and report nothing.
    assert!(per_node_minute > 0.05, "{per_node_minute}");
}
