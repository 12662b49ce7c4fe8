//! `wirebench sweep FILE`: an experiment from one TOML spec, planned by
//! `wirebench_core::plan` (every key checked, every run checked before
//! anything starts) and run by `wirebench_runner::sweep` (each run a child
//! process, the index rewritten after every run). See `specs/example.toml`.

use super::error::runner_error;
use super::error::usage;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use wirebench_core::index::Entry;
use wirebench_core::plan::{self, Experiment, PlannedRun};
use wirebench_report::progress;
use wirebench_runner::process;
use wirebench_runner::sweep::{self, SweepEvents};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The experiment spec (TOML); every key is documented in specs/example.toml.
    file: PathBuf,
    /// Print the plan (every run, its flags and cpusets) without running anything.
    #[arg(long)]
    dry_run: bool,
    /// Continue an interrupted sweep: runs already complete are skipped. Refused when the spec
    /// or its matrix changed since (the change named); see --resume-changed.
    #[arg(long)]
    resume: bool,
    /// Continue a sweep whose spec changed: the changed and new points run, the points no
    /// longer planned are left out of the count.
    #[arg(long, conflicts_with = "resume")]
    resume_changed: bool,
    #[arg(
        long,
        requires = "resume",
        help = "With --resume: the same as --resume-changed"
    )]
    force: bool,
    /// Root of the results: the experiment goes to DIR/NAME/.
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Run the spec at one of its scales (`[scale.NAME]`, e.g. small: the same study on this
    /// machine in minutes); its results go to NAME-SCALE.
    #[arg(long, value_name = "NAME")]
    scale: Option<String>,
    /// With --dry-run: plan for the topology of this /sys tree instead of this machine's.
    #[arg(long, requires = "dry_run")]
    sys: Option<PathBuf>,
    /// Also write a JUnit XML report, for CI systems to show: a test case for each run of the
    /// sweep (failed when it did not complete) and one per --slo objective (failed when missed).
    #[arg(long, value_name = "FILE", conflicts_with = "dry_run")]
    junit: Option<PathBuf>,
    /// Live metrics of each run as it works (its first instance's), labelled by its point.
    #[command(flatten)]
    metrics: wirebench_core::live::LiveFlags,
}

struct Progress(std::time::Instant);

impl SweepEvents for Progress {
    fn resuming(&mut self, done: usize, total: usize) {
        eprintln!("sweep: resuming: {done} of {total} run(s) complete already");
    }

    fn run_started(&mut self, n: usize, total: usize, r: &PlannedRun, eta: Option<Duration>) {
        let line = progress::sweep_run(n, total, r.name(), self.0.elapsed(), eta);
        eprintln!("{line}");
    }

    fn metrics_at(&mut self, url: &str) {
        eprintln!("  metrics: {url}");
    }

    fn note(&mut self, text: &str) {
        eprintln!("  {text}");
    }

    fn run_ended(&mut self, e: &Entry) {
        if e.status != "complete" {
            eprintln!(
                "  {}: {}",
                e.status,
                e.reason.as_deref().unwrap_or("no reason given")
            );
        }
    }
}

pub fn sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let exp = match Experiment::read_scaled(&a.file, a.scale.as_deref()) {
        Ok(e) => e,
        Err(e) => usage!("{e}"),
    };
    let topo = super::topo::read(a.sys.as_ref())?;
    let runs = match plan::plan(&exp, &topo, a.sys.is_none()) {
        Ok(r) => r,
        Err(e) => usage!("{e}"),
    };
    if a.dry_run {
        let mut out = crate::ui::stdout();
        for line in plan::describe(&exp, &runs, &a.results, &topo) {
            writeln!(out, "{line}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(j) = &a.junit {
        super::error::check_output(j, a.force)?;
    }
    let metrics = wirebench_runner::metrics::flags::for_sweep(&a.metrics)
        .map_err(super::error::UsageError)?;
    if let Some(addr) = a.metrics.metrics_listen {
        // A port 0 is each run's own: said as each point binds it.
        if addr.port() != 0 {
            eprintln!("metrics: http://{addr}/metrics (each run's, while it works)");
        }
    }
    // Ctrl-C and SIGTERM: the run under way is stopped (its partial result
    // saved), the index written, and the sweep ends; --resume continues it.
    let cancel = process::watch_signals()?;
    let began = std::time::Instant::now();
    let out = sweep::sweep(
        &exp,
        &a.file,
        &runs,
        &a.results,
        &sweep::How {
            existing: sweep::Existing::of(
                a.resume || a.resume_changed,
                a.force || a.resume_changed,
            ),
            metrics,
        },
        &cancel,
        &mut Progress(began),
    )
    .map_err(runner_error)?;
    if let Some(j) = &a.junit {
        wirebench_report::junit::save(
            j,
            &format!("wirebench sweep {}", exp.name),
            &wirebench_report::junit::of_runs(&out.runs()),
        )?;
    }
    let index = wirebench_core::index::path(&out.dir);
    for line in progress::sweep_ended(&exp.name, &out.index.runs, runs.len(), out.elapsed, &index) {
        eprintln!("{line}");
    }
    // Its points, as `wirebench table` shows them, on stdout.
    if let Ok(t) = wirebench_report::experiment::table(&out.dir) {
        use wirebench_report::export::{Document, Exporter, TextExporter};
        write!(
            crate::ui::stdout(),
            "\n{}",
            TextExporter.export(&Document::new("").table(t))
        )?;
    }
    if out.interrupted {
        eprintln!("interrupted: continue with --resume");
        return Ok(ExitCode::from(
            wirebench_runner::process::interrupted_exit_code(),
        ));
    }
    Ok(ExitCode::from(u8::from(out.failed > 0)))
}
