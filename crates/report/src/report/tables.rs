//! The report's tables: the summary, the server, endpoints, agents,
//! instances, programs, environment, read/write and size x connections.

use super::*;

pub(super) fn summary_table(runs: &[RunResult]) -> Table {
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

/// The server side of each run that measured it (embedded or observed):
/// CPU per op, cores actually used, CPU by thread group, threads outside
/// its cpuset, the allocator's share (`flame`), memory and context
/// switches. None when no run measured a server.
pub(super) fn server_table(runs: &[RunResult]) -> Option<Table> {
    let measured: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.summary.server_cpu_s.is_some())
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "server CPU us/op",
        "cores used (cpuset)",
        "ops/s per core used",
        "CPU by thread group (% of a core)",
        "threads outside the cpuset",
        "allocator share of samples",
        "peak RSS",
        "context switches (vol/invol)",
    ]);
    t.left = vec![4, 5, 6];
    t.rows = measured
        .iter()
        .map(|r| {
            let s = &r.summary;
            let th = s.server_threads.as_ref();
            let dash = || "-".to_string();
            vec![
                r.run_id.clone(),
                s.server_cpu_us_per_op
                    .map_or_else(dash, |v| format!("{v:.2}")),
                s.server_cores_used.map_or_else(dash, |u| {
                    let set = r
                        .placement
                        .server_cpus
                        .as_ref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default();
                    format!("{u:.2}{set}")
                }),
                s.ops_per_core_used.map_or_else(dash, |v| format!("{v:.0}")),
                th.map_or_else(dash, |t| {
                    t.groups
                        .iter()
                        .filter(|g| g.cpu_pct >= 0.5)
                        .take(5)
                        .map(|g| format!("{} {:.0}", g.group, g.cpu_pct))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                th.map_or_else(dash, |t| {
                    if t.outside_cpuset.is_empty() {
                        return "none".into();
                    }
                    t.outside_cpuset
                        .iter()
                        .take(4)
                        .map(|o| format!("{} ({:.2} s)", o.name, o.cpu_s))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                s.server_allocator.as_ref().map_or_else(dash, |a| {
                    let lib = a
                        .top
                        .first()
                        .map(|e| format!(" ({})", e.library))
                        .unwrap_or_default();
                    format!("{:.1}%{lib}", a.share_pct)
                }),
                s.server_peak_rss_bytes
                    .map_or_else(dash, |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64)),
                th.map_or_else(dash, |t| {
                    format!("{} / {}", t.voluntary_switches, t.involuntary_switches)
                }),
            ]
        })
        .collect();
    Some(t)
}

/// Runs against several endpoints: each endpoint's part, and its share of
/// the run's operations (an uneven share points at a slow endpoint). None
/// without such a run.
/// A row per stage of each run in stages (`--stages`): asked against sent
/// and completed, latency, and the sends late at its end.
pub(super) fn stages_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run", "stage", "asked/s", "sent/s", "done/s", "p50", "p99", "late", "kept up",
    ]);
    t.left = vec![1];
    for r in runs {
        for s in &r.stages {
            t.rows.push(vec![
                r.run_id.clone(),
                s.text.clone(),
                // A closed loop's stage asks connections, not a rate.
                match s.conns {
                    Some(_) => "-".into(),
                    None => format_rate(s.asked_per_s),
                },
                format_rate(s.sent_per_s),
                format_rate(s.completed_per_s),
                format_ns(s.latency.p50_ns as f64),
                format_ns(s.latency.p99_ns as f64),
                match s.conns {
                    Some(_) => "-".into(),
                    None => s.late_sends.to_string(),
                },
                if s.kept_up {
                    "yes".to_string()
                } else if s.backlog_in > 0 {
                    format!("behind ({} due before it)", s.backlog_in)
                } else {
                    "behind".into()
                },
            ]);
            for b in &s.bands {
                t.rows.push(vec![
                    String::new(),
                    format!("  {:.0}-{:.0}s", b.start_s, b.start_s + b.measured_s),
                    format_rate(b.asked_per_s),
                    format_rate(b.sent_per_s),
                    format_rate(b.completed_per_s),
                    format_ns(b.latency.p50_ns as f64),
                    format_ns(b.latency.p99_ns as f64),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

pub(super) fn endpoints_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "endpoint",
        "conns",
        "ops/s",
        "share of ops",
        "p50",
        "p99",
        "errors",
        "agents",
    ]);
    t.left = vec![1, 8];
    for r in runs.iter().filter(|r| !r.endpoints.is_empty()) {
        let total = r.endpoints.iter().map(|e| e.ops).sum::<u64>().max(1);
        for e in &r.endpoints {
            t.rows.push(vec![
                r.run_id.clone(),
                e.endpoint.clone(),
                e.connections.to_string(),
                format_rate(e.ops_per_s),
                format!("{:.1}%", e.ops as f64 * 100.0 / total as f64),
                format_ns(e.p50_ns as f64),
                format_ns(e.p99_ns as f64),
                e.errors.to_string(),
                if e.agents.is_empty() {
                    "-".into()
                } else {
                    e.agents.join(", ")
                },
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// Runs made by load agents: each agent's part, its CPU and its clock.
/// None without such a run.
pub(super) fn agents_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "agent",
        "state",
        "clients",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "schedule lag p99",
        "clock offset (uncertainty)",
    ]);
    t.left = vec![1, 2];
    for r in runs.iter().filter(|r| !r.agents.is_empty()) {
        for a in &r.agents {
            t.rows.push(vec![
                r.run_id.clone(),
                a.agent.clone(),
                format!("{:?}", a.state).to_lowercase(),
                a.clients.to_string(),
                format_rate(a.ops_per_s),
                format_ns(a.p50_ns as f64),
                format_ns(a.p99_ns as f64),
                format!("{:.2}", a.client_cpu_us_per_op),
                a.schedule_lag_p99_ns
                    .map_or_else(|| "-".into(), |l| format_ns(l as f64)),
                format!(
                    "{:+.3} ms (±{:.3} ms)",
                    a.clock_offset_ns as f64 / 1e6,
                    a.clock_uncertainty_ns as f64 / 1e6
                ),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// What an instance kept of its throughput alone, as a verdict: within 5%
/// (one run of each: about this VM's noise) is none.
pub(super) fn contention(kept: f64) -> &'static str {
    if kept >= 0.95 {
        "no contention"
    } else if kept >= 0.85 {
        "some contention"
    } else {
        "contention"
    }
}

/// Sweep points of several instances side by side: a row per instance
/// (its ops/s, latency, CPU, cpusets) under the aggregate's, and, where
/// each instance also ran alone (`alone = true`), what it kept of that
/// throughput and the contention verdict. None without such a point.
pub(super) fn instances_table(runs: &[RunResult]) -> Option<Table> {
    let mut t = Table::new([
        "run",
        "instance",
        "clients",
        "server CPUs",
        "client CPUs",
        "ops/s",
        "p50",
        "p99",
        "client CPU us/op",
        "server CPU us/op",
        "alone ops/s",
        "kept",
        "verdict",
    ]);
    t.left = vec![0, 1, 3, 4, 12];
    let opt_ns = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| format_ns(v as f64));
    for r in runs.iter().filter(|r| r.instances.len() > 1) {
        let s = &r.summary;
        let alone: Vec<f64> = r
            .instances
            .iter()
            .filter_map(|i| i.alone_ops_per_s)
            .collect();
        let kept_all =
            (alone.len() == r.instances.len()).then(|| s.ops_per_s / alone.iter().sum::<f64>());
        t.row([
            r.run_id.clone(),
            format!("all {}", r.instances.len()),
            r.spec.clients.to_string(),
            "-".into(),
            "-".into(),
            format_rate(s.ops_per_s),
            opt_ns((s.latency.count > 0 && s.has_latency("p50")).then_some(s.latency.p50_ns)),
            opt_ns((s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns)),
            format!("{:.2}", s.client_cpu_us_per_op),
            s.server_cpu_us_per_op
                .map_or("-".into(), |v| format!("{v:.2}")),
            if kept_all.is_some() {
                format_rate(alone.iter().sum())
            } else {
                "-".into()
            },
            kept_all.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
            kept_all.map_or("-".into(), |k| contention(k).to_string()),
        ]);
        for (k, i) in r.instances.iter().enumerate() {
            let kept = i.kept();
            t.row([
                format!("↳ {}", i.run_id),
                (k + 1).to_string(),
                i.clients.to_string(),
                i.server_cpus.as_ref().map_or("-".into(), |c| c.to_string()),
                i.client_cpus.to_string(),
                format_rate(i.ops_per_s),
                opt_ns(i.p50_ns),
                opt_ns(i.p99_ns),
                format!("{:.2}", i.client_cpu_us_per_op),
                i.server_cpu_us_per_op
                    .map_or("-".into(), |v| format!("{v:.2}")),
                i.alone_ops_per_s.map_or("-".into(), format_rate),
                kept.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k)),
                kept.map_or("-".into(), |k| contention(k).to_string()),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// exec runs: the program, the latency statistics it gave, and how it
/// measured. None without an exec run.
pub(super) fn program_table(runs: &[RunResult]) -> Option<Table> {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| {
            let t = r.summary.tool.as_ref()?;
            Some(vec![
                r.run_id.clone(),
                t.program.clone(),
                t.parser.clone(),
                if t.histogram {
                    "a histogram (every percentile)".into()
                } else if t.latency_stats.is_empty() {
                    "none".into()
                } else {
                    t.latency_stats.join(", ")
                },
                t.method.join("; "),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "run",
        "program",
        "parser",
        "latency it gave",
        "how it measured",
    ]);
    t.left = vec![1, 2, 3, 4];
    t.rows = rows;
    Some(t)
}

pub(super) fn env_table(runs: &[RunResult]) -> Table {
    let mut t = Table::new([
        "run",
        "host",
        "kernel",
        "CPU",
        "build",
        "wirebench",
        "started",
    ]);
    t.left = (1..7).collect();
    t.rows = runs
        .iter()
        .map(|r| {
            let e = &r.env;
            vec![
                r.run_id.clone(),
                e.hostname.clone(),
                e.kernel.clone(),
                e.cpu_model.clone(),
                e.build_profile.clone(),
                format!("{} ({})", e.wirebench_version, e.git_revision),
                r.started_at.clone(),
            ]
        })
        .collect();
    t
}

/// Reads and writes side by side by size and connections (the S3
/// report's throughput table): each the best run's ops/s and MiB/s, and
/// the R/W ratio. None unless the runs have both.
pub(super) fn read_write_table(runs: &[RunResult]) -> Option<Table> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let best = |op: &str, size: &(u64, String), conns: usize| {
        all.iter()
            .filter(|c| c.op == op && c.size == *size && c.conns == conns)
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
    };
    if !all.iter().any(|c| c.op == "get") || !all.iter().any(|c| c.op == "put") {
        return None;
    }
    let mut keys: Vec<((u64, String), usize)> = all
        .iter()
        .filter(|c| c.op == "get" || c.op == "put")
        .map(|c| (c.size.clone(), c.conns))
        .collect();
    keys.sort();
    keys.dedup();
    let mut t = Table::new([
        "size",
        "connections",
        "read ops/s",
        "read MiB/s",
        "write ops/s",
        "write MiB/s",
        "R/W ratio",
    ]);
    for (size, conns) in keys {
        let (r, w) = (best("get", &size, conns), best("put", &size, conns));
        let figs = |c: Option<&Cell>| match c {
            Some(c) => [format!("{:.1}", c.ops_per_s), format!("{:.3}", c.mib_per_s)],
            None => ["-".into(), "-".into()],
        };
        let ratio = match (r, w) {
            (Some(r), Some(w)) if w.mib_per_s > 0.0 => format!("{:.2}", r.mib_per_s / w.mib_per_s),
            _ => "-".into(),
        };
        let mut row = vec![size.1.clone(), conns.to_string()];
        row.extend(figs(r));
        row.extend(figs(w));
        row.push(ratio);
        t.row(row);
    }
    Some(t)
}

/// One operation type of one run, as the size x connections table shows it.
pub(super) struct Cell<'a> {
    pub(super) op: String,
    /// Bytes, and the label (an S3 list or range as given).
    pub(super) size: (u64, String),
    pub(super) conns: usize,
    pub(super) ops_per_s: f64,
    pub(super) mib_per_s: f64,
    p99_ns: Option<u64>,
    pub(super) ttfb: Option<wirebench_core::hist::LatencySummary>,
    pub(super) run: &'a RunResult,
}

/// A run's cells: one per operation type when it has several (S3 mixed),
/// else one for its mode.
pub(super) fn cells(r: &RunResult) -> Vec<Cell<'_>> {
    let s = &r.summary;
    let base = |op: String| Cell {
        op,
        size: (
            r.spec.transport.size_bytes(),
            size_label(r).unwrap_or_else(|| {
                wirebench_core::units::format_size(r.spec.transport.size_bytes())
            }),
        ),
        conns: r.spec.connections(),
        ops_per_s: s.ops_per_s,
        mib_per_s: s.mib_per_s_in.max(s.mib_per_s_out),
        p99_ns: (s.latency.count > 0 && s.has_latency("p99")).then_some(s.latency.p99_ns),
        ttfb: s.by_op.get("get").and_then(|o| o.ttfb),
        run: r,
    };
    if s.by_op.len() < 2 {
        return vec![base(r.spec.transport.mode_name())];
    }
    s.by_op
        .iter()
        .map(|(op, o)| Cell {
            ops_per_s: o.ops_per_s,
            mib_per_s: o.mib_per_s,
            p99_ns: (o.latency.count > 0).then_some(o.latency.p99_ns),
            ttfb: o.ttfb,
            ..base(op.clone())
        })
        .collect()
}

/// Throughput and p99 by message (object) size x connections, with the
/// objectives' pass/fail marks: the S3 report's tables, for any transport.
/// One table per operation type (GET and PUT apart), each None unless its
/// runs span two sizes or two connection counts.
pub(super) fn size_by_clients(runs: &[RunResult]) -> Vec<(String, Table)> {
    let all: Vec<Cell> = runs
        .iter()
        .filter(|r| r.summary.ops > 0)
        .flat_map(cells)
        .collect();
    let mut ops: Vec<&str> = all.iter().map(|c| c.op.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    let mut out = Vec::new();
    for op in &ops {
        let here: Vec<&Cell> = all.iter().filter(|c| c.op == *op).collect();
        let mut sizes: Vec<(u64, String)> = here.iter().map(|c| c.size.clone()).collect();
        let mut conns: Vec<usize> = here.iter().map(|c| c.conns).collect();
        sizes.sort_unstable();
        sizes.dedup();
        conns.sort_unstable();
        conns.dedup();
        if sizes.len() < 2 && conns.len() < 2 {
            continue;
        }
        let mut head = vec!["size".to_string()];
        head.extend(conns.iter().map(|c| format!("{c} conn(s)")));
        let rows = sizes
            .iter()
            .map(|size| {
                let mut row = vec![size.1.clone()];
                for &n in &conns {
                    let at: Vec<&&Cell> = here
                        .iter()
                        .filter(|c| c.size == *size && c.conns == n)
                        .collect();
                    let Some(best) = at.iter().max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
                    else {
                        row.push("-".into());
                        continue;
                    };
                    let mut cell = format!("{:.1} MiB/s", best.mib_per_s);
                    if let Some(p99) = best.p99_ns {
                        cell.push_str(&format!(", p99 {}", format_ns(p99 as f64)));
                    }
                    // S3: the reads' time to first byte (the S3 report's TTFB columns).
                    if let Some(t) = &best.ttfb {
                        cell.push_str(&format!(
                            ", TTFB mean {} p99 {}",
                            format_ns(t.mean_ns),
                            format_ns(t.p99_ns as f64)
                        ));
                    }
                    let slos = &best.run.slos;
                    if !slos.is_empty() {
                        let missed: Vec<&str> = slos
                            .iter()
                            .filter(|o| !o.pass)
                            .map(|o| o.slo.as_str())
                            .collect();
                        if missed.is_empty() {
                            cell.push_str(", SLO met");
                        } else {
                            cell.push_str(&format!(", SLO missed: {}", missed.join(" ")));
                        }
                    }
                    if at.len() > 1 {
                        cell.push_str(&format!(" (best of {})", at.len()));
                    }
                    row.push(cell);
                }
                row
            })
            .collect();
        let title = if ops.len() > 1 {
            format!("Throughput and p99 by size and connections: {op}")
        } else {
            "Throughput and p99 by size and connections".to_string()
        };
        out.push((
            title,
            Table {
                head,
                rows,
                left: Vec::new(),
            },
        ));
    }
    out
}
