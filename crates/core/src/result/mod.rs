//! The result model: one `run.json` per run, the source of truth for every
//! report and comparison. Bump [`SCHEMA_VERSION`] when a field changes
//! meaning or disappears, and update docs/results-schema.md.

use crate::env::Environment;
use crate::hist::LatencySummary;
use crate::spec::RunSpec;
use crate::topo::CpuList;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[doc(hidden)]
pub mod fixture;
mod warning;
pub use warning::{UNANSWERED, Warning};

pub const SCHEMA_VERSION: u32 = 4;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Complete,
    /// Stopped by Ctrl-C or SIGTERM; what was measured until then is kept.
    Interrupted,
    /// Stopped by an error (e.g. the server died); what was measured is kept.
    Failed,
    /// A run made by load agents lost one of them: the seconds after the
    /// loss are partial (`Interval::partial`), the window with every agent
    /// is reported apart (`RunResult::agents_window`).
    Degraded,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStatus {
    pub state: RunState,
    /// Why it was interrupted or failed.
    pub reason: Option<String>,
}

/// Where each side ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub client_cpus: CpuList,
    /// None when the server is external (not started by this run).
    pub server_cpus: Option<CpuList>,
    /// How the placement was chosen, and any fallback taken.
    pub notes: Vec<String>,
    /// The sweep's placement policy (balanced, separated, explicit), if one chose the cpusets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

/// Busy share of one CPU over an interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreBusy {
    pub cpu: usize,
    pub busy_pct: f64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    #[serde(default)]
    pub steal_pct: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Warmup,
    Measure,
}

/// One point of the per-second series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start and end, from the moment the load started (connections made).
    pub start_ns: u64,
    pub end_ns: u64,
    pub phase: Phase,
    pub ops: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub errors: u64,
    pub ops_per_s: f64,
    pub sent: u64,
    pub latency: LatencySummary,
    /// From the actual send (equals `latency` in closed loop).
    pub service_latency: LatencySummary,
    /// This interval's latency histogram (see `hist::encode`).
    pub latency_hist: String,
    pub client_cores: Vec<CoreBusy>,
    pub server_cores: Vec<CoreBusy>,
    /// The share of each core the server's threads used, in % of the core
    /// (`busy_pct`): each thread's CPU time on the core it last ran on,
    /// exact for threads pinned to a core (reactors). Where `server_cores`
    /// tells a core busy, this tells how much of it was the server's.
    /// Empty where the server was not observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_share: Vec<CoreBusy>,
    /// The hiccup meter: the latest wake-up of its probe, and the time its
    /// wake-ups lost in all (None: the meter was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup_max_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup_lost_ns: Option<u64>,
    /// A stall above the threshold happened in this second: the platform,
    /// not the server, stopped everything.
    #[serde(default)]
    pub stalled: bool,
    /// A run made by load agents: a second after an agent was lost, whose
    /// figures miss that agent's part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The server's CPU time in this interval by thread group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_groups: Vec<GroupCpu>,
    /// exec: what the program said of its own threads' utilisation in this
    /// second, in %, one figure per thread in its order (perf-crimson-msgr's
    /// client reactors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_busy_pct: Vec<f64>,
    /// exec: the messages in flight at the end of this second, as the
    /// program printed them (perf-crimson-msgr's depth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_in_flight: Option<u64>,
}

/// The client's and the server's CPU per core over one second, for a run
/// whose per-second series is not its own (an exec program that printed
/// no per-second lines).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSecond {
    pub start_ns: u64,
    pub end_ns: u64,
    pub client_cores: Vec<CoreBusy>,
    pub server_cores: Vec<CoreBusy>,
    /// The share of each core the server's threads used (see
    /// [`Interval::server_share`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_share: Vec<CoreBusy>,
}

