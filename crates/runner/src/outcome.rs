//! From what the engine measured to a [`RunResult`]: the summary of the
//! measured phase, the per-second series, and the warnings. The rules that
//! raise each [`Warning`] live here and nowhere else: the summary, run.json
//! and the report read the result, never apply a rule of their own.

use wirebench_core::env::Environment;
use wirebench_core::hist::LatencyHist;
use wirebench_core::hist::{self, LatencySummary};
use wirebench_core::result::{
    self, CoreBusy, HiccupSummary, Interval, Phase, Placement, RunResult, RunState, RunStatus,
    Summary, Warning,
};
use wirebench_core::spec::{Endpoint, RunSpec, TargetSpec};
use wirebench_core::stats::Trend;
use wirebench_core::units;
use wirebench_load::engine::{EndState, LoadOutcome};
use wirebench_load::hiccup::stalls;
use wirebench_load::os;
use wirebench_load::recorder::{IntervalData, LaneData};

/// A side that used more than this share of its CPUs is bound by them.
pub const BOUND_PCT: f64 = 90.0;
/// An observed server that used less CPU than this per operation, in ns,
/// over at least OBSERVED_IDLE_MIN_OPS operations, did not serve them: no
/// server answers a request in 100 ns of its own CPU.
const OBSERVED_IDLE_NS_PER_OP: f64 = 100.0;
const OBSERVED_IDLE_MIN_OPS: u64 = 20_000;
/// A measured second with more steal than this makes the run noisy.
pub const NOISY_STEAL_PCT: f64 = 5.0;
/// Open loop: a rate below this share of the asked one was not reached.
pub const RATE_REACHED: f64 = 0.95;
/// The machine is busy when the run's threads waited for a CPU this share
/// of the measured time (summed over threads)...
pub const BUSY_RUNQ_SHARE: f64 = 0.10;
/// ...or other processes took this share of one CPU on the run's CPUs.
pub const BUSY_FOREIGN_SHARE: f64 = 0.20;

/// Whether a client's CPU time says anything about saturation: clients
/// that busy-poll (`--poll`, or shm's spinning waits) use their CPUs fully
/// whatever the load.
fn client_cpu_tells_load(spec: &RunSpec) -> bool {
    !spec.poll && spec.transport.describe().cpu_tells_load()
}

/// Whether the embedded server's CPU time says anything about saturation.
fn server_cpu_tells_load(spec: &RunSpec) -> bool {
    let polling = matches!(spec.target, TargetSpec::Embedded { poll: true, .. });
    !polling && spec.transport.describe().cpu_tells_load()
}

/// The CPUs the client may use: no more than its CPUs, nor than its
/// threads that carry the load (a worker per client; shm: a thread per
/// connection, two with a sender and a receiver).
pub fn client_capacity(spec: &RunSpec, placement: &Placement) -> usize {
    let threads = spec.transport.describe().client_threads(
        spec.clients,
        spec.connections(),
        spec.rate_per_s.is_some(),
    );
    threads.min(placement.client_cpus.len()).max(1)
}

/// The client's CPU time, less its timers' spin, as a % of its capacity.
fn client_cpu_pct(spec: &RunSpec, placement: &Placement, s: &Summary) -> Option<f64> {
    let secs = s.measured_ns as f64 / 1e9;
    (secs > 0.0).then(|| {
        let cap = client_capacity(spec, placement) as f64;
        100.0 * (s.client_cpu_s - s.client_timer_spin_s).max(0.0) / (secs * cap)
    })
}

/// The embedded server's CPU time as a % of its CPUs.
fn server_cpu_pct(placement: &Placement, s: &Summary) -> Option<f64> {
    let secs = s.measured_ns as f64 / 1e9;
    let cpus = placement.server_cpus.as_ref()?.len().max(1) as f64;
    Some(100.0 * s.server_cpu_s? / (secs * cpus)).filter(|_| secs > 0.0)
}

/// CPU time on the run's CPUs (client's and server's, once each) over the
/// measured seconds, less what the client and the server used themselves.
fn foreign_cpu_s(s: &Summary, intervals: &[Interval]) -> Option<f64> {
    let mut busy = 0.0;
    let mut seen = false;
    for iv in intervals.iter().filter(|i| i.phase == Phase::Measure) {
        let secs = (iv.end_ns.saturating_sub(iv.start_ns)) as f64 / 1e9;
        let mut cpus: Vec<&CoreBusy> = iv.client_cores.iter().chain(&iv.server_cores).collect();
        cpus.sort_by_key(|c| c.cpu);
        cpus.dedup_by_key(|c| c.cpu);
        for c in cpus {
            busy += c.busy_pct / 100.0 * secs;
            seen = true;
        }
    }
    seen.then(|| (busy - s.client_cpu_s - s.server_cpu_s.unwrap_or(0.0)).max(0.0))
}

