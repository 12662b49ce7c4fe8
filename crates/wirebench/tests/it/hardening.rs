//! Hostile peers, careless users, closed terminals: what a peer can make a
//! server hold is bounded whatever it sends, a server out of descriptors
//! does not spin, nothing is overwritten, and SIGHUP keeps the result.

use crate::helpers::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirebench_core::result::RunState;
use wirebench_core::store;

/// A field of /proc/PID/status, in KiB (VmRSS:, VmHWM:).
pub(crate) fn status_kib(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// CPU time of a process so far (user + system), in clock ticks.
pub(crate) fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis; utime and stime
    // are the 14th and 15th of the line.
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn msgr_hello(size: u32, response: u32) -> Vec<u8> {
    let mut b = b"WBMSGR\r\n".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.push(1); // echo
    b.push(0);
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&response.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b
}

fn request_header(len: u32, seq: u64) -> Vec<u8> {
    let mut b = 0xB7E5u16.to_le_bytes().to_vec();
    b.extend_from_slice(&[1, 0]); // a request
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&seq.to_le_bytes());
    b
}

/// A connection that completes the msgr handshake (echo of `size` /
/// `response` bytes), then sends `then`; kept open by the caller.
fn shake_hands(addr: &str, size: u32, response: u32, then: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&msgr_hello(size, response)).unwrap();
    let mut welcome = [0u8; 16];
    s.read_exact(&mut welcome).unwrap();
    assert_eq!(welcome[10], 0, "the server refused the handshake");
    s.write_all(then).unwrap();
    s
}

/// Whether the server closed `s` (end of stream or reset), waiting up to
/// the read timeout set on it.
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn frame_headers_alone_pin_no_memory_and_a_real_run_goes_on() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        let srv = Server::start(&["--arch", arch]);
        let pid = srv.proc.pid;
        let before = status_kib(pid, "VmRSS:");
        // 32 connections of small frames each announce a 16 MiB request
        // and send nothing more (before: 16 MiB zero-filled at once for
        // each, 512 MiB in all).
        let hostile: Vec<TcpStream> = (0..32)
            .map(|_| shake_hands(srv.addr(), 64, 64, &request_header(16 << 20, 0)))
            .collect();
        let dir = TempDir::new("hostile");
        let (st, r, err) = run_json(
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
        assert!(st.success() && r.summary.ops > 0, "{arch}: {err}");
        let grew = status_kib(pid, "VmHWM:").saturating_sub(before);
        assert!(
            grew < 64 << 10,
            "{arch}: peak RSS grew by {} MiB",
            grew >> 10
        );
        drop(hostile);
        let stats = srv.stop();
        assert_eq!(stats["conns_accepted"], 33, "{arch}: {stats}");
    }
}

#[test]
fn responses_held_back_by_a_delay_are_bounded_in_bytes() {
    let _g = shared();
    for arch in ["reactor", "pool"] {
        let srv = Server::start(&["--arch", arch, "--delay", "30s"]);
        let pid = srv.proc.pid;
        let before = status_kib(pid, "VmRSS:");
        // Zero-length requests for 16 MiB responses (before: each response
        // built whole and queued, 1,024 per connection: up to 16 GiB).
        let requests: Vec<u8> = (0..64).flat_map(|seq| request_header(0, seq)).collect();
        let mut hostile: Vec<TcpStream> = (0..2)
            .map(|_| shake_hands(srv.addr(), 0, 16 << 20, &[]))
            .collect();
        for s in &mut hostile {
            s.write_all(&requests).unwrap();
        }
        // The server reads the requests at once; its peak over two seconds.
        let until = Instant::now() + Duration::from_secs(2);
        let mut grew = 0;
        while Instant::now() < until {
            grew = status_kib(pid, "VmHWM:").saturating_sub(before);
            assert!(
                grew < 64 << 10,
                "{arch}: peak RSS grew by {} MiB",
                grew >> 10
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(hostile);
        let stats = srv.stop();
        // Every request was read: the bound held while they were queued.
        assert_eq!(stats["frames_in"], 128, "{arch}: {stats} (grew {grew} KiB)");
        assert_eq!(stats["frames_out"], 0, "{arch}: {stats}");
    }
}

#[test]
fn idle_connections_and_unfinished_frames_are_closed() {
    let _g = shared();
    let srv = Server::start(&["--idle-timeout", "1s"]);
    // Handshake, then silence.
    let mut idle = shake_hands(srv.addr(), 64, 64, &[]);
    // A frame started, its payload sent a byte every 300 ms: never idle,
    // but the frame would take 19 s.
    let mut slow = shake_hands(srv.addr(), 64, 64, &request_header(64, 0));
    let t0 = Instant::now();
    let mut dribble = slow.try_clone().unwrap();
    let dripper = std::thread::spawn(move || {
        let mut sent = 0;
        while sent < 60 && dribble.write_all(&[7]).is_ok() {
            sent += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        sent
    });
    assert!(
        closed_by_server(&mut idle),
        "the idle connection stayed open"
    );
    let idle_after = t0.elapsed();
    assert!(
        closed_by_server(&mut slow),
        "the unfinished frame stayed open"
    );
    let slow_after = t0.elapsed();
    let sent = dripper.join().unwrap();
    assert!(
        idle_after >= Duration::from_secs(1) && idle_after < Duration::from_secs(4),
        "idle closed after {idle_after:?}"
    );
    assert!(
        slow_after < Duration::from_secs(4) && sent < 60,
        "the slow frame closed after {slow_after:?}, {sent} bytes"
    );
    let stats = srv.stop();
    assert_eq!(stats["conns_refused"], 2, "{stats}");
}

#[test]
fn connections_beyond_max_conns_are_closed_and_counted() {
    let _g = shared();
    let srv = Server::start(&["--max-conns", "4"]);
    let held: Vec<TcpStream> = (0..4)
        .map(|_| shake_hands(srv.addr(), 64, 64, &[]))
        .collect();
    let mut fifth = TcpStream::connect(srv.addr()).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = fifth.write_all(&msgr_hello(64, 64));
    assert!(
        closed_by_server(&mut fifth),
        "a fifth connection was served"
    );
    drop(held);
    // Once the server has seen the four close, connections are served again.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = s.write_all(&msgr_hello(64, 64));
        let mut welcome = [0u8; 16];
        if s.read_exact(&mut welcome).is_ok() {
            break;
        }
        assert!(
            Instant::now() < until,
            "no connection served after the four closed"
        );
    }
    let dir = TempDir::new("maxconns");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &srv.endpoint,
            "--count",
            "200",
            "--warmup",
            "0s",
            "--conns-per-client",
            "3",
        ],
    );
    assert!(st.success() && r.summary.ops == 200, "{err}");
    let stats = srv.stop();
    assert!(stats["conns_over_cap"].as_u64().unwrap() >= 1, "{stats}");
}

