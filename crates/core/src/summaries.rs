//! What commands over many runs conclude, as data: a search's steps and
//! answers (`search.json`), an ipc-compare's variants. The runner fills
//! them; the report crate prints them.

use crate::result::SloOutcome;
use serde::{Deserialize, Serialize};

/// Exit status of a complete run whose objectives were not all met (and
/// of a search no rate of which met them).
pub const EXIT_SLO_MISSED: u8 = 3;

/// One open-loop step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// The rate is within [`SPARE_CAPACITY`] of the saturation: the server
    /// had no capacity left to work off a backlog, so the rate is not
    /// taken as one that holds even if the step passed (set when the
    /// search ends).
    #[serde(default)]
    pub at_saturation: bool,
    /// Stalled seconds the step's figures had to use (every measured
    /// second stalled, so none could be left out): the hiccup meter saw
    /// the platform stall, the client's machine, not the server (a probe
    /// thread woke late). A miss then is measured again.
    #[serde(default)]
    pub stalled_seconds: usize,
    /// Measured seconds the platform stalled in, left out of the step's
    /// figures (the others sufficed).
    #[serde(default)]
    pub stalled_left_out: usize,
    /// The step missed while the platform stalled, so the search measured
    /// the same rate again and this step does not count.
    #[serde(default)]
    pub measured_again: bool,
    /// A step measured again in a later one, where its tries and the new
    /// ones vote, each judged alone (two that agree decide, three of five
    /// for a step already voted; the figures are the winning side's,
    /// pooled); this step does not count. Measured again: the step the
    /// server first fell behind in (the saturation), a step the climb
    /// measured at a rate of the edge under it, the edge rate that missed
    /// just above the answer, and a decided miss below rates that held
    /// whose verdict ended the band the answer would otherwise have
    /// reached (one noisy moment does not end a band).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remeasured: bool,
    /// A step whose objective's interval straddled it was measured again,
    /// its seconds pooled with the earlier tries' (a miss measured again:
    /// its tries voted, see `remeasured`): how many tries, and how many
    /// passed alone. 1 try: it was clear at once.
    #[serde(default = "one")]
    pub tries: usize,
    #[serde(default)]
    pub tries_passed: usize,
    /// Its tries voted, each judged alone, two that agree deciding (a
    /// step measured again, or a rate of the search's edge phase under
    /// the saturation), rather than pooled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub voted: bool,
    /// Its objectives' figures over every try's seconds, each with a 95%
    /// confidence interval (in the order of `slos`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<crate::slo::FigureInterval>,
    /// An interval still straddled its objective after the last try: the
    /// step neither holds nor fails.
    #[serde(default)]
    pub undecided: bool,
    /// Every latency objective's figure was at least [`NEAR_LIMIT`] of
    /// its pass line: the objective barely tells this rate from its
    /// neighbours (see [`NotSharp`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub near_pass_line: bool,
    /// Measured seconds, every try's.
    #[serde(default)]
    pub seconds: f64,
    /// The client's CPU time as a share of the CPUs it may use, and the
    /// server's of its cpuset (embedded or observed; None: not observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_pct: Option<f64>,
    pub run_id: String,
}

fn one() -> usize {
    1
}

/// How many times a search measures a rate whose objective's confidence
/// interval straddles its threshold (the seconds of every try pooled)
/// before it calls the rate undecided.
pub const AGREEMENT_TRIES: usize = 3;

/// A rate a search answers leaves the server at least this fraction of its
/// saturation throughput spare: at the saturation itself, a backlog left
/// by one hiccup never drains, and a step that passed there passed by
/// luck.
pub const SPARE_CAPACITY: f64 = 0.05;

/// How many times a search measures a rate again when it missed in a step
/// the platform stalled in: a noisy machine (a VM the host throttles for
/// up to ~300 ms) fails a step now and then, and one missed step ends a
/// search's climb for good.
pub const STALL_RETRIES: usize = 2;

impl Step {
    /// Missed while the platform stalled: worth measuring again.
    pub fn missed_in_stall(&self) -> bool {
        !self.pass && self.stalled_seconds > 0
    }

    /// Whether the step's verdict counts: not one measured again (for a
    /// stall, or as a miss below rates that held).
    pub fn counts(&self) -> bool {
        !self.measured_again && !self.remeasured
    }

    /// Passed, and below the saturation by the spare capacity.
    pub fn holds(&self, saturation: Option<f64>) -> bool {
        self.pass && saturation.is_none_or(|s| self.rate_per_s < (1.0 - SPARE_CAPACITY) * s)
    }
}

