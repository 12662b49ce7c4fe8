//! Every bad flag or value: exit 2, and a message naming it.

use crate::helpers::*;
use std::time::Duration;

/// Each case: `prefix + args` exits 2 with a message naming `flag`.
fn expect_usage_errors(prefix: &[&str], cases: &[(&[&str], &str)]) {
    for (args, flag) in cases {
        let mut all = prefix.to_vec();
        all.extend_from_slice(args);
        let mut p = Proc::spawn(&all);
        let st = p.wait(Duration::from_secs(30));
        let err = p.stderr_all();
        assert_eq!(st.code(), Some(2), "{all:?}: {err}");
        assert!(
            err.contains(flag),
            "{all:?}: the message does not name {flag}: {err}"
        );
    }
}

#[test]
fn bad_flags_exit_2_and_name_the_flag() {
    let _g = shared();
    let dir = TempDir::new("badflags");
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "0"], "--size"),
        (&["--size", "4kb!"], "--size"),
        (&["--depth", "0"], "--depth"),
        (&["--clients", "0"], "--clients"),
        (&["--count", "0"], "--count"),
        (&["--duration", "fast"], "--duration"),
        (&["--duration", "10"], "--duration"),
        (&["--server-cpus", "999"], "--server-cpus"),
        (&["--client-cpus", "3-1"], "--client-cpus"),
        (&["--arch", "pool", "--poll"], "--poll"),
        (&["--arch", "threads"], "--arch"),
        (&["--mode", "nores"], "--mode"),
        (&["--mode", "stream", "--depth", "4"], "--depth"),
        (
            &["--mode", "oneway", "--response-size", "10"],
            "--response-size",
        ),
        (&["--target", "ftp://127.0.0.1:21"], "--target"),
        (
            &["--target", "tcp://127.0.0.1:1", "--arch", "pool"],
            "--arch",
        ),
        (&["--size", "2MiB", "--max-frame", "1MiB"], "--max-frame"),
        (&["--count", "5", "--duration", "1s"], "--count"),
        (&["--bogus"], "--bogus"),
        (
            &["--target", "memcached://127.0.0.1:1", "--workload", "sets"],
            "S3's operations (--transport s3); the other transports take --mode",
        ),
        (&["--rate", "0"], "--rate"),
        (&["--rate", "fast"], "--rate"),
        (&["--rate", "50M/s"], "--rate"),
        (&["--rate", "0.01", "--clients", "2"], "--rate"),
        (&["--arrival", "poisson"], "--rate"),
        (&["--rate", "100", "--arrival", "bursty"], "--arrival"),
        (&["--mode", "stream", "--rate", "100"], "--rate"),
        (&["--slo", "p99"], "--slo"),
        (&["--slo", "p99<fast"], "--slo"),
        (&["--slo", "p99<1ms,ops>1ms"], "--slo"),
        (&["--hlog", "/nonexistent/dir/x.hlog"], "--hlog"),
    ];
    expect_usage_errors(&["run", "--results", dir.str()], cases);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a refused run left results behind"
    );
}

#[test]
fn search_refuses_bad_flags() {
    let _g = shared();
    let cases: &[(&[&str], &str)] = &[
        (&[], "--slo"),
        (&["--slo", "p99<1ms", "--rate", "100"], "--rate"),
        (&["--slo", "p99<1ms", "--start-rate", "0"], "--start-rate"),
        (&["--slo", "p99<1ms", "--mode", "oneway"], "--mode"),
        (&["--slo", "p99<1ms", "--precision", "0"], "--precision"),
        (&["--slo", "p99<1ms", "--headroom", "2"], "--headroom"),
    ];
    expect_usage_errors(&["search"], cases);
    // flame's -o writes a differential flamegraph only; a run's goes to its
    // directory, so -o without --diff is refused rather than ignored.
    expect_usage_errors(&["flame"], &[(&["-o", "x.svg"], "--output")]);
}

#[test]
fn serve_refuses_bad_flags_too() {
    let _g = shared();
    let cases: &[(&[&str], &str)] = &[
        (&["--arch", "pool", "--poll"], "--poll"),
        (&["--cpus", "999"], "--cpus"),
        (&["--listen", "127.0.0.1:80"], "--listen"),
        (&["--mode", "rr"], "--size"),
        (&["--size", "64"], "--size"),
        (&["--stall", "1s/100ms"], "--stall"),
        (&["--stall", "100ms"], "--stall"),
        (&["--workers", "2"], "--service"),
        (&["--service", "1ms", "--workers", "0"], "--workers"),
        (
            &["--delay", "1ms", "--mode", "rr", "--size", "8"],
            "--delay",
        ),
    ];
    expect_usage_errors(&["serve"], cases);
}

#[test]
fn bad_shm_flags_exit_2_and_name_the_flag() {
    let _g = shared();
    let dir = TempDir::new("badshm");
    let cases: &[(&[&str], &str)] = &[
        (&["--mode", "echo"], "--mode"),
        (&["--mode", "sink"], "--mode"),
        (&["--mode", "sync", "--depth", "4"], "--depth"),
        (&["--mode", "sync", "--rate", "1000"], "--rate"),
        (&["--size", "0"], "--size"),
        (&["--size", "512MiB"], "--size"),
        (&["--ring-size", "1000"], "--ring-size"),
        (&["--ring-size", "4KiB", "--size", "8KiB"], "--ring-size"),
        (&["--channel", "pipe", "--ring-size", "1MiB"], "--ring-size"),
        (&["--channel", "pipe", "--wait", "spin"], "--wait"),
        (&["--channel", "pipe", "--size", "100MiB"], "--size"),
        (&["--channel", "fifo"], "--channel"),
        (&["--wait", "sleep"], "--wait"),
        (&["--clients-as", "mt"], "--clients-as"),
        (&["--sessions", "0"], "--clients"),
        (&["--count", "0"], "--count"),
        (&["--count", "many"], "--count"),
        (&["--arch", "pool"], "--arch"),
        (&["--poll"], "--poll"),
        (&["--response-size", "10"], "--response-size"),
        (&["--target", "tcp://127.0.0.1:1"], "--target"),
    ];
    expect_usage_errors(
        &["run", "--results", dir.str(), "--transport", "shm"],
        cases,
    );
    // shm flags without --transport shm.
    let msgr: &[(&[&str], &str)] = &[
        (&["--wait", "spin"], "--wait"),
        (&["--clients-as", "processes"], "--clients-as"),
        (&["--channel", "pipe"], "--channel"),
        (&["--ring-size", "1MiB"], "--ring-size"),
    ];
    expect_usage_errors(&["run", "--results", dir.str()], msgr);
    let compare: &[(&[&str], &str)] = &[
        (&["--channel", "tcp"], "--channel"),
        (&["--wait", "spin"], "--wait"),
        (&["--rounds", "0"], "--rounds"),
        (&["--transport", "shm"], "--transport"),
    ];
    expect_usage_errors(&["ipc-compare", "--results", dir.str()], compare);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a refused run left results"
    );
}
