//! Heatmaps: CPU busy per core over time, and a program's own threads.

use super::*;

/// Per-core CPU over time, client and server cores apart, and the
/// program's own threads: of the runs the layout names (a spec's
/// `[report] heatmaps`), else of up to four runs spread over the set.
pub(super) fn draw(d: &Drawn) -> Vec<Figure> {
    let chosen: Vec<&RunResult> = match &d.l.heatmaps {
        Some(points) => points
            .iter()
            .flat_map(|p| d.ok.iter().copied().filter(move |r| at_point(r, p)))
            .collect(),
        None => {
            let step = d.ok.len().div_ceil(4).max(1);
            d.ok.iter().copied().step_by(step).collect()
        }
    };
    let mut out = Vec::new();
    for r in chosen {
        out.extend(cpu_heatmap(d, r));
        out.extend(reactor_heatmap(d, r));
    }
    out
}

/// Whether the run has every `name=value` of `point` (names as the
/// legends show them: `server=crimson`).
fn at_point(r: &RunResult, point: &str) -> bool {
    point.split_whitespace().all(|kv| {
        kv.split_once('=')
            .is_some_and(|(k, v)| variable(r, k).is_some_and(|x| x == v))
    })
}

/// CPU busy per core over time, client and server cores apart: the
/// server's rows the share of each core its threads used, where the run
/// observed them (else the core's busy, whoever used it). An exec run
/// whose program printed no per-second lines has them apart
/// (`cpu_seconds`).
fn cpu_heatmap(d: &Drawn, r: &RunResult) -> Option<Figure> {
    type Cores<'a> = (
        u64,
        u64,
        &'a [wirebench_core::result::CoreBusy],
        &'a [wirebench_core::result::CoreBusy],
    );
    let share = r.intervals.iter().any(|i| !i.server_share.is_empty())
        || r.cpu_seconds.iter().any(|c| !c.server_share.is_empty());
    let server = |busy, share_of| if share { share_of } else { busy };
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
                    server(&i.server_cores[..], &i.server_share[..]),
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
                    server(&c.server_cores[..], &c.server_share[..]),
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
        // The title says when the server's rows are its threads' share.
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
        let title = match share {
            true => format!(
                "CPU busy per core, of the server by its threads: {}",
                d.name(r)
            ),
            false => format!("CPU busy per core: {}", d.name(r)),
        };
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
