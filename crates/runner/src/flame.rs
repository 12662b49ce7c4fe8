//! `flame`: a run whose embedded server is sampled by `perf record`
//! (cpu-clock, call graphs) while the load runs, with `perf stat` counting
//! cycles and instructions where the machine can. The samples come back as
//! `perf script` text for the report crate to fold and draw.

use crate::RunError;
use crate::process::{self, Cancel};
use crate::record::Recorder;
use crate::run::RunEvents;
use crate::session::{Session, SessionOptions};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::RunResult;
use wirebench_core::spec::TargetSpec;
use wirebench_core::store;
use wirebench_core::topo::Topology;

/// A sampled run.
pub struct FlameRun {
    pub result: RunResult,
    /// The run's directory.
    pub dir: PathBuf,
    pub server_pid: u32,
    /// `perf script` of the samples.
    pub script: String,
    /// What `perf stat -x,` printed (empty when it could not run).
    pub counters: String,
}

/// Why perf cannot sample here, if it cannot.
pub fn perf_problem() -> Option<String> {
    let probe =
        std::env::temp_dir().join(format!("wirebench-perf-probe-{}.data", std::process::id()));
    let out = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(&probe)
        .args(["--", "true"])
        .stdout(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&probe);
    match out {
        Err(e) => Some(format!(
            "perf is missing ({e}): install it (Debian: apt-get install linux-perf)"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "perf cannot sample: {}; run as root, or allow it with sysctl kernel.perf_event_paranoid=1",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

/// Runs `req` with its embedded server sampled at `frequency` per second.
pub fn flame(
    req: &RunRequest,
    frequency: u32,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn RunEvents,
) -> Result<FlameRun, RunError> {
    if frequency == 0 || frequency > 10_000 {
        return Err(RunError::Spec(SpecError::Range {
            flag: "--frequency",
            value: frequency.to_string(),
            min: "1".into(),
            max: "10000 per second".into(),
        }));
    }
    let (spec, placement) = req.check(topo)?;
    req.prepare_outputs()?;
    if !matches!(spec.target, TargetSpec::Embedded { .. }) && spec.observe.is_none() {
        return Err(RunError::Spec(SpecError::Flag {
            flag: "--target",
            why: "is not sampled: flame samples the embedded server, or the one --server-pid, --server-cgroup or --server-cmd names; add one, or drop --target".into(),
        }));
    }
    if let Some(why) = perf_problem() {
        return Err(RunError::Failed(why));
    }
    let results = req.results_dir();
    let recorder = Recorder::new(results.clone(), command_line, req.slos()?);
    // A server the run starts writes into the run's directory.
    let run_id = store::new_run_id("flame");
    let mut opts = opts.clone();
    opts.server_dir = Some(results.join(&run_id));
    let mut session = Session::open(&spec, &opts, cancel, events)?;
    let mut spec = spec;
    session.resolve(&mut spec);
    let mut placement = placement;
    if placement.server_cpus.is_none() {
        placement.server_cpus = session.observed_cpuset();
    }
    events.started(&spec, &placement, session.endpoint(), session.server_pid());
    let pid = session.server_pid().expect("a server to sample");
    // Every process of the server, as they are when sampling starts.
    let pids: Vec<String> = session
        .server_pids()
        .iter()
        .map(|p| p.to_string())
        .collect();
    let pids = pids.join(",");
    let data = results.join(format!(".perf-{}.data", std::process::id()));
    std::fs::create_dir_all(&results)?;
    let mut perf_cmd = Command::new("perf");
    process::unblock_termination_signals_in_child(&mut perf_cmd);
    let mut perf = perf_cmd
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-g",
            "-F",
            &frequency.to_string(),
        ])
        .args(["-p", &pids, "-o"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| RunError::Failed(format!("starting perf: {e}")))?;
    events.note(&format!(
        "flame: perf (pid {}) samples the server (pid {pids})",
        perf.id()
    ));
    // Cycles and instructions, where the machine counts them (a VM often
    // does not: then they are reported unavailable).
    let mut stat_cmd = Command::new("perf");
    process::unblock_termination_signals_in_child(&mut stat_cmd);
    let stat = stat_cmd
        .args(["stat", "-x", ",", "-e", "cycles,instructions", "-p", &pids])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok();
    let started_at = store::now_rfc3339();
    let mut result = session.measure(&spec, &placement, events);
    // perf writes its data when interrupted.
    let _ = process::interrupt_process(perf.id());
    let deadline = Instant::now() + Duration::from_secs(30);
    while perf.try_wait()?.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if perf.try_wait()?.is_none() {
        let _ = perf.kill();
    }
    let _ = perf.wait();
    let counters = stat
        .map(|c| {
            let _ = process::interrupt_process(c.id());
            c.wait_with_output()
                .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    session.close(Some(&mut result), events);
    let dir = recorder.save_as(&mut result, run_id, started_at)?;
    let script = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .stderr(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&data);
    let script = script.map_err(|e| RunError::Failed(format!("running perf script: {e}")))?;
    events.saved(&result, &dir, &recorder.slos);
    Ok(FlameRun {
        result,
        dir,
        server_pid: pid,
        script: String::from_utf8_lossy(&script.stdout).into_owned(),
        counters,
    })
}
