//! XY lines with markers, one series each, on linear or log10 axes.

use super::style::{Axis, H, Series, W, font, range, svg_error, tx};
use plotters::prelude::*;
use wirebench_core::units::whole_usize;

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
        let ticks = |lo: f64, hi: f64| (whole_usize((hi - lo).ceil()) + 1).clamp(2, 12);
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
