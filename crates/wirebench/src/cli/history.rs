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
use wirebench_history::{Filter, History};
use wirebench_report::export::{Document, Exporter, MarkdownExporter, Table};

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
enum HistoryCommand {
    /// Index the runs saved under a directory (any depth: runs, sweeps, searches).
    Import(ImportArgs),
    /// The runs indexed, oldest first (or, with --series, the series).
    List(ListArgs),
    /// One run (by its id) or one series (by its id or a prefix of it): its settings, machine,
    /// labels and metrics; a series' runs, oldest first.
    Show(ShowArgs),
    /// Find the change points of each series (same settings, same machine): exit 4 when a
    /// metric got worse, 10 when no series has enough runs, 0 otherwise.
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
        let h = History::open_existing(&History::path_in(&self.results))?;
        Ok(h.entries(&filter)?)
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
        HistoryCommand::List(a) => list(a),
        HistoryCommand::Show(a) => show(a),
        HistoryCommand::Check(a) => check(a),
    }
}

fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    if !a.dir.is_dir() {
        usage!("{}: not a directory of results", a.dir.display());
    }
    let mut h = History::open(&History::path_in(&a.dir))?;
    let got = h.import(&a.dir)?;
    for (file, why) in &got.unreadable {
        eprintln!("skipped {}: {why}", file.display());
    }
    writeln!(
        std::io::stdout(),
        "{} run(s) indexed, {} indexed before, {} unreadable: {}",
        got.new,
        got.known,
        got.unreadable.len(),
        h.path().display()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let entries = a.at.entries()?;
    let mut out = std::io::stdout().lock();
    if a.format == "json" {
        serde_json::to_writer_pretty(&mut out, &entries)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table = if a.series {
        wirebench_report::history::series_table(&entries)
    } else {
        wirebench_report::history::runs_table(&entries)
    };
    writeln!(out, "{}", markdown(table))?;
    Ok(ExitCode::SUCCESS)
}

/// A table alone in Markdown (the document's empty title left out).
fn markdown(table: Table) -> String {
    let md = MarkdownExporter.export(&Document::new("").table(table));
    md.trim_start_matches('#').trim().to_string()
}

fn show(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let h = History::open_existing(&History::path_in(&a.results))?;
    let all = h.entries(&Filter::default())?;
    let mut out = std::io::stdout().lock();
    if let Some(e) = all.iter().find(|e| e.run_id == a.id) {
        serde_json::to_writer_pretty(&mut out, e)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let series: std::collections::BTreeSet<String> = all
        .iter()
        .map(|e| e.series.clone())
        .filter(|s| !a.id.is_empty() && s.starts_with(a.id.as_str()))
        .collect();
    let id = match series.len() {
        1 => series.into_iter().next().expect("one"),
        0 => usage!(
            "{}: no run or series of that id in {}",
            a.id,
            h.path().display()
        ),
        n => usage!("{}: the start of {n} series' ids; give more of it", a.id),
    };
    let runs: Vec<_> = all.into_iter().filter(|e| e.series == id).collect();
    writeln!(out, "series {id}: {}", runs[0].description)?;
    writeln!(out, "machine: {}", runs[0].machine)?;
    writeln!(out, "settings: {}", runs[0].settings)?;
    writeln!(
        out,
        "{}",
        markdown(wirebench_report::history::runs_table(&runs))
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `5%` or `0.05` -> 0.05.
fn fraction(flag: &str, v: &str) -> anyhow::Result<f64> {
    let parsed = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => v.trim().parse::<f64>(),
    };
    match parsed {
        Ok(f) if (0.0..1.0).contains(&f) => Ok(f),
        _ => usage!("{flag} {v}: give a change from 0% to 100%, e.g. 5% or 0.05"),
    }
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let metrics = match Metric::parse_list(&a.metric) {
        Ok(m) => m,
        Err(e) => usage!("{e}"),
    };
    if !(a.pvalue > 0.0 && a.pvalue < 1.0) {
        usage!(
            "--pvalue {}: give a probability between 0 and 1, e.g. 0.001",
            a.pvalue
        );
    }
    if a.window < 4 {
        usage!("--window {}: at least 4 runs", a.window);
    }
    let o = Options {
        pvalue: a.pvalue,
        min_magnitude: fraction("--min-magnitude", &a.min_magnitude)?,
        window: a.window,
    };
    if let Some(j) = &a.junit {
        check_output(j, a.force)?;
    }
    let entries = a.at.entries()?;
    let report = wirebench_history::check::check(&entries, &metrics, &o);
    let mut out = std::io::stdout().lock();
    if a.format == "json" {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        for line in wirebench_report::history::check_lines(&report) {
            writeln!(out, "{line}")?;
        }
    }
    if let Some(j) = &a.junit {
        let suites = wirebench_report::history::check_junit(&report, &metrics);
        let doc = wirebench_report::junit::write("wirebench history check", &suites);
        wirebench_core::store::write_atomic(j, doc.as_bytes())?;
    }
    let regressions = report.regressions();
    out.flush()?;
    if regressions > 0 {
        let series: std::collections::BTreeSet<&String> = report
            .findings
            .iter()
            .filter(|f| f.regression)
            .map(|f| &f.series)
            .collect();
        eprintln!(
            "{regressions} regression(s), in {} of the {} series checked",
            series.len(),
            report.checked.len()
        );
        return Ok(ExitCode::from(EXIT_REGRESSION));
    }
    if report.checked.is_empty() {
        eprintln!(
            "no series has {} complete runs or more: nothing was checked",
            wirebench_history::changes::MIN_POINTS
        );
        return Ok(ExitCode::from(EXIT_TOO_FEW));
    }
    Ok(ExitCode::SUCCESS)
}
