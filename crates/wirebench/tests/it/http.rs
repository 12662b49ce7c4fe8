//! The HTTP transport against a real server: Debian's nginx, started here
//! on free loopback ports (HTTP/1.1, h2c, and TLS with HTTP/2 and HTTP/1.1
//! by ALPN) with a low keep-alive limit, so that every run also goes
//! through the server closing its connections, and killed by PID.

use crate::fixtures::daemon::free_port;
use crate::fixtures::nginx::Nginx;
use crate::helpers::*;
use crate::kv::op;
use wirebench_core::result::RunState;

#[test]
fn nginx_serves_1kib_over_http1_h2c_and_tls_through_its_keepalive_limit() {
    let _g = shared();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let results = TempDir::new("http-get");
    let ca = format!("{}/ca.pem", ng.dir.str());
    let h1 = format!("http://127.0.0.1:{}/1k.bin", ng.h1);
    let h2c = format!("http://127.0.0.1:{}/1k.bin", ng.h2c);
    let tls = format!("https://localhost:{}/1k.bin", ng.tls);
    let cases: [(&str, Vec<&str>); 4] = [
        ("HTTP/1.1", vec!["--target", &h1, "--conns-per-client", "2"]),
        ("h2c", vec!["--target", &h2c, "--http", "2", "--depth", "8"]),
        (
            "TLS h2",
            vec![
                "--target",
                &tls,
                "--http",
                "2",
                "--depth",
                "4",
                "--ca-file",
                &ca,
            ],
        ),
        // (No limit on a request: --op-timeout 0.)
        (
            "TLS HTTP/1.1",
            vec!["--target", &tls, "--ca-file", &ca, "--op-timeout", "0"],
        ),
    ];
    for (name, args) in cases {
        ng.clear_log();
        let mut all = vec!["--duration", "1s", "--warmup", "0s"];
        all.extend_from_slice(&args);
        let (st, r, err) = run_json(&results, &all);
        assert!(st.success(), "{name}: {err}");
        assert_eq!(r.status.state, RunState::Complete, "{name}: {err}");
        let (ops, errors) = op(&r, "get");
        // Past the server's limit of 50 requests a connection, it closed
        // them (HTTP/1.1) or sent GOAWAY (HTTP/2): the run went on.
        assert!(ops > 100, "{name}: {ops} GETs");
        assert_eq!(errors, 0, "{name}");
        assert_eq!(
            r.summary.bytes_in,
            ops * 1024,
            "{name}: every body read whole"
        );
        // Every measured answer counted by its status class.
        let classes: Vec<(&str, u64)> = r.summary.by_op["get"]
            .statuses
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(classes, [("2xx", ops)], "{name}");
        let ttfb = r.summary.by_op["get"].ttfb.expect("time to first byte");
        assert!(ttfb.p50_ns > 0 && ttfb.p50_ns <= r.summary.by_op["get"].latency.p99_ns);
        let log = ng.log();
        assert!(log.iter().all(|l| l.2 == 200), "{name}: statuses {log:?}");
        assert!(
            log.len() as u64 >= ops,
            "{name}: nginx logged {} requests for {ops} measured",
            log.len()
        );
        // Connections were reused, up to nginx's limit of 50 requests.
        let most = log.iter().map(|l| l.1).max().unwrap();
        assert_eq!(most, 50, "{name}: at most {most} requests on a connection");
    }
}

#[test]
fn traced_requests_to_nginx_show_their_phases_and_reconnections() {
    let _g = shared();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let h1 = format!("http://127.0.0.1:{}/1k.bin", ng.h1);
    let h2c = format!("http://127.0.0.1:{}/1k.bin", ng.h2c);
    let cases: [(&str, Vec<&str>, &[&str]); 2] = [
        (
            "HTTP/1.1",
            vec!["--target", &h1],
            &[
                "begin",
                "request sent",
                "response headers",
                "first body byte",
                "end",
            ],
        ),
        (
            "h2c",
            vec!["--target", &h2c, "--http", "2"],
            &["begin", "response headers", "first body byte", "end"],
        ),
    ];
    for (name, args, events) in cases {
        let results = TempDir::new("http-trace");
        let mut all = vec!["--duration", "1s", "--warmup", "0s", "--trace"];
        all.extend_from_slice(&args);
        let (st, r, err) = run_json(&results, &all);
        assert!(st.success(), "{name}: {err}");
        let c = r.trace.as_ref().expect("a traced run counts its trace");
        // Every measured request traced (the drain lost none at this rate).
        assert_eq!(c.client_lost, 0, "{name}: {c:?}");
        assert!(c.client_ended >= r.summary.ops, "{name}: {c:?}");
        assert_eq!(c.server_events, None, "{name}: nginx writes no trace");
        assert!(err.contains("the client's events only"), "{name}: {err}");
        let text = std::fs::read_to_string(results.path().join(&r.run_id).join("trace-client.txt"))
            .unwrap();
        let t = wirebench_trace::parse(&text).unwrap();
        let ops = wirebench_report::timeline::ops_of_traces(&[t]);
        // Each operation has the transport's phases, in order; past nginx's
        // 50 requests a connection, HTTP/1.1 connects again within one.
        let mut reconnected = 0;
        for op in &ops {
            let names: Vec<&str> = op.events.iter().map(|e| e.0.as_str()).collect();
            let plain: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| *n != "connected")
                .collect();
            assert_eq!(plain, events, "{name}");
            reconnected += usize::from(names.len() > plain.len());
        }
        if name == "HTTP/1.1" {
            assert!(
                reconnected * 50 >= ops.len() - 50,
                "{name}: {reconnected} of {}",
                ops.len()
            );
        }
    }
}

