//! Faults a reference server can inject, to test the measurement itself:
//! a fixed delay per request, periodic stalls, a queueing server with a
//! known capacity (`workers` / `service` requests per second), and a server
//! that sleeps when idle (a request after `idle` without one waits `cost`
//! more: latency worse at low rates, as on a VM whose server wakes for
//! each request).
//!
//! Each request's departure time is computed when it is read, from a model
//! kept in virtual time (no sleeping worker threads): the precise timer then
//! holds the response until that time. So `--service 1ms --workers 2` is an
//! exact M/D/2 queue with a capacity of 2,000 requests/s, whatever the
//! machine's scheduling.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Faults {
    /// Added to every request.
    pub delay: Duration,
    /// (stall, period): nothing leaves during the first `stall` of every `period`.
    pub stall: Option<(Duration, Duration)>,
    /// Each request holds one worker this long.
    pub service: Option<Duration>,
    /// When each worker is next free.
    workers: Mutex<Vec<Instant>>,
    epoch: Instant,
    /// Connections being served; when the last one closes, the work queued
    /// for the closed ones is dropped, as a real server would.
    live: std::sync::atomic::AtomicUsize,
    /// (cost, idle): a request read `idle` or more after the last one
    /// waits `cost` more.
    pub wake: Option<(Duration, Duration)>,
    /// When the last request was read.
    last_arrival: Mutex<Option<Instant>>,
}

/// Held while a connection is served (see [`Faults::serving`]).
pub struct Serving<'a>(&'a Faults);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        if self
            .0
            .live
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            let now = Instant::now();
            for w in self.0.workers.lock().expect("workers lock").iter_mut() {
                *w = (*w).min(now);
            }
        }
    }
}

impl Faults {
    pub fn new(
        delay: Duration,
        stall: Option<(Duration, Duration)>,
        service: Option<(Duration, usize)>,
    ) -> Faults {
        let epoch = Instant::now();
        let (service, workers) = match service {
            Some((d, n)) => (Some(d), vec![epoch; n.max(1)]),
            None => (None, Vec::new()),
        };
        Faults {
            delay,
            stall,
            service,
            workers: Mutex::new(workers),
            epoch,
            live: Default::default(),
            wake: None,
            last_arrival: Mutex::new(None),
        }
    }

    /// The same, sleeping when idle (see [`Faults::wake`]).
    pub fn with_wake(mut self, wake: Option<(Duration, Duration)>) -> Faults {
        self.wake = wake;
        self
    }

    /// Counts a connection as served until the guard is dropped.
    pub fn serving(&self) -> Serving<'_> {
        self.live.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Serving(self)
    }

    /// When the response to a request read at `arrival` may leave.
    pub fn departure(&self, arrival: Instant) -> Instant {
        let mut t = arrival;
        if let Some((cost, idle)) = self.wake {
            let mut last = self.last_arrival.lock().expect("arrival lock");
            let slept = last.is_none_or(|l| arrival.saturating_duration_since(l) >= idle);
            *last = Some(last.map_or(arrival, |l| l.max(arrival)));
            if slept {
                t += cost;
            }
        }
        if let Some(service) = self.service {
            let mut workers = self.workers.lock().expect("workers lock");
            let (i, free) = workers
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(_, f)| f)
                .expect("at least one worker");
            let done = t.max(free) + service;
            workers[i] = done;
            t = done;
        }
        t += self.delay;
        if let Some((stall, period)) = self.stall {
            let since = t.saturating_duration_since(self.epoch);
            let periods = (since.as_nanos() / period.as_nanos()) as u32;
            let start = self.epoch + period * periods;
            if t < start + stall {
                t = start + stall;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45: a server that sleeps when idle holds the first request
    /// after a quiet spell, not those that come close together.
    #[test]
    fn a_request_after_an_idle_spell_waits_to_wake_the_server() {
        let f = Faults::new(Duration::ZERO, None, None)
            .with_wake(Some((Duration::from_millis(2), Duration::from_micros(500))));
        let a = Instant::now();
        assert_eq!(f.departure(a), a + Duration::from_millis(2));
        let close = a + Duration::from_micros(100);
        assert_eq!(f.departure(close), close);
        let late = close + Duration::from_millis(1);
        assert_eq!(f.departure(late), late + Duration::from_millis(2));
    }

    #[test]
    fn delay_adds_a_fixed_time() {
        let f = Faults::new(Duration::from_millis(1), None, None);
        let a = Instant::now();
        assert_eq!(f.departure(a), a + Duration::from_millis(1));
    }

    #[test]
    fn workers_serve_at_their_capacity() {
        let f = Faults::new(Duration::ZERO, None, Some((Duration::from_millis(1), 2)));
        let a = Instant::now();
        // 10 requests at once: 2 workers finish 2 every millisecond.
        let last = (0..10).map(|_| f.departure(a)).max().unwrap();
        assert_eq!(last, a.max(f.epoch) + Duration::from_millis(5));
    }

    #[test]
    fn work_queued_for_closed_connections_is_dropped() {
        let f = Faults::new(Duration::ZERO, None, Some((Duration::from_millis(1), 1)));
        let a = Instant::now();
        {
            let _c = f.serving();
            for _ in 0..100 {
                f.departure(a); // 100 ms of queued work
            }
        }
        let b = Instant::now();
        assert!(f.departure(b) <= Instant::now() + Duration::from_millis(2));
    }

    #[test]
    fn stalls_hold_responses_until_the_stall_ends() {
        let f = Faults::new(
            Duration::ZERO,
            Some((Duration::from_millis(100), Duration::from_secs(1))),
            None,
        );
        let in_stall = f.epoch + Duration::from_millis(1030);
        assert_eq!(f.departure(in_stall), f.epoch + Duration::from_millis(1100));
        let outside = f.epoch + Duration::from_millis(1500);
        assert_eq!(f.departure(outside), outside);
    }
}
