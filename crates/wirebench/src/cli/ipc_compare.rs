//! `wirebench ipc-compare`: one workload over shared memory (each wait
//! strategy), a Unix socket pair, TCP loopback and a pipe pair, against the
//! same server with the same records, so a user sees what shared memory
//! buys on their machine. Variants are interleaved and repeated; the table
//! shows medians. Every run is kept as a result.

use super::run::{self, RunArgs, Session};
use crate::usage;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::result::{RunResult, RunState};
use wirebench_core::spec::{Channel, TransportKind, Wait};
use wirebench_core::store;
use wirebench_core::topo::Topology;
use wirebench_core::units::{format_ns, format_rate};

#[derive(Args, Debug)]
pub struct IpcCompareArgs {
    /// The workload: every flag of `run` for --transport shm (--mode, --size, --sessions,
    /// --clients-as, --depth, --duration...). --transport, --channel and --wait are set by
    /// ipc-compare itself.
    #[command(flatten)]
    run: RunArgs,
    /// Rounds: each runs every variant once, in turn. Default: 3.
    #[arg(long = "rounds", default_value_t = 3)]
    rounds: usize,
}

const VARIANTS: [(&str, Channel, Option<Wait>); 6] = [
    ("shm-spin", Channel::Shm, Some(Wait::Spin)),
    ("shm-adaptive", Channel::Shm, Some(Wait::Adaptive)),
    ("shm-futex", Channel::Shm, Some(Wait::Futex)),
    ("unix", Channel::Unix, None),
    ("tcp", Channel::Tcp, None),
    ("pipe", Channel::Pipe, None),
];

/// One variant's medians over the rounds.
#[derive(Debug, Serialize)]
struct Row {
    variant: String,
    runs: Vec<String>,
    ops_per_s: f64,
    messages_per_s: f64,
    p50_ns: Option<f64>,
    p99_ns: Option<f64>,
    client_cpu_us_per_op: f64,
    /// ops/s divided by the Unix socket's.
    ops_vs_unix: Option<f64>,
    /// p50 divided by the Unix socket's.
    p50_vs_unix: Option<f64>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

pub fn ipc_compare(mut a: IpcCompareArgs) -> anyhow::Result<ExitCode> {
    for (flag, set) in [
        ("--transport", a.run.transport.is_some()),
        ("--channel", a.run.channel.is_some()),
        ("--wait", a.run.wait.is_some()),
    ] {
        if set {
            usage!("{flag}: ipc-compare sets it for each variant; drop it");
        }
    }
    if !(1..=100).contains(&a.rounds) {
        usage!("--rounds {}: must be between 1 and 100", a.rounds);
    }
    if a.run.repeat != 1 || a.run.hlog.is_some() || !a.run.slo.is_empty() {
        usage!("--repeat, --hlog and --slo apply to `run`; ipc-compare repeats with --rounds");
    }
    if a.run.rate.is_some() {
        usage!("--rate: ipc-compare measures each channel at its own pace (closed loop)");
    }
    a.run.transport = Some(TransportKind::Shm);
    let topo = Topology::read();
    let (base, placement) = run::validate(&a.run, &topo)?;
    let text = a.run.format == "text";
    let mut session = Session::open(&base)?;
    let mut out = std::io::stdout().lock();
    if text {
        eprintln!(
            "wirebench ipc-compare: {} {}B, {} session(s), clients as {}, {} round(s) of {} variants",
            base.mode,
            base.size_bytes,
            base.clients,
            base.shm.as_ref().expect("shm").clients_as,
            a.rounds,
            VARIANTS.len()
        );
    }
    let mut results: Vec<(usize, RunResult)> = Vec::new();
    let mut failed: Option<String> = None;
    'rounds: for round in 0..a.rounds {
        for (v, (name, channel, wait)) in VARIANTS.iter().enumerate() {
            let mut spec = base.clone();
            let shm = spec.shm.as_mut().expect("shm");
            shm.channel = *channel;
            shm.wait = wait.unwrap_or(Wait::Futex);
            spec.poll = *wait == Some(Wait::Spin);
            let mut r = session.measure(&spec, &placement, false);
            r.run_id = store::new_run_id(&format!("ipc-compare-{name}-r{}", round + 1));
            r.command_line = super::args::command_line();
            r.started_at = store::now_rfc3339();
            store::save(&a.run.results, &r)
                .with_context(|| format!("saving under {}", a.run.results.display()))?;
            store::append_summary_csv(&a.run.results, &r)?;
            let s = &r.summary;
            if text {
                eprintln!(
                    "  round {}/{} {name:<13} {:>10} ops/s  p50 {}",
                    round + 1,
                    a.rounds,
                    format_rate(s.ops_per_s),
                    if s.latency.count > 0 {
                        format_ns(s.latency.p50_ns as f64)
                    } else {
                        "-".into()
                    }
                );
            } else if a.run.format == "csv" {
                writeln!(out, "{name},{}", run::csv_line(&r))?;
            }
            let state = r.status.state;
            let reason = r.status.reason.clone();
            results.push((v, r));
            if state != RunState::Complete || session.interrupted() {
                failed = Some(reason.unwrap_or_else(|| "interrupted".into()));
                break 'rounds;
            }
        }
    }
    session.close(None);
    let rows = table(&results);
    if text {
        print_table(&mut out, &rows)?;
        writeln!(
            out,
            "results: {} ({} runs)",
            a.run.results.display(),
            results.len()
        )?;
    } else if a.run.format == "json" {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    }
    out.flush()?;
    match failed {
        None => Ok(ExitCode::SUCCESS),
        Some(why) if session.interrupted() => {
            eprintln!("interrupted ({why}): the runs so far are saved");
            Ok(ExitCode::from(130))
        }
        Some(why) => {
            eprintln!("error: a run failed: {why}; the runs so far are saved");
            Ok(ExitCode::from(1))
        }
    }
}

