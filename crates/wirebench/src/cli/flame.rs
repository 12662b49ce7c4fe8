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
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::flame;

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
    /// With --diff (only): where to write the SVG; a run's flamegraph goes to its directory.
    #[arg(short, long, default_value = "flame-diff.svg", requires = "diff")]
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

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CallGraphArg {
    Fp,
    Dwarf,
}

pub fn flame(a: FlameArgs) -> anyhow::Result<ExitCode> {
    if let Some(d) = &a.diff {
        super::error::check_output(&a.output, a.run.req.output.force == Some(true))?;
        let svg = flame::differential_of(&d[0], &d[1], a.off_cpu)?;
        wirebench_core::store::write_atomic(&a.output, svg.as_bytes())?;
        writeln!(
            crate::ui::stdout(),
            "differential flamegraph: {}",
            a.output.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    wirebench_runner::metrics::flags::refuse(&a.run.req.watch, "flame")
        .map_err(super::error::UsageError)?;
    let b = a.run.begin()?;
    let mut req = b.req.clone();
    let mut others = Vec::new();
    if let Some((mine, rest)) =
        wirebench_core::plan::instance_of(&req, a.instances, a.instance, &b.topo)
            .map_err(UsageError)?
    {
        req = mine;
        others = wirebench_runner::flame::start_others(&rest).context("starting an instance")?;
        eprintln!(
            "{}",
            wirebench_core::plan::instance_note(
                &req,
                a.instance.unwrap_or(1),
                a.instances,
                rest.len()
            )
        );
    }
    let mut console = Console::new(req.output.format());
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
        &b.opts,
        &b.topo,
        super::args::command_line(),
        b.cancel,
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
    let mut f = f;
    let Some(lines) = flame::write_on_cpu(
        &f.dir,
        &f.script,
        &f.counters,
        &mut f.result,
        a.merge_threads,
    )?
    else {
        eprintln!(
            "error: perf recorded no samples of the server (pid {})",
            f.server_pid
        );
        return Ok(ExitCode::from(1));
    };
    for l in lines {
        writeln!(crate::ui::stdout(), "{l}")?;
    }
    Ok(ExitCode::from(f.exit_code()))
}

/// `flame --off-cpu`'s output: the folded stacks, their flamegraph, and the
/// figures that say whether every nanosecond was accounted for.
fn off_cpu(f: wirebench_runner::flame::FlameRun, merge_threads: bool) -> anyhow::Result<ExitCode> {
    let rec = f.off_cpu.as_ref().expect("an off-CPU recording");
    let script = rec.script().context("running perf script")?;
    let Some((lines, warning)) = flame::write_off_cpu(
        &f.dir,
        std::io::BufReader::new(script),
        &rec.threads,
        rec.window,
        &f.result,
        merge_threads,
    )?
    else {
        eprintln!(
            "error: perf recorded no switches of the server's threads (pid {})",
            f.server_pid
        );
        return Ok(ExitCode::from(1));
    };
    for l in lines {
        writeln!(crate::ui::stdout(), "{l}")?;
    }
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::from(f.exit_code()))
}
