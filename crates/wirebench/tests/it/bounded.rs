//! Issue 35: bounded whatever the peer or the input: a RESP peer that
//! announces an endless array, a connection cap a burst cannot pass, a
//! sweep matrix too large to list, an input line too long to echo.

use crate::helpers::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[test]
fn issue_35_a_resp_peer_announcing_an_endless_array_fails_the_run_in_little_memory() {
    let _g = shared();
    let dir = TempDir::new("bounded-resp");
    // A "server" that answers anything with `*1000000000000` and then
    // elements, as fast as the client reads.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        l.set_nonblocking(false).unwrap();
        let Ok((mut s, _)) = l.accept() else { return };
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"*1000000000000\r\n");
        let chunk = ":1\r\n".repeat(16 << 10);
        while s.write_all(chunk.as_bytes()).is_ok() {}
    });
    let target = format!("redis://{addr}");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--format",
        "json",
        "--target",
        &target,
        "--duration",
        "3s",
        "--warmup",
        "0s",
    ]);
    let mut hwm = 0;
    while p.stdout.recv_timeout(Duration::from_millis(100)).is_err() {
        // Until it exits (a zombie has no VmHWM).
        match std::fs::read_to_string(format!("/proc/{}/status", p.pid)) {
            Ok(s) if s.contains("VmHWM:") => {
                let line = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
                let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                hwm = hwm.max(kib);
            }
            _ => break,
        }
    }
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("an aggregate reply of 1000000000000 elements"),
        "{err}"
    );
    assert!(hwm < 100 << 10, "the client's peak RSS: {} MiB", hwm >> 10);
    drop(p);
    let _ = peer.join();
}

#[test]
fn issue_35_a_burst_of_connections_does_not_pass_max_conns() {
    let _g = shared();
    for arch in ["pool", "reactor"] {
        let srv = Server::start(&["--arch", arch, "--cpus", "0-1", "--max-conns", "50"]);
        // 130 at once, each with its hello sent before any is read.
        let mut conns: Vec<TcpStream> = (0..130)
            .map(|_| {
                let mut s = TcpStream::connect(srv.addr()).unwrap();
                let mut hello = b"WBMSGR\r\n".to_vec();
                hello.extend_from_slice(&1u16.to_le_bytes());
                hello.extend_from_slice(&[1, 0]);
                hello.extend_from_slice(&64u32.to_le_bytes());
                hello.extend_from_slice(&64u32.to_le_bytes());
                hello.extend_from_slice(&[0; 4]);
                let _ = s.write_all(&hello);
                s
            })
            .collect();
        let served = conns
            .iter_mut()
            .map(|s| {
                s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                let mut welcome = [0u8; 16];
                s.read_exact(&mut welcome).is_ok()
            })
            .filter(|&ok| ok)
            .count();
        drop(conns);
        let stats = srv.stop();
        assert!(
            served <= 50,
            "{arch}: {served} of 130 served with --max-conns 50"
        );
        assert!(served >= 40, "{arch}: only {served} served");
        assert_eq!(
            stats["conns_over_cap"].as_u64().unwrap() + served as u64,
            130,
            "{arch}: {stats}"
        );
    }
}

#[test]
fn issue_35_a_sweep_too_large_is_refused_before_it_is_listed() {
    let _g = shared();
    let dir = TempDir::new("bounded-sweep");
    let list: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    let spec = dir.path().join("big.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"big\"\n[base]\nsize = 64\n[matrix]\nclients = [{l}]\ndepth = [{l}]\n",
            l = list.join(", ")
        ),
    )
    .unwrap();
    let mut p = Proc::spawn(&["sweep", spec.to_str().unwrap(), "--dry-run"]);
    let st = p.wait(Duration::from_secs(30));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("1000 clients x 1000 depth x 1 repetition(s) = 1000000 runs: at most 100000"),
        "{err}"
    );
}

#[test]
fn issue_35_a_long_input_line_is_echoed_cut() {
    let _g = shared();
    let dir = TempDir::new("bounded-echo");
    let f = dir.path().join("long.txt");
    std::fs::write(&f, format!("{}\n", "x".repeat(10 << 20))).unwrap();
    let mut p = Proc::spawn(&["timeline", f.to_str().unwrap()]);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(2), "{}", &err[..err.len().min(500)]);
    assert!(err.len() < 1000, "{} bytes of stderr", err.len());
    assert!(err.contains("... (10485760 bytes in all)"), "{err}");
}

/// An HTTP/1.1 server on loopback that answers every request with a
/// small 200, except on the connection accepted `silent`-th (from 0),
/// which it reads and never answers.
fn half_silent_http(silent: usize) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        let mut k = 0;
        while !stopping.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let quiet = k == silent;
            k += 1;
            let stopping = stopping.clone();
            std::thread::spawn(move || {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut buf = vec![0u8; 64 << 10];
                let mut pending = Vec::new();
                while !stopping.load(Ordering::Relaxed) {
                    match s.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                        Err(_) => continue,
                    }
                    if quiet {
                        pending.clear();
                        continue;
                    }
                    while let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..i + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, stop)
}

