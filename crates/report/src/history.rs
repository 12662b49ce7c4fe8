//! The history of a results directory as people and tools read it: the
//! runs and series (`history list`), what `history check` found (lines, a
//! JUnit report), the page of a metric over commits with its change points
//! (`report --history`), and the series exported for Apache Otava (CSV) and
//! Bencher (BMF JSON).

use crate::export::{Block, Document, Figure, Table};
use crate::junit::{Case, Outcome, Suite};
use crate::plot::Axis;
use crate::plot::history::{Change, Run, history};
use std::collections::BTreeSet;
use wirebench_history::changes::{self, Options};
use wirebench_history::check::{Finding, Report};
use wirebench_history::series::Metric;
use wirebench_history::{Entry, by_series};

/// A series' id as shown: its first 8 hex digits (a `--where series=`
/// prefix finds it).
pub fn short(series: &str) -> &str {
    &series[..series.len().min(8)]
}

/// What the x axis of a run says: its commit (12 digits at most), else its
/// start date and time.
fn run_label(e: &Entry) -> String {
    match e.labels.get("commit") {
        Some(c) => c.chars().take(12).collect(),
        None => e
            .started_at
            .get(5..16)
            .unwrap_or(&e.started_at)
            .replace('T', " "),
    }
}

fn labels(e: &Entry) -> String {
    e.labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn cell(e: &Entry, m: Metric) -> String {
    e.metric(m).map(|v| m.show(v)).unwrap_or_else(|| "-".into())
}

/// `history list`: a row per run, oldest first.
pub fn runs_table(entries: &[Entry]) -> Table {
    let mut t = Table::new([
        "started", "run", "series", "labels", "status", "ops/s", "p50", "p99",
    ]);
    t.left = vec![1, 2, 3, 4];
    for e in entries {
        t.row([
            e.started_at.clone(),
            e.run_id.clone(),
            short(&e.series).to_string(),
            labels(e),
            e.status.clone(),
            cell(e, Metric::OpsPerS),
            cell(e, Metric::P50),
            cell(e, Metric::P99),
        ]);
    }
    t
}

/// `history list --series`: a row per series.
pub fn series_table(entries: &[Entry]) -> Table {
    let mut t = Table::new(["series", "runs", "first", "last", "what", "machine"]);
    t.left = vec![4, 5];
    for (id, runs) in by_series(entries) {
        t.row([
            short(&id).to_string(),
            runs.len().to_string(),
            runs[0].started_at.clone(),
            runs[runs.len() - 1].started_at.clone(),
            runs[0].description.clone(),
            runs[0].machine.clone(),
        ]);
    }
    t
}

/// `history check`'s lines: each series checked, its change points, and
/// the series with too few runs.
pub fn check_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for s in &r.checked {
        out.push(format!(
            "series {} {} ({} complete runs, {})",
            short(&s.series),
            s.description,
            s.points,
            s.machine
        ));
        let found: Vec<&Finding> = r.findings.iter().filter(|f| f.series == s.series).collect();
        if found.is_empty() {
            out.push("  no change point".into());
        }
        for f in found {
            let what = if f.regression { "REGRESSION" } else { "" };
            out.push(format!("  {} {what}", f.line).trim_end().to_string());
        }
        for o in r.outliers.iter().filter(|o| o.series == s.series) {
            out.push(format!("  {}", o.line));
        }
        for d in r.data_errors.iter().filter(|d| d.series == s.series) {
            out.push(format!("  {}", d.line));
        }
    }
    for s in &r.too_few {
        out.push(format!(
            "series {} {}: {} complete run(s), too few to check (at least {})",
            short(&s.series),
            s.description,
            s.points,
            changes::MIN_POINTS
        ));
    }
    out
}

