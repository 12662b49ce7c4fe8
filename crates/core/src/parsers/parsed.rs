//! What a parser gives ([`Parsed`]), the trait each parser implements,
//! the metrics `json` and `regex` fill, and the helpers the parsers share.

use crate::hist::LatencyHist;
use std::collections::BTreeMap;

/// The metrics a `json` or `regex` parser may fill: counters, rates, and
/// latency statistics with their unit.
pub const EXEC_METRICS: [&str; 7] = [
    "ops",
    "ops_per_s",
    "seconds",
    "errors",
    "bytes_out",
    "bytes_in",
    "connect_s",
];

/// Latency statistics (`p99_us`, `mean_ms`: a statistic, `_`, a unit).
pub const LATENCY_STATS: [&str; 8] = ["mean", "min", "p50", "p90", "p99", "p999", "p9999", "max"];

/// The units of a latency metric, in ns.
pub const LATENCY_UNITS: [(&str, f64); 4] = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)];

/// Whether `name` is a metric a `json` or `regex` parser may fill.
pub fn is_exec_metric(name: &str) -> bool {
    EXEC_METRICS.contains(&name)
        || name.rsplit_once('_').is_some_and(|(stat, unit)| {
            LATENCY_STATS.contains(&stat) && LATENCY_UNITS.iter().any(|(u, _)| *u == unit)
        })
}

/// The metrics, as an error's help names them.
pub(crate) fn metrics_help() -> String {
    format!(
        "{}, or a latency statistic ({}) with a unit (ns, us, ms, s), e.g. p99_us",
        EXEC_METRICS.join(", "),
        LATENCY_STATS.join(", ")
    )
}

/// A reader of one program's output.
pub trait OutputParser: Sync {
    /// Its name: `--parser NAME` (or `NAME:ARG`).
    fn name(&self) -> &'static str;
    /// What it reads, as help says it.
    fn reads(&self) -> &'static str;
    /// How its argument is written (`NAME=POINTER,...`); None: it takes
    /// none.
    fn arg(&self) -> Option<&'static str> {
        None
    }
    /// Checks its argument (of a parser that takes one).
    fn check(&self, _arg: &str) -> Result<(), String> {
        Ok(())
    }
    /// Reads the program's output (`arg`: its argument, or empty).
    fn parse(&self, arg: &str, stdout: &str, stderr: &str) -> Result<Parsed, String>;
}

/// One per-second line of a program that prints them.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedInterval {
    /// The interval's length as the program measured it.
    pub seconds: f64,
    pub ops_per_s: f64,
    /// Mean latency, where the line gives one.
    pub mean_ns: Option<f64>,
    /// The program's own utilisation of its threads in the interval, in %
    /// (perf-crimson-msgr's client reactors), where the line gives it.
    pub busy_pct: Vec<f64>,
    /// Messages in flight at the end of the interval, where the line gives
    /// them (perf-crimson-msgr's depth).
    pub in_flight: Option<u64>,
    /// Throughput in MiB/s, where the line gives it.
    pub mib_per_s: Option<f64>,
}

/// What a program's output said.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub ops: Option<u64>,
    /// The length of its measured phase.
    pub seconds: Option<f64>,
    pub ops_per_s: Option<f64>,
    pub bytes_out: Option<u64>,
    pub bytes_in: Option<u64>,
    pub errors: Option<u64>,
    pub connect_s: Option<f64>,
    /// Latency statistics it gave (`mean`, `p50`...), in ns.
    pub latency_ns: BTreeMap<&'static str, f64>,
    /// How many latencies its statistics are of, where it says.
    pub latency_count: Option<u64>,
    /// Its latency distribution, where it gives one (fio's bins).
    pub hist: Option<LatencyHist>,
    pub intervals: Vec<ParsedInterval>,
    /// Every figure taken, by the program's own name and unit.
    pub figures: BTreeMap<String, f64>,
    /// What it reported in words (`clients`: `mp`), by its own name.
    pub words: BTreeMap<String, String>,
    /// How it measured, in words.
    pub method: Vec<String>,
}

impl Parsed {
    /// Keeps `value` as the program named it.
    pub(super) fn figure(&mut self, name: impl Into<String>, value: f64) {
        self.figures.insert(name.into(), value);
    }

    /// Fills what follows from what was given (ops from a rate and a time,
    /// a rate from ops and a time), saying so; fails when the output gave
    /// neither a count nor a rate.
    pub(super) fn complete(mut self, what: &str) -> Result<Parsed, String> {
        match (self.ops, self.seconds, self.ops_per_s) {
            (Some(n), Some(s), None) if s > 0.0 => self.ops_per_s = Some(n as f64 / s),
            (None, Some(s), Some(r)) => {
                self.ops = Some(crate::units::whole((r * s).round()));
                self.method
                    .push("operations: the program's rate x its time (it printed no count)".into());
            }
            (None, None, None) => return Err(format!("{what}: no operation count or rate in it")),
            _ => {}
        }
        Ok(self)
    }
}

/// A number as programs print them (`3.17e+06`, `12386.7`); None for
/// `nan`, `-nan`, `inf`.
pub(super) fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `name` (`p99_us`) as a latency statistic and its factor to ns.
pub(super) fn latency_metric(name: &str) -> Option<(&'static str, f64)> {
    let (stat, unit) = name.rsplit_once('_')?;
    let stat = LATENCY_STATS.iter().find(|s| **s == stat)?;
    let factor = LATENCY_UNITS.iter().find(|(u, _)| *u == unit)?.1;
    Some((stat, factor))
}

/// Fills the field `metric` names with `v` (a `json` or `regex` metric).
pub(super) fn set_metric(p: &mut Parsed, metric: &str, v: f64) -> Result<(), String> {
    let count = |v: f64| -> Result<u64, String> {
        if v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
            Ok(crate::units::whole(v))
        } else {
            Err(format!("{metric} = {v}: not a count"))
        }
    };
    match metric {
        "ops" => p.ops = Some(count(v)?),
        "ops_per_s" => p.ops_per_s = Some(v),
        "seconds" => p.seconds = Some(v),
        "errors" => p.errors = Some(count(v)?),
        "bytes_out" => p.bytes_out = Some(count(v)?),
        "bytes_in" => p.bytes_in = Some(count(v)?),
        "connect_s" => p.connect_s = Some(v),
        m => {
            let (stat, factor) = latency_metric(m).ok_or_else(|| format!("{m}: not a metric"))?;
            p.latency_ns.insert(stat, v * factor);
        }
    }
    p.figure(metric, v);
    Ok(())
}

/// `text` without ANSI colour sequences (sockperf colours its summary).
pub(super) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
