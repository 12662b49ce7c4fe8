//! Issue 38: `--live`, the terminal dashboard, drawn in a real terminal
//! (tmux) and read back with capture-pane; its fallback without one.

use crate::fixtures::tmux::{Tmux, tmux_missing};
use crate::helpers::{Proc, TempDir, shared};
use std::time::Duration;

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
