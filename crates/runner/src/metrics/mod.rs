//! Live metrics (`--metrics-listen ADDR`): what a run, a search or a
//! coordinator has measured so far, served over HTTP for Prometheus to
//! scrape while the work goes on.
//!
//! Every second that the load engine reports is added to cumulative
//! counters and histograms, one set per agent (a coordinator serves its
//! agents' seconds, each under its `agent` label: summed, they are the
//! merged run) and per phase (`warmup`, `measure`: the measured phase alone
//! is what run.json summarises). Every series exists from the start, at 0,
//! so that a scraper's first sample is the baseline of the ones after it.
//!
//! Latency is a histogram with classic buckets at 2^(k/4) seconds (about
//! 19% apart) and, where the scraper asks for protobuf, Prometheus's native
//! exponential form too (schema 3, about 9% apart). Both come from the
//! load engine's HDR histograms; what [`expose`] writes is checked against
//! them by its tests.
//!
//! The listener ([`listen`]) binds what it is told; an address that is not
//! loopback needs a bearer token. It bounds its peers (connections,
//! request size, time) and serves `GET /metrics` only.

pub mod board;
pub mod expose;
pub mod flags;
pub mod listen;

use wirebench_core::result::Interval;
use wirebench_load::engine::IntervalReport;

pub use board::{Board, MAX_AGENTS, MAX_CAUSES, MAX_OPERATIONS, RunLabels, Shared, Totals};
pub use listen::{Listener, MetricsOptions};

/// What a command does with its seconds when metrics are served: the
/// console (or any watcher) calls these beside its own work.
pub struct Exporter {
    board: Shared,
    listener: Listener,
    /// Seconds of a coordinator's agents were seen: its merged seconds
    /// (the same operations) are not added again.
    agents_seen: bool,
    /// The run's agents' addresses (their series are made at 0 up front).
    agents: Vec<String>,
    warmup_ns: u64,
    stages: Vec<wirebench_core::stages::Stage>,
    /// The CPUs the serving thread was kept to, off the client's (None:
    /// not moved: the client may use every CPU).
    serving_on: Option<Vec<usize>>,
}

impl Exporter {
    /// Binds and starts serving (an empty board until a run starts).
    pub fn start(opts: &MetricsOptions) -> std::io::Result<Exporter> {
        let board = Shared::default();
        board.with(|b| {
            b.labels.run = 1;
            b.labels.point.clone_from(&opts.point);
        });
        let listener = Listener::start(opts, board.clone())?;
        Ok(Exporter {
            board,
            listener,
            agents_seen: false,
            agents: Vec::new(),
            warmup_ns: 0,
            stages: Vec::new(),
            serving_on: None,
        })
    }

    /// The exporter `flags` ask for, listening; the error of a refused
    /// address is a usage error (Err(Ok)), of a failed bind an I/O one.
    pub fn of_flags(
        flags: &wirebench_core::live::LiveFlags,
    ) -> Result<Option<Exporter>, Result<String, std::io::Error>> {
        let Some(opts) = flags::options(flags) else {
            return Ok(None);
        };
        opts.check().map_err(Ok)?;
        Exporter::start(&opts).map(Some).map_err(Err)
    }

    /// The CPUs its serving thread runs on, off the client's (None: not
    /// moved, the client may use every CPU this process may).
    pub fn serving_on(&self) -> Option<&[usize]> {
        self.serving_on.as_deref()
    }

    /// Where it listens (the port chosen, when 0 was asked).
    pub fn addr(&self) -> std::net::SocketAddr {
        self.listener.addr()
    }

    /// A run's session is open: its labels, and its series at 0.
    ///
    /// Returns what to tell the user when scrapes must be served on the
    /// client's CPUs (it may use every CPU), else None.
    pub fn started(&mut self, spec: &wirebench_core::spec::RunSpec) -> Option<String> {
        // Serving scrapes takes CPU: not the client's, where there is other.
        self.serving_on = self.listener.keep_off(spec.client_cpus.cpus());
        self.warmup_ns = spec.warmup_ns;
        self.stages = spec.stages.clone();
        self.agents = spec.agents.iter().map(|a| a.address.clone()).collect();
        self.next_run();
        self.board
            .with(|b| b.labels.transport = spec.kind().name().to_string());
        (self.serving_on.is_none() && !spec.client_cpus.is_empty()).then(|| {
            format!(
                "metrics: scrapes are served on the client's CPUs ({}): the client may use every CPU; each scrape takes a little of its time",
                spec.client_cpus
            )
        })
    }

    /// Every connection is ready: the load starts (a search's step, a
    /// repetition: each is a run of its own).
    pub fn connected(&mut self) {
        self.next_run();
        self.board.with(|b| b.running = true);
    }

    /// A new `run` label and series at 0, unless the board's run has
    /// measured nothing yet. The run before keeps its series no more: its
    /// last figures were scraped while it ran (and held at the end).
    fn next_run(&mut self) {
        self.agents_seen = false;
        let first_stage = stage_at(&self.stages, None);
        self.board.with(|b| {
            if b.seconds > 0 {
                let labels = RunLabels {
                    run: b.labels.run + 1,
                    ..b.labels.clone()
                };
                *b = Board {
                    labels,
                    ..Board::default()
                };
            }
            if self.agents.is_empty() {
                b.ensure("");
            }
            for agent in &self.agents {
                b.ensure(agent);
            }
            b.stage = first_stage;
        });
    }

