//! `wirebench search`: the highest open-loop rate that meets the `--slo`
//! objectives, and the saturation throughput (see `wirebench_runner::search`).

use super::error::{UsageError, runner_error};
use super::flags::RunFlags;
use crate::ui::progress::Console;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::request::Format;
use wirebench_core::spec::Endpoint;
use wirebench_core::topo::Topology;
use wirebench_core::units::{Rate, format_ns, format_rate};
use wirebench_runner::process;
use wirebench_runner::search::{self, SearchEvents, SearchSettings, Step};

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    run: RunFlags,
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
    fn started(&mut self, slos: &[String], endpoint: &Endpoint) {
        if self.format == Format::Text {
            eprintln!(
                "wirebench search: highest open-loop rate meeting {} against {endpoint}",
                slos.join(", ")
            );
        }
    }

    fn step(&mut self, n: usize, s: &Step) {
        if self.format == Format::Text {
            eprintln!(
                "  step {n:>2}: {:>8}/s asked, {:>8}/s completed, p50 {:>8}, p99 {:>8}: {}",
                format_rate(s.rate_per_s),
                format_rate(s.completed_per_s),
                format_ns(s.p50_ns as f64),
                format_ns(s.p99_ns as f64),
                match (s.pass, s.kept_up, s.measured_again) {
                    _ if s.tries > 1 => format!(
                        "{} (within the objective's noise: {} of {} tries passed)",
                        if s.pass { "pass" } else { "missed" },
                        s.tries_passed,
                        s.tries
                    ),
                    (true, _, _) => "pass".to_string(),
                    (false, _, true) => format!(
                        "missed while the platform stalled ({} s): measured again",
                        s.stalled_seconds
                    ),
                    (false, true, _) => "missed".to_string(),
                    (false, false, _) => "missed (server fell behind)".to_string(),
                }
            );
        }
    }
}

pub fn search(a: SearchArgs) -> anyhow::Result<ExitCode> {
    let req = a.run.request();
    let opts = a.run.session().map_err(UsageError::from)?;
    let settings = SearchSettings {
        start_rate: a.start_rate.0,
        precision: a.precision,
        headroom: a.headroom,
        max_steps: a.max_steps,
    };
    let topo = Topology::read();
    super::run::warn_if_debug();
    let cancel = process::watch_signals()?;
    let mut console = Console::new(req.format());
    console.results = false;
    let r = search::search(
        &req,
        &settings,
        &opts,
        &topo,
        super::args::command_line(),
        cancel,
        &mut console,
    )
    .map_err(runner_error)?;
    let mut out = std::io::stdout().lock();
    if req.format() == Format::Text {
        wirebench_report::summary::print_search(&mut out, &r)?;
    } else {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::from(r.exit_code()))
}
