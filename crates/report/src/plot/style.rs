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

/// An axis: its label, its scale, and how its values read.
#[derive(Debug, Clone, Copy)]
pub struct Axis<'a> {
    pub label: &'a str,
    /// Log-scaled (ticks at decades, or at powers of two with `pow2`).
    pub log: bool,
    /// Ticks at powers of two (sizes, depths): a log axis.
    pub pow2: bool,
    /// Formats a (linear) value for the tick labels.
    pub fmt: fn(f64) -> String,
}

impl<'a> Axis<'a> {
    /// A linear axis.
    pub fn linear(label: &'a str, fmt: fn(f64) -> String) -> Axis<'a> {
        Axis {
            label,
            log: false,
            pow2: false,
            fmt,
        }
    }

    /// A log axis, ticks at decades (with 2 and 5 under two decades).
    pub fn log(label: &'a str, fmt: fn(f64) -> String) -> Axis<'a> {
        Axis {
            label,
            log: true,
            pow2: false,
            fmt,
        }
    }

    /// A log axis with its ticks at powers of two (4KiB, 64KiB, 1MiB).
    pub fn pow2(label: &'a str, fmt: fn(f64) -> String) -> Axis<'a> {
        Axis {
            label,
            log: true,
            pow2: true,
            fmt,
        }
    }
}

/// As wide as the report's page.
pub(super) const W: u32 = 1100;
pub(super) const H: u32 = 440;
/// Font sizes (plotters draws them at about 0.8 of this) and about how
/// wide a character of the text is, for centring labels.
pub(super) const TITLE_PX: u32 = 22;
pub(super) const TEXT_PX: u32 = 16;
pub(super) const CHAR_W: usize = 8;
/// The legend's column, right of the plot.
pub(super) const LEGEND_W: u32 = 300;

/// Okabe and Ito's colour-blind-safe palette, without its yellow (which
/// does not read on white). Beyond seven families the colours repeat with
/// another marker (see [`Marker`]).
pub(super) const PALETTE: [(u8, u8, u8); 7] = [
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

/// A point's marker: a family's colour and marker tell it apart, so that
/// past seven families (the palette's size) a colour comes back with
/// another marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Circle,
    Square,
    Triangle,
}

/// The colour and marker of a family: the colour chosen by its name, so
/// that it is the same in every plot of a page, and moved to the next free
/// one when another family of this plot has it already (`taken`: the
/// families drawn, each with its slot; slot / 7 picks the marker).
pub(super) fn color_of(family: &str, taken: &mut Vec<(String, usize)>) -> (RGBColor, Marker) {
    let style = |slot: usize| {
        let (r, g, b) = PALETTE[slot % PALETTE.len()];
        let marker = match slot / PALETTE.len() {
            0 => Marker::Circle,
            1 => Marker::Square,
            _ => Marker::Triangle,
        };
        (RGBColor(r, g, b), marker)
    };
    if let Some((_, slot)) = taken.iter().find(|(f, _)| f == family) {
        return style(*slot);
    }
    let h = wirebench_core::hash::fnv1a(family.bytes());
    let start = usize::try_from(h % PALETTE.len() as u64).unwrap_or(0);
    let round = taken.len() / PALETTE.len();
    let slot = (0..PALETTE.len())
        .map(|k| round * PALETTE.len() + (start + k) % PALETTE.len())
        .find(|s| !taken.iter().any(|(_, j)| j == s))
        .unwrap_or(taken.len());
    taken.push((family.to_string(), slot));
    style(slot)
}

/// The ticks of an axis over [lo, hi] (log10 values on a log axis), each
/// with its label: 1-2-5 steps on a linear axis (whole numbers where the
/// values are), every decade on a log axis, with 2 and 5 where the span is
/// under two decades or holds fewer than three decades, and the lowest of
/// them in the partial decade below the first. Labels are unique: a step whose labels repeat (a
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
        let decades = (d0..=d1)
            .filter(|d| (f64::from(*d) >= lo - 1e-9) && f64::from(*d) <= hi + 1e-9)
            .count();
        // 2 and 5 too where decades alone give fewer than three labels.
        let mults: &[f64] = if span < 2.0 || decades < 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        for d in d0 - 1..=d1 {
            for m in mults {
                let v = (m * 10f64.powi(d)).log10();
                if v >= lo - 1e-9 && v <= hi + 1e-9 {
                    t.push((v, label(v)));
                }
            }
        }
        // The partial decade below the first: its lowest 2 or 5 (p50 on a
        // percentile axis, 50us under 100us).
        if let Some(&(first, _)) = t.first()
            && mults.len() == 1
        {
            // The decade below the first tick's (a whole exponent).
            let d = (-13..=15)
                .rev()
                .find(|d| f64::from(*d) <= first - 0.5)
                .unwrap_or(-13);
            if let Some(v) = [2.0, 5.0]
                .map(|m: f64| (m * 10f64.powi(d)).log10())
                .into_iter()
                .find(|v| *v >= lo - 1e-9 && *v < first - 0.1)
            {
                t.insert(0, (v, label(v)));
            }
        }
        if t.len() >= 3 && unique(&t) {
            return t;
        }
        // Within a decade or two: linear ticks of the values, placed on the
        // log axis, where they give more labels.
        let lin: Vec<(f64, String)> = linear(10f64.powf(lo), 10f64.powf(hi), fmt, false)
            .into_iter()
            .filter(|(v, _)| *v > 0.0)
            .map(|(v, s)| (v.log10(), s))
            .collect();
        return if lin.len() > t.len() || !unique(&t) {
            lin
        } else {
            t
        };
    }
    linear(lo, hi, fmt, whole)
}

/// Ticks at powers of two over [lo, hi] (log10 values), every one, or
/// every second, fourth... so that at most ten remain. None when fewer
/// than two fit or their labels repeat.
pub(super) fn pow2_ticks(lo: f64, hi: f64, fmt: fn(f64) -> String) -> Option<Vec<(f64, String)>> {
    let to2 = std::f64::consts::LOG2_10;
    // Exponents of 2 of a size, a depth or a count: -60..=62 covers them.
    let e0: i32 = (-60..=62)
        .find(|e: &i32| f64::from(*e) >= lo * to2 - 1e-9)
        .unwrap_or(62);
    let e1: i32 = (-60..=62)
        .rev()
        .find(|e: &i32| f64::from(*e) <= hi * to2 + 1e-9)
        .unwrap_or(-60);
    if e1 <= e0 {
        return None;
    }
    let n = e1 - e0 + 1;
    // Strides that divide 10, so that 1KiB, 1MiB, 1GiB are among the ticks.
    let stride = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|s| (n + s - 1) / s <= 10)
        .unwrap_or(20);
    let t: Vec<(f64, String)> = (e0..=e1)
        .filter(|e| e.rem_euclid(stride) == 0)
        .map(|e| {
            let v = 2f64.powi(e);
            (v.log10(), fmt(v))
        })
        .collect();
    let mut l: Vec<&String> = t.iter().map(|(_, s)| s).collect();
    l.sort();
    l.dedup();
    (t.len() >= 2 && l.len() == t.len()).then_some(t)
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
        // A quantity that cannot be negative (all of them here) keeps its
        // axis at 0 or above.
        let below = if !log && lo >= 0.0 { lo.min(pad) } else { pad };
        return (lo - below, hi + pad);
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
