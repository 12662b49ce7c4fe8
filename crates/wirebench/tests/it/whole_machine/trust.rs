//! The tests of `trust` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;
use std::time::Duration;

#[test]
fn issue_15_the_hiccup_meter_measures_a_200_ms_stop_and_flags_its_second() {
    let _g = exclusive();
    let dir = TempDir::new("hiccup");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--format",
        "json",
        "--duration",
        "4s",
        "--warmup",
        "0s",
    ]);
    // Stop the whole client process for 200 ms inside its measured phase
    // (any moment of it does).
    std::thread::sleep(Duration::from_millis(1500));
    p.signal(nix::sys::signal::Signal::SIGSTOP);
    std::thread::sleep(Duration::from_millis(200));
    p.signal(nix::sys::signal::Signal::SIGCONT);
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    let r: wirebench_core::result::RunResult = serde_json::from_str(&p.stdout_all()).unwrap();
    let h = r.summary.hiccup.expect("the meter is on by default");
    assert_eq!(
        h.period_ns, 10_000_000,
        "the result says how often the probe woke"
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    assert!(
        (180.0..260.0).contains(&ms(h.max_ns)),
        "max stall {} ms",
        ms(h.max_ns)
    );
    assert!(h.stalled_seconds >= 1, "{h:?}");
    let flagged: Vec<_> = r.intervals.iter().filter(|i| i.stalled).collect();
    assert!(
        flagged.iter().any(|i| i
            .hiccup_max_ns
            .is_some_and(|m| (180.0..260.0).contains(&ms(m)))),
        "{:?}",
        r.intervals
            .iter()
            .map(|i| (i.stalled, i.hiccup_max_ns))
            .collect::<Vec<_>>()
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.to_string().contains("the platform stalled")),
        "{:?}",
        r.warnings
    );
    // --no-hiccup: no meter, no figures.
    let (st, r, err) = run_json(&dir, &["--duration", "1s", "--warmup", "0s", "--no-hiccup"]);
    assert!(st.success(), "{err}");
    assert!(r.summary.hiccup.is_none() && r.intervals.iter().all(|i| i.hiccup_max_ns.is_none()));
}
