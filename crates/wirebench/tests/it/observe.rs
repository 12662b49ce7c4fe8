//! Observing a server the run does not embed: an external `wirebench
//! serve` by PID, and a program started by `--server-cmd` (a small Python
//! echo server with one thread that moves itself outside its cpuset).

use crate::helpers::*;

pub(crate) const ROGUE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/rogue_server.py");
pub(crate) const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

#[test]
fn a_thread_of_a_server_cmd_outside_its_cpuset_is_named_and_the_server_stopped() {
    let _shared = shared();
    let results = TempDir::new("observe-cmd");
    let cmd = format!("exec python3 {ROGUE} {{port}} {{size}}");
    let env = format!("LD_PRELOAD={JEMALLOC}");
    let mut args = vec![
        "--mode",
        "rr",
        "--size",
        "64",
        "--target",
        "tcp://127.0.0.1:0",
    ];
    args.extend(["--server-cmd", &cmd, "--server-ready", "line:^ready on"]);
    args.extend(["--server-cpus", "1", "--client-cpus", "0"]);
    args.extend(["--duration", "1s", "--warmup", "300ms"]);
    let jemalloc = std::path::Path::new(JEMALLOC).exists();
    if jemalloc {
        args.extend(["--server-env", &env]);
    }
    let (st, r, err) = run_json(&results, &args);
    assert!(st.success(), "{err}");
    let t = r.summary.server_threads.as_ref().unwrap();
    assert_eq!(t.cpuset.as_ref().unwrap().to_string(), "1");
    let rogue = t
        .outside_cpuset
        .iter()
        .find(|o| o.name == "rogue")
        .unwrap_or_else(|| panic!("rogue not reported: {t:?}"));
    assert_eq!(rogue.ran_outside, [0]);
    assert_eq!(rogue.allowed.as_ref().unwrap().to_string(), "0");
    assert!(rogue.cpu_s > 0.05, "{rogue:?}");
    assert!(t.groups.iter().any(|g| g.group == "rogue" && g.cpu_s > 0.0));
    // The threads pinned by the run are not reported.
    assert!(
        t.outside_cpuset.iter().all(|o| o.name != "echo-conn"),
        "{t:?}"
    );
    assert!(r.summary.ops > 0 && r.summary.server_cpu_s.unwrap() > 0.0);

    // Its output is kept in the run's directory, and it is gone.
    let dir = only_run_dir(&results);
    let out = std::fs::read_to_string(dir.join("server-stdout.txt")).unwrap();
    assert!(out.contains("ready on "), "{out}");
    if jemalloc {
        assert!(out.contains("libjemalloc.so.2"), "--server-env: {out}");
    }
    let pid = r.server.as_ref().unwrap().pid;
    assert!(
        !pid_alive(pid),
        "the server command (pid {pid}) was left running"
    );
    assert_eq!(r.server.as_ref().unwrap().exit, None, "stopped by SIGTERM");
}

#[test]
fn a_server_cmd_that_fails_to_start_fails_the_run_with_its_output() {
    let _shared = shared();
    let results = TempDir::new("observe-fail");
    let args = [
        "--target",
        "tcp://127.0.0.1:0",
        "--server-cmd",
        "echo 'cannot bind {port}: address in use' >&2; exit 3",
    ];
    let (st, r, err) = run_json_or_error(&results, &args);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(r.is_none());
    assert!(
        err.contains("exited before it was ready (exit status 3)"),
        "{err}"
    );
    assert!(err.contains("cannot bind"), "its stderr tail: {err}");
}

