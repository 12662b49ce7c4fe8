//! `search`: the highest rate a server takes within its objectives, and
//! its saturation throughput. Open-loop steps against one server.
//!
//! - **Each step's verdict has a confidence interval.** Its objectives'
//!   figures come with a 95% interval ([`Slo::interval`]: order
//!   statistics and a bootstrap over seconds, the wider). A step whose
//!   interval straddles an objective is measured again, the seconds of
//!   every try pooled, up to [`AGREEMENT_TRIES`] tries; then it reads
//!   "undecided", never pass or fail by luck.
//! - **A single miss in the way of a higher answer is measured again**,
//!   and two of its tries, each judged alone, decide (`judge::vote`):
//!   pooled with the miss, a new try that held could never outweigh one
//!   bad moment of the machine.
//! - **Latency need not rise with the rate.** On a VM, p99 is often worse
//!   at low rates (a server that sleeps between requests wakes for each),
//!   so a search that halved its rate after a miss walked down to nearly
//!   nothing. The climb doubles the rate until the server falls behind (it
//!   completed under 95% of the rate asked: the saturation), whatever the
//!   objectives said, so the whole range is measured. The answer is the
//!   top of the highest band of at least two consecutive rates (by rate)
//!   that held: one lucky pass above a failing band does not count. Rates
//!   between the band's top and the next rate tried above it are bisected
//!   to `precision`. Misses below the band are said as such.
//! - **The edge is voted.** Once the climb has fallen behind, that step is
//!   measured again (its tries voted), then rates from 94% of the
//!   saturation down, each the precision under the one above (four at
//!   most), each decided by two of its tries that agree, until the
//!   highest band's top is the rate just measured (`steps::edge`); the
//!   edge rate just above it that missed has its vote extended once, to
//!   three of five. There, where a 3 s step holds or misses by a moment
//!   of the VM, the climb's one try used to decide which side the
//!   bisection explored: two searches of one redis answered 15,250 and
//!   17,500/s. Skipped where the climb's two highest rates under the
//!   saturation missed (a tight objective).
//! - A rate within 5% of the saturation is never the answer: a server with
//!   no capacity to spare never works off the backlog of one hiccup.
//! - A step that missed in a second the hiccup meter saw the platform
//!   stall in is measured again (at most [`STALL_RETRIES`] times) and does
//!   not count.
//! - With an observed server (`--server-pid`, `--server-cmd`,
//!   `--server-cgroup`), each step has the client's and the server's CPU,
//!   and the answer says which side ran out at the saturation.
//! - A budget that ends first is said, never hidden.
//!
//! Every step is a full result kept under `<results>/search-<id>/`, with
//! `search.json` beside them. With load agents, each step is a run
//! coordinated over them (handshake, clocks, merge), so the rate searched
//! is the agents' total.

use crate::RunError;
use crate::command::Checked;
use crate::process::Cancel;
use crate::record::Recorder;
use crate::session::{Events, Session, SessionOptions};
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::RunState;
use wirebench_core::spec::Endpoint;
use wirebench_core::store;
use wirebench_core::topo::Topology;

/// How the search steps.
#[derive(Debug, Clone)]
pub struct SearchSettings {
    /// First rate of the coarse phase.
    pub start_rate: f64,
    /// Bisection stops when the highest passing and the lowest failing
    /// rate are closer than this fraction.
    pub precision: f64,
    /// A step passes only when every objective is met with this fraction
    /// to spare.
    pub headroom: f64,
    pub max_steps: usize,
}

use wirebench_core::result::RunResult;
use wirebench_core::slo::{FigureInterval, Metric, Slo};
pub use wirebench_core::summaries::{
    AGREEMENT_TRIES, EXIT_SEARCH_UNFINISHED, FlatLatency, NEAR_LIMIT, NotSharp, SPARE_CAPACITY,
    STALL_RETRIES, SearchResult, Step,
};

/// How much each step of the climb raises the rate: by GROWTH after a
/// step that missed, by FAST_GROWTH after one that held (where it holds,
/// fewer rates say enough; where it misses, the range is measured closer).
const GROWTH: f64 = 2.0;
const FAST_GROWTH: f64 = 4.0;

/// How many tries must agree when a voted step is measured again (the
/// edge rate that missed just above the answer): a majority of five, its
/// first tries among them.
const EXTENDED_AGREE: usize = 3;

/// A step's measured seconds when the run's flags give none.
pub const STEP_S: u64 = 3;

