//! What a staged run measured (`--stages`): each stage's asked, sent
//! and completed rates and latency, a ramp's seconds in bands, and where
//! the ramps broke (the knee of the latency, each objective's rate of
//! failing for good). The types live here, apart from the stages as asked
//! (`stages`) and from the functions that make them (`judge`), so that a
//! run's result can hold them without importing what reads results.

pub mod judge;

use serde::{Deserialize, Serialize};

/// A stage of a staged run, as measured: what was asked, sent and
/// completed in the seconds it holds, and its latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageResult {
    /// 1 for the first.
    pub stage: usize,
    /// `30s:1k->20k/s`
    pub text: String,
    /// From the measured phase's start.
    pub start_s: f64,
    /// The seconds measured in it (its length, unless the run ended early).
    pub measured_s: f64,
    pub asked_per_s: f64,
    pub sent_per_s: f64,
    pub completed_per_s: f64,
    pub errors: u64,
    pub latency: crate::hist::LatencySummary,
    /// Requests due in the stage that had not left by its end: the
    /// generator (or the depth limit) fell behind by that many.
    pub late_sends: u64,
    /// Sent within 2% of what was asked.
    pub kept_up: bool,
    /// A closed loop's stage: the connections that sent in it (nothing was
    /// asked of a rate then: `asked_per_s` is 0, and it kept up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u64>,
    /// Requests due in earlier stages and not sent by this one's start:
    /// the backlog it inherited. They are not its rate (`sent_per_s`
    /// counts its own requests only), but its latency counts those sent in
    /// it (`backlog_sent`), each late since its own stage.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backlog_in: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backlog_sent: u64,
    /// A ramp's seconds in bands (at most [`MAX_BANDS`]), lowest time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<Band>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A ramp's rows, at most: its seconds are grouped into this many bands.
pub const MAX_BANDS: usize = 20;

/// Consecutive seconds of a ramp: what was asked, sent and completed in
/// them, and their latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// From the measured phase's start.
    pub start_s: f64,
    pub measured_s: f64,
    pub asked_per_s: f64,
    pub sent_per_s: f64,
    pub completed_per_s: f64,
    pub latency: crate::hist::LatencySummary,
}

/// Sent within this share of the asked rate: the stage kept up.
pub const KEPT_UP: f64 = 0.98;

/// Latency this many times its low-load level has left it.
pub const KNEE_FACTOR: f64 = 2.0;

/// Where a run's ramps broke: the knee of its latency, and each objective's
/// rate of failing for good. Judged over its points (each band of a ramp,
/// each constant stage), ordered by the rate asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampVerdict {
    /// None: the latency never left its level, or the knee is undecided
    /// (`knee_undecided` says why).
    pub knee: Option<Knee>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_undecided: Option<String>,
    /// The highest rate asked of any point.
    pub max_asked_per_s: f64,
    /// The points' number.
    pub points: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<SloBreak>,
}

/// The rate at which the median latency left its low-load level for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The low-load level of p50: its median over the lowest quarter of
    /// the rates asked (two points at least).
    pub low_p50_ns: u64,
    /// The highest rate asked still under KNEE_FACTOR times that level...
    pub last_low_per_s: f64,
    /// ...and the lowest from which every higher rate stayed over it: the
    /// knee lies between the two (its uncertainty).
    pub first_high_per_s: f64,
    /// Their midpoint: the answer.
    pub rate_per_s: f64,
    /// The p50 at `first_high_per_s`.
    pub high_p50_ns: u64,
    /// The most completed per second at any point from the knee on: what
    /// the server did at most once overloaded.
    pub max_completed_per_s: f64,
}

/// An objective over a ramp's points: from which rate it failed for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloBreak {
    pub slo: String,
    /// The lowest rate asked from which every point failed (None: the last
    /// point held).
    pub failed_from_per_s: Option<f64>,
    /// The highest rate below it that held (None: none did).
    pub held_to_per_s: Option<f64>,
    /// Points that failed below `failed_from_per_s` (a miss that did not
    /// last: a wake-up at a low rate, a stall).
    pub failed_below: usize,
}
