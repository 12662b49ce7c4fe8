//! `search`: the highest rate a server takes within its objectives, and
//! its saturation throughput. Open-loop steps against one server: a coarse
//! phase doubles the rate until a step fails (an objective missed, or the
//! server fell behind: it completed under 95% of the rate asked); bisection
//! closes in on the highest passing rate to `precision`, which must then
//! pass twice; if no step fell behind yet, the rate keeps doubling until
//! one does, which measures the saturation. A rate within 5% of the
//! saturation is never the answer: a server with no capacity to spare
//! never works off the backlog of one hiccup. A step that missed in a
//! second the hiccup meter saw the platform stall in is measured again (at
//! most [`STALL_RETRIES`] times) and does not count: on a noisy VM, one
//! throttled second would otherwise end the climb for good. A budget that
//! ends first is said, never hidden. Every step is a full result kept under
//! `<results>/search-<id>/`, with `search.json` beside them. With load
//! agents, each step is a run coordinated over them (handshake, clocks,
//! merge), so the rate searched is the agents' total.

use crate::RunError;
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

pub use wirebench_core::summaries::{
    EXIT_SEARCH_UNFINISHED, SPARE_CAPACITY, STALL_RETRIES, SearchResult, Step,
};

/// How much each coarse step raises the rate.
const GROWTH: f64 = 2.0;

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
    // Each step's result would say nothing of an observed server (its
    // report comes when the session closes): refused by name, rather than
    // taken and ignored.
    for (flag, set) in [
        ("--server-pid", !req.server_pid.is_empty()),
        ("--server-cgroup", req.server_cgroup.is_some()),
        ("--server-cmd", req.server_cmd.is_some()),
    ] {
        if set {
            return Err(bad(
                flag,
                "search does not observe the server of its steps: search without it, then observe the server in `wirebench run --rate RATE` at the rate found",
            ));
        }
    }
    if settings.max_steps < 2 {
        return Err(bad(
            "--max-steps",
            format!("{} must be at least 2", settings.max_steps),
        ));
    }
    let (mut spec, placement) = req.check(topo)?;
    req.prepare_outputs()?;
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
    let dir = req.results_dir().join(store::new_run_id("search"));
    let recorder = Recorder::new(dir.clone(), command_line.clone(), slos.clone());
    let mut steps_by = if spec.agents.is_empty() {
        Stepper::Here(Box::new(Session::open(&spec, opts, cancel, events)?))
    } else {
        // Each step is a run coordinated over the agents, kept in `dir`.
        let mut each = req.clone();
        each.results = Some(dir.clone());
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
    let mut rate = settings.start_rate;
    let mut interrupted = false;
    // The coarse phase doubles the rate until a step fails (an objective
    // missed, or the server fell behind); bisection then closes in between
    // the highest passing rate and the lowest failing one; the best rate
    // must pass twice.
    let verdict = loop {
        if steps.len() >= settings.max_steps {
            break None;
        }
        spec.rate_per_s = Some(rate);
        let r = match &mut steps_by {
            Stepper::Here(session) => {
                let mut r = session.measure(&spec, &placement, events);
                recorder.save(
                    &mut r,
                    &format!("step{}", steps.len() + 1),
                    store::now_rfc3339(),
                )?;
                r
            }
            Stepper::Agents(a) => {
                a.req.rate = Some(wirebench_core::units::Rate(rate));
                let report = crate::agent::coordinator::run(
                    &a.req,
                    &a.opts,
                    &a.topo,
                    a.command_line.clone(),
                    a.cancel.clone(),
                    &mut StepEvents(events),
                )?;
                match report.runs.into_iter().last() {
                    Some((r, _)) => r,
                    None => return Err(RunError::Failed(format!("step at {rate:.0}/s: no run"))),
                }
            }
        };
        if r.status.state != RunState::Complete {
            interrupted = r.status.state == RunState::Interrupted || steps_by.interrupted();
            if !interrupted {
                steps_by.close(events);
                return Err(RunError::Failed(format!(
                    "step at {rate:.0}/s failed: {}",
                    r.status.reason.unwrap_or_default()
                )));
            }
            break None;
        }
        let kept_up = r.summary.ops_per_s >= 0.95 * rate;
        let step = Step {
            rate_per_s: rate,
            sent_per_s: r.summary.sent_per_s,
            completed_per_s: r.summary.ops_per_s,
            p50_ns: r.summary.latency.p50_ns,
            p99_ns: r.summary.latency.p99_ns,
            pass: kept_up
                && slos
                    .iter()
                    .zip(&r.slos)
                    .all(|(slo, o)| slo.holds(o.actual, settings.headroom)),
            kept_up,
            at_saturation: false,
            // The warm-up's too: the backlog a stall leaves there carries
            // into the measured seconds.
            stalled_seconds: r.intervals.iter().filter(|iv| iv.stalled).count(),
            measured_again: false,
            slos: r.slos.clone(),
            run_id: r.run_id.clone(),
        };
        let next = take(&mut steps, step, settings.precision);
        events.step(steps.len(), steps.last().expect("just taken"));
        match next {
            Next::Try(r) => rate = r,
            Next::Done => break Some(()),
        }
    };
    let (best, confirmed) = best_rate(&steps);
    steps_by.close(events);
    let saturation = saturation(&steps);
    for s in &mut steps {
        s.at_saturation = s.pass && !s.holds(saturation);
    }
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
        steps,
        interrupted,
        dir: dir.clone(),
    };
    std::fs::create_dir_all(&dir)?;
    store::write_atomic(
        &dir.join("search.json"),
        &serde_json::to_vec_pretty(&result).map_err(std::io::Error::other)?,
    )?;
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

