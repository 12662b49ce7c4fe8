//! The timetable of an open-loop connection: requests are due at fixed
//! (uniform) or exponential (Poisson) gaps from the run's start, whatever
//! the responses do; latency then runs from each request's intended time.

use super::types::Arrival;
use std::time::{Duration, Instant};

/// The timetable of one open-loop connection.
pub(crate) struct Pacer {
    pub(crate) next: Instant,
    gap_ns: f64,
    poisson: bool,
    rng: u64,
}

impl Pacer {
    pub(crate) fn new(
        start: Instant,
        rate_per_conn: f64,
        arrival: Arrival,
        seed: u64,
        offset: f64,
    ) -> Pacer {
        let gap_ns = 1e9 / rate_per_conn;
        let mut p = Pacer {
            next: start,
            gap_ns,
            poisson: arrival == Arrival::Poisson,
            rng: seed,
        };
        // Spread the connections' timetables over one gap, so that uniform
        // timetables do not all fire at the same instant.
        let first = p.gap();
        p.next += Duration::from_nanos((offset * first) as u64);
        p
    }

    /// The next gap, in nanoseconds.
    fn gap(&mut self) -> f64 {
        if !self.poisson {
            return self.gap_ns;
        }
        // splitmix64, then an exponential draw by inversion.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        -u.ln() * self.gap_ns
    }

    /// Takes the intended send times due by `now`, at most `max`.
    pub(crate) fn take_due(&mut self, now: Instant, max: usize, out: &mut Vec<Instant>) {
        while out.len() < max && self.next <= now {
            out.push(self.next);
            let g = self.gap();
            self.next += Duration::from_nanos(g as u64);
        }
    }
}
