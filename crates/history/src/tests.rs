//! The history's unit tests.

use super::*;
use crate::upkeep::{PENDING, read, record};
use wirebench_core::result::fixture;

/// A temporary directory, removed at the end.
struct Dir(PathBuf);
impl Dir {
    fn new(name: &str) -> Dir {
        let p =
            std::env::temp_dir().join(format!("wirebench-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(id: &str, commit: &str, p99_ns: u64, port: u16) -> RunResult {
    let mut r = fixture::sample();
    r.run_id = id.into();
    r.started_at = format!("2026-11-27T10:00:{:02}Z", id.len());
    r.summary.latency.p99_ns = p99_ns;
    r.spec.labels.insert("commit".into(), commit.into());
    r.spec.target = wirebench_core::spec::TargetSpec::External {
        endpoint: format!("tcp://127.0.0.1:{port}").parse().unwrap(),
    };
    r
}

fn search(best: Option<f64>, confirmed: bool) -> wirebench_core::summaries::SearchResult {
    wirebench_core::summaries::SearchResult {
        slos: vec!["p99<1ms".into()],
        headroom: 0.1,
        steps: vec![],
        best_rate_per_s: best,
        confirmed,
        saturated: false,
        saturation_ops_per_s: None,
        budget_exhausted: false,
        missed_in_stalls: vec![],
        latency_flat: None,
        not_sharp: None,
        interrupted: false,
        ..Default::default()
    }
}

#[test]
fn a_searchs_answer_is_an_entry_whose_series_ignores_the_rates_tried() {
    let d = Dir::new("search");
    let mut h = History::open(&History::path_in(&d.0)).unwrap();
    // Two searches of one server: steps at other rates, one series.
    let mut step1 = run("s1step", "c1", 400_000, 7000);
    step1.spec.rate_per_s = Some(1000.0);
    let mut step2 = run("s2step", "c2", 400_000, 7001);
    step2.spec.rate_per_s = Some(8000.0);
    assert!(
        h.index_search(&d.0.join("search-1"), &search(Some(4000.0), true), &step1)
            .unwrap()
    );
    assert!(
        h.index_search(&d.0.join("search-2"), &search(Some(3000.0), false), &step2)
            .unwrap()
    );
    assert!(
        !h.index_search(&d.0.join("search-2"), &search(Some(3000.0), false), &step2)
            .unwrap()
    );
    let found = h
        .entries(&Filter::parse(&["kind=search".into()]).unwrap())
        .unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].series, found[1].series);
    assert_eq!(found[0].metric(Metric::OpsPerS), Some(4000.0));
    assert_eq!(
        (found[0].status.as_str(), found[1].status.as_str()),
        ("complete", "unconfirmed")
    );
    assert_eq!(found[1].labels["commit"], "c2");
    assert!(found[0].description.starts_with("search p99<1ms of "));
    // Other objectives: another series.
    let mut other = search(Some(4000.0), true);
    other.slos = vec!["p99<5ms".into()];
    h.index_search(&d.0.join("search-3"), &other, &step1)
        .unwrap();
    let all = h
        .entries(&Filter::parse(&["kind=search".into()]).unwrap())
        .unwrap();
    assert_ne!(all[2].series, all[0].series);
}

#[test]
fn import_finds_a_search_beside_its_steps() {
    let d = Dir::new("search-import");
    let sdir = d.0.join("search-x");
    let step = run("stepx", "c1", 400_000, 7000);
    std::fs::create_dir_all(sdir.join("stepx")).unwrap();
    std::fs::write(
        sdir.join("stepx").join("run.json"),
        serde_json::to_vec(&step).unwrap(),
    )
    .unwrap();
    std::fs::write(
        sdir.join("search.json"),
        serde_json::to_vec(&search(Some(2500.0), true)).unwrap(),
    )
    .unwrap();
    let mut h = History::open(&History::path_in(&d.0)).unwrap();
    let got = h.import(&d.0).unwrap();
    assert_eq!((got.new, got.known, got.unreadable.len()), (2, 0, 0));
    let s = h
        .entries(&Filter::parse(&["kind=search".into()]).unwrap())
        .unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].run_id, "search-x");
    assert_eq!(s[0].metric(Metric::OpsPerS), Some(2500.0));
}

