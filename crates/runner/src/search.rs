//! `search`: the highest rate a server takes within its objectives, and
//! its saturation throughput. Open-loop steps against one server.
//!
//! - **Each step's verdict has a confidence interval.** Its objectives'
//!   figures come with a 95% interval ([`Slo::interval`]: order
//!   statistics and a bootstrap over seconds, the wider). A step whose
//!   interval straddles an objective is measured again, the seconds of
//!   every try pooled, up to [`AGREEMENT_TRIES`] tries; then it reads
//!   "undecided", never pass or fail by luck.
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
    let verdict = loop {
        if steps.len() >= settings.max_steps {
            break None;
        }
        spec.rate_per_s = Some(rate);
        // Tries of this rate, their seconds pooled, until every objective
        // is decided or the tries run out.
        let mut tries: Vec<RunResult> = std::mem::take(&mut seed);
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
            tries_passed: tries
                .iter()
                .filter(|r| holds_alone(&slos, r, rate, settings.headroom))
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
            Next::Again(i) => {
                steps[i].remeasured = true;
                rate = steps[i].rate_per_s;
                seed = runs[i].clone();
                events.note(&format!(
                    "step {}: {rate:.0}/s missed, alone between rates that held: measured again, its tries pooled",
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

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

fn mean_opt(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let all: Vec<f64> = v.collect::<Option<Vec<f64>>>()?;
    (!all.is_empty()).then(|| mean(all.into_iter()))
}

/// What the tries of one rate say, pooled.
struct Judged {
    /// Every objective met with the headroom over its whole interval, and
    /// the server kept up.
    pass: bool,
    /// Some objective's interval straddles it (and none fails outright).
    undecided: bool,
    kept_up: bool,
    completed_per_s: f64,
    seconds: f64,
    /// Stalled seconds the figures used (every second stalled), and those
    /// left out.
    stalled_used: usize,
    stalled_left_out: usize,
    /// Each objective's figure (`estimate`; NaN where none) and interval.
    intervals: Vec<FigureInterval>,
}

/// The measured seconds of every try, pooled, less those the hiccup meter
/// saw the platform stall in (the client's machine, not the server: a VM
/// the host throttles for up to ~300 ms), while two or more are left.
/// Also: how many stalled seconds are in what it returns, and how many
/// were left out.
fn pooled_seconds(tries: &[RunResult]) -> (Vec<&wirebench_core::result::Interval>, usize, usize) {
    let all: Vec<&wirebench_core::result::Interval> = tries
        .iter()
        .flat_map(|r| {
            r.intervals
                .iter()
                .filter(|iv| iv.phase == wirebench_core::result::Phase::Measure)
        })
        .collect();
    let quiet: Vec<&wirebench_core::result::Interval> =
        all.iter().copied().filter(|iv| !iv.stalled).collect();
    let stalled = all.len() - quiet.len();
    // A warm-up that stalled leaves its backlog in the measured seconds:
    // it cannot be left out.
    let warmup: usize = tries
        .iter()
        .flat_map(|r| {
            r.intervals
                .iter()
                .filter(|iv| iv.phase != wirebench_core::result::Phase::Measure && iv.stalled)
        })
        .count();
    if quiet.len() >= 2 {
        (quiet, warmup, stalled)
    } else {
        (all, stalled + warmup, 0)
    }
}

/// The verdict of the tries of one rate: each objective over their pooled
/// seconds, with its interval; the server kept up when they completed 95%
/// of the rate over their seconds.
fn judge(slos: &[Slo], tries: &[RunResult], rate: f64, headroom: f64) -> Judged {
    let (seconds, stalled_used, stalled_left_out) = pooled_seconds(tries);
    let secs: f64 = tries
        .iter()
        .map(|r| r.summary.measured_ns as f64 / 1e9)
        .sum();
    let ops: u64 = tries.iter().map(|r| r.summary.ops).sum();
    let completed_per_s = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
    let kept_up = completed_per_s >= 0.95 * rate;
    let mut intervals = Vec::new();
    let mut decided = Vec::new();
    for (i, slo) in slos.iter().enumerate() {
        match slo.interval(&seconds) {
            Some(ci) => {
                decided.push(slo.decide(&ci, headroom));
                intervals.push(ci);
            }
            None => {
                // No seconds to pool (an exec run's own figures): the
                // run's figure, as it was judged.
                let v = tries
                    .last()
                    .and_then(|r| r.slos.get(i))
                    .map_or(f64::NAN, |o| o.actual);
                decided.push(Some(slo.holds(v, headroom)));
                intervals.push(FigureInterval {
                    estimate: v,
                    low: v,
                    high: v,
                });
            }
        }
    }
    let fails = decided.contains(&Some(false));
    let undecided = !fails && decided.contains(&None);
    Judged {
        pass: kept_up && !fails && !undecided,
        undecided,
        kept_up,
        completed_per_s,
        seconds: secs,
        stalled_used,
        stalled_left_out,
        intervals,
    }
}

/// Whether one try alone met every objective (its own figures) and kept up.
fn holds_alone(slos: &[Slo], r: &RunResult, rate: f64, headroom: f64) -> bool {
    r.summary.ops_per_s >= 0.95 * rate
        && slos
            .iter()
            .zip(&r.slos)
            .all(|(slo, o)| slo.holds(o.actual, headroom))
}

/// The objectives' outcomes over the pooled tries.
fn pooled_outcomes(
    slos: &[Slo],
    tries: &[RunResult],
    intervals: &[FigureInterval],
) -> Vec<wirebench_core::result::SloOutcome> {
    slos.iter()
        .zip(intervals.iter().map(|ci| ci.estimate))
        .enumerate()
        .map(|(i, (slo, v))| wirebench_core::result::SloOutcome {
            slo: slo.text.clone(),
            actual: v,
            pass: slo.holds(v, 0.0),
            windows: tries
                .last()
                .and_then(|r| r.slos.get(i))
                .and_then(|o| o.windows.clone()),
        })
        .collect()
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
            recorder.save(&mut r, label, store::now_rfc3339(), events)?;
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

/// Whether every objective a figure must stay under (a latency) read at
/// least [`NEAR_LIMIT`] of its pass line (false when there is none).
fn near_pass_line(slos: &[Slo], intervals: &[FigureInterval], headroom: f64) -> bool {
    let mut under = slos
        .iter()
        .zip(intervals)
        .filter(|(slo, _)| is_ceiling(slo))
        .peekable();
    under.peek().is_some()
        && under.all(|(slo, ci)| ci.estimate >= NEAR_LIMIT * slo.threshold * (1.0 - headroom))
}

/// The steps the server kept up with from half `best` up to it, two or
/// more, all near the pass line: the objective barely tells them apart,
/// so closing in on `best` more finely measures the machine's noise.
fn blurred(steps: &[Step], best: f64) -> bool {
    let near: Vec<&Step> = top_octave(steps, best).collect();
    near.len() >= 2 && near.iter().all(|s| s.near_pass_line)
}

/// An objective a figure must stay under (a latency), not over.
fn is_ceiling(slo: &Slo) -> bool {
    matches!(
        slo.cmp,
        wirebench_core::slo::Cmp::Lt | wirebench_core::slo::Cmp::Le
    )
}

/// The steps that count and kept up, from half `best` up to it: where
/// the answer's sharpness is judged.
fn top_octave(steps: &[Step], best: f64) -> impl Iterator<Item = &Step> {
    counted(steps).filter(move |s| s.kept_up && s.rate_per_s >= best / 2.0 && s.rate_per_s <= best)
}

/// Whether the answer `best` is sharp: for each objective a figure must
/// stay under (a latency), the steps the server kept up with from half the
/// answer up to it (two or more); when every one's figure is at least
/// [`NEAR_LIMIT`] of the pass line, the objective barely tells the rates
/// apart there, and the answer moves with the machine's noise.
fn not_sharp(slos: &[Slo], steps: &[Step], best: f64, headroom: f64) -> Option<NotSharp> {
    slos.iter().enumerate().find_map(|(i, slo)| {
        if !is_ceiling(slo) {
            return None;
        }
        let pass_line = slo.threshold * (1.0 - headroom);
        let near: Vec<(f64, f64)> = top_octave(steps, best)
            .filter_map(|s| Some((s.rate_per_s, s.intervals.get(i)?.estimate)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        if near.len() < 2 || near.iter().any(|&(_, v)| v < NEAR_LIMIT * pass_line) {
            return None;
        }
        let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn(&(f64, f64)) -> f64| {
            near.iter().map(pick).fold(init, f)
        };
        Some(NotSharp {
            slo: slo.text.clone(),
            from_rate_per_s: fold(f64::min, f64::MAX, |x| x.0),
            to_rate_per_s: fold(f64::max, 0.0, |x| x.0),
            min: fold(f64::min, f64::MAX, |x| x.1),
            max: fold(f64::max, 0.0, |x| x.1),
            pass_line,
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
    /// The step of this index again, its tries pooled with the new ones.
    Again(usize),
    Done,
}

/// Keeps a measured step and says what to measure next: the same rate
/// again if it missed while the platform stalled and its stalled seconds
/// could not be left out (every one of them stalled: at most
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
    steps.iter().filter(|s| s.counts())
}

/// A decided miss measured once, below rates that held, without which the
/// answer would be higher (it splits what would be one band, or leaves a
/// pass above it alone): its index. Measured again before it may end a
/// band: on a noisy machine one moment fails a step now and then, and
/// where latency barely moves with the rate (a client near its CPU's
/// end) that moment decided the whole answer. A step the server fell
/// behind in is one too (a VM's capacity dips for a moment: redis at depth
/// 1 fell behind at 17,500/s and kept up at 19,000/s a minute later).
/// Measured again once: a miss that stays decided stands.
///
/// Also measured again: a step the server fell behind in at a rate it
/// completed more than in another step (under the saturation by the spare
/// capacity): the server can take that rate, so the step saw a dip of the
/// machine, and bisecting below it would answer the dip.
fn suspect_miss(steps: &[Step]) -> Option<usize> {
    let (now, confirmed) = answer(steps);
    let raised = |a: Option<f64>, c: bool| c && (!confirmed || a > now);
    let sat = saturation(steps);
    let dipped =
        |s: &Step| !s.kept_up && sat.is_some_and(|sat| s.rate_per_s < (1.0 - SPARE_CAPACITY) * sat);
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.counts() && !s.undecided && !s.pass && s.tries == 1)
        .filter(|&(i, s)| {
            if dipped(s) {
                return true;
            }
            let mut without = steps.to_vec();
            without[i].remeasured = true;
            let (a, c) = answer(&without);
            raised(a, c)
        })
        .max_by(|a, b| a.1.rate_per_s.total_cmp(&b.1.rate_per_s))
        .map(|(i, _)| i)
}

/// The most a step the server fell behind in completed: None until one
/// did.
fn saturation(steps: &[Step]) -> Option<f64> {
    counted(steps)
        .filter(|s| !s.kept_up)
        .map(|s| s.completed_per_s)
        .max_by(f64::total_cmp)
}

/// The decided steps that count in order of rate (a rate measured twice:
/// in the order measured), each with whether it held. An undecided step
/// is left out: it says nothing, so it neither ends a band nor joins one.
fn by_rate(steps: &[Step]) -> Vec<(f64, bool)> {
    let sat = saturation(steps);
    let mut v: Vec<(f64, bool)> = counted(steps)
        .filter(|s| !s.undecided)
        .map(|s| (s.rate_per_s, s.holds(sat)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The index (in [`by_rate`]) of the top of the highest band of at least
/// two consecutive rates that held, else of the highest rate that held
/// alone (and false).
fn top_of_band(v: &[(f64, bool)]) -> Option<(usize, bool)> {
    let band = (1..v.len()).rev().find(|&i| v[i].1 && v[i - 1].1);
    match band {
        Some(i) => Some((i, true)),
        None => v.iter().rposition(|x| x.1).map(|i| (i, false)),
    }
}

/// The answer: the top of the highest band that held, and whether the
/// band has two rates or more (a lone pass is not confirmed).
fn answer(steps: &[Step]) -> (Option<f64>, bool) {
    let v = by_rate(steps);
    match top_of_band(&v) {
        Some((i, band)) => (Some(v[i].0), band),
        None => (None, false),
    }
}

/// The band whose top is `best`: its lowest and highest rate.
fn band_of(steps: &[Step], best: f64) -> Option<(f64, f64)> {
    let v = by_rate(steps);
    let top = v.iter().rposition(|x| x.0 == best && x.1)?;
    let mut lo = top;
    while lo > 0 && v[lo - 1].1 {
        lo -= 1;
    }
    Some((v[lo].0, v[top].0))
}

/// The lowest rate tried above `rate` that did not hold (failed, or stayed
/// undecided): what bounds the answer from above.
fn bound_above(steps: &[Step], rate: f64) -> Option<f64> {
    let sat = saturation(steps);
    counted(steps)
        .filter(|s| s.rate_per_s > rate && (s.undecided || !s.holds(sat)))
        .map(|s| s.rate_per_s)
        .min_by(f64::total_cmp)
}

/// Whether the step that counts at `rate` stayed undecided.
fn undecided_at(steps: &[Step], rate: f64) -> bool {
    counted(steps).any(|s| s.rate_per_s == rate && s.undecided)
}

/// The next rate from the steps so far.
fn next_rate(steps: &[Step], precision: f64) -> Next {
    let v = by_rate(steps);
    // The climb: higher until the server falls behind, whatever the
    // objectives said (latency need not rise with the rate).
    if saturation(steps).is_none() {
        let last = counted(steps).last().expect("a step was measured");
        let growth = if last.pass { FAST_GROWTH } else { GROWTH };
        let highest = counted(steps).map(|s| s.rate_per_s).fold(0.0, f64::max);
        return Next::Try(highest * growth);
    }
    if let Some(i) = suspect_miss(steps) {
        return Next::Again(i);
    }
    let close = |lo: f64, hi: f64| hi / lo - 1.0 <= precision;
    // Noise, not a boundary: a blurred top under a rate only undecided.
    let noise = |top: f64, above: f64| undecided_at(steps, above) && blurred(steps, top);
    match top_of_band(&v) {
        // Between the band's top and what bounds it above (an undecided
        // rate too: bisected below it, never measured again).
        // Not where the band's top is blurred and what bounds it is only
        // undecided: there, a finer answer would be the machine's noise.
        Some((i, true)) => match bound_above(steps, v[i].0) {
            Some(above) if !close(v[i].0, above) && !noise(v[i].0, above) => {
                Next::Try((v[i].0 + above) / 2.0)
            }
            _ => Next::Done,
        },
        // A lone pass: a rate just below it tells a band from luck (no
        // nearer than the precision to what missed below).
        Some((i, false)) => {
            let r = v[i].0;
            let below = if i > 0 { v[i - 1].0 } else { 0.0 };
            let probe = (r * (1.0 - precision)).max((below + r) / 2.0);
            if below > 0.0 && close(below, r) {
                // What missed below is too close to tell: nothing lower
                // held, so the lone pass is all there is.
                Next::Done
            } else {
                Next::Try(probe)
            }
        }
        // Nothing held: lower, down to 1/s.
        None => {
            let lowest = v.first().map_or(0.0, |x| x.0);
            if lowest / GROWTH >= 1.0 {
                Next::Try(lowest / GROWTH)
            } else {
                Next::Done
            }
        }
    }
}

/// Which side ran out where the answer ends: at the lowest rate above it
/// that failed (else at the saturation, the step the server fell behind
/// in that completed the most): the client or the server (at or over
/// `BOUND_PCT` of their CPUs), either, or neither (both well below: then
/// the limit is elsewhere); None before any such step.
fn limit(steps: &[Step], answer: Option<f64>) -> Option<String> {
    let sat = saturation(steps);
    let failed_above = answer.and_then(|a| {
        counted(steps)
            .filter(|s| s.rate_per_s > a && !s.undecided && !s.holds(sat))
            .min_by(|x, y| x.rate_per_s.total_cmp(&y.rate_per_s))
    });
    let s = failed_above.or_else(|| {
        counted(steps)
            .filter(|s| !s.kept_up)
            .max_by(|a, b| a.completed_per_s.total_cmp(&b.completed_per_s))
    })?;
    let bound = crate::outcome::BOUND_PCT;
    let at = format!("at {:.0}/s asked", s.rate_per_s);
    let client = s.client_cpu_pct?;
    Some(match s.server_cpu_pct {
        None if client >= bound => format!(
            "the client: it used {client:.0}% of the CPUs it may use {at} (the server's CPU was not observed)"
        ),
        None => format!(
            "not known: the client used {client:.0}% of the CPUs it may use {at}, and the server's CPU was not observed (--server-pid, --server-cmd or --server-cgroup)"
        ),
        Some(server) if client >= bound && server >= bound => format!(
            "either side: the client used {client:.0}% of its CPUs and the server {server:.0}% of its {at}"
        ),
        Some(server) if server >= bound => format!(
            "the server: it used {server:.0}% of its CPUs {at} (the client {client:.0}% of its)"
        ),
        Some(server) if client >= bound => format!(
            "the client: it used {client:.0}% of its CPUs {at} (the server {server:.0}% of its): a faster client would take the server further"
        ),
        Some(server) if client < WELL_BELOW_PCT && server < WELL_BELOW_PCT => format!(
            "neither side ran out of CPU {at} (the client {client:.0}%, the server {server:.0}% of its CPUs): the limit is elsewhere (latency, the network, locks or the protocol)"
        ),
        Some(server) => format!(
            "undecided: the client used {client:.0}% and the server {server:.0}% of their CPUs {at}, neither near all nor well below"
        ),
    })
}

#[cfg(test)]
mod tests;
