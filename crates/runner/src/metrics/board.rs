//! The figures the page shows: the seconds so far, per agent and phase.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use wirebench_core::hist::LatencyHist;
use wirebench_core::result::{CoreBusy, Interval, Phase};
use wirebench_load::engine::IntervalReport;

/// The most failure causes kept apart per series; the rest are counted
/// under `other` (a peer chooses its error texts: they must not grow the
/// page without bound).
pub const MAX_CAUSES: usize = 32;
/// The most operation kinds kept apart per series (typed transports have a
/// handful).
pub const MAX_OPERATIONS: usize = 16;
/// The most agents a coordinator's page names.
pub const MAX_AGENTS: usize = 1024;

/// What a run's series are labelled with besides agent and phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunLabels {
    /// Which run of the command (a search's step, a repetition): from 1.
    pub run: usize,
    pub transport: String,
    /// A sweep's point (`clients=2 arch=pool`), when the run is one.
    pub point: Option<String>,
}

/// One agent's cumulative figures in one phase.
#[derive(Debug, Clone)]
pub struct Totals {
    pub ops: u64,
    pub sent: u64,
    pub errors: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Errors by cause (at most [`MAX_CAUSES`], then `other`).
    pub causes: BTreeMap<String, u64>,
    pub latency: LatencyHist,
    /// The open loop's schedule lag (None in a closed loop).
    pub lag: Option<LatencyHist>,
    /// Per operation kind: successful operations and their latency.
    pub by_op: BTreeMap<String, (u64, LatencyHist)>,
    /// Time the hiccup meter's probe lost in all.
    pub hiccup_lost_ns: u64,
}

impl Totals {
    pub(crate) fn new() -> Totals {
        Totals {
            ops: 0,
            sent: 0,
            errors: 0,
            bytes_out: 0,
            bytes_in: 0,
            causes: BTreeMap::new(),
            latency: wirebench_core::hist::new_hist(),
            lag: None,
            by_op: BTreeMap::new(),
            hiccup_lost_ns: 0,
        }
    }

    pub(crate) fn count_cause(&mut self, cause: &str, n: u64) {
        let key = if self.causes.contains_key(cause) || self.causes.len() < MAX_CAUSES {
            cause
        } else {
            "other"
        };
        *self.causes.entry(key.to_string()).or_default() += n;
    }
}

/// What one agent (or the local run: agent "") showed in its last second.
#[derive(Debug, Clone, Default)]
pub struct LastSecond {
    pub client_cores: Vec<CoreBusy>,
    pub server_cores: Vec<CoreBusy>,
    /// The hiccup meter's latest wake-up, in s.
    pub hiccup_max_s: Option<f64>,
    pub ops_per_s: f64,
}

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub labels: RunLabels,
    /// Whether the load runs now (0 between runs and after the last).
    pub running: bool,
    /// Per agent ("" for a local run) and phase.
    pub totals: BTreeMap<(String, Phase), Totals>,
    pub last: BTreeMap<String, LastSecond>,
    /// The open loop's stage now (from 1; 0 in the warm-up) and the rate
    /// it asks.
    pub stage: Option<(usize, f64)>,
    /// Seconds reported, all agents together.
    pub seconds: u64,
}

