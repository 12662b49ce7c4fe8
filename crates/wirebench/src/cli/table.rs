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
    /// md (Markdown) or csv.
    #[arg(long, default_value = "md", value_parser = ["md", "csv"])]
    format: String,
}

pub fn table(a: TableArgs) -> anyhow::Result<ExitCode> {
    if !a.dir.is_dir() {
        usage!("{}: not a directory", a.dir.display());
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
    let mut out = std::io::stdout().lock();
    write!(out, "{text}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
