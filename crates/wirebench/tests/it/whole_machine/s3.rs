//! The tests of `s3` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;

#[test]
fn an_open_loop_s3_run_keeps_its_timetable_and_checks_ttfb_objectives() {
    let _g = exclusive();
    let dir = TempDir::new("s3rate");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--transport",
            "s3",
            "--rate",
            "200",
            "--duration",
            "3s",
            "--warmup",
            "0s",
            "--clients",
            "2",
            "--slo",
            "ttfb-p99<10s",
            "--slo",
            "ttfb-mean<1ns",
        ],
    );
    // The second objective cannot be met: exit 3, with both recorded.
    assert_eq!(st.code(), Some(3), "{err}");
    assert_eq!(r.summary.requested_rate_per_s, Some(200.0));
    let sent = r.summary.messages_sent as f64;
    assert!(
        (540.0..=606.0).contains(&sent),
        "sent {sent} of 600 in 3 s at 200/s"
    );
    let passes: Vec<bool> = r.slos.iter().map(|s| s.pass).collect();
    assert_eq!(passes, [true, false], "{:?}", r.slos);
}
