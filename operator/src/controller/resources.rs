//! Reading Kubernetes resource quantities and what a pod asks for, as the API server and
//! kube-scheduler read them.
//!
//! **Quantities** follow the API server's grammar (`resource.ParseQuantity`): an optional
//! sign, a decimal number (`1`, `1.5`, `.5`, `1.`), then a decimal SI suffix (`n u m k M G T
//! P E`), a binary one (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-2`, `e+6`). The
//! value is kept exact to the billionth of its unit, the finest the API server keeps (it
//! rounds finer values up to that), and binary-suffixed values are capped at 2^63−1 units as
//! there. Millicores and bytes are rounded up from it, as kube-scheduler's `MilliValue()` and
//! `Value()` round. No crate on crates.io reads the grammar exactly (`kube_quantity` parses the
//! number as an `f64`, which loses bytes past 2^53 and takes `1E` for a float).
//!
//! **A pod's demand** is kube-scheduler's (`resourcehelper.PodRequests`): the app containers
//! and the native sidecars (init containers with `restartPolicy: Always`) added up; each
//! regular init container with the sidecars started before it taken when that is larger;
//! pod-level `resources` in place of the containers' sum for CPU and memory where set; the
//! pod's `overhead` on top. A container's request falls back to its limit, as the API server
//! defaults it; for `nvidia.com/gpu` the limit is read first (an extended resource's request
//! must equal its limit).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The resource name of whole NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum QuantityError {
    #[error("invalid quantity {0:?}")]
    Invalid(String),
    #[error("negative quantity {0:?}")]
    Negative(String),
}

/// Billionths in one unit.
const NANO: i128 = 1_000_000_000;

/// A quantity's value in billionths of its unit, exact for every quantity the API server
/// accepts up to about 1.7e29 units (past that it saturates).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Amount {
    nanos: i128,
}

impl Amount {
    pub const ZERO: Amount = Amount { nanos: 0 };

