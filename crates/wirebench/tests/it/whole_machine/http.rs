//! The tests of `http` that need the machine to themselves (see `whole_machine`).

use crate::fixtures::nginx::Nginx;
use crate::helpers::*;

#[test]
fn search_finds_the_rate_nginx_keeps_within_an_objective() {
    // Alone: beside other tests, nginx's p99 at 1000/s read 17-45 ms in a
    // CI run (no platform stall flagged: the CPUs were busy), and the
    // search ended at 500/s.
    let _g = exclusive();
    let Some(ng) = Nginx::start() else {
        return;
    };
    let dir = TempDir::new("http-search");
    let target = format!("http://127.0.0.1:{}/1k.bin", ng.h1);
    let mut p = Proc::spawn(&[
        "search",
        "--target",
        &target,
        "--slo",
        "p99<50ms",
        "--conns-per-client",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--max-steps",
        "4",
        "--results",
        dir.str(),
        "--format",
        "json",
    ]);
    let st = p.wait(std::time::Duration::from_secs(120));
    let out = p.stdout_all();
    // 0: the limit found and confirmed; 5: the step budget ran out first.
    assert!(
        matches!(st.code(), Some(0 | 5)),
        "{st:?}: {}\n{out}",
        p.stderr_all()
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() >= 2, "{v}");
    // Open loop at each step's rate: what was sent kept to the timetable
    // while nginx kept up.
    for s in steps.iter().filter(|s| s["kept_up"] == true) {
        let (rate, sent) = (
            s["rate_per_s"].as_f64().unwrap(),
            s["sent_per_s"].as_f64().unwrap(),
        );
        assert!((sent - rate).abs() < rate * 0.05, "{s}");
    }
    assert!(
        v["best_rate_per_s"].as_f64().is_some_and(|r| r >= 1000.0),
        "{v}"
    );
}
