//! Issue 45: the answers users act on, from forged histories whose truth is
//! known (a step at a known commit, an outlier, impossible values): `history
//! check`'s exit code and the commit it names.

use crate::helpers::*;
use crate::history::wb;
use wirebench_core::result::fixture;

/// A run of commit `commit`, `n`-th of its series, with these figures.
fn forged(dir: &TempDir, n: usize, ops_per_s: f64, p99_ns: u64) {
    let mut r = fixture::sample();
    r.run_id = format!("run-c{n:02}");
    r.started_at = format!("2026-11-27T10:{n:02}:00Z");
    r.summary.ops_per_s = ops_per_s;
    r.summary.latency.p99_ns = p99_ns;
    r.spec.labels.insert("commit".into(), format!("c{n:02}"));
    let d = dir.path().join(&r.run_id);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("run.json"), serde_json::to_vec(&r).unwrap()).unwrap();
}

/// Run to run noise of this VM's kind: +-2%, deterministic.
fn noise(i: usize) -> f64 {
    let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    1.0 + 0.04 * (x as f64 / (1u64 << 24) as f64 - 0.5)
}

/// Forges `values` (ops/s; p99 fixed) from c01 on, indexes them, and
/// checks `metric`: the exit code and the lines.
fn check(tag: &str, values: &[(f64, u64)], metric: &str) -> (Option<i32>, String) {
    let dir = TempDir::new(tag);
    for (i, &(ops, p99)) in values.iter().enumerate() {
        forged(&dir, i + 1, ops, p99);
    }
    let (code, _, err) = wb(&["history", "import", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = wb(&[
        "history",
        "check",
        "--results",
        dir.str(),
        "--metric",
        metric,
    ]);
    (code, format!("{out}{err}"))
}

fn line<'a>(out: &'a str, starts: &str) -> Vec<&'a str> {
    out.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(starts))
        .collect()
}

/// Ten runs at ~1000/s (c01-c10), ten at ~500/s (c11-c20): a regression
/// at c11, exit 4. With one more at 2000/s (c21), the same, and c21 named
/// an outlier (before, the t-test saw no change and exited 0).
#[test]
fn issue_45_one_outlier_cannot_hide_a_halved_throughput() {
    let _g = shared();
    let mut values: Vec<(f64, u64)> = (0..20)
        .map(|i| (if i < 10 { 1000.0 } else { 500.0 } * noise(i), 400_000))
        .collect();
    let (code, out) = check("outlier-without", &values, "ops_per_s");
    assert_eq!(code, Some(4), "{out}");
    let found = line(&out, "ops_per_s:");
    assert_eq!(found.len(), 1, "{out}");
    assert!(
        found[0].contains("at commit=c11") && found[0].ends_with("REGRESSION"),
        "{out}"
    );

    values.push((2000.0, 400_000));
    let (code, out) = check("outlier-with", &values, "ops_per_s");
    assert_eq!(code, Some(4), "{out}");
    let found = line(&out, "ops_per_s:");
    assert_eq!(found.len(), 2, "{out}");
    assert!(
        found
            .iter()
            .any(|l| l.contains("at commit=c11") && l.ends_with("REGRESSION")),
        "{out}"
    );
    assert!(
        found
            .iter()
            .any(|l| l.contains("commit=c21 one run at 2.0k/s")
                && l.contains("an outlier, not a change")),
        "{out}"
    );
}

/// p99 rising 2.7x (about 390 us to 1.1 ms) at c06 of ten, one run before
/// it caught in a stall: flagged for p99 at c06, exit 4.
#[test]
fn issue_45_a_p99_that_rose_2_7x_is_flagged_for_p99() {
    let _g = shared();
    let p99_us = [372, 405, 388, 2100, 395, 1050, 1180, 980, 1230, 1100];
    let values: Vec<(f64, u64)> = p99_us.iter().map(|&u| (1000.0, u * 1000)).collect();
    let (code, out) = check("p99", &values, "p99");
    assert_eq!(code, Some(4), "{out}");
    let found = line(&out, "p99:");
    assert!(
        found
            .iter()
            .any(|l| l.contains("at commit=c06") && l.ends_with("REGRESSION")),
        "{out}"
    );
    assert!(
        found
            .iter()
            .any(|l| l.contains("commit=c04") && l.contains("outlier")),
        "{out}"
    );
}

/// A negative rate, and a run that completed nothing (0/s, p99 0): data
/// errors named by run, left out, never a change; exit 1 (no regression
/// to report, but the history is not to be trusted as it is).
#[test]
fn issue_45_impossible_values_are_data_errors_not_changes() {
    let _g = shared();
    let mut values: Vec<(f64, u64)> = (0..10).map(|i| (1000.0 * noise(i), 400_000)).collect();
    values[4] = (-1000.0, 400_000);
    let (code, out) = check("negative", &values, "ops_per_s");
    assert_eq!(code, Some(1), "{out}");
    let errors = line(&out, "data error:");
    assert_eq!(errors.len(), 1, "{out}");
    assert!(
        errors[0].contains("ops_per_s at commit=c05: -1000/s is negative"),
        "{out}"
    );
    assert!(!out.contains('%') || !out.contains("-200"), "{out}");
    assert!(line(&out, "ops_per_s:").is_empty(), "{out}");

    let mut values: Vec<(f64, u64)> = (0..10).map(|i| (1000.0 * noise(i), 100_000)).collect();
    values[6] = (0.0, 0);
    let (code, out) = check("zero-ops", &values, "p99");
    assert_eq!(code, Some(1), "{out}");
    let errors = line(&out, "data error:");
    assert_eq!(errors.len(), 1, "{out}");
    assert!(
        errors[0].contains("p99 at commit=c07") && errors[0].contains("completed no operation"),
        "{out}"
    );
    assert!(line(&out, "p99:").is_empty(), "no change: {out}");
}