    pub fn from_nanos(nanos: i128) -> Amount {
        Amount { nanos }
    }

    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Reads a quantity as the API server does. Surrounding whitespace is ignored, as the
    /// API server's JSON decoding trims it.
    pub fn parse(text: &str) -> Result<Amount, QuantityError> {
        let invalid = || QuantityError::Invalid(text.to_string());
        let s = text.trim();
        if s.is_empty() {
            return Err(invalid());
        }
        let (negative, rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (int, rest) = rest.split_at(int_end);
        // The number may be empty (`+`, `.`, `-.` read as 0, as the API server reads them).
        let (frac, suffix) = match rest.strip_prefix('.') {
            Some(r) => r.split_at(r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len())),
            None => ("", rest),
        };
        let (exp10, exp2) = suffix_exponents(suffix).ok_or_else(invalid)?;
        let digits: Vec<u8> = int
            .bytes()
            .chain(frac.bytes())
            .map(|c| c - b'0')
            .skip_while(|&d| d == 0)
            .collect();
        // value = digits × 10^(exp10 − decimals) × 2^exp2, in billionths: 10^9 more.
        let scale = i64::from(exp10) - frac.len() as i64 + 9;
        let mut nanos = nanos_rounded_up(digits, scale, exp2);
        if exp2 > 0 {
            // The API server caps binary-suffixed values at the largest int64.
            nanos = nanos.min(i64::MAX as u128 * NANO as u128);
        }
        let nanos = i128::try_from(nanos).unwrap_or(i128::MAX);
        Ok(Amount {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    /// Thousandths of the unit, rounded away from zero (`MilliValue()`).
    pub fn milli(self) -> i128 {
        div_away_from_zero(self.nanos, NANO / 1000)
    }

    /// Whole units, rounded away from zero (`Value()`).
    pub fn units(self) -> i128 {
        div_away_from_zero(self.nanos, NANO)
    }

    pub fn is_integer(self) -> bool {
        self.nanos % NANO == 0
    }

    fn saturating_add(self, other: Amount) -> Amount {
        Amount {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
}

fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    match n % d {
        0 => q,
        r if r > 0 => q + 1,
        _ => q - 1,
    }
}

/// The powers of ten and of two a suffix stands for, or `None` where the API server rejects
/// it. A decimal exponent must fit an int32 (the API server rejects one that does not).
fn suffix_exponents(suffix: &str) -> Option<(i32, u32)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((e, 0));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((0, e));
    }
    let exp = suffix.strip_prefix(['e', 'E'])?;
    // As Go's strconv.ParseInt: an optional sign, then at least one digit.
    let unsigned = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    if unsigned.is_empty() || !unsigned.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let e: i64 = exp.parse().ok()?;
    (e.abs() <= i64::from(i32::MAX)).then_some((e as i32, 0))
}

/// `digits` (most significant first, no leading zero) × 2^`exp2` × 10^`scale`, rounded up
/// to an integer; `u128::MAX` when larger. Exact for any length of digits and exponent: the
/// doubling is done on the decimal digits themselves.
fn nanos_rounded_up(mut digits: Vec<u8>, scale: i64, exp2: u32) -> u128 {
    if digits.is_empty() {
        return 0;
    }
    for _ in 0..exp2 {
        let mut carry = 0;
        for d in digits.iter_mut().rev() {
            let v = *d * 2 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        if carry > 0 {
            digits.insert(0, carry);
        }
    }
    let len = digits.len() as i64;
    // Digits before the decimal point; the first digit is not 0.
    let whole_len = len.saturating_add(scale);
    if whole_len <= 0 {
        return 1;
    }
    if whole_len > 39 {
        // At least 10^39, past u128::MAX (about 3.4 × 10^38).
        return u128::MAX;
    }
    let kept = whole_len.min(len) as usize;
    let mut n: u128 = 0;
    for &d in &digits[..kept] {
        n = match n.checked_mul(10).and_then(|n| n.checked_add(u128::from(d))) {
            Some(n) => n,
            None => return u128::MAX,
        };
    }
    if whole_len > len {
        n = match 10u128
            .checked_pow((whole_len - len) as u32)
            .and_then(|p| n.checked_mul(p))
        {
            Some(n) => n,
            None => return u128::MAX,
        };
    }
    if digits[kept..].iter().any(|&d| d != 0) {
        n = n.saturating_add(1);
    }
    n
}

fn non_negative(q: &str) -> Result<Amount, QuantityError> {
    let a = Amount::parse(q)?;
    if a.nanos < 0 {
        return Err(QuantityError::Negative(q.to_string()));
    }
    Ok(a)
}

/// Thousandths of a non-negative quantity, rounded up (`500m` → 500, `2` → 2000, `1Ki` →
/// 1_024_000).
pub fn parse_milli(q: &str) -> Result<u128, QuantityError> {
    non_negative(q).map(|a| a.milli() as u128)
}

fn saturating_u64(n: i128) -> u64 {
    u64::try_from(n.max(0)).unwrap_or(u64::MAX)
}

/// CPU in millicores, rounded up.
pub fn cpu_milli(q: &Quantity) -> Result<u64, QuantityError> {
    non_negative(&q.0).map(|a| saturating_u64(a.milli()))
}

/// Bytes (memory) or a plain count (GPUs), rounded up.
pub fn whole(q: &Quantity) -> Result<u64, QuantityError> {
    non_negative(&q.0).map(|a| saturating_u64(a.units()))
}

/// What one pod asks for, as kube-scheduler counts it (see the module doc).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PodDemand {
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    pub gpus: u64,
}

/// A quantity of the pod that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The container it belongs to, or `overhead`, or `pod` for pod-level resources.
    pub place: String,
    pub resource: &'static str,
    pub error: QuantityError,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {}: {}", self.resource, self.place, self.error)
    }
}

/// A pod's demand as far as its quantities can be read, and those that cannot (each
/// counted as 0, everything else as written).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DemandReading {
    pub demand: PodDemand,
    pub unreadable: Vec<Unreadable>,
}

/// Exact amounts of the three resources kubetrain places by, summed and compared before
/// rounding, as kube-scheduler adds quantities.
#[derive(Clone, Copy, Default)]
struct Exact {
    cpu: Amount,
    memory: Amount,
    gpus: Amount,
}

impl Exact {
    fn add(&mut self, o: &Exact) {
        self.cpu = self.cpu.saturating_add(o.cpu);
        self.memory = self.memory.saturating_add(o.memory);
        self.gpus = self.gpus.saturating_add(o.gpus);
    }

    fn max(&mut self, o: &Exact) {
        self.cpu = self.cpu.max(o.cpu);
        self.memory = self.memory.max(o.memory);
        self.gpus = self.gpus.max(o.gpus);
    }

