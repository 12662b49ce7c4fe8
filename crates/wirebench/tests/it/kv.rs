//! The key-value transports against the real servers: redis-server and
//! memcached (Debian's packages, started here on free loopback ports and
//! killed by PID).

use crate::fixtures::daemon::Daemon;
use crate::helpers::*;
use std::process::Command;
use std::time::Duration;

/// The figures of one operation type in a result.
pub(crate) fn op(r: &wirebench_core::result::RunResult, name: &str) -> (u64, u64) {
    let o = r
        .summary
        .by_op
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.summary.by_op.keys()));
    (o.ops, o.errors)
}

#[test]
fn redis_set_and_get_zipf_keys_pipelined_and_verified() {
    let _g = shared();
    let Some(redis) = Daemon::redis(&[]) else {
        return;
    };
    let dir = TempDir::new("kv-redis");
    let target = format!("redis://{}", redis.addr);
    for protocol in ["resp2", "resp3"] {
        let (st, r, err) = run_json(
            &dir,
            &[
                "--target",
                &target,
                "--protocol",
                protocol,
                "--mode",
                "mixed",
                "--ratio",
                "1:3",
                "--key-dist",
                "zipf",
                "--keys",
                "500",
                "--size",
                "100,3000",
                "--depth",
                "16",
                "--conns-per-client",
                "2",
                "--duration",
                "1s",
                "--warmup",
                "200ms",
                "--verify",
            ],
        );
        assert!(st.success(), "{protocol}: {err}");
        assert_eq!(r.spec.kind().to_string(), "redis");
        let (gets, get_errors) = op(&r, "get");
        let (sets, set_errors) = op(&r, "set");
        // Every GET hit (the prepare phase wrote every key) and matched.
        assert_eq!(
            (get_errors, set_errors),
            (0, 0),
            "{protocol}: {:?}",
            r.summary.failures
        );
        assert_eq!(r.summary.ops, gets + sets);
        let share = sets as f64 / (gets + sets) as f64;
        assert!(
            (0.2..0.3).contains(&share),
            "{protocol}: {share} of SETs at 1:3"
        );
        assert_eq!(
            r.prepare.as_ref().map(|p| p.objects),
            Some(500),
            "{protocol}"
        );
        assert_eq!(r.spec.depth, 16);
    }
    // The keys are there, with the sizes the run wrote.
    let out = Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &redis.addr[10..],
            "STRLEN",
            "wirebench:1",
        ])
        .output();
    if let Ok(out) = out {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3000");
    }
}

#[test]
fn pipelined_redis_requests_are_traced_in_order() {
    let _g = shared();
    let Some(redis) = Daemon::redis(&[]) else {
        return;
    };
    let dir = TempDir::new("kv-trace");
    let target = format!("redis://{}", redis.addr);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &target,
            "--depth",
            "8",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--trace",
            "--trace-sample",
            "4",
        ],
    );
    assert!(st.success(), "{err}");
    let c = r.trace.as_ref().expect("a traced run counts its trace");
    assert_eq!(c.client_lost, 0, "{c:?}");
    // One request in 4 traced, of those completed (the prepare's are not).
    let expected = r.summary.ops / 4;
    assert!(
        c.client_ended >= expected * 9 / 10,
        "{} traced of {} ops: {c:?}",
        c.client_ended,
        r.summary.ops
    );
    let text =
        std::fs::read_to_string(dir.path().join(&r.run_id).join("trace-client.txt")).unwrap();
    let t = wirebench_trace::parse(&text).unwrap();
    let ops = wirebench_report::timeline::ops_of_traces(&[t]);
    let complete = ops
        .iter()
        .filter(|op| {
            op.events.iter().map(|e| e.0.as_str()).collect::<Vec<_>>()
                == ["begin", "request sent", "response received", "end"]
        })
        .count();
    // All but the few cut by the run's end.
    assert!(complete + 16 >= ops.len(), "{complete} of {}", ops.len());
}

