//! Issue 46: no peer's text reaches a terminal, Markdown or CSV raw. A
//! Redis-speaking peer of the test's own (no real server answers with
//! escape sequences on request) takes the run's SETs and answers every
//! other command with an error whose text retitles a terminal, clears it
//! and colours it.

use crate::helpers::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// What the hostile peer answers: OSC 0 (the pane's title), a screen
/// clear, a colour, a bidi override, a C1 CSI.
const EVIL: &str = "ERR \u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mboom\u{202e}gnp.exe\u{9b}0m";

/// Commands in `buf` (RESP arrays of bulk strings), each by its name; the
/// bytes they took. An incomplete command waits for more.
fn commands(buf: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut names = Vec::new();
    let mut at = 0;
    'next: while at < buf.len() {
        let line = |from: usize| -> Option<(usize, usize)> {
            let end = buf[from..].windows(2).position(|w| w == b"\r\n")? + from;
            let n = std::str::from_utf8(&buf[from + 1..end])
                .ok()?
                .parse()
                .ok()?;
            Some((n, end + 2))
        };
        let Some((args, mut p)) = line(at) else { break };
        let mut name = Vec::new();
        for i in 0..args {
            let Some((len, body)) = line(p) else {
                break 'next;
            };
            if body + len + 2 > buf.len() {
                break 'next;
            }
            if i == 0 {
                name = buf[body..body + len].to_ascii_uppercase();
            }
            p = body + len + 2;
        }
        names.push(name);
        at = p;
    }
    (names, at)
}

/// The peer: a thread per connection, until the test ends.
fn hostile_peer() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                while let Ok(n) = c.read(&mut chunk) {
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let (names, used) = commands(&buf);
                    buf.drain(..used);
                    let mut out = Vec::new();
                    for name in names {
                        if name == b"SET" {
                            out.extend_from_slice(b"+OK\r\n");
                        } else {
                            out.extend_from_slice(format!("-{EVIL}\r\n").as_bytes());
                        }
                    }
                    if c.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Every file under `dir`, recursively.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A run against the peer, its report and its history: the peer's text
/// shows in the output (escaped), and no raw ESC, BEL, C1 control or bidi
/// override is in stdout, stderr, the Markdown report or any CSV.
#[test]
fn issue_46_a_servers_escape_sequences_reach_no_output_raw() {
    let _g = shared();
    let addr = hostile_peer();
    let dir = TempDir::new("evil");
    let target = format!("redis://{addr}");
    let mut p = Proc::spawn(&[
        "run",
        "--target",
        &target,
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--keys",
        "10",
        "--results",
        dir.str(),
    ]);
    p.wait(Duration::from_secs(60));
    let (out, err) = (p.stdout_all(), p.stderr_all());
    let all = format!("{out}{err}");
    assert!(
        all.contains("\\x1b]0;pwned\\x07"),
        "the peer's text is not shown: {all}"
    );
    let raw = |s: &str| {
        s.chars().any(|c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
        })
    };
    assert!(!raw(&all), "raw control characters: {all:?}");
    let mut r = Proc::spawn(&[
        "report",
        dir.str(),
        "--output",
        &format!("{}/r.html", dir.str()),
    ]);
    let st = r.wait(Duration::from_secs(60));
    assert!(st.success(), "{}", r.stderr_all());
    let mut checked = 0;
    for f in files(dir.path()) {
        let name = f.to_string_lossy().to_string();
        if name.ends_with(".md") || name.ends_with(".csv") {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(!raw(&text), "{name}: {text:?}");
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "no report.md or summary.csv under {}",
        dir.str()
    );
}

/// The same run in a tmux pane: its title is what it was (the issue's
/// finding: it became "pwned"), and the screen was not cleared.
#[test]
fn issue_46_a_servers_escape_sequences_leave_the_tmux_pane_as_it_was() {
    let _g = shared();
    if !crate::fixtures::daemon::installed("tmux", "WIREBENCH_REQUIRE_TMUX") {
        return;
    }
    let addr = hostile_peer();
    let dir = TempDir::new("tmux");
    let socket = format!("wb-test-{}", std::process::id());
    let done = dir.path().join("done");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux")
    };
    let command = format!(
        "printf 'BEFORE\\n'; {BIN} run --target redis://{addr} --duration 1s --warmup 0s --keys 10 --results {} --live; touch {}; sleep 60",
        dir.str(),
        done.display()
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "200",
        "-y",
        "60",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    let title = |tmux: &dyn Fn(&[&str]) -> std::process::Output| {
        String::from_utf8_lossy(&tmux(&["display", "-p", "-t", "t", "#{pane_title}"]).stdout)
            .trim()
            .to_string()
    };
    let before = title(&tmux);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done.exists() {
        assert!(Instant::now() < deadline, "the run did not end in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = title(&tmux);
    let screen =
        String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "t", "-S", "-200"]).stdout)
            .to_string();
    let _ = tmux(&["kill-server"]);
    assert_ne!(after, "pwned", "{screen}");
    assert_eq!(after, before, "{screen}");
    assert!(
        screen.contains("BEFORE"),
        "the screen was cleared: {screen}"
    );
    assert!(
        screen.contains("pwned"),
        "the peer's text is not shown: {screen}"
    );
}
