//! The time to first byte of S3 tests, as a histogram.

use super::*;

/// S3: the time to first byte of every test, in one figure (s3bench's
/// histogram of all tests together).
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    ttfb_histogram(&d.ok, d.l, &d.vary, &d.shown)
        .into_iter()
        .collect()
}

/// The most tests the TTFB histogram draws.
pub(super) const MAX_TTFB_TESTS: usize = 40;

/// The share of each run's time-to-first-byte samples in log-spaced bins,
/// one line per run: the reads' TTFB (or the one operation type's).
pub(super) fn ttfb_histogram(
    runs: &[&RunResult],
    l: &Layout,
    vary: &[String],
    shown: &Shown,
) -> Option<Figure> {
    let hists: Vec<(&RunResult, LatencyHist)> = runs
        .iter()
        .filter_map(|r| {
            let op = r.summary.ttfb_op()?;
            op.ttfb?;
            let h = hist::decode(&op.ttfb_hist).ok().filter(|h| !h.is_empty())?;
            Some((*r, h))
        })
        .take(MAX_TTFB_TESTS)
        .collect();
    if hists.is_empty() {
        return None;
    }
    let lo = hists.iter().map(|(_, h)| h.min().max(1)).min()? as f64;
    let hi = hists.iter().map(|(_, h)| h.max()).max()? as f64;
    const BINS: usize = 30;
    let span = (hi / lo).max(1.0 + 1e-9).ln();
    let bin_of = |v: f64| -> usize {
        let k = ((v.max(lo) / lo).ln() / span * BINS as f64).floor();
        wirebench_core::units::whole_usize(k.max(0.0)).min(BINS - 1)
    };
    let series: Vec<Series> = hists
        .iter()
        .map(|(r, h)| {
            let mut counts = [0u64; BINS];
            for v in h.iter_recorded() {
                counts[bin_of(v.value_iterated_to() as f64)] += v.count_at_value();
            }
            let total = h.len().max(1) as f64;
            Series {
                name: run_name(r, l, vary, shown),
                points: counts
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(k, c)| {
                        // The bin's middle, on the log scale.
                        let mid = lo * (span * (k as f64 + 0.5) / BINS as f64).exp();
                        (mid, 100.0 * *c as f64 / total)
                    })
                    .collect(),
            }
        })
        .collect();
    let title = if hists.len() > 1 {
        format!("Time to first byte, {} tests", hists.len())
    } else {
        "Time to first byte".to_string()
    };
    Some(Figure {
        svg: plot::lines(
            &title,
            Axis::log("time to first byte", format_ns),
            Axis::linear("% of requests", |v| format!("{v:.0}%")),
            &series,
        ),
        title,
    })
}
