//! `wirebench compare A B [C...]`: each variant's metrics against A's, with
//! their noise; "faster" or "slower" only beyond the noise. A variant is a
//! run (`run.json` or its directory) or a directory of runs (repetitions).

use crate::usage;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::{compare, hints, inputs};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Variants: the first is the reference. Each is a run.json, a run directory, or a
    /// directory of runs taken as repetitions of one variant.
    #[arg(required = true, num_args = 2..)]
    variants: Vec<PathBuf>,
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
    let rows = compare::compare(&variants);
    let mut out = std::io::stdout().lock();
    write!(out, "{}", compare::markdown(&variants, &rows))?;
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
