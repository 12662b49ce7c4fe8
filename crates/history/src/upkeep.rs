//! The history kept whatever happens to its database: how a run is
//! indexed ([`record`]) and read ([`read`]) when the database is damaged
//! (moved aside and made again from the run directories: [`History::rebuild`])
//! or locked past [`crate::LOCK_WAIT`] (the run queued in [`PENDING`] for
//! the next writer).

use crate::{Entry, Filter, History, HistoryError, Imported, Indexed, plain_or_absent, sidecars};
use std::path::{Path, PathBuf};

/// The runs saved while the history was locked, one directory a line,
/// indexed by the next writer that finds it free.
pub const PENDING: &str = "history.pending";

/// What [`History::rebuild`] did.
#[derive(Debug)]
pub struct Rebuilt {
    /// Where the database that was there went.
    pub moved_to: Option<PathBuf>,
    pub imported: Imported,
}

/// Indexes a run saved in `dir` (with `add`) in the history of `results`,
/// whatever the database's state; returns what to tell the user:
/// - runs queued while it was locked are indexed first;
/// - a damaged database is moved aside and made again from the run
///   directories (which holds `dir`'s run too);
/// - a lock held past [`crate::LOCK_WAIT`] queues `dir` in [`PENDING`]: the run
///   stays saved, and is indexed by the next writer.
///
/// An error only where the history can be neither used nor made again (a
/// link, a newer schema, a directory that takes no file).
pub fn record(
    results: &Path,
    dir: &Path,
    add: &mut dyn FnMut(&mut History) -> Result<Indexed, HistoryError>,
) -> Result<Vec<String>, HistoryError> {
    let path = History::path_in(results);
    let mut notes = Vec::new();
    let mut attempt = |notes: &mut Vec<String>| -> Result<(), HistoryError> {
        let mut h = History::open(&path)?;
        h.drain_pending(results, notes)?;
        if let Indexed::Conflict(why) = add(&mut h)? {
            notes.push(why);
        }
        Ok(())
    };
    match attempt(&mut notes) {
        Ok(()) => Ok(notes),
        Err(HistoryError::Corrupt { source, .. }) => {
            let (_, done) = History::rebuild(results, "damaged")?;
            notes.push(rebuilt_note(&path, &source.to_string(), &done));
            notes.extend(done.imported.conflicts);
            Ok(notes)
        }
        Err(e @ HistoryError::Locked { .. }) => {
            queue(results, dir)?;
            notes.push(format!(
                "{e}: the run is saved in {}, and the next run that finds the history free indexes it (or `wirebench history import {}`)",
                dir.display(),
                results.display()
            ));
            Ok(notes)
        }
        Err(e) => Err(e),
    }
}

/// The runs of the history of `results` that meet `filter`, and what to
/// tell the user: a damaged database is moved aside and made again first.
pub fn read(results: &Path, filter: &Filter) -> Result<(Vec<Entry>, Vec<String>), HistoryError> {
    let (h, notes) = open_mended(results)?;
    Ok((h.entries(filter)?, notes))
}

/// `history import DIR`: the runs under `dir` indexed in its history. A
/// damaged database is moved aside and made again from the run
/// directories (which indexes them all), and the note says so.
pub fn import(dir: &Path) -> Result<(History, Imported, Option<String>), HistoryError> {
    let path = History::path_in(dir);
    match History::open(&path).and_then(|mut h| h.import(dir).map(|got| (h, got))) {
        Err(HistoryError::Corrupt { source, .. }) => {
            let (h, done) = History::rebuild(dir, "damaged")?;
            let note = rebuilt_note(&path, &source.to_string(), &done);
            Ok((h, done.imported, Some(note)))
        }
        other => other.map(|(h, got)| (h, got, None)),
    }
}

