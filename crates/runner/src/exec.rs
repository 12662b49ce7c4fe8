//! The exec transport's driver: the user's own benchmark program, run from
//! its template (`sh -c`, pinned to the client CPUs, with `client_env`, a
//! [`crate::tree`] with what it starts), its output kept in the run's
//! directory (`client-stdout.txt`, `client-stderr.txt`; the first 64 MiB
//! of each, see [`crate::capture`]) and read by its parser into the run's
//! result. The program's figures are its own; what wirebench
//! adds is the CPU and memory of both sides, measured as for its own runs.
//!
//! - A non-zero exit fails the run, with the last lines of its output; so
//!   does an output the parser finds no figure in (sockperf exits 0 when
//!   it cannot connect).
//! - The program must exit by the end of `--duration` plus `--op-timeout`
//!   (10 s unless given; 0s: no limit); else it is killed and the run
//!   fails.
//! - Ctrl-C (or the server dying) stops it: TERM to its group, KILL 5 s
//!   later.
//! - CPU is taken over the program's measured phase, as the program timed
//!   it, counted back from its exit (samples every 250 ms): the server's
//!   from its processes; the program's from the kernel's account of every
//!   process wirebench waited for, less what its process group had used
//!   when the phase began.

use crate::capture::Capture;
use crate::{process, tree};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirebench_core::hist::{self, LatencySummary};
use wirebench_core::parsers::Parsed;
use wirebench_core::result::{Interval, Phase, ToolReport};
use wirebench_core::spec::{ExecSpec, RunSpec};
use wirebench_core::units::whole;
use wirebench_load::engine::{Abort, EndState, LoadConfig, LoadOutcome, Observer, ToolOutcome};
use wirebench_load::recorder::IntervalData;
use wirebench_load::sampler::{Sample, Sampler};

/// How often the server's CPU is sampled while the program runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// Samples kept at most (older ones thinned): memory stays bounded.
const MAX_SAMPLES: usize = 4096;
/// How long the program's output may still flow once it exited (what it
/// started, killed by then, may have held the pipes).
const OUTPUT_WAIT: Duration = Duration::from_secs(2);
/// How long a stopped program has to exit on SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Runs the exec transport's program, once per load.
pub struct ExecDriver {
    /// The placeholders' values (the same as the server command's).
    values: BTreeMap<&'static str, String>,
    /// Where its output goes.
    dir: PathBuf,
    /// Runs so far (repetitions of one session): each keeps its output.
    runs: usize,
}

impl ExecDriver {
    pub fn new(values: BTreeMap<&'static str, String>, dir: Option<&Path>) -> Result<Self, String> {
        let dir = dir
            .ok_or("--transport exec: no run directory for the program's output")?
            .to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(ExecDriver {
            values,
            dir,
            runs: 0,
        })
    }
}

/// CPU seconds of the children this process waited for, so far.
fn children_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

/// CPU seconds of the processes of group `pgid` now, with the children
/// they reaped (utime + stime + cutime + cstime).
fn group_cpu_s(pgid: u32) -> f64 {
    let hz = wirebench_load::os::clock_ticks_per_s();
    wirebench_load::procs::ServerProcs::Group(pgid)
        .pids()
        .iter()
        .filter_map(|&pid| wirebench_load::os::process_cpu_ticks_with_reaped(pid))
        .map(|ticks| ticks as f64 / hz)
        .sum()
}

/// Samples at most [`MAX_SAMPLES`], each with its time since the start
/// and the program's CPU seconds so far.
struct Samples(Vec<(Duration, Sample, f64)>);

impl Samples {
    fn push(&mut self, at: Duration, s: Sample, client_cpu_s: f64) {
        if self.0.len() >= MAX_SAMPLES {
            // Every other one goes: the series keeps its span, at half
            // the resolution.
            let mut i = 0;
            self.0.retain(|_| {
                i += 1;
                i % 2 == 1
            });
        }
        self.0.push((at, s, client_cpu_s));
    }

    /// The sample nearest to `at`.
    fn nearest(&self, at: Duration) -> Option<&(Duration, Sample, f64)> {
        self.0.iter().min_by_key(|(t, _, _)| t.abs_diff(at))
    }
}

impl wirebench_load::driver::Driver for ExecDriver {
    /// One run of the program.
    fn drive(&mut self, spec: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let exec = spec.exec().expect("the exec driver runs exec specs");
        match self.run(exec, cfg, obs) {
            Ok(o) => o,
            Err(end) => failed(end),
        }
    }
}