/// Fills the summary's verdicts (CPU shares, bound, foreign CPU) from its
/// figures and the per-second series: the one rule the summary, run.json
/// and the report all read.
pub fn judge(spec: &RunSpec, placement: &Placement, s: &mut Summary, intervals: &[Interval]) {
    s.client_cpu_pct = client_cpu_pct(spec, placement, s);
    s.server_cpu_pct = server_cpu_pct(placement, s);
    s.foreign_cpu_s = foreign_cpu_s(s, intervals);
    s.client_bound = client_cpu_tells_load(spec) && s.client_cpu_pct.is_some_and(|p| p > BOUND_PCT);
    s.server_bound = server_cpu_tells_load(spec) && s.server_cpu_pct.is_some_and(|p| p > BOUND_PCT);
}

/// The warnings of a run, from its (judged) summary.
pub fn warnings(spec: &RunSpec, placement: &Placement, s: &Summary) -> Vec<Warning> {
    let mut w = Vec::new();
    // A run in stages changes its rate on purpose.
    if let Some(t) = s.throughput_trend
        && t.drifting
        && spec.stages.is_empty()
    {
        w.push(Warning::Drift {
            drift_pct: t.drift_pct,
        });
    }
    if let Some(h) = s.hiccup
        && h.stalled_seconds > 0
    {
        w.push(Warning::Stalls {
            seconds: h.stalled_seconds,
            max_ns: h.max_ns,
            lost_s: h.lost_s,
            threshold_ns: h.threshold_ns,
        });
    }
    if s.max_steal_pct > NOISY_STEAL_PCT {
        w.push(Warning::Steal {
            max_steal_pct: s.max_steal_pct,
        });
    }
    if cfg!(debug_assertions) {
        w.push(Warning::DebugBuild);
    }
    let client_cpus = client_capacity(spec, placement);
    let server_cpus = placement.server_cpus.as_ref().map_or(0, |c| c.len());
    match (s.client_bound, s.server_bound) {
        // Never two verdicts that contradict each other.
        (true, true) => w.push(Warning::BothBound {
            client_cpu_pct: s.client_cpu_pct.unwrap_or(0.0),
            client_cpus,
            server_cpu_pct: s.server_cpu_pct.unwrap_or(0.0),
            server_cpus,
        }),
        (true, false) => w.push(Warning::ClientBound {
            client_cpu_pct: s.client_cpu_pct.unwrap_or(0.0),
            cpus: client_cpus,
        }),
        (false, true) => w.push(Warning::ServerBound {
            server_cpu_pct: s.server_cpu_pct.unwrap_or(0.0),
            cpus: server_cpus,
        }),
        (false, false) => {}
    }
    let secs = s.measured_ns as f64 / 1e9;
    let runq = s.client_runq_wait_s.unwrap_or(0.0) + s.server_runq_wait_s.unwrap_or(0.0);
    let foreign = s.foreign_cpu_s.unwrap_or(0.0);
    if secs > 0.0 && (runq > BUSY_RUNQ_SHARE * secs || foreign > BUSY_FOREIGN_SHARE * secs) {
        let server_unobserved = spec.observe.is_none()
            && matches!(&spec.target, TargetSpec::External { endpoint } if endpoint.on_this_host());
        w.push(Warning::MachineBusy {
            runq_wait_s: runq,
            foreign_cpu_s: foreign,
            measured_s: secs,
            server_unobserved,
        });
    }
    if spec.poll {
        w.push(Warning::Polling);
    }
    // An observed server that used under OBSERVED_IDLE_NS_PER_OP of CPU an
    // operation over many operations (enough that a real server's CPU
    // shows in the clock's 10 ms ticks) did not serve them.
    if let (Some(obs), Some(cpu_s)) = (&spec.observe, s.server_cpu_s)
        && s.ops >= OBSERVED_IDLE_MIN_OPS
        && cpu_s * 1e9 < OBSERVED_IDLE_NS_PER_OP * s.ops as f64
    {
        w.push(Warning::ObservedIdle {
            server_cpu_s: cpu_s,
            ops: s.ops,
            processes: match &obs.source {
                wirebench_core::spec::ServerSource::Pids(p) => {
                    wirebench_load::procs::PidTree::new(p.clone()).pids().len()
                }
                // A group or a cgroup: counted where it is watched.
                _ => 0,
            },
        });
    }
    if let Some(&requests) = s.failures.get(wirebench_core::result::UNANSWERED) {
        w.push(Warning::Unanswered {
            requests,
            max_wait_ns: s.latency.max_ns,
        });
    }
    if let Some(rate) = s.requested_rate_per_s
        && s.measured_ns > 0
    {
        if s.sent_per_s < RATE_REACHED * rate {
            w.push(Warning::RateNotSent {
                sent_per_s: s.sent_per_s,
                rate_per_s: rate,
                depth: spec.depth,
            });
        }
        if s.ops_per_s < RATE_REACHED * rate && spec.transport.has_response() {
            w.push(Warning::RateNotAnswered {
                ops_per_s: s.ops_per_s,
                rate_per_s: rate,
                errors_per_s: s.errors as f64 / (s.measured_ns as f64 / 1e9),
            });
        }
    }
    w
}