/// What the search does next.
#[derive(Debug, PartialEq)]
enum Next {
    Try(f64),
    Done,
}

/// Keeps a measured step and says what to measure next: the same rate
/// again if it missed while the platform stalled (at most
/// [`STALL_RETRIES`] times in a row; the step is kept but does not count),
/// else what the steps that count say.
fn take(steps: &mut Vec<Step>, mut step: Step, precision: f64) -> Next {
    let tries = steps
        .iter()
        .rev()
        .take_while(|s| s.measured_again && s.rate_per_s == step.rate_per_s)
        .count();
    step.measured_again = step.missed_in_stall() && tries < STALL_RETRIES;
    let again = step.measured_again.then_some(step.rate_per_s);
    steps.push(step);
    match again {
        Some(rate) => Next::Try(rate),
        None => next_rate(steps, precision),
    }
}

/// The steps that count: not those measured again for a stall.
fn counted(steps: &[Step]) -> impl Iterator<Item = &Step> {
    steps.iter().filter(|s| !s.measured_again)
}

/// The most a step the server fell behind in completed: None until one
/// did.
fn saturation(steps: &[Step]) -> Option<f64> {
    counted(steps)
        .filter(|s| !s.kept_up)
        .map(|s| s.completed_per_s)
        .max_by(f64::total_cmp)
}

/// The lowest rate that did not hold (failed, or at the saturation).
fn lowest_failed(steps: &[Step]) -> Option<f64> {
    let sat = saturation(steps);
    counted(steps)
        .filter(|s| !s.holds(sat))
        .map(|s| s.rate_per_s)
        .min_by(f64::total_cmp)
}

/// The highest rate that held below the lowest that did not, and whether
/// it held twice.
fn best_rate(steps: &[Step]) -> (Option<f64>, bool) {
    let sat = saturation(steps);
    let hi = lowest_failed(steps);
    let lo = counted(steps)
        .filter(|s| s.holds(sat) && hi.is_none_or(|h| s.rate_per_s < h))
        .map(|s| s.rate_per_s)
        .max_by(f64::total_cmp);
    let twice = lo.is_some_and(|l| {
        counted(steps)
            .filter(|s| s.holds(sat) && s.rate_per_s == l)
            .count()
            >= 2
    });
    (lo, twice)
}

