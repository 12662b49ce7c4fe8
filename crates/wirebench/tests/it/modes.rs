//! Both server designs in every mode, payloads verified, and depth honoured.

use crate::helpers::*;
use wirebench_core::result::RunState;

#[test]
fn both_architectures_in_every_mode_with_verification() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        for mode in ["echo", "oneway", "stream", "rr"] {
            let dir = TempDir::new("modes");
            let mut args = vec![
                "--arch",
                arch,
                "--mode",
                mode,
                "--verify",
                "--duration",
                "1s",
                "--warmup",
                "200ms",
            ];
            args.extend(["--clients", "2", "--conns-per-client", "2"]);
            if mode != "stream" {
                args.extend(["--depth", "4"]);
            }
            if mode == "echo" || mode == "rr" {
                args.extend(["--size", "100", "--response-size", "3000"]);
            }
            let (st, r, err) = run_json(&dir, &args);
            let what = format!("{arch} {mode}: {err}");
            assert!(st.success(), "{what}");
            assert_eq!(r.status.state, RunState::Complete, "{what}");
            assert!(r.summary.ops > 0, "{what}");
            assert_eq!(r.summary.errors, 0, "{what}");
            let stats = r
                .server
                .as_ref()
                .and_then(|s| s.stats)
                .expect("server stats");
            assert_eq!(stats.conns_accepted, 4, "{what}");
            assert_eq!(stats.conns_refused, 0, "{what}");
            match mode {
                "echo" | "rr" => {
                    assert_eq!(r.summary.latency.count, r.summary.ops, "{what}");
                    assert!(stats.frames_out >= r.summary.ops, "{what}");
                }
                // The server may be stopped before it read the last frames
                // in flight; it cannot have read more than were sent (the
                // measured sends, plus one batch per connection sent as the
                // run ended: 4 connections x depth 4).
                "oneway" => {
                    let sent: u64 = r.intervals.iter().map(|iv| iv.sent).sum();
                    assert!(
                        stats.frames_in > 0 && stats.frames_in <= sent + 4 * 4,
                        "{what}: {} of {sent}",
                        stats.frames_in
                    )
                }
                _ => assert!(
                    r.summary.bytes_in > 0 && stats.frames_out >= r.summary.ops,
                    "{what}"
                ),
            }
        }
    }
}

#[test]
fn the_server_never_sees_more_than_depth_outstanding_per_connection() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        let dir = TempDir::new("depth");
        let args = [
            "--arch",
            arch,
            "--clients",
            "2",
            "--conns-per-client",
            "3",
            "--depth",
            "5",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ];
        let (st, r, err) = run_json(&dir, &args);
        assert!(st.success(), "{err}");
        let stats = r.server.and_then(|s| s.stats).expect("server stats");
        assert!(stats.max_outstanding_per_conn >= 1);
        assert!(stats.max_outstanding_per_conn <= 5, "{arch}: {stats:?}");
        assert!(r.summary.messages_sent >= r.summary.ops);
    }
}

#[test]
fn unix_socket_runs_and_leaves_no_socket_file() {
    let _g = shared();
    let dir = TempDir::new("unix");
    let sock = dir.path().join("wb.sock");
    let listen = format!("unix:{}", sock.display());
    let (st, r, err) = run_json(
        &dir,
        &[
            "--listen", &listen, "--count", "300", "--warmup", "0s", "--verify",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.ops, 300);
    assert!(!sock.exists(), "the socket file was left behind");
}

#[test]
fn poll_mode_runs_on_both_sides_and_is_recorded() {
    let _g = shared();
    let dir = TempDir::new("poll");
    let (st, r, err) = run_json(&dir, &["--poll", "--duration", "1s", "--warmup", "0s"]);
    assert!(st.success(), "{err}");
    assert!(r.spec.poll);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.to_string().contains("busy-polling"))
    );
    assert!(r.summary.ops > 0);
}

#[test]
fn issue_3_memory_stays_bounded_whatever_depth_x_size() {
    let _g = shared();
    // 64 requests of 1 byte outstanding, each answered by 4 MiB: building all
    // answers at once would take 256 MiB on each side.
    let dir = TempDir::new("bounded");
    let args = [
        "--size",
        "1",
        "--response-size",
        "4MiB",
        "--depth",
        "64",
        "--count",
        "300",
        "--warmup",
        "0s",
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.ops, 300);
    let mib = |b: u64| b / (1 << 20);
    assert!(
        mib(r.summary.client_peak_rss_bytes) < 96,
        "client: {} MiB",
        mib(r.summary.client_peak_rss_bytes)
    );
    let server = r.summary.server_peak_rss_bytes.expect("server RSS");
    assert!(mib(server) < 96, "server: {} MiB", mib(server));
}

/// Issue 36: msgr's payload figure is the bytes the client wrote less the
/// 16-byte frame headers; the wire bytes, the payload plus a header per
/// message, are what the embedded server read and wrote; throughput is in
/// MiB/s of payload.
#[test]
fn issue_36_msgr_payload_is_the_wire_less_the_frame_headers() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        let dir = TempDir::new("payload");
        let args = [
            "--arch",
            arch,
            "--size",
            "4KiB",
            "--response-size",
            "100",
            "--count",
            "3000",
            "--warmup",
            "0",
            "--depth",
            "4",
            "--conns-per-client",
            "2",
        ];
        let (st, r, err) = run_json(&dir, &args);
        assert!(st.success(), "{arch}: {err}");
        let s = &r.summary;
        assert_eq!(s.ops, 3000, "{arch}");
        assert_eq!(s.messages_sent, 3000, "{arch}");
        assert_eq!(s.bytes_out, 3000 * 4096, "{arch}: payload out");
        assert_eq!(s.bytes_in, 3000 * 100, "{arch}: payload in");
        assert_eq!(s.wire_bytes_out, Some(3000 * (4096 + 16)), "{arch}");
        assert_eq!(s.wire_bytes_in, Some(3000 * (100 + 16)), "{arch}");
        let stats = r
            .server
            .as_ref()
            .and_then(|x| x.stats)
            .expect("server stats");
        // What the server read is what the client wrote: the wire bytes.
        assert_eq!(Some(stats.bytes_in), s.wire_bytes_out, "{arch}");
        assert_eq!(Some(stats.bytes_out), s.wire_bytes_in, "{arch}");
        let secs = s.measured_ns as f64 / 1e9;
        let mib = s.bytes_out as f64 / secs / 1_048_576.0;
        assert!((s.mib_per_s_out - mib).abs() < 1e-6 * mib, "{arch}");
        let exact = s.bytes_out as f64 / secs;
        assert!((s.bytes_per_s_out - exact).abs() < 1e-9 * exact, "{arch}");
        let text = std::fs::read_to_string(only_run_dir(&dir).join("run.json")).unwrap();
        assert!(text.contains("\"mib_per_s_out\"") && !text.contains("mb_per_s"));
    }
}
