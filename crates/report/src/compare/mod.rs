//! Comparing variants (each one run, or several repetitions of one spec):
//! per metric, each variant's mean with its 95% confidence interval, its
//! ratio to the first variant, and a verdict that says "faster" or
//! "slower" only when Welch's t-test finds the difference larger than the
//! noise (at 95%); otherwise "same within noise".
//!
//! The noise of a variant comes from its repetitions when it has two or
//! more; a single run's noise comes from its measured per-second values
//! (throughput, latency), which the table says.

use crate::export::{Block, Document, Exporter, MarkdownExporter, Table};
use wirebench_core::result::{Interval, Phase, RunResult, Summary};
use wirebench_core::stats::{Spread, t975};
use wirebench_core::units::whole_usize;

/// The most variants one comparison takes: they are lettered A to Z.
pub const MAX_VARIANTS: usize = 26;

/// The letter of variant `i` (A is the reference).
pub fn letter(i: usize) -> char {
    char::from(b'A' + u8::try_from(i % MAX_VARIANTS).expect("less than 26"))
}

/// A variant: a label and its runs (repetitions).
#[derive(Debug, Clone)]
pub struct Variant {
    pub label: String,
    pub runs: Vec<RunResult>,
}

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

pub struct Metric {
    pub name: &'static str,
    /// The metric in `--fail-if` and JSON: `ops_per_s`, `p99`...
    pub key: &'static str,
    pub unit: &'static str,
    pub better: Better,
    /// Words for a significant difference: (better, worse).
    pub words: (&'static str, &'static str),
    pub of_run: fn(&Summary) -> f64,
    /// The same quantity for one measured second (None: no per-second value).
    pub of_interval: Option<fn(&Interval) -> f64>,
    /// Shown only when a variant has it (S3's time to first byte).
    pub optional: bool,
}

/// The GETs' time to first byte (S3), NaN when the run has none.
fn get_ttfb(s: &Summary, f: fn(&wirebench_core::hist::LatencySummary) -> f64) -> f64 {
    s.by_op
        .get("get")
        .and_then(|o| o.ttfb.as_ref())
        .map_or(f64::NAN, f)
}

/// Time the platform stalled (hiccup meter), in ms per measured second.
fn stall_ms_per_s(s: &Summary) -> f64 {
    match s.hiccup {
        Some(h) if s.measured_ns > 0 => h.lost_s * 1e3 / (s.measured_ns as f64 / 1e9),
        _ => f64::NAN,
    }
}

pub const METRICS: [Metric; 11] = [
    Metric {
        name: "ops/s",
        key: "ops_per_s",
        unit: "/s",
        better: Better::Higher,
        words: ("faster", "slower"),
        of_run: |s| s.ops_per_s,
        of_interval: Some(|i| i.ops_per_s),
        optional: false,
    },
    Metric {
        // Payload both ways: a PUT run's bytes go out, a GET run's come in.
        name: "MiB/s",
        key: "mib_per_s",
        unit: "MiB/s",
        better: Better::Higher,
        words: ("faster", "slower"),
        of_run: |s| s.mib_per_s_in + s.mib_per_s_out,
        of_interval: Some(|i| {
            wirebench_core::units::mib((i.bytes_in + i.bytes_out) as f64 / secs(i))
        }),
        optional: false,
    },
    Metric {
        name: "latency mean",
        key: "mean",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| s.latency.mean_ns,
        of_interval: Some(|i| i.latency.mean_ns),
        optional: false,
    },
    Metric {
        name: "latency p50",
        key: "p50",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| s.latency.p50_ns as f64,
        of_interval: Some(|i| i.latency.p50_ns as f64),
        optional: false,
    },
    Metric {
        name: "latency p99",
        key: "p99",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| s.latency.p99_ns as f64,
        of_interval: Some(|i| i.latency.p99_ns as f64),
        optional: false,
    },
    Metric {
        name: "latency p99.9",
        key: "p999",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| s.latency.p999_ns as f64,
        of_interval: Some(|i| i.latency.p999_ns as f64),
        optional: false,
    },
    Metric {
        name: "client CPU per op",
        key: "client_cpu_per_op",
        unit: "us",
        better: Better::Lower,
        words: ("cheaper", "costlier"),
        of_run: |s| s.client_cpu_us_per_op,
        of_interval: None,
        optional: false,
    },
    Metric {
        name: "server CPU per op",
        key: "server_cpu_per_op",
        unit: "us",
        better: Better::Lower,
        words: ("cheaper", "costlier"),
        of_run: |s| s.server_cpu_us_per_op.unwrap_or(f64::NAN),
        of_interval: None,
        optional: true,
    },
    Metric {
        name: "platform stalls",
        key: "stall_ms_per_s",
        unit: "ms/s",
        better: Better::Lower,
        words: ("quieter platform", "noisier platform"),
        of_run: stall_ms_per_s,
        of_interval: Some(|i| match i.hiccup_lost_ns {
            Some(ns) => ns as f64 / 1e6 / secs(i),
            None => f64::NAN,
        }),
        optional: true,
    },
    Metric {
        name: "GET TTFB mean",
        key: "ttfb_mean",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| get_ttfb(s, |t| t.mean_ns),
        of_interval: None,
        optional: true,
    },
    Metric {
        name: "GET TTFB p99",
        key: "ttfb_p99",
        unit: "ns",
        better: Better::Lower,
        words: ("faster", "slower"),
        of_run: |s| get_ttfb(s, |t| t.p99_ns as f64),
        of_interval: None,
        optional: true,
    },
];

