//! Issue 38: the history of a results directory. Every run is indexed as
//! it is saved (runs, repetitions, sweep points), `history import` makes
//! the index again from the files, `history list` and `check` read it,
//! and `report --history` draws it.

use crate::helpers::*;
use std::path::Path;
use std::time::Duration;

/// `wirebench ARGS`: exit code, stdout, stderr.
pub(crate) fn wb(args: &[&str]) -> (Option<i32>, String, String) {
    let mut p = Proc::spawn(args);
    let st = p.wait(Duration::from_secs(120));
    (st.code(), p.stdout_all(), p.stderr_all())
}

pub(crate) fn history_json(results: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "history",
        "list",
        "--results",
        results.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = wb(&args);
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Runs, repetitions and a sweep's points are indexed as they are saved,
/// with their labels (the flag's, else $GIT_COMMIT); an index made again
/// by `history import` from the files holds the same runs; `--where`
/// filters; a check of too few runs says so and exits 10.
#[test]
fn every_run_is_indexed_with_its_labels_and_import_makes_the_same_index() {
    let _g = shared();
    let dir = TempDir::new("history");
    let quick = ["--duration", "200ms", "--warmup", "0s"];
    let mut args = quick.to_vec();
    args.extend(["--label", "commit=aaa111", "--label", "branch=main"]);
    let (st, _, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let mut args = vec!["run", "--results", dir.str(), "--repeat", "2"];
    args.extend(quick);
    args.extend(["--label", "commit=bbb222"]);
    let (code, _, err) = wb(&args);
    assert_eq!(code, Some(0), "{err}");
    // No --label: the commit of $GIT_COMMIT, as a CI job sets it.
    let mut p = Proc::spawn_program(
        "env",
        &[
            "GIT_COMMIT=ccc333",
            BIN,
            "run",
            "--results",
            dir.str(),
            "--duration",
            "200ms",
            "--warmup",
            "0s",
        ],
    );
    assert!(
        p.wait(Duration::from_secs(60)).success(),
        "{}",
        p.stderr_all()
    );
    // A sweep's points, in the results' history (not the experiment's).
    let spec = dir.path().join("s.toml");
    std::fs::write(
        &spec,
        "name = \"hx\"\n[base]\nduration = \"200ms\"\nwarmup = \"0s\"\nlabel = { commit = \"ddd444\" }\n[matrix]\nclients = [1, 2]\n",
    )
    .unwrap();
    sweep_ok(&spec, dir.path(), &[]);
    assert!(!dir.path().join("hx/history.sqlite").exists());

    let all = history_json(dir.path(), &[]);
    let runs = all.as_array().unwrap();
    let commits: Vec<&str> = runs
        .iter()
        .map(|r| r["labels"]["commit"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        commits,
        ["aaa111", "bbb222", "bbb222", "ccc333", "ddd444", "ddd444"],
        "{all}"
    );
    assert_eq!(runs[0]["labels"]["branch"], "main");
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        assert!(r["metrics"]["ops_per_s"].as_f64().unwrap() > 0.0, "{r}");
        let saved = Path::new(r["dir"].as_str().unwrap()).join("run.json");
        assert!(saved.is_file(), "{r}");
    }
    // The same settings make one series; two clients another.
    let series: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r["series"].as_str().unwrap()).collect();
    assert_eq!(series.len(), 2, "{all}");

    let only = history_json(dir.path(), &["--where", "commit=bbb222"]);
    assert_eq!(only.as_array().unwrap().len(), 2, "{only}");

    // One run, and one series by the start of its id.
    let first = runs[0]["run_id"].as_str().unwrap();
    let (code, out, err) = wb(&["history", "show", first, "--results", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["labels"]["commit"], "aaa111", "{out}");
    let prefix = &runs[0]["series"].as_str().unwrap()[..8];
    let (code, out, err) = wb(&["history", "show", prefix, "--results", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("series ") && out.contains(first), "{out}");
    assert!(out.contains("settings: {"), "{out}");
    let (code, _, err) = wb(&["history", "show", "zzz", "--results", dir.str()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("zzz: no run or series"), "{err}");

    // The index made again from the files: the same runs.
    std::fs::remove_file(dir.path().join("history.sqlite")).unwrap();
    let (code, out, err) = wb(&["history", "import", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("6 run(s) indexed, 0 indexed before, 0 unreadable"),
        "{out}"
    );
    let again = history_json(dir.path(), &[]);
    let ids = |v: &serde_json::Value| {
        let mut ids: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {}", r["run_id"], r["labels"]))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&again), ids(&all));

    // Two runs of a series: nothing to check (exit 10).
    let (code, out, err) = wb(&[
        "history",
        "check",
        "--results",
        dir.str(),
        "--where",
        "commit=bbb222",
    ]);
    assert_eq!(code, Some(10), "{out}\n{err}");
    assert!(out.contains("too few to check (at least 5)"), "{out}");
    assert!(err.contains("nothing was checked"), "{err}");
}

/// Bad flags are named, and a directory with no history says how to make
/// one.
#[test]
fn history_flags_are_checked_and_a_missing_history_is_explained() {
    let _g = shared();
    let dir = TempDir::new("history-flags");
    let (code, _, err) = wb(&["history", "list", "--results", dir.str()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("no history there") && err.contains("history import"),
        "{err}"
    );
    for (args, names) in [
        (vec!["--where", "commit"], "--where commit"),
        (vec!["--metric", "p98"], "--metric p98"),
        (vec!["--min-magnitude", "150%"], "--min-magnitude 150%"),
        (vec!["--pvalue", "2"], "--pvalue 2"),
    ] {
        let mut all = vec!["history", "check", "--results", dir.str()];
        all.extend(args);
        let (code, _, err) = wb(&all);
        assert_eq!(code, Some(2), "{all:?}: {err}");
        assert!(err.contains(names), "{all:?}: {err}");
    }
    let (code, _, err) = wb(&["run", "--label", "=x", "--duration", "100ms"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--label"), "{err}");
}

/// Issue 38's CI gates: `run --junit` writes a case per run and objective
/// (a missed one fails), `compare --fail-if --junit` one per gate and
/// variant; both refuse a file that exists without --force.
#[test]
fn run_and_compare_write_junit_reports() {
    let _g = shared();
    let dir = TempDir::new("junit");
    let xml = dir.path().join("run.xml");
    let (code, _, err) = wb(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--slo",
        "p99<1ns,ops>=1/s",
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(3), "{err}");
    let doc = std::fs::read_to_string(&xml).unwrap();
    assert!(
        doc.contains(r#"tests="3" failures="1" errors="0" skipped="0""#),
        "{doc}"
    );
    assert!(doc.contains(r#"<testcase name="slo p99&lt;1ns""#), "{doc}");
    assert!(
        doc.contains("<failure message=\"p99&lt;1ns: actual "),
        "{doc}"
    );
    assert!(doc.contains(r#"<testcase name="slo ops&gt;=1/s""#), "{doc}");
    // Never over a file that exists.
    let (code, _, err) = wb(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "100ms",
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("run.xml"), "{err}");

    let runs: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("run.json").is_file())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let gate = dir.path().join("gate.xml");
    let (code, out, err) = wb(&[
        "compare",
        &runs[0],
        &runs[0],
        "--fail-if",
        "ops_per_s<-10%",
        "--junit",
        gate.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let doc = std::fs::read_to_string(&gate).unwrap();
    assert!(doc.contains(r#"tests="1" failures="0""#), "{doc}");
    assert!(
        doc.contains("<testcase name=\"ops_per_s&lt;-10% B ("),
        "{doc}"
    );
}

/// Issue 38: an objective `over` a window is checked in each window of the
/// measured phase (run.json keeps every window), and the summary says so.
#[test]
fn an_objective_over_windows_is_checked_in_each() {
    let _g = shared();
    let dir = TempDir::new("slo-windows");
    let mut p = Proc::spawn(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "3s",
        "--warmup",
        "0s",
        "--slo",
        "p99<1ns over 1s",
        "--slo",
        "ops>=1/s over 2s",
    ]);
    let st = p.wait(Duration::from_secs(60));
    let out = p.stdout_all();
    assert_eq!(st.code(), Some(3), "{out}\n{}", p.stderr_all());
    assert!(out.contains("missed in 3 of 3 windows: 0-1s: "), "{out}");
    let run = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path().join("run.json"))
        .find(|p| p.is_file())
        .unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    let windows = |i: usize| r["slos"][i]["windows"].as_array().unwrap().len();
    assert_eq!((windows(0), windows(1)), (3, 2), "{}", r["slos"]);
    assert_eq!(r["slos"][1]["pass"], true, "{}", r["slos"]);
    // A search judges whole steps: a windowed objective is refused there.
    let (code, _, err) = wb(&[
        "search",
        "--slo",
        "p99<1ms over 10s",
        "--results",
        dir.str(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("drop 'over'"), "{err}");
}

/// Issue 38's CI gates for sweeps and searches: `sweep --junit` has a case
/// per run; `search --junit` fails its answer's case when the steps ran out.
#[test]
fn sweep_and_search_write_junit_reports() {
    let _g = shared();
    let dir = TempDir::new("junit-more");
    let spec = dir.path().join("j.toml");
    std::fs::write(
        &spec,
        "name = \"jx\"\n[base]\nduration = \"200ms\"\nwarmup = \"0s\"\nslo = [\"ops>=1/s\"]\n[matrix]\nclients = [1, 2]\n",
    )
    .unwrap();
    let xml = dir.path().join("sweep.xml");
    sweep_ok(&spec, dir.path(), &["--junit", xml.to_str().unwrap()]);
    let doc = std::fs::read_to_string(&xml).unwrap();
    assert!(
        doc.contains(r#"<testsuites name="wirebench sweep jx" tests="4" failures="0""#),
        "{doc}"
    );
    assert_eq!(
        doc.matches("<testcase name=\"slo ops&gt;=1/s\"").count(),
        2,
        "{doc}"
    );

    let xml = dir.path().join("search.xml");
    let (code, _, err) = wb(&[
        "search",
        "--slo",
        "p99<1s",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--max-steps",
        "2",
        "--results",
        dir.str(),
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(5), "{err}");
    let doc = std::fs::read_to_string(&xml).unwrap();
    assert!(doc.contains(r#"tests="3" failures="1""#), "{doc}");
    assert!(doc.contains("ran out of steps"), "{doc}");
    assert!(doc.contains("<testcase name=\"step 2 at "), "{doc}");
    // The search's answer is in the history, beside its steps: its best
    // rate so far, not confirmed (the budget ran out).
    let found = history_json(dir.path(), &["--where", "kind=search"]);
    let entries = found.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{found}");
    let e = &entries[0];
    assert_eq!(e["status"], "unconfirmed", "{e}");
    let search: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(e["dir"].as_str().unwrap()).join("search.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(e["metrics"]["ops_per_s"].as_f64().unwrap() > 0.0, "{e}");
    assert_eq!(e["metrics"]["ops_per_s"], search["best_rate_per_s"], "{e}");
}

/// Issue 38: `--abort-on-fail` ends a run at its first window that misses
/// an objective (a server that holds every response 5 ms, against p99 under
/// 1 ms per second): the run so far is saved, complete, with why, and the
/// exit status is 3. Without an objective over windows it is refused.
#[test]
fn abort_on_fail_ends_the_run_at_the_first_missed_window() {
    let _g = shared();
    let srv = Server::start(&["--delay", "5ms"]);
    let dir = TempDir::new("abort-on-fail");
    let (st, r, err) = run_json(
        &dir,
        &[
            "--target",
            &srv.endpoint,
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--slo",
            "p99<1ms over 1s",
            "--abort-on-fail",
        ],
    );
    assert_eq!(st.code(), Some(3), "{err}");
    assert_eq!(r.status.state, wirebench_core::result::RunState::Complete);
    let why = r.status.reason.clone().unwrap_or_default();
    assert!(
        why.starts_with("ended after 1 s by --abort-on-fail: p99<1ms over 1s missed in 0-1 s"),
        "{why}"
    );
    assert!(
        r.summary.measured_ns < 5_000_000_000,
        "{}",
        r.summary.measured_ns
    );
    assert!(!r.slos[0].pass);
    srv.stop();
    let (code, _, err) = wb(&["run", "--slo", "p99<1ms", "--abort-on-fail"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--abort-on-fail"), "{err}");
}

/// Issue 46: `history.sqlite` as a link (dangling, or to an empty file) is
/// refused by name: the run stays saved and says so, nothing is made or
/// written at the link's target.
#[test]
fn issue_46_a_history_that_is_a_link_is_refused_by_name() {
    let _g = shared();
    let dir = TempDir::new("history-link");
    let target = dir.path().join("elsewhere.sqlite");
    let db = dir.path().join("history.sqlite");
    std::os::unix::fs::symlink(&target, &db).unwrap();
    let (code, _, err) = wb(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "200ms",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("history.sqlite: refused: a symbolic link") && err.contains("saved in"),
        "{err}"
    );
    assert!(!target.exists(), "a database was made at the link's target");
    std::fs::remove_file(&db).unwrap();
    std::fs::write(&target, b"").unwrap();
    std::os::unix::fs::symlink(&target, &db).unwrap();
    let (code, _, err) = wb(&["history", "import", dir.str()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 0);
}

/// Issue 46: random bytes over the history: the next run moves it aside
/// (named), makes it again from the run directories and goes on (exit 0);
/// `history rebuild` does it on demand, keeping the old one.
#[test]
fn issue_46_a_damaged_history_is_moved_aside_and_made_again() {
    let _g = shared();
    let dir = TempDir::new("history-damaged");
    let quick = [
        "--results",
        dir.str(),
        "--duration",
        "200ms",
        "--warmup",
        "0s",
    ];
    let mut args = vec!["run", "--repeat", "2"];
    args.extend(quick);
    let (code, _, err) = wb(&args);
    assert_eq!(code, Some(0), "{err}");
    let db = dir.path().join("history.sqlite");
    let junk: Vec<u8> = (0..16384u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&db, &junk).unwrap();
    let mut args = vec!["run"];
    args.extend(quick);
    let (code, _, err) = wb(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("the history database was damaged") && err.contains("history.sqlite.damaged-"),
        "{err}"
    );
    assert_eq!(history_json(dir.path(), &[]).as_array().unwrap().len(), 3);
    let (code, out, err) = wb(&["history", "rebuild", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("3 run(s) indexed") && out.contains("history.sqlite.old-"),
        "{out}"
    );
    assert_eq!(history_json(dir.path(), &[]).as_array().unwrap().len(), 3);
}

/// Issue 46: another process holds the history's write lock: a 3-point
/// sweep makes all its points (each waits a bounded time, then is queued,
/// said), and the next run, the lock gone, indexes them.
#[test]
fn issue_46_a_locked_history_delays_the_index_not_the_sweep() {
    let _g = shared();
    let dir = TempDir::new("history-locked");
    let (code, _, err) = wb(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "200ms",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let db = dir.path().join("history.sqlite");
    let hold = format!(
        "import sqlite3, time\nc = sqlite3.connect({:?}, isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(600)\n",
        db.to_str().unwrap()
    );
    let mut holder = Proc::spawn_program("python3", &["-c", &hold]);
    assert_eq!(
        holder.stdout.recv_timeout(Duration::from_secs(20)).unwrap(),
        "locked"
    );
    let spec = dir.path().join("three.toml");
    std::fs::write(
        &spec,
        "name = \"locked\"\n[base]\nduration = \"200ms\"\nwarmup = \"0s\"\n[matrix]\nclients = [1, 2, 3]\n",
    )
    .unwrap();
    let mut p = Proc::spawn(&["sweep", spec.to_str().unwrap(), "--results", dir.str()]);
    let st = p.wait(Duration::from_secs(120));
    let err = p.stderr_all();
    assert!(st.success(), "{err}");
    assert_eq!(err.matches("held the history's lock").count(), 3, "{err}");
    let queued = std::fs::read_to_string(dir.path().join("history.pending")).unwrap();
    assert_eq!(queued.lines().count(), 3, "{queued}");
    holder.signal(nix::sys::signal::Signal::SIGKILL);
    holder.wait(Duration::from_secs(10));
    let (code, _, err) = wb(&[
        "run",
        "--results",
        dir.str(),
        "--duration",
        "200ms",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("3 run(s) saved while the history was locked are indexed now"),
        "{err}"
    );
    assert_eq!(history_json(dir.path(), &[]).as_array().unwrap().len(), 5);
}

/// Issue 46: one run id imported twice with other figures: said, the first
/// kept.
#[test]
fn issue_46_a_run_id_imported_twice_with_other_data_is_reported() {
    let _g = shared();
    let dir = TempDir::new("history-twice");
    let (st, r, err) = run_json(&dir, &["--duration", "200ms", "--warmup", "0s"]);
    assert!(st.success(), "{err}");
    let copy = dir.path().join("copied").join(&r.run_id);
    std::fs::create_dir_all(&copy).unwrap();
    let mut other = r.clone();
    other.summary.ops += 1000;
    other.summary.ops_per_s *= 2.0;
    std::fs::write(copy.join("run.json"), serde_json::to_vec(&other).unwrap()).unwrap();
    let (code, out, err) = wb(&["history", "import", dir.str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0 run(s) indexed, 2 indexed before"), "{out}");
    assert!(
        err.contains(&format!("run id {} in", r.run_id))
            && err.contains("with other figures (ops/s"),
        "{err}"
    );
}