#[test]
fn keys_in_the_path_follow_their_distribution() {
    let _g = shared();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let results = TempDir::new("http-keys");
    let target = format!("http://127.0.0.1:{}/k/{{key}}", ng.h1);
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &target,
            "--keys",
            "100",
            "--key-dist",
            "zipf:1.2",
            "--conns-per-client",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let (ops, errors) = op(&r, "get");
    assert!(ops > 200 && errors == 0, "{ops} GETs, {errors} errors");
    let mut hits = vec![0u64; 100];
    for (l, path) in ng.log_with_paths() {
        assert_eq!(l.2, 200, "{path}");
        let k: usize = path.strip_prefix("/k/").unwrap().parse().unwrap();
        hits[k] += 1;
    }
    // Zipf 1.2 over 100 keys: key 0 takes about a quarter, key 9 a
    // fifteenth of key 0's.
    let total: u64 = hits.iter().sum();
    assert!(hits[0] * 6 > total, "{hits:?}");
    assert!(hits[0] > 5 * hits[9].max(1), "{hits:?}");
    // Each body is the key's number: the bytes read add up.
    let bytes: u64 = hits
        .iter()
        .enumerate()
        .map(|(k, n)| n * k.to_string().len() as u64)
        .sum();
    assert!(
        r.summary.bytes_in <= bytes,
        "{} > {bytes}",
        r.summary.bytes_in
    );

    // Without {key} in the path, --keys is refused, naming the flag.
    let plain = format!("http://127.0.0.1:{}/1k.bin", ng.h1);
    let (st, _, err) = run_json_or_error(&results, &["--target", &plain, "--keys", "10"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("--keys") && err.contains("{key}"), "{err}");
}

#[test]
fn churn_opens_a_connection_for_each_request() {
    let _g = shared();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let results = TempDir::new("http-churn");
    let target = format!("http://127.0.0.1:{}/1k.bin", ng.h1);
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &target,
            "--churn",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let (ops, errors) = op(&r, "get");
    assert!(ops > 20 && errors == 0, "{ops} GETs, {errors} errors");
    let log = ng.log();
    assert!(log.len() as u64 >= ops);
    assert!(
        log.iter().all(|l| l.1 == 1),
        "a connection served more than one request: {:?}",
        log.iter().filter(|l| l.1 > 1).take(3).collect::<Vec<_>>()
    );
    let mut conns: Vec<u64> = log.iter().map(|l| l.0).collect();
    conns.sort_unstable();
    conns.dedup();
    assert_eq!(conns.len(), log.len(), "one connection per request");
    // Each request's connect is timed apart (no TLS here).
    let get = &r.summary.by_op["get"];
    let connect = get.connect.expect("connect times");
    assert!(connect.p50_ns > 0 && connect.p50_ns < get.latency.p50_ns);
    assert!(get.tls.is_none());

    // Over TLS, the handshake too: the request's time holds both.
    let tls = format!("https://localhost:{}/1k.bin", ng.tls);
    let ca = format!("{}/ca.pem", ng.dir.str());
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &tls,
            "--ca-file",
            &ca,
            "--churn",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let get = &r.summary.by_op["get"];
    assert!(get.ops > 10 && get.errors == 0);
    let (connect, hs) = (
        get.connect.expect("connect"),
        get.tls.expect("TLS handshake"),
    );
    assert!(
        hs.p50_ns > 0 && connect.p50_ns + hs.p50_ns < get.latency.p99_ns,
        "{connect:?} {hs:?} {:?}",
        get.latency
    );
}

#[test]
fn a_post_carries_its_body_and_a_missing_path_counts_as_failures() {
    let _g = shared();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let results = TempDir::new("http-post");
    let post = format!("http://127.0.0.1:{}/post", ng.h1);
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &post,
            "--mode",
            "post",
            "--size",
            "4KiB",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let (ops, errors) = op(&r, "post");
    assert!(ops > 20 && errors == 0);
    assert_eq!(r.summary.bytes_out, ops * 4096);
    assert_eq!(r.summary.bytes_in, ops * 2, "nginx answers 'ok'");
    let bad: Vec<_> = ng.log().into_iter().filter(|l| l.2 != 200).collect();
    assert!(bad.is_empty(), "{bad:?}");

    // A PUT's body arrives whole: nginx writes it to a file.
    ng.clear_log();
    let put = format!("http://127.0.0.1:{}/put/object", ng.h1);
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &put,
            "--mode",
            "put",
            "--size",
            "3000",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let (ops, errors) = op(&r, "put");
    assert!(ops > 20 && errors == 0);
    let written = std::fs::read(ng.dir.path().join("www/put/object")).unwrap();
    assert_eq!(written, vec![b'w'; 3000]);
    let log = ng.log();
    assert!(
        log.iter().all(|l| (l.2 == 201 || l.2 == 204) && l.3 > 3000),
        "{:?}",
        log.first()
    );

    let missing = format!("http://127.0.0.1:{}/missing", ng.h1);
    let (st, r, err) = run_json_or_error(
        &results,
        &[
            "--target",
            &missing,
            "--http",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    // h2c on nginx's HTTP/1.1 port: refused before any load.
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(r.is_none());
    assert!(err.contains("prior knowledge"), "{err}");

    let (st, r, err) = run_json(
        &results,
        &["--target", &missing, "--duration", "1s", "--warmup", "0s"],
    );
    // Every answer a 404: counted by cause, and a run that measured no
    // success is a failure (exit 1), its result kept.
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("answers 404 Not Found"), "{err}");
    let (ops, errors) = op(&r, "get");
    assert_eq!(ops, 0);
    assert!(errors > 20);
    assert_eq!(r.summary.failures.get("404 Not Found"), Some(&errors));
    let classes = &r.summary.by_op["get"].statuses;
    assert_eq!(classes.get("4xx"), Some(&errors), "{classes:?}");
    assert_eq!(classes.len(), 1, "{classes:?}");
    assert_eq!(r.status.state, RunState::Failed);
    assert!(
        r.status
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("x 404 Not Found"),
        "{:?}",
        r.status.reason
    );
}

#[test]
fn bad_http_input_is_refused_before_any_load() {
    let _g = shared();
    let results = TempDir::new("http-bad");
    let closed = format!("http://127.0.0.1:{}/", free_port());
    let (st, _, err) = run_json_or_error(&results, &["--target", &closed, "--duration", "1s"]);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot connect to 127.0.0.1:") && err.contains("refused"),
        "{err}"
    );
    let refused: [(&[&str], &str); 6] = [
        (
            &["--target", "http://127.0.0.1:1/", "--depth", "4"],
            "--depth",
        ),
        (
            &["--target", "http://127.0.0.1:1/", "--header", "NoColon"],
            "--header",
        ),
        (
            &["--target", "http://127.0.0.1:1/", "--header", "Host: x"],
            "--header",
        ),
        (
            &["--target", "http://127.0.0.1:1/", "--mode", "delete"],
            "--mode",
        ),
        (
            &["--target", "http://127.0.0.1:1/", "--size", "4KiB"],
            "--size",
        ),
        (
            &["--transport", "http", "--target", "redis://127.0.0.1:1"],
            "--target",
        ),
    ];
    for (args, flag) in refused {
        let (st, _, err) = run_json_or_error(&results, args);
        assert_eq!(st.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let (st, _, err) = run_json_or_error(&results, &["--target", "http://u:p@127.0.0.1:1/"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("credentials are never written in the URL"),
        "{err}"
    );
}

#[test]
fn http2_streams_of_one_connection_go_to_one_of_two_servers() {
    let _g = shared();
    let (Some(n1), Some(n2)) = (Nginx::start(), Nginx::start()) else {
        return;
    };
    let results = TempDir::new("http-two");
    let targets = format!(
        "http://127.0.0.1:{}/1k.bin,http://127.0.0.1:{}/1k.bin",
        n1.h2c, n2.h2c
    );
    // 2 HTTP/2 connections of 4 streams each: one connection per server
    // (fewer requests than nginx serves on one connection, 50).
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &targets,
            "--http",
            "2",
            "--depth",
            "4",
            "--conns-per-client",
            "2",
            "--count",
            "81",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(op(&r, "get"), (81, 0));
    let parts: Vec<(u64, u64)> = r.endpoints.iter().map(|e| (e.connections, e.ops)).collect();
    // The 81st GET is the first stream's, on the first server.
    assert_eq!(parts, [(1, 41), (1, 40)]);
    for (ng, part) in [(&n1, &r.endpoints[0]), (&n2, &r.endpoints[1])] {
        let log = ng.log();
        assert!(log.iter().all(|l| l.2 == 200), "{log:?}");
        // Its part, and the one request that checked it before the load.
        assert_eq!(log.len() as u64, part.ops + 1, "{}", part.endpoint);
        // On two connections: the check's, and the 4 streams' one.
        let mut conns: Vec<u64> = log.iter().map(|l| l.0).collect();
        conns.dedup();
        conns.sort_unstable();
        conns.dedup();
        assert_eq!(conns.len(), 2, "{}: {log:?}", part.endpoint);
    }
}