fn table(results: &[(usize, RunResult)]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for (v, (name, _, _)) in VARIANTS.iter().enumerate() {
        let runs: Vec<&RunResult> = results
            .iter()
            .filter(|(i, r)| *i == v && r.status.state == RunState::Complete)
            .map(|(_, r)| r)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let med = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(|r| f(r)).collect());
        let has_latency = runs.iter().all(|r| r.summary.latency.count > 0);
        let per_op = if runs[0].spec.mode.has_response() {
            2.0
        } else {
            1.0
        };
        let ops = med(&|r| r.summary.ops_per_s);
        rows.push(Row {
            variant: name.to_string(),
            runs: runs.iter().map(|r| r.run_id.clone()).collect(),
            ops_per_s: ops,
            messages_per_s: ops * per_op,
            p50_ns: has_latency.then(|| med(&|r| r.summary.latency.p50_ns as f64)),
            p99_ns: has_latency.then(|| med(&|r| r.summary.latency.p99_ns as f64)),
            client_cpu_us_per_op: med(&|r| r.summary.client_cpu_us_per_op),
            ops_vs_unix: None,
            p50_vs_unix: None,
        });
    }
    let unix = rows
        .iter()
        .find(|r| r.variant == "unix")
        .map(|r| (r.ops_per_s, r.p50_ns));
    if let Some((u_ops, u_p50)) = unix {
        for r in &mut rows {
            r.ops_vs_unix = (u_ops > 0.0).then(|| r.ops_per_s / u_ops);
            r.p50_vs_unix = match (r.p50_ns, u_p50) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
        }
    }
    rows
}

fn print_table(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<13} {:>12} {:>12} {:>10} {:>10} {:>11} {:>10} {:>10}",
        "variant", "ops/s", "messages/s", "p50", "p99", "CPU us/op", "x unix", "p50/unix"
    )?;
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("-".to_string(), f);
    for r in rows {
        writeln!(
            out,
            "{:<13} {:>12} {:>12} {:>10} {:>10} {:>11.2} {:>10} {:>10}",
            r.variant,
            format_rate(r.ops_per_s),
            format_rate(r.messages_per_s),
            opt(r.p50_ns, &format_ns),
            opt(r.p99_ns, &format_ns),
            r.client_cpu_us_per_op,
            opt(r.ops_vs_unix, &|x| format!("{x:.2}x")),
            opt(r.p50_vs_unix, &|x| format!("{x:.3}")),
        )?;
    }
    writeln!(
        out,
        "medians over the rounds; a round trip is two messages; shm-spin keeps a core busy on each side"
    )
}