/// `history check --junit`: a suite per series, a case per metric checked
/// with no change, one per change point (a regression fails), and a
/// skipped case for a series with too few runs.
pub fn check_junit(r: &Report, metrics: &[Metric]) -> Vec<Suite> {
    let name = |series: &str, what: &str| format!("{what} [{}]", short(series));
    let mut suites = Vec::new();
    for s in &r.checked {
        let mut cases = Vec::new();
        for m in metrics {
            let found: Vec<&Finding> = r
                .findings
                .iter()
                .filter(|f| f.series == s.series && f.metric == m.name())
                .collect();
            if found.is_empty() {
                cases.push(Case {
                    name: format!("{}: no change point in {} runs", m.name(), s.points),
                    outcome: Outcome::Passed,
                    output: None,
                });
            }
            for f in found {
                cases.push(Case {
                    name: format!("{} at {}", m.name(), f.at),
                    outcome: if f.regression {
                        Outcome::Failed {
                            message: f.line.clone(),
                            details: format!(
                                "{}\nseries {} ({})\nfirst run after the change: {} ({})",
                                f.line, s.series, s.machine, f.run_id, f.started_at
                            ),
                        }
                    } else {
                        Outcome::Passed
                    },
                    output: Some(f.line.clone()),
                });
            }
        }
        // A value no run can have fails: the history needs mending.
        for d in r.data_errors.iter().filter(|d| d.series == s.series) {
            cases.push(Case {
                name: format!("{} data at {}", d.metric, d.at),
                outcome: Outcome::Failed {
                    message: d.line.clone(),
                    details: format!("{}\nrun {}", d.line, d.run_id),
                },
                output: None,
            });
        }
        suites.push(Suite {
            name: name(&s.series, &s.description),
            cases,
        });
    }
    for s in &r.too_few {
        suites.push(Suite {
            name: name(&s.series, &s.description),
            cases: vec![Case {
                name: "change points".into(),
                outcome: Outcome::Skipped(format!(
                    "{} complete run(s): at least {} are needed",
                    s.points,
                    changes::MIN_POINTS
                )),
                output: None,
            }],
        });
    }
    suites
}

/// `report --history`: per series, each of `metrics` over its complete
/// runs with its change points, the list of the changes, and the runs.
pub fn page(entries: &[Entry], metrics: &[Metric], o: &Options) -> Document {
    let mut doc = Document::new("History").text(format!(
        "Each series is the runs of one benchmark (same settings) on one machine, oldest first. \
         The green lines are the mean between change points; a dashed line is a change point \
         (orange: worse, blue: better), found by E-Divisive means with Student's t-test \
         (p <= {}, a change of at least {:.0}%), as Apache Otava finds them, among the runs that \
         are not outliers (one run far from its neighbours on both sides, listed as such).",
        o.pvalue,
        100.0 * o.min_magnitude
    ));
    let complete: Vec<Entry> = entries
        .iter()
        .filter(|e| e.status == "complete")
        .cloned()
        .collect();
    for (id, runs) in by_series(&complete) {
        let owned: Vec<Entry> = runs.iter().map(|e| (*e).clone()).collect();
        let report = wirebench_history::check::check(&owned, metrics, o);
        let by_commit = runs.iter().all(|e| e.labels.contains_key("commit"));
        let mut figures = Vec::new();
        for &metric in metrics {
            let measured: Vec<&Entry> = runs
                .iter()
                .copied()
                .filter(|e| e.metric(metric).is_some())
                .collect();
            if measured.is_empty() {
                continue;
            }
            let plotted: Vec<Run> = measured
                .iter()
                .map(|e| Run {
                    value: e.metric(metric).unwrap_or(f64::NAN),
                    label: run_label(e),
                    detail: format!("{} {}", e.run_id, labels(e)).trim_end().to_string(),
                })
                .collect();
            let marks: Vec<Change> = report
                .findings
                .iter()
                .filter(|f| f.metric == metric.name())
                .filter_map(|f| {
                    Some(Change {
                        at: measured.iter().position(|e| e.run_id == f.run_id)?,
                        label: format!("{:+.1}% at {}", 100.0 * f.change.change(), f.at),
                        worse: f.regression,
                    })
                })
                .collect();
            let title = format!(
                "{} of {} [{}]",
                metric.name(),
                runs[0].description,
                short(&id)
            );
            let svg = history(
                &title,
                Axis::linear(unit(metric), fmt_of(metric)),
                if by_commit {
                    "commit (oldest first)"
                } else {
                    "run started (oldest first)"
                },
                &plotted,
                &marks,
            );
            figures.push(Figure { title, svg });
        }
        doc = doc
            .heading(format!("{} [{}]", runs[0].description, short(&id)))
            .text(format!(
                "{} complete runs on {}.",
                runs.len(),
                runs[0].machine
            ));
        let lines: Vec<(String, String)> = report
            .findings
            .iter()
            .map(|f| {
                let kind = if f.regression { "regression" } else { "change" };
                (kind.to_string(), f.line.clone())
            })
            .chain(
                report
                    .outliers
                    .iter()
                    .map(|o| ("outlier".to_string(), o.line.clone())),
            )
            .chain(
                report
                    .data_errors
                    .iter()
                    .map(|d| ("data error".to_string(), d.line.clone())),
            )
            .collect();
        doc = if lines.is_empty() && !report.checked.is_empty() {
            doc.text("No change point.")
        } else if lines.is_empty() {
            doc.text(format!(
                "Too few runs to look for change points (at least {}).",
                changes::MIN_POINTS
            ))
        } else {
            doc.push(Block::List(lines))
        };
        doc = doc.push(Block::Figures(figures)).table(runs_table(&owned));
    }
    doc
}

