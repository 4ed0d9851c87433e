//! The one syntax of duration flags, shared by the operator's and the node labeler's
//! command lines: humantime's `30s`, `5m`, `1h 30m`, `250ms`, or a bare number of seconds
//! (the form the operator's `--*-seconds` flags took before).

use std::time::Duration;

/// Parses a duration flag.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("{e} (expected e.g. \"30s\", \"5m\", \"1h 30m\")"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_humantime_and_bare_seconds() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse(" 2m "), Ok(Duration::from_secs(120)));
        assert!(parse("soon").is_err());
        assert!(parse("-5s").is_err());
    }
}
