//! The tests of `exec` that need the machine to themselves (see `whole_machine`).

use crate::exec::*;
use crate::helpers::*;
use std::time::Duration;
use wirebench_core::result::{RunResult, RunState};

/// sockperf's server and its ping-pong client as an exec run of 2 s, the
/// server on CPU 1, the client on CPU 0.
const SOCKPERF: [&str; 14] = [
    "--transport",
    "exec",
    "--server-cmd",
    "exec sockperf server -i 127.0.0.1 -p {port} --tcp",
    "--client-cmd",
    "sockperf ping-pong -i 127.0.0.1 -p {port} --tcp -m 64 -t {duration_s}",
    "--parser",
    "sockperf",
    "--duration",
    "2s",
    "--server-cpus",
    "1",
    "--client-cpus",
    "0",
];

#[test]
fn sockperf_server_and_client_p50_matches_its_own_output() {
    let _solo = exclusive();
    if !installed("sockperf") {
        return;
    }
    let results = TempDir::new("exec-sockperf");
    let (st, r, err) = run_json(&results, &SOCKPERF);
    assert!(st.success(), "{err}");
    assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
    let out = std::fs::read_to_string(run_dir(&results, &r).join("client-stdout.txt")).unwrap();
    let s = &r.summary;
    // Its own p50 and mean, to the nanosecond of its microseconds.
    let p50_us = sockperf_value(&out, "percentile 50.000");
    assert_eq!(s.latency.p50_ns, (p50_us * 1e3).round() as u64, "{out}");
    let sent = out
        .lines()
        .find(|l| l.contains("[Valid Duration]"))
        .and_then(|l| l.split("SentMessages=").nth(1))
        .and_then(|v| v.split(';').next())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap();
    assert_eq!(s.ops, sent);
    let t = s.tool.as_ref().unwrap();
    assert_eq!(
        (t.program.as_str(), t.exit.as_str()),
        ("sockperf", "exit status 0")
    );
    assert!(t.method.iter().any(|m| m.contains("half the round trip")));
    assert!(s.has_latency("p99") && s.has_latency("mean"));
    // The server: observed on its CPU, by thread group, then stopped.
    let th = s.server_threads.as_ref().unwrap();
    assert!(th.groups.iter().any(|g| g.group == "sockperf"), "{th:?}");
    assert!(
        s.server_cpu_s.unwrap() > 0.1 && s.client_cpu_s > 0.1,
        "{s:?}"
    );
    assert_eq!(r.placement.client_cpus.to_string(), "0");
    assert!(!pid_alive(r.server.as_ref().unwrap().pid));
    assert!(run_dir(&results, &r).join("server-stdout.txt").exists());
}

/// `flame` of an exec run: the server the run starts is sampled, and the
/// program's figures are in the run's result beside the flamegraph.
#[test]
fn flame_samples_the_server_of_an_exec_run() {
    let _solo = exclusive();
    if let Some(why) = crate::report::perf_cannot_sample() {
        crate::helpers::skip(format!(
            "perf cannot sample here ({why}); .ci/run installs linux-perf"
        ));
        return;
    }
    if !installed("sockperf") {
        return;
    }
    let results = TempDir::new("exec-flame");
    let mut args = vec!["flame"];
    args.extend(SOCKPERF);
    args.extend(["--results", results.str()]);
    let mut p = Proc::spawn(&args);
    assert!(
        p.wait(Duration::from_secs(120)).success(),
        "{}",
        p.stderr_all()
    );
    let dir = only_run_dir(&results);
    let svg = std::fs::read_to_string(dir.join("flame-server.svg")).unwrap();
    assert!(svg.contains("sockperf"), "the server's own frames");
    let r: RunResult =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(r.summary.tool.as_ref().unwrap().program, "sockperf");
    assert!(r.summary.has_latency("p50") && r.summary.ops > 0);
}

/// Issue 36: an exec run keeps the CPU over time as a native one does:
/// the client's cores per second in each of its program's per-second lines
/// (and the program's own per-reactor utilisation beside them), or second
/// by second apart when the program prints no such lines; the report draws
/// both heatmaps.
#[test]
fn issue_36_exec_runs_keep_the_cpu_per_core_per_second() {
    let _g = exclusive();
    let results = TempDir::new("exec-cpu");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fake_crimson.py");
    let cmd = format!("exec python3 {script} 3");
    let (st, r, err) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--parser",
            "crimson-msgr",
            "--client-cmd",
            &cmd,
            "--client-cpus",
            "0",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.intervals.len(), 3);
    for (k, iv) in r.intervals.iter().enumerate() {
        let k = k as f64;
        assert_eq!(iv.program_busy_pct, [50.0 + k, 60.0 + k]);
        // Its depth and MB/s too (issue 48): 3.90625 MiB/s x (k + 1) over 1 s.
        assert_eq!(iv.program_in_flight, Some(512));
        assert_eq!(
            iv.bytes_out,
            (3.90625 * 1048576.0 * (k + 1.0)) as u64,
            "{iv:?}"
        );
        let busy = iv
            .client_cores
            .iter()
            .find(|c| c.cpu == 0)
            .unwrap_or_else(|| panic!("second {k}: no client core: {iv:?}"));
        // The program burns CPU 0 the whole second.
        assert!(busy.busy_pct > 60.0, "second {k}: {busy:?}");
    }
    // A program without per-second lines: its CPU second by second apart.
    let (st, r2, err) = run_json(
        &results,
        &[
            "--transport",
            "exec",
            "--parser",
            "regex:ops=(?P<ops>\\d+) seconds=(?P<seconds>[0-9.]+)",
            "--client-cmd",
            "python3 -c 'import time\nend = time.monotonic() + 2.2\nwhile time.monotonic() < end: pass\nprint(\"ops=100 seconds=2\")'",
            "--client-cpus",
            "0",
        ],
    );
    assert!(st.success(), "{err}");
    assert!(r2.intervals.is_empty());
    assert_eq!(r2.cpu_seconds.len(), 2, "{:?}", r2.cpu_seconds);
    assert!(
        r2.cpu_seconds.iter().all(|c| c
            .client_cores
            .iter()
            .any(|b| b.cpu == 0 && b.busy_pct > 60.0)),
        "{:?}",
        r2.cpu_seconds
    );
    let (_, figures) = report_ok(results.path(), &results.path().join("report.html"), &[]);
    let heatmaps = figures
        .iter()
        .filter(|f| {
            f.first()
                .is_some_and(|t| t.starts_with("CPU busy per core"))
        })
        .count();
    assert_eq!(heatmaps, 2, "{figures:?}");
    let f = figure(&figures, "reactor utilisation");
    assert!(
        f.iter().any(|t| t == "reactor 0") && f.iter().any(|t| t == "reactor 1"),
        "{f:?}"
    );
}
