//! Service-level objectives: `p99<1ms`, `mean<=200us`, `ops>=10k/s`,
//! `errors<1%`. Parsed once, shared by every command that takes `--slo`,
//! and checked against a run's summary; an objective `over 10s` is checked
//! in every 10 s window of the measured phase instead, each of which must
//! meet it (a bad minute cannot hide in a good hour).

pub use crate::result::SloOutcome;
use crate::result::Summary;
use crate::units;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The flags of a run's objectives. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
pub struct SloFlags {
    /// Service-level objectives to check (repeatable, or comma-separated): p99<1ms, mean<200us,
    /// max<50ms, ops>=10k/s, errors<1%, ttfb-p99<150ms. A complete run that misses one exits
    /// with status 3.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<String>,
    /// End the run the moment a window misses an objective checked `over` windows (--slo
    /// 'p99<1ms over 10s'): what was measured until then is the run, saved, and it exits 3.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_on_fail: Option<bool>,
}

/// What an objective measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Latency percentile (0-100), in ns.
    Percentile(f64),
    MeanLatency,
    MaxLatency,
    /// Operations per second.
    Throughput,
    /// Errors per operation, in %.
    ErrorRate,
    /// S3: a percentile of the GETs' time to first byte, in ns.
    TtfbPercentile(f64),
    /// S3: the GETs' mean time to first byte, in ns.
    TtfbMean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

/// One objective, e.g. `p99<1ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// As written.
    pub text: String,
    pub metric: Metric,
    pub cmp: Cmp,
    /// ns for latencies, ops/s for throughput, % for the error rate.
    pub threshold: f64,
    /// `over 10s`: met in every window of this many whole seconds of the
    /// measured phase (None: over the whole phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<u64>,
}

/// How many resamples the bootstrap of [`Slo::interval`] draws.
pub const BOOTSTRAP: usize = 200;

/// An objective's figure and its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FigureInterval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not an objective: write METRIC OP VALUE, e.g. p99<1ms, p99.9<=5ms, mean<200us, max<50ms, ops>=10k/s, errors<1%, ttfb-p99<150ms, ttfb-mean<20ms (OP is <, <=, > or >=), and 'over 10s' after it to check it in every 10 s window (whole seconds; not ttfb)"
)]
pub struct SloError(pub String);

