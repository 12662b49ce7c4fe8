//! Issue 35: a measurement is never lost, and nothing outlives or escapes
//! the run: a closed stderr, a full disk, a planted link, a SIGKILLed
//! wirebench with a server it started, a program's endless output and the
//! processes it hid with setsid.

use crate::helpers::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use wirebench_core::result::{RunResult, RunState};

/// Waits up to `limit` for no process with `needle` in its command line.
fn gone(needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if running_with(needle).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn kill_all(needle: &str) {
    for pid in running_with(needle) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[test]
fn issue_35_a_closed_stderr_leaves_a_complete_run_json() {
    let _g = shared();
    let dir = TempDir::new("lost-stderr");
    // The first line read, the pipe closes: every later line, progress
    // and summary, meets a closed pipe.
    let script = format!(
        "set -o pipefail; {BIN} run --results {} --duration 2s --warmup 1s 2>&1 | head -1",
        dir.str()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let run = only_run_dir(&dir).join("run.json");
    let r: RunResult = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    assert_eq!(r.status.state, RunState::Complete);
    assert!(r.summary.ops > 0);
}

/// `args` of `wirebench run` in a mount namespace of its own where `dir`
/// is a 1 MiB tmpfs filled to the brim; None where no such namespace can
/// be made (not root), unless $WIREBENCH_REQUIRE_NETNS says root is there.
fn on_a_full_disk(dir: &Path, args: &str) -> Option<std::process::Output> {
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs {d} || exit 99; dd if=/dev/zero of={d}/fill bs=4k >/dev/null 2>&1; exec {BIN} run --results {d}/results {args}",
        d = dir.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .ok()?;
    if out.status.code() == Some(99) {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_NETNS").is_none(),
            "cannot mount a tmpfs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        crate::helpers::skip("cannot mount a tmpfs (run as root)");
        return None;
    }
    Some(out)
}

/// The server traces wirebench left in the temporary directory.
fn server_traces() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("wirebench-trace-server-"))
        .collect()
}

#[test]
fn issue_35_on_a_full_disk_the_result_is_kept_elsewhere_and_printed() {
    let _g = shared();
    let dir = TempDir::new("lost-full");
    let Some(out) = on_a_full_disk(
        dir.path(),
        "--format json --duration 1s --warmup 0s --client-cpus 0 --server-cpus 1",
    ) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    // The result: on stdout (--format json), and kept in memory-backed
    // /dev/shm, named in the error.
    let r: RunResult = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(r.status.state, RunState::Complete);
    assert!(r.summary.ops > 0);
    let kept = format!("/dev/shm/wirebench-unsaved-{}.json", r.run_id);
    assert!(
        err.contains(&format!("the run's result is kept in {kept}")),
        "{err}"
    );
    let again: RunResult = serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(again.summary.ops, r.summary.ops);
    std::fs::remove_file(&kept).unwrap();
    // Traced, the server's trace does not stay in the temporary directory.
    let before = server_traces();
    let Some(out) = on_a_full_disk(
        dir.path(),
        "--duration 1s --warmup 0s --trace --client-cpus 0 --server-cpus 1",
    ) else {
        return;
    };
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<String> = server_traces()
        .into_iter()
        .filter(|t| !before.contains(t))
        .collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    for f in std::fs::read_dir("/dev/shm").unwrap().flatten() {
        let n = f.file_name().to_string_lossy().into_owned();
        if n.starts_with("wirebench-unsaved-") && n.contains("-echo-") {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

#[test]
fn issue_35_a_planted_summary_csv_link_is_not_followed() {
    let _g = shared();
    let dir = TempDir::new("lost-link");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::os::unix::fs::symlink(&victim, results.join("summary.csv")).unwrap();
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        results.to_str().unwrap(),
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("summary.csv: is a symbolic link: refused"),
        "{err}"
    );
    assert!(err.contains("the result is saved in"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn issue_35_a_server_the_run_started_dies_with_a_killed_wirebench() {
    let _g = shared();
    let dir = TempDir::new("lost-kill");
    // A server that also hides a process in a session of its own.
    let marker = format!("{}.25", 900 + std::process::id() % 100);
    let server = format!(
        "setsid sleep {marker} & exec {BIN} serve --listen tcp://127.0.0.1:{{port}} --cpus 1"
    );
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--target",
        "tcp://127.0.0.1:0",
        "--server-cmd",
        &server,
        "--duration",
        "60s",
        "--warmup",
        "0s",
        "--client-cpus",
        "0",
    ]);
    // "  target tcp://127.0.0.1:PORT: observed server; ..."
    let target = p.stderr_until(Duration::from_secs(30), |l| l.contains("  target tcp://"));
    let endpoint = target
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':');
    p.stderr_until(Duration::from_secs(30), |l| l.contains("measure"));
    let serve = running_with(&format!("{endpoint}\0"));
    assert_eq!(serve.len(), 1, "the server at {endpoint}: {serve:?}");
    assert!(!running_with(&marker).is_empty(), "the hidden process runs");
    p.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = p.wait(Duration::from_secs(10));
    // The setsid process is found by the server's cgroup only.
    let hidden_gone =
        gone(&marker, Duration::from_secs(10)) || !wirebench_runner::tree::cgroups_available();
    let all_gone = hidden_gone
        && serve.iter().all(|&pid| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while pid_alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            !pid_alive(pid)
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z"))
        });
    kill_all(&marker);
    assert!(all_gone, "the server or what it started outlived wirebench");
}

#[test]
fn issue_35_an_endless_program_is_kept_to_64_mib_and_what_it_hid_is_stopped() {
    let _g = shared();
    let dir = TempDir::new("lost-exec");
    let marker = format!("{}.75", 900 + std::process::id() % 100);
    let program = format!("setsid sleep {marker} & yes | head -c 100000000; echo ops=7 seconds=1");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "exec",
            "--client-cmd",
            &program,
            "--parser",
            r"regex:ops=(?P<ops>\d+) seconds=(?P<seconds>[0-9.]+)",
        ],
    );
    assert!(st.success(), "{err}");
    assert_eq!(r.summary.ops, 7);
    let out = only_run_dir(&dir).join("client-stdout.txt");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 64 << 20);
    let method = &r.summary.tool.as_ref().expect("a program's report").method;
    assert!(
        method
            .iter()
            .any(|m| m.contains("its output was 95 MiB: the first 64 MiB kept")),
        "{method:?}"
    );
    let hidden_gone = gone(&marker, Duration::from_secs(5));
    kill_all(&marker);
    // A process that left the group is found by the program's cgroup.
    if wirebench_runner::tree::cgroups_available() {
        assert!(hidden_gone, "the program's setsid process outlived the run");
    } else {
        crate::helpers::skip("its setsid part: no cgroup v2 this process may make");
    }
}
