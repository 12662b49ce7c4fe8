//! The shm transport end to end: every mode with clients as threads and as
//! processes, the data channel's bounded memory, the CSV line, ipc-compare,
//! and cleanup after a normal exit, a killed client and a killed server.

use crate::helpers::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wirebench_core::result::RunState;

/// `wirebench clean` removes every dead process's leftovers, those of a
/// test beside it too: a test that leaves some on purpose (a killed
/// server's socket) and checks who removes them, and a test that cleans,
/// hold this lock.
static LEFTOVERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn leftovers() -> std::sync::MutexGuard<'static, ()> {
    LEFTOVERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Files of ours owned by `pid` in the places `clean` looks at.
fn files_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("wirebench-shm-{pid}");
    [std::env::temp_dir(), "/tmp".into(), "/dev/shm".into()]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n == format!("{prefix}.sock") || n.starts_with(&format!("{prefix}-"))
        })
        .map(|e| e.path())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// A `wirebench serve --transport shm` and its control socket.
fn shm_server() -> (Proc, PathBuf) {
    let s = Proc::spawn(&["serve", "--transport", "shm", "--cpus", "0"]);
    let first = s
        .stdout
        .recv_timeout(Duration::from_secs(20))
        .expect("listening");
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let endpoint = v["endpoint"].as_str().unwrap();
    let path = PathBuf::from(endpoint.strip_prefix("unix:").unwrap());
    (s, path)
}

/// Children of `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn wait_gone(pids: &[u32], limit: Duration) {
    let deadline = Instant::now() + limit;
    while pids.iter().any(|&p| pid_alive(p)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_mode_with_threads_and_processes_checks_sequence_and_payload() {
    let _g = shared();
    for clients_as in ["threads", "processes"] {
        for mode in ["sync", "async", "nores", "stream"] {
            let dir = TempDir::new("shm-modes");
            let (st, r, err) = run_json(
                &dir,
                &[
                    "--transport",
                    "shm",
                    "--mode",
                    mode,
                    "--clients-as",
                    clients_as,
                    "--sessions",
                    "2",
                    "--size",
                    "300",
                    "--verify",
                    "--count",
                    "20000",
                    "--warmup",
                    "100ms",
                ],
            );
            let what = format!("{clients_as} {mode}");
            assert!(st.success(), "{what}: {err}");
            assert_eq!(r.status.state, RunState::Complete, "{what}");
            assert_eq!(r.summary.ops, 20000, "{what}");
            let shm = r.spec.shm().expect("shm spec");
            assert_eq!(shm.clients_as.to_string(), clients_as);
            if mode == "sync" || mode == "async" {
                assert_eq!(r.summary.latency.count, 20000, "{what}");
                assert!(r.summary.latency.p50_ns > 0, "{what}");
            }
            let server = r.server.as_ref().expect("server report");
            let stats = server.stats.as_ref().expect("server stats");
            assert_eq!(stats.conns_accepted, 2, "{what}");
            assert_eq!(stats.conns_refused, 0, "{what}");
            if mode == "sync" {
                assert!(stats.max_outstanding_per_conn <= 1, "{what}");
            }
            assert!(!pid_alive(server.pid), "{what}: the server still runs");
            assert!(files_of(server.pid).is_empty(), "{what}: left behind");
        }
    }
}

#[test]
fn the_cpu_of_client_processes_counts_as_the_clients() {
    let _g = shared();
    let dir = TempDir::new("shm-cpu");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "shm",
            "--clients-as",
            "processes",
            "--wait",
            "futex",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
        ],
    );
    assert!(st.success(), "{err}");
    // The run's own process only coordinates: without its children's CPU
    // the client would show next to none. A futex round trip costs tens of
    // microseconds of CPU on each side.
    let per_op = r.summary.client_cpu_us_per_op;
    assert!(r.summary.client_cpu_s > 0.05, "{}", r.summary.client_cpu_s);
    assert!(per_op > 1.0, "{per_op} us/op");
}

#[test]
fn four_gib_through_the_data_channel_keep_memory_flat() {
    let _g = shared();
    let dir = TempDir::new("shm-4g");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "shm",
            "--mode",
            "stream",
            "--size",
            "1MiB",
            "--count",
            "4096",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.ops, 4096);
    assert!(r.summary.bytes_in >= 4 << 30, "{}", r.summary.bytes_in);
    let server_rss = r.summary.server_peak_rss_bytes.expect("server RSS");
    // Rings of 8 MiB each, a 1 MiB message buffer: nothing near 4 GiB.
    assert!(server_rss < 64 << 20, "server RSS {server_rss}");
    assert!(
        r.summary.client_peak_rss_bytes < 64 << 20,
        "client RSS {}",
        r.summary.client_peak_rss_bytes
    );
}

