//! The engine's public values: what it runs ([`LoadConfig`]), who watches
//! ([`Observer`]), and what it reports ([`IntervalReport`], [`LoadOutcome`]).

use crate::recorder::IntervalData;
use crate::sampler::Sampler;
use std::time::Duration;
use wirebench_core::hist::{self, LatencyHist, LatencySummary};
use wirebench_core::result::{CoreBusy, GroupCpu, Interval, Phase};

/// What the engine runs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadConfig {
    pub clients: usize,
    pub conns_per_client: usize,
    /// Requests outstanding per connection (closed loop); for send-only
    /// transports, requests per send call.
    pub depth: usize,
    pub warmup: Duration,
    /// Length of the measured phase, unless `count` is set.
    pub duration: Duration,
    /// Operations to complete in the measured phase, over all connections.
    pub count: Option<u64>,
    /// Open loop: total requests per second over all connections, sent on a
    /// timetable whatever the responses do. None: closed loop.
    pub rate: Option<f64>,
    /// Open loop in stages: the rate over the measured phase (the warm-up
    /// at the first stage's opening rate); `rate` is then their mean.
    #[serde(default)]
    pub stages: Vec<wirebench_core::stages::Stage>,
    pub arrival: Arrival,
    /// Seeds the Poisson timetables (one stream per connection).
    pub seed: u64,
    /// Connections may finish before the run's end (they ran out of work):
    /// the run ends when all have.
    #[serde(default)]
    pub finite_work: bool,
    /// Busy-poll: the worker runtimes never sleep in the kernel.
    pub poll: bool,
    /// Worker `i` is pinned to `client_cpus[i % len]`; empty: not pinned.
    pub client_cpus: Vec<usize>,
    /// The coordinator's (a worker in another process needs none).
    #[serde(skip)]
    pub sampler: Sampler,
    pub interval: Duration,
    pub connect_timeout: Duration,
    /// A connection that waits this long for an operation to complete (a
    /// response, a send the peer does not take, a stream's next message)
    /// fails the run. Zero: no limit. Transports of typed operations (S3)
    /// apply it to each request's progress themselves.
    #[serde(default)]
    pub op_timeout: Duration,
    /// Run the hiccup meter (a probe thread on the first client CPU).
    #[serde(default)]
    pub hiccup: bool,
    /// A load agent's part of a run: its connections' numbers among the
    /// run's, which set their timetables and count quotas (see
    /// `wirebench_core::share`). None: all of them.
    #[serde(default)]
    pub share: Option<wirebench_core::share::ConnShare>,
}

impl LoadConfig {
    /// Open loop: the gap between one connection's requests, in ns (each
    /// connection keeps an even share of the rate); None in a closed loop.
    pub fn conn_gap_ns(&self) -> Option<u64> {
        let (_, total) = self.global_conn(0, 0);
        // In stages: the gap at the end of the last (what a connection
        // would have sent meanwhile when the run ends).
        let last = self.stages.last().map(|s| s.to_per_s).filter(|r| *r > 0.0);
        self.rate
            .map(|rate| (1e9 * total as f64 / last.unwrap_or(rate)) as u64)
    }

    /// The stages' profile from the load's start (None: no stages).
    pub fn profile(&self) -> Option<std::sync::Arc<wirebench_core::stages::Profile>> {
        (!self.stages.is_empty()).then(|| {
            std::sync::Arc::new(wirebench_core::stages::Profile::new(
                self.warmup,
                &self.stages,
            ))
        })
    }

    /// Connection `j` of client `id`: its number among the run's
    /// connections, and how many the run has.
    pub fn global_conn(&self, id: usize, j: usize) -> (u64, u64) {
        let local = (id * self.conns_per_client + j) as u64;
        match self.share {
            Some(s) => (s.first + local, s.total),
            None => (local, (self.clients * self.conns_per_client) as u64),
        }
    }
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            clients: 1,
            conns_per_client: 1,
            depth: 1,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
            count: None,
            rate: None,
            stages: Vec::new(),
            arrival: Arrival::Uniform,
            seed: 1,
            finite_work: false,
            poll: false,
            client_cpus: Vec::new(),
            sampler: Sampler::default(),
            interval: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(10),
            op_timeout: Duration::from_secs(10),
            hiccup: false,
            share: None,
        }
    }
}

pub use wirebench_core::spec::Arrival;

/// Why the caller wants the run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abort {
    Interrupted(String),
    Failed(String),
    /// End the load now, complete, for this reason (an objective missed
    /// with `--abort-on-fail`): the seconds measured so far are the run.
    Ended(String),
}

/// How the load ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndState {
    Complete,
    Interrupted(String),
    Failed(String),
    /// Complete, but ended early by the observer, for this reason.
    Ended(String),
}

/// One assembled interval of the series.
#[derive(Debug, Clone)]
pub struct IntervalReport {
    pub index: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub phase: Phase,
    pub data: IntervalData,
    pub client_cores: Vec<CoreBusy>,
    pub server_cores: Vec<CoreBusy>,
    /// The share of each core the server's threads used
    /// (`Interval::server_share`).
    pub server_share: Vec<CoreBusy>,
    /// The server's CPU by thread group.
    pub server_groups: Vec<GroupCpu>,
    /// The hiccup meter's wake-ups of the interval (their lateness).
    pub hiccup: Option<LatencyHist>,
}

