//! `ipc-compare`: one shm workload over shared memory (each wait strategy),
//! a Unix socket pair, TCP loopback and a pipe pair, against the same
//! server with the same records, so a user sees what shared memory buys on
//! their machine. Variants are interleaved and repeated; every run is kept
//! as a result.

use crate::RunError;
use crate::process::Cancel;
use crate::record::Recorder;
use crate::session::{Events, Session, SessionOptions};
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::{RunResult, RunState};
use wirebench_core::spec::{Channel, RunSpec, TransportKind, TransportSpec, Wait};
use wirebench_core::store;
use wirebench_core::topo::Topology;

/// The variants, in the order they run in each round.
pub const VARIANTS: [(&str, Channel, Option<Wait>); 6] = [
    ("shm-spin", Channel::Shm, Some(Wait::Spin)),
    ("shm-adaptive", Channel::Shm, Some(Wait::Adaptive)),
    ("shm-futex", Channel::Shm, Some(Wait::Futex)),
    ("unix", Channel::Unix, None),
    ("tcp", Channel::Tcp, None),
    ("pipe", Channel::Pipe, None),
];

pub use wirebench_core::summaries::IpcRow as Row;

/// What ipc-compare tells the people watching.
pub trait CompareEvents: Events {
    fn started(&mut self, _spec: &RunSpec, _rounds: usize) {}
    /// A run of `variant` in `round` (from 1) is saved.
    fn measured(&mut self, _round: usize, _variant: &str, _r: &RunResult) {}
}

/// All the runs, and how the rounds ended.
pub struct IpcComparison {
    /// Where the runs are: a directory per variant.
    pub dir: std::path::PathBuf,
    /// (variant index, run), in the order they ran.
    pub results: Vec<(usize, RunResult)>,
    pub rows: Vec<Row>,
    /// Why the rounds stopped early, if they did.
    pub stopped: Option<String>,
    pub interrupted: bool,
}

fn bad(flag: &'static str, why: &str) -> RunError {
    RunError::Spec(SpecError::Invalid {
        flag,
        why: why.into(),
    })
}

pub fn ipc_compare(
    req: &RunRequest,
    rounds: usize,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn CompareEvents,
) -> Result<IpcComparison, RunError> {
    for (flag, set) in [
        ("--transport", req.transport.is_some()),
        ("--channel", req.flags.shm.channel.is_some()),
        ("--wait", req.flags.shm.wait.is_some()),
    ] {
        if set {
            return Err(bad(flag, "ipc-compare sets it for each variant; drop it"));
        }
    }
    if !(1..=100).contains(&rounds) {
        return Err(RunError::Spec(SpecError::Range {
            flag: "--rounds",
            value: rounds.to_string(),
            min: "1".into(),
            max: "100".into(),
        }));
    }
    if req.repeat.is_some_and(|r| r != 1)
        || req.output.hlog.is_some()
        || !req.objectives.slo.is_empty()
    {
        return Err(bad(
            "--repeat",
            "--hlog and --slo apply to `run`; ipc-compare repeats with --rounds",
        ));
    }
    if req.rate.is_some() {
        return Err(bad(
            "--rate",
            "ipc-compare measures each channel at its own pace (closed loop)",
        ));
    }
    let req = RunRequest {
        transport: Some(TransportKind::Shm),
        ..req.clone()
    };
    let (base, placement) = req.check(topo)?;
    req.no_agents("ipc-compare")?;
    req.prepare_outputs()?;
    // One directory per comparison, one per variant inside it: each variant
    // is a group that compare and report take as one.
    let dir = req
        .output
        .results_dir()
        .join(store::new_run_id("ipc-compare"));
    let recorders: Vec<Recorder> = VARIANTS
        .iter()
        .map(|(name, _, _)| Recorder {
            root: dir.join(name),
            also_csv: Some(req.output.results_dir()),
            upload: req.output.upload.clone().map(|url| crate::record::Upload {
                url,
                base: req.output.results_dir(),
                ca_file: req.ca_file.clone(),
            }),
            ..Recorder::new(dir.clone(), command_line.clone(), Vec::new())
        })
        .collect();
    let mut session = Session::open(&base, opts, cancel, events)?;
    events.started(&base, rounds);
    let mut results: Vec<(usize, RunResult)> = Vec::new();
    let mut stopped: Option<String> = None;
    'rounds: for round in 0..rounds {
        for (v, (name, channel, wait)) in VARIANTS.iter().enumerate() {
            let mut spec = base.clone();
            if let TransportSpec::Shm(shm) = &mut spec.transport {
                shm.channel = *channel;
                shm.wait = wait.unwrap_or(Wait::Futex);
            }
            spec.poll = *wait == Some(Wait::Spin);
            let mut r = session.measure(&spec, &placement, events);
            recorders[v].save(
                &mut r,
                &format!("ipc-compare-{name}-r{}", round + 1),
                store::now_rfc3339(),
                events,
            )?;
            events.measured(round + 1, name, &r);
            let state = r.status.state;
            let reason = r.status.reason.clone();
            results.push((v, r));
            if state != RunState::Complete || session.interrupted() {
                stopped = Some(reason.unwrap_or_else(|| "interrupted".into()));
                break 'rounds;
            }
        }
    }
    session.close(None, events);
    Ok(IpcComparison {
        dir,
        rows: table(&results),
        interrupted: session.interrupted(),
        results,
        stopped,
    })
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
        let med = |f: &dyn Fn(&RunResult) -> f64| {
            wirebench_core::stats::median(&mut runs.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        let has_latency = runs.iter().all(|r| r.summary.latency.count > 0);
        let per_op = if runs[0].spec.transport.has_response() {
            2.0
        } else {
            1.0
        };
        let ops = med(&|r| r.summary.ops_per_s);
        let range = |f: &dyn Fn(&RunResult) -> f64| {
            let xs = runs.iter().map(|r| f(r));
            (
                xs.clone().fold(f64::INFINITY, f64::min),
                xs.fold(f64::NEG_INFINITY, f64::max),
            )
        };
        let (ops_min, ops_max) = range(&|r| r.summary.ops_per_s);
        rows.push(Row {
            variant: name.to_string(),
            runs: runs.iter().map(|r| r.run_id.clone()).collect(),
            ops_per_s: ops,
            ops_per_s_min: ops_min,
            ops_per_s_max: ops_max,
            p50_ns_range: has_latency.then(|| range(&|r| r.summary.latency.p50_ns as f64)),
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