impl Slo {
    pub fn parse(text: &str) -> Result<Slo, SloError> {
        let err = || SloError(text.to_string());
        let t = text.trim();
        let (t, window_s) = match t.split_once(" over ") {
            Some((objective, window)) => {
                let d = units::parse_duration(window.trim()).map_err(|_| err())?;
                if d.is_zero() || d.subsec_nanos() != 0 {
                    return Err(err());
                }
                (objective.trim(), Some(d.as_secs()))
            }
            None => (t, None),
        };
        let at = t.find(['<', '>']).ok_or_else(err)?;
        let (name, rest) = (t[..at].trim(), &t[at..]);
        let (cmp, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Cmp::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Cmp::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Cmp::Lt, v)
        } else {
            (Cmp::Gt, &rest[1..])
        };
        let value = value.trim();
        let (metric, threshold) = match name {
            "ops" | "throughput" => (
                Metric::Throughput,
                units::parse_rate(value).map_err(|_| err())?,
            ),
            "errors" => {
                let v: f64 = value
                    .strip_suffix('%')
                    .ok_or_else(err)?
                    .trim()
                    .parse()
                    .map_err(|_| err())?;
                (Metric::ErrorRate, v)
            }
            "mean" => (Metric::MeanLatency, latency(value).ok_or_else(err)?),
            "ttfb-mean" => (Metric::TtfbMean, latency(value).ok_or_else(err)?),
            p if p.starts_with("ttfb-p") => {
                let q = quantile(&p[5..]).ok_or_else(err)?;
                (Metric::TtfbPercentile(q), latency(value).ok_or_else(err)?)
            }
            "max" => (Metric::MaxLatency, latency(value).ok_or_else(err)?),
            p => {
                let q = quantile(p).ok_or_else(err)?;
                (Metric::Percentile(q), latency(value).ok_or_else(err)?)
            }
        };
        if !threshold.is_finite() || threshold < 0.0 {
            return Err(err());
        }
        // The per-second points carry no time to first byte.
        let ttfb = matches!(metric, Metric::TtfbMean | Metric::TtfbPercentile(_));
        if window_s.is_some() && ttfb {
            return Err(err());
        }
        Ok(Slo {
            text: text.trim().to_string(),
            metric,
            cmp,
            threshold,
            window_s,
        })
    }

    /// Parses a comma-separated list (`p99<1ms,ops>10k/s`).
    pub fn parse_list(text: &str) -> Result<Vec<Slo>, SloError> {
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Slo::parse)
            .collect()
    }

    /// The run's value for this metric; latencies come from the histogram.
    pub fn actual(&self, s: &Summary, hist: &crate::hist::LatencyHist) -> f64 {
        match self.metric {
            // Nothing measured: NaN, which meets no objective (a run that
            // measured nothing passes none).
            Metric::Percentile(q) => {
                if hist.is_empty() {
                    f64::NAN
                } else {
                    hist.value_at_quantile(q / 100.0) as f64
                }
            }
            Metric::MeanLatency | Metric::MaxLatency if hist.is_empty() => f64::NAN,
            Metric::MeanLatency => s.latency.mean_ns,
            Metric::MaxLatency => s.latency.max_ns as f64,
            Metric::Throughput => s.ops_per_s,
            Metric::ErrorRate => {
                if s.ops + s.errors == 0 {
                    f64::NAN
                } else {
                    100.0 * s.errors as f64 / (s.ops + s.errors) as f64
                }
            }
            // No GET with a first byte: NaN, which meets no objective.
            Metric::TtfbMean => s
                .by_op
                .get("get")
                .and_then(|o| o.ttfb.as_ref())
                .map_or(f64::NAN, |t| t.mean_ns),
            Metric::TtfbPercentile(q) => s
                .by_op
                .get("get")
                .and_then(|o| crate::hist::decode(&o.ttfb_hist).ok())
                .filter(|h| !h.is_empty())
                .map_or(f64::NAN, |h| h.value_at_quantile(q / 100.0) as f64),
        }
    }

    pub fn check(&self, s: &Summary, hist: &crate::hist::LatencyHist) -> SloOutcome {
        let actual = self.actual(s, hist);
        SloOutcome {
            slo: self.text.clone(),
            actual,
            pass: self.holds(actual, 0.0),
            windows: None,
        }
    }

    /// The objective over one window: these per-second points, the first
    /// starting `from_s` into the measured phase.
    pub fn window(
        &self,
        from_s: f64,
        seconds: &[&crate::result::Interval],
    ) -> Result<crate::result::SloWindow, String> {
        let mut h = crate::hist::new_hist();
        for iv in seconds {
            let x = crate::hist::decode(&iv.latency_hist)
                .map_err(|e| format!("a second's histogram: {e}"))?;
            h.add(&x).map_err(|e| format!("merging seconds: {e:?}"))?;
        }
        let secs: f64 = seconds.iter().map(|iv| iv.seconds()).sum();
        let ops: u64 = seconds.iter().map(|iv| iv.ops).sum();
        let s = Summary {
            ops,
            errors: seconds.iter().map(|iv| iv.errors).sum(),
            ops_per_s: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
            latency: crate::hist::LatencySummary::of(&h),
            ..Summary::default()
        };
        let actual = self.actual(&s, &h);
        Ok(crate::result::SloWindow {
            from_s,
            to_s: from_s + secs,
            actual,
            pass: self.holds(actual, 0.0),
        })
    }

    /// Checks a run: over its whole measured phase, or, `over` a window,
    /// in each window of its per-second points (the last one too when it
    /// is shorter, if it holds a second or more; a phase shorter than a
    /// window is one window). The
    /// actual value is the worst window's.
    pub fn check_run(&self, r: &crate::result::RunResult) -> Result<SloOutcome, String> {
        let Some(window_s) = self.window_s else {
            let h = crate::hist::decode(&r.latency_hist)
                .map_err(|e| format!("the run's histogram: {e}"))?;
            return Ok(self.check(&r.summary, &h));
        };
        let measured: Vec<&crate::result::Interval> = r
            .intervals
            .iter()
            .filter(|iv| iv.phase == crate::result::Phase::Measure)
            .collect();
        let per = usize::try_from(window_s).unwrap_or(usize::MAX);
        let mut windows = Vec::new();
        for (k, chunk) in measured.chunks(per).enumerate() {
            // A last window of less than a second (the tail of a run ended
            // early) is too short to say anything.
            let secs: f64 = chunk.iter().map(|iv| iv.seconds()).sum();
            if k > 0 && secs < 1.0 {
                continue;
            }
            windows.push(self.window((k * per) as f64, chunk)?);
        }
        // The worst window's value (a window that measured nothing, NaN,
        // is the worst of all: it meets no objective).
        let worse = |a: f64, b: f64| {
            a.is_nan()
                || match self.cmp {
                    Cmp::Lt | Cmp::Le => a > b,
                    Cmp::Gt | Cmp::Ge => a < b,
                }
        };
        let worst = windows
            .iter()
            .map(|w| w.actual)
            .reduce(|a, b| if worse(b, a) { b } else { a })
            .unwrap_or(f64::NAN);
        Ok(SloOutcome {
            slo: self.text.clone(),
            actual: worst,
            pass: !windows.is_empty() && windows.iter().all(|w| w.pass),
            windows: Some(windows),
        })
    }

    /// Whether `actual` meets the objective with `headroom` (a fraction of
    /// the threshold) to spare: `p99<5ms` with 0.2 holds up to 4 ms.
    pub fn holds(&self, actual: f64, headroom: f64) -> bool {
        let (below, above) = (
            self.threshold * (1.0 - headroom),
            self.threshold * (1.0 + headroom),
        );
        match self.cmp {
            Cmp::Lt => actual < below,
            Cmp::Le => actual <= below,
            Cmp::Gt => actual > above,
            Cmp::Ge => actual >= above,
        }
    }

    /// The objective's figure over `seconds` (the measured seconds of one
    /// or more runs of one rate) with a 95% confidence interval: the wider
    /// of an order-statistic interval (the ranks n q -/+ 1.96 sqrt(n q
    /// (1 - q)) of the merged histogram: exact for independent samples)
    /// and a bootstrap over the seconds (BOOTSTRAP resamples: latencies of
    /// one second are not independent, and the seconds' spread says how
    /// much a rerun moves the figure). None when nothing was measured.
    pub fn interval(&self, seconds: &[&crate::result::Interval]) -> Option<FigureInterval> {
        let hists: Vec<crate::hist::LatencyHist> = seconds
            .iter()
            .filter_map(|iv| crate::hist::decode(&iv.latency_hist).ok())
            .collect();
        if hists.len() != seconds.len() || seconds.is_empty() {
            return None;
        }
        let figure = |pick: &[usize]| -> f64 {
            let mut h = crate::hist::new_hist();
            let (mut ops, mut errors, mut secs) = (0, 0, 0.0);
            for &i in pick {
                let _ = h.add(&hists[i]);
                ops += seconds[i].ops;
                errors += seconds[i].errors;
                secs += seconds[i].seconds();
            }
            let s = Summary {
                ops,
                errors,
                ops_per_s: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
                latency: crate::hist::LatencySummary::of(&h),
                ..Summary::default()
            };
            self.actual(&s, &h)
        };
        let all: Vec<usize> = (0..seconds.len()).collect();
        let estimate = figure(&all);
        if !estimate.is_finite() {
            return None;
        }
        let (mut low, mut high) = (estimate, estimate);
        // Order statistics of the merged histogram.
        if let Metric::Percentile(q) = self.metric {
            let mut h = crate::hist::new_hist();
            for x in &hists {
                let _ = h.add(x);
            }
            let n = h.len() as f64;
            let q = q / 100.0;
            let half = 1.96 * (n * q * (1.0 - q)).sqrt();
            low = low.min(h.value_at_quantile(((n * q - half) / n).clamp(0.0, 1.0)) as f64);
            high = high.max(h.value_at_quantile(((n * q + half + 1.0) / n).clamp(0.0, 1.0)) as f64);
        }
        // The bootstrap over seconds (needs a few to say anything).
        if seconds.len() >= 3 {
            let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ seconds.len() as u64;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let mut draws: Vec<f64> = (0..BOOTSTRAP)
                .map(|_| {
                    let pick: Vec<usize> = (0..seconds.len())
                        .map(|_| usize::try_from(next() % seconds.len() as u64).unwrap_or(0))
                        .collect();
                    figure(&pick)
                })
                .filter(|v| v.is_finite())
                .collect();
            draws.sort_by(f64::total_cmp);
            if !draws.is_empty() {
                let last = draws.len() - 1;
                let at =
                    |p: f64| draws[crate::units::whole_usize((last as f64 * p).round()).min(last)];
                low = low.min(at(0.025));
                high = high.max(at(0.975));
            }
        }
        Some(FigureInterval {
            estimate,
            low,
            high,
        })
    }

    /// Whether the objective holds (with `headroom`) over the whole of
    /// `ci`, fails over the whole of it, or neither (None: undecided).
    pub fn decide(&self, ci: &FigureInterval, headroom: f64) -> Option<bool> {
        match (self.holds(ci.low, headroom), self.holds(ci.high, headroom)) {
            (true, true) => Some(true),
            (false, false) => Some(false),
            _ => None,
        }
    }

    /// The actual value with the objective's unit, for people.
    pub fn format_value(&self, v: f64) -> String {
        match self.metric {
            Metric::TtfbMean | Metric::TtfbPercentile(_) if v.is_nan() => "no GET measured".into(),
            _ if v.is_nan() => "nothing measured".into(),
            Metric::Throughput => format!("{}/s", units::format_rate(v)),
            Metric::ErrorRate => format!("{v:.3}%"),
            _ => units::format_ns(v),
        }
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `p99.9` -> 99.9 (above 0, at most 100).
fn quantile(p: &str) -> Option<f64> {
    let q: f64 = p.strip_prefix('p')?.parse().ok()?;
    (q > 0.0 && q <= 100.0).then_some(q)
}

fn latency(v: &str) -> Option<f64> {
    units::parse_duration(v).ok().map(|d| d.as_nanos() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten seconds at 100 us but for seconds 4 and 5 at 5 ms: `p50<1ms`
    /// passes over the whole run (80% of it at 100 us) but not `over 2s`,
    /// whose 4-6 s window is at 5 ms.
    #[test]
    fn an_objective_over_a_window_is_met_in_every_window() {
        use crate::result::fixture;
        let mut r = fixture::sample();
        r.intervals = (0..10)
            .map(|k| {
                fixture::interval(
                    k,
                    1000.0,
                    if k == 4 || k == 5 { 5_000_000 } else { 100_000 },
                )
            })
            .collect();
        let whole = Slo::parse("p50<1ms").unwrap();
        assert_eq!(whole.window_s, None);
        let mut all = crate::hist::new_hist();
        for iv in &r.intervals {
            all.add(crate::hist::decode(&iv.latency_hist).unwrap())
                .unwrap();
        }
        r.latency_hist = crate::hist::encode(&all);
        assert!(whole.check_run(&r).unwrap().pass);
        let windowed = Slo::parse("p50<1ms over 2s").unwrap();
        assert_eq!(windowed.window_s, Some(2));
        assert_eq!(windowed.text, "p50<1ms over 2s");
        let o = windowed.check_run(&r).unwrap();
        assert!(!o.pass, "{o:?}");
        let w = o.windows.as_ref().unwrap();
        assert_eq!(w.len(), 5);
        let missed: Vec<(f64, f64)> = w
            .iter()
            .filter(|w| !w.pass)
            .map(|w| (w.from_s, w.to_s))
            .collect();
        assert_eq!(missed, [(4.0, 6.0)]);
        assert!((o.actual - 5e6).abs() < 5e6 * 0.01, "{o:?}");
        // Windows longer than the run: one window, the whole run.
        let o = Slo::parse("ops>=900/s over 1m")
            .unwrap()
            .check_run(&r)
            .unwrap();
        assert!(o.pass && o.windows.as_ref().unwrap().len() == 1, "{o:?}");
        for bad in [
            "p99<1ms over",
            "p99<1ms over 1500ms",
            "ttfb-p99<1ms over 10s",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_what_users_write() {
        let s = Slo::parse("p99<1ms").unwrap();
        assert_eq!(
            (s.metric, s.cmp, s.threshold),
            (Metric::Percentile(99.0), Cmp::Lt, 1e6)
        );
        assert_eq!(
            Slo::parse("p99.9 <= 5ms").unwrap().metric,
            Metric::Percentile(99.9)
        );
        assert_eq!(Slo::parse("ops>=10k/s").unwrap().threshold, 10_000.0);
        assert_eq!(Slo::parse("errors<1%").unwrap().metric, Metric::ErrorRate);
        assert_eq!(Slo::parse("mean<200us").unwrap().threshold, 200_000.0);
        assert_eq!(Slo::parse_list("p99<1ms, ops>100").unwrap().len(), 2);
        for bad in [
            "", "p99", "p99<", "p99<fast", "p101<1ms", "p0<1ms", "q99<1ms", "ops>1ms", "errors<1",
            "p99=1ms", "p99<10",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checks_against_a_run() {
        let mut h = crate::hist::new_hist();
        for v in 1..=100u64 {
            crate::hist::record(&mut h, v * 10_000);
        }
        let s = Summary {
            ops: 100,
            ops_per_s: 500.0,
            latency: crate::hist::LatencySummary::of(&h),
            ..Summary::default()
        };
        assert!(Slo::parse("p99<1ms").unwrap().check(&s, &h).pass);
        assert!(!Slo::parse("p99<900us").unwrap().check(&s, &h).pass);
        assert!(Slo::parse("ops>=500").unwrap().check(&s, &h).pass);
        assert!(!Slo::parse("ops>500").unwrap().check(&s, &h).pass);
        assert!(Slo::parse("errors<1%").unwrap().check(&s, &h).pass);
        let p99 = Slo::parse("p99<5ms").unwrap();
        assert!(p99.holds(3.9e6, 0.2) && !p99.holds(4.1e6, 0.2) && p99.holds(4.1e6, 0.0));
        assert!(Slo::parse("ops>100").unwrap().holds(121.0, 0.2));
        assert!(!Slo::parse("ops>100").unwrap().holds(119.0, 0.2));
        // Issue 35: a run that measured nothing meets no objective.
        let empty = crate::hist::new_hist();
        let none = Summary::default();
        for text in ["p99<50ms", "mean<1ms", "max<1s", "errors<1%"] {
            let o = Slo::parse(text).unwrap().check(&none, &empty);
            assert!(!o.pass && o.actual.is_nan(), "{text}: {o:?}");
            let shown = Slo::parse(text).unwrap().format_value(o.actual);
            assert_eq!(shown, "nothing measured");
        }
    }

    #[test]
    fn time_to_first_byte_objectives_read_the_gets() {
        let t = Slo::parse("ttfb-p99<150ms").unwrap();
        assert_eq!(
            (t.metric, t.threshold),
            (Metric::TtfbPercentile(99.0), 150e6)
        );
        assert_eq!(
            Slo::parse("ttfb-mean<=1ms").unwrap().metric,
            Metric::TtfbMean
        );
        assert!(Slo::parse("ttfb-q99<1ms").is_err() && Slo::parse("ttfb-p0<1ms").is_err());
        let mut ttfb = crate::hist::new_hist();
        for v in 1..=100u64 {
            crate::hist::record(&mut ttfb, v * 2_000_000);
        }
        let empty = crate::hist::new_hist();
        let mut s = Summary::default();
        // No GETs: the objective is not met, and says why.
        assert!(!t.check(&s, &empty).pass);
        assert_eq!(t.format_value(t.actual(&s, &empty)), "no GET measured");
        s.by_op.insert(
            "get".into(),
            crate::result::OpSummary {
                ops: 100,
                ttfb: Some(crate::hist::LatencySummary::of(&ttfb)),
                ttfb_hist: crate::hist::encode(&ttfb),
                ..Default::default()
            },
        );
        // p99 = 198 ms (the 99th of 2, 4 ... 200 ms).
        assert!(!t.check(&s, &empty).pass);
        assert!(Slo::parse("ttfb-p99<200ms").unwrap().check(&s, &empty).pass);
        assert!(
            Slo::parse("ttfb-mean<102ms")
                .unwrap()
                .check(&s, &empty)
                .pass
        );
        assert!(
            !Slo::parse("ttfb-mean<100ms")
                .unwrap()
                .check(&s, &empty)
                .pass
        );
    }
}