/// What `search.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SearchResult {
    pub slos: Vec<String>,
    pub headroom: f64,
    pub steps: Vec<Step>,
    /// The highest rate that met every objective with the headroom, below
    /// the lowest that did not, and below the saturation by
    /// [`SPARE_CAPACITY`] (None: no rate tried did).
    pub best_rate_per_s: Option<f64>,
    /// The best rate passed twice (the machine is noisy: once is luck).
    pub confirmed: bool,
    /// A step asked more than the server completed: its saturation was
    /// measured.
    pub saturated: bool,
    /// The most operations per second completed by a step the server fell
    /// behind in; None unless saturated (the server kept up with every
    /// rate tried, so its saturation is above them).
    pub saturation_ops_per_s: Option<f64>,
    /// The step budget (`--max-steps`) ended the search before it
    /// confirmed the best rate and measured the saturation.
    pub budget_exhausted: bool,
    /// Rates whose misses count though the platform stalled in each try
    /// ([`STALL_RETRIES`] + 1 of them): the machine, not the server, may
    /// have failed them, so the answers may be lower than the server's.
    #[serde(default)]
    pub missed_in_stalls: Vec<f64>,
    /// The latency objectives' figures did not rise with the rate over the
    /// steps the server kept up with: the load does not set them, so the
    /// answer is the highest rate that held, a lower bound of what the
    /// server takes (None: not judged, too few steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_flat: Option<FlatLatency>,
    /// The answer is not sharp: an objective's figure stayed near its
    /// limit over the top octave of the band, so the rates above and below
    /// the answer differ by less than the machine's noise (None: sharp,
    /// or not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sharp: Option<NotSharp>,
    pub interrupted: bool,
    /// The band the answer tops: the lowest and highest of the consecutive
    /// rates tried (by rate) that held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<(f64, f64)>,
    /// Rates below the band whose objectives missed though the server kept
    /// up: latency worse at low rates (a server that sleeps between
    /// requests wakes for each), not the capacity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed_below: Vec<f64>,
    /// Rates whose objectives stayed undecided after every try.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided_rates: Vec<f64>,
    /// Which side ran out at the saturation: the client, the server,
    /// either, or neither (then the limit is elsewhere), with their CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// Where the steps are.
    #[serde(skip)]
    pub dir: std::path::PathBuf,
}

/// An answer its objective barely separates from the rates around it:
/// every step from half the answer up to it had the figure within
/// [`NEAR_LIMIT`] of the line a pass must stay under. Searched again on a
/// noisy machine, such a server answers anywhere in a wide range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotSharp {
    /// The objective (`p99<1ms`).
    pub slo: String,
    /// The steps judged: their lowest and highest rate, and the figure's
    /// lowest and highest value over them.
    pub from_rate_per_s: f64,
    pub to_rate_per_s: f64,
    pub min: f64,
    pub max: f64,
    /// The line a pass stays under: the objective's threshold less the
    /// headroom.
    pub pass_line: f64,
}

/// How near a figure is to the pass line for [`NotSharp`]: at least this
/// fraction of it.
pub const NEAR_LIMIT: f64 = 0.75;

/// What showed latency flat with the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlatLatency {
    /// The objective it is about (`p99<1ms`).
    pub slo: String,
    pub from_rate_per_s: f64,
    pub to_rate_per_s: f64,
    /// Its lowest and highest value over those steps.
    pub min: f64,
    pub max: f64,
    /// Spearman's rank correlation of the value with the rate.
    pub rank_correlation: f64,
}

impl SearchResult {
    /// The exit status: 130 interrupted, 5 the budget ran out first, 3 no
    /// rate met the objectives, 0 found.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            130
        } else if self.budget_exhausted && self.best_rate_per_s.is_some() {
            // Found something, but not all: say so.
            EXIT_SEARCH_UNFINISHED
        } else if self.best_rate_per_s.is_none() {
            EXIT_SLO_MISSED
        } else {
            0
        }
    }
}

/// Exit status of a search whose step budget ended before it found and
/// confirmed its answer.
pub const EXIT_SEARCH_UNFINISHED: u8 = 5;

/// One variant's medians over the rounds, and their range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IpcRow {
    pub variant: String,
    pub runs: Vec<String>,
    pub ops_per_s: f64,
    /// The lowest and highest ops/s of a round.
    pub ops_per_s_min: f64,
    pub ops_per_s_max: f64,
    pub messages_per_s: f64,
    pub p50_ns: Option<f64>,
    /// The lowest and highest p50 of a round.
    pub p50_ns_range: Option<(f64, f64)>,
    pub p99_ns: Option<f64>,
    pub client_cpu_us_per_op: f64,
    /// ops/s divided by the Unix socket's.
    pub ops_vs_unix: Option<f64>,
    /// p50 divided by the Unix socket's.
    pub p50_vs_unix: Option<f64>,
}

/// A thread of an off-CPU recording, as its window found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffCpuThread {
    pub tid: u32,
    pub name: String,
    /// Where it slept when the window opened (`/proc/TID/wchan`; empty: it
    /// was running).
    pub wchan: String,
    /// Its time on a CPU within the window (schedstat).
    pub on_cpu_ns: u64,
}

/// The window an off-CPU recording's events are clipped to, in the events'
/// clock (CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffCpuWindow {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl OffCpuWindow {
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The part of `from..to` inside the window.
    pub fn clip(&self, from: u64, to: u64) -> u64 {
        to.min(self.end_ns).saturating_sub(from.max(self.start_ns))
    }
}
