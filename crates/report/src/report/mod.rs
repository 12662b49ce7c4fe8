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

mod figures;
mod files;
pub use files::ReportFiles;

/// Latency against the rate asked over a ramp's points (its bands and its
/// constant stages), the knee a vertical line.
fn ramp_figure(r: &RunResult, v: &wirebench_core::ramp::RampVerdict) -> crate::export::Figure {
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for s in r.stages.iter().filter(|s| s.conns.is_none()) {
        let points: Vec<(f64, u64, u64)> = if s.bands.is_empty() {
            vec![(s.asked_per_s, s.latency.p50_ns, s.latency.p99_ns)]
        } else {
            s.bands
                .iter()
                .map(|b| (b.asked_per_s, b.latency.p50_ns, b.latency.p99_ns))
                .collect()
        };
        for (x, a, b) in points {
            p50.push((x, a as f64));
            p99.push((x, b as f64));
        }
    }
    let mut series = vec![
        Series {
            name: "p50".into(),
            points: p50,
        },
        Series {
            name: "p99".into(),
            points: p99.clone(),
        },
    ];
    if let Some(k) = &v.knee {
        let (lo, hi) = p99
            .iter()
            .chain(&series[0].points)
            .map(|p| p.1)
            .filter(|y| *y > 0.0)
            .fold((f64::MAX, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
        series.push(Series {
            name: format!("knee {}", format_rate(k.rate_per_s)),
            points: vec![(k.rate_per_s, lo), (k.rate_per_s, hi)],
        });
    }
    let title = format!("Latency vs rate asked over the ramp [{}]", r.run_id);
    crate::export::Figure {
        svg: plot::lines(
            &title,
            Axis::linear("rate asked (ops/s)", format_rate),
            Axis::log("latency", format_ns),
            &series,
        ),
        title,
    }
}
mod names;
mod tables;

pub use self::figures::figures;
use names::*;
pub use names::{NUMERIC, VARIABLES, check_layout, variable, variables};
use tables::*;

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
    /// The runs whose CPU heatmaps are drawn, each named by its point
    /// (`server=crimson clients=2 placement=balanced`: every run with those
    /// values). None: up to four, spread over the set.
    pub heatmaps: Option<Vec<String>>,
}

impl Layout {
    /// This layout, what it leaves open taken from a spec's `[report]`
    /// section (the flags of `report` take precedence).
    pub fn or_plan(self, plan: Option<wirebench_core::index::ReportPlan>) -> Layout {
        let p = plan.unwrap_or_default();
        Layout {
            x: self.x.or(p.x),
            series: self.series.or(p.series),
            labels: self.labels,
            panel: self.panel.or(p.panel),
            heatmaps: self.heatmaps.or(p.heatmaps),
        }
    }
}

pub use crate::export::Figure;

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
    let mut d = d.heading("Hints").push(hints_block(runs));
    for (_, blocks) in TABLES {
        for b in blocks(runs) {
            d = d.push(b);
        }
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
    for b in ENV(runs) {
        d = d.push(b);
    }
    d
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
mod tests;
