//! What a process costs, read from `/proc`: the test process, the peers' managers and the
//! control plane's components are measured the same way.

/// CPU seconds (user + system) and peak RSS (VmHWM, MiB) of process `pid`, from /proc. Clock
/// ticks are USER_HZ, 100 on every Linux this runs on.
pub fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    (ticks / 100.0, memory_mib(pid).1)
}

/// Resident memory now and at its peak (VmRSS, VmHWM) of process `pid` in MiB, from /proc;
/// NaN where it cannot be read.
pub fn memory_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