/// An outcome that measured nothing, ended by `end`.
fn failed(end: EndState) -> LoadOutcome {
    LoadOutcome {
        end,
        connect_time_ns: 0,
        intervals: vec![],
        measured: IntervalData::new(),
        measured_ns: 0,
        client_cpu_s: 0.0,
        server_cpu_s: None,
        client_runq_wait_s: None,
        server_runq_wait_s: None,
        server_groups: vec![],
        server_switches: None,
        client_cores: vec![],
        hiccup: None,
        tool: None,
        measured_window: None,
        cpu_seconds: vec![],
    }
}

impl ExecDriver {
    fn run(
        &mut self,
        exec: &ExecSpec,
        cfg: &LoadConfig,
        obs: &mut dyn Observer,
    ) -> Result<LoadOutcome, EndState> {
        let fail = |why: String| EndState::Failed(why);
        let line = crate::observed::expand(&exec.client_cmd, &self.values)
            .map_err(|e| fail(format!("--client-cmd: {e}")))?;
        // Repetitions run in one session: the first run's files are
        // client-stdout.txt, the k-th's client-stdout-rK.txt.
        self.runs += 1;
        let suffix = match self.runs {
            1 => String::new(),
            k => format!("-r{k}"),
        };
        let logs = [
            self.dir.join(format!("client-stdout{suffix}.txt")),
            self.dir.join(format!("client-stderr{suffix}.txt")),
        ];
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &line])
            .envs(&exec.client_env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        process::unblock_termination_signals_in_child(&mut cmd);
        if !cfg.client_cpus.is_empty() {
            process::pin_child(&mut cmd, &cfg.client_cpus)
                .map_err(|e| fail(format!("--client-cpus: {e}")))?;
        }
        let grace = match cfg.op_timeout {
            Duration::ZERO => None,
            t => Some(t),
        };
        // Its own group (Ctrl-C reaches wirebench only, which stops the
        // program itself) and its own cgroup: what it starts goes with it.
        let prepared = tree::prepare(&mut cmd, "client");
        let cpu_before = children_cpu_s();
        let began = Instant::now();
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                tree::Tree::abandon(prepared);
                return Err(fail(format!("--client-cmd: cannot start /bin/sh: {e}")));
            }
        };
        let pid = child.id();
        let mut tree = tree::Tree::started(prepared, pid);
        // Its output, bounded whatever it writes.
        let mut captures = Vec::new();
        let pipes: [Box<dyn Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped")),
            Box::new(child.stderr.take().expect("piped")),
        ];
        for (pipe, (path, name)) in pipes.into_iter().zip(logs.iter().zip(["stdout", "stderr"])) {
            match Capture::start(pipe, path, name, None) {
                Ok(c) => captures.push(c),
                Err(e) => {
                    tree.stop(&mut child, STOP_GRACE);
                    return Err(fail(e));
                }
            }
        }
        let mut samples = Samples(Vec::new());
        samples.push(Duration::ZERO, cfg.sampler.sample(), 0.0);
        let mut next_sample = SAMPLE_EVERY;
        let mut stop = |child: &mut std::process::Child| {
            let _ = tree.stop(child, STOP_GRACE);
        };
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => {
                    stop(&mut child);
                    return Err(fail(format!("--client-cmd: {e}")));
                }
            }
            let now = began.elapsed();
            if now >= next_sample {
                samples.push(now, cfg.sampler.sample(), group_cpu_s(pid));
                next_sample = now + SAMPLE_EVERY;
            }
            if let Some(abort) = obs.poll_abort() {
                stop(&mut child);
                return Err(match abort {
                    Abort::Interrupted(r) => EndState::Interrupted(r),
                    Abort::Failed(r) => EndState::Failed(r),
                    Abort::Ended(r) => EndState::Ended(r),
                });
            }
            if let Some(g) = grace
                && now >= cfg.duration + g
            {
                stop(&mut child);
                return Err(fail(format!(
                    "--client-cmd did not exit within {:.0} s (--duration {} s + {} s; give its expected length with --duration, or --op-timeout 0s for no limit)",
                    (cfg.duration + g).as_secs_f64(),
                    cfg.duration.as_secs(),
                    g.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let wall = began.elapsed();
        let last = cfg.sampler.sample();
        // Whatever it left running goes with it.
        tree.kill();
        let client_cpu_s = children_cpu_s() - cpu_before;
        let how = process::describe(status);
        let [stdout, stderr] = [0, 1].map(|i| captures[i].finish(OUTPUT_WAIT));
        let tails = || crate::observed::last_output(&logs);
        if !status.success() {
            return Err(fail(format!("--client-cmd ended with {how}{}", tails())));
        }
        let mut parsed = exec
            .parser
            .parse(&stdout.text, &stderr.text)
            .map_err(|e| fail(format!("--parser {}: {e}{}", exec.parser.name(), tails())))?;
        parsed.method.push(format!(
            "its output: {} and {}",
            logs[0].display(),
            logs[1].display()
        ));
        parsed
            .method
            .extend([&stdout, &stderr].iter().filter_map(|c| c.note()));
        Ok(outcome(
            exec,
            line,
            how,
            parsed,
            (began, wall),
            client_cpu_s,
            &samples,
            last,
            cfg,
        ))
    }
}

/// The run's outcome from what the program said and what was sampled.
#[allow(clippy::too_many_arguments)]
fn outcome(
    exec: &ExecSpec,
    command: String,
    exit: String,
    p: Parsed,
    (began, wall): (Instant, Duration),
    client_cpu_s: f64,
    samples: &Samples,
    last: Sample,
    cfg: &LoadConfig,
) -> LoadOutcome {
    let mut method = p.method.clone();
    let seconds = match p.seconds {
        Some(s) if s > 0.0 => s,
        _ => {
            method.push(
                "time: the program printed none; its run time as wirebench timed it (start-up included)"
                    .into(),
            );
            wall.as_secs_f64()
        }
    };
    let ops = p
        .ops
        .unwrap_or_else(|| whole(p.ops_per_s.unwrap_or(0.0) * seconds));
    // The server's CPU over the program's measured phase, counted back
    // from its exit (a program measures last, then reports).
    let start_at = wall.saturating_sub(Duration::from_secs_f64(seconds.min(wall.as_secs_f64())));
    let (from_at, from, client_before) = samples
        .nearest(start_at)
        .map(|(t, s, c)| (*t, s.clone(), *c))
        .expect("a sample at the start");
    // The client's CPU over the same window: everything it used (the
    // kernel's account of what was waited for) less what it had used at
    // the window's start.
    let client_cpu_s = (client_cpu_s - client_before).max(0.0);
    let window = (wall - from_at).as_secs_f64();
    let (_, server_cpu_s) = Sampler::cpu_seconds(&from, &last);
    let (_, server_runq) = Sampler::runq_wait_seconds(&from, &last);
    method.push(format!(
        "CPU: the program's and the server's over the last {window:.1} s of its {:.1} s run (its measured phase, counted back from its exit; sampled every {} ms)",
        wall.as_secs_f64(),
        SAMPLE_EVERY.as_millis()
    ));
    let mut measured = IntervalData::new();
    measured.ops = ops;
    measured.sent = ops;
    measured.received = ops;
    measured.bytes_out = p.bytes_out.unwrap_or(0);
    measured.bytes_in = p.bytes_in.unwrap_or(0);
    measured.errors = p.errors.unwrap_or(0);
    if let Some(h) = &p.hist {
        measured.hist = h.clone();
        measured.service = h.clone();
    }
    let latency = program_latency(&p, ops);
    let empty = hist::encode(&hist::new_hist());
    // The CPU over a span of the program's measured phase (ns from its
    // start): the samples nearest its ends (None when one sample is both:
    // a span shorter than the sampling).
    let cpu_over = |start_ns: u64, end_ns: u64| {
        let a = samples.nearest(from_at + Duration::from_nanos(start_ns))?;
        let b = match from_at + Duration::from_nanos(end_ns) {
            t if t + SAMPLE_EVERY / 2 >= wall => &last,
            t => &samples.nearest(t)?.1,
        };
        if std::ptr::eq(&a.1, b) {
            return None;
        }
        let secs = (end_ns - start_ns) as f64 / 1e9;
        Some((
            Sampler::busy(&cfg.client_cpus, &a.1, b),
            Sampler::busy(&cfg.sampler.server_cpus, &a.1, b),
            Sampler::groups(&a.1, b, secs),
            Sampler::server_share(&cfg.sampler.server_cpus, &a.1, b, secs),
        ))
    };
    let mut at = 0u64;
    let intervals: Vec<Interval> = p
        .intervals
        .iter()
        .map(|iv| {
            let len = whole(iv.seconds * 1e9);
            let start = at;
            at += len;
            program_interval(
                iv,
                start,
                at,
                cpu_over(start, at).unwrap_or_default(),
                &empty,
            )
        })
        .collect();
    // A program with no per-second lines: the CPU second by second all
    // the same (the report's heatmaps).
    let cpu_seconds = match intervals.is_empty() {
        true => cpu_seconds(window, &cpu_over),
        false => vec![],
    };
    let latency_stats = latency_stats(&p);
    let report = ToolReport {
        program: exec.program(),
        parser: exec.parser.to_string(),
        command,
        exit,
        figures: p.figures.clone(),
        words: p.words.clone(),
        latency_stats,
        method,
        histogram: p.hist.is_some(),
    };
    LoadOutcome {
        end: if ops == 0 {
            EndState::Failed(format!(
                "--parser {}: the program reported no operation",
                exec.parser.name()
            ))
        } else {
            EndState::Complete
        },
        connect_time_ns: whole(p.connect_s.unwrap_or(0.0) * 1e9),
        intervals,
        measured,
        measured_ns: whole(seconds * 1e9),
        client_cpu_s,
        server_cpu_s,
        client_runq_wait_s: None,
        server_runq_wait_s: server_runq,
        server_groups: Sampler::groups(&from, &last, window),
        server_switches: Sampler::switches(&from, &last),
        client_cores: Sampler::busy(&cfg.client_cpus, &samples.0[0].1, &last),
        hiccup: None,
        tool: Some(ToolOutcome {
            report,
            latency,
            ops_per_s: p.ops_per_s,
        }),
        measured_window: Some((began + from_at, began + wall)),
        cpu_seconds,
    }
}

/// What a program's latency figures say: its histogram's, else the
/// statistics it printed (a program's microseconds in whole nanoseconds:
/// 32.532 us is 32532 ns, where 32.532 x 1e3 is 32531.999... in floating
/// point).
fn program_latency(p: &Parsed, ops: u64) -> LatencySummary {
    let stat = |s: &str| p.latency_ns.get(s).copied();
    let ns = |s: &str| whole(stat(s).unwrap_or(0.0).round());
    match &p.hist {
        Some(h) => LatencySummary::of(h),
        None => LatencySummary {
            count: p
                .latency_count
                .unwrap_or(if p.latency_ns.is_empty() { 0 } else { ops }),
            mean_ns: stat("mean").unwrap_or(0.0),
            min_ns: ns("min"),
            p50_ns: ns("p50"),
            p90_ns: ns("p90"),
            p99_ns: ns("p99"),
            p999_ns: ns("p999"),
            p9999_ns: ns("p9999"),
            max_ns: ns("max"),
        },
    }
}

/// The CPU of the client's and the server's cores, the server's thread
/// groups and its share of each core, over a span of the program's
/// measured phase.
type SpanCpu = (
    Vec<wirebench_core::result::CoreBusy>,
    Vec<wirebench_core::result::CoreBusy>,
    Vec<wirebench_core::result::GroupCpu>,
    Vec<wirebench_core::result::CoreBusy>,
);

/// A second (or a line) the program printed, from `start` to `end` ns of
/// its measured phase, with the CPU over it.
fn program_interval(
    iv: &wirebench_core::parsers::ParsedInterval,
    start: u64,
    end: u64,
    (client_cores, server_cores, server_groups, server_share): SpanCpu,
    empty: &str,
) -> Interval {
    Interval {
        start_ns: start,
        end_ns: end,
        phase: Phase::Measure,
        ops: whole(iv.ops_per_s * iv.seconds),
        // The program's MiB/s over its second (perf-crimson-msgr's sends).
        bytes_out: iv
            .mib_per_s
            .map_or(0, |m| whole((m * 1048576.0 * iv.seconds).round())),
        bytes_in: 0,
        errors: 0,
        ops_per_s: iv.ops_per_s,
        sent: whole(iv.ops_per_s * iv.seconds),
        latency: LatencySummary {
            mean_ns: iv.mean_ns.unwrap_or(0.0),
            count: u64::from(iv.mean_ns.is_some()),
            ..LatencySummary::default()
        },
        service_latency: LatencySummary::default(),
        latency_hist: empty.to_string(),
        client_cores,
        server_cores,
        server_groups,
        hiccup_max_ns: None,
        hiccup_lost_ns: None,
        stalled: false,
        partial: false,
        program_busy_pct: iv.busy_pct.clone(),
        program_in_flight: iv.in_flight,
        server_share,
    }
}

/// The CPU second by second over the program's measured phase of
/// `window` s (for a program that printed no per-second lines).
fn cpu_seconds(
    window: f64,
    cpu_over: &dyn Fn(u64, u64) -> Option<SpanCpu>,
) -> Vec<wirebench_core::result::CpuSecond> {
    let whole_s = whole(window.round()).max(1);
    (0..whole_s)
        .filter_map(|k| {
            let (start, end) = (
                k * 1_000_000_000,
                ((k + 1) * 1_000_000_000).min(whole(window * 1e9)),
            );
            let (client_cores, server_cores, _, server_share) = cpu_over(start, end)?;
            Some(wirebench_core::result::CpuSecond {
                start_ns: start,
                end_ns: end,
                client_cores,
                server_cores,
                server_share,
            })
        })
        .collect()
}

/// The latency statistics the run has: all with a histogram, else those
/// the program printed.
fn latency_stats(p: &Parsed) -> Vec<String> {
    if p.hist.is_some() {
        wirebench_core::spec::LATENCY_STATS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        wirebench_core::spec::LATENCY_STATS
            .iter()
            .filter(|s| p.latency_ns.contains_key(*s))
            .map(|s| s.to_string())
            .collect()
    }
}