/// At or above this share of its CPUs a side ran out of CPU (the run's
/// rule, `outcome::BOUND_PCT`); below WELL_BELOW_PCT it did not.
const WELL_BELOW_PCT: f64 = 70.0;

/// What a search tells the people watching.
pub trait SearchEvents: Events {
    fn started(&mut self, _slos: &[String], _endpoint: &Endpoint) {}
    fn step(&mut self, _number: usize, _step: &Step) {}
}

fn bad(flag: &'static str, why: impl Into<String>) -> RunError {
    RunError::Spec(SpecError::Invalid {
        flag,
        why: why.into(),
    })
}

pub fn search(
    req: &RunRequest,
    settings: &SearchSettings,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn SearchEvents,
) -> Result<SearchResult, RunError> {
    let slos = req.slos()?;
    if slos.is_empty() {
        return Err(bad(
            "--slo",
            "search needs at least one, e.g. --slo 'p99<1ms'",
        ));
    }
    if let Some(s) = slos.iter().find(|s| s.window_s.is_some()) {
        return Err(bad(
            "--slo",
            format!(
                "{s}: a search judges each step over the whole step; drop 'over', or use it with run"
            ),
        ));
    }
    if req.rate.is_some() {
        return Err(bad(
            "--rate",
            "search chooses the rates itself; give --start-rate instead",
        ));
    }
    if !(0.001..=1.0).contains(&settings.precision) {
        return Err(bad(
            "--precision",
            format!("{} must be between 0.001 and 1", settings.precision),
        ));
    }
    if !(0.0..0.9).contains(&settings.headroom) {
        return Err(bad(
            "--headroom",
            format!("{} must be at least 0 and below 0.9", settings.headroom),
        ));
    }
    // Over load agents, each step is a coordinated run of its own, which
    // observes no server: refused by name, rather than taken and ignored.
    for (flag, set) in [
        ("--server-pid", !req.server.server_pid.is_empty()),
        ("--server-cgroup", req.server.server_cgroup.is_some()),
        ("--server-cmd", req.server.server_cmd.is_some()),
    ] {
        if set && !req.fleet.agents.is_empty() {
            return Err(bad(
                flag,
                "a search over load agents does not observe the server: search without it, then observe the server in `wirebench run --rate RATE` at the rate found",
            ));
        }
    }
    if settings.max_steps < 2 {
        return Err(bad(
            "--max-steps",
            format!("{} must be at least 2", settings.max_steps),
        ));
    }
    let dir = req.output.results_dir().join(store::new_run_id("search"));
    // Steps of 3 s after 1 s of warm-up unless told: a default search
    // measures its range in under 2 minutes, and a step that cannot decide
    // in 3 s is measured again.
    let mut req = req.clone();
    if req.duration.is_none() && req.count.is_none() {
        req.duration = Some(wirebench_core::units::Dur(std::time::Duration::from_secs(
            STEP_S,
        )));
    }
    if req.warmup.is_none() {
        req.warmup = Some(wirebench_core::units::Dur(std::time::Duration::from_secs(
            1,
        )));
    }
    let req = &req;
    let Checked {
        mut spec,
        mut placement,
        mut recorder,
    } = Checked::of(req, topo, Some(dir.clone()), command_line.clone(), None)?;
    recorder.history.clone_from(&opts.history);
    let calls = spec.transport.is_calls();
    if !spec.transport.has_response() && !calls {
        return Err(bad(
            "--mode",
            format!(
                "{}: search needs responses (echo or rr)",
                spec.transport.mode_name()
            ),
        ));
    }
    // Open loop: enough outstanding requests per connection that the
    // timetable is kept; a typed-call transport's depth is its streams.
    if req.depth.is_none() && !calls {
        spec.depth = 1024;
    }
    let mut steps_by = if spec.agents.is_empty() {
        let session = Session::open(&spec, opts, cancel, events)?;
        // An observed server given no cpuset: its affinity, where its CPU
        // share is read against.
        if placement.server_cpus.is_none() {
            placement.server_cpus = session.observed_cpuset();
        }
        session.resolve(&mut spec);
        Stepper::Here(Box::new(session))
    } else {
        // Each step is a run coordinated over the agents, kept in `dir`.
        let mut each = req.clone();
        each.output.results = Some(dir.clone());
        each.depth = Some(spec.depth);
        Stepper::Agents(Box::new(AgentSteps {
            req: each,
            opts: opts.clone(),
            topo: topo.clone(),
            command_line,
            cancel,
        }))
    };
    let texts: Vec<String> = slos.iter().map(|s| s.text.clone()).collect();
    let endpoint = match &spec.target {
        wirebench_core::spec::TargetSpec::External { endpoint } => endpoint.clone(),
        _ => match &steps_by {
            Stepper::Here(s) => s.endpoint().clone(),
            Stepper::Agents(_) => unreachable!("agents need a target"),
        },
    };
    events.started(&texts, &endpoint);
    let mut steps: Vec<Step> = Vec::new();
    // One step's run: what the search's entry in the history takes its
    // settings, machine and labels from.
    let mut first_step: Option<RunResult> = None;
    let mut rate = settings.start_rate;
    // Each step's tries (by the step's index), and those a step measured
    // again starts from.
    let mut runs: Vec<Vec<RunResult>> = Vec::new();
    let mut seed: Vec<RunResult> = Vec::new();
    let mut interrupted = false;
    let mut voting = false;
    let mut need = 2;
    let verdict = loop {
        if steps.len() >= settings.max_steps {
            break None;
        }
        spec.rate_per_s = Some(rate);
        // Tries of this rate, their seconds pooled, until every objective
        // is decided or the tries run out.
        let mut tries: Vec<RunResult> = std::mem::take(&mut seed);
        // A step measured again, or an edge rate: its tries vote, each
        // judged alone.
        let revote = !tries.is_empty() || std::mem::take(&mut voting);
        let need_now = std::mem::replace(&mut need, 2);
        let mut failed = None;
        let judged = loop {
            let label = match tries.len() {
                0 => format!("step{}", steps.len() + 1),
                n => format!("step{}-try{}", steps.len() + 1, n + 1),
            };
            let r = measure(
                &mut steps_by,
                &spec,
                &placement,
                &recorder,
                events,
                rate,
                &label,
            )?;
            if first_step.is_none() {
                first_step = Some(r.clone());
            }
            if r.status.state != RunState::Complete {
                interrupted = r.status.state == RunState::Interrupted || steps_by.interrupted();
                failed = Some(r.status.reason.clone().unwrap_or_default());
                break None;
            }
            tries.push(r);
            if revote {
                match vote(&slos, &tries, rate, settings.headroom, need_now) {
                    Some(j) => break Some(j),
                    None => continue,
                }
            }
            let j = judge(&slos, &tries, rate, settings.headroom);
            // Falling behind decides at once; an objective in doubt is
            // measured again while the server keeps up.
            if !j.undecided || !j.kept_up || tries.len() >= AGREEMENT_TRIES {
                break Some(j);
            }
        };
        let Some(j) = judged else {
            if interrupted {
                break None;
            }
            steps_by.close(events);
            return Err(RunError::Failed(format!(
                "step at {rate:.0}/s failed: {}",
                failed.unwrap_or_default()
            )));
        };
        let last = tries.last().expect("a try was measured");
        let step = Step {
            rate_per_s: rate,
            sent_per_s: mean(tries.iter().map(|r| r.summary.sent_per_s)),
            completed_per_s: j.completed_per_s,
            p50_ns: last.summary.latency.p50_ns,
            p99_ns: last.summary.latency.p99_ns,
            pass: j.pass,
            kept_up: j.kept_up,
            at_saturation: false,
            // Stalled seconds the figures had to use (all were stalled):
            // a miss then is measured again.
            stalled_seconds: j.stalled_used,
            stalled_left_out: j.stalled_left_out,
            measured_again: false,
            remeasured: false,
            tries: tries.len(),
            voted: revote,
            // Voted: the tries that held by the vote's rule.
            tries_passed: tries
                .iter()
                .filter(|r| match revote {
                    true => alone(&slos, r, rate, settings.headroom) == Some(true),
                    false => holds_alone(&slos, r, rate, settings.headroom),
                })
                .count(),
            near_pass_line: near_pass_line(&slos, &j.intervals, settings.headroom),
            intervals: j.intervals.clone(),
            undecided: j.undecided,
            seconds: j.seconds,
            client_cpu_pct: mean_opt(tries.iter().map(|r| r.summary.client_cpu_pct)),
            server_cpu_pct: mean_opt(tries.iter().map(|r| r.summary.server_cpu_pct)),
            slos: pooled_outcomes(&slos, &tries, &j.intervals),
            run_id: last.run_id.clone(),
        };
        let next = take(&mut steps, step, settings.precision);
        runs.push(tries);
        events.step(steps.len(), steps.last().expect("just taken"));
        match next {
            Next::Try(r) => rate = r,
            Next::Vote(r) => {
                rate = r;
                voting = true;
            }
            Next::Again(i) => {
                steps[i].remeasured = true;
                rate = steps[i].rate_per_s;
                seed = runs[i].clone();
                let why = match steps[i].voted {
                    true => {
                        need = EXTENDED_AGREE;
                        "its vote missed just above the answer; three of five tries decide"
                    }
                    false => {
                        "it was measured once where it decides the answer; two of its tries decide"
                    }
                };
                events.note(&format!(
                    "measured again: step {} ({rate:.0}/s): {why}, each judged alone",
                    i + 1
                ));
            }
            Next::Done => break Some(()),
        }
    };
    steps_by.close(events);
    let (best, confirmed) = answer(&steps);
    let band = best.and_then(|b| band_of(&steps, b));
    // Latency that does not rise with the rate: the load does not set it
    // (said, for the reader of the answer).
    let latency_flat = flat_latency(&slos, &steps);
    let not_sharp = best.and_then(|b| not_sharp(&slos, &steps, b, settings.headroom));
    let saturation = saturation(&steps);
    for s in &mut steps {
        s.at_saturation = s.pass && !s.holds(saturation);
    }
    let missed_below = match band {
        Some((lo, _)) => counted(&steps)
            .filter(|s| s.rate_per_s < lo && s.kept_up && !s.pass && !s.undecided)
            .map(|s| s.rate_per_s)
            .collect(),
        None => Vec::new(),
    };
    let mut undecided_rates: Vec<f64> = counted(&steps)
        .filter(|s| s.undecided)
        .map(|s| s.rate_per_s)
        .collect();
    undecided_rates.dedup();
    let result = SearchResult {
        slos: texts,
        headroom: settings.headroom,
        saturated: saturation.is_some(),
        saturation_ops_per_s: saturation,
        best_rate_per_s: best,
        confirmed,
        budget_exhausted: verdict.is_none() && !interrupted,
        missed_in_stalls: counted(&steps)
            .filter(|s| s.missed_in_stall())
            .map(|s| s.rate_per_s)
            .collect(),
        latency_flat,
        not_sharp,
        limit: limit(&steps, best),
        steps,
        interrupted,
        band,
        missed_below,
        undecided_rates,
        dir: dir.clone(),
    };
    std::fs::create_dir_all(&dir)?;
    store::write_atomic(
        &dir.join("search.json"),
        &serde_json::to_vec_pretty(&result).map_err(std::io::Error::other)?,
    )?;
    // Its answer in the history too: capacity over commits.
    if let (Some(db), Some(step)) = (&recorder.history, &first_step) {
        let results = db.parent().unwrap_or(std::path::Path::new("."));
        let indexed = wirebench_history::upkeep::record(results, &dir, &mut |h| {
            Ok(match h.index_search(&dir, &result, step)? {
                true => wirebench_history::Indexed::New,
                false => wirebench_history::Indexed::Known,
            })
        });
        match indexed {
            Ok(notes) => notes.iter().for_each(|n| events.note(n)),
            Err(e) => events.note(&format!(
                "the search is saved in {}, but not indexed in the history: {e}; `wirebench history import {}` indexes it",
                dir.display(),
                results.display()
            )),
        }
    }
    Ok(result)
}

