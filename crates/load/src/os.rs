//! The engine's contact with the OS: thread pinning, /proc readings, and a
//! precise timer (the one `unsafe` block: registering a timerfd with tokio).
//! Contract: every function here is safe to call from any thread and never
//! panics on a missing or odd /proc file; it returns None or an error.

use std::io;
use std::time::Instant;

/// Raises this process's soft limit of open files to its hard limit: each
/// connection (and an open loop's timer) takes a descriptor, and the soft
/// limit is often 1024. Returns the limit now in force.
pub fn raise_open_files_limit() -> io::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(io::Error::from)?;
    }
    Ok(hard)
}

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
    pub steal: u64,
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
        out[id] = CpuTicks {
            busy,
            steal: v[7],
            total,
        };
    }
    out
}

/// User + system CPU ticks of a whole process (all its threads).
pub fn process_cpu_ticks(pid: u32) -> Option<u64> {
    cpu_ticks(pid, 2)
}

/// [`process_cpu_ticks`] plus those of the children it waited for
/// (cutime + cstime).
pub fn process_cpu_ticks_with_reaped(pid: u32) -> Option<u64> {
    cpu_ticks(pid, 4)
}

/// The sum of `n` tick fields of /proc/PID/stat from utime on.
fn cpu_ticks(pid: u32, n: usize) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may itself hold spaces or ')'.
    let after = text.get(text.rfind(')')? + 2..)?;
    // After ')' the fields start at 3 (state); utime is 14, stime 15,
    // cutime 16, cstime 17.
    after
        .split_whitespace()
        .skip(11)
        .take(n)
        .map(|v| v.parse::<u64>().ok())
        .sum()
}

/// Scheduler statistics of a whole process, summed over its live threads
/// (/proc/PID/task/*/schedstat): time on a CPU and time runnable but
/// waiting for one (run-queue delay), in nanoseconds.
pub fn process_schedstat(pid: u32) -> Option<(u64, u64)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let (mut run_ns, mut wait_ns) = (0u64, 0u64);
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        let mut f = text
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap_or(0));
        run_ns += f.next().unwrap_or(0);
        wait_ns += f.next().unwrap_or(0);
    }
    Some((run_ns, wait_ns))
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
        assert!(process_schedstat(me).is_some());
        let t = read_cpu_ticks();
        assert!(!t.is_empty() && t.iter().any(|c| c.total > 0));
        assert!(clock_ticks_per_s() > 0.0);
        assert!(process_cpu_ticks(u32::MAX).is_none());
    }
}

/// Lets the calling thread's timers fire when due: the default timer slack
/// (50 us) would make every precise sleep late by up to that much.
pub fn tighten_timer_slack() -> io::Result<()> {
    nix::sys::prctl::set_timerslack(1).map_err(io::Error::other)
}

/// How long before a deadline [`PreciseTimer`] stops sleeping and starts
/// yielding (measured here: a timer wake-up of an idle vCPU is ~40 us late).
pub const SPIN_MARGIN: std::time::Duration = std::time::Duration::from_micros(60);

