//! Heatmaps: CPU busy per core over time, and a program's own threads.

use super::*;

/// Per-core CPU over time, client and server cores apart, and the
/// program's own threads: of up to four runs spread over the set.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let step = d.ok.len().div_ceil(4).max(1);
    let mut out = Vec::new();
    for r in d.ok.iter().step_by(step) {
        out.extend(cpu_heatmap(d, r));
        out.extend(reactor_heatmap(d, r));
    }
    out
}

/// CPU busy per core over time, client and server cores apart. An exec
/// run whose program printed no per-second lines has them apart
/// (`cpu_seconds`).
fn cpu_heatmap(d: &Drawn, r: &RunResult) -> Option<Figure> {
    type Cores<'a> = (
        u64,
        u64,
        &'a [wirebench_core::result::CoreBusy],
        &'a [wirebench_core::result::CoreBusy],
    );
    let spans: Vec<Cores> = if r
        .intervals
        .iter()
        .any(|i| !i.client_cores.is_empty() || !i.server_cores.is_empty())
    {
        r.intervals
            .iter()
            .map(|i| {
                (
                    i.start_ns,
                    i.end_ns,
                    &i.client_cores[..],
                    &i.server_cores[..],
                )
            })
            .collect()
    } else {
        r.cpu_seconds
            .iter()
            .map(|c| {
                (
                    c.start_ns,
                    c.end_ns,
                    &c.client_cores[..],
                    &c.server_cores[..],
                )
            })
            .collect()
    };
    let n = spans.len();
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    for (who, side) in [("client", 0), ("server", 1)] {
        let mut cores: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (k, sp) in spans.iter().enumerate() {
            for c in if side == 0 { sp.2 } else { sp.3 } {
                cores.entry(c.cpu).or_insert_with(|| vec![0.0; n])[k] = c.busy_pct;
            }
        }
        for (cpu, v) in cores {
            rows.push((format!("{who} cpu {cpu}"), v));
        }
    }
    let edges: Vec<f64> = spans
        .first()
        .map(|s| s.0 as f64 / 1e9)
        .into_iter()
        .chain(spans.iter().map(|s| s.1 as f64 / 1e9))
        .collect();
    if !rows.is_empty() {
        let title = format!("CPU busy per core: {}", d.name(r));
        return Some(Figure {
            svg: plot::heatmap(
                &title,
                "time since the load started (s)",
                &rows,
                &edges,
                warmup(&[r]).as_ref(),
            ),
            title,
        });
    }
    None
}

/// What the program said of its own threads (perf-crimson-msgr's client
/// reactors), second by second.
fn reactor_heatmap(d: &Drawn, r: &RunResult) -> Option<Figure> {
    let threads = r
        .intervals
        .iter()
        .map(|i| i.program_busy_pct.len())
        .max()
        .unwrap_or(0);
    if threads > 0 {
        let rows: Vec<(String, Vec<f64>)> = (0..threads)
            .map(|t| {
                (
                    format!("reactor {t}"),
                    r.intervals
                        .iter()
                        .map(|i| i.program_busy_pct.get(t).copied().unwrap_or(0.0))
                        .collect(),
                )
            })
            .collect();
        let edges: Vec<f64> = r
            .intervals
            .first()
            .map(|i| i.start_ns as f64 / 1e9)
            .into_iter()
            .chain(r.intervals.iter().map(|i| i.end_ns as f64 / 1e9))
            .collect();
        let title = format!(
            "The program's reactor utilisation (its own %): {}",
            d.name(r)
        );
        return Some(Figure {
            svg: plot::heatmap(
                &title,
                "time since its measured phase began (s)",
                &rows,
                &edges,
                None,
            ),
            title,
        });
    }
    None
}
