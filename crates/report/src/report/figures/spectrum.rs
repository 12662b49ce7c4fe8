//! Latency by percentile, a line per run.

use super::*;

/// Latency by percentile, a line per run (at most [`MAX_PER_RUN`]).
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    spectrum(d).into_iter().collect()
}

fn spectrum(d: &Drawn) -> Option<Figure> {
    let quantiles = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999];
    let spectrum: Vec<Series> =
        d.ok.iter()
            .filter(|r| r.summary.latency.count > 0)
            .take(MAX_PER_RUN)
            .filter_map(|r| {
                // An exec program's statistics without a distribution: no spectrum.
                let h = hist::decode(&r.latency_hist)
                    .ok()
                    .filter(|h| !h.is_empty())?;
                Some(Series {
                    name: d.name(r),
                    points: quantiles
                        .iter()
                        .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                        .collect(),
                })
            })
            .collect();
    if !spectrum.is_empty() {
        let title = "Latency by percentile".to_string();
        return Some(Figure {
            svg: plot::lines(
                &title,
                Axis::log("percentile", |v| {
                    let p = 100.0 * (1.0 - 1.0 / v);
                    let digits = format!("{p:.4}");
                    format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
                }),
                Axis::log("latency", format_ns),
                &spectrum,
            ),
            title,
        });
    }
    None
}
