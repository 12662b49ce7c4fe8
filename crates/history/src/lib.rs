//! The history of a results directory: every run saved there is indexed in
//! `<results>/history.sqlite` (SQLite, bundled with the binary) with its
//! series (same settings, same machine), its labels (`commit=abc123`) and
//! its headline metrics, so that a nightly job's runs can be followed over
//! commits and the changes in them found (`changes`).
//!
//! ```no_run
//! # fn main() -> Result<(), wirebench_history::HistoryError> {
//! use wirebench_history::{History, Filter};
//! let mut h = History::open(&History::path_in("results".as_ref()))?;
//! h.import("results".as_ref())?;
//! for e in h.entries(&Filter::default())? {
//!     println!("{} {} {:?}", e.started_at, e.run_id, e.labels.get("commit"));
//! }
//! # Ok(()) }
//! ```
//!
//! The database is an index, never the only copy: every row comes from a
//! `run.json` that stays where it was saved, and `history import` makes
//! the index again from the files.

pub mod changes;
pub mod check;
pub mod series;

use rusqlite::{Connection, OptionalExtension, params};
use series::{Metric, Series};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wirebench_core::result::RunResult;

/// Why the history could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{path}: {source}")]
    Db {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{path}: no history there; runs are indexed as they are saved, and `wirebench history import DIR` indexes the results already in DIR"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path}: a history of schema version {found}, newer than this wirebench's ({known}): use a newer wirebench"
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: usize,
    },
    #[error("{path}: {why}")]
    Io { path: PathBuf, why: String },
}

/// The schema, one step per version: a database at version k gets steps
/// k.. applied, in one transaction, and `user_version` set to their count.
const MIGRATIONS: &[&str] = &[
    // 1: runs and their labels.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        dir TEXT NOT NULL,
        started_at TEXT NOT NULL,
        series TEXT NOT NULL,
        settings TEXT NOT NULL,
        machine TEXT NOT NULL,
        description TEXT NOT NULL,
        transport TEXT NOT NULL,
        status TEXT NOT NULL,
        ops_per_s REAL,
        p50_us REAL,
        p99_us REAL,
        p999_us REAL,
        cpu_us_per_op REAL,
        server_cpu_us_per_op REAL,
        errors REAL
    );
    CREATE INDEX runs_by_series ON runs (series, started_at);
    CREATE TABLE labels (
        run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run, key)
    );",
];

/// What `history show ID` found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Run(Box<Entry>),
    /// A series' runs, oldest first (never empty).
    Series(Vec<Entry>),
}

/// One run as the history holds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    pub run_id: String,
    /// "run" (runs, sweep points and search steps are all runs), or
    /// "search" (a search's answer: the highest rate meeting its
    /// objectives, as its ops/s).
    pub kind: String,
    /// Where its `run.json` is.
    pub dir: PathBuf,
    pub started_at: String,
    pub series: String,
    pub settings: String,
    pub machine: String,
    /// What the series' runs are (`echo-external c1x1 d1`).
    pub description: String,
    pub transport: String,
    /// complete, interrupted or failed.
    pub status: String,
    pub labels: BTreeMap<String, String>,
    /// Each metric the run measured, by name.
    pub metrics: BTreeMap<String, f64>,
}

impl Entry {
    pub fn metric(&self, m: Metric) -> Option<f64> {
        self.metrics.get(m.name()).copied()
    }

    /// The value of a `--where` key: a column's, else a label's.
    pub fn field(&self, key: &str) -> Option<&str> {
        Some(match key {
            "run_id" => &self.run_id,
            "kind" => &self.kind,
            "series" => &self.series,
            "machine" => &self.machine,
            "transport" => &self.transport,
            "status" => &self.status,
            "description" => &self.description,
            _ => return self.labels.get(key).map(String::as_str),
        })
    }
}

/// `--where key=value` conditions, all of which an entry meets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter(pub Vec<(String, String)>);

impl Filter {
    /// Parses `key=value` conditions; the error names the bad one.
    pub fn parse(conditions: &[String]) -> Result<Filter, String> {
        conditions
            .iter()
            .map(|c| match c.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(format!(
                    "--where {c}: write KEY=VALUE (transport=redis, status=complete, commit=abc123, series=ID)"
                )),
            })
            .collect::<Result<_, _>>()
            .map(Filter)
    }

    pub fn matches(&self, e: &Entry) -> bool {
        self.0.iter().all(|(k, v)| {
            e.field(k)
                .is_some_and(|f| f == v || (k == "series" && f.starts_with(v.as_str())))
        })
    }
}

