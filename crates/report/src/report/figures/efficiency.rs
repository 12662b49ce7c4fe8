//! Efficiency against the x variable: operations per second for each core
//! the server actually used (the OSD slides' IOPS per core), a line per
//! series, for the runs that measured their server.

use super::*;

/// Ops/s per server core used vs the x variable, one line per series;
/// none unless runs that measured their server's cores span two values.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let Some(x) = d.x.as_deref() else {
        return Vec::new();
    };
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in d.ok.iter() {
        let Some(cores) = r.summary.server_cores_used.filter(|c| *c > 0.0) else {
            continue;
        };
        if let Some(v) = variable(r, x) {
            lines
                .entry(series_key(r, d.l, &d.series_by, &d.shown))
                .or_default()
                .push((num(&v), r.summary.ops_per_s / cores));
        }
    }
    let xs: Vec<f64> = lines.values().flatten().map(|p| p.0).collect();
    let mut distinct: Vec<u64> = xs.iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Vec::new();
    }
    let series: Vec<Series> = lines
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect();
    let title = format!("Ops/s per server core used vs {}", vars::label(x));
    vec![Figure {
        svg: plot::lines(
            &title,
            x_axis(x, &xs),
            Axis::linear("ops/s per core used", format_rate),
            &series,
        ),
        title,
    }]
}