    /// A second of the local run, or a coordinator's merged second (left
    /// out once its agents' own seconds came: see [`Exporter::agent_interval`]).
    pub fn interval(&mut self, iv: &IntervalReport) {
        if self.agents_seen {
            return;
        }
        let stage = self.stage_at(iv);
        let point = iv.point();
        self.board.with(|b| {
            b.add("", iv, &point);
            b.stage = stage.or(b.stage);
        });
    }

    /// A second of one of a coordinator's agents.
    pub fn agent_interval(&mut self, agent: &str, iv: &Interval, live: &crate::events::LiveSecond) {
        self.agents_seen = true;
        let report = report_of(iv, live);
        let stage = self.stage_at(&report);
        self.board.with(|b| {
            b.last.remove("");
            b.totals.retain(|(a, _), _| !a.is_empty());
            b.add(agent, &report, iv);
            b.stage = stage.or(b.stage);
        });
    }

    /// The run ended (saved or not): the page keeps its figures, and says
    /// that nothing runs.
    pub fn ended(&mut self) {
        self.board.with(|b| b.running = false);
    }

    /// Serves the final figures for `--metrics-hold`, then stops.
    pub fn finish(self) {
        self.board.with(|b| b.running = false);
        self.listener.finish();
    }

    fn stage_at(&self, iv: &IntervalReport) -> Option<(usize, f64)> {
        stage_at(&self.stages, iv.end_ns.checked_sub(self.warmup_ns))
    }
}

/// The stage (from 1; 0 in the warm-up: `since_measure` None) and the rate
/// it asks, `since_measure` ns into the measured phase.
fn stage_at(
    stages: &[wirebench_core::stages::Stage],
    since_measure: Option<u64>,
) -> Option<(usize, f64)> {
    let first = stages.first()?;
    if wirebench_core::stages::closed(stages) {
        // A closed loop's stages ask connections: no rate (NaN, left off
        // the page).
        let mut at = 0;
        let t = since_measure.unwrap_or(0);
        for (i, s) in stages.iter().enumerate() {
            at += s.duration_ns;
            if t <= at || i + 1 == stages.len() {
                return Some((usize::from(since_measure.is_some()) * (i + 1), f64::NAN));
            }
        }
    }
    let Some(mut t) = since_measure else {
        return Some((0, first.from_per_s));
    };
    for (i, s) in stages.iter().enumerate() {
        if t <= s.duration_ns {
            let f = t as f64 / s.duration_ns.max(1) as f64;
            return Some((i + 1, s.from_per_s + (s.to_per_s - s.from_per_s) * f));
        }
        t -= s.duration_ns;
    }
    let last = stages.last().expect("not empty");
    Some((stages.len(), last.to_per_s))
}

/// An agent's second, as the load engine would have reported it: its
/// counters, latency histogram, schedule lag and errors by cause (its
/// operation kinds stay with the agent).
fn report_of(iv: &Interval, live: &crate::events::LiveSecond) -> IntervalReport {
    let mut r = IntervalReport::from_point(0, iv);
    if let Some(lag) = &live.lag_hist
        && let Ok(h) = wirebench_core::hist::decode(lag)
    {
        r.data.lag = Some(Box::new(h));
    }
    r.data.failures.clone_from(&live.causes);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_and_its_asked_rate_follow_the_measured_phase() {
        let stages = wirebench_core::stages::parse("2s:1k/s, 4s:1k->3k/s").unwrap();
        let s = 1_000_000_000;
        assert_eq!(stage_at(&[], Some(s)), None);
        assert_eq!(stage_at(&stages, None), Some((0, 1000.0)));
        assert_eq!(stage_at(&stages, Some(s)), Some((1, 1000.0)));
        assert_eq!(stage_at(&stages, Some(4 * s)), Some((2, 2000.0)));
        assert_eq!(stage_at(&stages, Some(6 * s)), Some((2, 3000.0)));
        assert_eq!(stage_at(&stages, Some(9 * s)), Some((2, 3000.0)));
    }

    #[test]
    fn a_coordinators_board_counts_each_agent_once_and_sums_to_the_run() {
        let mut b = Board::default();
        for agent in ["a:1", "b:2"] {
            b.ensure(agent);
        }
        let iv = wirebench_core::result::fixture::interval(0, 10.0, 100_000);
        let live = crate::events::LiveSecond::default();
        b.add("a:1", &report_of(&iv, &live), &iv);
        b.add("b:2", &report_of(&iv, &live), &iv);
        let ops: u64 = b.totals.values().map(|t| t.ops).sum();
        let count: u64 = b.totals.values().map(|t| t.latency.len()).sum();
        assert_eq!((ops, count), (20, 20));
        // Both phases of both agents, from the start.
        assert_eq!(b.totals.len(), 4);
    }

    #[test]
    fn an_agents_lag_and_error_causes_reach_the_page() {
        let mut lag = wirebench_core::hist::new_hist();
        lag.record_n(20_000, 5).unwrap();
        let live = crate::events::LiveSecond {
            lag_hist: Some(wirebench_core::hist::encode(&lag)),
            causes: [("503 SlowDown".to_string(), 2)].into_iter().collect(),
        };
        let mut iv = wirebench_core::result::fixture::interval(0, 10.0, 100_000);
        iv.errors = 3;
        let mut b = Board::default();
        b.add("a:1", &report_of(&iv, &live), &iv);
        let t = &b.totals[&("a:1".to_string(), iv.phase)];
        assert_eq!(t.lag.as_ref().map(|h| h.len()), Some(5));
        // The causes named, and the error the agent named none for.
        assert_eq!(t.causes["503 SlowDown"], 2);
        assert_eq!(t.causes["other"], 1);
    }
}