#[test]
fn csv_prints_a_header_and_one_line_with_the_reports_columns() {
    let _g = shared();
    let dir = TempDir::new("shm-csv");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--transport",
        "shm",
        "--format",
        "csv",
        "--count",
        "5000",
        "--warmup",
        "100ms",
        "--sessions",
        "2",
    ]);
    assert!(p.wait(Duration::from_secs(60)).success());
    let out = p.stdout_all();
    let lines: Vec<&str> = out.lines().collect();
    // A header line (issue 15), then the run's line.
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("sessions,clients_as,mode,size_bytes"),
        "{out}"
    );
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(f.len(), 11, "{out}");
    // nloop is per session, as the report's (5000 operations in all).
    assert_eq!(&f[..5], &["2", "mt", "sync", "64", "2500"], "{out}");
    assert_eq!(f[8], "5000", "{out}");
    let elapsed: f64 = f[5].parse().unwrap();
    let msgs_per_s: f64 = f[6].parse().unwrap();
    // A round trip is two messages.
    let ops = elapsed * msgs_per_s / 2.0;
    assert!((ops - 5000.0).abs() < 5.0, "{out}");
    let gib: f64 = f[7].parse().unwrap();
    let expect = msgs_per_s * 64.0 / (1u64 << 30) as f64;
    assert!((gib - expect).abs() < 0.001 + expect * 0.01, "{out}");
    let (p50, p99): (f64, f64) = (f[9].parse().unwrap(), f[10].parse().unwrap());
    assert!(p50 > 0.0 && p99 >= p50, "{out}");
}

