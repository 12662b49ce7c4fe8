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
pub mod upkeep;

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
    /// Not a plain file of its own: a link (followed, it would make or
    /// overwrite a file elsewhere), a directory, a device.
    #[error("{path}: refused: {why}")]
    Refused { path: PathBuf, why: String },
    /// Not a database, or a damaged one.
    #[error("{path}: the history database is damaged ({source})")]
    Corrupt {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// Another process held its write lock for longer than [`LOCK_WAIT`].
    #[error("{path}: another process held the history's lock for more than {wait:?}")]
    Locked { path: PathBuf, wait: Duration },
}

/// How long a writer waits for another's lock on the history (writers
/// hold it for milliseconds: a run saving, an import).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// What became of a run given to the index.
#[derive(Debug, Clone, PartialEq)]
pub enum Indexed {
    New,
    /// Its run id was indexed before, with the same figures.
    Known,
    /// Its run id was indexed before with other figures: the history keeps
    /// the first (why says where each is and what differs).
    Conflict(String),
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
    /// Run ids found again with other figures (the first kept), and where.
    pub conflicts: Vec<String>,
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
    /// The database and the files SQLite keeps beside it are opened only
    /// as plain files of their own: a link is refused, never followed.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| HistoryError::Io {
                path: dir.to_path_buf(),
                why: e.to_string(),
            })?;
        }
        for file in std::iter::once(path.to_path_buf()).chain(sidecars(path)) {
            plain_or_absent(&file)?;
        }
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(db(path))?;
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
        self.conn.busy_timeout(LOCK_WAIT).map_err(db(&path))?;
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

    /// Indexes the run saved in `dir`, unless its run id is known.
    pub fn index(&mut self, dir: &Path, r: &RunResult) -> Result<Indexed, HistoryError> {
        let path = self.path.clone();
        let series = Series::of(r);
        let m = |metric: Metric| metric.of(r);
        let tx = self.write().map_err(db(&path))?;
        type Row = (String, String, String, Option<f64>, Option<f64>);
        let known: Option<Row> = tx
            .query_row(
                "SELECT dir, started_at, status, ops_per_s, p99_us FROM runs WHERE run_id = ?1",
                [&r.run_id],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                },
            )
            .optional()
            .map_err(db(&path))?;
        if let Some((was_in, started_at, status, ops, p99)) = known {
            let ours = (
                r.started_at.clone(),
                format!("{:?}", r.status.state).to_lowercase(),
            );
            let differs = [
                (
                    "started",
                    started_at != ours.0,
                    started_at.clone(),
                    ours.0.clone(),
                ),
                ("status", status != ours.1, status.clone(), ours.1.clone()),
                (
                    "ops/s",
                    !same(ops, m(Metric::OpsPerS)),
                    show(ops),
                    show(m(Metric::OpsPerS)),
                ),
                (
                    "p99 us",
                    !same(p99, m(Metric::P99)),
                    show(p99),
                    show(m(Metric::P99)),
                ),
            ];
            let what: Vec<String> = differs
                .iter()
                .filter(|d| d.1)
                .map(|(name, _, a, b)| format!("{name} {a} there, {b} here"))
                .collect();
            return Ok(match what.is_empty() {
                true => Indexed::Known,
                false => Indexed::Conflict(format!(
                    "run id {} in {} was indexed before from {} with other figures ({}): the history keeps the first",
                    r.run_id,
                    dir.display(),
                    was_in,
                    what.join(", ")
                )),
            });
        }
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
        Ok(Indexed::New)
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
                    match self.index(run_dir, &r)? {
                        Indexed::New => out.new += 1,
                        Indexed::Known => out.known += 1,
                        Indexed::Conflict(why) => {
                            out.known += 1;
                            out.conflicts.push(why);
                        }
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

/// A database error, by what can be done about it: a damaged database is
/// rebuilt, a locked one waited for.
fn db(path: &Path) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    use rusqlite::ErrorCode as C;
    move |source| match source.sqlite_error_code() {
        Some(C::NotADatabase | C::DatabaseCorrupt) => HistoryError::Corrupt {
            path: path.to_path_buf(),
            source,
        },
        Some(C::DatabaseBusy | C::DatabaseLocked) => HistoryError::Locked {
            path: path.to_path_buf(),
            wait: LOCK_WAIT,
        },
        _ => HistoryError::Db {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// The files SQLite keeps beside the database `path`.
pub(crate) fn sidecars(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    ["-journal", "-wal", "-shm"].into_iter().map(move |end| {
        let mut name = path.as_os_str().to_owned();
        name.push(end);
        PathBuf::from(name)
    })
}

/// `file` is absent or a plain file, never a link (not even to a plain
/// file: it would be written through).
pub(crate) fn plain_or_absent(file: &Path) -> Result<(), HistoryError> {
    let refused = |why: String| {
        Err(HistoryError::Refused {
            path: file.to_path_buf(),
            why,
        })
    };
    match std::fs::symlink_metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => refused(e.to_string()),
        Ok(m) if m.file_type().is_symlink() => refused(format!(
            "a symbolic link (to {}): wirebench follows no link in a results directory; remove it",
            std::fs::read_link(file)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into())
        )),
        Ok(m) if !m.is_file() => refused("not a plain file".into()),
        Ok(_) => Ok(()),
    }
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    }
}

fn show(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v}"))
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
mod tests;
