//! A report of runs: the summary and environment tables, the hints, and the
//! plots of the reports wirebench grew from, as a self-contained HTML page
//! (inline SVG, no script, nothing fetched) and as Markdown (the tables).

use crate::export::{Block, Document, Exporter, HtmlExporter, MarkdownExporter, Table};
use crate::hints;
use crate::plot::{self, Axis, Series};
use std::collections::BTreeMap;
use wirebench_core::hist::{self, LatencyHist};
use wirebench_core::result::RunResult;
use wirebench_core::units::{format_ns, format_rate};
use wirebench_core::vars;

/// What to plot throughput against, and what makes a line.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// None: the first of [`NUMERIC`] that varies.
    pub x: Option<String>,
    /// None: every other variable that varies, but those the x decides
    /// (the connections of a sweep over clients).
    pub series: Option<Vec<String>>,
    /// Run id to a label that names its line instead (compare's variants).
    pub labels: BTreeMap<String, String>,
    /// One throughput plot per value of this variable, on shared axes
    /// (small multiples). None: by placement when the lines would
    /// otherwise be split by placement and something else.
    pub panel: Option<String>,
}

/// The variables a report can plot against or split by.
pub const VARIABLES: [&str; 11] = [
    "clients",
    "connections",
    "instances",
    "depth",
    "size",
    "rate",
    "placement",
    "arch",
    "mode",
    "transport",
    "wait",
];

/// The variables throughput can be plotted against, in the order the
/// main one is chosen.
pub const NUMERIC: [&str; 6] = [
    "clients",
    "connections",
    "instances",
    "depth",
    "size",
    "rate",
];

/// Every variable the runs have: the report's own ([`VARIABLES`]), the
/// matrix keys of their sweeps, and any setting of a run's spec
/// ([`vars::SPEC_KEYS`]).
pub fn variables(runs: &[RunResult]) -> Vec<String> {
    names_of(&runs.iter().collect::<Vec<_>>())
}

fn names_of(runs: &[&RunResult]) -> Vec<String> {
    let mut out: Vec<String> = VARIABLES.iter().map(|v| v.to_string()).collect();
    let more = runs
        .iter()
        .flat_map(|r| r.point.iter().map(|(k, _)| k.as_str()))
        .chain(vars::SPEC_KEYS);
    for k in more {
        if !out.iter().any(|v| v == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// Checks a layout against the runs: `--x`, `--series` and `--panel` name
/// variables the runs have (the x one with numbers); the message names the
/// flag and the variables there are.
pub fn check_layout(runs: &[RunResult], l: &Layout) -> Result<(), String> {
    let known = variables(runs);
    let have = |flag: &str, v: &str| -> Result<(), String> {
        if known.iter().any(|k| k == v) {
            return Ok(());
        }
        let all: Vec<&RunResult> = runs.iter().collect();
        let vary = varying(&all);
        Err(format!(
            "{flag} {v}: not a variable of these runs; they vary in {}; any of {} may be named",
            if vary.is_empty() {
                "nothing".to_string()
            } else {
                vary.join(", ")
            },
            known.join(", ")
        ))
    };
    if let Some(x) = &l.x {
        have("--x", x)?;
        let values: Vec<String> = runs.iter().filter_map(|r| variable(r, x)).collect();
        if !NUMERIC.contains(&x.as_str()) && values.iter().any(|v| v.parse::<f64>().is_err()) {
            return Err(format!(
                "--x {x}: its values are not numbers (throughput is plotted against a number): one of {}, or --series {x}",
                NUMERIC.join(", ")
            ));
        }
    }
    for s in l.series.iter().flatten() {
        have("--series", s)?;
    }
    if let Some(p) = &l.panel {
        have("--panel", p)?;
        if l.x.as_deref() == Some(p.as_str()) {
            return Err(format!(
                "--panel {p}: it is the x axis too: take another variable"
            ));
        }
    }
    Ok(())
}

/// A run's value of a variable (None: it has none): one of [`VARIABLES`],
/// a matrix key of its sweep (as the spec named its value), or a setting
/// of its spec.
pub fn variable(r: &RunResult, name: &str) -> Option<String> {
    if !VARIABLES.contains(&name) {
        // The report's words for the shm clients (mt, mp), whatever the
        // spec wrote.
        if name == "clients_as"
            && let Some(v) = vars::spec_value(&r.spec, name)
        {
            return Some(v);
        }
        if let Some((_, v)) = r.point.iter().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        // An exec run's program may say it (reqres_loop's mt|mp).
        let told = |word: &str| r.summary.tool.as_ref()?.words.get(word).cloned();
        return vars::spec_value(&r.spec, name).or_else(|| match name {
            "clients_as" => told("clients"),
            _ => None,
        });
    }
    let s = &r.spec;
    Some(match name {
        "clients" => s.clients.to_string(),
        "connections" => (s.clients * s.conns_per_client).to_string(),
        "instances" => r.merged_from.len().max(1).to_string(),
        "size" => match &s.transport {
            // A program given no --size has none.
            wirebench_core::spec::TransportSpec::Exec(e) => e.size_bytes?.to_string(),
            t => size_label(r).unwrap_or_else(|| t.size_bytes().to_string()),
        },
        "depth" => s.depth.to_string(),
        "rate" => s.rate_per_s?.to_string(),
        "placement" => r.placement.policy.clone()?,
        "arch" => match &s.target {
            wirebench_core::spec::TargetSpec::Embedded { arch, .. } => arch.as_ref()?.to_string(),
            wirebench_core::spec::TargetSpec::External { .. } => "external".into(),
            wirebench_core::spec::TargetSpec::None => return None,
        },
        // The program's own mode (reqres_loop's sync|async|nores), else
        // the transport's.
        "mode" => r
            .summary
            .tool
            .as_ref()
            .and_then(|t| t.words.get("mode").cloned())
            .unwrap_or_else(|| s.transport.mode_name()),
        "transport" => s.kind().to_string(),
        "wait" => s.shm()?.wait.to_string(),
        _ => return None,
    })
}

/// An S3 run's sizes when they are a list or a range (`4KiB,1MiB`,
/// `4KiB..1MiB`), as given; None for one size.
fn size_label(r: &RunResult) -> Option<String> {
    match &r.spec.transport {
        wirebench_core::spec::TransportSpec::S3(s3) => {
            let t = s3.sizes.to_string();
            (t.contains(',') || t.contains("..")).then_some(t)
        }
        _ => None,
    }
}

/// A size as people read it: bytes in binary units, lists and ranges as given.
fn size_text(v: &str) -> String {
    v.parse::<u64>()
        .map_or_else(|_| v.to_string(), wirebench_core::units::format_size)
}

/// How each variable's values read among a set of runs: long ones (two
/// server commands) by short names (`server=perf-crimson-msgr`).
struct Shown {
    short: BTreeMap<(String, String), String>,
}

impl Shown {
    fn of(runs: &[&RunResult]) -> Shown {
        let mut short = BTreeMap::new();
        for v in names_of(runs) {
            let values = values_of(runs, &v);
            for (raw, name) in values.iter().zip(vars::short_values(&values)) {
                if *raw != name {
                    short.insert((v.clone(), raw.clone()), name);
                }
            }
        }
        Shown { short }
    }

    /// A run's value of `v` as shown (sizes with their unit).
    fn value(&self, r: &RunResult, v: &str) -> Option<String> {
        let raw = variable(r, v)?;
        if v == "size" {
            return Some(size_text(&raw));
        }
        Some(self.name(v, raw))
    }

    /// A value of `v` as shown.
    fn name(&self, v: &str, raw: String) -> String {
        self.short
            .get(&(v.to_string(), raw.clone()))
            .cloned()
            .unwrap_or(raw)
    }

    /// `server=crimson`: a variable and a run's value of it.
    fn pair(&self, r: &RunResult, v: &str) -> Option<String> {
        Some(format!("{}={}", vars::label(v), self.value(r, v)?))
    }
}

fn series_key(r: &RunResult, l: &Layout, series: &[String], shown: &Shown) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = series.iter().filter_map(|v| shown.pair(r, v)).collect();
    if parts.is_empty() {
        "all runs".into()
    } else {
        parts.join(" ")
    }
}

/// The axis of a variable: sizes on powers of two (KiB, MiB); counts on
/// powers of two where they are powers of two over 8x or more; else
/// linear.
fn x_axis<'a>(x: &'a str, values: &[f64]) -> Axis<'a> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let pow2 = values.iter().all(|v| {
        *v >= 1.0 && v.fract() == 0.0 && wirebench_core::units::whole(*v).is_power_of_two()
    });
    match x {
        "size" if lo > 0.0 => Axis::pow2("size", |v| {
            wirebench_core::units::format_size(wirebench_core::units::whole(v))
        }),
        "rate" => Axis::linear("rate (ops/s)", format_rate),
        _ if pow2 && hi / lo >= 8.0 => Axis::pow2(x, |v| format!("{v:.0}")),
        _ => Axis::linear(x, |v| format!("{v:.0}")),
    }
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or(0.0)
}

