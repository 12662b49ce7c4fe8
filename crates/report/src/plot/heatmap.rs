//! A heatmap of percentages over time: one row per name (a CPU and its
//! role), one cell per interval, time ticks chosen like any axis, the
//! warm-up shaded, and the colour scale drawn beside it.

use super::lines::Shade;
use super::style::{CHAR_W, TEXT_PX, TITLE_PX, W, font, svg_error, ticks};
use plotters::prelude::*;
use wirebench_core::units::whole;

/// The colour scale's column, right of the cells.
const SCALE_W: u32 = 130;

/// A colour channel from 0.0..=255.0.
fn channel(x: f64) -> u8 {
    u8::try_from(whole(x.clamp(0.0, 255.0))).unwrap_or(u8::MAX)
}

/// White (idle) to deep red (saturated), for 0..=100 %.
fn heat(pct: f64) -> RGBColor {
    let t = (pct / 100.0).clamp(0.0, 1.0);
    RGBColor(
        255,
        channel(255.0 * (1.0 - t)),
        channel(255.0 * (1.0 - t) * 0.9),
    )
}

fn seconds(v: f64) -> String {
    let t = format!("{v:.3}");
    format!("{}s", t.trim_end_matches('0').trim_end_matches('.'))
}

/// A heatmap: one row per name, one cell per interval, values 0..=100 (%).
/// `edges` are the intervals' bounds in seconds (one more than the cells);
/// `shade` marks a span of them (the warm-up).
pub fn heatmap(
    title: &str,
    x_label: &str,
    rows: &[(String, Vec<f64>)],
    edges: &[f64],
    shade: Option<&Shade>,
) -> String {
    font();
    let cols = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    if rows.is_empty() || cols == 0 || edges.len() < cols + 1 {
        return svg_error(title);
    }
    let mut svg = String::new();
    {
        let h = u32::try_from(144 + 24 * rows.len())
            .unwrap_or(u32::MAX)
            .min(900);
        let root = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (area, scale) = root.split_horizontally(W - SCALE_W);
        let n = rows.len();
        let (t0, t1) = (edges[0], edges[cols]);
        // The title, then room under it for the shade's label.
        let area = area.titled(title, ("sans-serif", TITLE_PX)).unwrap_or(area);
        let chart = ChartBuilder::on(&area)
            .margin(12)
            .margin_top(26)
            .x_label_area_size(56)
            .y_label_area_size(110)
            .build_cartesian_2d(t0..t1, 0f64..n as f64);
        let Ok(mut chart) = chart else {
            return svg_error(title);
        };
        let _ = chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(x_label)
            .label_style(("sans-serif", TEXT_PX))
            .draw();
        let style = ("sans-serif", TEXT_PX).into_font().color(&BLACK);
        // Whole seconds where the run is long enough for them.
        for (v, label) in ticks(t0, t1, false, seconds, t1 - t0 >= 2.0) {
            let (px, py) = chart.backend_coord(&(v, 0.0));
            let w = i32::try_from(label.len() * CHAR_W).unwrap_or(0);
            let _ = root.draw(&Text::new(label, (px - w / 2, py + 6), style.clone()));
        }
        for (r, (name, vals)) in rows.iter().enumerate() {
            let y = (n - 1 - r) as f64;
            let _ = chart.draw_series(vals.iter().enumerate().map(|(c, &v)| {
                Rectangle::new(
                    [(edges[c], y + 0.06), (edges[c + 1], y + 0.94)],
                    heat(v).filled(),
                )
            }));
            let (px, py) = chart.backend_coord(&(t0, y + 0.5));
            let w = i32::try_from(name.len() * CHAR_W).unwrap_or(0);
            let _ = root.draw(&Text::new(
                name.clone(),
                (px - w - 8, py - 8),
                style.clone(),
            ));
            // A line between the client's rows and the server's.
            let role = |i: usize| rows.get(i).map(|r| r.0.split(' ').next());
            if r + 1 < n && role(r) != role(r + 1) {
                let _ =
                    chart.draw_series(LineSeries::new([(t0, y), (t1, y)], BLACK.stroke_width(2)));
            }
        }
        if let Some(sh) = shade {
            let (a, b) = (sh.from.max(t0), sh.to.min(t1));
            if b > a {
                // Hatched, so that the cells still read under it.
                let _ = chart.draw_series([Rectangle::new(
                    [(a, 0.0), (b, n as f64)],
                    RGBColor(60, 60, 60).stroke_width(2),
                )]);
                let (px, py) = chart.backend_coord(&(a, n as f64));
                let _ = root.draw(&Text::new(
                    sh.label.clone(),
                    (px + 2, py - 16),
                    ("sans-serif", TEXT_PX)
                        .into_font()
                        .color(&RGBColor(60, 60, 60)),
                ));
            }
        }
        // The colour scale: 0 % at the bottom, 100 % at the top.
        let (top, bottom) = (44i32, i32::try_from(h).unwrap_or(900) - 56);
        let span = (bottom - top).max(1);
        let _ = scale.draw(&Text::new("busy", (14, top - 22), style.clone()));
        for k in 0..=100 {
            let y0 = bottom - k * span / 101;
            let y1 = bottom - (k + 1) * span / 101;
            let _ = scale.draw(&Rectangle::new(
                [(14, y1), (34, y0)],
                heat(f64::from(k)).filled(),
            ));
        }
        let _ = scale.draw(&Rectangle::new(
            [(14, top), (34, bottom)],
            BLACK.stroke_width(1),
        ));
        for pct in [0, 25, 50, 75, 100] {
            let y = bottom - pct * span / 100;
            let _ = scale.draw(&PathElement::new(vec![(34, y), (38, y)], BLACK));
            let _ = scale.draw(&Text::new(format!("{pct}%"), (42, y - 6), style.clone()));
        }
        let _ = root.present();
    }
    svg
}
