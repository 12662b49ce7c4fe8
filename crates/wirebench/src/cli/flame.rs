//! `wirebench flame [run flags]`: a run whose embedded server is sampled by
//! `perf record` (the runner), its stacks folded and drawn as a flamegraph
//! in the run's directory (the report crate): `flame-server.svg`,
//! `flame-server.folded`. `wirebench flame --diff A B` draws the
//! differential flamegraph of two such runs.

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
    /// Instead of running: the differential flamegraph of run B against run A (run directories
    /// or .folded files); red where B spends more.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    diff: Option<Vec<PathBuf>>,
    /// With --diff: where to write the SVG.
    #[arg(short, long, default_value = "flame-diff.svg")]
    output: PathBuf,
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
        super::error::check_output(&a.output, a.run.force)?;
        let (before, after) = (folded_of(&d[0])?, folded_of(&d[1])?);
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
    let req = a.run.request();
    let opts = a.run.session().map_err(UsageError::from)?;
    super::run::warn_if_debug();
    let cancel = process::watch_signals()?;
    let mut console = Console::new(req.format());
    console.results = false;
    let f = wirebench_runner::flame::flame(
        &req,
        a.frequency,
        &opts,
        &Topology::read(),
        super::args::command_line(),
        cancel,
        &mut console,
    )
    .map_err(runner_error)?;
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