/// A warning for each stage whose requests left behind its rate.
pub fn stage_warnings(stages: &[wirebench_core::ramp::StageResult]) -> Vec<Warning> {
    stages
        .iter()
        .filter(|s| !s.kept_up)
        .map(|s| Warning::StageBehind {
            stage: s.stage,
            text: s.text.clone(),
            asked_per_s: s.asked_per_s,
            sent_per_s: s.sent_per_s,
            late_sends: s.late_sends,
        })
        .collect()
}

/// The hiccup meter's summary (None: off), flagging each second of the
/// series whose worst stall passed the threshold.
fn hiccup(
    spec: &RunSpec,
    measured: Option<&LatencyHist>,
    intervals: &mut [Interval],
) -> Option<HiccupSummary> {
    let threshold_ns = spec.hiccup_threshold_ns?;
    let h = measured?;
    let mut stalled_seconds = 0;
    for iv in intervals.iter_mut() {
        iv.stalled = iv.hiccup_max_ns.is_some_and(|m| m > threshold_ns);
        if iv.stalled && iv.phase == Phase::Measure {
            stalled_seconds += 1;
        }
    }
    let (max_ns, lost_ns) = stalls(h);
    Some(HiccupSummary {
        p99_ns: if h.is_empty() {
            0
        } else {
            h.value_at_quantile(0.99)
        },
        max_ns,
        lost_s: lost_ns as f64 / 1e9,
        stalled_seconds,
        threshold_ns,
        period_ns: wirebench_load::hiccup::PERIOD_NS,
    })
}