/// What measures the steps: a session here, or the load agents (each
/// step a coordinated run of its own).
enum Stepper {
    Here(Box<Session>),
    Agents(Box<AgentSteps>),
}

/// What each step's run over the agents is made from.
struct AgentSteps {
    req: RunRequest,
    opts: SessionOptions,
    topo: Topology,
    command_line: Vec<String>,
    cancel: Cancel,
}

impl Stepper {
    fn interrupted(&self) -> bool {
        match self {
            Stepper::Here(s) => s.interrupted(),
            Stepper::Agents(a) => a.cancel.is_cancelled(),
        }
    }

    fn close(&mut self, events: &mut dyn Events) {
        if let Stepper::Here(s) = self {
            s.close(None, events);
        }
    }
}

/// A step's run over the agents tells what happens as the search's events.
struct StepEvents<'a>(&'a mut dyn SearchEvents);

impl Events for StepEvents<'_> {
    fn note(&mut self, text: &str) {
        self.0.note(text);
    }
    fn connected(&mut self, connect_time_ns: u64) {
        self.0.connected(connect_time_ns);
    }
    fn interval(&mut self, iv: &wirebench_load::engine::IntervalReport) {
        self.0.interval(iv);
    }
}

impl crate::run::RunEvents for StepEvents<'_> {}

mod judge;
mod steps;
use judge::*;
use steps::*;

#[cfg(test)]
mod tests;
