//! A worker's counters and latency histogram for the current interval. One
//! per worker thread, shared by its connection tasks (same thread, so a
//! RefCell, no atomics); the worker's ticker takes a snapshot at each
//! interval boundary.

use std::collections::BTreeMap;
use wirebench_core::hist::{self, LatencyHist};

/// Counters of one operation type (S3: get, put...), for transports whose
/// connections perform typed operations ([`crate::calls`]).
#[derive(Debug, Clone)]
pub struct OpData {
    /// Operations that succeeded (failures are in `errors`, not in the histograms).
    pub ops: u64,
    pub errors: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub hist: LatencyHist,
    /// Time to first byte, from the same start as `hist`.
    pub ttfb: LatencyHist,
    /// How many operations had a first byte (the size of `ttfb`).
    pub ttfb_count: u64,
    /// Connections opened by the operations themselves (HTTP churn, a
    /// reconnect): connect and TLS handshake times, made on first use.
    pub connect: Option<Box<LatencyHist>>,
    pub tls: Option<Box<LatencyHist>>,
    /// Status codes by class (HTTP): index 1 to 5 for 1xx to 5xx, 0 for
    /// any other code.
    pub statuses: [u64; 6],
}

impl Default for OpData {
    fn default() -> Self {
        OpData {
            ops: 0,
            errors: 0,
            bytes_out: 0,
            bytes_in: 0,
            hist: hist::new_hist(),
            ttfb: hist::new_hist(),
            ttfb_count: 0,
            connect: None,
            tls: None,
            statuses: [0; 6],
        }
    }
}

impl OpData {
    pub fn merge(&mut self, o: &OpData) {
        self.ops += o.ops;
        self.errors += o.errors;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.ttfb_count += o.ttfb_count;
        for (mine, theirs) in self.statuses.iter_mut().zip(o.statuses) {
            *mine += theirs;
        }
        self.hist.add(&o.hist).expect("histograms share bounds");
        self.ttfb.add(&o.ttfb).expect("histograms share bounds");
        for (mine, theirs) in [(&mut self.connect, &o.connect), (&mut self.tls, &o.tls)] {
            if let Some(h) = theirs {
                mine.get_or_insert_with(|| Box::new(hist::new_hist()))
                    .add(h.as_ref())
                    .expect("histograms share bounds");
            }
        }
    }
}

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
    /// Per operation type (typed-operation transports only; else empty).
    pub by_op: BTreeMap<&'static str, OpData>,
    /// Failed operations by cause ("404 NoSuchKey"); their sum is `errors`.
    pub failures: BTreeMap<String, u64>,
    /// Time the open-loop timers spun on purpose before their deadlines.
    pub timer_spin_ns: u64,
    /// Open loop: how late each request left after its intended send time
    /// (the schedule's lag); None in a closed loop.
    pub lag: Option<Box<LatencyHist>>,
    /// A run against several endpoints: what each one's connections did,
    /// by the endpoint's number (its lane). Empty with one endpoint.
    pub lanes: BTreeMap<usize, LaneData>,
}

/// What the connections to one of a run's endpoints did.
#[derive(Debug, Clone)]
pub struct LaneData {
    /// Operations that succeeded (failures are in `errors`).
    pub ops: u64,
    pub errors: u64,
    /// Latency, as in [`IntervalData::hist`].
    pub hist: LatencyHist,
}

impl Default for LaneData {
    fn default() -> Self {
        LaneData {
            ops: 0,
            errors: 0,
            hist: hist::new_hist(),
        }
    }
}