/// CPU time of one group of the server's threads: threads named alike,
/// digits stripped (`msgr-worker-0..2` -> `msgr-worker`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCpu {
    pub group: String,
    /// Threads of the group seen in the span.
    pub threads: usize,
    pub cpu_s: f64,
    /// CPU time as a share of the span's wall-clock time, in % of one
    /// core (as `top -H` shows it: 250 is two and a half cores).
    pub cpu_pct: f64,
}

/// A server thread that ran, or may run, outside the server's cpuset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutsideThread {
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    /// Its CPU time over the run, in s.
    pub cpu_s: f64,
    /// CPUs outside the cpuset it was seen running on.
    pub ran_outside: Vec<usize>,
    /// Its allowed CPUs, when they exceed the cpuset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<CpuList>,
}

/// What an exec run's program reported, and how it measured it: its
/// figures are the program's own, not wirebench's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolReport {
    /// The program (`sockperf`, `fio`).
    pub program: String,
    /// The parser that read its output (`--parser`).
    pub parser: String,
    /// The command as run, placeholders filled.
    pub command: String,
    /// How it ended (`exit status 0`).
    pub exit: String,
    /// Every figure the parser took, by the program's own name and unit
    /// (`IOPS`, `latency ms`), as printed.
    pub figures: BTreeMap<String, f64>,
    /// What it reported in words (`clients`: `mp`, `mode`: `async`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub words: BTreeMap<String, String>,
    /// The latency statistics it gave (`mean`, `p50`, `p99`...); the
    /// others are absent from the summary, not zero.
    #[serde(default)]
    pub latency_stats: Vec<String>,
    /// How it measured, one line per kind of figure ("latency: mean of a
    /// 1-in-256 sample of messages, 10 ms clock").
    #[serde(default)]
    pub method: Vec<String>,
    /// Whether its latency came as a histogram (fio's bins): then every
    /// percentile is read from it, within the bins' width.
    #[serde(default)]
    pub histogram: bool,
}

/// The allocator's share of a server's CPU samples (`flame`): samples
/// inside malloc/free/new/delete and the allocator libraries (libc,
/// jemalloc, tcmalloc, mimalloc), callees included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AllocatorShare {
    pub samples: u64,
    pub total_samples: u64,
    pub share_pct: f64,
    /// Where the allocator was entered, most samples first.
    pub top: Vec<AllocatorEntry>,
}

/// One way into the allocator: a function and its library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocatorEntry {
    /// The function (`malloc`), or `[unknown]` in a stripped library.
    pub function: String,
    /// Its library's file name (`libjemalloc.so.2`).
    pub library: String,
    pub samples: u64,
    /// Of all the server's samples, in %.
    pub share_pct: f64,
}

/// The server's threads over the measured phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerThreads {
    /// CPU time by thread group, most first.
    pub groups: Vec<GroupCpu>,
    /// Context switches, summed over its threads.
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// The cpuset the server was given (pinned by the run, or its
    /// affinity when the run began), against which `outside_cpuset` is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<CpuList>,
    /// Threads seen on a CPU outside the cpuset, or allowed beyond it,
    /// over the whole run (looked at every 100 ms).
    #[serde(default)]
    pub outside_cpuset: Vec<OutsideThread>,
}

impl Interval {
    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}

/// What the hiccup meter saw over the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HiccupSummary {
    /// How late the probe's sleeps woke: p99 and the worst.
    pub p99_ns: u64,
    pub max_ns: u64,
    /// The sum of the wake-ups' lateness: time the platform took, in s.
    pub lost_s: f64,
    /// Measured seconds with a stall above the threshold.
    pub stalled_seconds: usize,
    pub threshold_ns: u64,
    /// How long the probe sleeps each time: a stall is seen as a lateness
    /// at most this much shorter. 0 in results written before it was
    /// recorded (the probe then slept 1 ms).
    #[serde(default)]
    pub period_ns: u64,
}

