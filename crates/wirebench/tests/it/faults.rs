//! Garbage from a peer, a dying server, and Ctrl-C.

use crate::helpers::*;
use nix::sys::signal::Signal;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use wirebench_core::result::RunState;
use wirebench_core::store;

/// Writes `bytes` and expects the server to close the connection.
fn expect_closed(addr: &str, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(bytes).unwrap();
    let mut buf = [0u8; 256];
    // A handshake reply may come first; the connection must then be closed.
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

fn hello(version: u16, size: u32) -> Vec<u8> {
    let mut b = b"WBMSGR\r\n".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.push(1); // echo
    b.push(0);
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b
}

#[test]
fn garbage_closes_that_connection_only_and_the_server_goes_on() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        let srv = Server::start(&["--arch", arch, "--max-frame", "1KiB"]);
        // Not msgr at all.
        expect_closed(srv.addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        // A good handshake, then a frame with a bad magic.
        let mut bad_frame = hello(1, 64);
        bad_frame.extend_from_slice(&[0xde; 80]);
        expect_closed(srv.addr(), &bad_frame);
        // A good handshake, then a frame larger than --max-frame.
        let mut big = hello(1, 64);
        big.extend_from_slice(&0xB7E5u16.to_le_bytes());
        big.extend_from_slice(&[1, 0]);
        big.extend_from_slice(&(1u32 << 20).to_le_bytes());
        big.extend_from_slice(&0u64.to_le_bytes());
        expect_closed(srv.addr(), &big);

        // The server still serves a real run.
        let dir = TempDir::new("garbage");
        let (st, r, err) = run_json(
            &dir,
            &[
                "--target",
                &srv.endpoint,
                "--count",
                "200",
                "--warmup",
                "0s",
                "--verify",
            ],
        );
        assert!(st.success(), "{err}");
        assert_eq!(r.summary.ops, 200);
        let stats = srv.stop();
        assert_eq!(stats["conns_refused"], 3, "{arch}: {stats}");
        assert_eq!(stats["conns_accepted"], 4, "{arch}: {stats}");
    }
}

#[test]
fn a_peer_with_another_version_is_told_so() {
    let _g = shared();
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(&hello(99, 64)).unwrap();
    let mut w = [0u8; 16];
    s.read_exact(&mut w).unwrap();
    assert_eq!(&w[..8], b"WBMSGR\r\n");
    assert_eq!(w[10], 1, "status must be 'unsupported version'");
    srv.stop();
}

#[test]
fn a_framed_client_against_a_raw_server_gets_a_clear_error() {
    let _g = shared();
    let srv = Server::start(&["--mode", "rr", "--size", "24", "--response-size", "16"]);
    let dir = TempDir::new("rrmismatch");
    let (st, r, _) = run_json(
        &dir,
        &[
            "--target",
            &srv.endpoint,
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert_eq!(st.code(), Some(1));
    assert_eq!(r.status.state, RunState::Failed);
    assert!(
        r.status.reason.as_deref().unwrap().contains("--mode rr"),
        "{:?}",
        r.status.reason
    );
    srv.stop();
}

#[test]
fn an_external_server_killed_mid_run_fails_the_run_with_a_partial_result() {
    let _g = shared();
    let srv = Server::start(&[]);
    let dir = TempDir::new("killext");
    let mut run = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--target",
        &srv.endpoint,
        "--duration",
        "60s",
        "--warmup",
        "0s",
    ]);
    run.stderr_until(Duration::from_secs(30), |l| l.contains("measure"));
    srv.proc.signal(Signal::SIGKILL);
    let st = run.wait(Duration::from_secs(30));
    assert_eq!(st.code(), Some(1), "{}", run.stderr_all());
    let r = store::load(&only_run_dir(&dir)).unwrap();
    assert_eq!(r.status.state, RunState::Failed);
    assert!(
        r.status.reason.as_deref().unwrap().contains("the server"),
        "{:?}",
        r.status.reason
    );
    assert!(!r.intervals.is_empty());
    assert!(r.summary.ops > 0);
}

/// Starts a 60 s run against the embedded server and waits until it
/// measures; returns the run and the server's PID (from the headline).
pub fn long_embedded_run(dir: &TempDir) -> (Proc, u32) {
    let mut run = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "60s",
        "--warmup",
        "0s",
    ]);
    let head = run.stderr_until(Duration::from_secs(30), |l| l.contains("(pid "));
    let pid = head
        .split("(pid ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap()
        .parse()
        .unwrap();
    run.stderr_until(Duration::from_secs(30), |l| l.contains("measure"));
    (run, pid)
}

#[test]
fn the_embedded_server_killed_mid_run_fails_the_run_and_says_so() {
    let _g = shared();
    let dir = TempDir::new("killemb");
    let (mut run, pid) = long_embedded_run(&dir);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    let st = run.wait(Duration::from_secs(30));
    assert_eq!(st.code(), Some(1), "{}", run.stderr_all());
    let r = store::load(&only_run_dir(&dir)).unwrap();
    assert_eq!(r.status.state, RunState::Failed);
    let reason = r.status.reason.unwrap();
    assert!(
        reason.contains("embedded server") && reason.contains("signal 9"),
        "{reason}"
    );
    assert!(r.summary.ops > 0);
}

#[test]
fn ctrl_c_saves_the_partial_result_and_leaves_no_process() {
    let _g = shared();
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let dir = TempDir::new("ctrlc");
        let (mut run, server_pid) = long_embedded_run(&dir);
        run.signal(signal);
        let st = run.wait(Duration::from_secs(30));
        assert_eq!(st.code(), Some(130), "{signal}: {}", run.stderr_all());
        let r = store::load(&only_run_dir(&dir)).unwrap();
        assert_eq!(r.status.state, RunState::Interrupted);
        assert!(r.summary.ops > 0 && r.summary.measured_ns > 0);
        let stats = r
            .server
            .and_then(|s| s.stats)
            .expect("the server was stopped cleanly and reported");
        assert_eq!(stats.conns_accepted, 1);
        assert!(
            !pid_alive(server_pid),
            "the embedded server {server_pid} is still running"
        );
    }
}
