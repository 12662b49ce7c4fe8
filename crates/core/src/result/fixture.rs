//! Results for tests (of this crate and of those that read results).
// Small figures of its own making.
#![allow(clippy::cast_possible_truncation)]

use super::*;
use crate::hist;
use crate::spec::*;

/// A measured second: `ops_per_s` operations, latency `lat_ns` for all.
pub fn interval(k: u64, ops_per_s: f64, lat_ns: u64) -> Interval {
    let mut h = hist::new_hist();
    h.saturating_record_n(lat_ns.max(1), ops_per_s as u64);
    Interval {
        start_ns: k * 1_000_000_000,
        end_ns: (k + 1) * 1_000_000_000,
        phase: Phase::Measure,
        ops: ops_per_s as u64,
        bytes_out: 0,
        bytes_in: 0,
        errors: 0,
        ops_per_s,
        sent: ops_per_s as u64,
        latency: hist::LatencySummary::of(&h),
        service_latency: hist::LatencySummary::of(&h),
        latency_hist: hist::encode(&h),
        client_cores: vec![],
        server_cores: vec![],
        hiccup_max_ns: None,
        hiccup_lost_ns: None,
        stalled: false,
        partial: false,
        program_busy_pct: vec![],
        program_in_flight: None,
        server_share: vec![],
        server_groups: vec![],
    }
}

pub fn sample() -> RunResult {
    let mut h = hist::new_hist();
    hist::record(&mut h, 12_345);
    RunResult {
        schema_version: SCHEMA_VERSION,
        run_id: "20261122T201100Z-echo-reactor-abcd".into(),
        command_line: vec!["wirebench".into(), "run".into()],
        started_at: "2026-11-22T20:11:00Z".into(),
        spec: RunSpec {
            transport: MsgrSpec {
                mode: MsgrMode::Echo,
                size_bytes: 64,
                response_size_bytes: 64,
                max_frame_bytes: 16 << 20,
            }
            .into(),
            target: TargetSpec::Embedded {
                arch: Some(Arch::Reactor),
                cpus: CpuList::parse("1").unwrap(),
                poll: false,
                listen: "tcp://127.0.0.1:0".parse().unwrap(),
            },
            clients: 1,
            conns_per_client: 1,
            depth: 1,
            rate_per_s: None,
            arrival: Arrival::Uniform,
            stop: StopSpec::DurationNs(5_000_000_000),
            warmup_ns: 1_000_000_000,
            op_timeout_ns: 10_000_000_000,
            hiccup_threshold_ns: None,
            poll: false,
            verify: false,
            client_cpus: CpuList::parse("0").unwrap(),
            trace_sample: None,
            observe: None,
            server_env: Default::default(),
            also_target: vec![],
            agents: vec![],
            share: None,
            labels: Default::default(),
            stages: vec![],
        },
        env: Environment::capture("0.1.0", "deadbeef"),
        placement: Placement {
            client_cpus: CpuList::parse("0").unwrap(),
            server_cpus: Some(CpuList::parse("1").unwrap()),
            notes: vec![],
            policy: None,
        },
        status: RunStatus {
            state: RunState::Complete,
            reason: None,
        },
        summary: Summary {
            ops: 1,
            latency: hist::LatencySummary::of(&h),
            ..Summary::default()
        },
        intervals: vec![],
        latency_hist: hist::encode(&h),
        service_hist: hist::encode(&h),
        server: None,
        prepare: None,
        cleanup: None,
        slos: vec![],
        warnings: vec![],
        merged_from: Vec::new(),
        trace: None,
        agents: Vec::new(),
        endpoints: Vec::new(),
        agents_window: None,
        stages: vec![],
        ramp: None,
        point: Vec::new(),
        cpu_seconds: Vec::new(),
        instances: Vec::new(),
    }
}
