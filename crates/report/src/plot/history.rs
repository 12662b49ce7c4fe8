//! A metric over a series of runs, oldest first: each run a point, the
//! mean of each stretch between change points a level line, and each
//! change point a dashed line named by its change (`+20.9%`) and where it
//! happened (`commit=abc123`). The x axis is the runs' order, labelled by
//! their commits (or dates), as many as fit.

use super::lines::{text_width, with_hovers};
use super::style::{Axis, CHAR_W, H, PALETTE, TEXT_PX, TITLE_PX, W, font, range, svg_error, ticks};
use plotters::prelude::*;

/// One run of the series.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub value: f64,
    /// What the x axis says under it: its commit, or its date.
    pub label: String,
    /// What hovering over it says.
    pub detail: String,
}

/// A change of the series' level before run `at` (an index in the runs).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub at: usize,
    /// `+20.9% at commit=abc123`
    pub label: String,
    /// Drawn in the colour of a regression.
    pub worse: bool,
}

/// The plot of `runs` with their `changes` (in order).
pub fn history(title: &str, y: Axis, x_label: &str, runs: &[Run], changes: &[Change]) -> String {
    if runs.is_empty() {
        return svg_error(title);
    }
    font();
    let mut svg = String::new();
    let mut hovers = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = runs.len();
        let (x0, x1) = (-0.5, n as f64 - 0.5);
        let (y0, y1) = range(
            runs.iter().map(|r| r.value).filter(|v| v.is_finite()),
            false,
        );
        // Room above the points for the change points' names.
        let y1 = y1 + (y1 - y0) * 0.12;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", TITLE_PX))
            .margin(12)
            .x_label_area_size(56)
            .y_label_area_size(96)
            .build_cartesian_2d(x0..x1, y0..y1)
        else {
            return svg_error(title);
        };
        let _ = chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(x_label)
            .y_desc(y.label)
            .label_style(("sans-serif", TEXT_PX))
            .draw();
        let grid = RGBColor(220, 220, 220);
        let style = ("sans-serif", TEXT_PX).into_font().color(&BLACK);
        for (v, label) in ticks(y0, y1, false, y.fmt, false) {
            let _ = chart.draw_series(LineSeries::new([(x0, v), (x1, v)], grid));
            let (px, py) = chart.backend_coord(&(x0, v));
            let _ = root.draw(&Text::new(
                label.clone(),
                (px - text_width(&label) - 6, py - 8),
                style.clone(),
            ));
        }
        // As many run labels as fit side by side, evenly spaced.
        let (left, _) = chart.backend_coord(&(x0, y0));
        let (right, _) = chart.backend_coord(&(x1, y0));
        let widest = runs
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(1)
            + 2;
        let fit = (usize::try_from(right - left).unwrap_or(0) / (widest * CHAR_W)).max(1);
        let every = n.div_ceil(fit);
        for (i, r) in runs.iter().enumerate().filter(|(i, _)| i % every == 0) {
            let (px, py) = chart.backend_coord(&(i as f64, y0));
            let _ = root.draw(&Text::new(
                r.label.clone(),
                (px - text_width(&r.label) / 2, py + 6),
                style.clone(),
            ));
        }
        // The level of each stretch between change points: its mean.
        let level = RGBColor(PALETTE[2].0, PALETTE[2].1, PALETTE[2].2);
        let mut bounds = vec![0];
        bounds.extend(changes.iter().map(|c| c.at));
        bounds.push(n);
        for w in bounds.windows(2) {
            let part: Vec<f64> = runs[w[0]..w[1]].iter().map(|r| r.value).collect();
            if part.is_empty() {
                continue;
            }
            let mean = part.iter().sum::<f64>() / part.len() as f64;
            let (a, b) = (w[0] as f64 - 0.4, w[1] as f64 - 0.6);
            let _ = chart.draw_series(LineSeries::new(
                [(a, mean), (b, mean)],
                level.stroke_width(3),
            ));
        }
        // The change points, between the last run before and the first after.
        for c in changes {
            let color = if c.worse {
                RGBColor(PALETTE[1].0, PALETTE[1].1, PALETTE[1].2)
            } else {
                RGBColor(PALETTE[0].0, PALETTE[0].1, PALETTE[0].2)
            };
            let x = c.at as f64 - 0.5;
            let _ = chart.draw_series(DashedLineSeries::new(
                [(x, y0), (x, y1)],
                6,
                4,
                color.stroke_width(2),
            ));
            let (px, py) = chart.backend_coord(&(x, y1));
            let w = text_width(&c.label);
            // Right of the line, or left of it where it would run off.
            let tx = if px + 6 + w < right {
                px + 6
            } else {
                px - 6 - w
            };
            let _ = root.draw(&Text::new(
                c.label.clone(),
                (tx, py + 4),
                ("sans-serif", TEXT_PX).into_font().color(&color),
            ));
        }
        let points: Vec<(f64, f64)> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i as f64, r.value))
            .collect();
        let ink = RGBColor(PALETTE[6].0, PALETTE[6].1, PALETTE[6].2);
        let _ = chart.draw_series(LineSeries::new(points.clone(), grid.stroke_width(1)));
        for (p, r) in points.iter().zip(runs) {
            let at = chart.backend_coord(p);
            let _ = root.draw(&Circle::new(at, 4, ink.filled()));
            hovers.push((at.0, at.1, format!("{}: {}", r.detail, (y.fmt)(r.value))));
        }
        let _ = root.present();
    }
    with_hovers(svg, &hovers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_levels_and_change_points_are_drawn_with_their_names() {
        let runs: Vec<Run> = (0..10)
            .map(|i| Run {
                value: if i < 3 { 60.0 } else { 110.0 },
                label: format!("c{i}"),
                detail: format!("run {i}"),
            })
            .collect();
        let svg = history(
            "p50 over commits",
            Axis::linear("p50 (us)", |v| format!("{v:.0}")),
            "commit",
            &runs,
            &[Change {
                at: 3,
                label: "+83.3% at commit=c3".into(),
                worse: true,
            }],
        );
        for text in [
            "p50 over commits",
            "+83.3% at commit=c3",
            "c0",
            "c9",
            "run 4: 110",
        ] {
            assert!(svg.contains(text), "no {text}");
        }
        assert!(svg.matches("<circle").count() >= 10);
    }
}