/// The result of one measured load: no identity yet (run id, command line,
/// start time) and no server report (the session adds them).
pub fn from_outcome(
    spec: &RunSpec,
    placement: Placement,
    out: &LoadOutcome,
    end: EndState,
) -> RunResult {
    let m = &out.measured;
    let secs = out.measured_ns as f64 / 1e9;
    let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
    let per_op = |cpu: f64| {
        if m.ops > 0 {
            cpu * 1e6 / m.ops as f64
        } else {
            0.0
        }
    };
    let max_busy = out
        .client_cores
        .iter()
        .map(|c| c.busy_pct)
        .fold(0.0, f64::max);
    let measured: Vec<&Interval> = out
        .intervals
        .iter()
        .filter(|iv| iv.phase == Phase::Measure)
        .collect();
    let header = spec.transport.frame_header_bytes();
    let summary = Summary {
        connect_time_ns: out.connect_time_ns,
        messages_sent: m.sent,
        messages_received: m.received,
        ops: m.ops,
        errors: m.errors,
        measured_ns: out.measured_ns,
        ops_per_s: per_s(m.ops),
        bytes_out: m.bytes_out,
        bytes_in: m.bytes_in,
        bytes_per_s_out: per_s(m.bytes_out),
        bytes_per_s_in: per_s(m.bytes_in),
        mib_per_s_out: units::mib(per_s(m.bytes_out)),
        mib_per_s_in: units::mib(per_s(m.bytes_in)),
        // The payload and a header per message, each way.
        wire_bytes_out: (header > 0).then(|| m.bytes_out + m.sent * header),
        wire_bytes_in: (header > 0).then(|| m.bytes_in + m.received * header),
        // An agent's part asks for its connections' share of the rate.
        requested_rate_per_s: spec.rate_per_s.map(|r| match spec.share {
            Some(s) => r * spec.connections() as f64 / s.total as f64,
            None => r,
        }),
        sent_per_s: per_s(m.sent),
        latency: LatencySummary::of(&m.hist),
        service_latency: LatencySummary::of(&m.service),
        schedule_lag: m.lag.as_deref().map(LatencySummary::of),
        client_cpu_s: out.client_cpu_s,
        server_cpu_s: out.server_cpu_s,
        client_cpu_us_per_op: per_op(out.client_cpu_s),
        server_cpu_us_per_op: out.server_cpu_s.map(per_op),
        client_runq_wait_s: out.client_runq_wait_s,
        server_runq_wait_s: out.server_runq_wait_s,
        client_peak_rss_bytes: os::process_peak_rss_bytes(std::process::id()).unwrap_or(0),
        server_peak_rss_bytes: None,
        server_cores_used: out.server_cpu_s.filter(|_| secs > 0.0).map(|c| c / secs),
        ops_per_core_used: out
            .server_cpu_s
            .filter(|c| *c > 0.0 && secs > 0.0)
            .map(|c| m.ops as f64 / c),
        server_allocator: None,
        server_threads: out.server_switches.map(|(v, i)| result::ServerThreads {
            groups: out.server_groups.clone(),
            voluntary_switches: v,
            involuntary_switches: i,
            cpuset: placement.server_cpus.clone(),
            outside_cpuset: vec![],
        }),
        client_core_max_busy_pct: max_busy,
        client_timer_spin_s: m.timer_spin_ns as f64 / 1e9,
        client_cpu_pct: None,
        server_cpu_pct: None,
        foreign_cpu_s: None,
        client_bound: false,
        server_bound: false,
        max_steal_pct: max_steal_pct(&measured),
        by_op: m
            .by_op
            .iter()
            .map(|(k, d)| (k.to_string(), op_summary(d, &per_s)))
            .collect(),
        failures: m.failures.clone(),
        tool: out.tool.as_ref().map(|t| t.report.clone()),
        hiccup: None,
        throughput_trend: throughput_trend(&measured),
    };
    let intervals: Vec<Interval> = out.intervals.clone();
    let mut summary = summary;
    // exec: the program's own statistics and rate.
    if let Some(t) = &out.tool {
        if !t.report.histogram {
            summary.latency = t.latency;
            summary.service_latency = t.latency;
        }
        if let Some(r) = t.ops_per_s {
            summary.ops_per_s = r;
        }
    }
    let mut intervals = intervals;
    summary.hiccup = hiccup(spec, out.hiccup.as_ref(), &mut intervals);
    judge(spec, &placement, &mut summary, &intervals);
    let mut warnings = warnings(spec, &placement, &summary);
    let stages =
        wirebench_core::ramp::judge::results(&own_stages(spec), spec.warmup_ns, &intervals);
    warnings.extend(stage_warnings(&stages));
    let (state, reason) = end_state(end, m, out.measured_ns);
    RunResult {
        schema_version: result::SCHEMA_VERSION,
        run_id: String::new(),
        command_line: Vec::new(),
        started_at: String::new(),
        spec: spec.clone(),
        env: Environment::capture(env!("CARGO_PKG_VERSION"), crate::GIT_REVISION),
        placement,
        status: RunStatus { state, reason },
        summary,
        intervals,
        latency_hist: hist::encode(&m.hist),
        service_hist: hist::encode(&m.service),
        server: None,
        prepare: None,
        cleanup: None,
        slos: Vec::new(),
        warnings,
        merged_from: Vec::new(),
        trace: None,
        agents: Vec::new(),
        endpoints: by_endpoint(spec, m, secs),
        agents_window: None,
        stages,
        ramp: None,
        point: Vec::new(),
        cpu_seconds: out.cpu_seconds.clone(),
        instances: vec![],
    }
}

/// The most the hypervisor took of any CPU of the run in a measured second.
fn max_steal_pct(measured: &[&Interval]) -> f64 {
    measured
        .iter()
        .flat_map(|iv| iv.client_cores.iter().chain(&iv.server_cores))
        .map(|c| c.steal_pct)
        .fold(0.0, f64::max)
}

/// The trend of the measured whole seconds' throughput.
fn throughput_trend(measured: &[&Interval]) -> Option<Trend> {
    Trend::of(
        &measured
            .iter()
            .filter(|iv| iv.seconds() >= 0.9)
            .map(|iv| iv.ops as f64 / iv.seconds())
            .collect::<Vec<_>>(),
    )
}

