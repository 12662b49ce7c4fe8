//! Issue 38: `--live`, the terminal dashboard, drawn in a real terminal
//! (tmux) and read back with capture-pane; its fallback without one.

use crate::helpers::{Proc, TempDir, shared};
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux_missing() -> bool {
    let found = Command::new("tmux").arg("-V").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("WIREBENCH_REQUIRE_TMUX").is_none(),
            "WIREBENCH_REQUIRE_TMUX is set but tmux is missing (.ci/run installs it)"
        );
        eprintln!("skipped: no tmux");
    }
    !found
}

/// A tmux server of this test's own (its socket in a directory of the
/// test's, removed with it), killed by PID on drop.
struct Tmux {
    socket: String,
    pid: Option<i32>,
    /// The pane's shell, leader of the group wirebench runs in.
    pane: Option<i32>,
    _dir: TempDir,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// A session of `cols` x `rows` running `command`; its pane stays
    /// after the command exits.
    fn start(command: &str, cols: u16, rows: u16) -> Tmux {
        let dir = TempDir::new("tmux");
        let mut t = Tmux {
            socket: dir.path().join("socket").display().to_string(),
            pid: None,
            pane: None,
            _dir: dir,
        };
        let (c, r) = (cols.to_string(), rows.to_string());
        t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "wb",
            "-x",
            &c,
            "-y",
            &r,
            command,
            ";",
            "set-option",
            "-t",
            "wb",
            "remain-on-exit",
            "on",
        ]);
        t.pid = t
            .cmd(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .ok();
        t.pane = t
            .cmd(&["display-message", "-p", "#{pane_pid}"])
            .trim()
            .parse()
            .ok();
        assert!(t.pid.is_some(), "the tmux server did not start");
        t
    }

    /// The pane's text (its scrollback too).
    fn capture(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-S", "-200", "-t", "wb"])
    }

    /// Waits until the pane's text satisfies `pred`; that text.
    fn until(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.capture();
            if pred(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the pane never showed it:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // A run still going (a failed assertion) stops before its
        // directory is removed: the pane's process group is killed first.
        if let Some(pane) = self.pane {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(-pane),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        self.cmd(&["kill-server"]);
        if let Some(pid) = self.pid {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The elapsed seconds the dashboard's status line shows (`measure   4s / 7s`).
fn elapsed(pane: &str) -> Option<u32> {
    let line = pane.lines().rev().find(|l| l.contains(" measure "))?;
    let after = line.split(" measure ").nth(1)?.trim_start();
    after.split('s').next()?.trim().parse().ok()
}

#[test]
fn issue_38_the_live_view_is_drawn_in_a_terminal_and_redrawn_each_second() {
    let _g = shared();
    if tmux_missing() {
        return;
    }
    let dir = TempDir::new("live");
    let bin = env!("CARGO_BIN_EXE_wirebench");
    let command = format!(
        "{bin} run --live --stages '3s:300/s, 3s:300->600/s' --warmup 1s --results {}; echo WB-EXIT=$?",
        dir.str()
    );
    let tmux = Tmux::start(&command, 110, 40);
    // The frame, in the measured phase, with its figures and CPUs.
    let first = tmux.until(Duration::from_secs(60), |p| {
        p.contains("wirebench --live") && elapsed(p).is_some_and(|s| s >= 2)
    });
    for part in [
        "last second",
        "ops/s",
        "p99",
        "p99.9",
        "errors 0",
        "stage 1/2 3s:300/s",
        "client cpu",
        "server cpu",
        "% busy",
    ] {
        assert!(first.contains(part), "no {part:?} in\n{first}");
    }
    let t1 = elapsed(&first).unwrap();
    // Redrawn: a later second, in the next stage (from 4 s: the warm-up's
    // 1 s and the first stage's 3 s).
    let later = tmux.until(Duration::from_secs(30), |p| {
        elapsed(p).is_some_and(|s| s >= (t1 + 2).max(5))
    });
    assert!(later.contains("stage 2/2 3s:300->600/s"), "{later}");
    // The run ends: its summary below the last frame, exit 0.
    let end = tmux.until(Duration::from_secs(60), |p| p.contains("WB-EXIT="));
    assert!(end.contains("WB-EXIT=0"), "{end}");
    let frame = end.rfind("wirebench --live").expect("the last frame stays");
    let summary = end.find("-- summary --").expect("the summary");
    assert!(frame < summary, "the summary comes after the frame:\n{end}");
    assert!(end.contains("measured"), "{end}");
    // The per-second lines were not printed beside it.
    assert!(!end.contains("time phase"), "{end}");
}

#[test]
fn issue_38_live_without_a_terminal_prints_the_lines() {
    let _g = shared();
    let dir = TempDir::new("live-pipe");
    let mut p = Proc::spawn(&[
        "run",
        "--live",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--results",
        dir.str(),
    ]);
    let st = p.wait(Duration::from_secs(60));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert!(
        err.contains("--live: stderr is not a terminal; printing a line per second instead"),
        "{err}"
    );
    assert!(err.contains("time phase"), "{err}");
    assert!(err.contains(" measure "), "{err}");
}
