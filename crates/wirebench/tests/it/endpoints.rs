//! Several endpoints without agents (`--target A,B`): one process deals
//! its connections to the endpoints in turn, and the result has each
//! endpoint's part, which adds up to the whole. (With agents, see
//! agents.rs; redis in kv.rs, HTTP/2 to two nginx in http.rs.)

use crate::helpers::*;
use std::time::Duration;
use wirebench_core::result::RunState;

#[test]
fn connections_are_dealt_to_two_msgr_servers_and_each_has_its_part() {
    let _g = shared();
    let dir = TempDir::new("endpoints-msgr");
    let fast = Server::start(&[]);
    // The second one holds each response 2 ms.
    let slow = Server::start(&["--delay", "2ms"]);
    let targets = format!("{},{}", fast.endpoint, slow.endpoint);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &targets,
            "--clients",
            "2",
            "--conns-per-client",
            "3",
            "--duration",
            "2s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete);
    assert_eq!(r.spec.also_target.len(), 1);
    let got: Vec<(&str, u64)> = r
        .endpoints
        .iter()
        .map(|e| (e.endpoint.as_str(), e.connections))
        .collect();
    assert_eq!(
        got,
        [(fast.endpoint.as_str(), 3), (slow.endpoint.as_str(), 3)]
    );
    assert!(r.endpoints.iter().all(|e| e.agents.is_empty()));
    assert_eq!(
        r.summary.ops,
        r.endpoints.iter().map(|e| e.ops).sum::<u64>(),
        "the parts add up to the whole"
    );
    assert!(r.endpoints.iter().all(|e| e.ops > 0 && e.errors == 0));
    // Each part is timed apart: only the slow server's answers take 2 ms.
    let (f, s) = (&r.endpoints[0], &r.endpoints[1]);
    assert!(s.p50_ns >= 2_000_000, "{s:?}");
    assert!(f.p50_ns < 2_000_000, "{f:?}");
    assert!(f.ops > s.ops, "{f:?} {s:?}");
    // Each server saw its 3 connections, and answered at least its part.
    let (sf, ss) = (fast.stop(), slow.stop());
    assert_eq!(sf["conns_accepted"], 3);
    assert_eq!(ss["conns_accepted"], 3);
    assert!(sf["frames_out"].as_u64().unwrap() >= f.ops);
    assert!(ss["frames_out"].as_u64().unwrap() >= s.ops);
}

#[test]
fn two_fake_s3_servers_each_get_their_objects_and_their_reads() {
    let _g = shared();
    let dir = TempDir::new("endpoints-s3");
    let fake = || Server::start(&["--transport", "s3"]);
    let (f1, f2) = (fake(), fake());
    let targets = format!("{},{}", f1.endpoint, f2.endpoint);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &targets,
            "--workload",
            "get",
            "--objects",
            "10",
            "--size",
            "4KiB",
            "--clients",
            "2",
            "--count",
            "301",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let get = &r.summary.by_op["get"];
    assert_eq!((get.ops, get.errors), (301, 0));
    // Each endpoint's objects were made there, read there, and deleted.
    assert_eq!(r.prepare.as_ref().map(|p| p.objects), Some(20));
    assert_eq!(
        r.cleanup.as_ref().map(|p| (p.objects, p.errors)),
        Some((20, 0))
    );
    let parts: Vec<(u64, u64)> = r.endpoints.iter().map(|e| (e.connections, e.ops)).collect();
    // The 301st read is the first connection's, which reaches the first endpoint.
    assert_eq!(parts, [(1, 151), (1, 150)]);
    for (srv, part) in [(f1, &r.endpoints[0]), (f2, &r.endpoints[1])] {
        let stats = srv.stop();
        // The server sent the bodies of its reads, and nothing more.
        assert_eq!(stats["bytes_out"], part.ops * 4096, "{}", part.endpoint);
    }
}

#[test]
fn several_endpoints_that_cannot_be_are_refused_naming_the_flag() {
    let _g = shared();
    let dir = TempDir::new("endpoints-refused");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--target", "tcp://127.0.0.1:1,tcp://127.0.0.1:1"],
            "named twice",
        ),
        (
            &["--target", "tcp://127.0.0.1:1,s3://127.0.0.1:2/bench"],
            "not a server of the same kind",
        ),
        (
            &[
                "--target",
                "tcp://127.0.0.1:1,tcp://127.0.0.1:2,tcp://127.0.0.1:3",
                "--clients",
                "2",
            ],
            "each endpoint takes at least one connection",
        ),
        (
            &[
                "--target",
                "tcp://127.0.0.1:1,tcp://127.0.0.1:2",
                "--server-cmd",
                "true",
            ],
            "--server-cmd",
        ),
        (
            &[
                "--transport",
                "shm",
                "--target",
                "unix:/tmp/wb-a.sock,unix:/tmp/wb-b.sock",
            ],
            "a shared-memory run reaches one server",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["run", "--results", dir.str(), "--duration", "1s"];
        all.extend_from_slice(args);
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(2), "{all:?}: {err}");
        assert!(
            err.contains("--target") || err.contains("--server-cmd"),
            "{err}"
        );
        assert!(err.contains(says), "{all:?}: {err}");
    }
}