fn unit(m: Metric) -> &'static str {
    match m {
        Metric::OpsPerS => "ops/s",
        Metric::P50 => "p50 (us)",
        Metric::P99 => "p99 (us)",
        Metric::P999 => "p99.9 (us)",
        Metric::CpuPerOp => "client CPU per op (us)",
        Metric::ServerCpuPerOp => "server CPU per op (us)",
        Metric::Errors => "errors",
    }
}

fn fmt_of(m: Metric) -> fn(f64) -> String {
    match m {
        Metric::OpsPerS => |v| {
            if v >= 10_000.0 {
                format!("{:.0}k", v / 1e3)
            } else {
                format!("{v:.0}")
            }
        },
        Metric::CpuPerOp | Metric::ServerCpuPerOp => |v| format!("{v:.2}"),
        _ => |v| format!("{v:.0}"),
    }
}

/// The runs as Apache Otava's CSV reads them: a time column, the labels as
/// attributes (commit first), then a column per metric; one file may hold
/// several series (the `series` column tells them apart).
pub fn otava_csv(entries: &[Entry]) -> String {
    let keys: BTreeSet<&str> = entries
        .iter()
        .flat_map(|e| e.labels.keys().map(String::as_str))
        .filter(|k| *k != "commit")
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head = vec!["time".to_string(), "commit".into(), "series".into()];
    // A label named as a fixed or metric column (`p99`, `time`) would give
    // two columns of one name: it is `label.p99` (and so on, until unique).
    let fixed: BTreeSet<String> = head
        .iter()
        .cloned()
        .chain(Metric::ALL.iter().map(|m| m.name().to_string()))
        .collect();
    let mut taken = fixed.clone();
    for k in &keys {
        let mut name = k.to_string();
        while taken.contains(&name) {
            name = format!("label.{name}");
        }
        taken.insert(name.clone());
        head.push(name);
    }
    head.extend(Metric::ALL.iter().map(|m| m.name().to_string()));
    let _ = w.write_record(
        head.iter()
            .map(|c| wirebench_core::text::visible(c).into_owned()),
    );
    for e in entries.iter().filter(|e| e.status == "complete") {
        let mut row = vec![
            e.started_at.clone(),
            e.labels.get("commit").cloned().unwrap_or_default(),
            e.series.clone(),
        ];
        row.extend(
            keys.iter()
                .map(|k| e.labels.get(*k).cloned().unwrap_or_default()),
        );
        row.extend(
            Metric::ALL
                .iter()
                .map(|m| e.metric(*m).map(|v| v.to_string()).unwrap_or_default()),
        );
        // Labels are a peer's text: shown, never obeyed.
        let _ = w.write_record(
            row.iter()
                .map(|c| wirebench_core::text::visible(c).into_owned()),
        );
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The latest complete run of each series in Bencher's Metric Format: a
/// benchmark per series, its measures `throughput` (ops/s) and
/// `latency`, `p99-latency`, `p99-9-latency` (nanoseconds), what
/// `bencher run --adapter json` takes after a CI job's runs.
pub fn bmf(entries: &[Entry]) -> serde_json::Value {
    let complete: Vec<Entry> = entries
        .iter()
        .filter(|e| e.status == "complete")
        .cloned()
        .collect();
    let mut out = serde_json::Map::new();
    for (id, runs) in by_series(&complete) {
        let e = runs[runs.len() - 1];
        let mut measures = serde_json::Map::new();
        let ns = |m: Metric| e.metric(m).map(|us| us * 1e3);
        for (slug, v) in [
            ("throughput", e.metric(Metric::OpsPerS)),
            ("latency", ns(Metric::P50)),
            ("p99-latency", ns(Metric::P99)),
            ("p99-9-latency", ns(Metric::P999)),
        ] {
            if let Some(v) = v {
                measures.insert(slug.into(), serde_json::json!({ "value": v }));
            }
        }
        out.insert(
            format!("{} [{}]", e.description, short(&id)),
            serde_json::Value::Object(measures),
        );
    }
    serde_json::Value::Object(out)
}

/// A table alone in Markdown (the document's empty title left out).
pub fn markdown(table: Table) -> String {
    use crate::export::Exporter;
    let md = crate::export::MarkdownExporter.export(&Document::new("").table(table));
    md.trim_start_matches('#').trim().to_string()
}

/// `history show` of a series: its id, description, machine, settings and
/// runs.
pub fn series_text(runs: &[Entry]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    format!(
        "series {}: {}\nmachine: {}\nsettings: {}\n{}",
        first.series,
        first.description,
        first.machine,
        first.settings,
        markdown(runs_table(runs))
    )
}

/// What `history check` ends with on stderr: the regressions and where,
/// or that nothing had enough runs to be checked (None: neither).
pub fn check_ending(r: &Report) -> Option<String> {
    let regressions = r.regressions();
    if regressions > 0 {
        let series: std::collections::BTreeSet<&String> = r
            .findings
            .iter()
            .filter(|f| f.regression)
            .map(|f| &f.series)
            .collect();
        return Some(format!(
            "{regressions} regression(s), in {} of the {} series checked",
            series.len(),
            r.checked.len()
        ));
    }
    if !r.data_errors.is_empty() {
        return Some(format!(
            "{} value(s) no run can have, left out of the check (see 'data error' above): mend or remove those runs",
            r.data_errors.len()
        ));
    }
    r.checked.is_empty().then(|| {
        format!(
            "no series has {} complete runs or more: nothing was checked",
            wirebench_history::changes::MIN_POINTS
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: labels named `ops_per_s`, `p99` or `time` gave
    /// history.csv two columns of one name (Otava reads one of them). Each
    /// column's name is now unique, the label's under `label.`.
    #[test]
    fn issue_46_labels_named_as_columns_get_columns_of_their_own() {
        let labels: std::collections::BTreeMap<String, String> = [
            ("commit", "c1"),
            ("ops_per_s", "label-ops"),
            ("p99", "label-p99"),
            ("label.p99", "taken-too"),
            ("time", "label-time"),
            ("host", "a"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let e = Entry {
            run_id: "r1".into(),
            kind: "run".into(),
            dir: "/nonexistent".into(),
            started_at: "2026-11-29T00:00:00Z".into(),
            series: "s1".into(),
            settings: String::new(),
            machine: String::new(),
            description: String::new(),
            transport: "msgr".into(),
            status: "complete".into(),
            labels,
            metrics: [("ops_per_s".to_string(), 1000.0), ("p99".to_string(), 5e5)]
                .into_iter()
                .collect(),
        };
        let csv = otava_csv(&[e]);
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        let unique: BTreeSet<&String> = head.iter().collect();
        assert_eq!(unique.len(), head.len(), "{head:?}");
        let row: Vec<String> = rd
            .records()
            .next()
            .unwrap()
            .unwrap()
            .iter()
            .map(String::from)
            .collect();
        let at = |name: &str| {
            row[head
                .iter()
                .position(|h| h == name)
                .unwrap_or_else(|| panic!("{name}: {head:?}"))]
            .clone()
        };
        assert_eq!(at("ops_per_s"), "1000");
        assert_eq!(at("label.ops_per_s"), "label-ops");
        assert_eq!(at("label.p99"), "taken-too");
        assert_eq!(at("label.label.p99"), "label-p99");
        assert_eq!(at("label.time"), "label-time");
        assert_eq!(at("host"), "a");
        assert_eq!(at("commit"), "c1");
    }
}
