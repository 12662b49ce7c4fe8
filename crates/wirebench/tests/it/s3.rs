//! S3: every workload against the embedded fake server and against MinIO
//! (started here on loopback with a temporary data directory, when its
//! binary is found), data checked with --verify; errors up front; large
//! objects with bounded memory; a server dying mid-run.

use crate::fixtures::minio::{MINIO_PASSWORD, Minio};
use crate::helpers::*;
use nix::sys::signal::Signal;
use std::process::Command;
use std::time::{Duration, Instant};
use wirebench_core::result::{RunResult, RunState};
use wirebench_core::store;

const WORKLOADS: [&str; 6] = ["get", "put", "head", "delete", "list", "mixed"];

/// Checks a complete run of `workload`: its operations counted by type,
/// no failures (mixed may read an object another connection just
/// deleted), and the objects it created deleted at the end.
fn check_workload(workload: &str, r: &RunResult, err: &str) {
    assert_eq!(r.status.state, RunState::Complete, "{workload}: {err}");
    let s = &r.summary;
    let ops: Vec<&str> = match workload {
        "mixed" => vec!["get", "put", "delete"],
        w => vec![w],
    };
    for op in &ops {
        let o = s
            .by_op
            .get(*op)
            .unwrap_or_else(|| panic!("{workload}: no {op} in {:?}", s.by_op.keys()));
        assert!(o.ops > 0, "{workload}: no {op} succeeded: {err}");
        let t = o
            .ttfb
            .as_ref()
            .unwrap_or_else(|| panic!("{workload}: {op} has no TTFB"));
        assert!(
            t.count == o.ops && t.mean_ns <= o.latency.mean_ns,
            "{workload}: {op} TTFB {t:?} vs {:?}",
            o.latency
        );
    }
    for (cause, n) in &s.failures {
        assert!(
            workload == "mixed" && cause == "404 NoSuchKey",
            "{workload}: {n} x {cause}: {err}"
        );
    }
    if workload == "get" {
        let g = &s.by_op["get"];
        assert_eq!(g.bytes_in, g.ops * 4096, "every GET read the whole object");
    }
    if workload != "put" {
        let p = r.prepare.as_ref().expect("a prepare phase");
        assert_eq!((p.objects, p.errors), (20, 0));
    }
    let c = r.cleanup.as_ref().expect("a cleanup phase");
    assert_eq!(c.errors, 0, "{workload}: cleanup failed");
    assert!(r.spec.s3().unwrap().signed);
}

fn workload_args<'a>(workload: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "--transport",
        "s3",
        "--workload",
        workload,
        "--objects",
        "20",
        "--verify",
        "--clients",
        "2",
        "--warmup",
        "0s",
        "--duration",
        "1s",
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn every_workload_runs_against_the_embedded_fake_server() {
    let _g = shared();
    for w in WORKLOADS {
        let dir = TempDir::new("s3fake");
        let (st, r, err) = run_json(&dir, &workload_args(w, &[]));
        assert!(st.success(), "{w}: {err}");
        check_workload(w, &r, &err);
        let stats = r
            .server
            .as_ref()
            .and_then(|s| s.stats)
            .expect("the fake server's counters");
        assert!(
            stats.frames_in >= r.summary.ops,
            "{w}: the server saw every request"
        );
    }
}

