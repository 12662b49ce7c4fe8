//! `flame`: a run whose embedded server is sampled by `perf record`
//! (cpu-clock, call graphs) while the load runs, with `perf stat` counting
//! cycles and instructions where the machine can. The samples come back as
//! `perf script` text for the report crate to fold and draw.
//!
//! Off CPU (`--off-cpu`), perf records instead every switch of the
//! server's threads off and onto a CPU (`sched:sched_switch`, with the
//! stack they blocked in) and every wake-up of them (`sched:sched_waking`,
//! in the waker's context), over a window opened and closed through perf's
//! control FIFO, with the threads' schedstat read at both ends, and the CPU
//! time they report (`sched:sched_stat_runtime`: some kernels trace no
//! switch from the idle task, so the CPU time since a switch off says when
//! a thread came back). The report crate turns the events into time off
//! CPU per stack.

use crate::RunError;
use crate::command::Checked;
use crate::process::{self, Cancel};
use crate::run::RunEvents;
use crate::session::{Session, SessionOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::RunResult;
use wirebench_core::spec::TargetSpec;
use wirebench_core::store;
use wirebench_core::summaries::{OffCpuThread, OffCpuWindow};
use wirebench_core::topo::Topology;

/// A sampled run.
pub struct FlameRun {
    pub result: RunResult,
    /// The run's directory.
    pub dir: PathBuf,
    pub server_pid: u32,
    /// `perf script` of the samples (on CPU; empty off CPU).
    pub script: String,
    /// What `perf stat -x,` printed (empty when it could not run).
    pub counters: String,
    /// Off CPU: the recording, to be read with [`OffCpuRecording::script`].
    pub off_cpu: Option<OffCpuRecording>,
}

impl FlameRun {
    /// The run's exit status, as `run`'s.
    pub fn exit_code(self) -> u8 {
        let runs = vec![(self.result, self.dir)];
        let report = crate::run::RunReport {
            runs,
            repetitions: None,
            group: None,
        };
        report.verdict().exit_code()
    }
}

/// How perf walks the stacks (`--call-graph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallGraph {
    /// Frame pointers: cheap; a frame without one (Debian's libc) ends the
    /// stack there.
    #[default]
    Fp,
    /// A copy of the stack's top with each sample, unwound afterwards with
    /// the DWARF tables: through libc to the caller, at a cost.
    Dwarf,
}

impl CallGraph {
    fn perf_args(self) -> &'static [&'static str] {
        match self {
            CallGraph::Fp => &["--call-graph", "fp"],
            CallGraph::Dwarf => &["--call-graph", "dwarf,16384"],
        }
    }
}

/// What `flame` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlameOptions {
    /// On CPU: samples per second.
    pub frequency: u32,
    /// Where the threads wait instead of where they run.
    pub off_cpu: bool,
    pub call_graph: CallGraph,
}

/// The scheduler events of the server's threads over a window.
pub struct OffCpuRecording {
    /// CLOCK_MONOTONIC, as perf stamps the events (`-k CLOCK_MONOTONIC`).
    pub window: OffCpuWindow,
    /// The threads when the window opened.
    pub threads: Vec<OffCpuThread>,
    data: PerfData,
}