/// One operation type's figures (typed calls: S3's get, put...).
fn op_summary(
    d: &wirebench_load::recorder::OpData,
    per_s: &dyn Fn(u64) -> f64,
) -> result::OpSummary {
    let bytes = d.bytes_in + d.bytes_out;
    result::OpSummary {
        ops: d.ops,
        errors: d.errors,
        ops_per_s: per_s(d.ops),
        bytes_out: d.bytes_out,
        bytes_in: d.bytes_in,
        bytes_per_s: per_s(bytes),
        mib_per_s: units::mib(per_s(bytes)),
        latency: LatencySummary::of(&d.hist),
        ttfb: (d.ttfb_count > 0).then(|| LatencySummary::of(&d.ttfb)),
        latency_hist: hist::encode(&d.hist),
        ttfb_hist: hist::encode(&d.ttfb),
        connect: d.connect.as_deref().map(LatencySummary::of),
        tls: d.tls.as_deref().map(LatencySummary::of),
        statuses: d
            .statuses
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(class, n)| {
                let name = match class {
                    0 => "other".to_string(),
                    c => format!("{c}xx"),
                };
                (name, *n)
            })
            .collect(),
    }
}

/// How the run ended, and why: a run that measured nothing is a failure,
/// never "complete".
fn end_state(
    end: EndState,
    m: &wirebench_load::recorder::IntervalData,
    measured_ns: u64,
) -> (RunState, Option<String>) {
    match end {
        EndState::Complete if m.ops == 0 && m.errors > 0 => (
            RunState::Failed,
            Some(format!(
                "every operation of the measured phase ({:.1} s) failed: {}",
                measured_ns as f64 / 1e9,
                if m.failures.is_empty() {
                    format!("{} errors", m.errors)
                } else {
                    m.failures
                        .iter()
                        .map(|(cause, n)| format!("{n} x {cause}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        ),
        EndState::Complete if m.ops == 0 => (
            RunState::Failed,
            Some(format!(
                "the measured phase ({:.1} s) completed no operation: the server took connections but answered nothing this client counts",
                measured_ns as f64 / 1e9
            )),
        ),
        EndState::Complete => (RunState::Complete, None),
        EndState::Ended(_) if m.ops == 0 => (
            RunState::Failed,
            Some("ended before the measured phase completed any operation".into()),
        ),
        EndState::Ended(r) => (RunState::Complete, Some(r)),
        EndState::Interrupted(r) => (RunState::Interrupted, Some(r)),
        EndState::Failed(r) => (RunState::Failed, Some(r)),
    }
}

/// A run against several endpoints: each one's part of the measured phase
/// (its lane), in the order given. Their counts add up to the run's.
fn by_endpoint(spec: &RunSpec, m: &IntervalData, secs: f64) -> Vec<result::EndpointPart> {
    let TargetSpec::External { endpoint } = &spec.target else {
        return vec![];
    };
    if spec.also_target.is_empty() || !spec.agents.is_empty() {
        return vec![];
    }
    let all: Vec<&Endpoint> = std::iter::once(endpoint).chain(&spec.also_target).collect();
    let conns = wirebench_load::spread::connections_per_lane(spec.connections(), all.len());
    let none = LaneData::default();
    all.iter()
        .zip(conns)
        .enumerate()
        .map(|(k, (e, connections))| {
            let d = m.lanes.get(&k).unwrap_or(&none);
            let lat = LatencySummary::of(&d.hist);
            result::EndpointPart {
                endpoint: e.to_string(),
                agents: vec![],
                connections,
                ops: d.ops,
                errors: d.errors,
                ops_per_s: if secs > 0.0 { d.ops as f64 / secs } else { 0.0 },
                p50_ns: lat.p50_ns,
                p99_ns: lat.p99_ns,
            }
        })
        .collect()
}

/// The stages this process was asked to send: an agent's part sends its
/// connections' share of every stage (what its rows are judged against).
fn own_stages(spec: &RunSpec) -> Vec<wirebench_core::stages::Stage> {
    let part = match &spec.share {
        Some(sh) if sh.total > 0 => (spec.clients * spec.conns_per_client) as f64 / sh.total as f64,
        _ => 1.0,
    };
    spec.stages
        .iter()
        .map(|s| wirebench_core::stages::Stage {
            from_per_s: s.from_per_s * part,
            to_per_s: s.to_per_s * part,
            ..*s
        })
        .collect()
}

#[cfg(test)]
mod tests;