/// Counters kept by a reference server, reported when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ServerStats {
    pub conns_accepted: u64,
    /// Closed for a bad handshake or a bad frame (garbage, oversize), or
    /// for making no progress (idle, a frame left unfinished).
    pub conns_refused: u64,
    /// Closed on arrival: the server served `--max-conns` already.
    #[serde(default)]
    pub conns_over_cap: u64,
    pub frames_in: u64,
    pub frames_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Most requests read but not yet answered on any one connection.
    pub max_outstanding_per_conn: u64,
}

/// The server side of a run, when this run started the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    pub pid: u32,
    pub endpoint: String,
    /// None when the server died before it could report.
    pub stats: Option<ServerStats>,
    pub exit: Option<String>,
}

/// The figures of the measured phase (warm-up excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    /// Time from the first connect until every connection was ready.
    pub connect_time_ns: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Operations completed: responses (echo, rr), requests sent (oneway),
    /// frames received (stream).
    pub ops: u64,
    pub errors: u64,
    /// Length of the measured phase ("messaging time").
    pub measured_ns: u64,
    pub ops_per_s: f64,
    /// Payload bytes: the messages' payloads (no frame header), S3 and
    /// HTTP bodies; Redis and memcached commands and replies as sent.
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// The payload bytes per second, exact.
    pub bytes_per_s_out: f64,
    pub bytes_per_s_in: f64,
    /// The same in MiB/s (2^20 bytes: what the reference reports' "MB/s"
    /// means).
    pub mib_per_s_out: f64,
    pub mib_per_s_in: f64,
    /// Bytes on the wire where the transport frames its payload (msgr: a
    /// 16-byte header per message): the payload and the framing. None:
    /// what is counted is what went on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes_out: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes_in: Option<u64>,
    /// Open loop: the rate asked for, and the rate requests were sent at.
    pub requested_rate_per_s: Option<f64>,
    pub sent_per_s: f64,
    /// Latency: open loop from the intended send time (no coordinated
    /// omission), closed loop from the send.
    pub latency: LatencySummary,
    /// Service time: from the actual send to the response.
    pub service_latency: LatencySummary,
    /// Open loop: how late requests left after their intended send time
    /// (the client's lag behind its timetable). None in a closed loop, and
    /// in a merge of parts (load agents', instances'): each has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<LatencySummary>,
    pub client_cpu_s: f64,
    pub server_cpu_s: Option<f64>,
    pub client_cpu_us_per_op: f64,
    pub server_cpu_us_per_op: Option<f64>,
    /// Time the threads were runnable but waiting for a CPU (schedstat),
    /// summed over threads: CPU contention.
    #[serde(default)]
    pub client_runq_wait_s: Option<f64>,
    #[serde(default)]
    pub server_runq_wait_s: Option<f64>,
    pub client_peak_rss_bytes: u64,
    pub server_peak_rss_bytes: Option<u64>,
    /// Server CPU seconds over measured seconds: the cores the server
    /// actually used, whatever its cpuset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores_used: Option<f64>,
    /// Operations per second per core the server actually used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_core_used: Option<f64>,
    /// The server's threads: CPU by group, context switches, threads
    /// outside its cpuset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_threads: Option<ServerThreads>,
    /// The allocator's share of the server's CPU samples (`flame` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_allocator: Option<AllocatorShare>,
    /// Highest busy % of any client core over the measured phase.
    pub client_core_max_busy_pct: f64,
    /// The client's own CPU time (less its open-loop timers' deliberate
    /// spin) as a share of the CPUs it may use (min(its load threads, its
    /// CPUs)) over the measured phase, in %.
    #[serde(default)]
    pub client_cpu_pct: Option<f64>,
    /// The embedded server's CPU time as a share of its CPUs, in %.
    #[serde(default)]
    pub server_cpu_pct: Option<f64>,
    /// What the open-loop timers spun on purpose (not load), in seconds.
    #[serde(default)]
    pub client_timer_spin_s: f64,
    /// CPU time other processes took on the run's CPUs over the measured
    /// phase: the CPUs' busy time less the client's and server's own.
    #[serde(default)]
    pub foreign_cpu_s: Option<f64>,
    /// The client used nearly all the CPU it may use: the result may be
    /// client-bound (see `warnings`).
    pub client_bound: bool,
    /// The server used nearly all its CPUs: the result is likely server-bound.
    #[serde(default)]
    pub server_bound: bool,
    /// Highest steal % of any client or server CPU in any second of the
    /// measured phase.
    #[serde(default)]
    pub max_steal_pct: f64,
    /// Trend of the per-second throughput over the measured phase (None
    /// with fewer than 4 whole seconds).
    #[serde(default)]
    pub throughput_trend: Option<crate::stats::Trend>,
    /// The hiccup meter (None: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup: Option<HiccupSummary>,
    /// Per operation type (S3), keyed by type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_op: BTreeMap<String, OpSummary>,
    /// Failed operations by cause ("404 NoSuchKey", "503 SlowDown", or
    /// [`UNANSWERED`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, u64>,
    /// exec: what the program reported and how it measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolReport>,
}