#[test]
fn every_workload_runs_against_minio_and_the_data_checks() {
    let _g = shared();
    let Some(minio) = Minio::start() else { return };
    let target = format!("s3://{}/bench", minio.addr);
    let creds = minio.creds();
    for (k, w) in WORKLOADS.iter().enumerate() {
        let dir = TempDir::new("s3minio");
        let mut extra = vec!["--target", target.as_str()];
        extra.extend_from_slice(&creds);
        if k == 0 {
            extra.push("--create-bucket");
        }
        let (st, r, err) = run_json(&dir, &workload_args(w, &extra));
        assert!(st.success(), "{w}: {err}");
        check_workload(w, &r, &err);
        let text = std::fs::read_to_string(only_run_dir(&dir).join("run.json")).unwrap();
        assert!(
            !text.contains(MINIO_PASSWORD),
            "the secret key is never stored"
        );
    }
    // Multipart upload and ranged, parallel reads of objects above the threshold.
    let dir = TempDir::new("s3minio-mp");
    let mut args = vec![
        "--transport",
        "s3",
        "--workload",
        "get",
        "--objects",
        "2",
        "--size",
        "12MiB",
        "--multipart-threshold",
        "8MiB",
        "--part-size",
        "5MiB",
        "--put-parts",
        "2",
        "--get-parts",
        "2",
        "--verify",
        "--count",
        "4",
        "--warmup",
        "0s",
        "--target",
        &target,
    ];
    args.extend_from_slice(&creds);
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.by_op["get"].ops, 4, "{:?}", r.summary.failures);
    assert_eq!(r.summary.by_op["get"].bytes_in, (4 * 12) << 20);
    // Virtual-host-style addressing (MINIO_DOMAIN=localhost).
    let dir = TempDir::new("s3minio-vh");
    let vtarget = target.replace("127.0.0.1", "localhost");
    let mut args = workload_args("get", &["--url-style", "virtual", "--target", &vtarget]);
    args.extend_from_slice(&creds);
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    check_workload("get", &r, &err);
}

/// Runs and expects a failure before any load, with one clear line.
fn fails_up_front(args: &[&str], code: i32, says: &str) {
    let dir = TempDir::new("s3err");
    let mut all = vec!["run", "--results", dir.str()];
    // A secret comes from a file: `--secret-key S` is refused.
    let file = dir.path().join("secret");
    let file = file.to_str().unwrap();
    let mut args = args.to_vec();
    if let Some(i) = args.iter().position(|a| *a == "--secret-key") {
        write_secret(std::path::Path::new(file), args[i + 1]);
        args[i] = "--secret-key-file";
        args[i + 1] = file;
    }
    let args = &args[..];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(code), "{args:?}: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert!(
        errors.len() == 1 && errors[0].contains(says),
        "{args:?}: expected one error saying '{says}':\n{err}"
    );
    assert!(
        !err.contains("secret-of-the-test"),
        "the secret is never printed"
    );
}

