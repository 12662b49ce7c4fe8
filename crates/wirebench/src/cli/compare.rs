//! `wirebench compare A B [C...]`: each variant's metrics against A's, with
//! their noise; "faster" or "slower" only beyond the noise. A variant is a
//! run (`run.json` or its directory) or a directory of runs (repetitions).

use super::error::{check_page, usage};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_report::compare;
use wirebench_report::export::{Exporter, HtmlExporter};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Variants: the first is the reference. Each is a run.json, a run directory, or a
    /// directory of runs taken as repetitions of one variant.
    #[arg(required = true, num_args = 2..)]
    variants: Vec<PathBuf>,
    /// Also write an HTML page: the table, and the plots with the variants overlaid.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace the file -o names if it exists (never done without it), and give verdicts
    /// between variants of different transports (refused without it: they do different work).
    #[arg(long)]
    force: bool,
    /// md (the table, for people) or json (every figure, for tools).
    #[arg(long, default_value = "md", value_parser = ["md", "json"])]
    format: String,
    /// A gate for CI: exit 4 when a variant's change against A, beyond the noise, crosses a
    /// threshold: ops_per_s<-5%,p99>+10% (metrics: ops_per_s, mib_per_s, mean, p50, p99,
    /// p999, client_cpu_per_op, ttfb_mean, ttfb_p99). A change within the noise never fails.
    #[arg(long)]
    fail_if: Option<String>,
    /// Also write a JUnit XML report of the --fail-if gates: a test case per gate and variant
    /// (failed when it tripped), for CI systems to show.
    #[arg(long, value_name = "FILE", requires = "fail_if")]
    junit: Option<PathBuf>,
}

/// Exit status of a comparison whose `--fail-if` gate a variant tripped.
const EXIT_GATE: u8 = 4;

pub fn compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    if a.variants.len() > compare::MAX_VARIANTS {
        usage!(
            "{} variants: at most {} (lettered A to Z)",
            a.variants.len(),
            compare::MAX_VARIANTS
        );
    }
    let variants = match compare::variants_at(&a.variants) {
        Ok(v) => v,
        Err(e) => usage!("{e}"),
    };
    if let Some(why) = compare::transports_differ(&variants)
        && !a.force
    {
        usage!("{why}");
    }
    if let Some(o) = &a.output {
        check_page(o, a.force)?;
    }
    if let Some(j) = &a.junit {
        super::error::check_output(j, a.force)?;
    }
    let gates = match compare::Gate::parse_list(a.fail_if.as_deref().unwrap_or("")) {
        Ok(g) => g,
        Err(e) => usage!("--fail-if: {e}"),
    };
    let rows = compare::compare(&variants);
    let tripped = compare::tripped(&gates, &rows);
    if let Some(j) = &a.junit {
        let suites = wirebench_report::junit::of_gates(&gates, &tripped, &variants);
        wirebench_report::junit::save(j, "wirebench compare", &suites)?;
    }
    let mut out = crate::ui::stdout();
    if a.format == "json" {
        let j = compare::json_with_gates(&variants, &rows, &tripped);
        serde_json::to_writer_pretty(&mut out, &j)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", compare::markdown(&variants, &rows))?;
    }
    if let Some(o) = &a.output {
        let doc = compare::page_with_figures(&variants, &rows);
        wirebench_core::store::write_atomic(o, HtmlExporter.export(&doc).as_bytes())?;
        writeln!(out, "\nwritten: {}", o.display())?;
    }
    for t in &tripped {
        eprintln!(
            "fail-if {}: variant {} changed {:+.1}% against A, beyond the noise",
            t.gate, t.variant, t.change_pct
        );
    }
    if !tripped.is_empty() {
        out.flush()?;
        return Ok(ExitCode::from(EXIT_GATE));
    }
    if a.format == "json" {
        return Ok(ExitCode::SUCCESS);
    }
    let hints = compare::hint_lines(&variants);
    if !hints.is_empty() {
        writeln!(out, "\nHints:\n{}", hints.join("\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}