/// The variables whose values differ between `runs`; the connections not
/// when the clients decide them (one count of connections per client).
fn varying(runs: &[&RunResult]) -> Vec<String> {
    let differ = |v: &str| {
        let mut seen: Vec<Option<String>> = runs.iter().map(|r| variable(r, v)).collect();
        seen.sort();
        seen.dedup();
        seen.len() > 1
    };
    let mut per_client: Vec<usize> = runs.iter().map(|r| r.spec.conns_per_client).collect();
    per_client.sort_unstable();
    per_client.dedup();
    let vary: Vec<String> = names_of(runs)
        .into_iter()
        .filter(|v| differ(v))
        .filter(|v| !(v == "connections" && per_client.len() == 1 && differ("clients")))
        // The connections per client say nothing the connections do not.
        .filter(|v| !(v == "conns_per_client" && differ("connections")))
        .collect();
    // A spec key that is one of the report's own variables by another
    // name (an S3 run's workload is its mode) is said once.
    let twin = |k: &str| {
        vary.iter()
            .filter(|v| VARIABLES.contains(&v.as_str()))
            .any(|v| decided_by(runs, v, k) && decided_by(runs, k, v))
    };
    vary.iter()
        .filter(|k| VARIABLES.contains(&k.as_str()) || !twin(k))
        .cloned()
        .collect()
}

/// What throughput is plotted against, what makes its lines and what
/// its panels: the layout's, or chosen from what varies.
struct Resolved {
    x: Option<String>,
    series: Vec<String>,
    panel: Option<String>,
}

fn resolve(l: &Layout, runs: &[&RunResult], vary: &[String]) -> Resolved {
    let x = l.x.clone().or_else(|| {
        NUMERIC
            .iter()
            .find(|v| vary.iter().any(|x| x == *v))
            .map(|v| v.to_string())
    });
    let mut series: Vec<String> = match &l.series {
        Some(s) => s.clone(),
        None => vary
            .iter()
            .filter(|v| Some(*v) != x.as_ref())
            .filter(|v| x.as_ref().is_none_or(|x| !decided_by(runs, x, v)))
            .cloned()
            .collect(),
    };
    // A key of the spec whose values the report's own variables decide
    // (the client command of a sweep over reqres_loop's modes) adds
    // nothing to a line's name.
    if l.series.is_none() {
        let own: Vec<&String> = vary
            .iter()
            .filter(|v| VARIABLES.contains(&v.as_str()) || *v == "clients_as")
            .collect();
        series.retain(|v| {
            VARIABLES.contains(&v.as_str()) || v == "clients_as" || !decided_by_all(runs, &own, v)
        });
    }
    // Lines split by placement and something else read better as a panel
    // per placement (the messenger report's Figure 1.1).
    // So do lines split by three variables or more: a panel per value of
    // the one with the fewest values.
    let panel = l.panel.clone().or_else(|| {
        if l.series.is_some() || series.len() < 2 {
            return None;
        }
        if series.iter().any(|s| s == "placement") {
            return Some("placement".to_string());
        }
        (series.len() >= 3).then(|| {
            series
                .iter()
                .min_by_key(|v| values_of(runs, v).len())
                .cloned()
                .unwrap_or_default()
        })
    });
    if let Some(p) = &panel {
        series.retain(|s| s != p);
    }
    Resolved { x, series, panel }
}

/// Whether each combination of the values of `by` comes with one value of
/// `v` among the runs (and `by` is not empty).
fn decided_by_all(runs: &[&RunResult], by: &[&String], v: &str) -> bool {
    if by.is_empty() {
        return false;
    }
    let mut pairs: Vec<(Vec<Option<String>>, Option<String>)> = runs
        .iter()
        .map(|r| (by.iter().map(|b| variable(r, b)).collect(), variable(r, v)))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs.windows(2).all(|w| w[0].0 != w[1].0)
}

/// Whether each value of `x` comes with one value of `v` among the runs
/// (v is a function of x: connections of clients when each client has
/// one connection).
fn decided_by(runs: &[&RunResult], x: &str, v: &str) -> bool {
    let mut pairs: Vec<(Option<String>, Option<String>)> = runs
        .iter()
        .map(|r| (variable(r, x), variable(r, v)))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs.windows(2).all(|w| w[0].0 != w[1].0)
}

/// A run's name in a legend: its label, or what varies between the runs
/// (`arch=pool depth=16`), or its id when nothing does.
fn run_name(r: &RunResult, l: &Layout, varying: &[String], shown: &Shown) -> String {
    if let Some(label) = l.labels.get(&r.run_id) {
        return label.clone();
    }
    let parts: Vec<String> = varying.iter().filter_map(|v| shown.pair(r, v)).collect();
    if parts.is_empty() {
        r.run_id.clone()
    } else {
        parts.join(" ")
    }
}

pub use crate::export::Figure;

