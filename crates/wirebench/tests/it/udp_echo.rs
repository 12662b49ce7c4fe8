//! The udp-echo transport (issue 47: a transport added as one folder, its
//! spec module and one registry line): against a UDP echo server of
//! Python's sockets, every datagram sent comes back and is counted; its
//! embedded server counts what it echoed; its flags are checked like any
//! other transport's.

use crate::fixtures::echo::Echo;
use crate::helpers::*;
use std::process::Command;
use wirebench_core::result::RunState;

#[test]
fn issue_47_udp_echo_gets_back_every_datagram_it_sends() {
    let _g = shared();
    let echo = Echo::udp();
    let dir = TempDir::new("udp-echo");
    let target = format!("udp://127.0.0.1:{}", echo.port);
    // The scheme names the transport: no --transport needed.
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &target,
            "--size",
            "1000",
            "--clients",
            "2",
            "--depth",
            "4",
            "--verify",
            "--count",
            "2000",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete, "{err}");
    assert_eq!(r.spec.kind().name(), "udp-echo");
    assert!(r.summary.ops >= 2000, "{}", r.summary.ops);
    assert_eq!(r.summary.errors, 0);
    assert_eq!(r.summary.latency.count, r.summary.ops);
    // What went on the wire, both ways, in whole datagrams: the counted
    // operations, and at most the depth of each connection in flight when
    // the count was reached.
    let (ops, out, back) = (r.summary.ops, r.summary.bytes_out, r.summary.bytes_in);
    assert!(
        out >= ops * 1000 && out <= (ops + 2 * 4) * 1000,
        "{out} {ops}"
    );
    assert!(
        back >= ops * 1000 && back <= out && back % 1000 == 0,
        "{back} {out}"
    );
    assert!(r.run_id.contains("udp-echo-1000"), "{}", r.run_id);
}

#[test]
fn issue_47_udp_echo_embeds_its_own_server_which_counts_what_it_echoed() {
    let _g = shared();
    let dir = TempDir::new("udp-echo-embedded");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "udp-echo",
            "--size",
            "300",
            "--depth",
            "2",
            "--verify",
            "--count",
            "3000",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete, "{err}");
    assert_eq!(r.summary.errors, 0);
    let server = r.server.as_ref().expect("the embedded server's report");
    assert!(
        server.endpoint.starts_with("udp://127.0.0.1:"),
        "{}",
        server.endpoint
    );
    let stats = server.stats.as_ref().expect("its counters");
    // Every answer the client counted was echoed by it (and requests in
    // flight at the end, at most the depth, too).
    assert!(
        stats.frames_in >= r.summary.ops,
        "{stats:?} {}",
        r.summary.ops
    );
    assert!(
        stats.frames_in <= r.summary.ops + 2,
        "{stats:?} {}",
        r.summary.ops
    );
    assert_eq!(stats.bytes_in, stats.frames_in * 300);
    assert_eq!(stats.frames_out, stats.frames_in);
}

#[test]
fn issue_47_udp_echo_flags_are_checked_like_any_transports() {
    for (args, flag, says) in [
        (
            vec![
                "run",
                "--transport",
                "udp-echo",
                "--target",
                "tcp://127.0.0.1:1",
            ],
            "--target",
            "udp://HOST:PORT",
        ),
        (
            vec!["run", "--transport", "udp-echo", "--size", "65508"],
            "--size",
            "one datagram",
        ),
        (
            vec!["run", "--transport", "udp-echo", "--mode", "echo"],
            "--mode",
            "each datagram",
        ),
        (
            vec!["run", "--transport", "udp-echo", "--trace"],
            "--trace",
            "raw datagrams",
        ),
        (
            vec!["run", "--transport", "udp-echo", "--wait", "spin"],
            "--wait",
            "--transport shm only",
        ),
        (
            vec!["run", "--target", "ftp://127.0.0.1:21"],
            "--target",
            "no transport speaks ftp://",
        ),
        (
            vec!["serve", "--transport", "udp-echo", "--max-conns", "5"],
            "--max-conns",
            "a UDP echo server has none",
        ),
        (
            vec![
                "serve",
                "--transport",
                "udp-echo",
                "--listen",
                "tcp://127.0.0.1:1",
            ],
            "--listen",
            "udp://HOST:PORT",
        ),
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .output()
            .expect("wirebench runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains(says), "{args:?}: {err}");
    }
}
