//! `wirebench flame [run flags]`: a run whose embedded server is sampled by
//! `perf record` (the runner), its stacks folded and drawn as a flamegraph
//! in the run's directory (the report crate): `flame-server.svg`,
//! `flame-server.folded`; with `--off-cpu`, where the server's threads wait
//! and what woke them: `flame-offcpu.svg`, `flame-offcpu.folded`,
//! `offcpu.json`. `wirebench flame --diff A B` draws the differential
//! flamegraph of two such runs.

use super::error::{UsageError, runner_error};
use super::flags::RunFlags;
use crate::ui::progress::Console;
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wirebench_core::topo::Topology;
use wirebench_report::flame;
use wirebench_runner::process;

#[derive(Args, Debug)]
pub struct FlameArgs {
    #[command(flatten)]
    run: RunFlags,
    /// Merge the stacks of threads of one kind (names differing only by digits: all the
    /// reactors as one), as the messenger report does.
    #[arg(long)]
    merge_threads: bool,
    /// perf's sampling frequency, per second.
    #[arg(long, default_value_t = 999)]
    frequency: u32,
    /// Where the server's threads wait instead of where they run: every switch off a CPU with
    /// its stack (sched:sched_switch) and every wake-up (sched:sched_waking), weighted by the
    /// time off CPU, each stack ending with what woke it. With --diff: compare the runs'
    /// off-CPU stacks.
    #[arg(long)]
    off_cpu: bool,
    /// How perf walks stacks: fp (frame pointers, cheap; a stack ends at a libc function
    /// built without them) or dwarf (a copy of 16 KiB of stack per sample, unwound after:
    /// through libc to its caller; see docs/measurement.md for its cost).
    #[arg(long, value_enum, default_value_t = CallGraphArg::Fp)]
    call_graph: CallGraphArg,
    /// Instead of running: the differential flamegraph of run B against run A (run directories
    /// or .folded files); red where B spends more.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    diff: Option<Vec<PathBuf>>,
    /// With --diff: where to write the SVG.
    #[arg(short, long, default_value = "flame-diff.svg")]
    output: PathBuf,
    /// Run N instances side by side, as a sweep point of N instances does (each its share of
    /// the cpusets, whole cores, and of the clients), and profile only the --instance one,
    /// while the others run.
    #[arg(long, value_name = "N", default_value_t = 1)]
    instances: usize,
    /// With --instances: the instance to profile, 1 to N.
    #[arg(long, value_name = "K")]
    instance: Option<usize>,
}

/// The instances of `flame --instances N`: the requests of all N (each
/// its share of the cpusets and of the clients), as a sweep plans them.
fn instance_requests(
    req: &wirebench_core::request::RunRequest,
    n: usize,
    topo: &Topology,
) -> Result<Vec<wirebench_core::request::RunRequest>, String> {
    use wirebench_core::plan::split_cores;
    use wirebench_core::topo::CpuList;
    let clients = req.clients.unwrap_or(1);
    if !clients.is_multiple_of(n) {
        return Err(format!(
            "--instances {n} with --clients {clients}: the clients must divide evenly among the instances"
        ));
    }
    let usable = topo.usable();
    let mid = usable.len() / 2;
    let halves = || -> Result<(CpuList, CpuList), String> {
        let c =
            CpuList::from_cpus(usable.cpus()[..mid.max(1)].to_vec()).map_err(|e| e.to_string())?;
        let s = CpuList::from_cpus(usable.cpus()[mid.min(usable.len() - 1)..].to_vec())
            .map_err(|e| e.to_string())?;
        Ok((c, s))
    };
    let (client, server) = match (&req.client_cpus, &req.server_cpus) {
        (Some(c), Some(s)) => (c.clone(), s.clone()),
        (c, s) => {
            let (dc, ds) = halves()?;
            (c.clone().unwrap_or(dc), s.clone().unwrap_or(ds))
        }
    };
    Ok((0..n)
        .map(|i| {
            let mut q = req.clone();
            q.clients = Some(clients / n);
            q.instance = Some(i);
            q.client_cpus = Some(split_cores(&client, n, i, topo));
            q.server_cpus = Some(split_cores(&server, n, i, topo));
            q
        })
        .collect())
}

