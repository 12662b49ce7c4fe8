//! `wirebench history`: the index of every run saved in a results
//! directory (`DIR/history.sqlite`): `import` indexes runs saved before,
//! `list` shows runs or series, `check` finds the change points of each
//! series and fails (exit 4) on a regression.

use super::error::{check_output, usage};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_history::changes::Options;
use wirebench_history::series::Metric;
use wirebench_history::{Filter, Found, History};
use wirebench_report::history;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
enum HistoryCommand {
    /// Index the runs saved under a directory (any depth: runs, sweeps, searches).
    Import(ImportArgs),
    /// Make the index again from the run directories: the database there is moved aside
    /// (history.sqlite.old-SECS), never deleted. A damaged one is made again by itself.
    Rebuild(ImportArgs),
    /// The runs indexed, oldest first (or, with --series, the series).
    List(ListArgs),
    /// One run (by its id) or one series (by its id or a prefix of it): its settings, machine,
    /// labels and metrics; a series' runs, oldest first.
    Show(ShowArgs),
    /// Find the change points of each series (same settings, same machine), and the runs that
    /// are outliers (not changes): exit 4 when a metric got worse, 1 when a run has a value no
    /// run can have (negative, or a latency of a run with no operation: named, left out), 10
    /// when no series has enough runs, 0 otherwise.
    Check(CheckArgs),
}

/// Where the history is.
#[derive(Args, Debug)]
struct Where {
    /// The results directory whose history.sqlite is read.
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Only the runs with this field or label (repeatable): transport=redis,
    /// status=complete, commit=abc123, branch=main, series=ID (a prefix).
    #[arg(long = "where", value_name = "KEY=VALUE")]
    conditions: Vec<String>,
}

impl Where {
    fn entries(&self) -> anyhow::Result<Vec<wirebench_history::Entry>> {
        let filter = match Filter::parse(&self.conditions) {
            Ok(f) => f,
            Err(e) => usage!("{e}"),
        };
        let (entries, notes) = wirebench_history::upkeep::read(&self.results, &filter)?;
        notes.iter().for_each(|n| eprintln!("{n}"));
        Ok(entries)
    }
}

#[derive(Args, Debug)]
struct ImportArgs {
    /// The directory to index; its history.sqlite is made if absent.
    #[arg(default_value = "results")]
    dir: PathBuf,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    at: Where,
    /// A row per series (its runs, first and last, settings, machine).
    #[arg(long)]
    series: bool,
    /// md (a table) or json (every field).
    #[arg(long, default_value = "md", value_parser = ["md", "json"])]
    format: String,
}

#[derive(Args, Debug)]
struct ShowArgs {
    /// A run id, or a series id (or the start of one: the 8 digits `list` shows).
    id: String,
    /// The results directory whose history.sqlite is read.
    #[arg(long, default_value = "results")]
    results: PathBuf,
}

#[derive(Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    at: Where,
    /// The metrics checked (comma-separated): ops_per_s, p50, p99, p99.9, cpu_per_op,
    /// server_cpu_per_op, errors.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ops_per_s,p50,p99,p99.9,cpu_per_op,server_cpu_per_op"
    )]
    metric: Vec<String>,
    /// The largest p-value (Student's t-test of the runs either side) that counts as a change.
    #[arg(long, default_value_t = 0.001)]
    pvalue: f64,
    /// The smallest change of the mean that counts: 5% (or 0.05).
    #[arg(long, default_value = "5%")]
    min_magnitude: String,
    /// Runs read at once by E-Divisive (sliding windows, half a window apart).
    #[arg(long, default_value_t = 50)]
    window: usize,
    /// Also write a JUnit XML report: a test case per metric and change point (a regression
    /// fails), for CI systems to show.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Replace the --junit file if it exists.
    #[arg(long)]
    force: bool,
    /// md (lines) or json (every change point, with its statistics).
    #[arg(long, default_value = "md", value_parser = ["md", "json"])]
    format: String,
}

/// A regression found.
const EXIT_REGRESSION: u8 = 4;
/// No series with enough runs to check.
const EXIT_TOO_FEW: u8 = 10;