    fn demand(&self) -> PodDemand {
        PodDemand {
            cpu_milli: saturating_u64(self.cpu.milli()),
            memory_bytes: saturating_u64(self.memory.units()),
            gpus: saturating_u64(self.gpus.units()),
        }
    }
}

type Quantities = BTreeMap<String, Quantity>;

/// Reads the quantities of one place (a container, the pod level, the overhead).
struct Reader<'a> {
    unreadable: &'a mut Vec<Unreadable>,
}

impl Reader<'_> {
    fn amount(&mut self, place: &str, resource: &'static str, q: Option<&Quantity>) -> Amount {
        let Some(q) = q else {
            return Amount::ZERO;
        };
        match non_negative(&q.0) {
            Ok(a) => a,
            Err(error) => {
                self.unreadable.push(Unreadable {
                    place: place.to_string(),
                    resource,
                    error,
                });
                Amount::ZERO
            }
        }
    }

    /// Requests, each falling back to its limit; GPUs from the limit first.
    fn requests(
        &mut self,
        place: &str,
        requests: Option<&Quantities>,
        limits: Option<&Quantities>,
    ) -> Exact {
        let get = |name: &str| {
            requests
                .and_then(|r| r.get(name))
                .or_else(|| limits.and_then(|l| l.get(name)))
        };
        let gpus = limits
            .and_then(|l| l.get(GPU_RESOURCE))
            .or_else(|| requests.and_then(|r| r.get(GPU_RESOURCE)));
        Exact {
            cpu: self.amount(place, "cpu", get("cpu")),
            memory: self.amount(place, "memory", get("memory")),
            gpus: self.amount(place, GPU_RESOURCE, gpus),
        }
    }

    fn container(&mut self, c: &Container) -> Exact {
        let r = c.resources.as_ref();
        self.requests(
            &c.name,
            r.and_then(|r| r.requests.as_ref()),
            r.and_then(|r| r.limits.as_ref()),
        )
    }
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The demand of a pod spec, reading what can be read: a quantity that cannot is counted
/// as 0 and listed, so that the rest of the pod (its GPUs when only its memory is
/// unreadable) is still held.
pub fn read_pod_demand(spec: &PodSpec) -> DemandReading {
    let mut unreadable = Vec::new();
    let mut read = Reader {
        unreadable: &mut unreadable,
    };
    let mut sum = Exact::default();
    for c in &spec.containers {
        sum.add(&read.container(c));
    }
    // While an init container runs, the sidecars started before it run beside it.
    let mut sidecars = Exact::default();
    let mut init = Exact::default();
    for c in spec.init_containers.iter().flatten() {
        let d = read.container(c);
        if is_sidecar(c) {
            sum.add(&d);
            sidecars.add(&d);
            init.max(&sidecars);
        } else {
            let mut running = d;
            running.add(&sidecars);
            init.max(&running);
        }
    }
    sum.max(&init);
    // Pod-level resources (CPU and memory only) stand in for the containers' sum.
    if let Some(r) = spec.resources.as_ref() {
        let pod = read.requests("pod", r.requests.as_ref(), r.limits.as_ref());
        let set = |name: &str| {
            r.requests.as_ref().is_some_and(|m| m.contains_key(name))
                || r.limits.as_ref().is_some_and(|m| m.contains_key(name))
        };
        if set("cpu") {
            sum.cpu = pod.cpu;
        }
        if set("memory") {
            sum.memory = pod.memory;
        }
    }
    if let Some(o) = spec.overhead.as_ref() {
        sum.add(&read.requests("overhead", Some(o), None));
    }
    DemandReading {
        demand: sum.demand(),
        unreadable,
    }
}

