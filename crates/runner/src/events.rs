//! What a run tells the people watching it: the one channel through which
//! the runner speaks (it prints nothing itself).

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
    /// Every connection is ready: when the load starts (a load agent waits
    /// for its coordinator's instant here).
    fn agreed_start(&mut self) -> Start {
        Start::Now
    }
}

/// Events nobody watches.
pub struct Quiet;
impl Events for Quiet {}