#[test]
fn redis_incr_counts_and_an_error_reply_is_a_failure_not_a_crash() {
    let _g = shared();
    let Some(redis) = Daemon::redis(&[]) else {
        return;
    };
    let dir = TempDir::new("kv-redis-incr");
    let target = format!("redis://{}", redis.addr);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target", &target, "--mode", "incr", "--keys", "10", "--count", "2000", "--depth",
            "8",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(op(&r, "incr"), (2000, 0));
    // A key that holds a string: INCR answers -ERR, counted by its cause.
    let mut s = std::net::TcpStream::connect(&redis.addr).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"*3\r\n$3\r\nSET\r\n$13\r\nwirebench:n:0\r\n$1\r\nx\r\n")
        .unwrap();
    let mut buf = [0u8; 5];
    s.read_exact(&mut buf).unwrap();
    // Every operation failed: the run fails (it measured nothing), and its
    // result says why.
    let (st, r, err) = run_json_or_error(
        &dir,
        &[
            "--target", &target, "--mode", "incr", "--keys", "1", "--count", "50",
        ],
    );
    assert_eq!(st.code(), Some(1), "{err}");
    let r = r.expect("the partial result");
    assert_eq!(r.summary.errors, 50);
    let cause = r
        .summary
        .failures
        .keys()
        .next()
        .cloned()
        .unwrap_or_default();
    assert!(cause.starts_with("-ERR value is not an integer"), "{cause}");
}

#[test]
fn redis_wrong_password_fails_before_any_load() {
    let _g = shared();
    let Some(redis) = Daemon::redis(&["--requirepass", "right-secret"]) else {
        return;
    };
    let dir = TempDir::new("kv-redis-auth");
    let target = format!("redis://{}", redis.addr);
    let run = |password: &str| {
        let mut p = Proc::spawn_program(
            "env",
            &[
                &format!("REDISCLI_AUTH={password}"),
                BIN,
                "run",
                "--results",
                dir.str(),
                "--target",
                &target,
                "--duration",
                "300ms",
                "--warmup",
                "0s",
            ],
        );
        let st = p.wait(Duration::from_secs(60));
        (st, p.stderr_all())
    };
    let (st, err) = run("wrong-secret");
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("AUTH refused") && err.contains("WRONGPASS"),
        "{err}"
    );
    assert!(!err.contains("measure"), "load ran: {err}");
    let (st, err) = run("right-secret");
    assert!(st.success(), "{err}");
}

#[test]
fn memcached_text_and_meta_get_set_incr() {
    let _g = shared();
    let Some(mc) = Daemon::memcached() else {
        return;
    };
    let dir = TempDir::new("kv-memcached");
    let target = format!("memcached://{}", mc.addr);
    for protocol in ["text", "meta"] {
        let (st, r, err) = run_json(
            &dir,
            &[
                "--target",
                &target,
                "--protocol",
                protocol,
                "--mode",
                "mixed",
                "--keys",
                "300",
                "--size",
                "10..20KiB",
                "--depth",
                "8",
                "--duration",
                "1s",
                "--warmup",
                "200ms",
                "--verify",
            ],
        );
        assert!(st.success(), "{protocol}: {err}");
        assert_eq!(r.spec.kind().to_string(), "memcached");
        let ((gets, ge), (sets, se)) = (op(&r, "get"), op(&r, "set"));
        assert_eq!((ge, se), (0, 0), "{protocol}: {:?}", r.summary.failures);
        assert!(
            gets > 5 * sets && sets > 0,
            "{protocol}: {gets} gets, {sets} sets at 1:10"
        );
        let (st, r, err) = run_json(
            &dir,
            &[
                "--target",
                &target,
                "--protocol",
                protocol,
                "--mode",
                "incr",
                "--keys",
                "20",
                "--count",
                "1000",
                "--depth",
                "4",
            ],
        );
        assert!(st.success(), "{protocol}: {err}");
        assert_eq!(op(&r, "incr"), (1000, 0), "{protocol}");
    }
}

