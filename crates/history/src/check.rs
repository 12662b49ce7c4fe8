//! `history check`: the change points of each series' metrics, each told
//! as a regression, an improvement, or a change of a metric with no known
//! better direction. Only complete runs count: a failed run's figures are
//! not the server's. A run far from its neighbours on both sides is an
//! outlier, said as such, and not a change (see [`changes`]). A value no
//! run can have (a negative rate or latency, a complete run that
//! completed nothing) is a data error: named, and left out of the series,
//! never turned into a change.

use crate::changes::{self, ChangePoint, Options, Outlier};
use crate::series::{Better, Metric};
use crate::{Entry, by_series};
use serde::Serialize;

/// A change found in a series.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub series: String,
    pub description: String,
    pub metric: &'static str,
    /// The first run after the change.
    pub run_id: String,
    pub started_at: String,
    /// `commit=abc123` when that run has a commit label, else its run id.
    pub at: String,
    #[serde(flatten)]
    pub change: ChangePoint,
    /// Worse in the metric's known direction.
    pub regression: bool,
    /// The line people read: `p99: 412us -> 498us (+20.9%) at commit=abc123 (p=0.0004)`.
    pub line: String,
}

/// One run far from its neighbours in a metric: not a change.
#[derive(Debug, Clone, Serialize)]
pub struct OutlierFinding {
    pub series: String,
    pub metric: &'static str,
    pub run_id: String,
    /// `commit=abc123`, else `run <id>`.
    pub at: String,
    #[serde(flatten)]
    pub outlier: Outlier,
    /// `ops_per_s: commit=c21 one run at 2000/s, 2.0x its neighbours (1000/s): an outlier, not a change`.
    pub line: String,
}

/// A value no run can have, left out of its series.
#[derive(Debug, Clone, Serialize)]
pub struct DataError {
    pub series: String,
    pub run_id: String,
    pub at: String,
    pub metric: &'static str,
    pub value: f64,
    pub why: &'static str,
    pub line: String,
}

/// A series and how many complete runs it has.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub series: String,
    pub description: String,
    pub machine: String,
    pub points: usize,
}

/// What a check found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// The series checked (enough points).
    pub checked: Vec<Checked>,
    /// The series with too few complete runs to check
    /// (`changes::MIN_POINTS`).
    pub too_few: Vec<Checked>,
    #[serde(default)]
    pub outliers: Vec<OutlierFinding>,
    /// Values refused (see the module's overview).
    #[serde(default)]
    pub data_errors: Vec<DataError>,
}

impl Report {
    pub fn regressions(&self) -> usize {
        self.findings.iter().filter(|f| f.regression).count()
    }
}

/// Why a run's value of `m` cannot be: a number, not negative, and no
/// latency or CPU per operation of a run that completed nothing.
fn impossible(e: &Entry, m: Metric, v: f64) -> Option<&'static str> {
    let ops = e.metric(Metric::OpsPerS);
    if !v.is_finite() {
        Some("is not a number")
    } else if v < 0.0 {
        Some("is negative")
    } else if m == Metric::OpsPerS && v == 0.0 {
        Some("is zero: a complete run that completed no operation")
    } else if m != Metric::OpsPerS && m != Metric::Errors && ops == Some(0.0) {
        Some("belongs to a run that completed no operation (a rate of 0/s): it measured nothing")
    } else {
        None
    }
}

/// Where a run is in its series: `commit=abc123`, else `run <id>`.
fn at(e: &Entry) -> String {
    match e.labels.get("commit") {
        Some(commit) => format!("commit={commit}"),
        None => format!("run {}", e.run_id),
    }
}

/// Checks `metrics` in every series of `entries`.
pub fn check(entries: &[Entry], metrics: &[Metric], o: &Options) -> Report {
    let complete: Vec<Entry> = entries
        .iter()
        .filter(|e| e.status == "complete")
        .cloned()
        .collect();
    let mut report = Report::default();
    for (series, runs) in by_series(&complete) {
        let about = Checked {
            series: series.clone(),
            description: runs[0].description.clone(),
            machine: runs[0].machine.clone(),
            points: runs.len(),
        };
        if runs.len() < changes::MIN_POINTS {
            report.too_few.push(about);
            continue;
        }
        for &m in metrics {
            // The runs that measured it (a server observed in some only).
            // Its impossible values are refused by name, and left out.
            let mut xs = Vec::new();
            let mut which: Vec<&Entry> = Vec::new();
            for e in runs.iter().copied() {
                let Some(v) = e.metric(m) else { continue };
                match impossible(e, m, v) {
                    Some(why) => report.data_errors.push(DataError {
                        series: series.clone(),
                        run_id: e.run_id.clone(),
                        at: at(e),
                        metric: m.name(),
                        value: v,
                        why,
                        line: format!(
                            "data error: {} at {}: {} {why}; left out of the check",
                            m.name(),
                            at(e),
                            m.show(v)
                        ),
                    }),
                    None => {
                        xs.push(v);
                        which.push(e);
                    }
                }
            }
            if xs.len() < changes::MIN_POINTS {
                continue;
            }
            let found = changes::analyse(&xs, o);
            for out in found.outliers {
                let e = which[out.index];
                // The last run may be the first of a change: the next
                // runs tell.
                let last = if out.index + 1 == xs.len() {
                    " (yet: it is the last run; a change if the next ones stay there)"
                } else {
                    ""
                };
                let line = format!(
                    "{}: {} one run at {}, {:.1}x its neighbours ({}): an outlier, not a change{last}",
                    m.name(),
                    at(e),
                    m.show(out.value),
                    out.ratio(),
                    m.show(out.neighbours),
                );
                report.outliers.push(OutlierFinding {
                    series: series.clone(),
                    metric: m.name(),
                    run_id: e.run_id.clone(),
                    at: at(e),
                    outlier: out,
                    line,
                });
            }
            for c in found.changes {
                let e = which[c.index];
                let regression = match m.better() {
                    Better::Higher => c.mean_after < c.mean_before,
                    Better::Lower => c.mean_after > c.mean_before,
                };
                let at = at(e);
                let line = format!(
                    "{}: {} -> {} ({:+.1}%) at {at} (p={})",
                    m.name(),
                    m.show(c.mean_before),
                    m.show(c.mean_after),
                    100.0 * c.change(),
                    pvalue(c.pvalue),
                );
                report.findings.push(Finding {
                    series: series.clone(),
                    description: about.description.clone(),
                    metric: m.name(),
                    run_id: e.run_id.clone(),
                    started_at: e.started_at.clone(),
                    at,
                    change: c,
                    regression,
                    line,
                });
            }
        }
        report.checked.push(about);
    }
    report
}

/// `0.0004`, `3e-9`.
fn pvalue(p: f64) -> String {
    if p >= 1e-4 {
        format!("{p:.4}")
    } else {
        format!("{p:.0e}")
    }
}