/// The demand of a pod spec, or the first quantity that cannot be read.
pub fn pod_demand(spec: &PodSpec) -> Result<PodDemand, QuantityError> {
    let reading = read_pod_demand(spec);
    match reading.unreadable.into_iter().next() {
        Some(u) => Err(u.error),
        None => Ok(reading.demand),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// Billionths of the unit a quantity reads as.
    fn n(q: &str) -> i128 {
        Amount::parse(q)
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .nanos()
    }

    const G: i128 = NANO;
    const KI: i128 = 1 << 10;

    /// Kubernetes' own table (apimachinery's `TestQuantityParse`), each also with a `+` and a
    /// `-` in front, as that test tries them.
    #[test]
    fn quantities_read_as_the_api_server_reads_them() {
        let max = i64::MAX as i128 * G;
        let table: &[(&str, i128)] = &[
            ("0", 0),
            ("0n", 0),
            ("0u", 0),
            ("0m", 0),
            ("0Ki", 0),
            ("0k", 0),
            ("0Mi", 0),
            ("0G", 0),
            ("0Ti", 0),
            ("1", G),
            // binary suffixes
            ("1Ki", KI * G),
            ("8Ki", 8 * KI * G),
            ("7Mi", 7 * KI.pow(2) * G),
            ("6Gi", 6 * KI.pow(3) * G),
            ("5Ti", 5 * KI.pow(4) * G),
            ("4Pi", 4 * KI.pow(5) * G),
            ("3Ei", 3 * KI.pow(6) * G),
            ("100Ti", 100 * KI.pow(4) * G),
            // decimal suffixes
            ("5n", 5),
            ("4u", 4_000),
            ("3m", 3_000_000),
            ("9", 9 * G),
            ("8k", 8_000 * G),
            ("50k", 50_000 * G),
            ("7M", 7 * 10i128.pow(6) * G),
            ("6G", 6 * 10i128.pow(9) * G),
            ("5T", 5 * 10i128.pow(12) * G),
            ("300T", 3 * 10i128.pow(14) * G),
            ("2P", 2 * 10i128.pow(15) * G),
            ("1E", 10i128.pow(18) * G),
            ("12E", 12 * 10i128.pow(18) * G),
            // decimal exponents
            ("1E-3", 1_000_000),
            ("1e3", 1_000 * G),
            ("1E6", 10i128.pow(6) * G),
            ("1e9", 10i128.pow(9) * G),
            ("1E12", 10i128.pow(12) * G),
            ("1e15", 10i128.pow(15) * G),
            ("1E18", 10i128.pow(18) * G),
            ("1e14", 10i128.pow(14) * G),
            ("100.035k", 100_035 * G),
            // things that look like floating point
            ("0.001", 1_000_000),
            ("0.0005k", G / 2),
            ("0.05", 50_000_000),
            ("0.00050k", G / 2),
            ("0.50000", G / 2),
            ("0.5e0", G / 2),
            ("0.5e-1", G / 20),
            ("0.5e-2", G / 200),
            ("10.035M", 10_035_000 * G),
            ("1.2e3", 1_200 * G),
            ("1.3E+6", 1_300_000 * G),
            ("1.40e9", 14 * 10i128.pow(8) * G),
            ("1.53E12", 153 * 10i128.pow(10) * G),
            ("1.7E18", 17 * 10i128.pow(17) * G),
            ("9.01", 9_010_000_000),
            ("8.1k", 8_100 * G),
            ("7.123456M", 7_123_456 * G),
            ("6.987654321G", 6_987_654_321 * G),
            ("5.444T", 5_444 * 10i128.pow(9) * G),
            ("2.5P", 25 * 10i128.pow(14) * G),
            ("1.01E", 101 * 10i128.pow(16) * G),
            // rounded up to the billionth
            ("3.001n", 4),
            ("1.1E-9", 2),
            ("0.0000000001", 1),
            ("0.0000000005", 1),
            ("0.00000000050", 1),
            ("0.5e-9", 1),
            ("0.9n", 1),
            ("0.00000012345", 124),
            ("0.00000012354", 124),
            // binary values are capped at the largest int64
            ("9Ei", max),
            ("9223372036854775807Ki", max),
            // fractional binary values
            ("100.035Ki", 102_435_840_000_000),
            ("0.5Mi", KI.pow(2) / 2 * G),
            ("0.05Gi", 53_687_091_200_000_000),
            ("0.025Ti", 27_487_790_694_400_000_000),
            // written by trolls
            ("0.000000000001Ki", 2),
            (".001", 1_000_000),
            (".0001k", G / 10),
            ("1.", G),
            ("1.G", 10i128.pow(9) * G),
            (".", 0),
        ];
        for &(q, want) in table {
            assert_eq!(n(q), want, "{q}");
            assert_eq!(n(&format!("+{q}")), want, "+{q}");
            assert_eq!(n(&format!("-{q}")), -want, "-{q}");
        }
        // Beyond i128 it saturates rather than fails: the API server accepts such values.
        assert_eq!(n("1e40"), i128::MAX);
        assert_eq!(n("-1e40"), -i128::MAX);
        assert_eq!(n("1e-2147483647"), 1);
        // The JSON decoding trims whitespace before parsing.
        assert_eq!(n(" 1Gi "), KI.pow(3) * G);
    }

    #[test]
    fn what_the_api_server_rejects_is_rejected() {
        for q in [
            "",
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            // an exponent outside int32
            "1e4294967297",
            "1E2147483648",
            "1KiB",
            "1 Gi",
            "1e",
            "1e+",
            "1e1.5",
            "1Ki2",
            "--1",
            "1k3",
            "0x10",
        ] {
            assert!(Amount::parse(q).is_err(), "{q:?} parsed");
        }
        assert_eq!(n("1E2147483647"), i128::MAX);
    }

    #[test]
    fn millicores_and_units_round_up() {
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("2"), Ok(2000));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("1Ki"), Ok(1_024_000));
        assert_eq!(parse_milli("100u"), Ok(1));
        assert_eq!(parse_milli("1n"), Ok(1));
        assert_eq!(parse_milli("-1"), Err(QuantityError::Negative("-1".into())));
        assert_eq!(
            parse_milli("abc"),
            Err(QuantityError::Invalid("abc".into()))
        );
        assert_eq!(whole(&Quantity("16Gi".into())), Ok(16 << 30));
        assert_eq!(whole(&Quantity("0.5".into())), Ok(1));
        assert_eq!(whole(&Quantity("1e3".into())), Ok(1000));
        assert_eq!(whole(&Quantity("2P".into())), Ok(2 * 10u64.pow(15)));
        assert_eq!(whole(&Quantity("8".into())), Ok(8));
        assert_eq!(whole(&Quantity("1e30".into())), Ok(u64::MAX));
        assert_eq!(cpu_milli(&Quantity("250000n".into())), Ok(1));
        assert_eq!(Amount::parse("-1.5m").map(Amount::milli), Ok(-2));
    }

    /// `m` × 10^`k` written out as a decimal number (`k` may be negative).
    fn decimal(m: u64, k: i32) -> String {
        let digits = m.to_string();
        if k >= 0 {
            return format!("{digits}{}", "0".repeat(k as usize));
        }
        let k = (-k) as usize;
        let padded = format!("{digits:0>width$}", width = k + 1);
        let (int, frac) = padded.split_at(padded.len() - k);
        format!("{int}.{frac}")
    }

    /// Kubernetes' canonical form of a non-negative amount (`Quantity.String()`): the
    /// largest decimal SI suffix that leaves a whole number, or, for whole multiples of
    /// 1024, the largest binary one.
    fn canonical(nanos: i128, binary: bool) -> String {
        if binary && nanos % G == 0 && nanos != 0 {
            let mut v = nanos / G;
            let mut i = 0;
            while v % 1024 == 0 && i < 6 {
                v /= 1024;
                i += 1;
            }
            return format!("{v}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][i]);
        }
        let suffixes = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
        let mut v = nanos;
        let mut i = 0;
        while v != 0 && v % 1000 == 0 && i < suffixes.len() - 1 {
            v /= 1000;
            i += 1;
        }
        format!("{v}{}", suffixes[i])
    }

    /// Decimal SI suffixes and the power of ten each stands for.
    const DECIMAL: [(&str, i32); 10] = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

    proptest! {
        #![proptest_config(crate::sched::proptests::cases(2_000))]

        /// A value `m` × 10^`x` written with every decimal suffix, in exponent notation
        /// several ways, with a sign, leading zeros and trailing decimals, reads as the one
        /// exact number (rounded up to the billionth below that).
        #[test]
        fn every_decimal_form_of_a_value_reads_alike(
            m in 0u64..1_000_000_000_000,
            x in -12i32..=12,
            zeros in 0usize..3,
        ) {
            let exp9 = x + 9;
            let want: i128 = if exp9 >= 0 {
                i128::from(m) * 10i128.pow(exp9 as u32)
            } else {
                let d = 10i128.pow((-exp9) as u32);
                (i128::from(m) + d - 1) / d
            };
            let mut forms = Vec::new();
            for (suffix, e) in DECIMAL {
                forms.push(format!("{}{suffix}", decimal(m, x - e)));
            }
            for e in [x, x - 3, x + 2, 0] {
                forms.push(format!("{}e{e}", decimal(m, x - e)));
                forms.push(format!("{}E{e}", decimal(m, x - e)));
                forms.push(format!("{}e+{e}", decimal(m, x - e)).replace("+-", "-"));
            }
            let padded: Vec<String> = forms
                .iter()
                .map(|f| {
                    let f = format!("{}{f}", "0".repeat(zeros));
                    match f.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
                        Some(i) if f[..i].contains('.') => {
                            format!("+{}{}{}", &f[..i], "0".repeat(zeros), &f[i..])
                        }
                        _ => format!("+{f}"),
                    }
                })
                .collect();
            for f in forms.iter().chain(&padded) {
                prop_assert_eq!(n(f), want, "{}", f);
                prop_assert_eq!(n(&format!("-{}", f.trim_start_matches('+'))), -want, "-{}", f);
            }
        }

        /// A binary-suffixed value, fractional or not, is its exact product rounded up to
        /// the billionth and capped at the largest int64; a whole one reads alike one
        /// suffix down, times 1024.
        #[test]
        fn binary_forms_read_as_their_exact_value(
            m in 0u64..(1 << 32),
            j in 1usize..=6,
            decimals in 0i32..5,
        ) {
            let q = format!("{}{}", decimal(m, -decimals), BINARY[j]);
            let exact = i128::from(m) * (1i128 << (10 * j)) * G;
            let d = 10i128.pow(decimals as u32);
            let want = ((exact + d - 1) / d).min(i64::MAX as i128 * G);
            prop_assert_eq!(n(&q), want, "{}", q);
            let whole = format!("{m}{}", BINARY[j]);
            let down = format!("{}{}", u128::from(m) * 1024, BINARY[j - 1]);
            if j > 1 || m * 1024 <= i64::MAX as u64 {
                prop_assert_eq!(n(&whole), n(&down), "{} vs {}", whole, down);
            }
        }

        /// What the API server writes back (the canonical form) reads as what it was
        /// written from, and so does the value in billionths.
        #[test]
        fn canonical_forms_round_trip(nanos in 0i128..=(i64::MAX as i128 * 1_000), binary: bool) {
            let c = canonical(nanos, binary);
            prop_assert_eq!(n(&c), nanos, "{}", c);
            prop_assert_eq!(n(&format!("{nanos}n")), nanos);
        }

        /// Millicores and units are the least whole numbers not below the value.
        #[test]
        fn rounding_is_up_to_the_unit(nanos in 0i128..=(i64::MAX as i128 * 1_000)) {
            let a = Amount::from_nanos(nanos);
            prop_assert!(a.milli() * 1_000_000 >= nanos && (a.milli() - 1) * 1_000_000 < nanos);
            prop_assert!(a.units() * G >= nanos && (a.units() - 1) * G < nanos);
        }

        /// Nothing panics, whatever the text.
        #[test]
        fn any_text_is_read_or_refused(text in "[-+0-9.eEinumkKMGTP ]{0,24}") {
            let _ = Amount::parse(&text);
        }
    }

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).expect("pod spec")
    }

    fn cpu(q: &str) -> serde_json::Value {
        json!({"requests": {"cpu": q}})
    }

    fn sidecar(name: &str, q: &str) -> serde_json::Value {
        json!({"name": name, "restartPolicy": "Always", "resources": cpu(q)})
    }

    fn init(name: &str, q: &str) -> serde_json::Value {
        json!({"name": name, "resources": cpu(q)})
    }

    fn cpu_of(v: serde_json::Value) -> u64 {
        pod_demand(&spec(v)).expect("readable").cpu_milli
    }

    /// kube-scheduler's cases (component-helpers' `TestPodResourceRequests` and
    /// `TestPodRequestsAndLimits`), in millicores.
    #[test]
    fn pod_demand_is_kube_schedulers() {
        // larger init container
        assert_eq!(
            cpu_of(json!({"initContainers": [init("i", "4")],
                "containers": [init("c", "1")]})),
            4000
        );
        // larger containers
        assert_eq!(
            cpu_of(json!({"initContainers": [init("i", "2")],
                "containers": [init("a", "2"), init("b", "3")]})),
            5000
        );
        // pod overhead included
        let d = pod_demand(&spec(json!({
            "overhead": {"cpu": "1", "memory": "1Gi"},
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}],
            "containers": [init("a", "2"), init("b", "3")]})))
        .expect("readable");
        assert_eq!((d.cpu_milli, d.memory_bytes), (6000, 1 << 30));
        // request and overhead
        let d = pod_demand(&spec(json!({
            "overhead": {"cpu": "5", "memory": "5"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "10"},
                "limits": {"cpu": "2", "memory": "12"}}}]})))
        .expect("readable");
        assert_eq!((d.cpu_milli, d.memory_bytes), (6000, 15));
        // a restartable init container runs beside the regular one
        assert_eq!(
            cpu_of(json!({"initContainers": [sidecar("s", "1")], "containers": [init("c", "1")]})),
            2000
        );
        // max(5, sidecars (3 + 2 + 1) + regular (1)) = 7
        assert_eq!(
            cpu_of(json!({
                "initContainers": [init("i", "5"), sidecar("s1", "1"), sidecar("s2", "2"), sidecar("s3", "3")],
                "containers": [init("c", "1")]})),
            7000
        );
        // init-2 runs beside the sidecars started before it (1 + 2), not the one after
        assert_eq!(
            cpu_of(json!({
                "initContainers": [init("i1", "5"), sidecar("s1", "1"), sidecar("s2", "2"),
                    init("i2", "5"), sidecar("s3", "3")],
                "containers": [init("c", "1")]})),
            8000
        );
        // restartable init, init and regular: 10 + 200 while init-1 runs
        assert_eq!(
            cpu_of(
                json!({"initContainers": [sidecar("s", "10"), init("i", "200")],
                "containers": [init("c", "100")]})
            ),
            210_000
        );
    }

    #[test]
    fn pod_demand_adds_exact_amounts_and_rounds_once() {
        // 0.5m + 0.5m is 1m, as quantities add before MilliValue() rounds; not 2m.
        assert_eq!(
            cpu_of(json!({"containers": [init("a", "500u"), init("b", "500u")]})),
            1
        );
    }

    #[test]
    fn pod_demand_sums_containers_and_takes_limits_for_gpus() {
        let d = pod_demand(&spec(json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 4}}},
                {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]
        })))
        .expect("parses");
        assert_eq!(
            d,
            PodDemand {
                cpu_milli: 4000,
                memory_bytes: 2 << 30,
                gpus: 4
            }
        );
        // A sidecar's GPUs are held for the pod's life.
        let d = pod_demand(&spec(json!({
            "initContainers": [{"name": "s", "restartPolicy": "Always",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}],
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]
        })))
        .expect("parses");
        assert_eq!(d.gpus, 3);
    }

    /// Pod-level requests (or limits, which they default to) stand in for the containers'
    /// CPU and memory; GPUs still come from the containers.
    #[test]
    fn pod_level_resources_replace_the_containers_cpu_and_memory() {
        let d = pod_demand(&spec(json!({
            "resources": {"requests": {"cpu": "4"}, "limits": {"memory": "2Gi"}},
            "overhead": {"cpu": "100m"},
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 2}}},
                {"name": "b", "resources": {"requests": {"cpu": "1"}}}
            ]
        })))
        .expect("parses");
        assert_eq!(
            d,
            PodDemand {
                cpu_milli: 4100,
                memory_bytes: 2 << 30,
                gpus: 2
            }
        );
    }

    /// A quantity that cannot be read costs only itself: the GPUs and CPU of the pod are
    /// still counted, and the quantity is named.
    #[test]
    fn an_unreadable_quantity_leaves_the_rest_of_the_demand() {
        let s = spec(json!({"containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/gpu": 4, "memory": "lots"}, "requests": {"cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"memory": "1Gi"}}}
        ]}));
        let r = read_pod_demand(&s);
        assert_eq!(
            r.demand,
            PodDemand {
                cpu_milli: 1000,
                memory_bytes: 1 << 30,
                gpus: 4
            }
        );
        assert_eq!(
            r.unreadable
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["memory of a: invalid quantity \"lots\""]
        );
        assert_eq!(pod_demand(&s), Err(QuantityError::Invalid("lots".into())));
    }
}
