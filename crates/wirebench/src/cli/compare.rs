//! `wirebench compare A B [C...]`: each variant's metrics against A's, with
//! their noise; "faster" or "slower" only beyond the noise. A variant is a
//! run (`run.json` or its directory) or a directory of runs (repetitions).

use super::error::usage;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::export::{Block, Exporter, HtmlExporter};
use wirebench_report::{compare, hints, inputs, report};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Variants: the first is the reference. Each is a run.json, a run directory, or a
    /// directory of runs taken as repetitions of one variant.
    #[arg(required = true, num_args = 2..)]
    variants: Vec<PathBuf>,
    /// Also write an HTML page: the table, and the plots with the variants overlaid.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut variants = Vec::new();
    for p in &a.variants {
        let runs = match inputs::runs_at(p) {
            Ok(r) => r,
            Err(e) => usage!("{e}"),
        };
        variants.push(compare::Variant {
            label: p.display().to_string(),
            runs,
        });
    }
    if let Some(o) = &a.output
        && o.extension().is_none_or(|e| e != "html")
    {
        usage!("-o {}: the page's name must end in .html", o.display());
    }
    let rows = compare::compare(&variants);
    let mut out = std::io::stdout().lock();
    write!(out, "{}", compare::markdown(&variants, &rows))?;
    if let Some(o) = &a.output {
        let mut layout = report::Layout::default();
        let mut all = Vec::new();
        for (i, v) in variants.iter().enumerate() {
            let letter = (b'A' + i as u8) as char;
            for r in &v.runs {
                layout
                    .labels
                    .insert(r.run_id.clone(), format!("{letter}: {}", v.label));
                all.push(r.clone());
            }
        }
        let mut doc = compare::document(&variants, &rows);
        doc.title = "wirebench compare".into();
        let doc = doc.push(Block::Figures(report::figures(&all, &layout)));
        wirebench_core::store::write_atomic(o, HtmlExporter.export(&doc).as_bytes())?;
        writeln!(out, "\nwritten: {}", o.display())?;
    }
    let mut any = false;
    for v in &variants {
        for r in &v.runs {
            for h in hints::of_run(r) {
                if !any {
                    writeln!(out, "\nHints:")?;
                    any = true;
                }
                writeln!(out, "- {} ({}): {}", h.text, r.run_id, h.evidence)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