#[test]
fn issue_35_a_connection_never_answered_is_counted_and_fails_the_slo() {
    let _g = shared();
    let dir = TempDir::new("bounded-silent");
    // The preflight's connection is the first; the run's three follow, the
    // last of them never answered.
    let (addr, stop) = half_silent_http(3);
    let target = format!("http://{addr}/");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &target,
            "--conns-per-client",
            "3",
            "--duration",
            "3s",
            "--warmup",
            "0s",
            "--slo",
            "p99<50ms",
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        st.code(),
        Some(wirebench_core::summaries::EXIT_SLO_MISSED as i32),
        "{err}"
    );
    assert!(r.summary.ops > 100, "{err}");
    assert_eq!(
        r.summary.failures.get(wirebench_core::result::UNANSWERED),
        Some(&1),
        "{:?}",
        r.summary.failures
    );
    assert!(
        r.summary.latency.max_ns > 2_500_000_000,
        "the wait is in the latency: {:?}",
        r.summary.latency
    );
    assert!(!r.slos[0].pass, "{:?}", r.slos);
    assert!(
        r.warnings.iter().any(|w| matches!(
            w,
            wirebench_core::result::Warning::Unanswered { requests: 1, .. }
        )),
        "{:?}",
        r.warnings
    );
    // A healthy run counts nothing unanswered.
    let (addr, stop) = half_silent_http(usize::MAX);
    let target = format!("http://{addr}/");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &target,
            "--conns-per-client",
            "3",
            "--duration",
            "2s",
            "--warmup",
            "0s",
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(st.success(), "{err}");
    assert!(r.summary.failures.is_empty(), "{:?}", r.summary.failures);
    assert_eq!(r.summary.errors, 0);
}

#[test]
fn issue_35_a_run_that_measured_nothing_passes_no_objective() {
    let _g = shared();
    let dir = TempDir::new("bounded-nothing");
    let (addr, stop) = half_silent_http(1);
    let target = format!("http://{addr}/");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &target,
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--slo",
            "p99<50ms",
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(st.code(), Some(1), "{err}");
    // Its one request, never answered, is all the latency there is.
    assert!(!r.slos[0].pass && r.slos[0].actual > 1e9, "{:?}", r.slos);
    // A server that closes every connection at once: nothing at all.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let closer = std::thread::spawn(move || {
        l.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < until {
            match l.accept() {
                Ok((s, _)) => drop(s),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    let target = format!("tcp://{addr}");
    let (st, r, err) = run_json_or_error(
        &dir,
        &["--target", &target, "--duration", "1s", "--slo", "p99<50ms"],
    );
    assert_ne!(st.code(), Some(0), "{err}");
    if let Some(r) = r {
        assert!(!r.slos[0].pass && r.slos[0].actual.is_nan(), "{:?}", r.slos);
    }
    assert!(!err.contains("pass (actual"), "{err}");
    let _ = closer.join();
}

#[test]
fn issue_35_compare_says_what_differs_and_refuses_a_verdict_across_transports() {
    let _g = shared();
    let dir = TempDir::new("hints-compare");
    let run = |sub: &str, extra: &[&str]| {
        let mut args = vec!["--duration", "1s", "--warmup", "0s"];
        args.extend_from_slice(extra);
        let root = TempDir(dir.path().join(sub));
        std::fs::create_dir_all(root.path()).unwrap();
        let (st, _, err) = run_json(&root, &args);
        assert!(st.success(), "{err}");
        let d = only_run_dir(&root);
        std::mem::forget(root);
        d.display().to_string()
    };
    let a = run("a", &["--arch", "reactor"]);
    let b = run("b", &["--arch", "pool"]);
    let c = run("c", &["--transport", "s3"]);
    let compare = |args: &[&str]| {
        let mut all = vec!["compare"];
        all.extend_from_slice(args);
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(60));
        (st.code(), p.stdout_all(), p.stderr_all())
    };
    let (code, out, err) = compare(&[&a, &b]);
    assert_eq!(code, Some(0), "{err}");
    let differs = out.find("What differs").expect("what differs comes first");
    assert!(out.find("| metric |").unwrap() > differs, "{out}");
    assert!(out.contains("- target.arch: A reactor, B pool"), "{out}");
    assert!(out.contains("server CPU per op"), "{out}");
    let (code, _, err) = compare(&[&a, &c]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the variants are of different transports (A is msgr, B is s3)"),
        "{err}"
    );
    let (code, out, err) = compare(&["--force", &a, &c]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("- transport.kind: A msgr, B s3"), "{out}");
}

#[test]
fn issue_35_search_refuses_observation_flags_by_name() {
    // Issue 45: a search observes the server it is told of, but not over
    // load agents (each step a coordinated run of its own): refused by
    // name there, before any load.
    let _g = shared();
    let dir = TempDir::new("search-observe");
    for flag in [["--server-pid", "1"], ["--server-cmd", "sleep 100"]] {
        let mut p = Proc::spawn(&[
            "search",
            "--target",
            "tcp://127.0.0.1:9",
            "--agents",
            "127.0.0.1:9",
            "--slo",
            "p99<1ms",
            "--results",
            dir.str(),
            flag[0],
            flag[1],
        ]);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(2), "{err}");
        assert!(err.contains(flag[0]), "{err}");
    }
}