fn secs(i: &Interval) -> f64 {
    (i.end_ns.saturating_sub(i.start_ns) as f64 / 1e9).max(1e-9)
}

/// Where a variant's noise estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    Repetitions,
    Seconds,
    /// One value: no estimate.
    None,
}

/// A variant's figures for one metric.
#[derive(Debug, Clone)]
pub struct Cell {
    pub spread: Spread,
    pub noise: Noise,
    samples: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    Same,
    /// One of the two has no noise estimate.
    Unknown,
    /// The metric has no value (e.g. no latency in stream mode).
    Absent,
}

#[derive(Clone)]
pub struct Row {
    pub metric: &'static Metric,
    /// One per variant (None when the variant has no value).
    pub cells: Vec<Option<Cell>>,
    /// For each variant after the first: ratio to the first, verdict.
    pub against_first: Vec<(Option<f64>, Verdict)>,
}

fn cell(runs: &[RunResult], m: &Metric) -> Option<Cell> {
    let has = |r: &RunResult| {
        // exec: only the statistics the program gave (never its mean for
        // a percentile).
        let no_latency = m.unit == "ns"
            && (r.summary.latency.count == 0
                || (["mean", "p50", "p99", "p999"].contains(&m.key)
                    && !r.summary.has_latency(m.key)));
        let absent = (m.of_run)(&r.summary).is_nan();
        !(no_latency || absent)
    };
    let runs: Vec<&RunResult> = runs.iter().filter(|r| has(r)).collect();
    if runs.is_empty() {
        return None;
    }
    let (samples, noise) = if runs.len() >= 2 {
        (
            runs.iter().map(|r| (m.of_run)(&r.summary)).collect(),
            Noise::Repetitions,
        )
    } else {
        // An exec program's seconds carry its mean latency at most.
        let tool_seconds = runs[0].summary.tool.is_none() || m.unit != "ns" || m.key == "mean";
        let per_second: Vec<f64> = match m.of_interval.filter(|_| tool_seconds) {
            Some(f) => runs[0]
                .intervals
                .iter()
                .filter(|i| i.phase == Phase::Measure && secs(i) >= 0.9 && i.ops > 0)
                .map(f)
                .filter(|v| !v.is_nan())
                .collect(),
            None => vec![],
        };
        if per_second.len() >= 2 {
            (per_second, Noise::Seconds)
        } else {
            (vec![(m.of_run)(&runs[0].summary)], Noise::None)
        }
    };
    // The headline value of a single run is its summary (an exact merge),
    // not the mean of its seconds; the seconds give the noise only.
    let mut spread = Spread::of(&samples)?;
    if noise != Noise::Repetitions {
        spread.mean = (m.of_run)(&runs[0].summary);
    }
    Some(Cell {
        spread,
        noise,
        samples,
    })
}

