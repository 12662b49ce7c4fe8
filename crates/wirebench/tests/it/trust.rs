//! Answers you can trust (issue 15): a server that never answers fails the
//! run within the op timeout, saying so; an S3 endpoint that hangs obeys
//! Ctrl-C in its pre-flight and prepare, deleting what was created.

use crate::helpers::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A stub server of `stub_servers.py`, killed by PID when dropped.
struct Stub {
    child: Child,
    port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Stub {
    fn start(args: &[&str]) -> Stub {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/stub_servers.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the stub servers");
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the stub says where it listens");
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"));
        Stub { child, port, lines }
    }

    /// The lines printed within `wait`.
    fn lines_within(&self, wait: Duration) -> Vec<String> {
        let deadline = Instant::now() + wait;
        let mut v = Vec::new();
        while let Ok(l) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            v.push(l);
        }
        v
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run against a server that never answers fails, names the timeout,
/// and ends within it (plus the time to start and save).
fn fails_on_silence(args: &[&str]) {
    let dir = TempDir::new("silent");
    let began = Instant::now();
    let (st, r, err) = run_json(&dir, args);
    let took = began.elapsed();
    assert_eq!(st.code(), Some(1), "{args:?}: {err}");
    assert_eq!(r.status.state, wirebench_core::result::RunState::Failed);
    let why = r.status.reason.unwrap_or_default();
    assert!(why.contains("--op-timeout 2s"), "{args:?}: {why}");
    assert!(
        took < Duration::from_secs(2 + 3),
        "{args:?}: took {took:?} with --op-timeout 2s"
    );
}

#[test]
fn issue_15_a_server_that_never_answers_fails_the_run_within_the_op_timeout() {
    let _g = shared();
    let stub = Stub::start(&["silent"]);
    let target = format!("tcp://127.0.0.1:{}", stub.port);
    let base = ["--target", &target, "--op-timeout", "2s", "--warmup", "0s"];
    // The msgr handshake is never answered.
    fails_on_silence(&base);
    // Raw request/response: requests sent, no response.
    let mut rr = base.to_vec();
    rr.extend(["--mode", "rr"]);
    fails_on_silence(&rr);
}

#[test]
fn issue_15_a_wrong_response_size_is_a_stall_not_a_complete_run() {
    let _g = shared();
    let srv = Server::start(&["--mode", "rr", "--size", "64"]);
    let args = [
        "--target",
        &srv.endpoint,
        "--mode",
        "rr",
        "--response-size",
        "128",
        "--op-timeout",
        "2s",
        "--warmup",
        "0s",
    ];
    fails_on_silence(&args);
    srv.stop();
}

/// Starts an S3 run against `port`, waits for `ready` on its stderr (or a
/// second), then sends SIGINT: it must exit 130 within 2 s, whenever the
/// signal comes. Returns its stderr.
fn interrupt_s3(port: u16, extra: &[&str], ready: Option<&str>) -> String {
    let dir = TempDir::new("s3int");
    let target = format!("s3://127.0.0.1:{port}/bucket");
    let mut args = vec![
        "run",
        "--results",
        dir.str(),
        "--transport",
        "s3",
        "--target",
        &target,
    ];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    if let Some(ready) = ready {
        p.stderr_until(Duration::from_secs(30), |l| l.contains(ready));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let sent = Instant::now();
    p.signal(nix::sys::signal::Signal::SIGINT);
    let st = p.wait(Duration::from_secs(10));
    let took = sent.elapsed();
    let err = p.stderr_all();
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(
        took < Duration::from_secs(2),
        "SIGINT obeyed in {took:?}: {err}"
    );
    err
}

#[test]
fn issue_15_an_s3_endpoint_that_hangs_obeys_ctrl_c_and_deletes_what_was_created() {
    let _g = shared();
    // Pre-flight: the bucket check is never answered.
    let silent = Stub::start(&["silent"]);
    let err = interrupt_s3(silent.port, &[], None);
    assert!(err.contains("interrupted"), "{err}");
    // Prepare: five objects are created, the sixth PUT is never answered;
    // the five are deleted after Ctrl-C.
    let hang = Stub::start(&["s3-hang", "5"]);
    let err = interrupt_s3(hang.port, &["--objects", "50"], Some("prepare: creating"));
    assert!(
        err.contains("after creating 5 objects"),
        "the prepare says what it made: {err}"
    );
    let deletes: Vec<String> = hang
        .lines_within(Duration::from_secs(2))
        .into_iter()
        .filter(|l| l.starts_with("DELETE "))
        .collect();
    assert_eq!(deletes.len(), 5, "{deletes:?}\n{err}");
}
