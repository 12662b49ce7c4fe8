//! What a run tells the people watching it: the one channel through which
//! the runner speaks (it prints nothing itself).

use std::path::Path;
use wirebench_core::result::{Interval, Placement, RunResult};
use wirebench_core::slo::Slo;
use wirebench_core::spec::{Endpoint, RunSpec};
use wirebench_load::engine::{IntervalReport, Start};

/// What a run tells the people watching it. Every method does nothing by
/// default.
pub trait Events {
    /// A line of what is happening (S3's prepare and cleanup, traces).
    fn note(&mut self, _text: &str) {}
    /// Every connection is ready; the load starts.
    fn connected(&mut self, _connect_time_ns: u64) {}
    /// A second (an interval) of the load is complete.
    fn interval(&mut self, _iv: &IntervalReport) {}
    /// A coordinator's agent reported a second, with what live metrics
    /// show of it besides (before the merged second of all its agents
    /// comes to [`Events::interval`]).
    fn agent_interval(&mut self, _agent: &str, _iv: &Interval, _live: &LiveSecond) {}
    /// Every connection is ready: when the load starts (a load agent waits
    /// for its coordinator's instant here).
    fn agreed_start(&mut self) -> Start {
        Start::Now
    }
}

/// Events nobody watches.
pub struct Quiet;
impl Events for Quiet {}

/// What `run` tells the people watching, besides a session's events.
pub trait RunEvents: Events {
    /// The session is open: what runs, and where.
    fn started(
        &mut self,
        _spec: &RunSpec,
        _placement: &Placement,
        _endpoint: &Endpoint,
        _server_pid: Option<u32>,
    ) {
    }
    /// Repetition `k` (from 1) of `n` begins.
    fn repetition(&mut self, _k: usize, _n: usize) {}
    /// A run is saved in `dir`.
    fn saved(&mut self, _r: &RunResult, _dir: &Path, _slos: &[Slo]) {}
}

/// What live metrics show of an agent's second beyond what a run keeps:
/// its open loop's schedule lag and its errors by cause.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LiveSecond {
    /// The schedule lag's histogram (`hist::encode`); None in a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_hist: Option<String>,
    /// Failed operations by cause, at most [`LIVE_CAUSES`] (the rest are
    /// the second's errors beyond them).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub causes: std::collections::BTreeMap<String, u64>,
}

/// The most causes an agent sends with a second.
pub const LIVE_CAUSES: usize = 32;

impl LiveSecond {
    /// Of a second as the load engine reported it.
    pub fn of(iv: &wirebench_load::engine::IntervalReport) -> LiveSecond {
        let d = &iv.data;
        LiveSecond {
            lag_hist: d.lag.as_deref().map(wirebench_core::hist::encode),
            causes: d
                .failures
                .iter()
                .take(LIVE_CAUSES)
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }
}
