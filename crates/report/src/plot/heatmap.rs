//! A heatmap of percentages: one row per name, one cell per column.

use super::style::{W, font, svg_error};
use plotters::prelude::*;
use wirebench_core::units::whole_usize;

/// A colour channel from 0.0..=255.0.
fn channel(x: f64) -> u8 {
    u8::try_from(wirebench_core::units::whole(x.clamp(0.0, 255.0))).unwrap_or(u8::MAX)
}

/// A heatmap: one row per name, one cell per column, values 0..=100 (%).
pub fn heatmap(title: &str, x_label: &str, rows: &[(String, Vec<f64>)]) -> String {
    font();
    let mut svg = String::new();
    {
        let h = u32::try_from(120 + 22 * rows.len())
            .unwrap_or(u32::MAX)
            .min(900);
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
                let i = whole_usize(v.floor());
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
                    channel(255.0 * (1.0 - t)),
                    channel(255.0 * (1.0 - t) * 0.9),
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
