//! `search`: the highest rate a server takes within its objectives.
//! Open-loop steps against one server: a coarse phase (x1.5 per step)
//! until a step misses an objective or the server cannot keep up, then
//! bisection down to `precision`. Every step is a full result kept under
//! `<results>/search-<id>/`, with `search.json` beside them.

use crate::RunError;
use crate::process::Cancel;
use crate::record::Recorder;
use crate::session::{Events, Session, SessionOptions};
use serde::Serialize;
use std::path::PathBuf;
use wirebench_core::request::{RunRequest, SpecError};
use wirebench_core::result::RunState;
use wirebench_core::slo::SloOutcome;
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

/// One open-loop step.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub rate_per_s: f64,
    pub sent_per_s: f64,
    pub completed_per_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub slos: Vec<SloOutcome>,
    /// Every objective met with the headroom, and the server kept up
    /// (completed >= 95% of the rate).
    pub pass: bool,
    /// The server completed at least 95% of the rate.
    pub kept_up: bool,
    pub run_id: String,
}

/// What `search.json` holds.
#[derive(Debug, Serialize)]
pub struct SearchResult {
    pub slos: Vec<String>,
    pub headroom: f64,
    pub steps: Vec<Step>,
    /// The highest rate that met every objective with the headroom, twice.
    pub best_rate_per_s: Option<f64>,
    /// The most operations per second completed in any step.
    pub saturation_ops_per_s: f64,
    pub interrupted: bool,
    /// Where the steps are.
    #[serde(skip)]
    pub dir: PathBuf,
}

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
    if settings.max_steps < 2 {
        return Err(bad(
            "--max-steps",
            format!("{} must be at least 2", settings.max_steps),
        ));
    }
    let (mut spec, placement) = req.check(topo)?;
    if !spec.transport.has_response() {
        return Err(bad(
            "--mode",
            format!(
                "{}: search needs responses (echo or rr)",
                spec.transport.mode_name()
            ),
        ));
    }
    if req.depth.is_none() {
        spec.depth = 1024;
    }
    let dir = req.results_dir().join(store::new_run_id("search"));
    let recorder = Recorder {
        root: dir.clone(),
        command_line,
        slos: slos.clone(),
    };
    let mut session = Session::open(&spec, opts, cancel, events)?;
    let texts: Vec<String> = slos.iter().map(|s| s.text.clone()).collect();
    events.started(&texts, session.endpoint());
    let mut steps: Vec<Step> = Vec::new();
    let mut lo: Option<f64> = None;
    let mut rate = settings.start_rate;
    let mut interrupted = false;
    while steps.len() < settings.max_steps {
        spec.rate_per_s = Some(rate);
        let mut r = session.measure(&spec, &placement, events);
        recorder.save(
            &mut r,
            &format!("step{}", steps.len() + 1),
            store::now_rfc3339(),
        )?;
        if r.status.state != RunState::Complete {
            interrupted = r.status.state == RunState::Interrupted || session.interrupted();
            if !interrupted {
                session.close(None, events);
                return Err(RunError::Failed(format!(
                    "step at {rate:.0}/s failed: {}",
                    r.status.reason.unwrap_or_default()
                )));
            }
            break;
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
            slos: r.slos.clone(),
            run_id: r.run_id.clone(),
        };
        events.step(steps.len() + 1, &step);
        steps.push(step);
        // The lowest rate that missed, and the highest that passed below it.
        let hi = steps
            .iter()
            .filter(|s| !s.pass)
            .map(|s| s.rate_per_s)
            .min_by(f64::total_cmp);
        lo = steps
            .iter()
            .filter(|s| s.pass && hi.is_none_or(|h| s.rate_per_s < h))
            .map(|s| s.rate_per_s)
            .max_by(f64::total_cmp);
        // Coarse phase: up by half until the server falls behind, which
        // measures the saturation throughput; then bisection on the
        // objectives between the highest passing and the lowest failing rate.
        let saturated = steps
            .iter()
            .any(|s| s.completed_per_s < 0.95 * s.rate_per_s);
        rate = match (lo, hi) {
            _ if !saturated => steps.iter().map(|s| s.rate_per_s).fold(0.0, f64::max) * 1.5,
            (Some(l), None) => l * 1.5,
            (None, Some(h)) => h / 2.0,
            (Some(l), Some(h)) if h / l - 1.0 > settings.precision => (l + h) / 2.0,
            // Bracketed: the best rate must pass twice, the machine being
            // noisy; if the second try misses, the search goes on below it.
            (Some(l), Some(_))
                if steps.iter().filter(|s| s.pass && s.rate_per_s == l).count() < 2 =>
            {
                l
            }
            _ => break,
        };
    }
    session.close(None, events);
    let result = SearchResult {
        slos: texts,
        headroom: settings.headroom,
        saturation_ops_per_s: steps.iter().map(|s| s.completed_per_s).fold(0.0, f64::max),
        best_rate_per_s: lo,
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
