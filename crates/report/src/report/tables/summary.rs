//! The summary: a row per run (and one per operation type of a run of
//! several), with what every run shares said once above it.

use super::*;

/// The summary table, what every run shares said once and left out.
pub(super) fn blocks(runs: &[RunResult]) -> Vec<Block> {
    let mut summary = summary_table(runs);
    // What every run shares is said once, not in a column each.
    let shared = if runs.len() > 1 {
        summary.drop_constant(
            &[
                "transport",
                "mode",
                "size",
                "clients",
                "conns/client",
                "placement",
            ],
            |row| !row.first().is_some_and(|c| c.starts_with('↳')),
        )
    } else {
        Vec::new()
    };
    let mut out = vec![Block::Heading("Summary".into())];
    if shared.iter().any(|(_, v)| v != "-") {
        let parts: Vec<String> = shared
            .iter()
            .filter(|(_, v)| v != "-")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out.push(Block::Text(format!(
            "Every run has {}: not repeated in the table.",
            parts.join(", ")
        )));
    }
    out.push(Block::Table(summary));
    out
}

pub(crate) fn summary_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "transport",
        "mode",
        "size",
        "clients",
        "conns/client",
        "placement",
        "ops/s",
        "MiB/s in",
        "MiB/s out",
        "latency p50",
        "latency p99",
        "latency p99.9",
        "client CPU us/op",
        "stalls",
        "status",
    ]);
    let all: Vec<&RunResult> = runs.iter().collect();
    let shown = Shown::of(&all);
    // S3: the time to first byte, mean and p99 (the S3 report's columns):
    // the reads', or the one operation type's.
    let with_ttfb = runs
        .iter()
        .any(|r| r.summary.by_op.values().any(|o| o.ttfb.is_some()));
    if with_ttfb {
        for (k, h) in ["TTFB mean", "TTFB p99"].into_iter().enumerate() {
            t.head.insert(13 + k, h.to_string());
        }
    }
    let extra = extra_columns(&all);
    for r in runs {
        let row = run_row(r, &extra, &shown, with_ttfb);
        let width = row.len();
        t.rows.push(row);
        // A run of several operation types (S3 mixed): a row per type,
        // under the run's, with that type's figures.
        if r.summary.by_op.len() > 1 {
            for (op, o) in &r.summary.by_op {
                let mut sub = op_row(r, op, o, extra.len(), with_ttfb);
                sub.resize(width, String::new());
                t.rows.push(sub);
            }
        }
    }
    t.left = [1, 2, 6]
        .into_iter()
        .chain(
            (0..extra.len())
                .filter(|k| {
                    let v = extra[*k].as_str();
                    // Words, not numbers: left-aligned.
                    runs.iter()
                        .filter_map(|r| variable(r, v))
                        .any(|x| x.parse::<f64>().is_err())
                })
                .map(|k| 7 + k),
        )
        .chain([15 + extra.len() + if with_ttfb { 2 } else { 0 }])
        .collect();
    for (k, v) in extra.iter().enumerate() {
        t.head.insert(7 + k, vars::label(v).to_string());
    }
    t
}

/// A column for each parameter that varies and has none yet (a sweep over
/// arch, instances, depth or the server's command), after the placement.
fn extra_columns(all: &[&RunResult]) -> Vec<String> {
    varying(all)
        .into_iter()
        .filter(|v| {
            ![
                "clients",
                "connections",
                "conns_per_client",
                "size",
                "placement",
                "mode",
                "transport",
            ]
            .contains(&v.as_str())
        })
        .collect()
}

/// A latency statistic of `l` when the run has it, else "-".
fn lat_cell(r: &RunResult, stat: &str, l: &wirebench_core::hist::LatencySummary) -> String {
    if l.count > 0 && r.summary.has_latency(stat) {
        format_ns(match stat {
            "p50" => l.p50_ns,
            "p99" => l.p99_ns,
            _ => l.p999_ns,
        } as f64)
    } else {
        "-".into()
    }
}

/// The time to first byte's mean and p99, or "-".
fn ttfb_cells(t: Option<&wirebench_core::hist::LatencySummary>) -> Vec<String> {
    match t {
        Some(t) if t.count > 0 => vec![format_ns(t.mean_ns), format_ns(t.p99_ns as f64)],
        _ => vec!["-".into(), "-".into()],
    }
}

/// A run's row.
fn run_row(r: &RunResult, extra: &[String], shown: &Shown, with_ttfb: bool) -> Vec<String> {
    let s = &r.summary;
    let mut row = vec![
        match r.merged_from.len() {
            0 | 1 => r.run_id.clone(),
            n => format!("{} +{} instance(s)", r.run_id, n - 1),
        },
        r.spec.kind().to_string(),
        r.spec.transport.mode_name(),
        {
            let d = r.spec.transport.describe();
            match (d.has_size(), d.sizes_as_given()) {
                (false, _) => "-".into(),
                // A list or a range of sizes, as given.
                (true, Some(sizes)) => sizes,
                (true, None) => wirebench_core::units::format_size(d.size_bytes()),
            }
        },
        r.spec.clients.to_string(),
        r.spec.conns_per_client.to_string(),
        r.placement.policy.clone().unwrap_or_else(|| "-".into()),
    ];
    row.extend(
        extra
            .iter()
            .map(|v| shown.value(r, v).unwrap_or_else(|| "-".into())),
    );
    row.extend([
        format!("{:.0}", s.ops_per_s),
        format!("{:.3}", s.mib_per_s_in),
        format!("{:.3}", s.mib_per_s_out),
        lat_cell(r, "p50", &s.latency),
        lat_cell(r, "p99", &s.latency),
        lat_cell(r, "p999", &s.latency),
    ]);
    if with_ttfb {
        row.extend(ttfb_cells(s.ttfb_op().and_then(|o| o.ttfb.as_ref())));
    }
    row.extend([
        format!("{:.3}", s.client_cpu_us_per_op),
        s.hiccup.map_or("-".into(), |h| {
            format!(
                "max {} ({} s)",
                format_ns(h.max_ns as f64),
                h.stalled_seconds
            )
        }),
        format!("{:?}", r.status.state).to_lowercase(),
    ]);
    row
}

/// The row of one operation type of a run of several (under the run's).
fn op_row(
    r: &RunResult,
    op: &str,
    o: &wirebench_core::result::OpSummary,
    extra: usize,
    with_ttfb: bool,
) -> Vec<String> {
    let mut sub = vec![format!("↳ {op}"), String::new(), op.to_string()];
    sub.resize(7 + extra, String::new());
    let (mb_in, mb_out) = if o.bytes_in >= o.bytes_out {
        (o.mib_per_s, 0.0)
    } else {
        (0.0, o.mib_per_s)
    };
    sub.extend([
        format!("{:.0}", o.ops_per_s),
        format!("{mb_in:.3}"),
        format!("{mb_out:.3}"),
        lat_cell(r, "p50", &o.latency),
        lat_cell(r, "p99", &o.latency),
        lat_cell(r, "p999", &o.latency),
    ]);
    if with_ttfb {
        sub.extend(ttfb_cells(o.ttfb.as_ref()));
    }
    sub
}
