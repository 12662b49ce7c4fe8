//! `wirebench table DIR`: a sweep's summary (or any directory of runs) as
//! Markdown or CSV (see `wirebench_report::experiment`).

use super::error::usage;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::export::{CsvExporter, Document, Exporter, MarkdownExporter};

#[derive(Args, Debug)]
pub struct TableArgs {
    /// An experiment's directory (with sweep.json), or any directory holding run directories.
    dir: PathBuf,
    /// md (Markdown), csv, or ipc: each run as a line of the IPC report's CSV (its columns
    /// in its order, then wirebench's), as `run --format csv` prints it.
    #[arg(long, default_value = "md", value_parser = ["md", "csv", "ipc"])]
    format: String,
}

pub fn table(a: TableArgs) -> anyhow::Result<ExitCode> {
    if !a.dir.is_dir() {
        usage!("{}: not a directory", a.dir.display());
    }
    if a.format == "ipc" {
        let runs = match wirebench_report::inputs::runs_at(&a.dir) {
            Ok(r) => r,
            Err(e) => usage!("{e}"),
        };
        let mut out = crate::ui::stdout();
        // One header per shape (the data channel has no mode column).
        let mut last_head = String::new();
        for r in &runs {
            let (head, line) = wirebench_runner::record::ipc_csv(r, false);
            if head != last_head {
                writeln!(out, "{head}")?;
                last_head = head;
            }
            writeln!(out, "{line}")?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let t = match wirebench_report::experiment::table(&a.dir) {
        Ok(t) => t,
        Err(e) => usage!("{e}"),
    };
    let doc = Document::new("").table(t);
    let text = if a.format == "csv" {
        CsvExporter.export(&doc)
    } else {
        MarkdownExporter.export(&doc)
    };
    let mut out = crate::ui::stdout();
    write!(out, "{text}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
