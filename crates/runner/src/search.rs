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
use wirebench_core::slo::{Metric, Slo};
pub use wirebench_core::summaries::{
    AGREEMENT_TRIES, EXIT_SEARCH_UNFINISHED, FlatLatency, SPARE_CAPACITY, STALL_RETRIES,
    SearchResult, Step,
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
    let dir = req.results_dir().join(store::new_run_id("search"));
    let Checked {
        mut spec,
        placement,
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
    // One step's run: what the search's entry in the history takes its
    // settings, machine and labels from.
    let mut first_step: Option<RunResult> = None;
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
        let label = format!("step{}", steps.len() + 1);
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
        let holds = |r: &RunResult| {
            r.summary.ops_per_s >= 0.95 * rate
                && slos
                    .iter()
                    .zip(&r.slos)
                    .all(|(slo, o)| slo.holds(o.actual, settings.headroom))
        };
        // An objective within its noise of the threshold: one try is a coin
        // toss, so the rate is measured again and the majority decides.
        let (mut tries, mut passed) = (1, usize::from(holds(&r)));
        if kept_up && borderline(&slos, &r, settings.headroom) {
            while tries < AGREEMENT_TRIES
                && 2 * passed <= AGREEMENT_TRIES
                && 2 * (tries - passed) <= AGREEMENT_TRIES
            {
                let label = format!("step{}-try{}", steps.len() + 1, tries + 1);
                let again = measure(
                    &mut steps_by,
                    &spec,
                    &placement,
                    &recorder,
                    events,
                    rate,
                    &label,
                )?;
                if again.status.state != RunState::Complete {
                    interrupted = true;
                    break;
                }
                tries += 1;
                passed += usize::from(holds(&again));
            }
            if interrupted {
                break None;
            }
        }
        let step = Step {
            rate_per_s: rate,
            sent_per_s: r.summary.sent_per_s,
            completed_per_s: r.summary.ops_per_s,
            p50_ns: r.summary.latency.p50_ns,
            p99_ns: r.summary.latency.p99_ns,
            pass: 2 * passed > tries,
            kept_up,
            at_saturation: false,
            // The warm-up's too: the backlog a stall leaves there carries
            // into the measured seconds.
            stalled_seconds: r.intervals.iter().filter(|iv| iv.stalled).count(),
            measured_again: false,
            tries,
            tries_passed: passed,
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
    let (mut best, mut confirmed) = best_rate(&steps);
    steps_by.close(events);
    // Latency that does not rise with the rate: the load does not set it,
    // so the misses are noise and the answer a lower bound.
    let latency_flat = flat_latency(&slos, &steps);
    if latency_flat.is_some()
        && let Some(top) = held_rates(&steps).last().copied()
    {
        best = Some(top);
        confirmed = held_rates(&steps).iter().filter(|&&r| r == top).count() >= 2;
    }
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
        latency_flat,
        steps,
        interrupted,
        dir: dir.clone(),
    };
    std::fs::create_dir_all(&dir)?;
    store::write_atomic(
        &dir.join("search.json"),
        &serde_json::to_vec_pretty(&result).map_err(std::io::Error::other)?,
    )?;
    // Its answer in the history too: capacity over commits.
    if let (Some(db), Some(step)) = (&recorder.history, &first_step) {
        let indexed = wirebench_history::History::open(db)
            .and_then(|mut h| h.index_search(&dir, &result, step));
        if let Err(e) = indexed {
            events.note(&format!(
                "the search is saved in {}, but not indexed in the history: {e}; `wirebench history import` indexes it",
                dir.display()
            ));
        }
    }
    Ok(result)
}

/// One step's run at `rate`: on the session here, or coordinated over the
/// agents; kept under the search's directory.
#[allow(clippy::too_many_arguments)]
fn measure(
    steps_by: &mut Stepper,
    spec: &wirebench_core::spec::RunSpec,
    placement: &wirebench_core::result::Placement,
    recorder: &Recorder,
    events: &mut dyn SearchEvents,
    rate: f64,
    label: &str,
) -> Result<RunResult, RunError> {
    match steps_by {
        Stepper::Here(session) => {
            let mut r = session.measure(spec, placement, events);
            recorder.save(&mut r, label, store::now_rfc3339())?;
            Ok(r)
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
                Some((r, _)) => Ok(r),
                None => Err(RunError::Failed(format!("step at {rate:.0}/s: no run"))),
            }
        }
    }
}

/// How far (a fraction) a latency objective's figure may sit from what
/// passes before one try cannot be trusted: twice the relative spread of
/// its per-second values, at least 10% and at most 50%.
fn noise_band(r: &RunResult, slo: &Slo) -> f64 {
    let per_second: Vec<f64> = r
        .intervals
        .iter()
        .filter(|iv| iv.phase == wirebench_core::result::Phase::Measure && iv.ops > 0)
        .map(|iv| match slo.metric {
            Metric::Percentile(q) if q >= 99.0 => iv.latency.p99_ns as f64,
            Metric::Percentile(_) => iv.latency.p50_ns as f64,
            _ => iv.latency.mean_ns,
        })
        .collect();
    let n = per_second.len() as f64;
    let mean = per_second.iter().sum::<f64>() / n.max(1.0);
    let band = if per_second.len() >= 2 && mean > 0.0 {
        let var = per_second.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        2.0 * var.sqrt() / mean
    } else {
        0.0
    };
    band.clamp(0.1, 0.5)
}

