//! The Microsoft Philly job table (2017) as the Pollux artifact derived it:
//! `timestamp,duration,num_gpus,gpu_time,cluster`; `cluster` is one of 15 tenant groups.

use std::path::Path;

use super::{SimError, Table};

/// One Philly job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhillyJob {
    /// Submission, seconds since the Unix epoch (UTC).
    pub submit: i64,
    /// Run time in seconds (at least 1).
    pub duration: i64,
    pub gpus: u32,
    /// Tenant group (virtual cluster).
    pub tenant: String,
}

/// Seconds since the epoch of `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DD` (UTC).
pub fn parse_time(s: &str) -> Option<i64> {
    let (date, time) = s.trim().split_once(' ').unwrap_or((s.trim(), "00:00:00"));
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':').map(|x| x.parse::<i64>());
    let (hh, mm, ss) = (
        t.next()?.ok()?,
        t.next().unwrap_or(Ok(0)).ok()?,
        t.next().unwrap_or(Ok(0)).ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    // days from civil (Howard Hinnant)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// `YYYY-MM-DD` of the UTC day holding `t` seconds since the epoch: the inverse of
/// [`parse_time`] on days (civil from days, Howard Hinnant).
pub fn format_day(t: i64) -> String {
    let z = t.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Read `philly_jobs.csv`.
pub fn read_jobs(path: &Path) -> Result<Vec<PhillyJob>, SimError> {
    let t = Table::read(path)?;
    let (ts, dur, ng, cl) = (
        t.col("timestamp")?,
        t.col("duration")?,
        t.col("num_gpus")?,
        t.col("cluster")?,
    );
    let mut out = Vec::with_capacity(t.rows.len());
    for (line, row) in &t.rows {
        let raw = row.get(ts).map(String::as_str).unwrap_or("");
        let submit = parse_time(raw).ok_or_else(|| SimError::Parse {
            path: path.to_path_buf(),
            line: *line,
            message: format!("bad timestamp {raw:?}"),
        })?;
        let duration: f64 = t.get(*line, row, dur)?;
        let gpus: u32 = t.get(*line, row, ng)?;
        if gpus == 0 {
            continue;
        }
        out.push(PhillyJob {
            submit,
            duration: (duration.round() as i64).max(1),
            gpus,
            tenant: row.get(cl).cloned().unwrap_or_default(),
        });
    }
    out.sort_by_key(|j| j.submit);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip() {
        for day in [
            "1970-01-01",
            "2000-02-29",
            "2017-09-24",
            "2017-12-31",
            "2024-03-01",
        ] {
            let t = parse_time(day).expect("parses");
            assert_eq!(format_day(t), day);
            assert_eq!(format_day(t + 86_399), day);
        }
        assert_eq!(format_day(-1), "1969-12-31");
    }
}
