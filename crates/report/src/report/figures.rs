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
}

impl Drawn<'_> {
    fn name(&self, r: &RunResult) -> String {
        run_name(r, self.l, &self.vary, &self.shown)
    }
}

/// Every figure the runs allow.
pub fn figures(runs: &[RunResult], l: &Layout) -> Vec<Figure> {
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    let shown = Shown::of(&ok);
    let d = Drawn { ok, l, vary, shown };
    let Resolved {
        x,
        series: series_by,
        panel,
    } = resolve(l, &d.ok, &d.vary);
    let mut out = Vec::new();
    if let Some(x) = x.as_deref() {
        out.extend(throughput_vs(&d, x, &series_by, panel.as_deref()));
    }
    let all_series: Vec<String> = panel.iter().chain(&series_by).cloned().collect();
    out.extend(latency_response(&d, &all_series));
    // S3: the time to first byte of every test, in one figure (s3bench's
    // histogram of all tests together).
    out.extend(ttfb_histogram(&d.ok, l, &d.vary, &d.shown));
    out.extend(spectrum(&d));
    out.extend(per_second(&d));
    // Per-core CPU over time, client and server cores apart: of up to four
    // runs spread over the set.
    let step = d.ok.len().div_ceil(4).max(1);
    for r in d.ok.iter().step_by(step) {
        out.extend(cpu_heatmap(&d, r));
        out.extend(reactor_heatmap(&d, r));
    }
    out
}

/// Throughput vs the x variable, one line per series; one plot per panel,
/// all on the same axes.
fn throughput_vs(d: &Drawn, x: &str, series_by: &[String], panel: Option<&str>) -> Vec<Figure> {
    let mut out = Vec::new();
    let (ok, l, shown) = (&d.ok, d.l, &d.shown);
    // Panel (None: one plot) to line to points.
    type Lines = BTreeMap<String, Vec<(f64, f64)>>;
    let mut panels: BTreeMap<Option<String>, Lines> = BTreeMap::new();
    for r in ok.iter() {
        if let Some(v) = variable(r, x) {
            let p = panel.and_then(|p| shown.pair(r, p));
            panels
                .entry(p)
                .or_default()
                .entry(series_key(r, l, series_by, shown))
                .or_default()
                .push((num(&v), r.summary.ops_per_s));
        }
    }
    let points = || panels.values().flat_map(|g| g.values().flatten());
    let mut distinct_x: Vec<u64> = points().map(|p| p.0.to_bits()).collect();
    distinct_x.sort_unstable();
    distinct_x.dedup();
    if distinct_x.len() >= 2 {
        let xs: Vec<f64> = points().map(|p| p.0).collect();
        let ys: Vec<f64> = points().map(|p| p.1).collect();
        let bounds = plot::Bounds::of(&xs, &ys);
        for (p, groups) in &panels {
            let series: Vec<Series> = groups
                .iter()
                .map(|(k, pts)| {
                    let mut pts = pts.clone();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series {
                        name: k.clone(),
                        points: pts,
                    }
                })
                .collect();
            let title = match p {
                Some(p) => format!("Throughput vs {}: {p}", vars::label(x)),
                None => format!("Throughput vs {}", vars::label(x)),
            };
            out.push(Figure {
                svg: plot::lines_within(
                    &title,
                    x_axis(x, &xs),
                    Axis::linear("ops/s", format_rate),
                    &series,
                    (panels.len() > 1).then_some(&bounds),
                ),
                title,
            });
        }
    }
    out
}

/// Latency-response: mean and p99 against the throughput achieved, a line
/// per series and panel.
fn latency_response(d: &Drawn, all_series: &[String]) -> Option<Figure> {
    if d.ok.len() >= 2 && d.ok.iter().any(|r| r.summary.latency.count > 0) {
        let mut by: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        for r in d.ok.iter().filter(|r| r.summary.latency.count > 0) {
            by.entry(series_key(r, d.l, all_series, &d.shown))
                .or_default()
                .push(r);
        }
        let mut series = Vec::new();
        for (k, rs) in by {
            let mut rs = rs;
            rs.sort_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s));
            // Only the statistics each run has (an exec program may give
            // a mean and no percentile).
            series.push(Series {
                name: format!("{k} mean"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("mean"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.mean_ns))
                    .collect(),
            });
            series.push(Series {
                name: format!("{k} p99"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("p99"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.p99_ns as f64))
                    .collect(),
            });
            series.retain(|s| !s.points.is_empty());
        }
        let title = "Latency-response: latency vs throughput achieved".to_string();
        return Some(Figure {
            svg: plot::lines(
                &title,
                Axis::linear("throughput achieved (ops/s)", format_rate),
                Axis::log("latency", format_ns),
                &series,
            ),
            title,
        });
    }
    None
}

/// Latency by percentile, a line per run (at most [`MAX_PER_RUN`]).
fn spectrum(d: &Drawn) -> Option<Figure> {
    let quantiles = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999];
    let spectrum: Vec<Series> =
        d.ok.iter()
            .filter(|r| r.summary.latency.count > 0)
            .take(MAX_PER_RUN)
            .filter_map(|r| {
                // An exec program's statistics without a distribution: no spectrum.
                let h = hist::decode(&r.latency_hist)
                    .ok()
                    .filter(|h| !h.is_empty())?;
                Some(Series {
                    name: d.name(r),
                    points: quantiles
                        .iter()
                        .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                        .collect(),
                })
            })
            .collect();
    if !spectrum.is_empty() {
        let title = "Latency by percentile".to_string();
        return Some(Figure {
            svg: plot::lines(
                &title,
                Axis::log("percentile", |v| {
                    let p = 100.0 * (1.0 - 1.0 / v);
                    let digits = format!("{p:.4}");
                    format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
                }),
                Axis::log("latency", format_ns),
                &spectrum,
            ),
            title,
        });
    }
    None
}

