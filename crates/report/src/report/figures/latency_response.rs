//! Latency-response: mean and p99 against the throughput achieved.

use super::*;

/// Latency-response: mean and p99 against the throughput achieved, a line
/// per series and panel.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    latency_response(d, &d.all_series).into_iter().collect()
}

fn latency_response(d: &Drawn, all_series: &[String]) -> Option<Figure> {
    if d.ok.len() >= 2 && d.ok.iter().any(|r| r.summary.latency.count > 0) {
        let mut by: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        for r in d.ok.iter().filter(|r| r.summary.latency.count > 0) {
            by.entry(series_key(r, d.l, all_series, &d.shown))
                .or_default()
                .push(r);
        }
        let mut series = Vec::new();
        for (k, rs) in by {
            let mut rs = rs;
            rs.sort_by(|a, b| a.summary.ops_per_s.total_cmp(&b.summary.ops_per_s));
            // Only the statistics each run has (an exec program may give
            // a mean and no percentile).
            series.push(Series {
                name: format!("{k} mean"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("mean"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.mean_ns))
                    .collect(),
            });
            series.push(Series {
                name: format!("{k} p99"),
                points: rs
                    .iter()
                    .filter(|r| r.summary.has_latency("p99"))
                    .map(|r| (r.summary.ops_per_s, r.summary.latency.p99_ns as f64))
                    .collect(),
            });
            series.retain(|s| !s.points.is_empty());
        }
        let title = "Latency-response: latency vs throughput achieved".to_string();
        return Some(Figure {
            svg: plot::lines(
                &title,
                Axis::linear("throughput achieved (ops/s)", format_rate),
                Axis::log("latency", format_ns),
                &series,
            ),
            title,
        });
    }
    None
}