/// The history of `results`, to read (it must exist): a damaged database
/// is moved aside and made again, and the notes say so (with the runs the
/// rebuild found twice with other figures).
pub fn open_mended(results: &Path) -> Result<(History, Vec<String>), HistoryError> {
    let path = History::path_in(results);
    match History::open_existing(&path).and_then(|h| h.entries(&Filter::default()).map(|_| h)) {
        Err(HistoryError::Corrupt { source, .. }) => {
            let (h, done) = History::rebuild(results, "damaged")?;
            let mut notes = vec![rebuilt_note(&path, &source.to_string(), &done)];
            notes.extend(done.imported.conflicts);
            Ok((h, notes))
        }
        other => other.map(|h| (h, Vec::new())),
    }
}

/// What the user is told of a damaged history made again.
pub fn rebuilt_note(path: &Path, why: &str, done: &Rebuilt) -> String {
    format!(
        "{}: the history database was damaged ({why}): moved to {} and made again from the run directories ({} runs, {} unreadable)",
        path.display(),
        done.moved_to
            .as_ref()
            .map_or("(gone)".into(), |p| p.display().to_string()),
        done.imported.new,
        done.imported.unreadable.len(),
    )
}

/// Adds `dir` to the runs waiting for the history of `results`.
fn queue(results: &Path, dir: &Path) -> Result<(), HistoryError> {
    use std::io::Write;
    let file = results.join(PENDING);
    let io = |e: std::io::Error| HistoryError::Io {
        path: file.clone(),
        why: e.to_string(),
    };
    let dir = std::path::absolute(dir).map_err(io)?;
    let mut f = open_pending(&file, true).map_err(io)?;
    f.lock().map_err(io)?;
    f.write_all(format!("{}\n", dir.display()).as_bytes())
        .map_err(io)
}

/// The queue's file, opened without following a link.
fn open_pending(file: &Path, create: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(create)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)
}

impl History {
    /// Moves the history of `results` aside (as `history.sqlite.TAG-SECS`)
    /// and makes it again from the run directories under `results`.
    pub fn rebuild(results: &Path, tag: &str) -> Result<(History, Rebuilt), HistoryError> {
        let path = History::path_in(results);
        plain_or_absent(&path)?;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut aside = path.as_os_str().to_owned();
        aside.push(format!(".{tag}-{secs}"));
        let aside = PathBuf::from(aside);
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e: std::io::Error| HistoryError::Io {
                path: p,
                why: e.to_string(),
            }
        };
        let moved_to = match path.exists() {
            true => {
                std::fs::rename(&path, &aside).map_err(io(&path))?;
                Some(aside.clone())
            }
            false => None,
        };
        // A journal belongs to the database it was written for.
        for (side, aside_side) in sidecars(&path).zip(sidecars(&aside)) {
            if plain_or_absent(&side).is_ok() && side.exists() {
                std::fs::rename(&side, &aside_side).map_err(io(&side))?;
            }
        }
        let mut h = History::open(&path)?;
        let imported = h.import(results)?;
        let _ = std::fs::remove_file(results.join(PENDING));
        Ok((h, Rebuilt { moved_to, imported }))
    }

    /// Indexes the runs queued while the history was locked.
    fn drain_pending(
        &mut self,
        results: &Path,
        notes: &mut Vec<String>,
    ) -> Result<(), HistoryError> {
        let file = results.join(PENDING);
        let io = |e: std::io::Error| HistoryError::Io {
            path: file.clone(),
            why: e.to_string(),
        };
        let mut f = match open_pending(&file, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        };
        f.lock().map_err(io)?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).map_err(io)?;
        let mut new = 0;
        for dir in text.lines().map(Path::new).filter(|d| d.is_dir()) {
            let got = self.import(dir)?;
            new += got.new;
            notes.extend(got.conflicts);
        }
        if new > 0 {
            notes.push(format!(
                "{new} run(s) saved while the history was locked are indexed now"
            ));
        }
        f.set_len(0).map_err(io)
    }
}