#[test]
fn ipc_compare_puts_every_channel_side_by_side() {
    let _g = shared();
    let dir = TempDir::new("shm-compare");
    let mut p = Proc::spawn(&[
        "ipc-compare",
        "--results",
        dir.str(),
        "--format",
        "json",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--rounds",
        "1",
    ]);
    let st = p.wait(Duration::from_secs(120));
    let out = p.stdout_all();
    assert!(st.success(), "{out}\n{}", p.stderr_all());
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "shm-spin",
            "shm-adaptive",
            "shm-futex",
            "unix",
            "tcp",
            "pipe"
        ]
    );
    for r in rows.as_array().unwrap() {
        assert!(r["ops_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["p50_ns"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(rows[3]["ops_vs_unix"].as_f64(), Some(1.0));
    for r in rows.as_array().unwrap() {
        let (lo, hi) = (
            r["ops_per_s_min"].as_f64().unwrap(),
            r["ops_per_s_max"].as_f64().unwrap(),
        );
        assert!(
            lo <= r["ops_per_s"].as_f64().unwrap() && r["ops_per_s"].as_f64().unwrap() <= hi,
            "{r}"
        );
    }
    // One directory for the comparison, one per variant inside it (issue 15):
    // each a group that compare takes as one variant.
    let comparison = only_run_dir(&dir);
    let variants: Vec<String> = std::fs::read_dir(&comparison)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(variants.len(), 6, "{variants:?}");
    let mut c = Proc::spawn(&[
        "compare",
        comparison.join("unix").to_str().unwrap(),
        comparison.join("shm-spin").to_str().unwrap(),
    ]);
    assert!(
        c.wait(Duration::from_secs(30)).success(),
        "{}",
        c.stderr_all()
    );
    assert!(c.stdout_all().contains("| ops/s |"));
}

/// Starts a long shm run; returns it and its server's PID once it measures.
fn long_run(dir: &TempDir, extra: &[&str]) -> (Proc, u32) {
    let mut args = vec![
        "run",
        "--results",
        dir.str(),
        "--transport",
        "shm",
        "--duration",
        "60s",
        "--warmup",
        "0s",
        "--wait",
        "futex",
    ];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    let head = p.stderr_until(Duration::from_secs(30), |l| l.contains("server (pid "));
    let pid: u32 = head
        .split("server (pid ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no server pid in {head}"));
    p.stderr_until(Duration::from_secs(30), |l| l.contains("measure"));
    (p, pid)
}

#[test]
fn a_killed_run_leaves_no_process_and_no_file() {
    let _g = shared();
    let dir = TempDir::new("shm-kill-client");
    let (mut p, server) = long_run(&dir, &["--clients-as", "processes", "--sessions", "2"]);
    let mut pids = children_of(p.pid);
    assert!(pids.contains(&server));
    assert_eq!(pids.len(), 3, "a server and two client processes: {pids:?}");
    assert!(!files_of(server).is_empty(), "the server's socket exists");
    p.signal(nix::sys::signal::Signal::SIGKILL);
    p.wait(Duration::from_secs(10));
    pids.push(p.pid);
    wait_gone(&pids, Duration::from_secs(10));
    assert!(files_of(server).is_empty(), "{:?}", files_of(server));
}

#[test]
fn a_killed_client_process_fails_the_run_and_keeps_the_result() {
    let _g = shared();
    let dir = TempDir::new("shm-kill-worker");
    let (mut p, server) = long_run(&dir, &["--clients-as", "processes", "--sessions", "2"]);
    let worker = *children_of(p.pid)
        .iter()
        .find(|&&c| c != server)
        .expect("a client process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let st = p.wait(Duration::from_secs(30));
    assert_eq!(st.code(), Some(1), "{}", p.stderr_all());
    let r: wirebench_core::result::RunResult = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(&dir).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r.status.state, RunState::Failed);
    let why = r.status.reason.unwrap();
    assert!(why.contains("client process"), "{why}");
    assert!(r.summary.ops > 0, "what was measured is kept");
    wait_gone(&[server], Duration::from_secs(10));
    assert!(files_of(server).is_empty());
}

#[test]
fn a_killed_server_is_reported_and_the_survivor_removes_its_socket() {
    let _g = shared();
    let _l = leftovers();
    let dir = TempDir::new("shm-kill-server");
    let (mut p, server) = long_run(&dir, &[]);
    let sock = files_of(server);
    assert_eq!(sock.len(), 1, "{sock:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let st = p.wait(Duration::from_secs(30));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("embedded server"), "{err}");
    assert!(only_run_dir(&dir).join("run.json").exists());
    // SIGKILL gave the server no chance to remove its socket: the run did.
    assert!(!sock[0].exists(), "{err}");
    assert!(err.contains("left by the server"), "{err}");
}

#[test]
fn clean_removes_the_leftovers_of_dead_processes_only() {
    let _g = shared();
    let _l = leftovers();
    // A server killed with SIGKILL, with nobody to clean up after it.
    let (mut s, leftover) = shm_server();
    s.signal(nix::sys::signal::Signal::SIGKILL);
    s.wait(Duration::from_secs(20));
    assert!(leftover.exists(), "SIGKILL leaves the socket");
    let mine = std::env::temp_dir().join(format!("wirebench-shm-{}.sock", std::process::id()));
    std::fs::write(&mine, b"").unwrap();
    let mut d = Proc::spawn(&["clean", "--dry-run"]);
    assert!(d.wait(Duration::from_secs(30)).success());
    let out = d.stdout_all();
    assert!(
        out.contains(&format!("would remove: {}", leftover.display())),
        "{out}"
    );
    assert!(leftover.exists(), "--dry-run removed a file");
    let mut c = Proc::spawn(&["clean"]);
    assert!(c.wait(Duration::from_secs(30)).success());
    let out = c.stdout_all();
    assert!(
        out.contains(&format!("removed: {}", leftover.display())),
        "{out}"
    );
    assert!(!leftover.exists());
    assert!(mine.exists(), "clean removed a running process's file");
    assert!(
        out.contains(&format!("left (pid {} is running)", std::process::id())),
        "{out}"
    );
    std::fs::remove_file(&mine).unwrap();
}

#[test]
fn sigint_saves_the_partial_result_and_leaves_nothing() {
    let _g = shared();
    let dir = TempDir::new("shm-sigint");
    let (mut p, server) = long_run(&dir, &["--clients-as", "processes", "--sessions", "2"]);
    let mut pids = children_of(p.pid);
    p.signal(nix::sys::signal::Signal::SIGINT);
    let st = p.wait(Duration::from_secs(30));
    assert_eq!(st.code(), Some(130), "{}", p.stderr_all());
    let r: wirebench_core::result::RunResult = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(&dir).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r.status.state, RunState::Interrupted);
    assert!(r.summary.ops > 0);
    pids.push(server);
    wait_gone(&pids, Duration::from_secs(10));
    assert!(files_of(server).is_empty());
}

#[test]
fn clean_never_touches_a_running_servers_files() {
    let _g = shared();
    let _l = leftovers();
    let (mut s, path) = shm_server();
    assert!(path.exists());
    // A run against it as an external target.
    let dir = TempDir::new("shm-external");
    let target = format!("unix:{}", path.display());
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "shm",
            "--target",
            &target,
            "--mode",
            "async",
            "--count",
            "10000",
            "--warmup",
            "0s",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.ops, 10000);
    assert!(r.server.is_none(), "an external server has no report");
    let mut c = Proc::spawn(&["clean"]);
    assert!(c.wait(Duration::from_secs(30)).success());
    let out = c.stdout_all();
    assert!(path.exists(), "clean removed a live server's socket");
    assert!(
        out.contains(&format!("left (pid {} is running)", s.pid)),
        "{out}"
    );
    s.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(s.wait(Duration::from_secs(20)).success());
    assert!(
        !path.exists(),
        "the server removes its socket when it stops"
    );
}
