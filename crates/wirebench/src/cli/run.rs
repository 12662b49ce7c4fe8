//! `wirebench run`: one measured run (or `--repeat N`) of the request the
//! flags make, or of a `RunRequest` read as JSON from stdin (how `sweep`
//! hands a run to its children). The runner does the work; this prints.

use super::error::{UsageError, runner_error, usage};
use super::flags::RunFlags;
use crate::ui::progress::Console;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_core::request::{Format, RunRequest};
use wirebench_core::topo::Topology;
use wirebench_runner::run::Verdict;
use wirebench_runner::session::SessionOptions;
use wirebench_runner::{process, run};

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub flags: RunFlags,
    /// Read the run's request as one JSON line on stdin instead of flags (set by `sweep`).
    #[arg(long, hide = true)]
    request_stdin: bool,
    /// Stop (as on SIGTERM, saving the partial result) when this process dies (set by `sweep`).
    #[arg(long, hide = true)]
    exit_with_parent: Option<u32>,
    /// Also write a JUnit XML report, for CI systems to show: a test case for each run (failed
    /// when it did not complete) and one per --slo objective (failed when missed).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

fn read_request() -> anyhow::Result<RunRequest> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    match serde_json::from_str(&line) {
        Ok(r) => Ok(r),
        Err(e) => usage!("--request-stdin: not a run request: {e}"),
    }
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let (req, opts) = if a.request_stdin {
        // Credentials never travel in a request: the environment's are used.
        let req = wirebench_runner::with_env_region(read_request()?);
        let creds = wirebench_runner::Credentials::given_or_env(None, None)?;
        let mut opts = SessionOptions::of(&req, creds);
        // The sweep indexes its runs in its results' history.
        opts.history = None;
        if !req.fleet.agents.is_empty() {
            // A sweep's agents are proven with $WIREBENCH_TOKEN.
            opts.agent_token =
                wirebench_runner::auth::Token::given_or_env(None).map_err(UsageError)?;
        }
        (req, opts)
    } else {
        (
            a.flags.request(),
            a.flags.session().map_err(UsageError::from)?,
        )
    };
    let topo = Topology::read();
    // Refused before anything starts (the runner checks again).
    req.check(&topo).map_err(UsageError::from)?;
    if let Some(j) = &a.junit {
        super::error::check_output(j, req.output.force.unwrap_or(false))?;
    }
    super::flags::warn_if_debug();
    // Every connection takes a descriptor.
    let _ = wirebench_runner::process::raise_open_files_limit();
    // Ctrl-C and SIGTERM stop the load; the partial result is then saved.
    let cancel = process::watch_signals()?;
    if let Some(parent) = a.exit_with_parent {
        process::terminate_with_parent(parent)?;
    }
    let mut console = Console::new(req.output.format());
    console.repeat = req.repeat();
    crate::ui::progress::watch(&mut console, &req.watch)?;
    // Load agents make the load of a coordinated run.
    let run = match req.fleet.agents.is_empty() && req.fleet.launch.is_empty() {
        true => run::run,
        false => wirebench_runner::agent::coordinator::run,
    };
    let report = match run(
        &req,
        &opts,
        &topo,
        super::args::command_line(),
        cancel,
        &mut console,
    ) {
        Ok(report) => report,
        Err(wirebench_runner::RunError::Unsaved(u)) => {
            console.end_live();
            // Measured but not saved where it belongs: a pipeline that
            // reads JSON still gets it, and so does stdout when the result
            // could be kept nowhere.
            if req.output.format() == Format::Json || u.kept.is_none() {
                let mut out = crate::ui::stdout();
                let _ = writeln!(out, "{}", u.json).and_then(|()| out.flush());
            }
            anyhow::bail!("{u}");
        }
        Err(e) => {
            console.end_live();
            return Err(runner_error(e));
        }
    };
    // A closed stdout (`| head -1`) is no failure of the run: it is saved,
    // and its exit status still says how it went.
    let printed = console.finish().and_then(|()| {
        let mut out = crate::ui::stdout();
        wirebench_report::summary::print_repetitions_as(
            &mut out,
            req.output.format(),
            report.repetitions.as_ref(),
            report.group.as_deref(),
        )
    });
    if let Err(e) = printed
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    let last = report
        .last_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    if let Some(j) = &a.junit {
        let runs: Vec<_> = report.runs.iter().map(|(r, _)| r.clone()).collect();
        wirebench_report::junit::save(
            j,
            "wirebench run",
            &wirebench_report::junit::of_runs(&runs),
        )?;
    }
    let verdict = report.verdict();
    match &verdict {
        Verdict::Interrupted => eprintln!("interrupted: the partial result is saved in {last}"),
        Verdict::Failed(why) => {
            eprintln!("error: the run failed: {why}");
            eprintln!("the partial result is saved in {last}");
        }
        Verdict::Complete | Verdict::SloMissed => {}
    }
    Ok(ExitCode::from(verdict.exit_code()))
}
