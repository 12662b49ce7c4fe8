//! `wirebench ipc-compare`: one shm workload over shared memory (each wait
//! strategy), a Unix socket pair, TCP loopback and a pipe pair, in
//! interleaved rounds (see `wirebench_runner::ipc_compare`), as a table of
//! medians with ratios to the Unix socket.

use super::error::runner_error;
use super::flags::RunFlags;
use crate::ui::progress::Console;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::request::Format;
use wirebench_core::result::RunResult;
use wirebench_core::spec::RunSpec;
use wirebench_report::progress;
use wirebench_runner::ipc_compare::{self, CompareEvents, VARIANTS};

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
            eprintln!("{}", progress::ipc_started(s, rounds, VARIANTS.len()));
        }
    }

    fn measured(&mut self, round: usize, name: &str, r: &RunResult) {
        match self.console.format {
            Format::Text => eprintln!("{}", progress::ipc_round(round, self.rounds, name, r)),
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
    wirebench_runner::metrics::flags::refuse(&a.run.req.watch, "ipc-compare")
        .map_err(super::error::UsageError)?;
    let b = a.run.begin()?;
    let mut events = Rounds {
        console: Console::new(b.req.output.format()),
        rounds: a.rounds,
    };
    let c = ipc_compare::ipc_compare(
        &b.req,
        a.rounds,
        &b.opts,
        &b.topo,
        super::args::command_line(),
        b.cancel,
        &mut events,
    )
    .map_err(runner_error)?;
    events.console.finish()?;
    let mut out = crate::ui::stdout();
    match b.req.output.format() {
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