#[test]
fn an_unreachable_endpoint_wrong_credentials_or_a_missing_bucket_fail_up_front() {
    let _g = shared();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let t = format!("s3://{dead}/bench");
    fails_up_front(&["--transport", "s3", "--target", &t], 1, "cannot reach");
    let srv = Server::start_env(
        &["AWS_SECRET_ACCESS_KEY=right-secret"],
        &["--transport", "s3", "--access-key", "AKTEST"],
    );
    let addr = srv
        .endpoint
        .strip_prefix("s3://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let t = format!("s3://{addr}/wirebench");
    fails_up_front(
        &[
            "--transport",
            "s3",
            "--target",
            &t,
            "--access-key",
            "AKTEST",
            "--secret-key",
            "secret-of-the-test",
        ],
        1,
        "SignatureDoesNotMatch",
    );
    fails_up_front(
        &["--transport", "s3", "--target", &t],
        1,
        "wants signed requests",
    );
    let nob = format!("s3://{addr}/no-such-bucket");
    fails_up_front(
        &[
            "--transport",
            "s3",
            "--target",
            &nob,
            "--access-key",
            "AKTEST",
            "--secret-key",
            "right-secret",
        ],
        1,
        "does not exist",
    );
    let stats = srv.stop();
    assert!(
        stats["frames_in"].as_u64().unwrap() <= 8,
        "a few requests, not a load: {stats}"
    );
    for (args, says) in [
        (vec!["--transport", "s3", "--mode", "echo"], "--workload"),
        (vec!["--keep"], "--transport s3 only"),
        (
            vec!["--transport", "s3", "--depth", "4"],
            "one request outstanding",
        ),
        (
            vec!["--transport", "s3", "--part-size", "1MiB"],
            "at least 5MiB",
        ),
        (
            vec!["--transport", "s3", "--mix", "get=1"],
            "--workload mixed only",
        ),
        (
            vec!["--transport", "s3", "--target", "s3s://127.0.0.1:1/b"],
            "TLS",
        ),
        (vec!["--size", "1KiB..4KiB"], "--transport s3 only"),
        (vec!["--transport", "s3", "--objects", "0"], "--objects"),
        (
            vec!["--transport", "s3", "--url-style", "virtual"],
            "needs a host name",
        ),
    ] {
        fails_up_front(&args, 2, says);
    }
}

#[test]
fn anonymous_requests_and_virtual_host_style_reach_the_fake_server() {
    let _g = shared();
    let srv = Server::start(&[
        "--transport",
        "s3",
        "--bucket",
        "bench",
        "--domain",
        "localhost",
    ]);
    let addr = srv
        .endpoint
        .strip_prefix("s3://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let port = addr.rsplit(':').next().unwrap();
    for style in ["path", "virtual"] {
        let dir = TempDir::new("s3anon");
        let t = format!("s3://localhost:{port}/bench");
        let (st, r, err) = run_json(
            &dir,
            &workload_args("get", &["--target", &t, "--url-style", style]),
        );
        assert!(st.success(), "{style}: {err}");
        assert!(!r.spec.s3().unwrap().signed);
        assert!(
            r.summary.by_op["get"].ops > 0 && r.summary.errors == 0,
            "{style}: {:?}",
            r.summary.failures
        );
    }
    srv.stop();
}

#[test]
fn a_large_object_is_written_and_read_in_parts_with_bounded_memory() {
    let _g = shared();
    let dir = TempDir::new("s3large");
    // 512 MiB objects in 16 MiB parts: the client holds a few parts at most.
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "s3",
            "--workload",
            "get",
            "--objects",
            "1",
            "--size",
            "512MiB",
            "--put-parts",
            "2",
            "--get-parts",
            "2",
            "--count",
            "2",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    let s = &r.summary;
    assert_eq!(s.by_op["get"].bytes_in, (2 * 512) << 20, "{:?}", s.failures);
    assert_eq!(r.prepare.as_ref().unwrap().bytes, 512 << 20);
    let rss = s.client_peak_rss_bytes;
    assert!(
        rss < 96 << 20,
        "client peak RSS {} MiB for 1.5 GiB moved",
        rss >> 20
    );
    let server_rss = s.server_peak_rss_bytes.unwrap();
    assert!(
        server_rss < 96 << 20,
        "server peak RSS {} MiB",
        server_rss >> 20
    );
}

#[test]
fn the_fake_server_killed_mid_run_fails_the_run_with_a_partial_result() {
    let _g = shared();
    let srv = Server::start(&["--transport", "s3"]);
    let dir = TempDir::new("s3kill");
    let mut run = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--transport",
        "s3",
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
    assert!(r.summary.by_op["get"].ops > 0);
    assert!(!r.intervals.is_empty());
}

/// A test CA and a certificate it signed for localhost, 127.0.0.1 and
/// wirebench.localhost (virtual-host style), made with the openssl command.
pub(crate) fn test_certificates(dir: &TempDir) {
    let sh = r#"set -e
E="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $E -keyout ca.key -out ca.pem -days 2 -subj /CN=wirebench-test-ca
openssl req $E -keyout key.pem -out leaf.csr -subj /CN=localhost
printf 'subjectAltName=DNS:localhost,DNS:wirebench.localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > ext
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 -extfile ext
"#;
    let out = Command::new("sh")
        .args(["-c", sh])
        .current_dir(dir.path())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_s3s_target_is_reached_over_tls_and_an_unknown_issuer_is_refused_up_front() {
    let _g = shared();
    let certs = TempDir::new("s3tls");
    test_certificates(&certs);
    let (cert, key, ca) = (
        format!("{}/cert.pem", certs.str()),
        format!("{}/key.pem", certs.str()),
        format!("{}/ca.pem", certs.str()),
    );
    let srv = Server::start(&[
        "--transport",
        "s3",
        "--domain",
        "localhost",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    assert!(
        srv.endpoint.starts_with("s3s://127.0.0.1:"),
        "{}",
        srv.endpoint
    );
    let port = srv
        .endpoint
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    for (host, style) in [("127.0.0.1", "path"), ("localhost", "virtual")] {
        let dir = TempDir::new("s3tls-run");
        let t = format!("s3s://{host}:{port}/wirebench");
        let (st, r, err) = run_json(
            &dir,
            &workload_args(
                "get",
                &["--target", &t, "--url-style", style, "--ca-file", &ca],
            ),
        );
        assert!(st.success(), "{style}: {err}");
        assert!(
            r.summary.by_op["get"].ops > 0 && r.summary.errors == 0,
            "{style}: {:?}",
            r.summary.failures
        );
    }
    fails_up_front(
        &["--transport", "s3", "--target", &srv.endpoint],
        1,
        "UnknownIssuer",
    );
    srv.stop();
}

#[test]
fn minio_over_tls_with_a_private_ca() {
    let _g = shared();
    let certs = TempDir::new("minio-tls");
    test_certificates(&certs);
    let dir = certs.path().join("minio");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(certs.path().join("cert.pem"), dir.join("public.crt")).unwrap();
    std::fs::copy(certs.path().join("key.pem"), dir.join("private.key")).unwrap();
    let Some(minio) = Minio::start_with(dir.to_str()) else {
        return;
    };
    let target = format!("s3s://{}/bench", minio.addr);
    let ca = format!("{}/ca.pem", certs.str());
    let creds = minio.creds();
    // MinIO may take a moment after it listens: the preflight's one clear
    // message says when it is not ready yet.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = TempDir::new("minio-tls-run");
        let mut args = workload_args(
            "get",
            &["--target", &target, "--ca-file", &ca, "--create-bucket"],
        );
        args.extend_from_slice(&creds);
        let (st, r, err) = run_json_or_error(&out, &args);
        match r {
            Some(r) if st.success() => {
                check_workload("get", &r, &err);
                break;
            }
            _ => assert!(Instant::now() < deadline, "MinIO over TLS: {err}"),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_aws_sdk_for_python_works_against_the_fake_server() {
    let _g = shared();
    let Some(py) = python_with("boto3", "boto3==1.44.5") else {
        return;
    };
    let srv = Server::start_env(
        &["AWS_SECRET_ACCESS_KEY=sdk-secret"],
        &["--transport", "s3", "--access-key", "AKSDK"],
    );
    let addr = srv
        .endpoint
        .strip_prefix("s3://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/boto3_client.py");
    let out = Command::new(py)
        .args([script, &format!("http://{addr}"), "AKSDK", "sdk-secret"])
        .output()
        .expect("run python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "boto3: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    srv.stop();
}

/// The mixed workload with 8 connections: every operation succeeds, so a
/// 404 would be the server's, never one the run made itself (a GET of an
/// object another connection had just deleted).
#[test]
fn issue_15_mixed_with_8_connections_makes_no_errors_of_its_own() {
    let _g = shared();
    let mixed = |extra: &[&str]| {
        let dir = TempDir::new("s3mixed");
        let mut args = vec![
            "--transport",
            "s3",
            "--workload",
            "mixed",
            "--mix",
            "get=50,put=25,delete=25",
            "--clients",
            "2",
            "--conns-per-client",
            "4",
            "--objects",
            "64",
            "--duration",
            "10s",
            "--warmup",
            "0s",
            "--verify",
        ];
        args.extend_from_slice(extra);
        let (st, r, err) = run_json(&dir, &args);
        assert!(st.success(), "{err}");
        assert_eq!(r.summary.errors, 0, "{:?}", r.summary.failures);
        for op in ["get", "put", "delete"] {
            assert!(r.summary.by_op[op].ops > 0, "{op}: {:?}", r.summary.by_op);
        }
        assert_eq!(r.cleanup.as_ref().map(|c| c.errors), Some(0));
    };
    mixed(&[]);
    let Some(minio) = Minio::start() else { return };
    let target = format!("s3://{}/mixed", minio.addr);
    let mut extra = vec!["--target", target.as_str(), "--create-bucket"];
    extra.extend_from_slice(&minio.creds());
    mixed(&extra);
}

/// Issue 36: the S3 report's study from a sweep (GET and PUT x sizes x
/// clients against the fake server): `table` has the TTFB columns; the
/// report has them in its summary, a read/write table with the R/W ratio,
/// and one histogram of every test's time to first byte.
#[test]
fn issue_36_a_sweep_of_gets_and_puts_gives_ttfb_columns_a_rw_ratio_and_a_histogram_each() {
    let _g = shared();
    let dir = TempDir::new("s3-sweep");
    let spec = dir.path().join("s3.toml");
    std::fs::write(
        &spec,
        r#"
name = "s3rw"
[base]
transport = "s3"
objects = 20
warmup = "0s"
duration = "1s"
[matrix]
workload = ["get", "put"]
size = ["1KiB", "16KiB"]
clients = [1, 2]
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    sweep_ok(&spec, &results, &[]);
    let exp = results.join("s3rw");
    let table = table_ok(&exp, &[]);
    let head: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let at = head
        .iter()
        .position(|h| *h == "ttfb mean (ms)")
        .expect("{table}");
    assert_eq!(head[at + 1], "ttfb p99 (ms)", "{table}");
    // Issue 48: reads' throughput comes in, writes' goes out: both shown.
    let col = |name: &str| head.iter().position(|h| *h == name).expect(name);
    let (out_at, in_at, mode_at) = (
        col("out throughput (MiB/s)"),
        col("in throughput (MiB/s)"),
        col("workload"),
    );
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let mean: f64 = cells[at].parse().unwrap_or_else(|_| panic!("{row}"));
        let p99: f64 = cells[at + 1].parse().unwrap_or_else(|_| panic!("{row}"));
        assert!(mean > 0.0 && p99 >= mean * 0.5, "{row}");
        let mib = |k: usize| -> f64 { cells[k].parse().unwrap_or_else(|_| panic!("{row}")) };
        match cells[mode_at] {
            "get" => assert!(mib(in_at) > 0.0 && mib(out_at) == 0.0, "{row}"),
            _ => assert!(mib(out_at) > 0.0 && mib(in_at) == 0.0, "{row}"),
        }
    }
    let (md, figures) = report_ok(&exp, &dir.path().join("report.html"), &[]);
    assert!(md.contains("| TTFB mean | TTFB p99 |"), "{md}");
    let rw = md
        .split("## Read and write")
        .nth(1)
        .expect("a read and write section");
    let rows: Vec<&str> = rw
        .lines()
        .filter(|l| l.starts_with("| 1KiB") || l.starts_with("| 16KiB"))
        .collect();
    assert_eq!(rows.len(), 4, "{rw}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (read, write, ratio): (f64, f64, f64) = (
            cells[4].parse().unwrap(),
            cells[6].parse().unwrap(),
            cells[7].parse().unwrap(),
        );
        assert!(
            read > 0.0 && write > 0.0 && (ratio - read / write).abs() < 0.01 + ratio * 0.01,
            "{row}"
        );
    }
    // Issue 48: reads and writes each have their histogram, every test in it.
    let f = figure(&figures, "Time to first byte of get, 4 tests");
    assert!(
        f.iter().any(|t| t == "% of requests") && !f.iter().any(|t| t.contains("mode=put")),
        "{f:?}"
    );
    let f = figure(&figures, "Time to first byte of put, 4 tests");
    assert!(f.iter().any(|t| t.contains("mode=put")), "{f:?}");
}
