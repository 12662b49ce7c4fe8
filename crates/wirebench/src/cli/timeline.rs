//! `wirebench timeline FILE...`: the operations of a trace grouped by
//! shape, and per event of one shape the cumulative and delta statistics
//! (the RAMCloud timeline report's layout), with each event's CDF in an
//! HTML page on request. Reads wirebench traces and TimeTrace text: blocks
//! of one operation each, or a continuous log cut into operations by
//! `--begin`/`--end`, by `--id`, or by the cycle it finds.

use super::error::{UsageError, check_page, usage};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::timeline;

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// Trace files: wirebench's (`run --trace`, `serve --trace`, the C library) or PerfUtils /
    /// RAMCloud TimeTrace text (`  12.3 ns (+   4.5 ns): message`): blocks separated by blank
    /// lines, one operation each, or a continuous log. A traced run's directory stands for its
    /// trace-client.txt and trace-server.txt, merged.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// TimeTrace text: an operation begins at a line whose message matches this regex.
    #[arg(long, value_name = "REGEX")]
    begin: Option<String>,
    /// TimeTrace text: an operation ends at a line whose message matches this regex
    /// (without it: at the line before the next --begin).
    #[arg(long, value_name = "REGEX")]
    end: Option<String>,
    /// TimeTrace text: an operation is the lines with the same id, captured by this regex's
    /// first group (`rpc (\d+)`, or a thread or core field: `core (\d+)`).
    #[arg(long, value_name = "REGEX")]
    id: Option<String>,
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

pub fn timeline(mut a: TimelineArgs) -> anyhow::Result<ExitCode> {
    // A run's directory: its traces, client and server merged.
    let (files, dirs) = timeline::trace_files(&a.files).map_err(UsageError)?;
    a.files = files;
    a.merge |= dirs;
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
    let split =
        timeline::stream::Split::parse(a.begin.as_deref(), a.end.as_deref(), a.id.as_deref())
            .map_err(UsageError)?;
    let (ops, reading) = match timeline::ops_of_files(&a.files, &split) {
        Ok(o) => o,
        Err(e) => usage!("{e}"),
    };
    let shapes = timeline::shapes(&ops);
    let mut out = crate::ui::stdout();
    if shapes.is_empty() {
        if split.is_given() {
            usage!("no operation matched --begin/--end/--id in the trace");
        }
        usage!("no complete operation (from 'begin' to 'end' with one id) in the trace");
    }
    write!(out, "{}", timeline::reading_text(&reading))?;
    write!(out, "{}", timeline::shapes_text(ops.len(), &shapes))?;
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
    let sinks = timeline::sinks_text(&stats);
    write!(out, "\n{sinks}")?;
    if let Some(o) = &a.output {
        let page = timeline::page(
            a.shape,
            shapes.len(),
            chosen.len(),
            &table,
            &sinks,
            timeline::cdfs(&stats),
        );
        wirebench_core::store::write_atomic(o, page.as_bytes())?;
        writeln!(out, "\nwritten: {}", o.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
