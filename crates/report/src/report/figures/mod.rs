//! The report's figures: throughput against a variable (panels on shared
//! axes), latency-response, percentiles, per-second series, CPU heatmaps,
//! the time to first byte of every S3 test.

use super::*;

/// Seconds as a tick reads them: `2`, `0.5`.
pub(super) fn seconds(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The warm-up of the runs as a shaded span (the longest, from 0), if any
/// run had one.
pub(super) fn warmup(runs: &[&RunResult]) -> Option<plot::Shade> {
    let end = runs
        .iter()
        .flat_map(|r| &r.intervals)
        .filter(|i| i.phase == wirebench_core::result::Phase::Warmup)
        .map(|i| i.end_ns)
        .max()?;
    Some(plot::Shade {
        from: 0.0,
        to: end as f64 / 1e9,
        label: "warm-up (not measured)".into(),
    })
}

pub(super) const MAX_PER_RUN: usize = 8;

/// What every figure of a report is drawn from: the runs that measured
/// something, how they are laid out and named.
struct Drawn<'a> {
    ok: Vec<&'a RunResult>,
    l: &'a Layout,
    vary: Vec<String>,
    shown: Shown,
    /// The layout resolved: what throughput is plotted against, what
    /// makes a line, what a panel (and both, for the figures of one plot).
    x: Option<String>,
    series_by: Vec<String>,
    panel: Option<String>,
    all_series: Vec<String>,
}

impl Drawn<'_> {
    fn name(&self, r: &RunResult) -> String {
        run_name(r, self.l, &self.vary, &self.shown)
    }
}

/// The registry of figures: a module each, whose `draw` gives the figures
/// of its kind the runs allow (none where it does not apply), in the
/// report's order.
macro_rules! registry {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every kind of figure, by name, listed once.
        const FIGURES: &[(&str, fn(&Drawn) -> Vec<Figure>)] =
            &[$((stringify!($module), $module::draw)),*];
    };
}

registry!(
    throughput,
    efficiency,
    latency_response,
    ttfb,
    spectrum,
    per_second,
    heatmaps
);

/// Every figure the runs allow.
pub fn figures(runs: &[RunResult], l: &Layout) -> Vec<Figure> {
    by_kind(runs, l).into_iter().flat_map(|(_, f)| f).collect()
}

/// The figures the runs allow, by kind (a kind's name, its figures).
pub(super) fn by_kind(runs: &[RunResult], l: &Layout) -> Vec<(&'static str, Vec<Figure>)> {
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    let shown = Shown::of(&ok);
    let Resolved {
        x,
        series: series_by,
        panel,
    } = resolve(l, &ok, &vary);
    let all_series: Vec<String> = panel.iter().chain(&series_by).cloned().collect();
    let d = Drawn {
        ok,
        l,
        vary,
        shown,
        x,
        series_by,
        panel,
        all_series,
    };
    FIGURES
        .iter()
        .map(|(name, draw)| (*name, draw(&d)))
        .collect()
}
