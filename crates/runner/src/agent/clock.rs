//! The offset of an agent's clock from its coordinator's, NTP-style: the
//! coordinator sends at t1, the agent receives at t2 and answers at t3,
//! the answer arrives at t4. The offset is ((t2 - t1) + (t3 - t4)) / 2,
//! true within half the round trip's network time, (t4 - t1) - (t3 - t2);
//! of several probes the one with the shortest round trip is kept.
//!
//! Both sides read CLOCK_MONOTONIC: never stepped, so a run's start and
//! its intervals do not jump when NTP corrects the wall clock. Offsets
//! between hosts' monotonic clocks are large (they count from each boot)
//! and that is fine: only the offset's uncertainty matters.

use serde::{Deserialize, Serialize};

/// One probe's four timestamps (t1, t4 on the coordinator's clock; t2, t3
/// on the agent's).
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub t1: u64,
    pub t2: u64,
    pub t3: u64,
    pub t4: u64,
}

impl Probe {
    /// The agent's clock minus the coordinator's, and the round trip's
    /// network time.
    pub fn offset_and_delay(&self) -> (i64, u64) {
        let (t1, t2, t3, t4) = (
            i128::from(self.t1),
            i128::from(self.t2),
            i128::from(self.t3),
            i128::from(self.t4),
        );
        let offset = ((t2 - t1) + (t3 - t4)) / 2;
        let delay = ((t4 - t1) - (t3 - t2)).max(0);
        (
            i64::try_from(offset).unwrap_or(i64::MAX),
            u64::try_from(delay).unwrap_or(u64::MAX),
        )
    }
}

/// An agent's clock as measured: `offset_ns` (agent minus coordinator)
/// is true within `uncertainty_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockEstimate {
    pub offset_ns: i64,
    pub uncertainty_ns: u64,
    /// The shortest round trip of the probes.
    pub rtt_ns: u64,
    /// When it was measured, on the coordinator's clock.
    pub at_ns: u64,
}

/// The estimate of the probes (None: no probe).
pub fn estimate(probes: &[Probe]) -> Option<ClockEstimate> {
    let best = probes.iter().min_by_key(|p| p.offset_and_delay().1)?;
    let (offset_ns, delay) = best.offset_and_delay();
    Some(ClockEstimate {
        offset_ns,
        uncertainty_ns: delay.div_ceil(2),
        rtt_ns: best.t4.saturating_sub(best.t1),
        at_ns: best.t4,
    })
}

/// The agent's clock's drift between two estimates, in parts per million
/// (None: too close in time to say).
pub fn drift_ppm(start: &ClockEstimate, end: &ClockEstimate) -> Option<f64> {
    let span = end.at_ns.checked_sub(start.at_ns)?;
    if span < 100_000_000 {
        return None;
    }
    Some((end.offset_ns - start.offset_ns) as f64 / span as f64 * 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_gives_the_offset_within_half_of_it() {
        // The agent's clock is 1 s ahead; the network takes 30 us one way
        // and 50 us the other on the better probe, much more on the worse.
        let off = 1_000_000_000u64;
        let good = Probe {
            t1: 1_000,
            t2: 1_000 + 30_000 + off,
            t3: 1_000 + 40_000 + off,
            t4: 1_000 + 40_000 + 50_000,
        };
        let bad = Probe {
            t1: 5_000_000,
            t2: 5_000_000 + 900_000 + off,
            t3: 5_000_000 + 910_000 + off,
            t4: 5_000_000 + 920_000,
        };
        let e = estimate(&[bad, good]).unwrap();
        assert_eq!(e.uncertainty_ns, 40_000);
        assert!((e.offset_ns - off as i64).unsigned_abs() <= e.uncertainty_ns);
        assert_eq!(e.rtt_ns, 90_000);
        // An agent's clock behind ours.
        let behind = Probe {
            t1: 10_000_000_000,
            t2: 4_000_000_000,
            t3: 4_000_000_100,
            t4: 10_000_001_000,
        };
        let (o, d) = behind.offset_and_delay();
        assert_eq!(d, 900);
        assert!((o + 6_000_000_450).abs() <= 450);
        assert!(estimate(&[]).is_none());
    }

    #[test]
    fn drift_is_the_offsets_change_over_the_time_between() {
        let a = ClockEstimate {
            offset_ns: 0,
            uncertainty_ns: 10,
            rtt_ns: 20,
            at_ns: 0,
        };
        let b = ClockEstimate {
            offset_ns: 50_000,
            at_ns: 10_000_000_000,
            ..a
        };
        assert!((drift_ppm(&a, &b).unwrap() - 5.0).abs() < 1e-9);
        assert!(drift_ppm(&a, &ClockEstimate { at_ns: 1_000, ..a }).is_none());
    }
}
