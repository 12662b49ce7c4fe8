//! Throughput against the x variable: a line per series, a plot per panel
//! on shared axes. IPC runs (shared memory, Tsurugi's programs) are drawn
//! in the IPC report's unit, messages/s (a round trip is two), the figure
//! its CSV gives.

use super::*;

/// Throughput vs the x variable, one line per series; one plot per panel,
/// all on the same axes.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let Some(x) = d.x.as_deref() else {
        return Vec::new();
    };
    let (series_by, panel) = (&d.series_by, d.panel.as_deref());
    let mut out = Vec::new();
    let (ok, l, shown) = (&d.ok, d.l, &d.shown);
    let messages = ok.iter().all(|r| r.messages_per_s().is_some());
    let y = |r: &RunResult| match messages {
        true => r.messages_per_s().unwrap_or(f64::NAN),
        false => r.summary.ops_per_s,
    };
    // Panel (None: one plot) to line to points.
    type Lines = BTreeMap<String, Vec<(f64, f64)>>;
    let mut panels: BTreeMap<Option<String>, Lines> = BTreeMap::new();
    for r in ok.iter() {
        if let Some(v) = variable(r, x) {
            let p = panel.and_then(|p| shown.pair(r, p));
            panels
                .entry(p)
                .or_default()
                .entry(series_key(r, l, series_by, shown))
                .or_default()
                .push((num(&v), y(r)));
        }
    }
    let points = || panels.values().flat_map(|g| g.values().flatten());
    let mut distinct_x: Vec<u64> = points().map(|p| p.0.to_bits()).collect();
    distinct_x.sort_unstable();
    distinct_x.dedup();
    if distinct_x.len() >= 2 {
        let xs: Vec<f64> = points().map(|p| p.0).collect();
        let ys: Vec<f64> = points().map(|p| p.1).collect();
        let bounds = plot::Bounds::of(&xs, &ys);
        for (p, groups) in &panels {
            let series: Vec<Series> = groups
                .iter()
                .map(|(k, pts)| {
                    let mut pts = pts.clone();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series {
                        name: k.clone(),
                        points: pts,
                    }
                })
                .collect();
            let title = match p {
                Some(p) => format!("Throughput vs {}: {p}", vars::label(x)),
                None => format!("Throughput vs {}", vars::label(x)),
            };
            out.push(Figure {
                svg: plot::lines_within(
                    &title,
                    x_axis(x, &xs),
                    Axis::linear(
                        if messages {
                            "messages/s (a round trip is two)"
                        } else {
                            "ops/s"
                        },
                        format_rate,
                    ),
                    &series,
                    (panels.len() > 1).then_some(&bounds),
                ),
                title,
            });
        }
    }
    out
}
