//! An experiment's summary table (`wirebench table`): one row per planned
//! run of a sweep (its variables, then the messenger report's columns plus
//! p99, CPU per operation and scaling), or one per run of any directory.

use crate::export::Table;
use crate::inputs::InputError;
use std::path::{Path, PathBuf};
use wirebench_core::index::{self, Entry};
use wirebench_core::result::RunResult;

/// One row: the run's variables, then the figures.
struct Row {
    vars: Vec<(String, String)>,
    status: String,
    ops_per_s: f64,
    placement: String,
    clients: usize,
    connect_s: f64,
    latency_ms: f64,
    received: u64,
    messaging_s: f64,
    mb_out: f64,
    /// Payload MiB/s in (None: an index written before it kept it).
    mb_in: Option<f64>,
    smp: usize,
    p99_ms: f64,
    /// S3: the reads' time to first byte, mean and p99, in ms.
    ttfb_ms: Option<(f64, f64)>,
    cpu_us_per_op: f64,
    scaling: Option<f64>,
}

fn from_entry(e: &Entry) -> Row {
    let a = e.aggregate.as_ref();
    Row {
        vars: e
            .point
            .iter()
            .filter(|(k, _)| k != "clients" && k != "placement")
            .cloned()
            .chain((e.rep > 1 || e.key.contains("rep=")).then(|| ("rep".into(), e.rep.to_string())))
            .collect(),
        status: e.status.clone(),
        ops_per_s: a.map_or(0.0, |a| a.ops_per_s),
        placement: e
            .placement
            .as_ref()
            .map_or("-".into(), |p| p.policy.clone()),
        clients: a.map_or(0, |a| a.clients),
        connect_s: a.map_or(0.0, |a| a.connect_time_s),
        // NaN: a statistic the program of an exec run did not give.
        latency_ms: a.map_or(0.0, |a| {
            if a.latency_stats.is_none() || a.has_latency("mean") {
                a.latency.mean_ns / 1e6
            } else {
                f64::NAN
            }
        }),
        received: a.map_or(0, |a| a.messages_received),
        messaging_s: a.map_or(0.0, |a| a.messaging_time_s),
        // An index before schema 4 kept MB/s (10^6), headers and all.
        mb_out: a.map_or(0.0, |a| match a.mb_per_s_out {
            Some(mb) => wirebench_core::units::mib(mb * 1e6),
            None => a.mib_per_s_out,
        }),
        mb_in: a.and_then(|a| a.mib_per_s_in),
        smp: a.map_or(0, |a| a.smp),
        p99_ms: a.map_or(0.0, |a| {
            if a.latency_stats.is_none() || a.has_latency("p99") {
                a.latency.p99_ns as f64 / 1e6
            } else {
                f64::NAN
            }
        }),
        ttfb_ms: a
            .and_then(|a| a.ttfb)
            .map(|t| (t.mean_ns / 1e6, t.p99_ns as f64 / 1e6)),
        cpu_us_per_op: a.map_or(0.0, |a| a.client_cpu_us_per_op),
        scaling: e.scaling_vs_one_instance,
    }
}

fn from_run(r: &RunResult) -> Row {
    let s = &r.summary;
    Row {
        vars: vec![("run".into(), r.run_id.clone())],
        status: format!("{:?}", r.status.state).to_lowercase(),
        ops_per_s: s.ops_per_s,
        placement: r.placement.policy.clone().unwrap_or_else(|| "-".into()),
        clients: r.spec.clients,
        connect_s: s.connect_time_ns as f64 / 1e9,
        latency_ms: if s.tool.is_none() || s.has_latency("mean") {
            s.latency.mean_ns / 1e6
        } else {
            f64::NAN
        },
        received: s.messages_received,
        messaging_s: s.measured_ns as f64 / 1e9,
        mb_out: s.mib_per_s_out,
        mb_in: Some(s.mib_per_s_in),
        smp: r.placement.server_cpus.as_ref().map_or(0, |c| c.len()),
        p99_ms: if s.tool.is_none() || s.has_latency("p99") {
            s.latency.p99_ns as f64 / 1e6
        } else {
            f64::NAN
        },
        ttfb_ms: {
            s.ttfb_op()
                .and_then(|o| o.ttfb)
                .map(|t| (t.mean_ns / 1e6, t.p99_ns as f64 / 1e6))
        },
        cpu_us_per_op: s.client_cpu_us_per_op,
        scaling: None,
    }
}