impl Summary {
    /// The operation type whose time to first byte a report shows: the
    /// reads (S3 GET), or the one type of a run that has one.
    pub fn ttfb_op(&self) -> Option<&OpSummary> {
        let by = &self.by_op;
        by.get("get")
            .or_else(|| by.values().next().filter(|_| by.len() == 1))
    }

    /// Whether the latency statistic `stat` (`mean`, `p50`, `p99`, `p999`,
    /// `p9999`, `min`, `max`) was measured: always by wirebench's own
    /// histograms, only where given by an exec run's program.
    pub fn has_latency(&self, stat: &str) -> bool {
        match &self.tool {
            None => self.latency.count > 0,
            Some(t) => t.histogram || t.latency_stats.iter().any(|s| s == stat),
        }
    }
}

/// The figures of one operation type (S3: get, put...) over the measured phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct OpSummary {
    /// Operations that succeeded; failed ones are in `errors` only.
    pub ops: u64,
    pub errors: u64,
    pub ops_per_s: f64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// This type's payload bytes (written and read) per second, exact.
    pub bytes_per_s: f64,
    /// The same in MiB/s (2^20).
    pub mib_per_s: f64,
    pub latency: LatencySummary,
    /// Time to first byte (GET: the first byte of the body; PUT: the response
    /// headers, after the body was sent), from the same start as `latency`.
    pub ttfb: Option<LatencySummary>,
    pub latency_hist: String,
    #[serde(default)]
    pub ttfb_hist: String,
    /// Connections the operations opened themselves (HTTP `--churn`, a
    /// reconnect after the server closed one): the TCP connect and the TLS
    /// handshake, per connection opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<LatencySummary>,
    /// Answers by status class ("2xx", "4xx"; "other" for codes outside
    /// 100-599), failed ones included (HTTP).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, u64>,
}

/// A phase run apart from the measured load (S3: creating the objects a
/// read workload needs, and deleting them afterwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PhaseReport {
    pub objects: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub errors: u64,
}

