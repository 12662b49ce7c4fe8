//! The engine's contact with the OS: thread pinning and /proc readings.
//! Contract: every function here is safe to call from any thread and never
//! panics on a missing or odd /proc file; it returns None or an error.

use std::io;

/// Pins the calling thread to the given CPUs (one or several).
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(io::Error::other)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(io::Error::other)
}

/// Clock ticks per second of /proc times.
pub fn clock_ticks_per_s() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64
}

/// Busy and total ticks of each CPU, from /proc/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    pub busy: u64,
    pub total: u64,
}

/// Reads per-CPU ticks; index = CPU id (absent CPUs stay zero).
pub fn read_cpu_ticks() -> Vec<CpuTicks> {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let Some((id, fields)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(id) = id.parse::<usize>() else {
            continue;
        };
        let v: Vec<u64> = fields
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if v.len() < 8 {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest is inside user)
        let total: u64 = v[..8].iter().sum();
        let busy = v[0] + v[1] + v[2] + v[5] + v[6];
        if out.len() <= id {
            out.resize(id + 1, CpuTicks::default());
        }
        out[id] = CpuTicks { busy, total };
    }
    out
}

/// User + system CPU ticks of a whole process (all its threads).
pub fn process_cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may itself hold spaces or ')'.
    let after = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // after ')' the fields start at 3 (state); utime is 14 and stime 15.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Peak resident set size of a process (VmHWM), in bytes.
pub fn process_peak_rss_bytes(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_visible() {
        let me = std::process::id();
        assert!(process_cpu_ticks(me).is_some());
        assert!(process_peak_rss_bytes(me).unwrap() > 0);
        let t = read_cpu_ticks();
        assert!(!t.is_empty() && t.iter().any(|c| c.total > 0));
        assert!(clock_ticks_per_s() > 0.0);
        assert!(process_cpu_ticks(u32::MAX).is_none());
    }
}