pub fn history(a: HistoryArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        HistoryCommand::Import(a) => import(a),
        HistoryCommand::Rebuild(a) => rebuild(a),
        HistoryCommand::List(a) => list(a),
        HistoryCommand::Show(a) => show(a),
        HistoryCommand::Check(a) => check(a),
    }
}

fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    if !a.dir.is_dir() {
        usage!("{}: not a directory of results", a.dir.display());
    }
    let (h, got, note) = wirebench_history::upkeep::import(&a.dir)?;
    note.iter().for_each(|n| eprintln!("{n}"));
    // Indexed now: nothing waits for the history any more.
    let _ = std::fs::remove_file(a.dir.join(wirebench_history::upkeep::PENDING));
    said(&got);
    writeln!(
        crate::ui::stdout(),
        "{} run(s) indexed, {} indexed before, {} unreadable: {}",
        got.new,
        got.known,
        got.unreadable.len(),
        h.path().display()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn rebuild(a: ImportArgs) -> anyhow::Result<ExitCode> {
    if !a.dir.is_dir() {
        usage!("{}: not a directory of results", a.dir.display());
    }
    let (h, done) = History::rebuild(&a.dir, "old")?;
    said(&done.imported);
    writeln!(
        crate::ui::stdout(),
        "{} run(s) indexed, {} unreadable: {}{}",
        done.imported.new,
        done.imported.unreadable.len(),
        h.path().display(),
        done.moved_to
            .map(|p| format!(" (the one before is {})", p.display()))
            .unwrap_or_default()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What an import could not read, and the runs found twice with other
/// figures.
fn said(got: &wirebench_history::Imported) {
    for (file, why) in &got.unreadable {
        eprintln!("skipped {}: {why}", file.display());
    }
    for why in &got.conflicts {
        eprintln!("{why}");
    }
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let entries = a.at.entries()?;
    let mut out = crate::ui::stdout();
    if a.format == "json" {
        serde_json::to_writer_pretty(&mut out, &entries)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table = if a.series {
        history::series_table(&entries)
    } else {
        history::runs_table(&entries)
    };
    writeln!(out, "{}", history::markdown(table))?;
    Ok(ExitCode::SUCCESS)
}

fn show(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let (h, notes) = wirebench_history::upkeep::open_mended(&a.results)?;
    notes.iter().for_each(|n| eprintln!("{n}"));
    let mut out = crate::ui::stdout();
    match h.find(&a.id) {
        Ok(Found::Run(e)) => {
            serde_json::to_writer_pretty(&mut out, &e)?;
            writeln!(out)?;
        }
        Ok(Found::Series(runs)) => writeln!(out, "{}", history::series_text(&runs))?,
        Err(why) => usage!("{why}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let metrics = match Metric::parse_list(&a.metric) {
        Ok(m) => m,
        Err(e) => usage!("{e}"),
    };
    let o = match Options::checked(a.pvalue, &a.min_magnitude, a.window) {
        Ok(o) => o,
        Err(why) => usage!("{why}"),
    };
    if let Some(j) = &a.junit {
        check_output(j, a.force)?;
    }
    let entries = a.at.entries()?;
    let report = wirebench_history::check::check(&entries, &metrics, &o);
    let mut out = crate::ui::stdout();
    if a.format == "json" {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        for line in history::check_lines(&report) {
            writeln!(out, "{line}")?;
        }
    }
    if let Some(j) = &a.junit {
        let suites = history::check_junit(&report, &metrics);
        wirebench_report::junit::save(j, "wirebench history check", &suites)?;
    }
    out.flush()?;
    if let Some(ending) = history::check_ending(&report) {
        eprintln!("{ending}");
    }
    Ok(ExitCode::from(match report.regressions() {
        // Values no run can have: the check's answer is not to be trusted.
        0 if !report.data_errors.is_empty() => 1,
        0 if report.checked.is_empty() => EXIT_TOO_FEW,
        0 => 0,
        _ => EXIT_REGRESSION,
    }))
}
