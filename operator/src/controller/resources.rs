//! Reading Kubernetes resource quantities and what a pod template asks for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The resource name of whole NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid quantity {0:?}")]
pub struct QuantityError(pub String);

/// Parses a quantity into thousandths of its unit (`500m` → 500, `2` → 2000, `1Ki` → 1_024_000).
pub fn parse_milli(q: &str) -> Result<u128, QuantityError> {
    let q = q.trim();
    let err = || QuantityError(q.to_string());
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    if num.is_empty() {
        return Err(err());
    }
    // Decimal number as an exact fraction: digits and a count of decimals.
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits: u128 = format!("{int}{frac}").parse().map_err(|_| err())?;
    let scale_down = 10u128.checked_pow(frac.len() as u32).ok_or_else(err)?;
    let (mul, div): (u128, u128) = match suffix {
        "" => (1000, 1),
        "m" => (1, 1),
        "k" => (1000 * 1000, 1),
        "M" => (1000 * 1_000_000, 1),
        "G" => (1000 * 1_000_000_000, 1),
        "T" => (1000 * 1_000_000_000_000, 1),
        "Ki" => (1000 * 1024, 1),
        "Mi" => (1000 * 1024 * 1024, 1),
        "Gi" => (1000 * 1024 * 1024 * 1024, 1),
        "Ti" => (1000 * 1024u128.pow(4), 1),
        s if s.starts_with(['e', 'E']) => {
            let exp: u32 = s[1..].parse().map_err(|_| err())?;
            (1000 * 10u128.checked_pow(exp).ok_or_else(err)?, 1)
        }
        _ => return Err(err()),
    };
    let total = digits.checked_mul(mul).ok_or_else(err)?;
    Ok(total / div / scale_down)
}

/// CPU in millicores.
pub fn cpu_milli(q: &Quantity) -> Result<u64, QuantityError> {
    parse_milli(&q.0).map(|m| u64::try_from(m).unwrap_or(u64::MAX))
}

/// Bytes (memory) or a plain count (GPUs).
pub fn whole(q: &Quantity) -> Result<u64, QuantityError> {
    parse_milli(&q.0).map(|m| u64::try_from(m / 1000).unwrap_or(u64::MAX))
}

/// What one pod asks for: the sum over its containers of requests (limits where no request,
/// as the API server defaults), or the largest init container when that is bigger.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PodDemand {
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    pub gpus: u64,
}

fn container_demand(
    requests: Option<&BTreeMap<String, Quantity>>,
    limits: Option<&BTreeMap<String, Quantity>>,
) -> Result<PodDemand, QuantityError> {
    let get = |name: &str| {
        requests
            .and_then(|r| r.get(name))
            .or_else(|| limits.and_then(|l| l.get(name)))
    };
    Ok(PodDemand {
        cpu_milli: get("cpu").map(cpu_milli).transpose()?.unwrap_or(0),
        memory_bytes: get("memory").map(whole).transpose()?.unwrap_or(0),
        // Extended resources must have request == limit; read the limit first.
        gpus: limits
            .and_then(|l| l.get(GPU_RESOURCE))
            .or_else(|| requests.and_then(|r| r.get(GPU_RESOURCE)))
            .map(whole)
            .transpose()?
            .unwrap_or(0),
    })
}

/// The demand of a pod spec.
pub fn pod_demand(spec: &PodSpec) -> Result<PodDemand, QuantityError> {
    let mut sum = PodDemand::default();
    for c in &spec.containers {
        let r = c.resources.as_ref();
        let d = container_demand(
            r.and_then(|r| r.requests.as_ref()),
            r.and_then(|r| r.limits.as_ref()),
        )?;
        sum.cpu_milli += d.cpu_milli;
        sum.memory_bytes += d.memory_bytes;
        sum.gpus += d.gpus;
    }
    for c in spec.init_containers.iter().flatten() {
        let r = c.resources.as_ref();
        let d = container_demand(
            r.and_then(|r| r.requests.as_ref()),
            r.and_then(|r| r.limits.as_ref()),
        )?;
        sum.cpu_milli = sum.cpu_milli.max(d.cpu_milli);
        sum.memory_bytes = sum.memory_bytes.max(d.memory_bytes);
        sum.gpus = sum.gpus.max(d.gpus);
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("2"), Ok(2000));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("1Ki"), Ok(1_024_000));
        assert_eq!(whole(&Quantity("16Gi".into())), Ok(16 * 1024 * 1024 * 1024));
        assert_eq!(whole(&Quantity("1e3".into())), Ok(1000));
        assert_eq!(whole(&Quantity("8".into())), Ok(8));
        assert!(parse_milli("abc").is_err());
        assert!(parse_milli("").is_err());
        assert!(parse_milli("1Xi").is_err());
    }

    #[test]
    fn pod_demand_sums_containers_and_takes_limits_for_gpus() {
        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 4}}},
                {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]
        }))
        .expect("valid pod spec");
        let d = pod_demand(&spec).expect("parses");
        assert_eq!(
            d,
            PodDemand {
                cpu_milli: 4000,
                memory_bytes: 2 << 30,
                gpus: 4
            }
        );
    }
}
