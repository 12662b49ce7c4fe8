//! `--abort-on-fail`: the objectives checked over windows, each window
//! judged as its last second comes in; the first miss ends the load (a
//! local run's session, or a coordinator over its agents' merged seconds).

use wirebench_core::result::{Interval, Phase};
use wirebench_core::slo::Slo;

/// The measured seconds so far and the first miss.
#[derive(Debug, Default)]
pub struct Watch {
    /// The objectives over windows (none: nothing is watched).
    pub slos: Vec<Slo>,
    seconds: Vec<Interval>,
    /// Why the load ends, once a window missed (taken by the one who ends it).
    pub missed: Option<String>,
}

impl Watch {
    /// Watches `slos`' windowed objectives when `asked` (`--abort-on-fail`).
    pub fn of(asked: bool, slos: &[Slo]) -> Watch {
        let slos = match asked {
            true => slos
                .iter()
                .filter(|s| s.window_s.is_some())
                .cloned()
                .collect(),
            false => Vec::new(),
        };
        Watch {
            slos,
            ..Watch::default()
        }
    }

    /// A second of the load: a window that ends with it is judged.
    pub fn second(&mut self, iv: &Interval) {
        if self.slos.is_empty() || self.missed.is_some() || iv.phase != Phase::Measure {
            return;
        }
        self.seconds.push(iv.clone());
        let n = self.seconds.len();
        for s in &self.slos {
            let per = usize::try_from(s.window_s.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
            if !n.is_multiple_of(per) {
                continue;
            }
            let last: Vec<&Interval> = self.seconds[n - per..].iter().collect();
            if let Ok(w) = s.window((n - per) as f64, &last)
                && !w.pass
            {
                self.missed = Some(format!(
                    "ended after {n} s by --abort-on-fail: {s} missed in {:.0}-{:.0} s ({})",
                    w.from_s,
                    w.to_s,
                    s.format_value(w.actual)
                ));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture::interval;

    #[test]
    fn the_first_window_that_misses_ends_the_load_and_only_when_asked() {
        let slos = Slo::parse_list("p99<1ms over 2s").unwrap();
        let mut w = Watch::of(true, &slos);
        // Seconds 0-1 at 100 us: the window passes; 2-3 at 5 ms: it misses.
        for (k, lat) in [(0, 100_000), (1, 100_000), (2, 5_000_000)] {
            w.second(&interval(k, 100.0, lat));
            assert!(w.missed.is_none(), "second {k}");
        }
        w.second(&interval(3, 100.0, 5_000_000));
        let why = w.missed.clone().expect("the window 2-4 s missed");
        assert!(
            why.starts_with("ended after 4 s by --abort-on-fail: p99<1ms"),
            "{why}"
        );
        // Not asked: nothing is watched.
        let mut off = Watch::of(false, &slos);
        for k in 0..4 {
            off.second(&interval(k, 100.0, 5_000_000));
        }
        assert!(off.missed.is_none());
    }
}
