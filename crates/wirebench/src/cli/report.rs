//! `wirebench report RESULTS... [-o report.html]`: the tables, hints and
//! plots of the runs found at each path, as a self-contained HTML page and
//! a Markdown file beside it, whose figures are SVG files in a folder
//! beside it too (`report-figures/`).

use super::error::{check_output, check_page, usage};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::{inputs, report, timeline};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Runs: run.json files, run directories, or directories of runs (an experiment).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The HTML page to write; the Markdown goes beside it (same name, .md), its figures
    /// in NAME-figures/ as SVG files.
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
    /// Replace the file -o names if it exists (never done without it).
    #[arg(long)]
    force: bool,
    /// What throughput is plotted against: clients, connections, instances, depth, size,
    /// rate, or any key with numbers for values [default: the first of the six that varies].
    #[arg(long)]
    x: Option<String>,
    /// What makes a line (comma-separated): any variable: placement, arch, mode, wait, a
    /// matrix key of the sweep, any spec key (server_cmd, clients_as, parser...) [default:
    /// every other variable that varies].
    #[arg(long, value_delimiter = ',')]
    series: Option<Vec<String>>,
    /// One throughput plot per value of this variable, on shared axes (small multiples)
    /// [default: placement, when the lines would be split by placement and more].
    #[arg(long)]
    panel: Option<String>,
    /// The history of a results directory (the one path given): each series' metrics over its
    /// runs (by commit), with their change points; the series also go to NAME.csv (the
    /// columns Apache Otava reads) and NAME.bmf.json (the latest runs, Bencher's format).
    #[arg(long, conflicts_with_all = ["x", "series", "panel"])]
    history: bool,
    /// With --history: the metrics plotted (comma-separated): ops_per_s, p50, p99, p99.9,
    /// cpu_per_op, server_cpu_per_op, errors.
    #[arg(
        long,
        value_delimiter = ',',
        requires = "history",
        default_value = "ops_per_s,p99"
    )]
    metric: Vec<String>,
    /// With --history: only the runs with this field or label (repeatable): commit=abc123,
    /// transport=redis, series=ID.
    #[arg(long = "where", value_name = "KEY=VALUE", requires = "history")]
    conditions: Vec<String>,
}

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    check_page(&a.output, a.force)?;
    if a.history {
        return history(a);
    }
    let files = report::ReportFiles::of(&a.output);
    check_output(&files.markdown, a.force)?;
    if files.figures.exists() && !a.force {
        usage!(
            "-o {}: {} exists (its figures would be replaced): --force replaces it",
            a.output.display(),
            files.figures.display()
        );
    }
    let mut runs = Vec::new();
    for p in &a.paths {
        match inputs::runs_at(p) {
            Ok(r) => runs.extend(r),
            Err(e) => usage!("{e}"),
        }
    }
    let layout = report::Layout {
        x: a.x.clone(),
        series: a.series.clone(),
        panel: a.panel.clone(),
        ..Default::default()
    }
    .or_plan(inputs::report_plan(&a.paths));
    if let Err(e) = report::check_layout(&runs, &layout) {
        usage!("{e}");
    }
    let figures = report::figures(&runs, &layout);
    let sections = timeline::sections_of_runs(&a.paths);
    files.write(&runs, &figures, &sections)?;
    writeln!(
        crate::ui::stdout(),
        "report of {} run(s), {} figure(s): {} and {} (figures in {})",
        runs.len(),
        figures.len(),
        a.output.display(),
        files.markdown.display(),
        files.figures.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `report --history RESULTS`: the page of the history, its CSV and BMF.
fn history(a: ReportArgs) -> anyhow::Result<ExitCode> {
    use wirebench_history::Filter;
    use wirebench_history::series::Metric;
    use wirebench_report::export::{Exporter, HtmlExporter};
    let [results] = a.paths.as_slice() else {
        usage!(
            "--history reads one results directory: {} given",
            a.paths.len()
        );
    };
    let metrics = match Metric::parse_list(&a.metric) {
        Ok(m) => m,
        Err(e) => usage!("{e}"),
    };
    let filter = match Filter::parse(&a.conditions) {
        Ok(f) => f,
        Err(e) => usage!("{e}"),
    };
    let csv_path = a.output.with_extension("csv");
    let bmf_path = a.output.with_extension("bmf.json");
    check_output(&csv_path, a.force)?;
    check_output(&bmf_path, a.force)?;
    let (entries, notes) = wirebench_history::upkeep::read(results, &filter)?;
    notes.iter().for_each(|n| eprintln!("{n}"));
    if entries.is_empty() {
        usage!("{}: no run in its history matches", results.display());
    }
    let o = wirebench_history::changes::Options::default();
    let mut doc = wirebench_report::history::page(&entries, &metrics, &o);
    doc.title = format!("History of {}", results.display());
    let write = |p: &std::path::Path, bytes: &[u8]| {
        wirebench_core::store::write_atomic(p, bytes)
            .with_context(|| format!("writing {}", p.display()))
    };
    write(&a.output, HtmlExporter.export(&doc).as_bytes())?;
    write(
        &csv_path,
        wirebench_report::history::otava_csv(&entries).as_bytes(),
    )?;
    let bmf = serde_json::to_vec_pretty(&wirebench_report::history::bmf(&entries))?;
    write(&bmf_path, &bmf)?;
    writeln!(
        crate::ui::stdout(),
        "history of {} run(s): {}, {} (Otava) and {} (BMF)",
        entries.len(),
        a.output.display(),
        csv_path.display(),
        bmf_path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