#[test]
fn runs_are_indexed_once_with_their_labels_and_a_port_makes_no_new_series() {
    let d = Dir::new("index");
    let mut h = History::open(&History::path_in(&d.0)).unwrap();
    let a = run("a", "c1", 400_000, 7000);
    assert_eq!(h.index(&d.0.join("a"), &a).unwrap(), Indexed::New);
    assert_eq!(h.index(&d.0.join("a"), &a).unwrap(), Indexed::Known);
    // The same figures from a copy elsewhere: the same run.
    assert_eq!(h.index(&d.0.join("copy"), &a).unwrap(), Indexed::Known);
    assert_eq!(
        h.index(&d.0.join("bb"), &run("bb", "c2", 500_000, 7001))
            .unwrap(),
        Indexed::New
    );
    let all = h.entries(&Filter::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].series, all[1].series, "{all:?}");
    assert_eq!(all[1].labels["commit"], "c2");
    assert_eq!(all[1].metric(Metric::P99), Some(500.0));
    let only = Filter::parse(&["commit=c1".into()]).unwrap();
    let found = h.entries(&only).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].run_id, "a");
    assert!(
        Filter::parse(&["commit".into()])
            .unwrap_err()
            .contains("--where commit")
    );
}

#[test]
fn import_finds_every_run_json_and_says_which_it_could_not_read() {
    let d = Dir::new("import");
    for (i, sub) in ["x/a", "x/b/c", "y"].iter().enumerate() {
        let dir = d.0.join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        let r = run(&format!("run{i}"), "c", 1000, 1);
        std::fs::write(dir.join("run.json"), serde_json::to_vec(&r).unwrap()).unwrap();
    }
    std::fs::write(d.0.join("x/run.json"), b"{ not json").unwrap();
    let mut h = History::open(&History::path_in(&d.0)).unwrap();
    let got = h.import(&d.0).unwrap();
    assert_eq!(
        (got.new, got.known, got.unreadable.len()),
        (3, 0, 1),
        "{got:?}"
    );
    let again = h.import(&d.0).unwrap();
    assert_eq!((again.new, again.known), (0, 3));
}

/// Runs saving at once (agents, a sweep's instances, two jobs) each
/// wait for the other's write: none is refused.
#[test]
fn writers_at_once_all_get_their_runs_in() {
    let d = Dir::new("writers");
    let path = History::path_in(&d.0);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (path, dir) = (&path, &d.0);
            s.spawn(move || {
                for i in 0..15 {
                    let mut h = History::open(path).unwrap();
                    let id = format!("t{t}-{i}");
                    h.index(&dir.join(&id), &run(&id, "c", 1000, 1)).unwrap();
                }
            });
        }
    });
    let h = History::open_existing(&path).unwrap();
    assert_eq!(h.entries(&Filter::default()).unwrap().len(), 60);
}

/// Issue 46: the same run id with other figures is said, and the
/// first kept.
#[test]
fn a_run_id_found_again_with_other_figures_is_reported() {
    let d = Dir::new("conflict");
    let mut h = History::open(&History::path_in(&d.0)).unwrap();
    h.index(&d.0.join("one"), &run("x", "c1", 400_000, 7000))
        .unwrap();
    let Indexed::Conflict(why) = h
        .index(&d.0.join("two"), &run("x", "c1", 900_000, 7000))
        .unwrap()
    else {
        panic!("not a conflict")
    };
    assert!(
        why.contains("run id x") && why.contains("p99 us 400 there, 900 here"),
        "{why}"
    );
    assert!(why.contains("one") && why.contains("two"), "{why}");
    let all = h.entries(&Filter::default()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].metric(Metric::P99), Some(400.0));
    // An import says it too.
    for (sub, p99) in [("a", 400_000), ("b", 900_000)] {
        let r = run("y", "c1", p99, 7000);
        let dir = d.0.join("imp").join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), serde_json::to_vec(&r).unwrap()).unwrap();
    }
    let got = h.import(&d.0.join("imp")).unwrap();
    assert_eq!(
        (got.new, got.known, got.conflicts.len()),
        (1, 1, 1),
        "{got:?}"
    );
}