/// The other instances, started as `wirebench run` processes with their
/// requests on stdin (as a sweep starts a point's instances); each child
/// is stopped with this process.
fn start_others(
    reqs: &[wirebench_core::request::RunRequest],
) -> anyhow::Result<Vec<std::process::Child>> {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for q in reqs {
        let q = wirebench_core::request::RunRequest {
            format: Some(wirebench_core::request::Format::Json),
            ..q.clone()
        };
        let mut child = Command::new(&exe)
            .args(["run", "--request-stdin"])
            .args(["--exit-with-parent", &std::process::id().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting an instance")?;
        let mut line = serde_json::to_vec(&q)?;
        line.push(b'\n');
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(&line)
            .context("giving an instance its request")?;
        out.push(child);
    }
    Ok(out)
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CallGraphArg {
    Fp,
    Dwarf,
}

fn folded_of(p: &Path, off_cpu: bool) -> anyhow::Result<String> {
    let f = if p.is_dir() {
        p.join(if off_cpu {
            "flame-offcpu.folded"
        } else {
            "flame-server.folded"
        })
    } else {
        p.to_path_buf()
    };
    std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))
}

pub fn flame(a: FlameArgs) -> anyhow::Result<ExitCode> {
    if let Some(d) = &a.diff {
        super::error::check_output(&a.output, a.run.force)?;
        let (before, after) = (folded_of(&d[0], a.off_cpu)?, folded_of(&d[1], a.off_cpu)?);
        let title = format!("{} vs {}", d[1].display(), d[0].display());
        let svg = flame::differential(&before, &after, &title)?;
        wirebench_core::store::write_atomic(&a.output, svg.as_bytes())?;
        writeln!(
            std::io::stdout(),
            "differential flamegraph: {}",
            a.output.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut req = a.run.request();
    let mut others = Vec::new();
    match (a.instances, a.instance) {
        (0, _) => return Err(UsageError("--instances 0: at least 1".to_string()).into()),
        (1, None) => {}
        (1, Some(_)) => {
            return Err(UsageError("--instance K needs --instances N (N > 1)".to_string()).into());
        }
        (n, None) => {
            return Err(UsageError(format!(
                "--instances {n}: say which one to profile with --instance K (1..{n})"
            ))
            .into());
        }
        (n, Some(k)) if k == 0 || k > n => {
            return Err(UsageError(format!("--instance {k}: 1 to {n}")).into());
        }
        (n, Some(k)) => {
            let reqs = instance_requests(&req, n, &Topology::read()).map_err(UsageError)?;
            req = reqs[k - 1].clone();
            let rest: Vec<_> = reqs
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != k - 1)
                .map(|(_, q)| q.clone())
                .collect();
            others = start_others(&rest)?;
            eprintln!(
                "instance {k} of {n} profiled (server CPUs {}, client CPUs {}), {} other(s) running beside it",
                req.server_cpus
                    .as_ref()
                    .map_or("-".into(), |c| c.to_string()),
                req.client_cpus
                    .as_ref()
                    .map_or("-".into(), |c| c.to_string()),
                rest.len()
            );
        }
    }
    let opts = a.run.session().map_err(UsageError::from)?;
    super::run::warn_if_debug();
    let cancel = process::watch_signals()?;
    let mut console = Console::new(req.format());
    console.results = false;
    let how = wirebench_runner::flame::FlameOptions {
        frequency: a.frequency,
        off_cpu: a.off_cpu,
        call_graph: match a.call_graph {
            CallGraphArg::Fp => wirebench_runner::flame::CallGraph::Fp,
            CallGraphArg::Dwarf => wirebench_runner::flame::CallGraph::Dwarf,
        },
    };
    let f = wirebench_runner::flame::flame(
        &req,
        how,
        &opts,
        &Topology::read(),
        super::args::command_line(),
        cancel,
        &mut console,
    )
    .map_err(runner_error)?;
    // The other instances end with their duration, as this one did.
    for mut c in others {
        let _ = c.wait();
    }
    if f.off_cpu.is_some() {
        return off_cpu(f, a.merge_threads);
    }
    let folded = flame::fold(&f.script, a.merge_threads)?;
    if folded.trim().is_empty() {
        eprintln!(
            "error: perf recorded no samples of the server (pid {})",
            f.server_pid
        );
        return Ok(ExitCode::from(1));
    }
    std::fs::write(f.dir.join("flame-server.folded"), &folded)?;
    let title = format!(
        "server of {} ({})",
        f.result.run_id,
        f.result.spec.endpoint_label()
    );
    std::fs::write(
        f.dir.join("flame-server.svg"),
        flame::flamegraph(&folded, &title)?,
    )?;
    // The allocator's share goes into the run's result, saved again.
    let mut f = f;
    let alloc = flame::allocator_share(&f.script);
    f.result.summary.server_allocator = Some(alloc.clone());
    if let Some(root) = f.dir.parent() {
        wirebench_core::store::save(root, &f.result)?;
    }
    let top: Vec<String> = alloc
        .top
        .iter()
        .take(3)
        .map(|e| format!("{} in {} {:.1}%", e.function, e.library, e.share_pct))
        .collect();
    writeln!(
        std::io::stdout(),
        "allocator: {:.1}% of the server's samples{}",
        alloc.share_pct,
        if top.is_empty() {
            String::new()
        } else {
            format!(" ({})", top.join(", "))
        }
    )?;
    let cost = flame::cost_per_op(&f.counters, f.result.summary.ops);
    std::fs::write(f.dir.join("perf-stat.txt"), format!("{cost}\n"))?;
    writeln!(std::io::stdout(), "server cost per operation: {cost}")?;
    writeln!(
        std::io::stdout(),
        "flamegraph of the server: {} ({:.1} ms on CPU sampled); run result: {}",
        f.dir.join("flame-server.svg").display(),
        flame::samples(&folded) as f64 / 1e6,
        f.dir.join("run.json").display()
    )?;
    Ok(ExitCode::from(
        wirebench_runner::run::RunReport {
            runs: vec![(f.result, f.dir)],
            repetitions: None,
            group: None,
        }
        .verdict()
        .exit_code(),
    ))
}

/// `flame --off-cpu`'s output: the folded stacks, their flamegraph, and the
/// figures that say whether every nanosecond was accounted for.
fn off_cpu(f: wirebench_runner::flame::FlameRun, merge_threads: bool) -> anyhow::Result<ExitCode> {
    use wirebench_report::offcpu;
    let rec = f.off_cpu.as_ref().expect("an off-CPU recording");
    let threads: Vec<offcpu::Thread> = rec
        .threads
        .iter()
        .map(|t| offcpu::Thread {
            tid: t.tid,
            name: t.name.clone(),
            wchan: t.wchan.clone(),
            on_cpu_ns: t.on_cpu_ns,
        })
        .collect();
    let window = offcpu::Window {
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
    };
    let script = rec.script().context("running perf script")?;
    let o = offcpu::fold(
        std::io::BufReader::new(script),
        &threads,
        window,
        merge_threads,
    )?;
    if o.switches_out == 0 && o.folded.trim().is_empty() {
        eprintln!(
            "error: perf recorded no switches of the server's threads (pid {})",
            f.server_pid
        );
        return Ok(ExitCode::from(1));
    }
    std::fs::write(f.dir.join("flame-offcpu.folded"), &o.folded)?;
    let title = format!(
        "server of {} ({}) off CPU",
        f.result.run_id,
        f.result.spec.endpoint_label()
    );
    std::fs::write(
        f.dir.join("flame-offcpu.svg"),
        flame::flamegraph_of(&o.folded, &title, "ns off CPU")?,
    )?;
    let figures = serde_json::json!({
        "window_ns": o.window_ns,
        "threads": o.threads,
        "off_cpu_ns": o.off_cpu_ns,
        "on_cpu_ns": o.on_cpu_ns,
        "accounted": o.accounted(),
        "switches_out": o.switches_out,
        "preempted": o.preempted,
        "woken_seen": o.woken_seen,
        "woken_unseen": o.woken_unseen,
    });
    std::fs::write(
        f.dir.join("offcpu.json"),
        serde_json::to_string_pretty(&figures)? + "\n",
    )?;
    let s = |ns: u64| ns as f64 / 1e9;
    let mut out = std::io::stdout();
    writeln!(
        out,
        "off CPU: {:.3} s over {} thread(s) in {:.3} s (on CPU {:.3} s by schedstat; off + on = {:.0}% of threads x wall), {} switches off a CPU ({} preempted), the waker seen for {} of {} wake-ups",
        s(o.off_cpu_ns),
        o.threads,
        s(o.window_ns),
        s(o.on_cpu_ns),
        100.0 * o.accounted(),
        o.switches_out,
        o.preempted,
        o.woken_seen,
        o.woken_seen + o.woken_unseen
    )?;
    if (o.accounted() - 1.0).abs() > 0.1 {
        eprintln!(
            "warning: off CPU + on CPU is {:.0}% of threads x wall, not 100%: threads that started during the window are not recorded, and perf may have lost events (see its messages above)",
            100.0 * o.accounted()
        );
    }
    writeln!(
        out,
        "flamegraph of where the server waits: {}; run result: {}",
        f.dir.join("flame-offcpu.svg").display(),
        f.dir.join("run.json").display()
    )?;
    Ok(ExitCode::from(
        wirebench_runner::run::RunReport {
            runs: vec![(f.result, f.dir)],
            repetitions: None,
            group: None,
        }
        .verdict()
        .exit_code(),
    ))
}
