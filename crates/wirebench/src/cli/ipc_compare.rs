//! `wirebench ipc-compare`: one shm workload over shared memory (each wait
//! strategy), a Unix socket pair, TCP loopback and a pipe pair, in
//! interleaved rounds (see `wirebench_runner::ipc_compare`), as a table of
//! medians with ratios to the Unix socket.

use super::error::{UsageError, runner_error};
use super::flags::RunFlags;
use crate::ui::progress::Console;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::request::Format;
use wirebench_core::result::RunResult;
use wirebench_core::spec::RunSpec;
use wirebench_core::topo::Topology;
use wirebench_core::units::{format_ns, format_rate};
use wirebench_runner::ipc_compare::{self, CompareEvents, VARIANTS};
use wirebench_runner::process;

#[derive(Args, Debug)]
pub struct IpcCompareArgs {
    /// The workload: every flag of `run` for --transport shm (--mode, --size, --sessions,
    /// --clients-as, --depth, --duration...). --transport, --channel and --wait are set by
    /// ipc-compare itself.
    #[command(flatten)]
    run: RunFlags,
    /// Rounds: each runs every variant once, in turn. Default: 3.
    #[arg(long = "rounds", default_value_t = 3)]
    rounds: usize,
}

struct Rounds {
    console: Console,
    rounds: usize,
}

impl wirebench_runner::session::Events for Rounds {
    fn note(&mut self, text: &str) {
        self.console.note(text);
    }
}

impl CompareEvents for Rounds {
    fn started(&mut self, s: &RunSpec, rounds: usize) {
        if self.console.format == Format::Text {
            let shm = s.shm().expect("shm");
            eprintln!(
                "wirebench ipc-compare: {} {}B, {} session(s), clients as {}, {rounds} round(s) of {} variants",
                shm.mode,
                shm.size_bytes,
                s.clients,
                shm.clients_as,
                VARIANTS.len()
            );
        }
    }

    fn measured(&mut self, round: usize, name: &str, r: &RunResult) {
        match self.console.format {
            Format::Text => eprintln!(
                "  round {round}/{} {name:<13} {:>10} ops/s  p50 {}",
                self.rounds,
                format_rate(r.summary.ops_per_s),
                if r.summary.latency.count > 0 {
                    format_ns(r.summary.latency.p50_ns as f64)
                } else {
                    "-".into()
                }
            ),
            Format::Csv => {
                let (head, line) = wirebench_runner::record::ipc_csv(r, true);
                let mut line = format!("{name},{line}");
                if !std::mem::replace(&mut self.console.csv_header, true) {
                    line = format!("variant,{head}\n{line}");
                }
                self.console.out(|o| writeln!(o, "{line}"));
            }
            Format::Json => {}
        }
    }
}

pub fn ipc_compare(a: IpcCompareArgs) -> anyhow::Result<ExitCode> {
    let req = a.run.request();
    let opts = a.run.session().map_err(UsageError::from)?;
    let topo = Topology::read();
    super::run::warn_if_debug();
    let cancel = process::watch_signals()?;
    let mut events = Rounds {
        console: Console::new(req.format()),
        rounds: a.rounds,
    };
    let c = ipc_compare::ipc_compare(
        &req,
        a.rounds,
        &opts,
        &topo,
        super::args::command_line(),
        cancel,
        &mut events,
    )
    .map_err(runner_error)?;
    events.console.finish()?;
    let mut out = std::io::stdout().lock();
    match req.format() {
        Format::Text => {
            wirebench_report::summary::print_ipc(&mut out, &c.rows, &c.dir, c.results.len())?
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &c.rows)?;
            writeln!(out)?;
        }
        Format::Csv => {}
    }
    out.flush()?;
    Ok(match c.stopped {
        None => ExitCode::SUCCESS,
        Some(why) if c.interrupted => {
            eprintln!("interrupted ({why}): the runs so far are saved");
            ExitCode::from(wirebench_runner::process::interrupted_exit_code())
        }
        Some(why) => {
            eprintln!("error: a run failed: {why}; the runs so far are saved");
            ExitCode::from(1)
        }
    })
}
