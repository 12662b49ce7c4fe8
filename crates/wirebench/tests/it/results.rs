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
