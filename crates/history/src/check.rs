//! `history check`: the change points of each series' metrics, each told
//! as a regression, an improvement, or a change of a metric with no known
//! better direction. Only complete runs count: a failed run's figures are
//! not the server's.

use crate::changes::{self, ChangePoint, Options};
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
}

impl Report {
    pub fn regressions(&self) -> usize {
        self.findings.iter().filter(|f| f.regression).count()
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
            let (xs, which): (Vec<f64>, Vec<&Entry>) = runs
                .iter()
                .filter_map(|e| e.metric(m).map(|v| (v, *e)))
                .unzip();
            if xs.len() < changes::MIN_POINTS {
                continue;
            }
            for c in changes::change_points(&xs, o) {
                let e = which[c.index];
                let regression = match m.better() {
                    Better::Higher => c.mean_after < c.mean_before,
                    Better::Lower => c.mean_after > c.mean_before,
                };
                let at = match e.labels.get("commit") {
                    Some(commit) => format!("commit={commit}"),
                    None => format!("run {}", e.run_id),
                };
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
