//! `wirebench flame [run flags]`: a run whose embedded server is sampled by
//! `perf record` (cpu-clock, call graphs) while the load runs; its stacks
//! folded and drawn as a flamegraph in the run's directory
//! (`flame-server.svg`, `flame-server.folded`). `wirebench flame --diff A B`
//! draws the differential flamegraph of two such runs.

use super::run::{self, RunArgs, Session};
use crate::usage;
use anyhow::Context;
use clap::Args;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;
use wirebench_core::result::RunState;
use wirebench_core::spec::TargetSpec;
use wirebench_core::store;
use wirebench_core::topo::Topology;
use wirebench_report::flame;

#[derive(Args, Debug)]
pub struct FlameArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Merge the stacks of threads of one kind (names differing only by digits: all the
    /// reactors as one), as the messenger report does.
    #[arg(long)]
    merge_threads: bool,
    /// perf's sampling frequency, per second.
    #[arg(long, default_value_t = 999)]
    frequency: u32,
    /// Instead of running: the differential flamegraph of run B against run A (run directories
    /// or .folded files); red where B spends more.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    diff: Option<Vec<PathBuf>>,
    /// With --diff: where to write the SVG.
    #[arg(short, long, default_value = "flame-diff.svg")]
    output: PathBuf,
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

fn folded_of(p: &Path) -> anyhow::Result<String> {
    let f = if p.is_dir() {
        p.join("flame-server.folded")
    } else {
        p.to_path_buf()
    };
    std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))
}

pub fn flame(a: FlameArgs) -> anyhow::Result<ExitCode> {
    if let Some(d) = &a.diff {
        let (before, after) = (folded_of(&d[0])?, folded_of(&d[1])?);
        let title = format!("{} vs {}", d[1].display(), d[0].display());
        let svg = flame::differential(&before, &after, &title)?;
        store::write_atomic(&a.output, svg.as_bytes())?;
        println!("differential flamegraph: {}", a.output.display());
        return Ok(ExitCode::SUCCESS);
    }
    if a.frequency == 0 || a.frequency > 10_000 {
        usage!(
            "--frequency {}: between 1 and 10000 per second",
            a.frequency
        );
    }
    let topo = Topology::read();
    let (spec, placement) = run::validate(&a.run, &topo)?;
    if !matches!(spec.target, TargetSpec::Embedded { .. }) {
        usage!("flame samples the embedded server: drop --target");
    }
    if let Some(why) = perf_problem() {
        eprintln!("error: {why}");
        return Ok(ExitCode::from(1));
    }
    let mut session = Session::open(&spec)?;
    let pid = session.server_pid().expect("an embedded server");
    let data = a
        .run
        .results
        .join(format!(".perf-{}.data", std::process::id()));
    std::fs::create_dir_all(&a.run.results)?;
    let mut perf_cmd = Command::new("perf");
    wirebench_transports::sys::unblock_termination_signals_in_child(&mut perf_cmd);
    let mut perf = perf_cmd
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-g",
            "-F",
            &a.frequency.to_string(),
        ])
        .args(["-p", &pid.to_string(), "-o"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .context("starting perf")?;
    eprintln!(
        "flame: perf (pid {}) samples the server (pid {pid})",
        perf.id()
    );
    // Cycles and instructions, where the machine counts them (a VM often
    // does not: then they are reported unavailable).
    let mut stat_cmd = Command::new("perf");
    wirebench_transports::sys::unblock_termination_signals_in_child(&mut stat_cmd);
    let stat = stat_cmd
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "cycles,instructions",
            "-p",
            &pid.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok();
    let mut result = session.measure(&spec, &placement, a.run.format == "text");
    // perf writes its data when interrupted.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(perf.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while perf.try_wait()?.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if perf.try_wait()?.is_none() {
        let _ = perf.kill();
    }
    let _ = perf.wait();
    let counters = stat.map(|c| {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        c.wait_with_output()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .unwrap_or_default()
    });
    session.close(Some(&mut result));
    result.run_id = store::new_run_id("flame");
    result.command_line = super::args::command_line();
    result.started_at = store::now_rfc3339();
    let dir = store::save(&a.run.results, &result)?;
    store::append_summary_csv(&a.run.results, &result)?;
    let script = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .stderr(Stdio::null())
        .output()
        .context("running perf script")?;
    let _ = std::fs::remove_file(&data);
    let text = String::from_utf8_lossy(&script.stdout);
    let folded = flame::fold(&text, a.merge_threads)?;
    if folded.trim().is_empty() {
        eprintln!("error: perf recorded no samples of the server (pid {pid})");
        return Ok(ExitCode::from(1));
    }
    std::fs::write(dir.join("flame-server.folded"), &folded)?;
    let title = format!("server of {} ({})", result.run_id, spec.endpoint_label());
    std::fs::write(
        dir.join("flame-server.svg"),
        flame::flamegraph(&folded, &title)?,
    )?;
    let cost = cost_per_op(counters.as_deref().unwrap_or(""), result.summary.ops);
    std::fs::write(dir.join("perf-stat.txt"), format!("{cost}\n"))?;
    println!("server cost per operation: {cost}");
    println!(
        "flamegraph of the server: {} ({:.1} ms on CPU sampled); run result: {}",
        dir.join("flame-server.svg").display(),
        flame::samples(&folded) as f64 / 1e6,
        dir.join("run.json").display()
    );
    Ok(match result.status.state {
        RunState::Complete => ExitCode::SUCCESS,
        RunState::Interrupted => ExitCode::from(130),
        RunState::Failed => ExitCode::from(1),
    })
}

/// Cycles and instructions per operation from `perf stat -x,` output, or
/// why they are unavailable.
fn cost_per_op(stat: &str, ops: u64) -> String {
    let mut parts = Vec::new();
    for event in ["cycles", "instructions"] {
        let line = stat.lines().find(|l| l.split(',').nth(2) == Some(event));
        match line.and_then(|l| l.split(',').next()) {
            Some(v) if v.trim().parse::<f64>().is_ok() && ops > 0 => {
                let n: f64 = v.trim().parse().unwrap_or(0.0);
                parts.push(format!("{:.0} {event}/op", n / ops as f64));
            }
            Some(v) => parts.push(format!(
                "{event}: unavailable (perf stat says {})",
                v.trim()
            )),
            None => parts.push(format!("{event}: unavailable (no perf stat reading)")),
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn counters_or_why_not() {
        let ok = "5000000,,cycles,100,100.00,,\n2500000,,instructions,100,100.00,,\n";
        assert_eq!(
            super::cost_per_op(ok, 1000),
            "5000 cycles/op, 2500 instructions/op"
        );
        let vm = "<not supported>,,cycles,0,100.00,,\n<not supported>,,instructions,0,100.00,,\n";
        assert!(
            super::cost_per_op(vm, 1000)
                .contains("cycles: unavailable (perf stat says <not supported>)")
        );
    }
}