#[test]
fn the_wrong_server_for_the_protocol_is_told_before_any_load() {
    let _g = shared();
    let (Some(redis), Some(mc)) = (Daemon::redis(&[]), Daemon::memcached()) else {
        return;
    };
    let dir = TempDir::new("kv-wrong");
    for (target, want) in [
        (
            format!("memcached://{}", redis.addr),
            "is it a memcached server?",
        ),
        (format!("redis://{}", mc.addr), "is it a redis server?"),
    ] {
        let mut p = Proc::spawn(&[
            "run",
            "--results",
            dir.str(),
            "--target",
            &target,
            "--duration",
            "300ms",
        ]);
        let st = p.wait(Duration::from_secs(60));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(1), "{target}: {err}");
        assert!(
            err.contains(want) && err.contains("protocol error"),
            "{target}: {err}"
        );
        assert!(!err.contains("measure"), "load ran: {err}");
    }
}

#[test]
fn bad_key_value_targets_fail_before_any_load_naming_the_flag() {
    let _g = shared();
    let dir = TempDir::new("kv-bad");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (
            vec!["--target".into(), format!("redis://127.0.0.1:{closed}")],
            1,
            "Connection refused",
        ),
        (
            vec![
                "--transport".into(),
                "memcached".into(),
                "--target".into(),
                "redis://127.0.0.1:6379".into(),
            ],
            2,
            "--target",
        ),
        (vec!["--transport".into(), "redis".into()], 2, "--target"),
        // The scheme picks the transport: S3's flags apply without --transport s3.
        (
            vec![
                "--target".into(),
                format!("s3://127.0.0.1:{closed}/bench"),
                "--workload".into(),
                "put".into(),
            ],
            1,
            "checking s3://",
        ),
        (
            vec!["--target".into(), "redis://:secret@127.0.0.1:6379".into()],
            2,
            "REDISCLI_AUTH",
        ),
        (
            vec![
                "--target".into(),
                "redis://127.0.0.1:6379".into(),
                "--protocol".into(),
                "meta".into(),
            ],
            2,
            "--protocol",
        ),
        (
            vec![
                "--target".into(),
                "redis://127.0.0.1:6379".into(),
                "--ratio".into(),
                "1:2".into(),
            ],
            2,
            "--ratio",
        ),
        (vec!["--keys".into(), "10".into()], 2, "--keys"),
    ];
    for (args, code, needle) in cases {
        let mut all = vec!["run", "--results", dir.str(), "--duration", "300ms"];
        all.extend(args.iter().map(String::as_str));
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn two_redis_servers_each_get_their_keys_and_their_reads() {
    let _g = shared();
    let (Some(r1), Some(r2)) = (Daemon::redis(&[]), Daemon::redis(&[])) else {
        return;
    };
    let dir = TempDir::new("kv-redis-two");
    let targets = format!("redis://{},redis://{}", r1.addr, r2.addr);
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &targets,
            "--mode",
            "get",
            "--keys",
            "50",
            "--verify",
            "--clients",
            "1",
            "--conns-per-client",
            "4",
            "--depth",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    // Each server got the keys its reads need (a read of a key that is not
    // there would be a miss, counted as a failure), and its part of the reads.
    assert_eq!(r.prepare.as_ref().map(|p| p.objects), Some(100));
    let (gets, errors) = op(&r, "get");
    assert_eq!(errors, 0, "{:?}", r.summary.failures);
    let parts: Vec<(&str, u64)> = r
        .endpoints
        .iter()
        .map(|e| (e.endpoint.as_str(), e.connections))
        .collect();
    // (Endpoints are written with their database.)
    let (e1, e2) = (
        format!("redis://{}/0", r1.addr),
        format!("redis://{}/0", r2.addr),
    );
    assert_eq!(parts, [(e1.as_str(), 2), (e2.as_str(), 2)]);
    assert!(r.endpoints.iter().all(|e| e.ops > 0 && e.errors == 0));
    assert_eq!(gets, r.endpoints.iter().map(|e| e.ops).sum::<u64>());
    // Each server holds its 50 keys.
    for d in [&r1, &r2] {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &d.addr[10..], "DBSIZE"])
            .output();
        if let Ok(out) = out {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "50");
        }
    }
}