/// Welch's t-test at 95%: whether the two samples' means differ by more
/// than their noise.
pub fn differ(a: &[f64], b: &[f64]) -> Option<bool> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let var =
        |x: &[f64], m: f64| x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (var(a, ma) / na, var(b, mb) / nb);
    if va + vb == 0.0 {
        return Some(ma != mb);
    }
    let t = (mb - ma) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
    Some(t.abs() > t975(whole_usize(df.floor().max(1.0))))
}

/// The settings in which the variants differ, each with every variant's
/// value (A's first): what a verdict is about. The run's spec is compared
/// key by key (`transport.kind`, `target`, `clients`...), as its first
/// run has it.
pub fn differences(variants: &[Variant]) -> Vec<(String, Vec<String>)> {
    fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let specs: Vec<Vec<(String, String)>> = variants
        .iter()
        .map(|v| {
            let mut out = Vec::new();
            if let Some(r) = v.runs.first() {
                flatten(
                    "",
                    &serde_json::to_value(&r.spec).unwrap_or_default(),
                    &mut out,
                );
            }
            out
        })
        .collect();
    let mut keys: Vec<&String> = specs.iter().flatten().map(|(k, _)| k).collect();
    // The transport, then the target, then the rest by name.
    let rank = |k: &str| match k {
        "transport.kind" => 0,
        _ if k.starts_with("target") => 1,
        _ => 2,
    };
    keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let values: Vec<String> = specs
                .iter()
                .map(|s| {
                    s.iter()
                        .find(|(x, _)| x == k)
                        .map_or("-".to_string(), |(_, v)| v.clone())
                })
                .collect();
            values
                .iter()
                .any(|v| *v != values[0])
                .then(|| (k.clone(), values))
        })
        .collect()
}

/// Why the variants may not be judged against each other, when their runs
/// are of different transports: a verdict across them compares different
/// work (None: one transport).
pub fn transports_differ(variants: &[Variant]) -> Option<String> {
    let kinds: Vec<String> = variants
        .iter()
        .map(|v| {
            v.runs
                .first()
                .map_or("-".into(), |r| r.spec.kind().to_string())
        })
        .collect();
    kinds.iter().any(|k| *k != kinds[0]).then(|| {
        let each: Vec<String> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{} is {k}", letter(i)))
            .collect();
        format!(
            "the variants are of different transports ({}): they do different work, so 'faster' or 'slower' would say nothing of the servers; compare variants of one transport, or add --force to see the figures side by side anyway",
            each.join(", ")
        )
    })
}

/// The variants at `paths`, each labelled by its path (the first is the
/// reference).
pub fn variants_at(
    paths: &[std::path::PathBuf],
) -> Result<Vec<Variant>, crate::inputs::InputError> {
    paths
        .iter()
        .map(|p| {
            Ok(Variant {
                label: p.display().to_string(),
                runs: crate::inputs::runs_at(p)?,
            })
        })
        .collect()
}

/// The hints of every variant's runs, a line each (none: no section).
pub fn hint_lines(variants: &[Variant]) -> Vec<String> {
    let mut out = Vec::new();
    for r in variants.iter().flat_map(|v| &v.runs) {
        for h in crate::hints::of_run(r) {
            out.push(format!("- {} ({}): {}", h.text, r.run_id, h.evidence));
        }
    }
    out
}

/// A difference smaller than this fraction of the reference's mean reads
/// "same within noise" whatever the t-test says: runs of one spec, one
/// after the other, differ by that much from the machine's drift between
/// them, which their repetitions' spread does not show (twins at 486 and
/// 484 ops/s, each +/- 1, read "slower" in a fresh-clone CI run).
pub const MIN_EFFECT: f64 = 0.01;