/// Everything about one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub run_id: String,
    pub command_line: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub spec: RunSpec,
    pub env: Environment,
    pub placement: Placement,
    pub status: RunStatus,
    pub summary: Summary,
    pub intervals: Vec<Interval>,
    /// Latency histogram of the measured phase (see `hist::encode`).
    pub latency_hist: String,
    /// Service-time histogram of the measured phase.
    pub service_hist: String,
    pub server: Option<ServerReport>,
    /// S3: the prepare phase (objects created for the workload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<PhaseReport>,
    /// S3: the cleanup phase (objects the run created, deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<PhaseReport>,
    /// The `--slo` objectives checked against this run.
    #[serde(default)]
    pub slos: Vec<SloOutcome>,
    /// What the reader of the figures should know (each also states its
    /// text, under `message`).
    #[serde(serialize_with = "warnings_with_messages")]
    pub warnings: Vec<Warning>,
    /// The runs this one was merged from (a sweep point's instances, run
    /// side by side; see `merge`). Empty for a run as measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// What a traced run's trace files hold (None: not traced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCounts>,
    /// A run made by load agents: each agent's part (the run's figures are
    /// their exact merge).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentPart>,
    /// A run whose agents loaded several endpoints: each endpoint's share,
    /// the exact merge of the parts that went to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointPart>,
    /// A run that lost an agent: the measured seconds in which every agent
    /// was making its load, merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_window: Option<AgentsWindow>,
    /// An open loop in stages: each stage as measured (see `--stages`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::ramp::StageResult>,
    /// A run with a ramp: where its latency left its low-load level, and
    /// where each objective failed for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::ramp::RampVerdict>,
    /// The sweep point this run measured (`server_cmd=crimson clients=2`),
    /// as its experiment's index names it: set when a run is read from an
    /// experiment's directory, so that a report can split runs by any
    /// matrix key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub point: Vec<(String, String)>,
    /// exec, when its program printed no per-second lines: the client's
    /// and the server's CPU per core, second by second, over its measured
    /// phase (the intervals carry them otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_seconds: Vec<CpuSecond>,
    /// A merge of a sweep point's instances: each instance's own figures
    /// and cpusets (see `merge::instances`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstancePart>,
}

impl RunResult {
    /// An IPC run's messages per second, as the IPC report counts them (a
    /// request and its response are two messages; `nores` and the data
    /// channel's one-way messages one each): a Tsurugi program's own
    /// figure (`--parser tateyama-*`), or a shared-memory run's. None for
    /// any other run.
    pub fn messages_per_s(&self) -> Option<f64> {
        if let Some(t) = &self.summary.tool
            && t.parser.starts_with("tateyama-")
        {
            return t.figures.get("messages/s").copied();
        }
        self.spec.shm()?;
        let per_op = if self.spec.transport.has_response() {
            2.0
        } else {
            1.0
        };
        Some(self.summary.ops_per_s * per_op)
    }
}

/// One of the instances a sweep point ran side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstancePart {
    pub run_id: String,
    pub state: RunState,
    pub clients: usize,
    pub ops_per_s: f64,
    /// None where its program gave no such statistic (exec).
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub client_cpu_us_per_op: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_op: Option<f64>,
    pub client_cpus: CpuList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<CpuList>,
    /// The same instance run alone in the same sweep (its cpusets and
    /// clients, the others idle: `alone = true`): its ops/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_ops_per_s: Option<f64>,
}

impl InstancePart {
    /// What an instance kept side by side of its throughput alone (1: all
    /// of it), where it was measured alone.
    pub fn kept(&self) -> Option<f64> {
        self.alone_ops_per_s
            .filter(|a| *a > 0.0)
            .map(|a| self.ops_per_s / a)
    }
}

/// A traced run's trace files: how much each side wrote and lost. Counts
/// include the warm-up, which is traced too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceCounts {
    /// One operation in this many traced (by sequence number).
    pub sample: u64,
    pub client_events: u64,
    /// Operations the client traced from their first event.
    pub client_begun: u64,
    /// Operations the client traced to their last event.
    pub client_ended: u64,
    /// Events overwritten before the drain wrote them.
    pub client_lost: u64,
    /// The server's, when it wrote a trace (an embedded server that
    /// stopped cleanly).
    #[serde(default)]
    pub server_events: Option<u64>,
    #[serde(default)]
    pub server_lost: Option<u64>,
}

/// An objective checked against a run (see `slo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloOutcome {
    pub slo: String,
    /// The run's value, in the objective's unit; NaN (`null` in JSON)
    /// when the run measured nothing it applies to.
    #[serde(deserialize_with = "nan_if_null")]
    pub actual: f64,
    pub pass: bool,
    /// An objective `over` a window: each window of the measured phase
    /// (`actual` is then the worst one's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<Vec<SloWindow>>,
}