/// The next rate from the steps so far.
fn next_rate(steps: &[Step], precision: f64) -> Next {
    let hi = lowest_failed(steps);
    let (lo, twice) = best_rate(steps);
    match (lo, hi) {
        // Coarse: every step passed so far.
        (Some(l), None) => Next::Try(l * GROWTH),
        // Nothing passed yet: lower.
        (None, Some(h)) => Next::Try(h / GROWTH),
        (Some(l), Some(h)) if h / l - 1.0 > precision => Next::Try((l + h) / 2.0),
        // Bracketed: the best rate must pass twice, the machine being noisy;
        // if the second try misses, the search goes on below it.
        (Some(l), Some(_)) if !twice => Next::Try(l),
        // Found: now the saturation, if no step fell behind yet (the
        // objectives failed first): higher until the server falls behind.
        (Some(_), Some(_)) if counted(steps).all(|s| s.kept_up) => {
            Next::Try(counted(steps).map(|s| s.rate_per_s).fold(0.0, f64::max) * GROWTH)
        }
        (Some(_), Some(_)) => Next::Done,
        (None, None) => unreachable!("a step was measured"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, pass: bool, completed: f64) -> Step {
        Step {
            rate_per_s: rate,
            sent_per_s: rate,
            completed_per_s: completed,
            p50_ns: 0,
            p99_ns: 0,
            slos: vec![],
            pass,
            kept_up: completed >= 0.95 * rate,
            at_saturation: false,
            stalled_seconds: 0,
            measured_again: false,
            run_id: String::new(),
        }
    }

    /// Runs the search's rule against a server that keeps up to `capacity`
    /// and meets the objectives up to `good`.
    fn simulate(capacity: f64, good: f64, max_steps: usize) -> (Vec<Step>, bool) {
        simulate_stalls(capacity, good, max_steps, |_, _| false)
    }

    /// As [`simulate`], on a platform that stalls in the n-th step (from
    /// 0) at `rate` when `stalls(n, rate)`: the step misses, and the
    /// server falls behind (a stall of the client looks like that).
    fn simulate_stalls(
        capacity: f64,
        good: f64,
        max_steps: usize,
        mut stalls: impl FnMut(usize, f64) -> bool,
    ) -> (Vec<Step>, bool) {
        let mut steps = Vec::new();
        let mut rate: f64 = 1000.0;
        while steps.len() < max_steps {
            let stalled = stalls(steps.len(), rate);
            let done = rate.min(capacity) * if stalled { 0.8 } else { 1.0 };
            let mut s = step(rate, rate <= good && done >= 0.95 * rate, done);
            s.stalled_seconds = usize::from(stalled);
            match take(&mut steps, s, 0.05) {
                Next::Try(r) => rate = r,
                Next::Done => return (steps, true),
            }
        }
        (steps, false)
    }

    #[test]
    fn a_step_missed_in_a_stall_is_measured_again_and_does_not_count() {
        let (quiet, _) = simulate(2000.0, 1900.0, 40);
        let quiet = best_rate(&quiet);
        // The very first step stalls, and the first two at 1500/s (steps 4
        // and 5): without more tries the climb would end below 1000/s, and
        // the stalled step's completions would set a saturation of 800/s.
        let (steps, done) = simulate_stalls(2000.0, 1900.0, 40, |n, rate| {
            n == 0 || (rate == 1500.0 && n < 5)
        });
        assert!(done, "{steps:#?}");
        assert_eq!(best_rate(&steps), quiet);
        assert_eq!(steps.iter().filter(|s| s.measured_again).count(), 3);
        assert!(
            steps
                .iter()
                .all(|s| s.measured_again == s.missed_in_stall())
        );
        assert_eq!(saturation(&steps), Some(2000.0));
        // A stall in every try: after STALL_RETRIES more, the miss counts,
        // and the search says which rate it could not trust.
        let (steps, done) = simulate_stalls(2000.0, 1900.0, 40, |_, rate| rate == 1500.0);
        assert!(done, "{steps:#?}");
        let at = |r: f64| steps.iter().filter(move |s| s.rate_per_s == r);
        assert_eq!(at(1500.0).count(), STALL_RETRIES + 1);
        assert_eq!(
            at(1500.0).filter(|s| s.measured_again).count(),
            STALL_RETRIES
        );
        let (best, twice) = best_rate(&steps);
        assert!(twice && best.unwrap() < 1500.0, "{steps:#?}");
        let missed: Vec<f64> = counted(&steps)
            .filter(|s| s.missed_in_stall())
            .map(|s| s.rate_per_s)
            .collect();
        assert_eq!(missed, [1500.0]);
        // A miss with no stall counts at once.
        let (steps, _) = simulate(2000.0, 500.0, 40);
        assert!(steps.iter().all(|s| !s.measured_again));
    }

    #[test]
    fn the_search_brackets_bisects_confirms_and_saturates() {
        let (steps, done) = simulate(2000.0, 1900.0, 24);
        assert!(done, "{steps:#?}");
        let (best, twice) = best_rate(&steps);
        let best = best.unwrap();
        assert!(twice);
        assert!((1800.0..=1900.0).contains(&best), "{best}");
        // The answer is the highest step that passed.
        let highest = steps
            .iter()
            .filter(|s| s.pass)
            .map(|s| s.rate_per_s)
            .fold(0.0, f64::max);
        assert_eq!(best, highest);
    }

    #[test]
    fn a_rate_at_the_saturation_is_never_the_answer() {
        // Objectives met right up to the capacity: 2000/s passes, but the
        // server has nothing to spare there.
        let (steps, done) = simulate(2000.0, 2000.0, 24);
        assert!(done, "{steps:#?}");
        assert!(steps.iter().any(|s| s.pass && s.rate_per_s == 2000.0));
        let (best, twice) = best_rate(&steps);
        let best = best.unwrap();
        assert!(twice);
        assert!((1800.0..1900.0).contains(&best), "{best}");
    }

    #[test]
    fn a_budget_too_small_is_said() {
        // A fast server (1M/s) from 1000/s: 24 steps are enough.
        assert!(simulate(1e6, 1e6, 24).1);
        // 6 steps do not: the search reports it unfinished.
        let (steps, done) = simulate(1e6, 1e6, 6);
        assert!(!done);
        assert!(steps.iter().all(|s| s.kept_up), "never saturated");
    }
}