/// Sleeps the calling thread until `t`: in the kernel until
/// [`SPIN_MARGIN`] before it (in steps of at most `step`, returning early
/// when `give_up()` holds), then spinning. Returns how long it spun, or
/// None if it gave up.
pub fn sleep_precise(
    t: Instant,
    step: std::time::Duration,
    give_up: impl Fn() -> bool,
) -> Option<std::time::Duration> {
    loop {
        let left = t.saturating_duration_since(Instant::now());
        if left <= SPIN_MARGIN {
            break;
        }
        if give_up() {
            return None;
        }
        std::thread::sleep((left - SPIN_MARGIN).min(step));
    }
    let began = Instant::now();
    while Instant::now() < t {
        std::hint::spin_loop();
    }
    Some(began.elapsed())
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of `Instant`, shared by
/// every process of the machine.
pub fn monotonic_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always there");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// An `Instant` as CLOCK_MONOTONIC nanoseconds (to hand to another process).
pub fn instant_to_monotonic(i: Instant) -> u64 {
    let (now, mono) = (Instant::now(), monotonic_ns());
    if i <= now {
        mono.saturating_sub((now - i).as_nanos() as u64)
    } else {
        mono + (i - now).as_nanos() as u64
    }
}

/// The `Instant` of CLOCK_MONOTONIC nanoseconds from another process.
pub fn instant_from_monotonic(ns: u64) -> Instant {
    let (now, mono) = (Instant::now(), monotonic_ns());
    if ns <= mono {
        now - std::time::Duration::from_nanos(mono - ns)
    } else {
        now + std::time::Duration::from_nanos(ns - mono)
    }
}

/// Yields to the runtime until `t` (the last [`SPIN_MARGIN`] before a
/// deadline); returns how long it spun.
pub(crate) async fn yield_until(t: Instant) -> std::time::Duration {
    let began = Instant::now();
    while Instant::now() < t {
        tokio::task::yield_now().await;
    }
    began.elapsed()
}

/// A timerfd as tokio's `AsyncFd` wants it (nix gives `AsFd` only).
struct Tfd(nix::sys::timerfd::TimerFd);

impl std::os::fd::AsRawFd for Tfd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

/// A one-shot timer with nanosecond resolution for a tokio runtime: a
/// timerfd (CLOCK_MONOTONIC, the clock of `Instant`) registered with the
/// runtime. tokio's own timers tick in milliseconds, too coarse for an
/// open-loop timetable or a 1 ms injected delay.
pub struct PreciseTimer {
    fd: tokio::io::unix::AsyncFd<Tfd>,
    base: Instant,
    base_ts: nix::sys::time::TimeSpec,
}

impl PreciseTimer {
    /// Must be called inside a tokio runtime with I/O enabled.
    pub fn new() -> io::Result<PreciseTimer> {
        use nix::sys::timerfd::{ClockId, TimerFd, TimerFlags};
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(io::Error::other)?;
        let base = Instant::now();
        let base_ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map_err(io::Error::other)?;
        // SAFETY: `Tfd` owns the timerfd (an `OwnedFd`) for as long as the
        // `AsyncFd` lives, and `as_raw_fd` always returns that same fd.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(Tfd(fd), tokio::io::Interest::READABLE)
        }
        .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(PreciseTimer { fd, base, base_ts })
    }

    /// Sleeps until `t` (returns at once if `t` has passed). It sleeps in
    /// the kernel until [`SPIN_MARGIN`] before `t`, then yields to the
    /// runtime until `t`: waking an idle vCPU takes tens of microseconds,
    /// which would otherwise make every deadline that much late. Returns
    /// how long it spun (CPU time spent on purpose, not on the load).
    pub async fn sleep_until(&mut self, t: Instant) -> io::Result<std::time::Duration> {
        if t.saturating_duration_since(Instant::now()) > SPIN_MARGIN {
            self.sleep_in_kernel_until(t - SPIN_MARGIN).await?;
        }
        Ok(yield_until(t).await)
    }

    pub(crate) async fn sleep_in_kernel_until(&mut self, t: Instant) -> io::Result<()> {
        use nix::sys::timerfd::{Expiration, TimerSetTimeFlags};
        let at = self.base_ts
            + nix::sys::time::TimeSpec::from_duration(t.saturating_duration_since(self.base));
        self.fd
            .get_ref()
            .0
            .set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .map_err(io::Error::other)?;
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|fd| fd.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(r) => return r,
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod timer_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn precise_timer_fires_at_its_deadline_not_before() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let _ = tighten_timer_slack();
            let mut t = PreciseTimer::new().unwrap();
            for us in [300u64, 1000, 50] {
                let due = Instant::now() + Duration::from_micros(us);
                t.sleep_until(due).await.unwrap();
                assert!(Instant::now() >= due, "woke before its deadline");
            }
            // A deadline in the past returns at once.
            t.sleep_until(Instant::now() - Duration::from_millis(1))
                .await
                .unwrap();
        });
    }
}
