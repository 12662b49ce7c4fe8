//! The one style of every plot: its font, its size, its ranges, and what an
//! empty plot shows; the series and axes plots take.

use plotters::style::{FontStyle, RGBColor, register_font};
use std::sync::Once;

static FONT: Once = Once::new();

pub(super) fn font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        if register_font("sans-serif", FontStyle::Normal, bytes).is_err() {
            // Only a malformed font fails, and the one embedded is not.
            eprintln!("warning: the embedded font could not be registered");
        }
    });
}

/// One line of an XY plot.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// An axis: its label and whether it is log10-scaled.
#[derive(Debug, Clone, Copy)]
pub struct Axis<'a> {
    pub label: &'a str,
    pub log: bool,
    /// Formats a (linear) value for the tick labels.
    pub fmt: fn(f64) -> String,
}

/// As wide as the report's page.
pub(super) const W: u32 = 1100;
pub(super) const H: u32 = 440;
/// The legend's column, right of the plot.
pub(super) const LEGEND_W: u32 = 300;

/// Okabe and Ito's colour-blind-safe palette, without its yellow (which
/// does not read on white).
const PALETTE: [(u8, u8, u8); 7] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (230, 159, 0),
    (0, 0, 0),
];

/// A series' family: its name without a statistic's suffix, so that the
/// mean and the p99 of one series share a colour.
pub(super) fn family(name: &str) -> String {
    for suffix in [" mean", " p99", " p50", " p99.9"] {
        if let Some(f) = name.strip_suffix(suffix) {
            return f.to_string();
        }
    }
    name.to_string()
}

/// Whether a series is drawn dashed (a tail percentile beside its mean).
pub(super) fn dashed(name: &str) -> bool {
    name.ends_with(" p99") || name.ends_with(" p99.9")
}

/// The colour of a family: chosen by its name, so that it is the same in
/// every plot of a page, and moved to the next free one when another
/// family of this plot has it already (`taken`: the families drawn).
pub(super) fn color_of(family: &str, taken: &mut Vec<(String, usize)>) -> RGBColor {
    if let Some((_, i)) = taken.iter().find(|(f, _)| f == family) {
        let (r, g, b) = PALETTE[*i];
        return RGBColor(r, g, b);
    }
    let h = family.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    let start = usize::try_from(h % PALETTE.len() as u64).unwrap_or(0);
    let i = (0..PALETTE.len())
        .map(|k| (start + k) % PALETTE.len())
        .find(|i| !taken.iter().any(|(_, j)| j == i))
        .unwrap_or(start);
    taken.push((family.to_string(), i));
    let (r, g, b) = PALETTE[i];
    RGBColor(r, g, b)
}

/// The ticks of an axis over [lo, hi] (log10 values on a log axis), each
/// with its label: 1-2-5 steps on a linear axis (whole numbers where the
/// values are), every decade on a log axis, with 2 and 5 where the span is
/// under two decades. Labels are unique: a step whose labels repeat (a
/// formatter rounding) gives way to a wider one.
pub(super) fn ticks(
    lo: f64,
    hi: f64,
    log: bool,
    fmt: fn(f64) -> String,
    whole: bool,
) -> Vec<(f64, String)> {
    let label = |v: f64| fmt(if log { 10f64.powf(v) } else { v });
    let unique = |t: &[(f64, String)]| {
        let mut l: Vec<&String> = t.iter().map(|(_, s)| s).collect();
        l.sort();
        l.dedup();
        l.len() == t.len()
    };
    if log {
        let span = hi - lo;
        let mut t = Vec::new();
        // Decades of a latency or a rate: -12..=15 covers every one.
        let decade = |v: f64| (-12..=15).find(|d| f64::from(*d) >= v).unwrap_or(15);
        let (d0, d1) = (decade(lo.floor()), decade(hi.ceil()));
        for d in d0..=d1 {
            let mults: &[f64] = if span < 2.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            for m in mults {
                let v = (m * 10f64.powi(d)).log10();
                if v >= lo - 1e-9 && v <= hi + 1e-9 {
                    t.push((v, label(v)));
                }
            }
        }
        if t.len() >= 2 && unique(&t) {
            return t;
        }
        // Within a decade: linear ticks of the values, placed on the log axis.
        let lin = linear(10f64.powf(lo), 10f64.powf(hi), fmt, false);
        return lin.into_iter().map(|(v, s)| (v.log10(), s)).collect();
    }
    linear(lo, hi, fmt, whole)
}

fn linear(lo: f64, hi: f64, fmt: fn(f64) -> String, whole: bool) -> Vec<(f64, String)> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let mut steps: Vec<f64> = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .iter()
        .map(|m| m * mag)
        .filter(|s| *s >= raw * 0.99)
        .collect();
    if whole {
        steps.retain(|s| s.fract() == 0.0 && *s >= 1.0);
        if steps.is_empty() {
            steps.push(raw.ceil().max(1.0));
        }
    }
    let mut best = Vec::new();
    for step in steps {
        let first = (lo / step).ceil() * step;
        let t: Vec<(f64, String)> = (0..)
            .map(|k| first + f64::from(k) * step)
            .take_while(|v| *v <= hi + step * 1e-9)
            .take(50)
            .map(|v| {
                let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                (v, fmt(v))
            })
            .collect();
        let mut l: Vec<&String> = t.iter().map(|(_, s)| s).collect();
        l.sort();
        l.dedup();
        if l.len() == t.len() {
            return t;
        }
        best = t;
    }
    best
}

pub(super) fn tx(v: f64, log: bool) -> f64 {
    if log { v.max(1e-12).log10() } else { v }
}

pub(super) fn range(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals {
        let v = tx(v, log);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if (hi - lo).abs() < 1e-12 {
        let pad = if log { 0.5 } else { (hi.abs() * 0.1).max(1.0) };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    let lo = if !log && lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

pub(super) fn svg_error(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"60\"><text x=\"10\" y=\"30\">{title}: no data to plot</text></svg>"
    )
}
