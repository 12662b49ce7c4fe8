//! `wirebench report RESULTS... [-o report.html]`: the tables, hints and
//! plots of the runs found at each path, as a self-contained HTML page and
//! a Markdown file beside it.

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
    /// The HTML page to write; the Markdown goes beside it (same name, .md).
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
    /// Replace the file -o names if it exists (never done without it).
    #[arg(long)]
    force: bool,
    /// What throughput is plotted against: clients, connections, size, depth or rate.
    #[arg(long, default_value = "clients")]
    x: String,
    /// What makes a line (comma-separated): placement, arch, mode, transport, wait, size, depth...
    #[arg(long, value_delimiter = ',', default_value = "placement,arch")]
    series: Vec<String>,
}

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let numeric = ["clients", "connections", "size", "depth", "rate"];
    if !numeric.contains(&a.x.as_str()) {
        usage!("--x {}: one of {}", a.x, numeric.join(", "));
    }
    for s in &a.series {
        if !report::VARIABLES.contains(&s.as_str()) {
            usage!("--series {s}: one of {}", report::VARIABLES.join(", "));
        }
    }
    check_page(&a.output, a.force)?;
    check_output(&a.output.with_extension("md"), a.force)?;
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
        labels: Default::default(),
    };
    let figures = report::figures(&runs, &layout);
    let sections = timeline::sections_of_runs(&a.paths);
    let md_path = a.output.with_extension("md");
    wirebench_core::store::write_atomic(
        &a.output,
        report::html(&runs, &figures, &sections).as_bytes(),
    )
    .with_context(|| format!("writing {}", a.output.display()))?;
    wirebench_core::store::write_atomic(
        &md_path,
        report::markdown(&runs, &figures, &sections).as_bytes(),
    )
    .with_context(|| format!("writing {}", md_path.display()))?;
    writeln!(
        std::io::stdout(),
        "report of {} run(s), {} figure(s): {} and {}",
        runs.len(),
        figures.len(),
        a.output.display(),
        md_path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