/// One window of an objective checked `over` windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloWindow {
    /// From the measured phase's start.
    pub from_s: f64,
    pub to_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub actual: f64,
    pub pass: bool,
}

/// One endpoint's share of a run that loaded several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointPart {
    pub endpoint: String,
    /// The agents whose parts went to it (none: this process dealt its
    /// connections to the endpoints in turn).
    pub agents: Vec<String>,
    /// The connections to it (server connections: HTTP/2 streams share one).
    #[serde(default)]
    pub connections: u64,
    pub ops: u64,
    pub errors: u64,
    pub ops_per_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
}

/// The measured seconds of a run in which all its agents made their load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentsWindow {
    /// The window, in seconds from the load's start.
    pub from_s: f64,
    pub to_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub latency: LatencySummary,
}

/// One load agent's part of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentPart {
    /// Where it listens (`HOST:PORT`).
    pub agent: String,
    /// Its part's run id, and the directory it is kept in on the agent.
    pub run_id: String,
    pub dir: String,
    pub clients: usize,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub ops: u64,
    pub ops_per_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub client_cpu_s: f64,
    pub client_cpu_us_per_op: f64,
    /// Open loop: its share of the rate, and what it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_rate_per_s: Option<f64>,
    pub sent_per_s: f64,
    /// Open loop: the p99 of how late its requests left after their
    /// intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_p99_ns: Option<u64>,
    /// Its clock minus the coordinator's (CLOCK_MONOTONIC), true within
    /// `clock_uncertainty_ns`, measured before the run.
    pub clock_offset_ns: i64,
    pub clock_uncertainty_ns: u64,
    /// How its clock moved against the coordinator's over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_drift_ppm: Option<f64>,
}

/// Each warning with its text beside its data, for readers of run.json.
fn warnings_with_messages<S: serde::Serializer>(ws: &[Warning], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct WithMessage<'a> {
        #[serde(flatten)]
        warning: &'a Warning,
        message: String,
    }
    s.collect_seq(ws.iter().map(|w| WithMessage {
        warning: w,
        message: w.to_string(),
    }))
}

/// The spread of each headline metric over repeated runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetitions {
    pub runs: Vec<String>,
    /// (metric name with unit, spread over the runs).
    pub metrics: Vec<(String, crate::stats::Spread)>,
    /// Runs whose per-second throughput drifts.
    pub drifting: Vec<String>,
}

impl Repetitions {
    pub fn of(results: &[RunResult]) -> Repetitions {
        let metric = |name: &str, f: &dyn Fn(&Summary) -> f64| {
            let xs: Vec<f64> = results.iter().map(|r| f(&r.summary)).collect();
            crate::stats::Spread::of(&xs).map(|s| (name.to_string(), s))
        };
        let metrics = [
            metric("ops_per_s", &|s| s.ops_per_s),
            metric("mib_per_s_in", &|s| s.mib_per_s_in),
            metric("latency_mean_ns", &|s| s.latency.mean_ns),
            metric("latency_p50_ns", &|s| s.latency.p50_ns as f64),
            metric("latency_p99_ns", &|s| s.latency.p99_ns as f64),
            metric("latency_p999_ns", &|s| s.latency.p999_ns as f64),
            metric("latency_max_ns", &|s| s.latency.max_ns as f64),
            metric("client_cpu_us_per_op", &|s| s.client_cpu_us_per_op),
        ]
        .into_iter()
        .flatten()
        .collect();
        Repetitions {
            runs: results.iter().map(|r| r.run_id.clone()).collect(),
            metrics,
            drifting: results
                .iter()
                .filter(|r| r.summary.throughput_trend.is_some_and(|t| t.drifting))
                .map(|r| r.run_id.clone())
                .collect(),
        }
    }
}

/// A number that JSON wrote as `null` (serde_json writes NaN so) is NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
pub(crate) mod tests;