/// Throughput and p99 per second, a line per run (at most [`MAX_PER_RUN`]).
fn per_second(d: &Drawn) -> Vec<Figure> {
    let mut out = Vec::new();
    let per_second = |f: fn(&wirebench_core::result::Interval) -> f64| -> Vec<Series> {
        d.ok.iter()
            .take(MAX_PER_RUN)
            .map(|r| Series {
                name: d.name(r),
                points: r
                    .intervals
                    .iter()
                    .filter(|i| i.ops > 0)
                    // At the middle of the interval it measured.
                    .map(|i| ((i.start_ns + i.end_ns) as f64 / 2e9, f(i)))
                    .filter(|p| p.1 > 0.0)
                    .collect(),
            })
            .filter(|s| s.points.len() >= 2)
            .collect()
    };
    let tput = per_second(|i| i.ops_per_s);
    let warm = warmup(&d.ok);
    if !tput.is_empty() {
        let title = "Throughput per second".to_string();
        out.push(Figure {
            svg: plot::lines_shaded(
                &title,
                Axis::linear("time since the load started (s)", seconds),
                Axis::linear("ops/s", format_rate),
                &tput,
                warm.as_ref(),
            ),
            title,
        });
        let p99 = per_second(|i| i.latency.p99_ns as f64);
        if p99.iter().any(|s| s.points.iter().any(|p| p.1 > 0.0)) {
            let title = "p99 latency per second".to_string();
            out.push(Figure {
                svg: plot::lines_shaded(
                    &title,
                    Axis::linear("time since the load started (s)", seconds),
                    Axis::log("p99 latency", format_ns),
                    &p99,
                    warm.as_ref(),
                ),
                title,
            });
        }
    }
    out
}

/// CPU busy per core over time, client and server cores apart. An exec
/// run whose program printed no per-second lines has them apart
/// (`cpu_seconds`).
fn cpu_heatmap(d: &Drawn, r: &RunResult) -> Option<Figure> {
    type Cores<'a> = (
        u64,
        u64,
        &'a [wirebench_core::result::CoreBusy],
        &'a [wirebench_core::result::CoreBusy],
    );
    let spans: Vec<Cores> = if r
        .intervals
        .iter()
        .any(|i| !i.client_cores.is_empty() || !i.server_cores.is_empty())
    {
        r.intervals
            .iter()
            .map(|i| {
                (
                    i.start_ns,
                    i.end_ns,
                    &i.client_cores[..],
                    &i.server_cores[..],
                )
            })
            .collect()
    } else {
        r.cpu_seconds
            .iter()
            .map(|c| {
                (
                    c.start_ns,
                    c.end_ns,
                    &c.client_cores[..],
                    &c.server_cores[..],
                )
            })
            .collect()
    };
    let n = spans.len();
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    for (who, side) in [("client", 0), ("server", 1)] {
        let mut cores: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (k, sp) in spans.iter().enumerate() {
            for c in if side == 0 { sp.2 } else { sp.3 } {
                cores.entry(c.cpu).or_insert_with(|| vec![0.0; n])[k] = c.busy_pct;
            }
        }
        for (cpu, v) in cores {
            rows.push((format!("{who} cpu {cpu}"), v));
        }
    }
    let edges: Vec<f64> = spans
        .first()
        .map(|s| s.0 as f64 / 1e9)
        .into_iter()
        .chain(spans.iter().map(|s| s.1 as f64 / 1e9))
        .collect();
    if !rows.is_empty() {
        let title = format!("CPU busy per core: {}", d.name(r));
        return Some(Figure {
            svg: plot::heatmap(
                &title,
                "time since the load started (s)",
                &rows,
                &edges,
                warmup(&[r]).as_ref(),
            ),
            title,
        });
    }
    None
}

/// What the program said of its own threads (perf-crimson-msgr's client
/// reactors), second by second.
fn reactor_heatmap(d: &Drawn, r: &RunResult) -> Option<Figure> {
    let threads = r
        .intervals
        .iter()
        .map(|i| i.program_busy_pct.len())
        .max()
        .unwrap_or(0);
    if threads > 0 {
        let rows: Vec<(String, Vec<f64>)> = (0..threads)
            .map(|t| {
                (
                    format!("reactor {t}"),
                    r.intervals
                        .iter()
                        .map(|i| i.program_busy_pct.get(t).copied().unwrap_or(0.0))
                        .collect(),
                )
            })
            .collect();
        let edges: Vec<f64> = r
            .intervals
            .first()
            .map(|i| i.start_ns as f64 / 1e9)
            .into_iter()
            .chain(r.intervals.iter().map(|i| i.end_ns as f64 / 1e9))
            .collect();
        let title = format!(
            "The program's reactor utilisation (its own %): {}",
            d.name(r)
        );
        return Some(Figure {
            svg: plot::heatmap(
                &title,
                "time since its measured phase began (s)",
                &rows,
                &edges,
                None,
            ),
            title,
        });
    }
    None
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
