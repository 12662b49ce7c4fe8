//! `run`: a request checked, its session opened, its load measured (`repeat`
//! times against one server), each result recorded as it completes, and
//! the traces and histogram log written. The same call serves the command
//! line, a sweep's child and (later) a load agent.

use crate::RunError;
use crate::command::Checked;
pub use crate::events::RunEvents;
use crate::process::Cancel;
use crate::record;
use crate::session::SessionOptions;
use std::path::{Path, PathBuf};
use wirebench_core::request::RunRequest;
use wirebench_core::result::{Repetitions, RunResult, RunState};
use wirebench_core::spec::TargetSpec;
use wirebench_core::store;
use wirebench_core::topo::Topology;

/// How a command's runs ended, for its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Complete,
    /// Complete, but an objective was missed.
    SloMissed,
    Interrupted,
    Failed(String),
}

impl Verdict {
    /// The exit status: 0 complete, 1 failed, 3 an objective missed, 130
    /// interrupted (129 by SIGHUP).
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Complete => 0,
            Verdict::Failed(_) => 1,
            Verdict::SloMissed => crate::EXIT_SLO_MISSED,
            Verdict::Interrupted => crate::process::interrupted_exit_code(),
        }
    }
}

/// The runs of one `run`.
#[derive(Debug)]
pub struct RunReport {
    /// Each run and its directory, in order.
    pub runs: Vec<(RunResult, PathBuf)>,
    /// With `repeat` > 1: each metric's spread over the runs.
    pub repetitions: Option<Repetitions>,
    /// With `repeat` > 1: the directory of the runs.
    pub group: Option<PathBuf>,
}

impl RunReport {
    pub fn verdict(&self) -> Verdict {
        let Some((last, _)) = self.runs.last() else {
            return Verdict::Failed("no run".into());
        };
        match last.status.state {
            RunState::Complete
                if self
                    .runs
                    .iter()
                    .any(|(r, _)| r.slos.iter().any(|s| !s.pass)) =>
            {
                Verdict::SloMissed
            }
            RunState::Complete => Verdict::Complete,
            RunState::Interrupted => Verdict::Interrupted,
            RunState::Failed | RunState::Degraded => Verdict::Failed(
                last.status
                    .reason
                    .clone()
                    .unwrap_or_else(|| "unknown".into()),
            ),
        }
    }

    /// The directory of the last run.
    pub fn last_dir(&self) -> Option<&Path> {
        self.runs.last().map(|(_, d)| d.as_path())
    }
}

/// Runs `req`: one session, `repeat` measured loads, each recorded. A
/// request with load agents goes to `agent::coordinator::run` instead.
pub fn run(
    req: &RunRequest,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn RunEvents,
) -> Result<RunReport, RunError> {
    if !req.fleet.agents.is_empty() || !req.fleet.launch.is_empty() {
        return Err(RunError::Failed(
            "a run with load agents is coordinated: call agent::coordinator::run".into(),
        ));
    }
    let mut checked = Checked::of(req, topo, None, command_line, None)?;
    checked.recorder.history.clone_from(&opts.history);
    let spec = &checked.spec;
    if let Some(n) = spec.trace_sample {
        wirebench_trace::set_sample(n);
        wirebench_trace::enable();
    }
    let label = spec.label();
    let repeat = req.repeat();
    // Repetitions are a group: one directory, which compare and report take
    // as one variant.
    let group = (repeat > 1).then(|| store::new_run_id(&format!("{label}-x{repeat}")));
    let recorder = match &group {
        Some(g) => checked.recorder.clone().group(g),
        None => checked.recorder.clone(),
    };
    let name_of = |k: usize| {
        if repeat > 1 {
            format!("{label}-r{}", k + 1)
        } else {
            label.clone()
        }
    };
    // A server the run starts writes into the first run's directory, so
    // that run's id is chosen now.
    let first_id = store::new_run_id(&name_of(0));
    let server_dir = (spec.observe.is_some() || spec.kind().about().own_program)
        .then(|| recorder.root.join(&first_id));
    let mut session = checked.open(opts, server_dir, cancel, events)?;
    if req.objectives.abort_on_fail == Some(true) {
        session.abort_on = checked.recorder.slos.clone();
        session.abort_on.retain(|s| s.window_s.is_some());
    }
    let Checked {
        spec, placement, ..
    } = checked;
    let mut runs = Vec::new();
    for k in 0..repeat {
        if repeat > 1 {
            events.repetition(k + 1, repeat);
        }
        let started_at = store::now_rfc3339();
        let run_id = if k == 0 {
            first_id.clone()
        } else {
            store::new_run_id(&name_of(k))
        };
        // The client's events stream into the run's directory as it runs.
        let trace = match spec.trace_sample {
            Some(_) => Some(record::ClientTrace::start(&recorder.root.join(&run_id))?),
            None => None,
        };
        let mut result = session.measure(&spec, &placement, events);
        let last = k + 1 == repeat || result.status.state != RunState::Complete;
        if last {
            // The server's counters and peak RSS go into the last run.
            session.close(Some(&mut result), events);
        }
        // A trace that could not be written loses the trace, not the run:
        // the result is saved first, then the failure said.
        let mut trace_failed = None;
        let traces = match trace {
            Some(t) => match t.finish(
                &mut result,
                session.server_trace.take(),
                req.output.trace_file(),
            ) {
                Ok(t) => Some(t),
                Err(e) => {
                    trace_failed = Some(e);
                    None
                }
            },
            None => None,
        };
        let dir = recorder.save_as(&mut result, run_id, started_at, events)?;
        if let Some(e) = trace_failed {
            return Err(RunError::Failed(format!(
                "{e}: no trace; the run's result is saved in {}",
                dir.display()
            )));
        }
        if let (Some(t), Some(c)) = (traces, &result.trace) {
            events.note(&format!(
                "trace: {} client events in {}: {} operations traced to their end (one in {}, warm-up included) of {} completed in the measured phase; {}",
                c.client_events,
                t.client.display(),
                c.client_ended,
                c.sample,
                result.summary.ops,
                match c.client_lost {
                    0 => "none lost".to_string(),
                    n => format!("{n} events LOST (the drain fell behind)"),
                }
            ));
            events.note(&match (&t.server, c.server_events) {
                (Some(s), Some(n)) => format!(
                    "trace: {n} server events in {}; {}",
                    s.display(),
                    match c.server_lost {
                        Some(0) | None => "none lost".to_string(),
                        Some(n) => format!("{n} events LOST (the drain fell behind)"),
                    }
                ),
                (Some(s), None) => format!(
                    "trace: server events in {} (its drain did not finish: the end may be missing)",
                    s.display()
                ),
                (None, _) if !matches!(spec.target, TargetSpec::Embedded { .. }) => {
                    "trace: the client's events only (the server is not wirebench's)".into()
                }
                (None, _) if last => {
                    "trace: the server wrote no trace (it did not stop cleanly)".into()
                }
                (None, _) => "trace: the server's events go with the last repetition".into(),
            });
        }
        if let Some(path) = &req.output.hlog {
            record::write_hlog(path, &result)?;
        }
        events.saved(&result, &dir, &recorder.slos);
        runs.push((result, dir));
        if last {
            break;
        }
    }
    let repetitions = (repeat > 1)
        .then(|| Repetitions::of(&runs.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>()));
    Ok(RunReport {
        runs,
        repetitions,
        group: group.map(|_| recorder.root.clone()),
    })
}