/// Seconds as a tick reads them: `2`, `0.5`.
fn seconds(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The warm-up of the runs as a shaded span (the longest, from 0), if any
/// run had one.
fn warmup(runs: &[&RunResult]) -> Option<plot::Shade> {
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

const MAX_PER_RUN: usize = 8;

/// Every figure the runs allow.
pub fn figures(runs: &[RunResult], l: &Layout) -> Vec<Figure> {
    let mut out = Vec::new();
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    let shown = Shown::of(&ok);
    let Resolved {
        x,
        series: series_by,
        panel,
    } = resolve(l, &ok, &vary);
    // Throughput vs the x variable, one line per series; one plot per
    // panel, all on the same axes.
    if let Some(x) = x.as_deref() {
        // Panel (None: one plot) to line to points.
        type Lines = BTreeMap<String, Vec<(f64, f64)>>;
        let mut panels: BTreeMap<Option<String>, Lines> = BTreeMap::new();
        for r in &ok {
            if let Some(v) = variable(r, x) {
                let p = panel.as_deref().and_then(|p| shown.pair(r, p));
                panels
                    .entry(p)
                    .or_default()
                    .entry(series_key(r, l, &series_by, &shown))
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
    }
    // Latency-response: mean and p99 against the throughput achieved, a
    // line per series and panel.
    let all_series: Vec<String> = panel.iter().chain(&series_by).cloned().collect();
    if ok.len() >= 2 && ok.iter().any(|r| r.summary.latency.count > 0) {
        let mut by: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        for r in ok.iter().filter(|r| r.summary.latency.count > 0) {
            by.entry(series_key(r, l, &all_series, &shown))
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
        out.push(Figure {
            svg: plot::lines(
                &title,
                Axis::linear("throughput achieved (ops/s)", format_rate),
                Axis::log("latency", format_ns),
                &series,
            ),
            title,
        });
    }
    // S3: the time to first byte of every test, in one figure (s3bench's
    // histogram of all tests together).
    if let Some(f) = ttfb_histogram(&ok, l, &vary, &shown) {
        out.push(f);
    }
    // Percentile spectrum per run.
    let quantiles = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999];
    let spectrum: Vec<Series> = ok
        .iter()
        .filter(|r| r.summary.latency.count > 0)
        .take(MAX_PER_RUN)
        .filter_map(|r| {
            // An exec program's statistics without a distribution: no spectrum.
            let h = hist::decode(&r.latency_hist)
                .ok()
                .filter(|h| !h.is_empty())?;
            Some(Series {
                name: run_name(r, l, &vary, &shown),
                points: quantiles
                    .iter()
                    .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                    .collect(),
            })
        })
        .collect();
    if !spectrum.is_empty() {
        let title = "Latency by percentile".to_string();
        out.push(Figure {
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
    // Per-second throughput and p99.
    let per_second = |f: fn(&wirebench_core::result::Interval) -> f64| -> Vec<Series> {
        ok.iter()
            .take(MAX_PER_RUN)
            .map(|r| Series {
                name: run_name(r, l, &vary, &shown),
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
    let warm = warmup(&ok);
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
    // Per-core CPU over time, client and server cores apart: of up to four
    // runs spread over the set. An exec run whose program printed no
    // per-second lines has them apart (`cpu_seconds`).
    let step = ok.len().div_ceil(4).max(1);
    for r in ok.iter().step_by(step) {
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
            let title = format!("CPU busy per core: {}", run_name(r, l, &vary, &shown));
            out.push(Figure {
                svg: plot::heatmap(
                    &title,
                    "time since the load started (s)",
                    &rows,
                    &edges,
                    warmup(std::slice::from_ref(r)).as_ref(),
                ),
                title,
            });
        }
        // What the program said of its own threads (perf-crimson-msgr's
        // client reactors), second by second.
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
                run_name(r, l, &vary, &shown)
            );
            out.push(Figure {
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
    }
    out
}

fn summary_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "transport",
        "mode",
        "size",
        "clients",
        "conns/client",
        "placement",
        "ops/s",
        "MiB/s in",
        "MiB/s out",
        "latency p50",
        "latency p99",
        "latency p99.9",
        "client CPU us/op",
        "stalls",
        "status",
    ]);
    let all: Vec<&RunResult> = runs.iter().collect();
    let shown = Shown::of(&all);
    // S3: the time to first byte, mean and p99 (the S3 report's columns):
    // the reads', or the one operation type's.
    let with_ttfb = runs
        .iter()
        .any(|r| r.summary.by_op.values().any(|o| o.ttfb.is_some()));
    if with_ttfb {
        for (k, h) in ["TTFB mean", "TTFB p99"].into_iter().enumerate() {
            t.head.insert(13 + k, h.to_string());
        }
    }
    let ttfb_cells = |t: Option<&wirebench_core::hist::LatencySummary>| -> Vec<String> {
        match t {
            Some(t) if t.count > 0 => vec![format_ns(t.mean_ns), format_ns(t.p99_ns as f64)],
            _ => vec!["-".into(), "-".into()],
        }
    };
    // A column for each parameter that varies and has none yet (a sweep
    // over arch, instances, depth or the server's command), after the
    // placement.
    let extra: Vec<String> = varying(&all)
        .into_iter()
        .filter(|v| {
            ![
                "clients",
                "connections",
                "conns_per_client",
                "size",
                "placement",
                "mode",
                "transport",
            ]
            .contains(&v.as_str())
        })
        .collect();

    for r in runs {
        let s = &r.summary;
        let lat = |stat: &str, l: &wirebench_core::hist::LatencySummary| {
            if l.count > 0 && s.has_latency(stat) {
                format_ns(match stat {
                    "p50" => l.p50_ns,
                    "p99" => l.p99_ns,
                    _ => l.p999_ns,
                } as f64)
            } else {
                "-".into()
            }
        };
        let mut row = vec![
            match r.merged_from.len() {
                0 | 1 => r.run_id.clone(),
                n => format!("{} +{} instance(s)", r.run_id, n - 1),
            },
            r.spec.kind().to_string(),
            r.spec.transport.mode_name(),
            match &r.spec.transport {
                wirebench_core::spec::TransportSpec::Exec(e) if e.size_bytes.is_none() => {
                    "-".into()
                }
                // A list or a range of sizes, as given.
                wirebench_core::spec::TransportSpec::S3(s3) => s3.sizes.to_string(),
                t => wirebench_core::units::format_size(t.size_bytes()),
            },
            r.spec.clients.to_string(),
            r.spec.conns_per_client.to_string(),
            r.placement.policy.clone().unwrap_or_else(|| "-".into()),
        ];
        row.extend(
            extra
                .iter()
                .map(|v| shown.value(r, v).unwrap_or_else(|| "-".into())),
        );
        row.extend([
            format!("{:.0}", s.ops_per_s),
            format!("{:.3}", s.mib_per_s_in),
            format!("{:.3}", s.mib_per_s_out),
            lat("p50", &s.latency),
            lat("p99", &s.latency),
            lat("p999", &s.latency),
        ]);
        if with_ttfb {
            let t = s
                .by_op
                .get("get")
                .or_else(|| s.by_op.values().next().filter(|_| s.by_op.len() == 1))
                .and_then(|o| o.ttfb.as_ref());
            row.extend(ttfb_cells(t));
        }
        row.extend([
            format!("{:.3}", s.client_cpu_us_per_op),
            s.hiccup.map_or("-".into(), |h| {
                format!(
                    "max {} ({} s)",
                    format_ns(h.max_ns as f64),
                    h.stalled_seconds
                )
            }),
            format!("{:?}", r.status.state).to_lowercase(),
        ]);
        let width = row.len();
        t.rows.push(row);
        // A run of several operation types (S3 mixed): a row per type,
        // under the run's, with that type's figures.
        if s.by_op.len() > 1 {
            for (op, o) in &s.by_op {
                let mut sub = vec![format!("↳ {op}"), String::new(), op.clone()];
                sub.resize(7 + extra.len(), String::new());
                let (mb_in, mb_out) = if o.bytes_in >= o.bytes_out {
                    (o.mib_per_s, 0.0)
                } else {
                    (0.0, o.mib_per_s)
                };
                sub.extend([
                    format!("{:.0}", o.ops_per_s),
                    format!("{mb_in:.3}"),
                    format!("{mb_out:.3}"),
                    lat("p50", &o.latency),
                    lat("p99", &o.latency),
                    lat("p999", &o.latency),
                ]);
                if with_ttfb {
                    sub.extend(ttfb_cells(o.ttfb.as_ref()));
                }
                sub.resize(width, String::new());
                t.rows.push(sub);
            }
        }
    }
    t.left = [1, 2, 6]
        .into_iter()
        .chain(
            (0..extra.len())
                .filter(|k| {
                    let v = extra[*k].as_str();
                    // Words, not numbers: left-aligned.
                    runs.iter()
                        .filter_map(|r| variable(r, v))
                        .any(|x| x.parse::<f64>().is_err())
                })
                .map(|k| 7 + k),
        )
        .chain([15 + extra.len() + if with_ttfb { 2 } else { 0 }])
        .collect();
    for (k, v) in extra.iter().enumerate() {
        t.head.insert(7 + k, vars::label(v).to_string());
    }
    t
}

/// The server side of each run that measured it (embedded or observed):
/// CPU per op, cores actually used, CPU by thread group, threads outside
/// its cpuset, the allocator's share (`flame`), memory and context
/// switches. None when no run measured a server.
fn server_table(runs: &[RunResult]) -> Option<Table> {
    let measured: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.summary.server_cpu_s.is_some())
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "server CPU us/op",
        "cores used (cpuset)",
        "ops/s per core used",
        "CPU by thread group (% of a core)",
        "threads outside the cpuset",
        "allocator share of samples",
        "peak RSS",
        "context switches (vol/invol)",
    ]);
    t.left = vec![4, 5, 6];
    t.rows = measured
        .iter()
        .map(|r| {
            let s = &r.summary;
            let th = s.server_threads.as_ref();
            let dash = || "-".to_string();
            vec![
                r.run_id.clone(),
                s.server_cpu_us_per_op
                    .map_or_else(dash, |v| format!("{v:.2}")),
                s.server_cores_used.map_or_else(dash, |u| {
                    let set = r
                        .placement
                        .server_cpus
                        .as_ref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default();
                    format!("{u:.2}{set}")
                }),
                s.ops_per_core_used.map_or_else(dash, |v| format!("{v:.0}")),
                th.map_or_else(dash, |t| {
                    t.groups
                        .iter()
                        .filter(|g| g.cpu_pct >= 0.5)
                        .take(5)
                        .map(|g| format!("{} {:.0}", g.group, g.cpu_pct))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                th.map_or_else(dash, |t| {
                    if t.outside_cpuset.is_empty() {
                        return "none".into();
                    }
                    t.outside_cpuset
                        .iter()
                        .take(4)
                        .map(|o| format!("{} ({:.2} s)", o.name, o.cpu_s))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                s.server_allocator.as_ref().map_or_else(dash, |a| {
                    let lib = a
                        .top
                        .first()
                        .map(|e| format!(" ({})", e.library))
                        .unwrap_or_default();
                    format!("{:.1}%{lib}", a.share_pct)
                }),
                s.server_peak_rss_bytes
                    .map_or_else(dash, |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64)),
                th.map_or_else(dash, |t| {
                    format!("{} / {}", t.voluntary_switches, t.involuntary_switches)
                }),
            ]
        })
        .collect();
    Some(t)
}

/// Runs against several endpoints: each endpoint's part, and its share of
/// the run's operations (an uneven share points at a slow endpoint). None
/// without such a run.
fn endpoints_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "endpoint",
        "conns",
        "ops/s",
        "share of ops",
        "p50",
        "p99",
        "errors",
        "agents",
    ]);
    t.left = vec![1, 8];
    for r in runs.iter().filter(|r| !r.endpoints.is_empty()) {
        let total = r.endpoints.iter().map(|e| e.ops).sum::<u64>().max(1);
        for e in &r.endpoints {
            t.rows.push(vec![
                r.run_id.clone(),
                e.endpoint.clone(),
                e.connections.to_string(),
                format_rate(e.ops_per_s),
                format!("{:.1}%", e.ops as f64 * 100.0 / total as f64),
                format_ns(e.p50_ns as f64),
                format_ns(e.p99_ns as f64),
                e.errors.to_string(),
                if e.agents.is_empty() {
                    "-".into()
                } else {
                    e.agents.join(", ")
                },
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// Runs made by load agents: each agent's part, its CPU and its clock.
/// None without such a run.
fn agents_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "agent",
        "state",
        "clients",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "schedule lag p99",
        "clock offset (uncertainty)",
    ]);
    t.left = vec![1, 2];
    for r in runs.iter().filter(|r| !r.agents.is_empty()) {
        for a in &r.agents {
            t.rows.push(vec![
                r.run_id.clone(),
                a.agent.clone(),
                format!("{:?}", a.state).to_lowercase(),
                a.clients.to_string(),
                format_rate(a.ops_per_s),
                format_ns(a.p50_ns as f64),
                format_ns(a.p99_ns as f64),
                format!("{:.2}", a.client_cpu_us_per_op),
                a.schedule_lag_p99_ns
                    .map_or_else(|| "-".into(), |l| format_ns(l as f64)),
                format!(
                    "{:+.3} ms (±{:.3} ms)",
                    a.clock_offset_ns as f64 / 1e6,
                    a.clock_uncertainty_ns as f64 / 1e6
                ),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// What an instance kept of its throughput alone, as a verdict: within 5%
/// (one run of each: about this VM's noise) is none.
fn contention(kept: f64) -> &'static str {
    if kept >= 0.95 {
        "no contention"
    } else if kept >= 0.85 {
        "some contention"
    } else {
        "contention"
    }
}

/// Sweep points of several instances side by side: a row per instance
/// (its ops/s, latency, CPU, cpusets) under the aggregate's, and, where
/// each instance also ran alone (`alone = true`), what it kept of that
/// throughput and the contention verdict. None without such a point.
fn instances_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "instance",
        "clients",
        "server CPUs",
        "client CPUs",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "server CPU us/op",
        "alone ops/s",
        "kept",
        "verdict",
    ]);
    t.left = vec![0, 1, 3, 4, 12];
    let opt_ns = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| format_ns(v as f64));
    for r in runs.iter().filter(|r| r.instances.len() > 1) {
        let s = &r.summary;
        let alone: Vec<f64> = r
            .instances
            .iter()
            .filter_map(|i| i.alone_ops_per_s)
            .collect();
        let kept_all =
            (alone.len() == r.instances.len()).then(|| s.ops_per_s / alone.iter().sum::<f64>());
        t.row([
            r.run_id.clone(),
            format!("all {}", r.instances.len()),
            r.spec.clients.to_string(),
            "-".into(),
            "-".into(),
            format_rate(s.ops_per_s),
            opt_ns((s.latency.count > 0 && s.has_latency("p50")).then_some(s.latency.p50_ns)),
            opt_ns((s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns)),
            format!("{:.2}", s.client_cpu_us_per_op),
            s.server_cpu_us_per_op
                .map_or("-".into(), |v| format!("{v:.2}")),
            if kept_all.is_some() {
                format_rate(alone.iter().sum())
            } else {
                "-".into()
            },
            kept_all.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
            kept_all.map_or("-".into(), |k| contention(k).to_string()),
        ]);
        for (k, i) in r.instances.iter().enumerate() {
            let kept = i.kept();
            t.row([
                format!("↳ {}", i.run_id),
                (k + 1).to_string(),
                i.clients.to_string(),
                i.server_cpus.as_ref().map_or("-".into(), |c| c.to_string()),
                i.client_cpus.to_string(),
                format_rate(i.ops_per_s),
                opt_ns(i.p50_ns),
                opt_ns(i.p99_ns),
                format!("{:.2}", i.client_cpu_us_per_op),
                i.server_cpu_us_per_op
                    .map_or("-".into(), |v| format!("{v:.2}")),
                i.alone_ops_per_s.map_or("-".into(), format_rate),
                kept.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
                kept.map_or("-".into(), |k| contention(k).to_string()),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// exec runs: the program, the latency statistics it gave, and how it
/// measured. None without an exec run.
fn program_table(runs: &[RunResult]) -> Option<Table> {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| {
            let t = r.summary.tool.as_ref()?;
            Some(vec![
                r.run_id.clone(),
                t.program.clone(),
                t.parser.clone(),
                if t.histogram {
                    "a histogram (every percentile)".into()
                } else if t.latency_stats.is_empty() {
                    "none".into()
                } else {
                    t.latency_stats.join(", ")
                },
                t.method.join("; "),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "program",
        "parser",
        "latency it gave",
        "how it measured",
    ]);
    t.left = vec![1, 2, 3, 4];
    t.rows = rows;
    Some(t)
}

fn env_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "host",
        "kernel",
        "CPU",
        "build",
        "wirebench",
        "started",
    ]);
    t.left = (1..7).collect();
    t.rows = runs
        .iter()
        .map(|r| {
            let e = &r.env;
            vec![
                r.run_id.clone(),
                e.hostname.clone(),
                e.kernel.clone(),
                e.cpu_model.clone(),
                e.build_profile.clone(),
                format!("{} ({})", e.wirebench_version, e.git_revision),
                r.started_at.clone(),
            ]
        })
        .collect();
    t
}

/// The most tests the TTFB histogram draws.
const MAX_TTFB_TESTS: usize = 40;

/// The share of each run's time-to-first-byte samples in log-spaced bins,
/// one line per run: the reads' TTFB (or the one operation type's).
fn ttfb_histogram(
    runs: &[&RunResult],
    l: &Layout,
    vary: &[String],
    shown: &Shown,
) -> Option<Figure> {
    let hists: Vec<(&RunResult, LatencyHist)> = runs
        .iter()
        .filter_map(|r| {
            let by = &r.summary.by_op;
            let op = by
                .get("get")
                .or_else(|| by.values().next().filter(|_| by.len() == 1))?;
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

/// Reads and writes side by side by size and connections (the S3
/// report's throughput table): each the best run's ops/s and MiB/s, and
/// the R/W ratio. None unless the runs have both.
fn read_write_table(runs: &[RunResult]) -> Option<Table> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let best = |op: &str, size: &(u64, String), conns: usize| {
        all.iter()
            .filter(|c| c.op == op && c.size == *size && c.conns == conns)
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
    };
    if !all.iter().any(|c| c.op == "get") || !all.iter().any(|c| c.op == "put") {
        return None;
    }
    let mut keys: Vec<((u64, String), usize)> = all
        .iter()
        .filter(|c| c.op == "get" || c.op == "put")
        .map(|c| (c.size.clone(), c.conns))
        .collect();
    keys.sort();
    keys.dedup();
    let mut t = Table::new([
        "size",
        "connections",
        "read ops/s",
        "read MiB/s",
        "write ops/s",
        "write MiB/s",
        "R/W ratio",
    ]);
    for (size, conns) in keys {
        let (r, w) = (best("get", &size, conns), best("put", &size, conns));
        let figs = |c: Option<&Cell>| match c {
            Some(c) => [format!("{:.1}", c.ops_per_s), format!("{:.3}", c.mib_per_s)],
            None => ["-".into(), "-".into()],
        };
        let ratio = match (r, w) {
            (Some(r), Some(w)) if w.mib_per_s > 0.0 => format!("{:.2}", r.mib_per_s / w.mib_per_s),
            _ => "-".into(),
        };
        let mut row = vec![size.1.clone(), conns.to_string()];
        row.extend(figs(r));
        row.extend(figs(w));
        row.push(ratio);
        t.row(row);
    }
    Some(t)
}

/// One operation type of one run, as the size x connections table shows it.
struct Cell<'a> {
    op: String,
    /// Bytes, and the label (an S3 list or range as given).
    size: (u64, String),
    conns: usize,
    ops_per_s: f64,
    mib_per_s: f64,
    p99_ns: Option<u64>,
    ttfb: Option<wirebench_core::hist::LatencySummary>,
    run: &'a RunResult,
}

/// A run's cells: one per operation type when it has several (S3 mixed),
/// else one for its mode.
fn cells(r: &RunResult) -> Vec<Cell<'_>> {
    let s = &r.summary;
    let base = |op: String| Cell {
        op,
        size: (
            r.spec.transport.size_bytes(),
            size_label(r).unwrap_or_else(|| {
                wirebench_core::units::format_size(r.spec.transport.size_bytes())
            }),
        ),
        conns: r.spec.connections(),
        ops_per_s: s.ops_per_s,
        mib_per_s: s.mib_per_s_in.max(s.mib_per_s_out),
        p99_ns: (s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns),
        ttfb: s.by_op.get("get").and_then(|o| o.ttfb),
        run: r,
    };
    if s.by_op.len() < 2 {
        return vec![base(r.spec.transport.mode_name())];
    }
    s.by_op
        .iter()
        .map(|(op, o)| Cell {
            ops_per_s: o.ops_per_s,
            mib_per_s: o.mib_per_s,
            p99_ns: (o.latency.count > 0).then_some(o.latency.p99_ns),
            ttfb: o.ttfb,
            ..base(op.clone())
        })
        .collect()
}

/// Throughput and p99 by message (object) size x connections, with the
/// objectives' pass/fail marks: the S3 report's tables, for any transport.
/// One table per operation type (GET and PUT apart), each None unless its
/// runs span two sizes or two connection counts.
fn size_by_clients(runs: &[RunResult]) -> Vec<(String, Table)> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let mut ops: Vec<&str> = all.iter().map(|c| c.op.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    let mut out = Vec::new();
    for op in &ops {
        let here: Vec<&Cell> = all.iter().filter(|c| c.op == *op).collect();
        let mut sizes: Vec<(u64, String)> = here.iter().map(|c| c.size.clone()).collect();
        let mut conns: Vec<usize> = here.iter().map(|c| c.conns).collect();
        sizes.sort_unstable();
        sizes.dedup();
        conns.sort_unstable();
        conns.dedup();
        if sizes.len() < 2 && conns.len() < 2 {
            continue;
        }
        let mut head = vec!["size".to_string()];
        head.extend(conns.iter().map(|c| format!("{c} conn(s)")));
        let rows = sizes
            .iter()
            .map(|size| {
                let mut row = vec![size.1.clone()];
                for &n in &conns {
                    let at: Vec<&&Cell> = here
                        .iter()
                        .filter(|c| c.size == *size && c.conns == n)
                        .collect();
                    let Some(best) = at.iter().max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
                    else {
                        row.push("-".into());
                        continue;
                    };
                    let mut cell = format!("{:.1} MiB/s", best.mib_per_s);
                    if let Some(p99) = best.p99_ns {
                        cell.push_str(&format!(", p99 {}", format_ns(p99 as f64)));
                    }
                    // S3: the reads' time to first byte (the S3 report's TTFB columns).
                    if let Some(t) = &best.ttfb {
                        cell.push_str(&format!(
                            ", TTFB mean {} p99 {}",
                            format_ns(t.mean_ns),
                            format_ns(t.p99_ns as f64)
                        ));
                    }
                    let slos = &best.run.slos;
                    if !slos.is_empty() {
                        let missed: Vec<&str> = slos
                            .iter()
                            .filter(|o| !o.pass)
                            .map(|o| o.slo.as_str())
                            .collect();
                        if missed.is_empty() {
                            cell.push_str(", SLO met");
                        } else {
                            cell.push_str(&format!(", SLO missed: {}", missed.join(" ")));
                        }
                    }
                    if at.len() > 1 {
                        cell.push_str(&format!(" (best of {})", at.len()));
                    }
                    row.push(cell);
                }
                row
            })
            .collect();
        let title = if ops.len() > 1 {
            format!("Throughput and p99 by size and connections: {op}")
        } else {
            "Throughput and p99 by size and connections".to_string()
        };
        out.push((
            title,
            Table {
                head,
                rows,
                left: Vec::new(),
            },
        ));
    }
    out
}

/// The hints as (what, evidence) items, or a line saying there are none.
/// A hint that several runs share is one item naming them (by what varies
/// between them), with the first one's evidence.
fn hints_block(runs: &[RunResult]) -> Block {
    let all: Vec<&RunResult> = runs.iter().collect();
    let vary = varying(&all);
    let shown = Shown::of(&all);
    let l = Layout::default();
    let mut grouped: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut add = |text: String, who: Option<String>, evidence: String| match grouped
        .iter_mut()
        .find(|(t, _, _)| *t == text)
    {
        Some((_, names, _)) => names.extend(who.filter(|w| !names.contains(w))),
        None => grouped.push((text, who.into_iter().collect(), evidence)),
    };
    for r in runs {
        for h in hints::of_run(r) {
            add(h.text, Some(run_name(r, &l, &vary, &shown)), h.evidence);
        }
    }
    for h in hints::of_set(runs) {
        add(h.text, h.run_id, h.evidence);
    }
    if grouped.is_empty() {
        return Block::Text(
            "None: no client- or server-bound run, no busy machine, no server imbalance, no contention, no p99 far above p50."
                .into(),
        );
    }
    Block::List(
        grouped
            .into_iter()
            .map(|(text, names, evidence)| {
                let about = match names.len() {
                    0 => String::new(),
                    1 => format!(" ({})", names[0]),
                    n if n == runs.len() => format!(" (all {n} runs)"),
                    n => format!(" ({n} runs: {})", names.join("; ")),
                };
                let evidence = if names.len() > 1 {
                    format!("{evidence} (the first; the others alike)")
                } else {
                    evidence
                };
                (format!("{text}{about}"), evidence)
            })
            .collect(),
    )
}

/// A variable's values among the runs, in order (numbers by value).
fn values_of(runs: &[&RunResult], v: &str) -> Vec<String> {
    let mut vals: Vec<String> = runs.iter().filter_map(|r| variable(r, v)).collect();
    vals.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    vals.dedup();
    vals
}

/// One paragraph: how many runs, what varied and over which values, what
/// was the same in all.
fn what_varied(runs: &[RunResult]) -> String {
    let all: Vec<&RunResult> = runs.iter().collect();
    let failed = runs
        .iter()
        .filter(|r| r.status.state != wirebench_core::result::RunState::Complete)
        .count();
    let mut text = format!("{} run(s)", runs.len());
    if failed > 0 {
        text.push_str(&format!(", {failed} not complete"));
    }
    let vary = varying(&all);
    let shown = Shown::of(&all);
    if vary.is_empty() {
        text.push_str(", with the same parameters.");
    } else {
        let parts: Vec<String> = vary
            .iter()
            .map(|v| {
                let vals = values_of(&all, v);
                let vals: Vec<String> = if v == "size" {
                    vals.iter().map(|x| size_text(x)).collect()
                } else {
                    vals.into_iter().map(|x| shown.name(v, x)).collect()
                };
                // A list of sizes is one value: quoted among the others.
                let vals: Vec<String> = vals
                    .into_iter()
                    .map(|x| {
                        if x.contains(',') {
                            format!("\"{x}\"")
                        } else {
                            x
                        }
                    })
                    .collect();
                format!("{} ({})", vars::label(v), vals.join(", "))
            })
            .collect();
        text.push_str(&format!(". Varied: {}.", parts.join("; ")));
    }
    let same: Vec<String> = ["transport", "mode", "size", "clients", "placement"]
        .iter()
        .filter(|v| !vary.iter().any(|x| x == *v))
        .filter_map(|v| {
            let vals = values_of(&all, v);
            let one = vals.first()?;
            Some(match *v {
                "size" => format!("size {}", size_text(one)),
                "clients" => format!("{one} client(s)"),
                _ => format!("{v} {one}"),
            })
        })
        .collect();
    if !same.is_empty() {
        text.push_str(&format!(" The same in all: {}.", same.join(", ")));
    }
    text
}

/// The best throughput and the best p99 among the runs, each named by
/// what varies; one run's figures when there is one.
fn best_of(runs: &[RunResult]) -> Vec<(String, String)> {
    let ok: Vec<&RunResult> = runs.iter().filter(|r| r.summary.ops > 0).collect();
    let vary = varying(&ok);
    let l = Layout::default();
    let shown = Shown::of(&ok);
    let name = |r: &RunResult| run_name(r, &l, &vary, &shown);
    let lat = |r: &RunResult| {
        let s = &r.summary;
        ["p50", "p99"]
            .iter()
            .filter(|st| s.latency.count > 0 && s.has_latency(st))
            .map(|st| {
                let v = if *st == "p50" {
                    s.latency.p50_ns
                } else {
                    s.latency.p99_ns
                };
                format!("{st} {}", format_ns(v as f64))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(top) = ok
        .iter()
        .max_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s))
    else {
        return vec![(
            "Nothing measured".into(),
            "no run completed an operation".into(),
        )];
    };
    let with_lat = |r: &RunResult| {
        let l = lat(r);
        if l.is_empty() {
            String::new()
        } else {
            format!(", {l}")
        }
    };
    if ok.len() == 1 {
        return vec![(
            "Throughput".into(),
            format!(
                "{} ops/s{}",
                format_rate(top.summary.ops_per_s),
                with_lat(top)
            ),
        )];
    }
    let mut out = vec![(
        "Highest throughput".into(),
        format!(
            "{} ops/s{} ({})",
            format_rate(top.summary.ops_per_s),
            with_lat(top),
            name(top)
        ),
    )];
    if let Some(low) = ok
        .iter()
        .filter(|r| r.summary.latency.count > 0 && r.summary.has_latency("p99"))
        .min_by_key(|r| r.summary.latency.p99_ns)
    {
        out.push((
            "Lowest p99".into(),
            format!(
                "{} at {} ops/s ({})",
                format_ns(low.summary.latency.p99_ns as f64),
                format_rate(low.summary.ops_per_s),
                name(low)
            ),
        ));
    }
    if let Some(bottom) = ok
        .iter()
        .min_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s))
        .filter(|b| b.run_id != top.run_id)
    {
        out.push((
            "Lowest throughput".into(),
            format!(
                "{} ops/s{} ({})",
                format_rate(bottom.summary.ops_per_s),
                with_lat(bottom),
                name(bottom)
            ),
        ));
    }
    out
}

/// A section added after the figures: a timeline of a traced run, say.
pub struct Section {
    pub title: String,
    /// Preformatted text (a table in fixed-width columns).
    pub text: String,
    pub figures: Vec<Figure>,
}

/// The report: the summary, the size x connections table, the hints, the
/// figures, the sections, the environment.
pub fn document(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> Document {
    // What it found first: what varied, the best figures, the headline
    // plot, the hints; the details after.
    // The throughput plot, or its panels.
    let headline: Vec<usize> = figures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.title.starts_with("Throughput vs"))
        .map(|(i, _)| i)
        .collect();
    let mut d = Document::new(format!("wirebench report: {} run(s)", runs.len()))
        .heading("What it found")
        .text(what_varied(runs))
        .push(Block::List(best_of(runs)));
    if !headline.is_empty() {
        d = d.push(Block::Figures(
            headline.iter().map(|&i| figures[i].clone()).collect(),
        ));
    }
    let rest: Vec<Figure> = figures
        .iter()
        .enumerate()
        .filter(|(i, _)| !headline.contains(i))
        .map(|(_, f)| f.clone())
        .collect();
    let mut summary = summary_table(runs);
    // What every run shares is said once, not in a column each.
    let shared = if runs.len() > 1 {
        summary.drop_constant(
            &[
                "transport",
                "mode",
                "size",
                "clients",
                "conns/client",
                "placement",
            ],
            |row| !row.first().is_some_and(|c| c.starts_with('↳')),
        )
    } else {
        Vec::new()
    };
    let mut d = d
        .heading("Hints")
        .push(hints_block(runs))
        .heading("Summary");
    if shared.iter().any(|(_, v)| v != "-") {
        let parts: Vec<String> = shared
            .iter()
            .filter(|(_, v)| v != "-")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        d = d.text(format!(
            "Every run has {}: not repeated in the table.",
            parts.join(", ")
        ));
    }
    let mut d = d.table(summary);
    for (title, t) in size_by_clients(runs) {
        d = d.heading(title).table(t);
    }
    if let Some(t) = read_write_table(runs) {
        d = d
            .heading("Read and write")
            .text(
                "Reads (GET) and writes (PUT) by size and connections, each the best run's; R/W ratio: read MiB/s over write MiB/s, how much faster reads are (the S3 report's).",
            )
            .table(t);
    }
    if let Some(t) = server_table(runs) {
        d = d.heading("Server").table(t);
    }
    if let Some(t) = endpoints_table(runs) {
        d = d.heading("Endpoints").table(t);
    }
    if let Some(t) = instances_table(runs) {
        d = d
            .heading("Instances")
            .text(
                "Each instance of a point that ran several side by side; kept: its ops/s side by side over its ops/s alone (the same cpusets and clients, the others idle), where the sweep ran each alone (alone = true): within 5% no contention, below 85% contention.",
            )
            .table(t);
    }
    if let Some(t) = agents_table(runs) {
        d = d.heading("Load agents").table(t);
    }
    if let Some(t) = program_table(runs) {
        d = d.heading("Programs (exec): their own figures").table(t);
    }
    if !rest.is_empty() {
        d = d.heading("Figures").push(Block::Figures(rest));
    }
    for sec in sections {
        d = d
            .heading(sec.title.clone())
            .push(Block::Pre(sec.text.clone()))
            .push(Block::Figures(sec.figures.clone()));
    }
    d.heading("Environment").table(env_table(runs))
}

/// The report in Markdown (its figures listed by title).
pub fn markdown(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> String {
    MarkdownExporter.export(&document(runs, figures, sections))
}

/// The report in Markdown with its figures as SVG files in `dir` (as the
/// page links it): the page, and each figure's (file name, SVG).
pub fn markdown_with_figures(
    runs: &[RunResult],
    figures: &[Figure],
    sections: &[Section],
    dir: &str,
) -> (String, Vec<(String, String)>) {
    let doc = document(runs, figures, sections);
    (
        crate::export::MarkdownFiguresExporter {
            dir: dir.to_string(),
        }
        .export(&doc),
        crate::export::figure_files(&doc),
    )
}

/// The report as one self-contained HTML page.
pub fn html(runs: &[RunResult], figures: &[Figure], sections: &[Section]) -> String {
    HtmlExporter.export(&document(runs, figures, sections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture::{interval, sample};

    fn run(id: &str, clients: usize, policy: &str, ops: f64) -> RunResult {
        let mut r = sample();
        r.run_id = id.into();
        r.spec.clients = clients;
        r.placement.policy = Some(policy.into());
        r.summary.ops = 10;
        r.summary.ops_per_s = ops;
        r.intervals = (0..3).map(|k| interval(k, ops, 50_000)).collect();
        r
    }

    /// The messenger report's study: two servers (by command), clients,
    /// two placements; named in the spec or not.
    fn crimson_vs_async(named: bool) -> Vec<RunResult> {
        let servers = [
            (
                "crimson",
                "perf-crimson-msgr --poll-mode --mode=2 --server-addr=v2:127.0.0.1:{port} --cpuset={server_cpus}",
            ),
            (
                "async",
                "taskset -ac {server_cpus} perf-async-msgr --addr=v2:127.0.0.1:{port} --threads={clients}",
            ),
        ];
        let mut out = Vec::new();
        for (k, (name, cmd)) in servers.iter().enumerate() {
            for placement in ["balanced", "separated"] {
                for clients in [1usize, 2] {
                    let spec = serde_json::json!({
                        "transport": "exec",
                        "parser": "crimson-msgr",
                        "client_cmd": "perf-crimson-msgr --mode=1 --server-addr=v2:127.0.0.1:{port}",
                        "server_cmd": cmd,
                        "clients": clients,
                    });
                    let scale = if placement == "separated" { 2.0 } else { 1.0 };
                    let ops = 1000.0 * scale * clients as f64 * (k + 1) as f64;
                    let mut r = measured(
                        &format!("r-{name}-{placement}-{clients}"),
                        &spec.to_string(),
                        ops,
                        50_000,
                    );
                    r.placement.policy = Some(placement.into());
                    if named {
                        r.point = vec![
                            ("server_cmd".into(), name.to_string()),
                            ("clients".into(), clients.to_string()),
                            ("placement".into(), placement.into()),
                        ];
                    }
                    out.push(r);
                }
            }
        }
        out
    }

    #[test]
    fn issue_36_a_sweep_over_server_commands_gives_a_line_per_server_and_a_panel_per_placement() {
        for named in [true, false] {
            let runs = crimson_vs_async(named);
            let figs = figures(&runs, &Layout::default());
            let panels: Vec<&Figure> = figs
                .iter()
                .filter(|f| f.title.starts_with("Throughput vs"))
                .collect();
            let titles: Vec<&str> = panels.iter().map(|f| f.title.as_str()).collect();
            assert_eq!(
                titles,
                [
                    "Throughput vs clients: placement=balanced",
                    "Throughput vs clients: placement=separated"
                ]
            );
            let (crimson, asynch) = if named {
                ("server=crimson", "server=async")
            } else {
                ("server=perf-crimson-msgr", "server=perf-async-msgr")
            };
            for f in &panels {
                let t = texts(&f.svg);
                assert!(t.iter().any(|x| x == crimson), "{named}: {t:?}");
                assert!(t.iter().any(|x| x == asynch), "{named}: {t:?}");
                // Shared axes: the separated panel's top (8k) on both.
                assert!(t.iter().any(|x| x == "8.0k"), "{t:?}");
            }
            let md = markdown(&runs, &figs, &[]);
            assert!(
                md.contains(if named {
                    "Varied: clients (1, 2); placement (balanced, separated); server (async, crimson)."
                } else {
                    "Varied: clients (1, 2); placement (balanced, separated); server (perf-crimson-msgr, perf-async-msgr)."
                }),
                "{md}"
            );
            assert!(md.contains("| server |"), "{md}");
            // One panel per value of any variable, asked for.
            let by_server = figures(
                &runs,
                &Layout {
                    panel: Some("server_cmd".into()),
                    series: Some(vec!["placement".into()]),
                    ..Layout::default()
                },
            );
            assert_eq!(
                by_server
                    .iter()
                    .filter(|f| f.title.starts_with("Throughput vs"))
                    .count(),
                2
            );
        }
        let runs = crimson_vs_async(true);
        let bad = |l: Layout| check_layout(&runs, &l).unwrap_err();
        let e = bad(Layout {
            series: Some(vec!["sever_cmd".into()]),
            ..Layout::default()
        });
        assert!(e.starts_with("--series sever_cmd: not a variable of these runs; they vary in clients, placement, server_cmd"), "{e}");
        let e = bad(Layout {
            x: Some("server_cmd".into()),
            ..Layout::default()
        });
        assert!(
            e.contains("--x server_cmd: its values are not numbers"),
            "{e}"
        );
        check_layout(
            &runs,
            &Layout {
                series: Some(vec!["server_cmd".into(), "client_cmd".into()]),
                panel: Some("placement".into()),
                ..Layout::default()
            },
        )
        .unwrap();
    }

    #[test]
    fn a_sweep_gives_every_figure_and_the_tables() {
        let runs = vec![
            run("r1", 1, "balanced", 1000.0),
            run("r2", 2, "balanced", 1800.0),
            run("r3", 1, "separated", 1200.0),
            run("r4", 2, "separated", 2100.0),
        ];
        let figs = figures(
            &runs,
            &Layout {
                x: Some("clients".into()),
                series: Some(vec!["placement".into()]),
                labels: BTreeMap::new(),
                panel: None,
            },
        );
        let titles: Vec<&str> = figs.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(titles[0], "Throughput vs clients");
        assert!(titles.contains(&"Latency-response: latency vs throughput achieved"));
        assert!(titles.contains(&"Latency by percentile"));
        assert!(titles.contains(&"Throughput per second"));
        assert!(
            figs[0].svg.contains("placement=balanced")
                && figs[0].svg.contains("placement=separated")
        );
        let md = markdown(&runs, &figs, &[]);
        assert!(
            md.contains("| r4 | 2 | separated | 2100 |")
                && md.contains(
                    "Every run has transport msgr, mode echo, size 64B, conns/client 1: not repeated in the table."
                ),
            "{md}"
        );
        assert!(
            md.contains("## Throughput and p99 by size and connections"),
            "{md}"
        );
        // The summary and hints as they read (the environment is this machine's).
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
        let page = html(&runs, &figs, &[]);
        assert_eq!(page.matches("<svg").count(), figs.len());
        assert!(!page.contains("<script"), "the page needs no script");
        assert!(
            !page.contains("http://")
                || page.matches("http://").count()
                    == page.matches("http://www.w3.org/2000/svg").count()
        );
    }

    #[test]
    fn s3_runs_show_the_time_to_first_byte_by_size_and_connections() {
        let s3 = |id: &str, size: u64, ttfb_ms: u64| {
            let mut r = run(id, 4, "balanced", 500.0);
            if let wirebench_core::spec::TransportSpec::Msgr(m) = &mut r.spec.transport {
                m.size_bytes = size;
            }
            let mut h = wirebench_core::hist::new_hist();
            wirebench_core::hist::record(&mut h, ttfb_ms * 1_000_000);
            r.summary.by_op.insert(
                "get".into(),
                wirebench_core::result::OpSummary {
                    ops: 10,
                    ttfb: Some(wirebench_core::hist::LatencySummary::of(&h)),
                    ..Default::default()
                },
            );
            r
        };
        let runs = vec![
            s3("a", 4096, 3),
            s3("b", 1 << 20, 40),
            run("c", 4, "balanced", 1.0),
        ];
        let rows = size_by_clients(&runs).remove(0).1.rows;
        let text = format!("{rows:?}");
        assert!(text.contains("TTFB mean 3.00ms p99 3.00ms"), "{text}");
        assert!(text.contains("TTFB mean 39.99ms p99 40.01ms"), "{text}");
        assert_eq!(
            text.matches("TTFB").count(),
            2,
            "only S3 runs have a TTFB: {text}"
        );
    }

    /// Issue 20's tables: clients and connections apart, MiB/s both ways,
    /// S3 size lists and ranges as given.
    #[test]
    fn the_summary_keeps_clients_and_connections_apart_and_s3_sizes_as_given() {
        let topo = wirebench_core::topo::Topology::with_cpus(
            wirebench_core::topo::CpuList::parse("0-1").unwrap(),
        );
        let spec = |json: &str| {
            serde_json::from_str::<wirebench_core::request::RunRequest>(json)
                .unwrap()
                .check(&topo)
                .unwrap()
                .0
        };
        let mut a = run("list", 1, "balanced", 10.0);
        a.spec = spec(r#"{"transport": "s3", "size": "4KiB,1MiB", "conns_per_client": 4}"#);
        a.summary.mib_per_s_out = 12.5;
        let mut b = run("range", 1, "balanced", 10.0);
        b.spec = spec(r#"{"transport": "s3", "size": "4KiB..1MiB"}"#);
        let md = MarkdownExporter.export(&Document::new("t").table(summary_table(&[a, b])));
        assert!(
            md.contains("| list | s3 | get | 4KiB,1MiB | 1 | 4 | balanced | 10 | 0.000 | 12.500 |"),
            "{md}"
        );
        assert!(
            md.contains("| range | s3 | get | 4KiB..1MiB | 1 | 1 |"),
            "{md}"
        );
    }

    fn spec_of(json: &str) -> wirebench_core::spec::RunSpec {
        let topo = wirebench_core::topo::Topology::with_cpus(
            wirebench_core::topo::CpuList::parse("0-1").unwrap(),
        );
        serde_json::from_str::<wirebench_core::request::RunRequest>(json)
            .unwrap()
            .check(&topo)
            .unwrap()
            .0
    }

    /// Each `<text>` of an SVG.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (_, rest) = t.split_once('>')?;
                Some(rest.split_once("</text>")?.0.trim().to_string())
            })
            .collect()
    }

    /// A run with latencies spread from `lat_ns` up, `ops` of them a second.
    fn measured(id: &str, spec: &str, ops: f64, lat_ns: u64) -> RunResult {
        let mut r = run(id, 1, "balanced", ops);
        r.spec = spec_of(spec);
        r.placement.policy = None;
        let mut h = wirebench_core::hist::new_hist();
        for k in 1..=100 {
            h.saturating_record_n(lat_ns * k / 10, 10);
        }
        r.latency_hist = wirebench_core::hist::encode(&h);
        r.summary.latency = wirebench_core::hist::LatencySummary::of(&h);
        r.summary.ops = 1000;
        r.intervals = (0..3)
            .map(|k| {
                let mut i = interval(k, ops, lat_ns);
                i.start_ns = k * 1_000_000_000;
                i.end_ns = (k + 1) * 1_000_000_000;
                if k == 0 {
                    i.phase = wirebench_core::result::Phase::Warmup;
                }
                i
            })
            .collect();
        r
    }

    /// Issue 20: a sweep over arch x depth x instances. Instances come as
    /// one run each point; the main plot is throughput vs the first numeric
    /// variable that varies, its lines named by the others; no plot repeats
    /// a tick label; the tables read as they did.
    #[test]
    fn a_sweep_over_arch_depth_and_instances_reads_as_it_did() {
        let mut runs = Vec::new();
        let mut n = 0;
        for arch in ["reactor", "pool"] {
            for depth in [1, 16] {
                for instances in [1usize, 2] {
                    let clients = 2 / instances;
                    let parts: Vec<RunResult> = (0..instances)
                        .map(|i| {
                            n += 1;
                            let ops = 1000.0 * depth as f64 / instances as f64
                                * if arch == "pool" { 1.2 } else { 1.0 };
                            let spec = format!(
                                r#"{{"arch": "{arch}", "depth": {depth}, "clients": {clients}, "size": "4KiB"}}"#
                            );
                            measured(&format!("r{n:02}-{i}"), &spec, ops, 10_000 * depth)
                        })
                        .collect();
                    runs.push(wirebench_core::merge::instances(&parts).unwrap());
                }
            }
        }
        let figs = figures(&runs, &Layout::default());
        assert_eq!(figs[0].title, "Throughput vs instances");
        let legend: Vec<String> = texts(&figs[0].svg)
            .into_iter()
            .filter(|t| t.contains('='))
            .collect();
        assert_eq!(
            legend,
            [
                "depth=1 arch=pool",
                "depth=1 arch=reactor",
                "depth=16 arch=pool",
                "depth=16 arch=reactor"
            ]
        );
        for f in &figs {
            let mut t = texts(&f.svg);
            let n = t.len();
            t.sort();
            t.dedup();
            assert_eq!(t.len(), n, "{}: a text repeats: {t:?}", f.title);
        }
        let spectrum = figs
            .iter()
            .find(|f| f.title == "Latency by percentile")
            .unwrap();
        let ticks = texts(&spectrum.svg);
        assert!(ticks.iter().any(|t| t.ends_with("us")) && ticks.iter().any(|t| t.ends_with('%')));
        // The warm-up shaded where time runs.
        let per_second = figs
            .iter()
            .find(|f| f.title == "Throughput per second")
            .unwrap();
        assert!(texts(&per_second.svg).contains(&"warm-up (not measured)".to_string()));
        let md = markdown(&runs, &figs, &[]);
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
    }

    /// Issue 20: S3 runs of size lists and mixed operations: sizes as
    /// given, a row per operation type under each mixed run, and the size x
    /// connections tables apart per operation type.
    #[test]
    fn s3_sizes_and_mixed_operations_read_as_they_did() {
        let op = |ops: u64, mb: f64, lat_ns: u64, inbound: bool| {
            let mut h = wirebench_core::hist::new_hist();
            h.saturating_record_n(lat_ns, ops);
            wirebench_core::result::OpSummary {
                ops,
                ops_per_s: ops as f64 / 2.0,
                mib_per_s: mb,
                bytes_per_s: mb * 1_048_576.0,
                bytes_in: if inbound { ops * 4096 } else { 0 },
                bytes_out: if inbound { 0 } else { ops * 4096 },
                latency: wirebench_core::hist::LatencySummary::of(&h),
                latency_hist: wirebench_core::hist::encode(&h),
                ..Default::default()
            }
        };
        let mut runs = Vec::new();
        for (k, (size, conns)) in [("4KiB,1MiB", 1), ("4KiB,1MiB", 4), ("4KiB..1MiB", 4)]
            .into_iter()
            .enumerate()
        {
            let spec = format!(
                r#"{{"transport": "s3", "workload": "mixed", "mix": "get=70,put=30", "size": "{size}", "conns_per_client": {conns}}}"#
            );
            let mut r = measured(&format!("s3-{k}"), &spec, 100.0 * conns as f64, 2_000_000);
            r.summary.mib_per_s_in = 7.0 * conns as f64;
            r.summary.mib_per_s_out = 3.0 * conns as f64;
            r.summary.by_op.insert(
                "get".into(),
                op(70 * conns, 7.0 * conns as f64, 2_000_000, true),
            );
            r.summary.by_op.insert(
                "put".into(),
                op(30 * conns, 3.0 * conns as f64, 9_000_000, false),
            );
            runs.push(r);
        }
        let md = MarkdownExporter.export(&document(&runs, &[], &[]));
        // The operation under its run, in the mode column (kept for it).
        assert!(md.contains("| ↳ put | put |  |  | 15 |"), "{md}");
        assert!(
            md.contains("## Throughput and p99 by size and connections: get"),
            "{md}"
        );
        assert!(
            md.contains("## Throughput and p99 by size and connections: put"),
            "{md}"
        );
        let tables = md.split("## Environment").next().unwrap();
        insta::assert_snapshot!(tables);
    }
}