#[test]
fn observation_flags_are_checked() {
    let _shared = shared();
    let results = TempDir::new("observe-flags");
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--target",
                "tcp://127.0.0.1:9",
                "--server-pid",
                "4000000000",
            ],
            "--server-pid 4000000000: no such process",
        ),
        (
            &["--server-cmd", "srv"],
            "--server-cmd observes an external server: add --target",
        ),
        (
            &["--server-ready", "tcp:80"],
            "--server-ready applies to --server-cmd",
        ),
        (
            &[
                "--target",
                "tcp://127.0.0.1:9",
                "--server-cmd",
                "srv {prot}",
            ],
            "--server-cmd {prot}: not a placeholder",
        ),
        (
            &["--target", "tcp://127.0.0.1:9", "--server-cgroup", "/tmp"],
            "--server-cgroup /tmp: not a cgroup v2 directory",
        ),
        (
            &["--target", "tcp://127.0.0.1:9", "--server-cpus", "1"],
            "--server-cpus applies to the embedded server",
        ),
        (
            &["--target", "memcached://127.0.0.1:0"],
            "--target memcached://127.0.0.1:0: port 0 is only for a --server-cmd",
        ),
        (
            &["--server-env", "NOEQUALS"],
            "'NOEQUALS' is not NAME=VALUE",
        ),
    ];
    for (args, want) in cases {
        let (st, _, err) = run_json_or_error(&results, args);
        assert_eq!(st.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(want),
            "{args:?}: '{err}' does not say '{want}'"
        );
    }
}

/// Where cgroup v2 is mounted, if it is.
fn cgroup2_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("cgroup2"))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(Into::into)
}

#[test]
fn a_server_in_a_cgroup_is_observed_through_it() {
    let _shared = shared();
    let Some(root) = cgroup2_root() else {
        crate::helpers::skip("no cgroup v2 mounted");
        return;
    };
    let cg = root.join(format!("wb-it-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&cg) {
        crate::helpers::skip(format!(
            "cannot make a cgroup under {} ({e})",
            root.display()
        ));
        return;
    }
    let results = TempDir::new("observe-cgroup");
    let srv = Server::start(&["--cpus", "1"]);
    std::fs::write(cg.join("cgroup.procs"), srv.proc.pid.to_string()).unwrap();
    let args = [
        "--target",
        srv.endpoint.as_str(),
        "--server-cgroup",
        cg.to_str().unwrap(),
        "--duration",
        "1s",
        "--warmup",
        "300ms",
    ];
    let (st, r, err) = run_json(&results, &args);
    srv.stop();
    // The cgroup is empty once its server is gone: it can be removed.
    let removed = std::fs::remove_dir(&cg);
    assert!(st.success(), "{err}");
    removed.unwrap();
    let s = &r.summary;
    assert!(s.server_cpu_s.unwrap() > 0.05, "{s:?}");
    let t = s.server_threads.as_ref().unwrap();
    assert!(t.groups.iter().any(|g| g.group == "wb-reactor"), "{t:?}");
    // Its cpuset, when none is given: the affinity of its threads.
    assert!(r.placement.server_cpus.is_some());
}

#[test]
fn redis_server_started_by_the_run_is_measured_and_stopped() {
    let _shared = shared();
    if !crate::fixtures::daemon::installed("redis-server", "WIREBENCH_REQUIRE_KV") {
        return;
    }
    let results = TempDir::new("observe-redis");
    let args = [
        "--target",
        "redis://127.0.0.1:0",
        "--server-cmd",
        "exec redis-server --port {port} --save '' --appendonly no",
        "--server-cpus",
        "1",
        "--duration",
        "1s",
        "--warmup",
        "300ms",
    ];
    let (st, r, err) = run_json(&results, &args);
    assert!(st.success(), "{err}");
    let s = &r.summary;
    assert!(
        s.ops > 100 && s.server_cpu_us_per_op.unwrap() > 0.0,
        "{s:?}"
    );
    let t = s.server_threads.as_ref().unwrap();
    assert!(t.groups.iter().any(|g| g.group == "redis-server"), "{t:?}");
    let wirebench_core::spec::TargetSpec::External { endpoint } = &r.spec.target else {
        panic!("{:?}", r.spec.target)
    };
    assert!(
        !endpoint.to_string().ends_with(":0"),
        "the target took the free port: {endpoint}"
    );
    assert!(!pid_alive(r.server.as_ref().unwrap().pid));
    let out = std::fs::read_to_string(only_run_dir(&results).join("server-stdout.txt")).unwrap();
    assert!(out.contains("Ready to accept connections"), "{out}");
}
