//! `wirebench search`: the highest open-loop rate that meets the `--slo`
//! objectives, and the saturation throughput (see `wirebench_runner::search`).

use super::error::runner_error;
use super::flags::RunFlags;
use crate::ui::progress::Console;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::request::Format;
use wirebench_core::spec::Endpoint;
use wirebench_core::units::Rate;
use wirebench_runner::search::{self, SearchEvents, SearchSettings, Step};
use wirebench_runner::session::Events;

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    run: RunFlags,
    /// Also write a JUnit XML report, for CI systems to show: a test case for the search's
    /// answer (failed when no rate met the objectives, or the steps ran out) and one per step.
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// First rate of the coarse phase.
    #[arg(long, default_value = "1000")]
    start_rate: Rate,
    /// Bisection stops when the highest passing and the lowest failing rate
    /// are closer than this fraction.
    #[arg(long, default_value_t = 0.05)]
    precision: f64,
    /// A step passes only when every objective is met with this fraction to spare
    /// (p99<5ms with 0.2: p99 at most 4 ms), so that the rate found still holds when
    /// run again on a noisy machine. 0 for the bare objectives.
    #[arg(long, default_value_t = 0.2)]
    headroom: f64,
    /// At most this many steps. A search that runs out of steps says so and exits with 5.
    #[arg(long, default_value_t = 24)]
    max_steps: usize,
}

impl SearchEvents for Console {
    // Through `note`: above the live view when there is one.
    fn started(&mut self, slos: &[String], endpoint: &Endpoint) {
        if self.format == Format::Text {
            self.note(&format!(
                "wirebench search: highest open-loop rate meeting {} against {endpoint}",
                slos.join(", ")
            ));
        }
    }

    fn step(&mut self, n: usize, s: &Step) {
        if self.format == Format::Text {
            self.note(&wirebench_report::progress::search_step(n, s));
        }
    }
}

pub fn search(a: SearchArgs) -> anyhow::Result<ExitCode> {
    let b = a.run.begin()?;
    if let Some(j) = &a.junit {
        super::error::check_output(j, b.req.output.force.unwrap_or(false))?;
    }
    let settings = SearchSettings {
        start_rate: a.start_rate.0,
        precision: a.precision,
        headroom: a.headroom,
        max_steps: a.max_steps,
    };
    let mut console = Console::new(b.req.output.format());
    console.results = false;
    // A line per step, not its seconds.
    console.seconds = false;
    crate::ui::progress::watch(&mut console, &a.run.req.watch)?;
    let r = search::search(
        &b.req,
        &settings,
        &b.opts,
        &b.topo,
        super::args::command_line(),
        b.cancel,
        &mut console,
    );
    console.end_live();
    let r = r.map_err(runner_error)?;
    if let Some(j) = &a.junit {
        wirebench_report::junit::save(
            j,
            "wirebench search",
            &wirebench_report::junit::of_search(&r),
        )?;
    }
    let mut out = crate::ui::stdout();
    if b.req.output.format() == Format::Text {
        wirebench_report::summary::print_search(&mut out, &r)?;
    } else {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::from(r.exit_code()))
}