/// Every metric for every variant, against the first.
pub fn compare(variants: &[Variant]) -> Vec<Row> {
    METRICS
        .iter()
        .filter(|m| {
            !m.optional
                || variants
                    .iter()
                    .any(|v| v.runs.iter().any(|r| !(m.of_run)(&r.summary).is_nan()))
        })
        .map(|m| {
            let cells: Vec<Option<Cell>> = variants.iter().map(|v| cell(&v.runs, m)).collect();
            let against_first = cells
                .iter()
                .skip(1)
                .map(|c| match (&cells[0], c) {
                    (Some(a), Some(b)) => {
                        let ratio = (a.spread.mean != 0.0).then(|| b.spread.mean / a.spread.mean);
                        let small = ratio.is_some_and(|r| (r - 1.0).abs() < MIN_EFFECT);
                        let verdict = match differ(&a.samples, &b.samples) {
                            None => Verdict::Unknown,
                            Some(false) => Verdict::Same,
                            Some(true) if small => Verdict::Same,
                            Some(true) => {
                                let up = b.spread.mean > a.spread.mean;
                                if up == (m.better == Better::Higher) {
                                    Verdict::Better
                                } else {
                                    Verdict::Worse
                                }
                            }
                        };
                        (ratio, verdict)
                    }
                    _ => (None, Verdict::Absent),
                })
                .collect();
            Row {
                metric: m,
                cells,
                against_first,
            }
        })
        .collect()
}

/// A condition of `compare --fail-if`: a metric whose change against the
/// first variant, when beyond the noise, crosses a threshold in %.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub text: String,
    pub key: String,
    /// `<`: fails below the threshold; `>`: above.
    pub below: bool,
    /// The threshold, in % of the first variant (-5 for `<-5%`).
    pub pct: f64,
}

impl Gate {
    /// Parses `ops_per_s<-5%,p99>+10%`.
    pub fn parse_list(text: &str) -> Result<Vec<Gate>, String> {
        let keys: Vec<&str> = METRICS.iter().map(|m| m.key).collect();
        text.split(',')
            .filter(|t| !t.trim().is_empty())
            .map(|t| {
                let t = t.trim();
                let bad = || {
                    format!(
                        "'{t}' is not a condition: write METRIC<-N% or METRIC>+N%, e.g. ops_per_s<-5%,p99>+10% (METRIC: {})",
                        keys.join(", ")
                    )
                };
                let at = t.find(['<', '>']).ok_or_else(bad)?;
                let (key, rest) = (t[..at].trim(), &t[at..]);
                if !keys.contains(&key) {
                    return Err(bad());
                }
                let pct: f64 = rest[1..]
                    .trim()
                    .strip_suffix('%')
                    .ok_or_else(bad)?
                    .trim()
                    .parse()
                    .map_err(|_| bad())?;
                if !pct.is_finite() {
                    return Err(bad());
                }
                Ok(Gate {
                    text: t.to_string(),
                    key: key.to_string(),
                    below: rest.starts_with('<'),
                    pct,
                })
            })
            .collect()
    }
}

/// A condition a variant met: it fails the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Tripped {
    pub gate: String,
    /// The variant's letter (B, C...).
    pub variant: char,
    /// Its change against the first variant, in %.
    pub change_pct: f64,
}

/// The conditions that variants after the first meet with a difference
/// beyond the noise (a "same within noise" never trips a gate).
pub fn tripped(gates: &[Gate], rows: &[Row]) -> Vec<Tripped> {
    let mut out = Vec::new();
    for g in gates {
        let Some(row) = rows.iter().find(|r| r.metric.key == g.key) else {
            continue;
        };
        for (i, (ratio, verdict)) in row.against_first.iter().enumerate() {
            let Some(ratio) = ratio else { continue };
            let change = 100.0 * (ratio - 1.0);
            let beyond = matches!(verdict, Verdict::Better | Verdict::Worse);
            let crosses = if g.below {
                change < g.pct
            } else {
                change > g.pct
            };
            if beyond && crosses {
                out.push(Tripped {
                    gate: g.text.clone(),
                    variant: letter(i + 1),
                    change_pct: change,
                });
            }
        }
    }
    out
}

mod render;
pub use render::{
    NOTE, document, findings, json, json_with_gates, markdown, page, page_with_figures,
};

#[cfg(test)]
mod tests;