impl LaneData {
    pub fn merge(&mut self, o: &LaneData) {
        self.ops += o.ops;
        self.errors += o.errors;
        self.hist.add(&o.hist).expect("histograms share bounds");
    }
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
            by_op: BTreeMap::new(),
            failures: BTreeMap::new(),
            timer_spin_ns: 0,
            lag: None,
            lanes: BTreeMap::new(),
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
        self.timer_spin_ns += o.timer_spin_ns;
        self.hist.add(&o.hist).expect("histograms share bounds");
        self.service
            .add(&o.service)
            .expect("histograms share bounds");
        for (k, v) in &o.by_op {
            self.by_op.entry(k).or_default().merge(v);
        }
        if let Some(h) = &o.lag {
            self.lag
                .get_or_insert_with(|| Box::new(hist::new_hist()))
                .add(h.as_ref())
                .expect("histograms share bounds");
        }
        for (k, v) in &o.lanes {
            self.lanes.entry(*k).or_default().merge(v);
        }
        for (k, v) in &o.failures {
            let key = if self.failures.contains_key(k) || self.failures.len() < MAX_CAUSES {
                k.as_str()
            } else {
                OTHER_CAUSES
            };
            *self.failures.entry(key.to_string()).or_default() += v;
        }
    }
}

impl Default for IntervalData {
    fn default() -> Self {
        IntervalData::new()
    }
}

pub use wirebench_core::result::UNANSWERED;

/// The live recorder of one worker.
#[derive(Debug, Default)]
pub struct Recorder {
    cur: IntervalData,
    /// The lane of the connection recording now (several endpoints only):
    /// its operations, errors and latencies are also counted there.
    lane: Option<usize>,
    /// An open loop's recorder: it also records each request's lag.
    open_loop: bool,
}

impl Recorder {
    /// A recorder of an open loop (`open_loop`) or a closed one.
    pub fn new(open_loop: bool) -> Recorder {
        Recorder {
            open_loop,
            ..Recorder::default()
        }
    }

    /// What is recorded from now on is also the lane's (None: no lanes).
    /// The engine sets it each time a connection takes the recorder.
    #[inline]
    pub fn set_lane(&mut self, lane: Option<usize>) {
        self.lane = lane;
    }