impl OffCpuRecording {
    /// `perf script` of the events, as it comes (they can be many: read
    /// them as a stream).
    pub fn script(&self) -> io::Result<std::process::ChildStdout> {
        let mut child = Command::new("perf")
            .args([
                "script",
                "--ns",
                "-F",
                "comm,tid,cpu,time,event,trace,ip,sym,dso",
                "-i",
            ])
            .arg(&self.data.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let out = child.stdout.take().expect("piped");
        // perf ends when its output is read to the end; its status is not
        // needed (an empty script is reported as no events).
        std::thread::spawn(move || child.wait());
        Ok(out)
    }
}

/// A perf data file, removed when dropped.
struct PerfData(PathBuf);

impl Drop for PerfData {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// CLOCK_MONOTONIC now, in ns.
fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("a clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// The threads of `pids`: (tid, name, time on a CPU).
fn threads_of(pids: &[u32]) -> Vec<(u32, String, u64)> {
    pids.iter()
        .flat_map(|&p| wirebench_load::procs::process_threads(p))
        .map(|t| (t.tid, t.name, t.cpu_ns))
        .collect()
}

/// perf's control FIFO and its acknowledgements, made in `dir` and removed
/// when dropped. Both ends are held open read-write, so neither side ever
/// blocks on opening them.
struct Control {
    paths: [PathBuf; 2],
    ctl: std::fs::File,
    ack: std::fs::File,
}

impl Control {
    fn new(dir: &std::path::Path) -> io::Result<Control> {
        let pid = std::process::id();
        let paths = [
            dir.join(format!(".perf-ctl-{pid}")),
            dir.join(format!(".perf-ack-{pid}")),
        ];
        for p in &paths {
            let _ = std::fs::remove_file(p);
            nix::unistd::mkfifo(
                p,
                nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
            )
            .map_err(io::Error::from)?;
        }
        let open = |p: &PathBuf| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                .open(p)
        };
        let (ctl, ack) = match (open(&paths[0]), open(&paths[1])) {
            (Ok(c), Ok(a)) => (c, a),
            (Err(e), _) | (_, Err(e)) => {
                for p in &paths {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        };
        Ok(Control { paths, ctl, ack })
    }

    /// `perf record --control` for these FIFOs.
    fn arg(&self) -> String {
        format!(
            "fifo:{},{}",
            self.paths[0].display(),
            self.paths[1].display()
        )
    }

    /// Sends `command` and waits up to `limit` for perf's "ack", giving up
    /// early if perf ended.
    fn command(&mut self, command: &str, perf: &mut Child, limit: Duration) -> io::Result<()> {
        use std::io::{Read, Write};
        self.ctl.write_all(format!("{command}\n").as_bytes())?;
        let deadline = Instant::now() + limit;
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match self.ack.read(&mut buf) {
                Ok(n) if n > 0 => {
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(3).any(|w| w == b"ack") {
                        return Ok(());
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if let Some(st) = perf.try_wait()? {
                return Err(io::Error::other(format!(
                    "perf ended ({st}) before it acknowledged '{command}'"
                )));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("perf did not acknowledge '{command}' within {limit:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Why the scheduler's tracepoints cannot be recorded here, if they cannot.
pub fn sched_tracepoints_problem() -> Option<String> {
    let probe = std::env::temp_dir().join(format!(
        "wirebench-perf-sched-probe-{}.data",
        std::process::id()
    ));
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-e",
            "sched:sched_waking",
            "-e",
            "sched:sched_stat_runtime",
            "-o",
        ])
        .arg(&probe)
        .args(["--", "true"])
        .stdout(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&probe);
    match out {
        Err(e) => Some(format!("perf is missing ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "perf cannot record the scheduler's tracepoints (sched:sched_switch, sched:sched_waking, sched:sched_stat_runtime): {}; run as root with tracefs mounted (mount -t tracefs nodev /sys/kernel/tracing)",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
        )),
        Ok(_) => None,
    }
}

/// The filters of the two tracepoints for `tids` (the kernel takes a few
/// KiB of filter: past that, everything is recorded and sorted out after).
fn sched_filters(tids: &[u32]) -> Option<(String, String)> {
    if tids.is_empty() || tids.len() > 64 {
        return None;
    }
    let switch: Vec<String> = tids
        .iter()
        .map(|t| format!("prev_pid == {t} || next_pid == {t}"))
        .collect();
    let waking: Vec<String> = tids.iter().map(|t| format!("pid == {t}")).collect();
    Some((switch.join(" || "), waking.join(" || ")))
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

/// Runs `req` with its embedded server (or the observed one) sampled at
/// `frequency` per second, or with its threads' waits recorded.
pub fn flame(
    req: &RunRequest,
    how: FlameOptions,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn RunEvents,
) -> Result<FlameRun, RunError> {
    let frequency = how.frequency;
    if frequency == 0 || frequency > 10_000 {
        return Err(RunError::Spec(SpecError::Range {
            flag: "--frequency",
            value: frequency.to_string(),
            min: "1".into(),
            max: "10000 per second".into(),
        }));
    }
    let mut checked = Checked::of(req, topo, None, command_line, Some("flame"))?;
    let spec = &checked.spec;
    if !matches!(spec.target, TargetSpec::Embedded { .. }) && spec.observe.is_none() {
        return Err(RunError::Spec(SpecError::Flag {
            flag: "--target",
            why: "is not sampled: flame samples the embedded server, or the one --server-pid, --server-cgroup or --server-cmd names; add one, or drop --target".into(),
        }));
    }
    if let Some(why) = perf_problem() {
        return Err(RunError::Failed(why));
    }
    if how.off_cpu
        && let Some(why) = sched_tracepoints_problem()
    {
        return Err(RunError::Failed(format!("flame --off-cpu: {why}")));
    }
    let results = req.output.results_dir();
    // A server the run starts writes into the run's directory.
    let run_id = store::new_run_id("flame");
    let mut session = checked.open(opts, Some(results.join(&run_id)), cancel, events)?;
    let Checked {
        spec,
        placement,
        recorder,
    } = checked;
    let pid = session.server_pid().expect("a server to sample");
    // Every process of the server, as they are when sampling starts.
    let pids: Vec<String> = session
        .server_pids()
        .iter()
        .map(|p| p.to_string())
        .collect();
    let pids = pids.join(",");
    let data = PerfData(results.join(format!(".perf-{}.data", std::process::id())));
    std::fs::create_dir_all(&results)?;
    if how.off_cpu {
        let started_at = store::now_rfc3339();
        let (mut result, rec) =
            record_off_cpu(&mut session, &spec, &placement, how, data, &results, events)?;
        session.close(Some(&mut result), events);
        let dir = recorder.save_as(&mut result, run_id, started_at, events)?;
        events.saved(&result, &dir, &recorder.slos);
        return Ok(FlameRun {
            result,
            dir,
            server_pid: pid,
            script: String::new(),
            counters: String::new(),
            off_cpu: Some(rec),
        });
    }
    let mut perf_cmd = Command::new("perf");
    process::unblock_termination_signals_in_child(&mut perf_cmd);
    let mut perf = perf_cmd
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            &frequency.to_string(),
        ])
        .args(how.call_graph.perf_args())
        .args(["-p", &pids, "-o"])
        .arg(&data.0)
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
    let dir = recorder.save_as(&mut result, run_id, started_at, events)?;
    let script = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data.0)
        .stderr(Stdio::null())
        .output();
    drop(data);
    let script = script.map_err(|e| RunError::Failed(format!("running perf script: {e}")))?;
    events.saved(&result, &dir, &recorder.slos);
    Ok(FlameRun {
        result,
        dir,
        server_pid: pid,
        script: String::from_utf8_lossy(&script.stdout).into_owned(),
        counters,
        off_cpu: None,
    })
}

/// Measures with perf recording the server's scheduler events; the window
/// spans the measurement (warm-up included), opened once perf is ready.
#[allow(clippy::too_many_arguments)]
fn record_off_cpu(
    session: &mut Session,
    spec: &wirebench_core::spec::RunSpec,
    placement: &wirebench_core::result::Placement,
    how: FlameOptions,
    data: PerfData,
    results: &std::path::Path,
    events: &mut dyn RunEvents,
) -> Result<(RunResult, OffCpuRecording), RunError> {
    let pids = session.server_pids();
    let tids: Vec<u32> = threads_of(&pids).iter().map(|t| t.0).collect();
    let mut control = Control::new(results)?;
    let mut cmd = Command::new("perf");
    process::unblock_termination_signals_in_child(&mut cmd);
    cmd.args(["record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-D", "-1"])
        .args(how.call_graph.perf_args())
        .arg("--control")
        .arg(control.arg());
    match sched_filters(&tids) {
        Some((switch, waking)) => {
            cmd.args(["-e", "sched:sched_switch", "--filter", &switch]);
            cmd.args([
                "-e",
                "sched:sched_waking/call-graph=no/",
                "--filter",
                &waking,
            ]);
            cmd.args([
                "-e",
                "sched:sched_stat_runtime/call-graph=no/",
                "--filter",
                &waking,
            ]);
        }
        None => {
            cmd.args([
                "-e",
                "sched:sched_switch",
                "-e",
                "sched:sched_waking/call-graph=no/",
                "-e",
                "sched:sched_stat_runtime/call-graph=no/",
            ]);
        }
    }
    let mut perf = cmd
        .arg("-o")
        .arg(&data.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| RunError::Failed(format!("starting perf: {e}")))?;
    let stop = |perf: &mut Child| -> String {
        let _ = process::interrupt_process(perf.id());
        let deadline = Instant::now() + Duration::from_secs(30);
        while matches!(perf.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if matches!(perf.try_wait(), Ok(None)) {
            let _ = perf.kill();
        }
        let mut err = String::new();
        if let Some(mut e) = perf.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        let _ = perf.wait();
        err
    };
    if let Err(e) = control.command("enable", &mut perf, Duration::from_secs(30)) {
        let err = stop(&mut perf);
        return Err(RunError::Failed(format!(
            "flame --off-cpu: {e}: {}",
            err.trim()
        )));
    }
    let start_ns = monotonic_ns();
    // The threads perf's filters name (one started meanwhile is not
    // recorded, so not counted).
    let mut first = threads_of(&pids);
    first.retain(|t| tids.contains(&t.0));
    events.note(&format!(
        "flame: perf (pid {}) records where the server's {} thread(s) wait (sched_switch, sched_waking, sched_stat_runtime)",
        perf.id(),
        first.len()
    ));
    let wchans: Vec<String> = first
        .iter()
        .map(|t| {
            std::fs::read_to_string(format!("/proc/{}/wchan", t.0))
                .map(|w| match w.trim() {
                    "0" => String::new(),
                    w => w.to_string(),
                })
                .unwrap_or_default()
        })
        .collect();
    let result = session.measure(spec, placement, events);
    let last = threads_of(&pids);
    let end_ns = monotonic_ns();
    let _ = control.command("disable", &mut perf, Duration::from_secs(10));
    let err = stop(&mut perf);
    if !data.0.exists() {
        return Err(RunError::Failed(format!(
            "flame --off-cpu: perf wrote nothing: {}",
            err.trim()
        )));
    }
    let threads = first
        .iter()
        .zip(wchans)
        .map(|((tid, name, on0), wchan)| OffCpuThread {
            tid: *tid,
            name: name.clone(),
            wchan,
            on_cpu_ns: last
                .iter()
                .find(|t| t.0 == *tid)
                .map_or(0, |t| t.2.saturating_sub(*on0)),
        })
        .collect();
    Ok((
        result,
        OffCpuRecording {
            window: OffCpuWindow { start_ns, end_ns },
            threads,
            data,
        },
    ))
}

/// The other instances, started as `wirebench run` processes with their
/// requests on stdin (as a sweep starts a point's instances); each child
/// is stopped with this process.
pub fn start_others(
    reqs: &[wirebench_core::request::RunRequest],
) -> std::io::Result<Vec<std::process::Child>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for q in reqs {
        let mut q = q.clone();
        q.output.format = Some(wirebench_core::request::Format::Json);
        let mut child = Command::new(&exe)
            .args(["run", "--request-stdin"])
            .args(["--exit-with-parent", &std::process::id().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = serde_json::to_vec(&q).map_err(std::io::Error::other)?;
        line.push(b'\n');
        child.stdin.take().expect("piped").write_all(&line)?;
        out.push(child);
    }
    Ok(out)
}
