//! From what the engine measured to a [`RunResult`]: the summary of the
//! measured phase, the per-second series, and the warnings. The rules that
//! raise each [`Warning`] live here and nowhere else: the summary, run.json
//! and the report read the result, never apply a rule of their own.

use wirebench_core::env::Environment;
use wirebench_core::hist::{self, LatencySummary};
use wirebench_core::result::{
    self, CoreBusy, Interval, Phase, Placement, RunResult, RunState, RunStatus, Summary, Warning,
};
use wirebench_core::spec::{Channel, RunSpec, TransportSpec, Wait};
use wirebench_core::stats::Trend;
use wirebench_load::engine::{EndState, LoadOutcome};
use wirebench_load::os;

/// A client core busier than this is "hot".
pub const HOT_CORE_PCT: f64 = 90.0;
/// A measured second with more steal than this makes the run noisy.
pub const NOISY_STEAL_PCT: f64 = 5.0;
/// Open loop: a rate below this share of the asked one was not reached.
pub const RATE_REACHED: f64 = 0.95;

/// Whether the client's busy % says anything about saturation: cores that
/// busy-poll (the client's `--poll`, or shm's spinning waits) are always
/// 100% busy, whatever the load.
fn client_cores_tell_load(spec: &RunSpec) -> bool {
    let spinning = matches!(&spec.transport, TransportSpec::Shm(s) if s.channel == Channel::Shm && s.wait != Wait::Futex);
    !spec.poll && !spinning
}

/// The client-bound rule: a client core over [`HOT_CORE_PCT`] busy over
/// the measured phase, on a client whose busy % tells the load. Returns
/// the hot cores.
pub fn client_bound(spec: &RunSpec, client_cores: &[CoreBusy]) -> Vec<CoreBusy> {
    if !client_cores_tell_load(spec) {
        return Vec::new();
    }
    client_cores
        .iter()
        .filter(|c| c.busy_pct > HOT_CORE_PCT)
        .copied()
        .collect()
}