/// Every run under `dir`, skipping (and saying so on stderr) a run.json
/// that does not read: a table of what is there beats no table.
fn runs_under(dir: &Path) -> Result<Vec<RunResult>, InputError> {
    let bad = |why: String| InputError::Bad {
        path: dir.to_path_buf(),
        why,
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| bad(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs {
        match wirebench_core::store::load(&d) {
            Ok(r) => out.push(r),
            Err(e) => eprintln!("skipping {}: {e}", d.display()),
        }
    }
    Ok(out)
}

/// The summary table of the experiment (or the runs) in `dir`.
pub fn table(dir: &Path) -> Result<Table, InputError> {
    let rows: Vec<Row> = match index::load(dir).map_err(|e| InputError::Bad {
        path: e.path.clone(),
        why: e.why,
    })? {
        Some(ix) => ix.runs.iter().flat_map(|e| entry_rows(dir, e)).collect(),
        None => runs_under(dir)?.iter().map(from_run).collect(),
    };
    if rows.is_empty() {
        return Err(InputError::NoRuns(dir.to_path_buf()));
    }
    let mut var_names: Vec<String> = Vec::new();
    for r in &rows {
        for (k, _) in &r.vars {
            if !var_names.contains(k) {
                var_names.push(k.clone());
            }
        }
    }
    let short = short_values(&rows, &var_names);
    // S3: the S3 report's TTFB columns, before the status.
    let with_ttfb = rows.iter().any(|r| r.ttfb_ms.is_some());
    let mut t = Table::new(table_head(&var_names, with_ttfb));
    t.left = (0..var_names.len())
        .chain([
            var_names.len() + 1,
            var_names.len() + 12 + if with_ttfb { 2 } else { 0 },
        ])
        .collect();
    for r in &rows {
        t.row(table_row(r, &var_names, &short, with_ttfb));
    }
    // What came in, where it is not what went out (S3 reads, a stream;
    // an echo's is the same as its out), after the out throughput.
    if rows.iter().any(|r| {
        r.mb_in
            .is_some_and(|i| (i - r.mb_out).abs() > 0.01 * i.max(r.mb_out))
    }) && let Some(k) = t.head.iter().position(|h| h == "out throughput (MiB/s)")
    {
        t.head.insert(k + 1, "in throughput (MiB/s)".into());
        for (row, r) in t.rows.iter_mut().zip(&rows) {
            row.insert(k + 1, r.mb_in.map_or("-".into(), |i| format!("{i:.3}")));
        }
        for c in &mut t.left {
            if *c > k {
                *c += 1;
            }
        }
    }
    // Scaling against one instance: a column only where a point ran
    // several instances (else it would read "-" in every row).
    if rows.iter().all(|r| r.scaling.is_none())
        && let Some(k) = t.head.iter().position(|h| h == "scaling")
    {
        t.head.remove(k);
        for row in &mut t.rows {
            row.remove(k);
        }
        for c in &mut t.left {
            if *c > k {
                *c -= 1;
            }
        }
    }
    Ok(t)
}

/// A sweep's point as rows: its aggregate, and for a point of several
/// instances a row per instance under it, with its own figures and
/// cpusets.
fn entry_rows(dir: &Path, e: &index::Entry) -> Vec<Row> {
    let mut rows = vec![from_entry(e)];
    if e.run_ids.len() <= 1 {
        return rows;
    }
    let n = e.run_ids.len();
    for (k, id) in e.run_ids.iter().enumerate() {
        let Ok(r) = wirebench_core::store::load(&dir.join(id)) else {
            continue;
        };
        let mut row = from_run(&r);
        row.vars = e
            .point
            .iter()
            .filter(|(k, _)| k != "clients" && k != "placement")
            .map(|(key, v)| match key.as_str() {
                "instances" => (key.clone(), format!("↳ {} of {n}", k + 1)),
                _ => (key.clone(), v.clone()),
            })
            .collect();
        // Its own cpusets, where its placement is.
        row.placement = format!(
            "{} (server {}, client {})",
            row.placement,
            r.placement
                .server_cpus
                .as_ref()
                .map_or("-".into(), |c| c.to_string()),
            r.placement.client_cpus
        );
        rows.push(row);
    }
    rows
}

/// Long values (server commands) by short names, per variable.
fn short_values(
    rows: &[Row],
    var_names: &[String],
) -> std::collections::BTreeMap<(String, String), String> {
    let mut short = std::collections::BTreeMap::new();
    for k in var_names {
        let mut values: Vec<String> = rows
            .iter()
            .flat_map(|r| {
                r.vars
                    .iter()
                    .filter(|(x, _)| x == k)
                    .map(|(_, v)| v.clone())
            })
            .collect();
        values.sort();
        values.dedup();
        for (raw, name) in values
            .iter()
            .zip(wirebench_core::vars::short_values(&values))
        {
            short.insert((k.clone(), raw.clone()), name);
        }
    }
    short
}

/// The columns: the variables, then the figures (the TTFB's before the
/// status when a run has them).
fn table_head(var_names: &[String], with_ttfb: bool) -> Vec<String> {
    let mut head: Vec<String> = var_names
        .iter()
        .map(|k| wirebench_core::vars::label(k).to_string())
        .collect();
    head.extend(
        [
            "IOPS (k)",
            "placement",
            "clients",
            "connect time (s)",
            "latency mean (ms)",
            "messages received",
            "messaging time (s)",
            "out throughput (MiB/s)",
            "server CPUs (smp)",
            "p99 (ms)",
            "client CPU (us/op)",
            "scaling",
            "status",
        ]
        .map(String::from),
    );
    if with_ttfb {
        let at = head.len() - 1;
        head.splice(
            at..at,
            ["ttfb mean (ms)", "ttfb p99 (ms)"].map(String::from),
        );
    }
    head
}

/// A row's cells.
fn table_row(
    r: &Row,
    var_names: &[String],
    short: &std::collections::BTreeMap<(String, String), String>,
    with_ttfb: bool,
) -> Vec<String> {
    let ms = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.6}")
        }
    };
    let mut c: Vec<String> = var_names
        .iter()
        .map(|k| {
            r.vars
                .iter()
                .find(|(x, _)| x == k)
                .map_or("-".into(), |(_, v)| {
                    short.get(&(k.clone(), v.clone())).unwrap_or(v).clone()
                })
        })
        .collect();
    c.extend([
        format!("{:.3}", r.ops_per_s / 1e3),
        r.placement.clone(),
        r.clients.to_string(),
        // Not measured (an exec run's program): "-", not 0.
        match r.connect_s {
            0.0 => "-".into(),
            c => format!("{c:.6}"),
        },
        ms(r.latency_ms),
        r.received.to_string(),
        format!("{:.3}", r.messaging_s),
        format!("{:.3}", r.mb_out),
        match r.smp {
            0 => "-".into(),
            n => n.to_string(),
        },
        ms(r.p99_ms),
        format!("{:.3}", r.cpu_us_per_op),
        r.scaling.map_or("-".into(), |s| format!("{s:.2}")),
    ]);
    if with_ttfb {
        let (mean, p99) = r.ttfb_ms.unwrap_or((f64::NAN, f64::NAN));
        c.extend([ms(mean), ms(p99)]);
    }
    c.push(r.status.clone());
    c
}
