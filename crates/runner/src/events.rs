//! What a run tells the people watching it: the one channel through which
//! the runner speaks (it prints nothing itself).

use wirebench_load::engine::IntervalReport;

/// What a run tells the people watching it. Every method does nothing by
/// default.
pub trait Events {
    /// A line of what is happening (S3's prepare and cleanup, traces).
    fn note(&mut self, _text: &str) {}
    /// Every connection is ready; the load starts.
    fn connected(&mut self, _connect_time_ns: u64) {}
    /// A second (an interval) of the load is complete.
    fn interval(&mut self, _iv: &IntervalReport) {}
}

/// Events nobody watches.
pub struct Quiet;
impl Events for Quiet {}
