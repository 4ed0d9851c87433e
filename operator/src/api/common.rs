//! Types shared by more than one kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A level of the GPU topology tree, from the smallest domain to the largest:
/// `gpu-group` (GPUs joined by NVLink or one PCIe switch), `node` (one machine),
/// `rack` (machines under one top-of-rack switch).
#[derive(
    Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyLevel {
    GpuGroup,
    Node,
    Rack,
}

impl std::fmt::Display for TopologyLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TopologyLevel::GpuGroup => "gpu-group",
            TopologyLevel::Node => "node",
            TopologyLevel::Rack => "rack",
        })
    }
}

/// Where a TrainingJob is in its life: `Pending` (not yet validated), `Queued` (waiting for
/// capacity), `Starting` (admitted and placed; its pods are being created or start: images
/// pulled, init containers run), `Running` (every replica has run), `Preempting` (asked to
/// checkpoint before its pods are deleted), `Retrying` (a replica failed; waiting out the
/// backoff), `Suspended` (`spec.suspend` is true), `Succeeded`, `Failed`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Phase {
    #[default]
    Pending,
    Queued,
    Starting,
    Running,
    Preempting,
    Retrying,
    Suspended,
    Succeeded,
    Failed,
}

impl Phase {
    /// Succeeded and Failed are final: nothing moves a job out of them.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }

    /// Admitted and not yet stopped: the job's GPUs are charged to its queue's team, whether
    /// its pods are starting, running or asked to checkpoint.
    pub fn holds_gpus(self) -> bool {
        matches!(self, Phase::Starting | Phase::Running | Phase::Preempting)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// An amount of GPUs in status, where a shared GPU counts as the fraction it is: `8`, `0.5`,
/// `2.25`. Kept in milli-GPUs, as the scheduling core counts, and written as a JSON number
/// (an integer when whole), so `kubectl get` prints `0.5` rather than a whole GPU for a
/// quarter-share job, and a status written before fractions were shown still reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuAmount(pub u64);

impl GpuAmount {
    pub const ZERO: GpuAmount = GpuAmount(0);

    pub fn from_milli(milli: u64) -> Self {
        GpuAmount(milli)
    }

    pub fn whole(gpus: u32) -> Self {
        GpuAmount(u64::from(gpus) * 1000)
    }

    pub fn milli(self) -> u64 {
        self.0
    }
}

impl std::ops::Add for GpuAmount {
    type Output = GpuAmount;
    fn add(self, rhs: GpuAmount) -> GpuAmount {
        GpuAmount(self.0.saturating_add(rhs.0))
    }
}

impl std::iter::Sum for GpuAmount {
    fn sum<I: Iterator<Item = GpuAmount>>(iter: I) -> GpuAmount {
        iter.fold(GpuAmount::ZERO, |a, b| a + b)
    }
}

/// Written as the scheduling core writes GPU amounts in its messages (`1`, `0.25`), so the
/// status's numbers and the core's words agree.
impl std::fmt::Display for GpuAmount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::sched::Gpus(self.0).fmt(f)
    }
}

impl Serialize for GpuAmount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_multiple_of(1000) {
            s.serialize_u64(self.0 / 1000)
        } else {
            // Through the decimal text, so 0.1 is written as 0.1 and not 0.10000000000000001.
            s.serialize_f64(self.to_string().parse().unwrap_or(self.0 as f64 / 1000.0))
        }
    }
}

impl<'de> Deserialize<'de> for GpuAmount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || v < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "a GPU amount is a number of zero or more, not {v}"
            )));
        }
        Ok(GpuAmount((v * 1000.0).round() as u64))
    }
}

impl JsonSchema for GpuAmount {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GpuAmount".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "number", "minimum": 0.0 })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::GpuAmount;

    #[test]
    fn gpu_amounts_are_numbers_whole_when_whole() {
        for (milli, json, text) in [
            (0, "0", "0"),
            (8000, "8", "8"),
            (500, "0.5", "0.5"),
            (2250, "2.25", "2.25"),
            (1, "0.001", "0.001"),
            (100, "0.1", "0.1"),
        ] {
            let a = GpuAmount(milli);
            assert_eq!(serde_json::to_string(&a).unwrap(), json);
            assert_eq!(a.to_string(), text);
            assert_eq!(serde_json::from_str::<GpuAmount>(json).unwrap(), a);
        }
        // A status written as an integer before fractions were shown still reads.
        assert_eq!(
            serde_json::from_str::<GpuAmount>("12").unwrap(),
            GpuAmount(12000)
        );
        assert!(serde_json::from_str::<GpuAmount>("-1").is_err());
    }
}