/// `serve` under `prlimit --nofile=64` with 100 connections: its CPU use
/// over 5 s, and the accept failures it logged then.
fn out_of_descriptors(extra: &[&str]) -> (f64, usize) {
    let mut args = vec![
        "--nofile=64:64",
        BIN,
        "serve",
        "--listen",
        "tcp://127.0.0.1:0",
        "--cpus",
        "0",
    ];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn_program("prlimit", &args);
    let first = p
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("listening");
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let ep = v["endpoint"].as_str().unwrap();
    let addr = ep.split("://").nth(1).unwrap().split('/').next().unwrap();
    let conns: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // The server has taken what it can once it logs the failure.
    p.stderr_until(Duration::from_secs(10), |l| l.contains("accept failed"));
    let (t0, c0, lines0) = (Instant::now(), cpu_ticks(p.pid), p.stderr_seen.len());
    std::thread::sleep(Duration::from_secs(5));
    let busy = (cpu_ticks(p.pid) - c0) as f64 / 100.0 / t0.elapsed().as_secs_f64();
    p.stderr_all_until(Duration::from_millis(200));
    let logged = p.stderr_seen[lines0..].join("\n");
    drop(conns);
    p.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(p.wait(Duration::from_secs(20)).success());
    (busy, logged.matches("accept failed").count())
}

#[test]
fn a_server_out_of_file_descriptors_does_not_spin() {
    // Each server's own CPU time is measured: a spinning one would take
    // most of a CPU whatever runs beside it. The three are watched at once.
    let _g = shared();
    let servers: [&[&str]; 3] = [
        &["--transport", "s3"],
        &["--arch", "reactor"],
        &["--arch", "pool"],
    ];
    std::thread::scope(|s| {
        let watched: Vec<_> = servers
            .iter()
            .map(|extra| (extra, s.spawn(|| out_of_descriptors(extra))))
            .collect();
        for (extra, w) in watched {
            let (busy, logged) = w.join().unwrap();
            assert!(busy < 0.10, "{extra:?}: {:.0}% of a CPU", busy * 100.0);
            assert!(logged <= 1, "{extra:?}: {logged} more log lines in 5 s");
        }
    });
}

#[test]
fn outputs_are_checked_before_any_load_and_never_overwritten() {
    let _g = shared();
    let dir = TempDir::new("outputs");
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "mine").unwrap();
    let old = dir.path().join("old-run");
    std::fs::create_dir(&old).unwrap();
    let run_json_file = old.join("run.json");
    std::fs::write(&run_json_file, "{\"an\": \"older run\"}").unwrap();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--results", file.to_str().unwrap()], "--results"),
        (
            vec![
                "--results",
                results,
                "--hlog",
                run_json_file.to_str().unwrap(),
            ],
            "--hlog",
        ),
        (vec!["--results", results, "--hlog", dir.str()], "--hlog"),
        (vec!["--results", results, "--trace", dir.str()], "--trace"),
        (
            vec!["--results", results, "--duration", "18446744074s"],
            "--duration",
        ),
    ];
    for (args, flag) in cases {
        let mut all = vec!["run", "--duration", "30s"];
        all.extend(args);
        let t0 = Instant::now();
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(flag), "{all:?}: {err}");
        assert!(!err.contains("connected"), "{all:?}: load ran: {err}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{all:?}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    assert_eq!(
        std::fs::read_to_string(&run_json_file).unwrap(),
        "{\"an\": \"older run\"}"
    );
    // With --force, the file is replaced.
    let (st, _, err) = run_json(
        &TempDir::new("outputs-force"),
        &[
            "--count",
            "100",
            "--warmup",
            "0s",
            "--hlog",
            run_json_file.to_str().unwrap(),
            "--force",
        ],
    );
    assert!(st.success(), "{err}");
    assert!(
        std::fs::read_to_string(&run_json_file)
            .unwrap()
            .contains("StartTime")
    );
}

#[test]
fn a_closed_terminal_saves_the_partial_result_and_exits_129() {
    let _g = shared();
    let dir = TempDir::new("sighup");
    let (mut run, server) = crate::faults::long_embedded_run(&dir);
    run.signal(nix::sys::signal::Signal::SIGHUP);
    let st = run.wait(Duration::from_secs(30));
    assert_eq!(st.code(), Some(129), "{}", run.stderr_all());
    let r = store::load(&only_run_dir(&dir)).unwrap();
    assert_eq!(r.status.state, RunState::Interrupted);
    assert!(r.summary.ops > 0);
    assert!(!pid_alive(server), "the server {server} outlived the run");
}
