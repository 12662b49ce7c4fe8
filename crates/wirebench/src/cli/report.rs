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
}

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    check_page(&a.output, a.force)?;
    let md_path = a.output.with_extension("md");
    check_output(&md_path, a.force)?;
    let stem = a
        .output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let fig_name = format!("{stem}-figures");
    let fig_dir = a.output.with_file_name(&fig_name);
    if fig_dir.exists() && !a.force {
        usage!(
            "-o {}: {} exists (its figures would be replaced): --force replaces it",
            a.output.display(),
            fig_dir.display()
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
        labels: Default::default(),
        panel: a.panel.clone(),
    };
    if let Err(e) = report::check_layout(&runs, &layout) {
        usage!("{e}");
    }
    let figures = report::figures(&runs, &layout);
    let sections = timeline::sections_of_runs(&a.paths);
    wirebench_core::store::write_atomic(
        &a.output,
        report::html(&runs, &figures, &sections).as_bytes(),
    )
    .with_context(|| format!("writing {}", a.output.display()))?;
    let (md, files) = report::markdown_with_figures(&runs, &figures, &sections, &fig_name);
    if let Ok(old) = std::fs::read_dir(&fig_dir) {
        // --force: the folder's old figures (its .svg files, nothing else)
        // go, so that none is left that the page does not link.
        for f in old.flatten() {
            if f.path().extension().is_some_and(|e| e == "svg") {
                std::fs::remove_file(f.path())
                    .with_context(|| format!("replacing {}", f.path().display()))?;
            }
        }
    }
    if !files.is_empty() {
        std::fs::create_dir_all(&fig_dir)
            .with_context(|| format!("creating {}", fig_dir.display()))?;
    }
    for (name, svg) in &files {
        let p = fig_dir.join(name);
        wirebench_core::store::write_atomic(&p, svg.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    wirebench_core::store::write_atomic(&md_path, md.as_bytes())
        .with_context(|| format!("writing {}", md_path.display()))?;
    writeln!(
        std::io::stdout(),
        "report of {} run(s), {} figure(s): {} and {} (figures in {})",
        runs.len(),
        figures.len(),
        a.output.display(),
        md_path.display(),
        fig_dir.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
