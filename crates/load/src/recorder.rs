//! A worker's counters and latency histogram for the current interval. One
//! per worker thread, shared by its connection tasks (same thread, so a
//! RefCell, no atomics); the worker's ticker takes a snapshot at each
//! interval boundary.

use wirebench_core::hist::{self, LatencyHist};

/// Counters of one interval.
#[derive(Debug, Clone)]
pub struct IntervalData {
    pub ops: u64,
    pub sent: u64,
    pub received: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub errors: u64,
    /// Latency: from the intended send time (open loop) or the send (closed loop).
    pub hist: LatencyHist,
    /// Service time: from the actual send. Equals `hist` in closed loop.
    pub service: LatencyHist,
}

impl IntervalData {
    pub fn new() -> IntervalData {
        IntervalData {
            ops: 0,
            sent: 0,
            received: 0,
            bytes_out: 0,
            bytes_in: 0,
            errors: 0,
            hist: hist::new_hist(),
            service: hist::new_hist(),
        }
    }

    /// Adds another interval's counts (exact histogram merge).
    pub fn merge(&mut self, o: &IntervalData) {
        self.ops += o.ops;
        self.sent += o.sent;
        self.received += o.received;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.errors += o.errors;
        self.hist.add(&o.hist).expect("histograms share bounds");
        self.service
            .add(&o.service)
            .expect("histograms share bounds");
    }
}

impl Default for IntervalData {
    fn default() -> Self {
        IntervalData::new()
    }
}

/// The live recorder of one worker.
#[derive(Debug, Default)]
pub struct Recorder {
    cur: IntervalData,
}

impl Recorder {
    /// Records `n` operations with the same latency and service time.
    #[inline]
    pub fn timing(&mut self, latency_ns: u64, service_ns: u64, n: u64) {
        if n > 0 {
            let (l, s) = (
                latency_ns.clamp(1, hist::MAX_TRACKED_NS),
                service_ns.clamp(1, hist::MAX_TRACKED_NS),
            );
            self.cur.hist.saturating_record_n(l, n);
            self.cur.service.saturating_record_n(s, n);
        }
    }

    #[inline]
    pub fn completed(&mut self, ops: u64) {
        self.cur.ops += ops;
    }

    #[inline]
    pub fn sent(&mut self, msgs: u64, bytes: u64) {
        self.cur.sent += msgs;
        self.cur.bytes_out += bytes;
    }

    #[inline]
    pub fn received(&mut self, msgs: u64, bytes: u64) {
        self.cur.received += msgs;
        self.cur.bytes_in += bytes;
    }

    pub fn error(&mut self) {
        self.cur.errors += 1;
    }

    /// Ends the current interval: returns its data and starts a new one.
    pub fn take(&mut self) -> IntervalData {
        std::mem::take(&mut self.cur)
    }
}