/// The warnings of a run, from its summary and its client cores.
pub fn warnings(spec: &RunSpec, s: &Summary, client_cores: &[CoreBusy]) -> Vec<Warning> {
    let mut w = Vec::new();
    if let Some(t) = s.throughput_trend
        && t.drifting
    {
        w.push(Warning::Drift {
            drift_pct: t.drift_pct,
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
    let hot = client_bound(spec, client_cores);
    if !hot.is_empty() {
        w.push(Warning::ClientBound { cores: hot });
    }
    if spec.poll {
        w.push(Warning::Polling);
    }
    if let Some(rate) = spec.rate_per_s
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
            });
        }
    }
    w
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
    let measured: Vec<&wirebench_load::engine::IntervalReport> = out
        .intervals
        .iter()
        .filter(|iv| iv.phase == Phase::Measure)
        .collect();
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
        mb_per_s_out: per_s(m.bytes_out) / 1e6,
        mb_per_s_in: per_s(m.bytes_in) / 1e6,
        requested_rate_per_s: spec.rate_per_s,
        sent_per_s: per_s(m.sent),
        latency: LatencySummary::of(&m.hist),
        service_latency: LatencySummary::of(&m.service),
        client_cpu_s: out.client_cpu_s,
        server_cpu_s: out.server_cpu_s,
        client_cpu_us_per_op: per_op(out.client_cpu_s),
        server_cpu_us_per_op: out.server_cpu_s.map(per_op),
        client_runq_wait_s: out.client_runq_wait_s,
        server_runq_wait_s: out.server_runq_wait_s,
        client_peak_rss_bytes: os::process_peak_rss_bytes(std::process::id()).unwrap_or(0),
        server_peak_rss_bytes: None,
        client_core_max_busy_pct: max_busy,
        client_bound: !client_bound(spec, &out.client_cores).is_empty(),
        max_steal_pct: measured
            .iter()
            .flat_map(|iv| iv.client_cores.iter().chain(&iv.server_cores))
            .map(|c| c.steal_pct)
            .fold(0.0, f64::max),
        by_op: m
            .by_op
            .iter()
            .map(|(k, d)| {
                let bytes = d.bytes_in + d.bytes_out;
                let op = result::OpSummary {
                    ops: d.ops,
                    errors: d.errors,
                    ops_per_s: per_s(d.ops),
                    bytes_out: d.bytes_out,
                    bytes_in: d.bytes_in,
                    mb_per_s: per_s(bytes) / 1e6,
                    latency: LatencySummary::of(&d.hist),
                    ttfb: (d.ttfb_count > 0).then(|| LatencySummary::of(&d.ttfb)),
                    latency_hist: hist::encode(&d.hist),
                    ttfb_hist: hist::encode(&d.ttfb),
                };
                (k.to_string(), op)
            })
            .collect(),
        failures: m.failures.clone(),
        throughput_trend: Trend::of(
            &measured
                .iter()
                .filter(|iv| iv.seconds() >= 0.9)
                .map(|iv| iv.data.ops as f64 / iv.seconds())
                .collect::<Vec<_>>(),
        ),
    };
    let warnings = warnings(spec, &summary, &out.client_cores);
    let intervals = out
        .intervals
        .iter()
        .map(|iv| Interval {
            start_ns: iv.start_ns,
            end_ns: iv.end_ns,
            phase: iv.phase,
            ops: iv.data.ops,
            bytes_out: iv.data.bytes_out,
            bytes_in: iv.data.bytes_in,
            errors: iv.data.errors,
            ops_per_s: if iv.seconds() > 0.0 {
                iv.data.ops as f64 / iv.seconds()
            } else {
                0.0
            },
            sent: iv.data.sent,
            latency: LatencySummary::of(&iv.data.hist),
            service_latency: LatencySummary::of(&iv.data.service),
            latency_hist: hist::encode(&iv.data.hist),
            client_cores: iv.client_cores.clone(),
            server_cores: iv.server_cores.clone(),
        })
        .collect();
    let (state, reason) = match end {
        // A run that measured nothing is a failure, never "complete".
        EndState::Complete if m.ops == 0 => (
            RunState::Failed,
            Some(format!(
                "the measured phase ({:.1} s) completed no operation: the server took connections but answered nothing this client counts",
                out.measured_ns as f64 / 1e9
            )),
        ),
        EndState::Complete => (RunState::Complete, None),
        EndState::Interrupted(r) => (RunState::Interrupted, Some(r)),
        EndState::Failed(r) => (RunState::Failed, Some(r)),
    };
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;
    use wirebench_core::request::RunRequest;
    use wirebench_core::topo::{CpuList, Topology};
    use wirebench_load::engine::{self, NoObserver};
    use wirebench_load::mock::MockTransport;
    use wirebench_load::transport::Pattern;

    /// Replaces what timing and the machine decide (latencies, rates, CPU,
    /// memory, the environment) so that the snapshot holds run.json's
    /// shape and the figures a count-mode run fixes exactly.
    fn settle(v: &mut serde_json::Value) {
        const VOLATILE: [&str; 27] = [
            "messages_sent",
            "bytes_out",
            "client_bound",
            "latency",
            "service_latency",
            "latency_hist",
            "service_hist",
            "ttfb_hist",
            "env",
            "connect_time_ns",
            "measured_ns",
            "ops_per_s",
            "sent_per_s",
            "mb_per_s_out",
            "mb_per_s_in",
            "client_cpu_s",
            "server_cpu_s",
            "client_cpu_us_per_op",
            "server_cpu_us_per_op",
            "client_runq_wait_s",
            "server_runq_wait_s",
            "client_peak_rss_bytes",
            "client_core_max_busy_pct",
            "intervals",
            "throughput_trend",
            "max_steal_pct",
            "prefix",
        ];
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if VOLATILE.contains(&k.as_str()) {
                        *x = serde_json::Value::String("[varies]".into());
                    } else {
                        settle(x);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(settle),
            _ => {}
        }
    }

    #[test]
    fn the_run_json_of_a_mock_transport_run() {
        let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
        let req: RunRequest =
            serde_json::from_str(r#"{"count": 1000, "depth": 4, "clients": 2, "warmup": "0s"}"#)
                .unwrap();
        let (spec, placement) = req.check(&topo).unwrap();
        let cfg = crate::session::load_config(&spec, &placement, None);
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(50),
        ));
        let out = engine::run_load(t, &cfg, &mut NoObserver);
        let r = from_outcome(&spec, placement, &out, out.end.clone());
        assert_eq!(r.summary.ops, 1000);
        assert_eq!(r.summary.latency.count, 1000);
        let mut r = r;
        // Which build, and how busy this machine's CPU 0 was, vary too.
        r.warnings
            .retain(|w| !matches!(w, Warning::DebugBuild | Warning::ClientBound { .. }));
        let mut v = serde_json::to_value(&r).unwrap();
        settle(&mut v);
        insta::assert_snapshot!(serde_json::to_string_pretty(&v).unwrap());
    }

    #[test]
    fn one_client_bound_rule_with_its_exceptions() {
        let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
        let check = |json: &str| {
            serde_json::from_str::<RunRequest>(json)
                .unwrap()
                .check(&topo)
                .unwrap()
                .0
        };
        let hot = [CoreBusy {
            cpu: 0,
            busy_pct: 97.0,
            steal_pct: 0.0,
        }];
        assert_eq!(client_bound(&check("{}"), &hot).len(), 1);
        assert!(client_bound(&check(r#"{"poll": true}"#), &hot).is_empty());
        assert!(client_bound(&check(r#"{"transport": "shm", "wait": "spin"}"#), &hot).is_empty());
        assert!(
            client_bound(&check(r#"{"transport": "shm", "wait": "adaptive"}"#), &hot).is_empty()
        );
        assert_eq!(
            client_bound(&check(r#"{"transport": "shm", "wait": "futex"}"#), &hot).len(),
            1
        );
        assert_eq!(
            client_bound(&check(r#"{"transport": "shm", "channel": "pipe"}"#), &hot).len(),
            1
        );
    }
}
