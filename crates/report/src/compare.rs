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

/// The transports of the variants when they are not all the same: a
/// verdict across them compares different work.
pub fn transports_differ(variants: &[Variant]) -> Option<Vec<String>> {
    let kinds: Vec<String> = variants
        .iter()
        .map(|v| {
            v.runs
                .first()
                .map_or("-".into(), |r| r.spec.kind().to_string())
        })
        .collect();
    kinds.iter().any(|k| *k != kinds[0]).then_some(kinds)
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

/// The comparison as JSON: the variants, then per metric each variant's
/// mean, 95% CI and noise, and its ratio and verdict against the first.
pub fn json(variants: &[Variant], rows: &[Row]) -> serde_json::Value {
    let verdict = |v: Verdict, m: &Metric| match v {
        Verdict::Better => m.words.0,
        Verdict::Worse => m.words.1,
        Verdict::Same => "same within noise",
        Verdict::Unknown => "no noise estimate",
        Verdict::Absent => "absent",
    };
    let cell = |c: &Option<Cell>| match c {
        None => serde_json::Value::Null,
        Some(c) => serde_json::json!({
            "mean": c.spread.mean,
            "ci95": c.spread.ci95,
            "n": c.spread.n,
            "noise": match c.noise {
                Noise::Repetitions => "repetitions",
                Noise::Seconds => "seconds",
                Noise::None => "none",
            },
        }),
    };
    serde_json::json!({
        "variants": variants.iter().enumerate().map(|(i, v)| serde_json::json!({
            "letter": letter(i).to_string(),
            "label": v.label,
            "runs": v.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "metrics": rows.iter().map(|r| serde_json::json!({
            "metric": r.metric.key,
            "name": r.metric.name,
            "unit": r.metric.unit,
            "better": match r.metric.better { Better::Higher => "higher", Better::Lower => "lower" },
            "values": r.cells.iter().map(cell).collect::<Vec<_>>(),
            "against_first": r.against_first.iter().map(|(ratio, v)| serde_json::json!({
                "ratio": ratio,
                "verdict": verdict(*v, r.metric),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "note": NOTE,
    })
}

fn value(x: f64, unit: &str) -> String {
    match unit {
        "ns" => wirebench_core::units::format_ns(x),
        "/s" => wirebench_core::units::format_rate(x),
        _ => format!("{x:.3}"),
    }
}

fn cell_text(c: &Option<Cell>, unit: &str) -> String {
    match c {
        None => "-".into(),
        Some(c) => {
            let s = &c.spread;
            let unit_s = if unit == "MiB/s" || unit == "us" || unit == "ms/s" {
                format!(" {unit}")
            } else {
                String::new()
            };
            match c.noise {
                Noise::None => format!("{}{unit_s}", value(s.mean, unit)),
                Noise::Repetitions => format!(
                    "{} ± {}{unit_s} (n={})",
                    value(s.mean, unit),
                    value(s.ci95, unit),
                    s.n
                ),
                Noise::Seconds => format!(
                    "{} ± {}{unit_s} ({} s)",
                    value(s.mean, unit),
                    value(s.ci95, unit),
                    s.n
                ),
            }
        }
    }
}

/// What ± and the verdicts mean, under every comparison.
pub const NOTE: &str = "± is the 95% confidence interval of the mean: over repetitions (n=), or over the measured seconds of a single run (s). A verdict other than \"same within noise\" means Welch's t-test found the difference larger than that noise, and it is 1% or more.";

/// The comparison: the variants (A is the reference), the table of
/// metrics with each variant's ratio to A and verdict, and the note.
pub fn document(variants: &[Variant], rows: &[Row]) -> Document {
    let legend = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let what = if i == 0 { " (the reference)" } else { "" };
            (
                letter(i).to_string(),
                format!("{}{what}, {} run(s)", v.label, v.runs.len()),
            )
        })
        .collect();
    let mut head = vec!["metric".to_string(), "A".to_string()];
    for i in 1..variants.len() {
        let l = letter(i);
        head.extend([l.to_string(), format!("{l}/A"), format!("{l} vs A")]);
    }
    let mut t = Table::new(head);
    t.left = (1..variants.len()).map(|i| 1 + 3 * i).collect();
    for r in rows {
        let m = r.metric;
        let mut cells = vec![m.name.to_string(), cell_text(&r.cells[0], m.unit)];
        for (i, (ratio, verdict)) in r.against_first.iter().enumerate() {
            cells.push(cell_text(&r.cells[i + 1], m.unit));
            cells.push(ratio.map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(
                match verdict {
                    Verdict::Better => m.words.0,
                    Verdict::Worse => m.words.1,
                    Verdict::Same => "same within noise",
                    Verdict::Unknown => "no noise estimate",
                    Verdict::Absent => "-",
                }
                .to_string(),
            );
        }
        t.row(cells);
    }
    let differs: Vec<(String, String)> = differences(variants)
        .into_iter()
        .map(|(k, values)| {
            let each: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{} {}", letter(i), wirebench_core::units::excerpt(v, 60)))
                .collect();
            (k, each.join(", "))
        })
        .collect();
    let mut d = Document::new("").push(Block::List(legend));
    d = if differs.is_empty() {
        d.text("The variants' settings are the same: they differ in what the runs do not record (build, server, machine).")
    } else {
        d.text("What differs between the variants (the verdicts below are about it):")
            .push(Block::List(differs))
    };
    let mut d = d.table(t).text(NOTE);
    if let Some(r) = rows.iter().find(|r| r.metric.key == "stall_ms_per_s") {
        for (i, (_, v)) in r.against_first.iter().enumerate() {
            let periods = (probe_period(&variants[0]), probe_period(&variants[i + 1]));
            if let (Some(a), Some(b)) = periods
                && a != b
            {
                d = d.text(format!(
                    "Platform stalls: A and {} were watched by hiccup probes of different periods (every {} and every {}), whose normal wake-ups add up to different times lost: their stalls do not compare.",
                    letter(i + 1),
                    wirebench_core::units::format_ns(a as f64),
                    wirebench_core::units::format_ns(b as f64)
                ));
            } else if matches!(v, Verdict::Better | Verdict::Worse) {
                d = d.text(format!(
                    "Platform noise: A and {} did not see the same platform (the hiccup meter's stalls differ beyond the noise): part of their difference may be the machine's, not the server's; run them again, interleaved.",
                    letter(i + 1)
                ));
            }
        }
    }
    d
}

/// How often the hiccup probe of a variant's runs woke, in ns (results
/// that do not record it had a 1 ms probe); None without the meter or when
/// its runs differ.
fn probe_period(v: &Variant) -> Option<u64> {
    let mut periods = v
        .runs
        .iter()
        .filter_map(|r| r.summary.hiccup)
        .map(|h| match h.period_ns {
            0 => 1_000_000,
            p => p,
        });
    let first = periods.next()?;
    periods.all(|p| p == first).then_some(first)
}

/// What a comparison found, a line per variant after A: the metrics that
/// changed beyond the noise, with their ratio to A, or that none did.
pub fn findings(variants: &[Variant], rows: &[Row]) -> Vec<(String, String)> {
    (1..variants.len())
        .map(|i| {
            let changed: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    let (ratio, v) = r.against_first.get(i - 1)?;
                    let word = match v {
                        Verdict::Better => r.metric.words.0,
                        Verdict::Worse => r.metric.words.1,
                        _ => return None,
                    };
                    Some(match ratio {
                        Some(x) => format!("{} {x:.2}x A ({word})", r.metric.name),
                        None => format!("{} {word}", r.metric.name),
                    })
                })
                .collect();
            let unknown = rows
                .iter()
                .any(|r| matches!(r.against_first.get(i - 1), Some((_, Verdict::Unknown))));
            let what = format!("{} ({}) against A", letter(i), variants[i].label);
            let detail = if !changed.is_empty() {
                changed.join("; ")
            } else if unknown {
                "no change beyond the noise where it is known; some metrics have no noise estimate (run each variant 3 times or more)".into()
            } else {
                "the same within the noise on every metric".into()
            };
            (what, detail)
        })
        .collect()
}

/// The comparison as a page: what it found (the changes beyond the noise,
/// the headline figure, the hints), then the table and the other figures.
pub fn page(
    variants: &[Variant],
    rows: &[Row],
    figures: &[crate::export::Figure],
    hints: Vec<(String, String)>,
) -> Document {
    let mut d = Document::new("wirebench compare")
        .heading("What it found")
        .push(Block::List(findings(variants, rows)));
    // The headline: throughput against what varies, else the percentiles.
    let headline = figures
        .iter()
        .position(|f| f.title.starts_with("Throughput vs"))
        .or_else(|| {
            figures
                .iter()
                .position(|f| f.title == "Latency by percentile")
        })
        .or((!figures.is_empty()).then_some(0));
    if let Some(i) = headline {
        d = d.push(Block::Figures(vec![figures[i].clone()]));
    }
    d = d.heading("Hints");
    d = if hints.is_empty() {
        d.text("None.")
    } else {
        d.push(Block::List(hints))
    };
    d = d.heading("The comparison");
    d.blocks.extend(document(variants, rows).blocks);
    let rest: Vec<crate::export::Figure> = figures
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != headline)
        .map(|(_, f)| f.clone())
        .collect();
    if !rest.is_empty() {
        d = d.heading("Figures").push(Block::Figures(rest));
    }
    d
}

/// The comparison as Markdown (also what the terminal shows).
pub fn markdown(variants: &[Variant], rows: &[Row]) -> String {
    MarkdownExporter.export(&document(variants, rows))
}

/// `compare --format json`: the rows, what differs between the variants,
/// and the `--fail-if` gates tripped.
pub fn json_with_gates(
    variants: &[Variant],
    rows: &[Row],
    tripped: &[Tripped],
) -> serde_json::Value {
    let mut j = json(variants, rows);
    j["differs"] = differences(variants)
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    j["fail_if"] = serde_json::json!(tripped
        .iter()
        .map(|t| serde_json::json!({"condition": t.gate, "variant": t.variant.to_string(), "change_pct": t.change_pct}))
        .collect::<Vec<_>>());
    j
}

/// `compare -o`: the page of the comparison with the variants' figures
/// (each run named by its variant's letter) and their hints.
pub fn page_with_figures(variants: &[Variant], rows: &[Row]) -> crate::export::Document {
    let mut layout = crate::report::Layout::default();
    let mut all = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let letter = letter(i);
        for r in &v.runs {
            // The letter, and the variant's label when it is short (the
            // page lists each letter's label).
            let name = if v.label.chars().count() <= 24 {
                format!("{letter}: {}", v.label)
            } else {
                letter.to_string()
            };
            layout.labels.insert(r.run_id.clone(), name);
            all.push(r.clone());
        }
    }
    let figures = crate::report::figures(&all, &layout);
    let hints = variants
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            v.runs.iter().flat_map(move |r| {
                crate::hints::of_run(r).into_iter().map(move |h| {
                    (
                        format!("{} ({}, {})", h.text, letter(i), r.run_id),
                        h.evidence,
                    )
                })
            })
        })
        .collect();
    page(variants, rows, &figures, hints)
}

#[cfg(test)]
mod tests;