/// Whether a latency objective's figure sits within its noise of the
/// limit that passes (its threshold less the headroom).
fn borderline(slos: &[Slo], r: &RunResult, headroom: f64) -> bool {
    slos.iter().zip(&r.slos).any(|(slo, o)| {
        let latency = matches!(
            slo.metric,
            Metric::Percentile(_) | Metric::MeanLatency | Metric::MaxLatency
        );
        let limit = slo.threshold * (1.0 - headroom);
        latency && limit > 0.0 && (o.actual / limit - 1.0).abs() < noise_band(r, slo)
    })
}

/// The rates of the counted steps that held, lowest first.
fn held_rates(steps: &[Step]) -> Vec<f64> {
    let sat = saturation(steps);
    let mut v: Vec<f64> = counted(steps)
        .filter(|s| s.holds(sat))
        .map(|s| s.rate_per_s)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Spearman's rank correlation of two series (no ties expected; ties
/// take the mean rank).
fn rank_correlation(x: &[f64], y: &[f64]) -> f64 {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            for k in i..=j {
                r[idx[k]] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        r
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let cov: f64 = rx
        .iter()
        .zip(&ry)
        .map(|(a, b)| (a - mean) * (b - mean))
        .sum();
    let var = |r: &[f64]| r.iter().map(|a| (a - mean).powi(2)).sum::<f64>();
    let d = (var(&rx) * var(&ry)).sqrt();
    if d == 0.0 { 0.0 } else { cov / d }
}

/// The first latency objective whose figure, over the steps the server
/// kept up with (at least 4, over at least 8x in rate), does not rise
/// with the rate: a rank correlation under 0.5 and its highest value
/// within 1.5x of its lowest.
fn flat_latency(slos: &[Slo], steps: &[Step]) -> Option<FlatLatency> {
    let kept: Vec<&Step> = counted(steps).filter(|s| s.kept_up).collect();
    let (lo, hi) = kept.iter().fold((f64::MAX, 0.0f64), |(a, b), s| {
        (a.min(s.rate_per_s), b.max(s.rate_per_s))
    });
    if kept.len() < 4 || hi < 8.0 * lo {
        return None;
    }
    slos.iter().enumerate().find_map(|(i, slo)| {
        if !matches!(slo.metric, Metric::Percentile(_) | Metric::MeanLatency) {
            return None;
        }
        let (rates, values): (Vec<f64>, Vec<f64>) = kept
            .iter()
            .filter_map(|s| Some((s.rate_per_s, s.slos.get(i)?.actual)))
            .filter(|(_, v)| v.is_finite())
            .unzip();
        if rates.len() < 4 {
            return None;
        }
        let rho = rank_correlation(&rates, &values);
        let (min, max) = values
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        (rho < 0.5 && max <= 1.5 * min).then(|| FlatLatency {
            slo: slo.text.clone(),
            from_rate_per_s: lo,
            to_rate_per_s: hi,
            min,
            max,
            rank_correlation: rho,
        })
    })
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
            tries: 1,
            tries_passed: usize::from(pass),
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

    /// Steps at `rates` whose p99 (the one objective, `p99<1ms`) reads
    /// `p99s`, all kept up with.
    fn with_p99(rates: &[f64], p99s: &[f64]) -> Vec<Step> {
        rates
            .iter()
            .zip(p99s)
            .map(|(&r, &p)| {
                let mut s = step(r, p < 1e6, r);
                s.slos = vec![wirebench_core::result::SloOutcome {
                    slo: "p99<1ms".into(),
                    actual: p,
                    pass: p < 1e6,
                    windows: None,
                }];
                s
            })
            .collect()
    }

    #[test]
    fn issue_35_latency_flat_with_the_rate_is_said_and_the_rate_a_lower_bound() {
        let slos = vec![Slo::parse("p99<1ms").unwrap()];
        // Redis: p99 around 0.95 ms at every rate, passing or not by luck.
        let rates = [
            1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0, 1500.0,
        ];
        let p99s = [
            0.97e6, 0.93e6, 1.02e6, 0.95e6, 0.91e6, 0.96e6, 0.94e6, 1.01e6,
        ];
        let steps = with_p99(&rates, &p99s);
        let f = flat_latency(&slos, &steps).expect("flat");
        assert_eq!((f.from_rate_per_s, f.to_rate_per_s), (1000.0, 64000.0));
        assert!(f.rank_correlation < 0.5, "{f:?}");
        assert_eq!(held_rates(&steps).last(), Some(&64000.0));
        // Latency that climbs with the load is not flat.
        let climbing = [0.1e6, 0.12e6, 0.2e6, 0.3e6, 0.5e6, 0.8e6, 1.5e6, 0.11e6];
        assert!(flat_latency(&slos, &with_p99(&rates, &climbing)).is_none());
        // Too few steps, or too narrow a span of rates: not judged.
        assert!(flat_latency(&slos, &with_p99(&rates[..3], &p99s[..3])).is_none());
        let narrow = [1000.0, 1200.0, 1400.0, 1600.0, 1800.0];
        assert!(flat_latency(&slos, &with_p99(&narrow, &p99s[..5])).is_none());
        assert!((rank_correlation(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-9);
        assert!((rank_correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-9);
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