    fn lane_data(&mut self) -> Option<&mut LaneData> {
        let lane = self.lane?;
        Some(self.cur.lanes.entry(lane).or_default())
    }

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
            if self.open_loop {
                // Latency runs from the intended send, service from the
                // send: their difference is how late the request left.
                self.cur
                    .lag
                    .get_or_insert_with(|| Box::new(hist::new_hist()))
                    .saturating_record_n((l - s.min(l)).max(1), n);
            }
            if let Some(d) = self.lane_data() {
                d.hist.saturating_record_n(l, n);
            }
        }
    }

    #[inline]
    pub fn completed(&mut self, ops: u64) {
        self.cur.ops += ops;
        if let Some(d) = self.lane_data() {
            d.ops += ops;
        }
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
        if let Some(d) = self.lane_data() {
            d.errors += 1;
        }
    }

    /// Time a timer spun on purpose (open loop), not counted as load.
    #[inline]
    pub fn spun(&mut self, d: std::time::Duration) {
        self.cur.timer_spin_ns += d.as_nanos() as u64;
    }

    /// Records one typed operation that succeeded: its latency, service
    /// time and time to first byte (if it had one).
    pub fn op_done(&mut self, op: &'static str, t: OpTimes, bytes_out: u64, bytes_in: u64) {
        self.timing(t.latency_ns, t.service_ns, 1);
        self.completed(1);
        let d = self.cur.by_op.entry(op).or_default();
        d.ops += 1;
        d.bytes_out += bytes_out;
        d.bytes_in += bytes_in;
        d.hist
            .saturating_record(t.latency_ns.clamp(1, hist::MAX_TRACKED_NS));
        if let Some(f) = t.ttfb_ns {
            d.ttfb.saturating_record(f.clamp(1, hist::MAX_TRACKED_NS));
            d.ttfb_count += 1;
        }
        for (h, ns) in [(&mut d.connect, t.connect_ns), (&mut d.tls, t.tls_ns)] {
            if let Some(ns) = ns {
                h.get_or_insert_with(|| Box::new(hist::new_hist()))
                    .saturating_record(ns.clamp(1, hist::MAX_TRACKED_NS));
            }
        }
    }

    /// Counts an operation's status code (HTTP) by class, whether the
    /// operation succeeded or failed.
    pub fn op_status(&mut self, op: &'static str, code: u16) {
        let class = match code / 100 {
            c @ 1..=5 => usize::from(c),
            _ => 0,
        };
        self.cur.by_op.entry(op).or_default().statuses[class] += 1;
    }

    /// Records one typed operation that failed, by cause.
    pub fn op_failed(&mut self, op: &'static str, cause: &str) {
        self.error();
        self.cur.by_op.entry(op).or_default().errors += 1;
        let full = self.cur.failures.len() >= MAX_CAUSES;
        match self.cur.failures.get_mut(cause) {
            Some(n) => *n += 1,
            // Causes come from the server: their number is capped, so that
            // memory stays bounded whatever it answers.
            None if full => {
                *self.cur.failures.entry(OTHER_CAUSES.into()).or_default() += 1;
            }
            None => {
                self.cur.failures.insert(cause.to_string(), 1);
            }
        }
    }

    /// The slowest latency and the operations recorded in the interval
    /// under way.
    pub fn so_far(&self) -> (u64, u64) {
        (self.cur.hist.max(), self.cur.ops)
    }

    /// Records what a connection left unanswered at the end of the run:
    /// `outstanding` requests counted as failed ([`UNANSWERED`]), and in
    /// the latency histogram the requests it would have had answered at
    /// its pace while it waited (one every `gap_ns`, each as late as it
    /// waited then: coordinated omission, as an open loop counts it); one
    /// value of its wait per request without a pace.
    pub fn unanswered(&mut self, waited_ns: u64, gap_ns: Option<u64>, outstanding: u64) {
        self.cur.errors += outstanding;
        *self.cur.failures.entry(UNANSWERED.into()).or_default() += outstanding;
        let waited = waited_ns.clamp(1, hist::MAX_TRACKED_NS);
        let (lo, count) = match gap_ns.filter(|&g| g > 0 && g <= waited) {
            Some(g) => (g, (waited / g).max(outstanding)),
            None => (waited, outstanding),
        };
        hist::record_spread(&mut self.cur.hist, lo, waited, count);
        if let Some(d) = self.lane_data() {
            d.errors += outstanding;
            hist::record_spread(&mut d.hist, lo, waited, count);
        }
    }

    /// Ends the current interval: returns its data and starts a new one.
    pub fn take(&mut self) -> IntervalData {
        std::mem::take(&mut self.cur)
    }
}

/// The most distinct failure causes kept per interval; the rest are counted
/// together under [`OTHER_CAUSES`].
pub const MAX_CAUSES: usize = 64;
pub const OTHER_CAUSES: &str = "other causes";

/// The times of one typed operation, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct OpTimes {
    /// From the intended start (open loop) or the start (closed loop).
    pub latency_ns: u64,
    /// From the actual start.
    pub service_ns: u64,
    /// To the first byte, from the same start as `latency_ns`.
    pub ttfb_ns: Option<u64>,
    /// The connection the operation opened first: connect, TLS handshake.
    pub connect_ns: Option<u64>,
    pub tls_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_causes_are_capped() {
        let mut r = Recorder::default();
        for i in 0..1000 {
            r.op_failed("get", &format!("5{i:02} Weird{i}"));
        }
        let d = r.take();
        assert_eq!(d.errors, 1000);
        assert_eq!(d.failures.values().sum::<u64>(), 1000);
        assert!(d.failures.len() <= MAX_CAUSES + 1);
        assert_eq!(d.failures[OTHER_CAUSES], 1000 - MAX_CAUSES as u64);
    }

    #[test]
    fn merged_failure_causes_stay_capped() {
        let mut all = IntervalData::new();
        for k in 0..10 {
            let mut r = Recorder::default();
            for i in 0..MAX_CAUSES {
                r.op_failed("put", &format!("cause {k}-{i}"));
            }
            all.merge(&r.take());
        }
        assert!(all.failures.len() <= MAX_CAUSES + 1);
        assert_eq!(all.failures.values().sum::<u64>(), 10 * MAX_CAUSES as u64);
    }
}
