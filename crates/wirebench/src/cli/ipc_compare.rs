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
use wirebench_report::export::{Exporter, Table, TextExporter};
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
                let mut line = format!("{name},{}", wirebench_runner::record::ipc_csv_line(r));
                if !std::mem::replace(&mut self.console.csv_header, true) {
                    line = format!(
                        "variant,{}\n{line}",
                        wirebench_runner::record::IPC_CSV_HEADER
                    );
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
            let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("-".to_string(), f);
            let span =
                |lo: f64, hi: f64, f: &dyn Fn(f64) -> String| format!("({}-{})", f(lo), f(hi));
            let mut t = Table::new([
                "variant",
                "ops/s",
                "(min-max)",
                "messages/s",
                "p50",
                "(min-max)",
                "p99",
                "CPU us/op",
                "x unix",
                "p50/unix",
            ]);
            for r in &c.rows {
                t.row([
                    r.variant.clone(),
                    format_rate(r.ops_per_s),
                    span(r.ops_per_s_min, r.ops_per_s_max, &format_rate),
                    format_rate(r.messages_per_s),
                    opt(r.p50_ns, &format_ns),
                    r.p50_ns_range
                        .map_or("-".into(), |(lo, hi)| span(lo, hi, &format_ns)),
                    opt(r.p99_ns, &format_ns),
                    format!("{:.2}", r.client_cpu_us_per_op),
                    opt(r.ops_vs_unix, &|x| format!("{x:.2}x")),
                    opt(r.p50_vs_unix, &|x| format!("{x:.3}")),
                ]);
            }
            write!(
                out,
                "{}",
                TextExporter.export(&wirebench_report::export::Document::new("").table(t))
            )?;
            writeln!(
                out,
                "medians over the rounds (the lowest and highest round in brackets); a round trip is two messages; shm-spin keeps a core busy on each side"
            )?;
            writeln!(
                out,
                "results: {} ({} runs, a directory per variant: compare or report them)",
                c.dir.display(),
                c.results.len()
            )?;
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
            ExitCode::from(130)
        }
        Some(why) => {
            eprintln!("error: a run failed: {why}; the runs so far are saved");
            ExitCode::from(1)
        }
    })
}
