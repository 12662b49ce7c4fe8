//! The one style of every plot: its font, its size, its ranges, and what an
//! empty plot shows; the series and axes plots take.

use plotters::style::{FontStyle, register_font};
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

pub(super) const W: u32 = 760;
pub(super) const H: u32 = 420;

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
