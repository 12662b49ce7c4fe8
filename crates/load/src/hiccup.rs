//! The hiccup meter (after jHiccup): a probe thread on a client CPU sleeps
//! [`PERIOD`] in a loop and records how late each wake-up is. A wake-up
//! late by 200 ms means nothing on this machine ran for 200 ms: the host
//! throttled the VM, the process was stopped, the CPU was taken. Those
//! stalls are the platform's; the meter measures them so that they are
//! never blamed on the server.
//!
//! A stall of D shows as a wake-up late by between D - PERIOD and D (the
//! probe may have been asleep when it began). The period is 10 ms, not
//! jHiccup's 1 ms: on these VMs each wake-up of the probe changes what is
//! measured. At 1 ms an HTTP/1.1 client of eight connections got 9% fewer
//! GETs/s from nginx, and a msgr client at depth 64 got 16-22% more
//! echoes; at 10 ms, about 1% fewer and 6-11% more (`docs/benchmarks/`,
//! `bench_hiccup.py`).

use crate::os;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_core::hist::{self, LatencyHist};

/// How long the probe sleeps each time.
pub const PERIOD: Duration = Duration::from_nanos(PERIOD_NS);
/// [`PERIOD`] in ns.
pub const PERIOD_NS: u64 = 10_000_000;

struct Shared {
    stop: AtomicBool,
    /// Lateness of each wake-up since the last `take`, in ns.
    cur: Mutex<LatencyHist>,
}

/// A running probe; stopped (and its thread joined) when dropped.
pub struct Probe {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Probe {
    /// Starts the probe, pinned to `cpu` when given.
    pub fn start(cpu: Option<usize>) -> std::io::Result<Probe> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            cur: Mutex::new(hist::new_hist()),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("wb-hiccup".into())
            .spawn(move || {
                // A pin or slack that fails leaves a probe less exact, not
                // a run without one.
                if let Some(cpu) = cpu {
                    let _ = os::pin_current_thread(&[cpu]);
                }
                let _ = os::tighten_timer_slack();
                while !s.stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    std::thread::sleep(PERIOD);
                    let late = t0.elapsed().saturating_sub(PERIOD);
                    let ns = (late.as_nanos() as u64).clamp(1, hist::MAX_TRACKED_NS);
                    s.cur
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .saturating_record(ns);
                }
            })?;
        Ok(Probe {
            shared,
            thread: Some(thread),
        })
    }

    /// The wake-ups since the last call (their lateness), and starts anew.
    pub fn take(&self) -> LatencyHist {
        let mut cur = self.shared.cur.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *cur, hist::new_hist())
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The stall figures of a probe histogram: the worst lateness and the time
/// lost (the sum of the latenesses), in ns.
pub fn stalls(h: &LatencyHist) -> (u64, u64) {
    if h.is_empty() {
        return (0, 0);
    }
    (h.max(), (h.mean() * h.len() as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_records_each_wake_up() {
        let p = Probe::start(None).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let quiet = p.take();
        assert!(quiet.len() > 10, "{} wake-ups in 200 ms", quiet.len());
        // At most every 10 ms: each wake-up of the client's CPU changes
        // what the run measures (module doc).
        assert!(quiet.len() <= 21, "{} wake-ups in 200 ms", quiet.len());
        let (max, lost) = stalls(&quiet);
        assert!(lost >= max && max >= 1);
        // A stall needs the thread kept off the CPU: the integration test
        // stops the whole process (SIGSTOP) and reads it back.
        assert!(p.take().len() < quiet.len() / 2, "take starts anew");
    }
}