/// Issue 46: a link where the database (or its journal) goes is refused
/// by name, and nothing is made or written at its target.
#[test]
fn a_link_for_the_database_is_refused_and_its_target_untouched() {
    let d = Dir::new("links");
    let path = History::path_in(&d.0);
    let target = d.0.join("elsewhere.db");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let e = History::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("history.sqlite: refused: a symbolic link"),
        "{e}"
    );
    assert!(!target.exists(), "a database was made at the link's target");
    std::fs::remove_file(&path).unwrap();
    // A link to an empty file: not written through.
    std::fs::write(&target, b"").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(History::open(&path).is_err());
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 0);
    std::fs::remove_file(&path).unwrap();
    // The journal SQLite would write beside it.
    let journal = d.0.join("history.sqlite-journal");
    std::os::unix::fs::symlink(&target, &journal).unwrap();
    let e = History::open(&path).err().unwrap().to_string();
    assert!(e.contains("history.sqlite-journal: refused"), "{e}");
    // And `record` refuses it too, rather than rebuilding around it.
    let e = record(&d.0, &d.0, &mut |_| Ok(Indexed::New)).unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
}

/// Issue 46: random bytes over the database: the next run moves it
/// aside (named), makes it again from the run directories, and is
/// indexed itself.
#[test]
fn a_damaged_database_is_moved_aside_and_made_again() {
    let d = Dir::new("damaged");
    let path = History::path_in(&d.0);
    let mut saved = Vec::new();
    for id in ["r1", "r22", "r333"] {
        let r = run(id, "c1", 400_000, 7000);
        let dir = d.0.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), serde_json::to_vec(&r).unwrap()).unwrap();
        saved.push((dir, r));
    }
    let mut h = History::open(&path).unwrap();
    for (dir, r) in &saved[..2] {
        h.index(dir, r).unwrap();
    }
    drop(h);
    let mut noise = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            noise as u8
        })
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        History::open(&path),
        Err(HistoryError::Corrupt { .. })
    ));
    let (dir, r) = &saved[2];
    let notes = record(&d.0, dir, &mut |h| h.index(dir, r)).unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("damaged") && notes[0].contains("moved to"),
        "{notes:?}"
    );
    let aside = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .find(|n| n.starts_with("history.sqlite.damaged-"))
        .expect("moved aside");
    assert!(notes[0].contains(&aside), "{notes:?}");
    assert_eq!(std::fs::read(d.0.join(&aside)).unwrap(), bytes);
    let (all, notes) = read(&d.0, &Filter::default()).unwrap();
    assert!(notes.is_empty());
    assert_eq!(all.len(), 3);
    // A reader that finds it damaged makes it again too.
    std::fs::write(&path, &bytes).unwrap();
    let (all, notes) = read(&d.0, &Filter::default()).unwrap();
    assert_eq!((all.len(), notes.len()), (3, 1), "{notes:?}");
}

/// Issue 46: a writer holding the lock past LOCK_WAIT: the run is
/// queued, said, and indexed by the next writer that finds it free.
#[test]
fn a_run_saved_while_the_history_is_locked_is_indexed_later() {
    let d = Dir::new("locked");
    let path = History::path_in(&d.0);
    drop(History::open(&path).unwrap());
    let mut saved = Vec::new();
    for id in ["l1", "l22"] {
        let r = run(id, "c1", 400_000, 7000);
        let dir = d.0.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), serde_json::to_vec(&r).unwrap()).unwrap();
        saved.push((dir, r));
    }
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t = std::time::Instant::now();
    let (dir, r) = &saved[0];
    let notes = record(&d.0, dir, &mut |h| h.index(dir, r)).unwrap();
    let waited = t.elapsed();
    assert!(waited >= LOCK_WAIT, "{waited:?}");
    assert!(waited < LOCK_WAIT * 4, "{waited:?}");
    assert!(
        notes.len() == 1 && notes[0].contains("lock") && notes[0].contains("indexes it"),
        "{notes:?}"
    );
    let queued = std::fs::read_to_string(d.0.join(PENDING)).unwrap();
    assert!(queued.contains("l1"), "{queued}");
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let (dir, r) = &saved[1];
    let notes = record(&d.0, dir, &mut |h| h.index(dir, r)).unwrap();
    assert!(
        notes.iter().any(|n| n.contains("1 run(s) saved while")),
        "{notes:?}"
    );
    let (all, _) = read(&d.0, &Filter::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(std::fs::read_to_string(d.0.join(PENDING)).unwrap(), "");
}

#[test]
fn a_newer_schema_is_refused_and_a_missing_history_is_named() {
    let d = Dir::new("schema");
    let path = History::path_in(&d.0);
    assert!(matches!(
        History::open_existing(&path),
        Err(HistoryError::Missing { .. })
    ));
    drop(History::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let e = History::open_existing(&path).err().unwrap().to_string();
    assert!(e.contains("schema version 99"), "{e}");
}
