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
    const VOLATILE: [&str; 34] = [
        "hiccup",
        "messages_sent",
        "bytes_out",
        "client_bound",
        "client_cpu_pct",
        "server_cpu_pct",
        "foreign_cpu_s",
        "client_timer_spin_s",
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
        "bytes_per_s_out",
        "bytes_per_s_in",
        "mib_per_s_out",
        "mib_per_s_in",
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
    // Which build, and what this machine did meanwhile (how busy its
    // CPUs were, steal, stalls, timer drift), vary too.
    r.warnings.retain(|w| {
        !matches!(
            w,
            Warning::DebugBuild
                | Warning::ClientBound { .. }
                | Warning::MachineBusy { .. }
                | Warning::Steal { .. }
                | Warning::Stalls { .. }
                | Warning::Drift { .. }
        )
    });
    let mut v = serde_json::to_value(&r).unwrap();
    settle(&mut v);
    insta::assert_snapshot!(serde_json::to_string_pretty(&v).unwrap());
}

/// A judged summary of a 5 s run of `json` with these CPU figures and
/// per-second busy % of CPU 0 (client) and 1 (server).
fn judged(
    json: &str,
    client_cpu_s: f64,
    server_cpu_s: f64,
    busy: (f64, f64),
    tweak: impl Fn(&mut Summary),
) -> (Summary, Vec<Warning>) {
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    let (spec, placement) = serde_json::from_str::<RunRequest>(json)
        .unwrap()
        .check(&topo)
        .unwrap();
    let mut s = Summary {
        measured_ns: 5_000_000_000,
        ops: 1000,
        client_cpu_s,
        server_cpu_s: Some(server_cpu_s),
        ..Summary::default()
    };
    tweak(&mut s);
    let core = |cpu, busy_pct| CoreBusy {
        cpu,
        busy_pct,
        steal_pct: 0.0,
    };
    let intervals: Vec<Interval> = (0..5)
        .map(|k| {
            let mut i = wirebench_core::result::fixture::interval(k, 200.0, 50_000);
            i.client_cores = vec![core(0, busy.0)];
            i.server_cores = vec![core(1, busy.1)];
            i
        })
        .collect();
    judge(&spec, &placement, &mut s, &intervals);
    let w = warnings(&spec, &placement, &s)
        .into_iter()
        .filter(|w| !matches!(w, Warning::DebugBuild))
        .collect();
    (s, w)
}

fn kinds(w: &[Warning]) -> Vec<String> {
    w.iter()
        .map(|w| {
            serde_json::to_value(w).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn issue_15_hints_come_from_the_right_evidence() {
    // A busy process beside the client: its CPU is 100% busy, but the
    // client itself used 20% of it. The machine is busy; the client is
    // not the limit.
    let (s, w) = judged("{}", 1.0, 2.5, (100.0, 50.0), |_| {});
    assert!(!s.client_bound, "{s:?}");
    assert_eq!(kinds(&w), ["machine_busy"]);
    assert!((s.foreign_cpu_s.unwrap() - 4.0).abs() < 1e-9, "{s:?}");
    assert!(
        w[0].to_string()
            .contains("other processes took 4.00 s of CPU"),
        "{}",
        w[0]
    );
    // The server's core saturated, the client's half idle: server-bound.
    let (s, w) = judged("{}", 2.5, 4.9, (50.0, 98.0), |_| {});
    assert!(s.server_bound && !s.client_bound, "{s:?}");
    assert_eq!(kinds(&w), ["server_bound"]);
    assert!(
        w[0].to_string()
            .contains("the server used 98% of its 1 CPU(s)"),
        "{}",
        w[0]
    );
    // The client used its CPU: client-bound...
    let (s, w) = judged("{}", 4.8, 2.0, (96.0, 40.0), |_| {});
    assert!(s.client_bound, "{s:?}");
    assert_eq!(kinds(&w), ["client_bound"]);
    // ...unless it busy-polls (its CPU is full whatever the load)...
    let (s, _) = judged(r#"{"poll": true}"#, 4.8, 4.8, (96.0, 96.0), |_| {});
    assert!(!s.client_bound && !s.server_bound, "{s:?}");
    // ...or the CPU went into the open loop's timer spinning on purpose.
    let (s, _) = judged(r#"{"rate": 20000}"#, 4.8, 1.0, (97.0, 20.0), |s| {
        s.client_timer_spin_s = 4.0;
    });
    assert!(!s.client_bound, "{s:?}");
    // Threads waiting for a CPU: 0.6 s of run-queue wait in 5 s.
    let (_, w) = judged("{}", 2.0, 2.0, (40.0, 40.0), |s| {
        s.client_runq_wait_s = Some(0.6);
    });
    assert_eq!(kinds(&w), ["machine_busy"]);
    assert!(
        w[0].to_string().contains("waited 0.60 s for a CPU"),
        "{}",
        w[0]
    );
    // A quiet run raises nothing.
    let (_, w) = judged("{}", 2.0, 2.0, (40.0, 40.0), |_| {});
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn issue_35_one_verdict_on_the_limit_and_the_server_named_among_others() {
    // Both saturated: one warning, never "client-bound" beside
    // "server-bound".
    let (s, w) = judged("{}", 4.9, 4.9, (98.0, 98.0), |_| {});
    assert!(s.client_bound && s.server_bound, "{s:?}");
    assert_eq!(kinds(&w), ["both_bound"]);
    let text = w[0].to_string();
    assert!(text.contains("either may be the limit"), "{text}");
    // A server on this host that nothing observes: its CPU is among the
    // other processes', and the warning says so (a placement note too).
    let json = r#"{"target": "redis://127.0.0.1:6379"}"#;
    let (_, w) = judged(json, 1.0, 0.0, (100.0, 100.0), |s| s.server_cpu_s = None);
    assert_eq!(kinds(&w), ["machine_busy"]);
    assert!(
        w[0].to_string()
            .contains("the server under test runs on this host unobserved"),
        "{}",
        w[0]
    );
    let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
    let (_, p) = serde_json::from_str::<RunRequest>(json)
        .unwrap()
        .check(&topo)
        .unwrap();
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("the server runs on this host, unobserved")),
        "{:?}",
        p.notes
    );
    // Beyond this host, or observed: not said.
    let far = r#"{"target": "redis://10.0.0.7:6379"}"#;
    let (_, w) = judged(far, 1.0, 0.0, (100.0, 100.0), |s| s.server_cpu_s = None);
    assert!(!w[0].to_string().contains("unobserved"), "{}", w[0]);
}
