//! The results file: a round trip, the CSV line, and histograms that merge
//! exactly; and the default run of the README.

use crate::helpers::*;
use std::time::Duration;
use wirebench_core::hist;
use wirebench_core::result::{Phase, RunState};
use wirebench_core::store;

#[test]
fn run_json_round_trips_and_its_histograms_merge_exactly() {
    let _g = shared();
    let dir = TempDir::new("roundtrip");
    let (st, printed, err) = run_json(
        &dir,
        &["--duration", "2s", "--warmup", "1s", "--depth", "2"],
    );
    assert!(st.success(), "{err}");
    let run_dir = only_run_dir(&dir);
    let stored = store::load(&run_dir).unwrap();
    assert_eq!(
        stored, printed,
        "the stored result differs from the printed one"
    );
    assert_eq!(
        stored.schema_version,
        wirebench_core::result::SCHEMA_VERSION
    );
    assert_eq!(stored.status.state, RunState::Complete);
    assert!(!stored.env.git_revision.is_empty() && !stored.env.kernel.is_empty());
    assert!(stored.command_line.iter().any(|a| a == "--depth"));

    // The summary histogram is the exact merge of the measured intervals.
    let total = hist::decode(&stored.latency_hist).unwrap();
    assert_eq!(total.len(), stored.summary.ops);
    let mut merged = hist::new_hist();
    let mut warmup = 0;
    for iv in &stored.intervals {
        match iv.phase {
            Phase::Measure => merged.add(hist::decode(&iv.latency_hist).unwrap()).unwrap(),
            Phase::Warmup => warmup += 1,
        }
        assert!(!iv.client_cores.is_empty() && !iv.server_cores.is_empty());
    }
    assert_eq!(warmup, 1);
    assert_eq!(merged, total);

    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with(&stored.run_id));
    assert!(lines[1].contains(",complete,"));
}

#[test]
fn the_default_run_completes_with_a_result() {
    let _g = shared();
    // `wirebench run` with no flags but the results directory: the README's main job.
    let dir = TempDir::new("default");
    let mut p = Proc::spawn(&["run", "--results", dir.str()]);
    let st = p.wait(Duration::from_secs(60));
    let out = p.stdout_all();
    assert!(st.success(), "{}", p.stderr_all());
    assert!(out.contains("status:            complete"), "{out}");
    assert!(out.contains("latency (round trip)"), "{out}");
    let r = store::load(&only_run_dir(&dir)).unwrap();
    assert_eq!(r.status.state, RunState::Complete);
    assert_eq!(
        r.summary.measured_ns / 1_000_000_000,
        5,
        "{}",
        r.summary.measured_ns
    );
    let err = p.stderr_all();
    assert!(err.contains("measure"), "progress lines expected: {err}");
    assert!(
        err.contains("debug build") == cfg!(debug_assertions),
        "{err}"
    );
}

/// A Python with HdrHistogram_py (see `helpers::python_with`).
fn python_with_hdrh() -> std::path::PathBuf {
    python_with("hdrh", "hdrhistogram==0.10.8").expect("a Python with hdrhistogram")
}

#[test]
fn the_hlog_file_reads_back_with_an_independent_implementation() {
    let _g = shared();
    let dir = TempDir::new("hlog");
    let hlog = dir.path().join("run.hlog");
    let args = [
        "--duration",
        "2s",
        "--warmup",
        "1s",
        "--depth",
        "2",
        "--hlog",
        hlog.to_str().unwrap(),
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hlog_summary.py");
    let out = std::process::Command::new(python_with_hdrh())
        .arg(script)
        .arg(&hlog)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &r.summary.latency;
    assert_eq!(v["count"].as_u64(), Some(l.count));
    // Same histogram, two implementations: equal within one bucket (3 digits).
    let close = |py: &serde_json::Value, rs: u64| {
        (py.as_u64().unwrap() as f64 - rs as f64).abs() <= rs as f64 * 1e-3 + 1.0
    };
    // A percentile falls on a recorded value; where the distribution has a
    // gap, the two libraries' rank rounding may pick the neighbouring one
    // (one operation away): accept any value within one rank.
    let h = wirebench_core::hist::decode(&r.latency_hist).unwrap();
    let n = h.len() as f64;
    let within_a_rank = |py: &serde_json::Value, q: f64| {
        let (lo, hi) = (
            h.value_at_quantile((q - 1.0 / n).max(0.0)),
            h.value_at_quantile((q + 1.0 / n).min(1.0)),
        );
        let py = py.as_u64().unwrap();
        (close(&serde_json::json!(py), lo) || py >= lo)
            && (close(&serde_json::json!(py), hi) || py <= hi)
    };
    assert!(
        within_a_rank(&v["p50_ns"], 0.5),
        "p50: python {} wirebench {}",
        v["p50_ns"],
        l.p50_ns
    );
    assert!(
        within_a_rank(&v["p99_ns"], 0.99),
        "p99: python {} wirebench {}",
        v["p99_ns"],
        l.p99_ns
    );
    assert!(
        close(&v["max_ns"], l.max_ns),
        "max: python {} wirebench {}",
        v["max_ns"],
        l.max_ns
    );
}

#[test]
fn repeated_runs_are_kept_and_summarised_with_their_spread() {
    let _g = shared();
    let dir = TempDir::new("repeat");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--format",
        "json",
        "--repeat",
        "3",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    let st = p.wait(Duration::from_secs(60));
    let out = p.stdout_all();
    assert!(st.success(), "{}", p.stderr_all());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let metrics = v["metrics"].as_array().unwrap();
    let ops = metrics
        .iter()
        .find(|m| m[0] == "ops_per_s")
        .expect("ops_per_s");
    let s = &ops[1];
    assert_eq!(s["n"], 3);
    let (mean, min, max) = (
        s["mean"].as_f64().unwrap(),
        s["min"].as_f64().unwrap(),
        s["max"].as_f64().unwrap(),
    );
    assert!(min <= mean && mean <= max && min > 0.0, "{s}");
    // The repetitions are one group (issue 15): a directory of 3 runs,
    // which compare takes as one variant.
    let group = only_run_dir(&dir);
    let runs = std::fs::read_dir(&group)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("run.json").is_file())
        .count();
    assert_eq!(runs, 3);
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    let mut c = Proc::spawn(&["compare", group.to_str().unwrap(), group.to_str().unwrap()]);
    assert!(
        c.wait(Duration::from_secs(30)).success(),
        "{}",
        c.stderr_all()
    );
    assert!(c.stdout_all().contains("(n=3)"));
}
