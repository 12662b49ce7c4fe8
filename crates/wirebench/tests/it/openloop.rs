//! Open loop and the fault-injecting servers: the measurement itself is
//! tested against servers whose behaviour is known.

use crate::helpers::*;
use wirebench_core::result::RunState;

/// The first and the last usable CPU: client and server apart.
fn cpus() -> (String, String) {
    let topo = wirebench_core::topo::Topology::read().usable();
    let c = topo.cpus();
    (c[0].to_string(), c[c.len() - 1].to_string())
}

#[test]
fn open_loop_measures_an_injected_delay() {
    let _g = exclusive();
    let (client, server) = cpus();
    // Busy-polling on both sides: waking an idle vCPU would add tens of
    // microseconds that have nothing to do with the 1 ms under test.
    let srv = Server::start(&["--cpus", &server, "--delay", "1ms", "--poll"]);
    let dir = TempDir::new("delay");
    let args = [
        "--target",
        &srv.endpoint,
        "--rate",
        "500",
        "--poll",
        "--client-cpus",
        &client,
        "--duration",
        "3s",
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let p50 = r.summary.latency.p50_ns;
    assert!((1_000_000..=1_150_000).contains(&p50), "p50 {p50} ns");
    assert!(
        (r.summary.sent_per_s - 500.0).abs() < 25.0,
        "sent {}/s",
        r.summary.sent_per_s
    );
    srv.stop();
}

#[test]
fn open_loop_exposes_stalls_that_a_closed_loop_hides() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server, "--stall", "100ms/1s"]);
    let dir = TempDir::new("stall");
    // One connection, one request outstanding at most: during a stall the
    // timetable's requests wait in the client, late; latency counts that.
    let open = [
        "--target",
        &srv.endpoint,
        "--rate",
        "1000",
        "--depth",
        "1",
        "--client-cpus",
        &client,
    ];
    let mut args = open.to_vec();
    args.extend(["--duration", "10s", "--warmup", "0s"]);
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete);
    let ms = |ns: u64| ns as f64 / 1e6;
    let p99 = ms(r.summary.latency.p99_ns);
    assert!(
        (70.0..=110.0).contains(&p99),
        "open-loop latency p99 {p99} ms"
    );
    let service_p99 = ms(r.summary.service_latency.p99_ns);
    assert!(service_p99 < 20.0, "service-time p99 {service_p99} ms");

    let closed = [
        "--target",
        &srv.endpoint,
        "--depth",
        "1",
        "--client-cpus",
        &client,
        "--duration",
        "3s",
    ];
    let (st, r, err) = run_json(&dir, &closed);
    assert!(st.success(), "{err}");
    let closed_p99 = ms(r.summary.latency.p99_ns);
    assert!(
        closed_p99 < 20.0,
        "closed-loop p99 {closed_p99} ms: the stall should hide in a closed loop"
    );
    assert!(
        ms(r.summary.latency.max_ns) >= 50.0,
        "the stall shows in the closed loop's max only"
    );
    srv.stop();
}

#[test]
fn a_rate_the_server_cannot_take_is_reported_as_missed() {
    let _g = shared();
    // 2 workers x 1 ms: capacity 2,000/s; ask for 4,000/s.
    let srv = Server::start(&["--service", "1ms", "--workers", "2"]);
    let dir = TempDir::new("missed");
    let args = [
        "--target",
        &srv.endpoint,
        "--rate",
        "4000",
        "--conns-per-client",
        "4",
        "--duration",
        "2s",
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let completed = r.summary.ops_per_s;
    assert!(
        (1700.0..=2100.0).contains(&completed),
        "completed {completed}/s"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("target rate not reached") && w.contains("answered")),
        "{:?}",
        r.warnings
    );
    srv.stop();
}