impl Board {
    /// Adds one second of `agent` ("" for a local run). A new agent past
    /// [`MAX_AGENTS`] is left out.
    /// `point` is the second as a run keeps it (for a coordinator, the
    /// agent's own: the hiccup meter's figures travel in it).
    pub fn add(&mut self, agent: &str, iv: &IntervalReport, point: &Interval) {
        if !self.last.contains_key(agent) && self.last.len() >= MAX_AGENTS {
            return;
        }
        self.ensure(agent);
        let d = &iv.data;
        let t = self
            .totals
            .get_mut(&(agent.to_string(), iv.phase))
            .expect("made by ensure");
        t.ops += d.ops;
        t.sent += d.sent;
        t.errors += d.errors;
        t.bytes_out += d.bytes_out;
        t.bytes_in += d.bytes_in;
        let mut named = 0;
        for (cause, n) in &d.failures {
            t.count_cause(cause, *n);
            named += n;
        }
        if d.errors > named {
            t.count_cause("other", d.errors - named);
        }
        let _ = t.latency.add(&d.hist);
        if let Some(lag) = &d.lag {
            let mine = t.lag.get_or_insert_with(wirebench_core::hist::new_hist);
            let _ = mine.add(lag.as_ref());
        }
        for (op, o) in &d.by_op {
            if !t.by_op.contains_key(*op) && t.by_op.len() >= MAX_OPERATIONS {
                continue;
            }
            let e = t
                .by_op
                .entry(op.to_string())
                .or_insert_with(|| (0, wirebench_core::hist::new_hist()));
            e.0 += o.ops;
            let _ = e.1.add(&o.hist);
        }
        t.hiccup_lost_ns += point.hiccup_lost_ns.unwrap_or(0);
        self.last.insert(
            agent.to_string(),
            LastSecond {
                client_cores: iv.client_cores.clone(),
                server_cores: iv.server_cores.clone(),
                hiccup_max_s: point.hiccup_max_ns.map(|n| n as f64 / 1e9),
                ops_per_s: point.ops_per_s,
            },
        );
        self.seconds += 1;
    }

    /// Makes the series of `agent`, at 0, in both phases.
    pub fn ensure(&mut self, agent: &str) {
        for phase in [Phase::Warmup, Phase::Measure] {
            self.totals
                .entry((agent.to_string(), phase))
                .or_insert_with(Totals::new);
        }
        self.last.entry(agent.to_string()).or_default();
    }
}

/// The board shared by the command (which adds seconds) and the listener
/// (which reads it at each scrape), with the pages rendered of it: a page
/// is rendered again only after the board changed (about once a second),
/// however often it is scraped (100 scrapes a second once took 2.9 s of
/// CPU in 4 s, rendering each).
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Rendered>>);

/// The board, how many times it was changed, and each form's page with the
/// change it was rendered after.
#[derive(Default)]
pub struct Rendered {
    board: Board,
    changes: u64,
    pages: BTreeMap<usize, (u64, bytes::Bytes)>,
    renders: u64,
}

impl Shared {
    /// `f` on the board (which counts as a change).
    pub fn with<T>(&self, f: impl FnOnce(&mut Board) -> T) -> T {
        let mut r = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        r.changes += 1;
        f(&mut r.board)
    }

    /// The page of form `form`: the one rendered last if the board has not
    /// changed since, else `render`'s, kept.
    pub fn page(&self, form: usize, render: impl FnOnce(&Board) -> Vec<u8>) -> bytes::Bytes {
        let mut r = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, page)) = r.pages.get(&form)
            && *at == r.changes
        {
            return page.clone();
        }
        let page = bytes::Bytes::from(render(&r.board));
        r.renders += 1;
        let at = r.changes;
        r.pages.insert(form, (at, page.clone()));
        page
    }

    /// How many pages were rendered since the start (each form's, each
    /// time the board had changed).
    pub fn renders(&self) -> u64 {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .renders
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: a hundred scrapes between two changes of the board render
    /// its page once per form; a change renders it again.
    #[test]
    fn issue_46_a_page_is_rendered_once_per_change_however_often_it_is_read() {
        let shared = Shared::default();
        let render = |b: &Board| format!("seconds {}", b.seconds).into_bytes();
        for _ in 0..100 {
            assert_eq!(&shared.page(0, render)[..], b"seconds 0");
            shared.page(1, render);
        }
        assert_eq!(shared.renders(), 2);
        shared.with(|b| b.seconds = 7);
        for _ in 0..100 {
            assert_eq!(&shared.page(0, render)[..], b"seconds 7");
        }
        assert_eq!(shared.renders(), 3);
    }
}
