//! The timetable of an open-loop connection: requests are due at fixed
//! (uniform) or exponential (Poisson) gaps from the run's start, whatever
//! the responses do; latency then runs from each request's intended time.
//! With load stages the gaps follow the rate's profile: the n-th request of
//! a connection is due when the run's profile has asked for n requests per
//! connection (Poisson: exponential gaps in that count, which is how a
//! Poisson process of a changing rate is made).

use super::types::{Arrival, LoadConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirebench_core::stages::Profile;

/// The timetable of one open-loop connection.
pub(crate) struct Pacer {
    pub(crate) next: Instant,
    gap_ns: f64,
    poisson: bool,
    rng: u64,
    staged: Option<Staged>,
}

/// A connection's place in a staged run's profile.
struct Staged {
    start: Instant,
    profile: Arc<Profile>,
    /// The run's connections: the profile's requests are shared among them.
    conns: f64,
    /// This connection's requests due so far (fractional: Poisson, and the
    /// offset of the first).
    due: f64,
}

/// The timetable of connection `global` of `conns` (None: a closed loop),
/// its start spread over one gap by its number. `profile`: the run's
/// stages ([`LoadConfig::profile`], made once per worker).
pub(crate) fn of_conn(
    cfg: &LoadConfig,
    start: Instant,
    global: u64,
    conns: u64,
    profile: Option<&Arc<Profile>>,
) -> Option<Pacer> {
    let rate = cfg.rate?;
    let offset = global as f64 / conns as f64;
    let seed = cfg.seed ^ global.wrapping_mul(0xA076_1D64_78BD_642F);
    Some(match profile {
        Some(p) => Pacer::staged(start, p.clone(), conns, cfg.arrival, seed, offset),
        None => Pacer::new(start, rate / conns as f64, cfg.arrival, seed, offset),
    })
}

/// Where a timetable that has ended points: past any run.
const NEVER: Duration = Duration::from_secs(365 * 86_400);

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
            staged: None,
        };
        // Spread the connections' timetables over one gap, so that uniform
        // timetables do not all fire at the same instant.
        let first = p.unit() * gap_ns;
        p.next += Duration::from_nanos((offset * first) as u64);
        p
    }

    /// The timetable of one of `conns` connections of a staged run.
    pub(crate) fn staged(
        start: Instant,
        profile: Arc<Profile>,
        conns: u64,
        arrival: Arrival,
        seed: u64,
        offset: f64,
    ) -> Pacer {
        let mut p = Pacer {
            next: start,
            gap_ns: 0.0,
            poisson: arrival == Arrival::Poisson,
            rng: seed,
            staged: None,
        };
        let due = offset * p.unit();
        p.staged = Some(Staged {
            start,
            profile,
            conns: conns as f64,
            due,
        });
        p.next = p.staged_next();
        p
    }

    /// The next gap in requests of this connection: 1, or an exponential
    /// draw of mean 1 (Poisson).
    fn unit(&mut self) -> f64 {
        if !self.poisson {
            return 1.0;
        }
        // splitmix64, then an exponential draw by inversion.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        -u.ln()
    }

    /// When a staged connection's next request is due.
    fn staged_next(&self) -> Instant {
        let s = self.staged.as_ref().expect("a staged timetable");
        match s.profile.time_at(s.due * s.conns) {
            Some(t) => s.start + Duration::from_secs_f64(t),
            None => s.start + NEVER,
        }
    }

    /// Takes the intended send times due by `now`, at most `max`.
    pub(crate) fn take_due(&mut self, now: Instant, max: usize, out: &mut Vec<Instant>) {
        while out.len() < max && self.next <= now {
            out.push(self.next);
            let unit = self.unit();
            match self.staged.as_mut() {
                Some(s) => {
                    s.due += unit;
                    self.next = self.staged_next();
                }
                None => self.next += Duration::from_nanos((unit * self.gap_ns) as u64),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::stages;

    /// Four connections of a run ramping from 1k/s to 9k/s over 2 s (no
    /// lead): together they send what the ramp asks, second by second.
    #[test]
    fn staged_timetables_add_up_to_the_ramp() {
        let start = Instant::now();
        let profile = Arc::new(Profile::new(
            Duration::ZERO,
            &stages::parse("2s:1k->9k").unwrap(),
        ));
        for arrival in [Arrival::Uniform, Arrival::Poisson] {
            let mut first_second = 0;
            let mut all = 0;
            for c in 0..4u64 {
                let mut p =
                    Pacer::staged(start, profile.clone(), 4, arrival, c + 1, c as f64 / 4.0);
                let mut due = Vec::new();
                p.take_due(start + Duration::from_secs(3), usize::MAX, &mut due);
                first_second += due
                    .iter()
                    .filter(|t| **t < start + Duration::from_secs(1))
                    .count();
                all += due.len();
                assert!(
                    p.next > start + Duration::from_secs(100),
                    "{arrival:?}: ended"
                );
            }
            // 1k -> 5k over the first second: 3,000; 10,000 in all.
            let tolerance = if arrival == Arrival::Uniform { 4 } else { 250 };
            assert!(
                first_second.abs_diff(3000) <= tolerance,
                "{arrival:?}: {first_second}"
            );
            assert!(all.abs_diff(10_000) <= tolerance, "{arrival:?}: {all}");
        }
    }
}
