//! The time to first byte of S3 tests, as histograms: every test, paged,
//! an operation type's apart from another's (reads are not mixed with
//! writes).

use super::*;

/// S3: the time to first byte of every test (s3bench's histogram of all
/// tests together), a figure per operation type, each of at most
/// [`MAX_TTFB_TESTS`] tests (more: several pages, on the same bins, each
/// saying which tests it holds). None is ever left out.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let mut by_op: BTreeMap<&str, Vec<(&RunResult, LatencyHist)>> = BTreeMap::new();
    for r in d.ok.iter() {
        for (op, o) in &r.summary.by_op {
            if o.ttfb.is_none() {
                continue;
            }
            if let Some(h) = hist::decode(&o.ttfb_hist).ok().filter(|h| !h.is_empty()) {
                by_op.entry(op.as_str()).or_default().push((*r, h));
            }
        }
    }
    let ops = by_op.len();
    by_op
        .iter()
        .flat_map(|(op, hists)| {
            let of = if ops > 1 {
                format!(" of {op}")
            } else {
                String::new()
            };
            ttfb_pages(hists, &of, d)
        })
        .collect()
}

/// The most tests one TTFB histogram draws (more go to further pages).
pub(super) const MAX_TTFB_TESTS: usize = 40;

/// The share of each run's time-to-first-byte samples in log-spaced bins,
/// one line per run, `MAX_TTFB_TESTS` runs a figure; `of` names the
/// operation type where there are several.
fn ttfb_pages(hists: &[(&RunResult, LatencyHist)], of: &str, d: &Drawn) -> Vec<Figure> {
    let (Some(lo), Some(hi)) = (
        hists.iter().map(|(_, h)| h.min().max(1)).min(),
        hists.iter().map(|(_, h)| h.max()).max(),
    ) else {
        return vec![];
    };
    let (lo, hi) = (lo as f64, hi as f64);
    const BINS: usize = 30;
    let span = (hi / lo).max(1.0 + 1e-9).ln();
    let bin_of = |v: f64| -> usize {
        let k = ((v.max(lo) / lo).ln() / span * BINS as f64).floor();
        wirebench_core::units::whole_usize(k.max(0.0)).min(BINS - 1)
    };
    let n = hists.len();
    let pages = n.div_ceil(MAX_TTFB_TESTS);
    hists
        .chunks(MAX_TTFB_TESTS)
        .enumerate()
        .map(|(page, chunk)| {
            let series: Vec<Series> = chunk
                .iter()
                .map(|(r, h)| {
                    let mut counts = [0u64; BINS];
                    for v in h.iter_recorded() {
                        counts[bin_of(v.value_iterated_to() as f64)] += v.count_at_value();
                    }
                    let total = h.len().max(1) as f64;
                    Series {
                        name: d.name(r),
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
            let first = page * MAX_TTFB_TESTS + 1;
            let title = match (n, pages) {
                (1, _) => format!("Time to first byte{of}"),
                (_, 1) => format!("Time to first byte{of}, {n} tests"),
                _ => format!(
                    "Time to first byte{of}, tests {first}-{} of {n}",
                    first + chunk.len() - 1
                ),
            };
            Figure {
                svg: plot::lines(
                    &title,
                    Axis::log("time to first byte", format_ns),
                    Axis::linear("% of requests", |v| format!("{v:.0}%")),
                    &series,
                ),
                title,
            }
        })
        .collect()
}
