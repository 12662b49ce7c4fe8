//! The tcp-echo transport (issue 37: a transport added as its module, its
//! driver and one registry line): against a TCP echo server, every byte
//! sent comes back and is counted; its flags are checked like any other.

use crate::fixtures::echo::Echo;
use crate::helpers::*;
use wirebench_core::result::RunState;

#[test]
fn issue_37_tcp_echo_gets_back_every_byte_it_sends() {
    let _g = shared();
    let echo = Echo::start();
    let dir = TempDir::new("tcp-echo");
    let target = format!("tcp://127.0.0.1:{}", echo.port);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "tcp-echo",
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
    assert_eq!(r.spec.kind().name(), "tcp-echo");
    assert!(r.summary.ops >= 2000, "{}", r.summary.ops);
    assert_eq!(r.summary.errors, 0);
    assert_eq!(r.summary.latency.count, r.summary.ops);
    // Raw bytes: what is counted is what went on the wire, both ways.
    assert_eq!(r.summary.bytes_out, r.summary.ops * 1000);
    assert_eq!(r.summary.bytes_in, r.summary.bytes_out);
    assert!(r.run_id.contains("tcp-echo-1000"), "{}", r.run_id);
}

#[test]
fn issue_37_tcp_echo_flags_are_checked_like_any_transports() {
    for (args, flag, says) in [
        (vec![], "--target", "has no embedded server"),
        (
            vec!["--target", "tcp://127.0.0.1:1", "--mode", "echo"],
            "--mode",
            "sends back what it reads",
        ),
        (
            vec!["--target", "redis://127.0.0.1:1"],
            "--target",
            "add --transport redis",
        ),
        (
            vec!["--target", "tcp://127.0.0.1:1", "--wait", "spin"],
            "--wait",
            "--transport shm only",
        ),
        (
            vec!["--target", "tcp://127.0.0.1:1", "--trace"],
            "--trace",
            "raw bytes",
        ),
    ] {
        let mut all = vec!["run", "--transport", "tcp-echo"];
        all.extend(args);
        let out = std::process::Command::new(BIN)
            .args(&all)
            .output()
            .expect("wirebench runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(flag) && err.contains(says), "{all:?}: {err}");
    }
}