/// What an import found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Imported {
    /// Runs indexed now.
    pub new: usize,
    /// Runs indexed before.
    pub known: usize,
    /// `run.json` files that could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// An open history database.
pub struct History {
    conn: Connection,
    path: PathBuf,
}

impl History {
    /// The history of a results directory.
    pub fn path_in(results: &Path) -> PathBuf {
        results.join("history.sqlite")
    }

    /// Opens the history at `path`, made if absent, its schema brought up
    /// to date.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| HistoryError::Io {
                path: dir.to_path_buf(),
                why: e.to_string(),
            })?;
        }
        let conn = Connection::open(path).map_err(db(path))?;
        let mut h = History {
            conn,
            path: path.to_path_buf(),
        };
        h.migrate()?;
        Ok(h)
    }

    /// Opens a history that must exist (to read it).
    pub fn open_existing(path: &Path) -> Result<History, HistoryError> {
        if !path.is_file() {
            return Err(HistoryError::Missing {
                path: path.to_path_buf(),
            });
        }
        History::open(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A transaction that writes: its lock taken at its start, so that two
    /// writers wait for each other (the busy timeout) instead of one
    /// failing at once when both read first and then both want to write.
    fn write(&mut self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        let path = self.path.clone();
        // Several runs may save at once (a sweep's instances, two jobs on
        // one results directory): a writer waits for the other's lock.
        self.conn
            .busy_timeout(Duration::from_secs(10))
            .map_err(db(&path))?;
        self.conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(db(&path))?;
        let tx = self.write().map_err(db(&path))?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db(&path))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(HistoryError::Newer {
                path,
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        for step in &MIGRATIONS[version as usize..] {
            tx.execute_batch(step).map_err(db(&path))?;
        }
        tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)
            .map_err(db(&path))?;
        tx.commit().map_err(db(&path))
    }

    /// Indexes the run saved in `dir`. False when it was indexed already
    /// (its run id is known).
    pub fn index(&mut self, dir: &Path, r: &RunResult) -> Result<bool, HistoryError> {
        let path = self.path.clone();
        let series = Series::of(r);
        let tx = self.write().map_err(db(&path))?;
        let known: Option<i64> = tx
            .query_row(
                "SELECT id FROM runs WHERE run_id = ?1",
                [&r.run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(db(&path))?;
        if known.is_some() {
            return Ok(false);
        }
        let m = |metric: Metric| metric.of(r);
        tx.execute(
            "INSERT INTO runs (run_id, kind, dir, started_at, series, settings, machine,
                description, transport, status, ops_per_s, p50_us, p99_us, p999_us,
                cpu_us_per_op, server_cpu_us_per_op, errors)
             VALUES (?1, 'run', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            params![
                r.run_id,
                dir.to_string_lossy(),
                r.started_at,
                series.id,
                series.settings,
                series.machine,
                description(r),
                r.spec.kind().name(),
                format!("{:?}", r.status.state).to_lowercase(),
                m(Metric::OpsPerS),
                m(Metric::P50),
                m(Metric::P99),
                m(Metric::P999),
                m(Metric::CpuPerOp),
                m(Metric::ServerCpuPerOp),
                m(Metric::Errors),
            ],
        )
        .map_err(db(&path))?;
        let id = tx.last_insert_rowid();
        for (k, v) in &r.spec.labels {
            tx.execute(
                "INSERT INTO labels (run, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(db(&path))?;
        }
        tx.commit().map_err(db(&path))?;
        Ok(true)
    }

    /// Indexes a search (its directory `dir`, with `search.json`) as one
    /// entry of kind "search": its answer, the highest rate that met its
    /// objectives, as the entry's ops/s. Its series is its steps' settings
    /// without their rate, with its objectives and headroom: searches of
    /// the same server under the same objectives, whatever rates they
    /// tried. `step` is one of its steps (their spec, machine and labels).
    /// It is complete when its answer was confirmed; false: known already.
    pub fn index_search(
        &mut self,
        dir: &Path,
        s: &wirebench_core::summaries::SearchResult,
        step: &RunResult,
    ) -> Result<bool, HistoryError> {
        let path = self.path.clone();
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let series = Series::of_search(step, &s.slos, s.headroom);
        let tx = self.write().map_err(db(&path))?;
        let known: Option<i64> = tx
            .query_row("SELECT id FROM runs WHERE run_id = ?1", [&run_id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(db(&path))?;
        if known.is_some() {
            return Ok(false);
        }
        let status = match (s.best_rate_per_s, s.confirmed, s.interrupted) {
            (_, _, true) => "interrupted",
            // A search that ran out of steps has not bounded its answer.
            (Some(_), true, false) if !s.budget_exhausted => "complete",
            _ => "unconfirmed",
        };
        tx.execute(
            "INSERT INTO runs (run_id, kind, dir, started_at, series, settings, machine,
                description, transport, status, ops_per_s)
             VALUES (?1, 'search', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                run_id,
                dir.to_string_lossy(),
                step.started_at,
                series.id,
                series.settings,
                series.machine,
                format!(
                    "search {} of {}",
                    s.slos.join(","),
                    search_description(step)
                ),
                step.spec.kind().name(),
                status,
                s.best_rate_per_s,
            ],
        )
        .map_err(db(&path))?;
        let id = tx.last_insert_rowid();
        for (k, v) in &step.spec.labels {
            tx.execute(
                "INSERT INTO labels (run, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(db(&path))?;
        }
        tx.commit().map_err(db(&path))?;
        Ok(true)
    }

    /// Indexes every `run.json` under `dir` (at any depth: runs, groups,
    /// sweeps and searches).
    pub fn import(&mut self, dir: &Path) -> Result<Imported, HistoryError> {
        let mut found = Vec::new();
        walk(dir, &mut found).map_err(|e| HistoryError::Io {
            path: dir.to_path_buf(),
            why: e.to_string(),
        })?;
        found.sort();
        let mut out = Imported::default();
        // A search: its answer, with one of its steps (found beside it).
        let searches: Vec<PathBuf> = found
            .iter()
            .filter(|f| f.file_name().is_some_and(|n| n == "search.json"))
            .cloned()
            .collect();
        found.retain(|f| f.file_name().is_some_and(|n| n == "run.json"));
        for file in searches {
            let dir_of = file.parent().unwrap_or(dir).to_path_buf();
            let text = std::fs::read_to_string(&file);
            let search = text
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
            let step = found
                .iter()
                .find(|f| f.starts_with(&dir_of))
                .map(|f| wirebench_core::store::load(f).map_err(|e| e.to_string()));
            match (search, step) {
                (Ok(search), Some(Ok(step))) => {
                    if self.index_search(&dir_of, &search, &step)? {
                        out.new += 1;
                    } else {
                        out.known += 1;
                    }
                }
                (Err(e), _) | (_, Some(Err(e))) => out.unreadable.push((file, e)),
                (Ok(_), None) => out
                    .unreadable
                    .push((file, "a search without a step beside it".into())),
            }
        }
        for file in found {
            match wirebench_core::store::load(&file) {
                Ok(r) => {
                    let run_dir = file.parent().unwrap_or(dir);
                    if self.index(run_dir, &r)? {
                        out.new += 1;
                    } else {
                        out.known += 1;
                    }
                }
                Err(e) => out.unreadable.push((file, e.to_string())),
            }
        }
        Ok(out)
    }

    /// A run by its id, else the runs of the one series whose id starts
    /// with `id` (an error says why neither).
    pub fn find(&self, id: &str) -> Result<Found, String> {
        let all = self
            .entries(&Filter::default())
            .map_err(|e| e.to_string())?;
        if let Some(e) = all.iter().find(|e| e.run_id == id) {
            return Ok(Found::Run(Box::new(e.clone())));
        }
        let series: std::collections::BTreeSet<&str> = all
            .iter()
            .map(|e| e.series.as_str())
            .filter(|s| !id.is_empty() && s.starts_with(id))
            .collect();
        match series.len() {
            1 => {
                let one = series.into_iter().next().expect("one").to_string();
                Ok(Found::Series(
                    all.into_iter().filter(|e| e.series == one).collect(),
                ))
            }
            0 => Err(format!(
                "{id}: no run or series of that id in {}",
                self.path.display()
            )),
            n => Err(format!(
                "{id}: the start of {n} series' ids; give more of it"
            )),
        }
    }

    /// The runs that meet `filter`, oldest first.
    pub fn entries(&self, filter: &Filter) -> Result<Vec<Entry>, HistoryError> {
        let path = &self.path;
        let mut labels: BTreeMap<i64, BTreeMap<String, String>> = BTreeMap::new();
        let mut st = self
            .conn
            .prepare("SELECT run, key, value FROM labels")
            .map_err(db(path))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db(path))?;
        for row in rows {
            let (id, k, v) = row.map_err(db(path))?;
            labels.entry(id).or_default().insert(k, v);
        }
        let columns: Vec<&str> = Metric::ALL.iter().map(|m| m.column()).collect();
        let sql = format!(
            "SELECT id, run_id, kind, dir, started_at, series, settings, machine, description,
                transport, status, {} FROM runs ORDER BY started_at, id",
            columns.join(", ")
        );
        let mut st = self.conn.prepare(&sql).map_err(db(path))?;
        let rows = st
            .query_map([], |row| {
                let id: i64 = row.get(0)?;
                let mut metrics = BTreeMap::new();
                for (i, m) in Metric::ALL.iter().enumerate() {
                    if let Some(v) = row.get::<_, Option<f64>>(11 + i)? {
                        metrics.insert(m.name().to_string(), v);
                    }
                }
                Ok(Entry {
                    run_id: row.get(1)?,
                    kind: row.get(2)?,
                    dir: PathBuf::from(row.get::<_, String>(3)?),
                    started_at: row.get(4)?,
                    series: row.get(5)?,
                    settings: row.get(6)?,
                    machine: row.get(7)?,
                    description: row.get(8)?,
                    transport: row.get(9)?,
                    status: row.get(10)?,
                    labels: labels.remove(&id).unwrap_or_default(),
                    metrics,
                })
            })
            .map_err(db(path))?;
        let mut out = Vec::new();
        for e in rows {
            let e = e.map_err(db(path))?;
            if filter.matches(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }
}

/// The entries grouped by series, each oldest first; the series in the
/// order of their first run.
pub fn by_series(entries: &[Entry]) -> Vec<(String, Vec<&Entry>)> {
    let mut out: Vec<(String, Vec<&Entry>)> = Vec::new();
    for e in entries {
        match out.iter_mut().find(|(s, _)| *s == e.series) {
            Some((_, v)) => v.push(e),
            None => out.push((e.series.clone(), vec![e])),
        }
    }
    out
}

/// What a series' runs are, in a few words: `echo-external c1x1 d1`, with
/// the rate of an open loop (`rate 5000/s`).
fn description(r: &RunResult) -> String {
    let s = &r.spec;
    let mut d = format!(
        "{} c{}x{} d{}",
        s.label(),
        s.clients,
        s.conns_per_client,
        s.depth
    );
    if let Some(rate) = s.rate_per_s {
        d.push_str(&format!(" rate {rate}/s"));
    }
    d
}

/// A search's steps without their rate (`echo-external c1x1 d1024`).
fn search_description(r: &RunResult) -> String {
    let s = &r.spec;
    format!(
        "{} c{}x{} d{}",
        s.label(),
        s.clients,
        s.conns_per_client,
        s.depth
    )
}

fn db(path: &Path) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |source| HistoryError::Db {
        path: path.to_path_buf(),
        source,
    }
}

/// Every `run.json` under `dir`; symbolic links are not followed.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let ty = e.file_type()?;
        if ty.is_dir() {
            walk(&e.path(), out)?;
        } else if ty.is_file() && (e.file_name() == "run.json" || e.file_name() == "search.json") {
            out.push(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture;

    /// A temporary directory, removed at the end.
    struct Dir(PathBuf);
    impl Dir {
        fn new(name: &str) -> Dir {
            let p = std::env::temp_dir()
                .join(format!("wirebench-history-{name}-{}", std::process::id()));
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
        assert!(
            h.index(&d.0.join("a"), &run("a", "c1", 400_000, 7000))
                .unwrap()
        );
        assert!(
            !h.index(&d.0.join("a"), &run("a", "c1", 400_000, 7000))
                .unwrap()
        );
        assert!(
            h.index(&d.0.join("bb"), &run("bb", "c2", 500_000, 7001))
                .unwrap()
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
}
