//! Plots as SVG text (plotters' SVG backend, with an embedded DejaVu Sans
//! so that text is measured the same everywhere): XY lines with optional
//! log10 axes, and heatmaps. Every plot has a title and labelled axes.

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use std::sync::Once;

static FONT: Once = Once::new();

fn font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
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

const W: u32 = 760;
const H: u32 = 420;

fn tx(v: f64, log: bool) -> f64 {
    if log { v.max(1e-12).log10() } else { v }
}

fn range(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
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

/// An XY plot with a line and markers per series.
pub fn lines(title: &str, x: Axis, y: Axis, series: &[Series]) -> String {
    font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (x0, x1) = range(
            series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
            x.log,
        );
        let (y0, y1) = range(
            series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
            y.log,
        );
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(76)
            .build_cartesian_2d(x0..x1, y0..y1);
        let Ok(mut chart) = chart else {
            return svg_error(title);
        };
        let (xl, yl) = (x.log, y.log);
        let (xf, yf) = (x.fmt, y.fmt);
        // Tick counts that land on whole decades (log axes) and whole
        // numbers (an x of counts): plotters places "nice" linear ticks.
        let whole_x = series
            .iter()
            .flat_map(|s| s.points.iter())
            .all(|p| p.0.fract() == 0.0);
        let ticks = |lo: f64, hi: f64| ((hi - lo).ceil() as usize + 1).clamp(2, 12);
        let x_ticks = if xl || whole_x { ticks(x0, x1) } else { 10 };
        let y_ticks = if yl { ticks(y0, y1) } else { 10 };
        let _ = chart
            .configure_mesh()
            .x_labels(x_ticks)
            .y_labels(y_ticks)
            .x_desc(x.label)
            .y_desc(y.label)
            .x_label_formatter(&|v| xf(if xl { 10f64.powf(*v) } else { *v }))
            .y_label_formatter(&|v| yf(if yl { 10f64.powf(*v) } else { *v }))
            .label_style(("sans-serif", 12))
            .draw();
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|&(a, b)| (tx(a, xl), tx(b, yl)))
                .collect();
            let line = chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)));
            if let Ok(l) = line {
                let c = color;
                l.label(s.name.clone()).legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 16, b)], c.stroke_width(2))
                });
            }
            let _ = chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())));
        }
        if series.len() > 1 || series.first().is_some_and(|s| !s.name.is_empty()) {
            let _ = chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 12))
                .position(SeriesLabelPosition::UpperRight)
                .draw();
        }
        let _ = root.present();
    }
    svg
}

/// A heatmap: one row per name, one cell per column, values 0..=100 (%).
pub fn heatmap(title: &str, x_label: &str, rows: &[(String, Vec<f64>)]) -> String {
    font();
    let mut svg = String::new();
    {
        let h = (120 + 22 * rows.len() as u32).min(900);
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let cols = rows.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1);
        let n = rows.len().max(1);
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..cols as f64, 0f64..n as f64);
        let Ok(mut chart) = chart else {
            return svg_error(title);
        };
        let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        let _ = chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_label)
            .y_desc("CPU")
            .y_labels(n)
            .y_label_formatter(&|v| {
                let i = v.floor() as usize;
                if (*v - i as f64 - 0.5).abs() < 0.01 || v.fract() == 0.0 {
                    names
                        .get(n.saturating_sub(1 + i))
                        .cloned()
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 12))
            .draw();
        for (r, (_, vals)) in rows.iter().enumerate() {
            let y = (n - 1 - r) as f64;
            let _ = chart.draw_series(vals.iter().enumerate().map(|(c, &v)| {
                let t = (v / 100.0).clamp(0.0, 1.0);
                // White (idle) to deep red (saturated).
                let color = RGBColor(
                    255,
                    (255.0 * (1.0 - t)) as u8,
                    (255.0 * (1.0 - t) * 0.9) as u8,
                );
                Rectangle::new(
                    [(c as f64, y + 0.05), (c as f64 + 1.0, y + 0.95)],
                    color.filled(),
                )
            }));
        }
        let _ = root.present();
    }
    svg
}

fn svg_error(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"60\"><text x=\"10\" y=\"30\">{title}: no data to plot</text></svg>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_their_text() {
        let s = lines(
            "Throughput vs clients",
            Axis {
                label: "clients",
                log: false,
                fmt: |v| format!("{v:.0}"),
            },
            Axis {
                label: "ops/s",
                log: true,
                fmt: |v| format!("{v:.0}"),
            },
            &[Series {
                name: "balanced".into(),
                points: vec![(1.0, 1e3), (2.0, 1e5)],
            }],
        );
        assert!(s.starts_with("<svg"), "{}", &s[..80.min(s.len())]);
        for text in [
            "Throughput vs clients",
            "clients",
            "ops/s",
            "balanced",
            "<circle",
            "<polyline",
        ] {
            assert!(s.contains(text), "no {text}");
        }
        let h = heatmap(
            "CPU busy",
            "seconds",
            &[("client 0".into(), vec![10.0, 95.0])],
        );
        assert!(h.contains("client 0") && h.contains("<rect"), "{h}");
    }
}
