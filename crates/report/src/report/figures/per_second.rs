//! Throughput and p99 per second, a line per run.

use super::*;

/// Throughput and p99 per second, a line per run (at most [`MAX_PER_RUN`]).
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let mut out = Vec::new();
    let per_second = |f: fn(&wirebench_core::result::Interval) -> f64| -> Vec<Series> {
        d.ok.iter()
            .take(MAX_PER_RUN)
            .map(|r| Series {
                name: d.name(r),
                points: r
                    .intervals
                    .iter()
                    .filter(|i| i.ops > 0)
                    // At the middle of the interval it measured.
                    .map(|i| ((i.start_ns + i.end_ns) as f64 / 2e9, f(i)))
                    .filter(|p| p.1 > 0.0)
                    .collect(),
            })
            .filter(|s| s.points.len() >= 2)
            .collect()
    };
    let tput = per_second(|i| i.ops_per_s);
    let warm = warmup(&d.ok);
    if !tput.is_empty() {
        let title = "Throughput per second".to_string();
        out.push(Figure {
            svg: plot::lines_shaded(
                &title,
                Axis::linear("time since the load started (s)", seconds),
                Axis::linear("ops/s", format_rate),
                &tput,
                warm.as_ref(),
            ),
            title,
        });
        let p99 = per_second(|i| i.latency.p99_ns as f64);
        if p99.iter().any(|s| s.points.iter().any(|p| p.1 > 0.0)) {
            let title = "p99 latency per second".to_string();
            out.push(Figure {
                svg: plot::lines_shaded(
                    &title,
                    Axis::linear("time since the load started (s)", seconds),
                    Axis::log("p99 latency", format_ns),
                    &p99,
                    warm.as_ref(),
                ),
                title,
            });
        }
    }
    out
}
