//! The gRPC transport against a reference server in another
//! implementation: Python grpcio with its reflection service
//! (`grpc_server.py`, in the tests' Python environment), on a free loopback
//! port, killed by PID.

use crate::fixtures::daemon::free_port;
use crate::fixtures::grpc::EchoServer;
use crate::helpers::*;
use crate::kv::op;
use wirebench_core::result::RunState;

const HELLO: &str = r#"{"text": "hello", "at": "2026-11-23T12:00:00Z"}"#;

#[test]
fn unary_calls_through_reflection_and_a_descriptor_set() {
    let _g = shared();
    let Some(srv) = EchoServer::start() else {
        return;
    };
    let results = TempDir::new("grpc-unary");
    let set = srv.proto_set();
    let cases: [(&str, Vec<&str>); 2] = [
        ("reflection", vec![]),
        ("descriptor set", vec!["--proto-set", &set, "--depth", "4"]),
    ];
    for (name, extra) in cases {
        let mut args = vec![
            "--target",
            &srv.target,
            "--call",
            "bench.Echo/Say",
            "--data",
            HELLO,
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ];
        args.extend_from_slice(&extra);
        let (st, r, err) = run_json(&results, &args);
        assert!(st.success(), "{name}: {err}");
        assert_eq!(r.status.state, RunState::Complete);
        let (ops, errors) = op(&r, "call");
        // The server refuses a request without its text and timestamp, so
        // every success is a request encoded right.
        assert!(ops > 20, "{name}: {ops} calls");
        assert_eq!(errors, 0, "{name}: {:?}", r.summary.failures);
        // Each answer: a 5-byte frame header and EchoReply{text: "hello"}
        // (7 bytes).
        assert_eq!(r.summary.bytes_in, ops * 12, "{name}");
        let source = if name == "reflection" {
            "the server's reflection service"
        } else {
            "the descriptor set"
        };
        assert!(err.contains(source), "{name}: {err}");
    }
}

#[test]
fn server_streaming_calls_read_every_answer_and_error_statuses_count() {
    let _g = shared();
    let Some(srv) = EchoServer::start() else {
        return;
    };
    let results = TempDir::new("grpc-stream");
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &srv.target,
            "--call",
            "bench.Echo/Count",
            "--data",
            r#"{"text": "x", "repeat": 5}"#,
            "--depth",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert!(err.contains("server-streaming"), "{err}");
    let (ops, errors) = op(&r, "call");
    assert!(ops > 20 && errors == 0, "{ops} calls, {errors} errors");
    // Five answers "x 0".."x 4": 5 x (5 + 5) bytes.
    assert_eq!(r.summary.bytes_in, ops * 50);

    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &srv.target,
            "--call",
            "bench.Echo/Fail",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("answers grpc-status 9 FAILED_PRECONDITION: this method always fails"),
        "{err}"
    );
    let (ops, errors) = op(&r, "call");
    assert_eq!(ops, 0);
    assert!(errors > 20);
    assert_eq!(
        r.summary.failures.get("grpc-status 9 FAILED_PRECONDITION"),
        Some(&errors)
    );
}

#[test]
fn bad_grpc_input_is_refused_before_any_load() {
    let _g = shared();
    let results = TempDir::new("grpc-bad");
    let closed = format!("grpc://127.0.0.1:{}", free_port());
    let (st, _, err) = run_json_or_error(
        &results,
        &["--target", &closed, "--call", "a.B/C", "--duration", "1s"],
    );
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("cannot connect to 127.0.0.1:"), "{err}");
    let refused: [(&[&str], &str); 5] = [
        (&["--target", "grpc://127.0.0.1:1"], "--call"),
        (
            &["--target", "grpc://127.0.0.1:1", "--call", "NoSlash"],
            "--call",
        ),
        (
            &[
                "--target",
                "grpc://127.0.0.1:1",
                "--call",
                "a.B/C",
                "--data",
                "[1]",
            ],
            "--data",
        ),
        (
            &[
                "--target",
                "grpc://127.0.0.1:1",
                "--call",
                "a.B/C",
                "--size",
                "1KiB",
            ],
            "--size",
        ),
        (
            &["--target", "grpc://127.0.0.1", "--call", "a.B/C"],
            "--target",
        ),
    ];
    for (args, flag) in refused {
        let (st, _, err) = run_json_or_error(&results, args);
        assert_eq!(st.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let Some(srv) = EchoServer::start() else {
        return;
    };
    let bad: [(&str, &str, &str); 3] = [
        (
            "bench.Echo/Nope",
            "{}",
            "bench.Echo has no method Nope (it has: Say, Fail, Count)",
        ),
        ("bench.Nope/Say", "{}", "no service bench.Nope"),
        (
            "bench.Echo/Say",
            r#"{"txt": 1}"#,
            "--data: not a bench.EchoRequest message",
        ),
    ];
    for (call, data, says) in bad {
        let (st, r, err) = run_json_or_error(
            &results,
            &[
                "--target",
                &srv.target,
                "--call",
                call,
                "--data",
                data,
                "--duration",
                "1s",
            ],
        );
        assert_eq!(st.code(), Some(1), "{call}: {err}");
        assert!(r.is_none(), "{call}: no load ran");
        assert!(err.contains(says), "{call}: {err}");
    }
}
