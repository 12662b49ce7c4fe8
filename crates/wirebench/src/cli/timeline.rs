//! `wirebench timeline FILE...`: the operations of a trace grouped by
//! shape, and per event of one shape the cumulative and delta statistics
//! (the RAMCloud timeline report's layout), with each event's CDF in an
//! HTML page on request. Reads wirebench traces and TimeTrace text.

use super::error::{check_page, usage};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::timeline;

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// Trace files: wirebench's (`run --trace`, `serve --trace`, the C library) or PerfUtils /
    /// RAMCloud TimeTrace text (`  12.3 ns (+   4.5 ns): message`, one operation per block).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Analyse the Nth most common shape (1: the most common).
    #[arg(long, default_value_t = 1)]
    shape: usize,
    /// Merge several wirebench traces by time (client and server of one run: the operation ids
    /// match when it had one connection).
    #[arg(long)]
    merge: bool,
    /// Also write an HTML page with the table and each event's CDF.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace the file -o names if it exists (never done without it).
    #[arg(long)]
    force: bool,
}

pub fn timeline(a: TimelineArgs) -> anyhow::Result<ExitCode> {
    if a.files.len() > 1 && !a.merge {
        usage!(
            "{} files: add --merge to combine them by time",
            a.files.len()
        );
    }
    if a.shape == 0 {
        usage!("--shape 0: shapes are numbered from 1 (the most common)");
    }
    if let Some(o) = &a.output {
        check_page(o, a.force)?;
    }
    let ops = match timeline::ops_of_files(&a.files) {
        Ok(o) => o,
        Err(e) => usage!("{e}"),
    };
    let shapes = timeline::shapes(&ops);
    let mut out = std::io::stdout().lock();
    if shapes.is_empty() {
        usage!("no complete operation (from 'begin' to 'end' with one id) in the trace");
    }
    writeln!(
        out,
        "{} operation(s) in {} shape(s):",
        ops.len(),
        shapes.len()
    )?;
    for (i, (names, of)) in shapes.iter().enumerate().take(5) {
        writeln!(
            out,
            "  shape {}: {} operation(s), {} events",
            i + 1,
            of.len(),
            names.len()
        )?;
    }
    let Some((_, chosen)) = shapes.get(a.shape - 1) else {
        usage!("--shape {}: there are {} shape(s)", a.shape, shapes.len());
    };
    let stats = timeline::stats(chosen);
    writeln!(
        out,
        "\nshape {}, averaged over {} same-shape timelines:\n",
        a.shape,
        chosen.len()
    )?;
    let table = timeline::table(&stats);
    write!(out, "{table}")?;
    if let Some(o) = &a.output {
        let page = timeline::page(
            a.shape,
            shapes.len(),
            chosen.len(),
            &table,
            timeline::cdfs(&stats),
        );
        wirebench_core::store::write_atomic(o, page.as_bytes())?;
        writeln!(out, "\nwritten: {}", o.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