impl IntervalReport {
    pub fn seconds(&self) -> f64 {
        (self.end_ns.saturating_sub(self.start_ns)) as f64 / 1e9
    }

    /// An interval as a run kept it ([`IntervalReport::point`]), back in
    /// the engine's form: its counters, latency histogram and cores (what
    /// a coordinator shows of its agents' seconds).
    pub fn from_point(index: usize, iv: &Interval) -> IntervalReport {
        let mut data = IntervalData::new();
        data.ops = iv.ops;
        data.sent = iv.sent;
        data.bytes_out = iv.bytes_out;
        data.bytes_in = iv.bytes_in;
        data.errors = iv.errors;
        if let Ok(h) = hist::decode(&iv.latency_hist) {
            data.hist = h;
        }
        IntervalReport {
            index,
            start_ns: iv.start_ns,
            end_ns: iv.end_ns,
            phase: iv.phase,
            data,
            client_cores: iv.client_cores.clone(),
            server_cores: iv.server_cores.clone(),
            server_share: iv.server_share.clone(),
            server_groups: vec![],
            hiccup: None,
        }
    }

    /// What a run keeps of the interval once it is reported: its counters,
    /// latency summaries and encoded histogram (a few KiB, where the
    /// histograms it came from take about a megabyte). Not yet judged:
    /// `stalled` is false.
    pub fn point(&self) -> Interval {
        let d = &self.data;
        let secs = self.seconds();
        let stalls = self.hiccup.as_ref().map(crate::hiccup::stalls);
        Interval {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            phase: self.phase,
            ops: d.ops,
            bytes_out: d.bytes_out,
            bytes_in: d.bytes_in,
            errors: d.errors,
            ops_per_s: if secs > 0.0 { d.ops as f64 / secs } else { 0.0 },
            sent: d.sent,
            latency: LatencySummary::of(&d.hist),
            service_latency: LatencySummary::of(&d.service),
            latency_hist: hist::encode(&d.hist),
            client_cores: self.client_cores.clone(),
            server_cores: self.server_cores.clone(),
            server_groups: self.server_groups.clone(),
            hiccup_max_ns: stalls.map(|s| s.0),
            hiccup_lost_ns: stalls.map(|s| s.1),
            stalled: false,
            partial: false,
            program_busy_pct: vec![],
            program_in_flight: None,
            server_share: self.server_share.clone(),
        }
    }
}

/// Watches a run from the coordinating thread.
pub trait Observer {
    /// Every connection is ready; the load starts.
    fn connected(&mut self, _connect_time_ns: u64) {}
    /// An interval is complete.
    fn interval(&mut self, _iv: &IntervalReport) {}
    /// Asked about every 50 ms: should the run stop?
    fn poll_abort(&mut self) -> Option<Abort> {
        None
    }
    /// Asked once every connection is ready: when the load starts. A load
    /// agent waits here for the instant its coordinator gives every agent.
    fn agreed_start(&mut self) -> Start {
        Start::Now
    }
}

/// When the load starts, once every connection is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// At once (a few milliseconds ahead, so every worker hears it first).
    Now,
    /// At this instant, agreed with others.
    At(std::time::Instant),
    /// Not at all.
    Abort(Abort),
}

/// An observer that watches nothing.
pub struct NoObserver;
impl Observer for NoObserver {}

/// Everything the engine measured.
#[derive(Debug)]
pub struct LoadOutcome {
    pub end: EndState,
    pub connect_time_ns: u64,
    /// The series, each interval kept as a point of the result: the engine
    /// holds no interval's histograms once it is reported, so its memory
    /// grows by a few KiB a second, not a megabyte.
    pub intervals: Vec<Interval>,
    /// Merge of the measured-phase intervals.
    pub measured: IntervalData,
    pub measured_ns: u64,
    pub client_cpu_s: f64,
    pub server_cpu_s: Option<f64>,
    /// Run-queue wait over the measured phase (from schedstat).
    pub client_runq_wait_s: Option<f64>,
    pub server_runq_wait_s: Option<f64>,
    /// The server's CPU by thread group over the measured phase.
    pub server_groups: Vec<GroupCpu>,
    /// The server's context switches over the measured phase
    /// (voluntary, involuntary).
    pub server_switches: Option<(u64, u64)>,
    /// Busy % of each client CPU over the measured phase.
    pub client_cores: Vec<CoreBusy>,
    /// The hiccup meter's wake-ups over the measured phase.
    pub hiccup: Option<LatencyHist>,
    /// exec: what the program reported (its latency statistics, where
    /// `measured` has no histogram of them, and its own rate).
    pub tool: Option<ToolOutcome>,
    /// When the measured phase began and ended (None: nothing measured),
    /// to place what a watch of the server's threads saw.
    pub measured_window: Option<(std::time::Instant, std::time::Instant)>,
    /// exec without per-second lines of its program: the CPU per core,
    /// second by second (empty otherwise).
    pub cpu_seconds: Vec<wirebench_core::result::CpuSecond>,
}

/// What an exec run's program reported, beside the counters of
/// [`LoadOutcome::measured`].
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub report: wirebench_core::result::ToolReport,
    /// The statistics it gave (the others zero, and absent by `report`).
    pub latency: LatencySummary,
    /// Its own rate, where it printed one (else ops / seconds).
    pub ops_per_s: Option<f64>,
}
