//! Where the per-second histograms wait while the run goes: an unlinked
//! temporary file, so that a run of any length holds a few hundred bytes of
//! memory per reported interval, not the encoded histogram's few KiB. The
//! file has no name from the start (`O_TMPFILE`, or a name removed at once
//! where the filesystem lacks it), so nothing is left in the temporary
//! directory whatever way the process ends. Without a usable temporary
//! directory the histograms simply stay in memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use wirebench_core::result::Interval;

/// The encoded histograms of the points parked so far, one line each, in
/// the points' order.
pub(crate) struct Spool {
    file: Option<File>,
    parked: usize,
}

impl Spool {
    pub(crate) fn new() -> Spool {
        Spool {
            file: unnamed_file(),
            parked: 0,
        }
    }

    /// Moves `iv`'s histogram to the file (base64 has no newline), leaving
    /// the point without it; keeps it when the file cannot take it.
    pub(crate) fn park(&mut self, mut iv: Interval) -> Interval {
        let Some(f) = &mut self.file else { return iv };
        if iv.latency_hist.contains('\n') {
            return iv;
        }
        let mut line = std::mem::take(&mut iv.latency_hist).into_bytes();
        line.push(b'\n');
        if f.write_all(&line).is_ok() {
            self.parked += 1;
            return iv;
        }
        // A write that failed may have left part of a line: the points
        // parked so far can no longer be read back in order, so stop here.
        line.pop();
        iv.latency_hist = String::from_utf8(line).expect("was a String");
        self.file = None;
        iv
    }

    /// Gives the parked histograms back to `points`: the ones left empty,
    /// in order. Returns how many could not be read back (their points keep
    /// an empty histogram).
    pub(crate) fn restore(self, points: &mut [Interval]) -> usize {
        let parked = points.iter_mut().filter(|p| p.latency_hist.is_empty());
        let Some(mut f) = self.file else {
            return parked.count();
        };
        let mut lines = match f.seek(SeekFrom::Start(0)) {
            Ok(_) => Some(BufReader::new(f).lines()),
            Err(_) => None,
        };
        let mut lost = 0;
        for p in parked.take(self.parked) {
            match lines.as_mut().and_then(|l| l.next()) {
                Some(Ok(h)) => p.latency_hist = h,
                _ => lost += 1,
            }
        }
        lost
    }
}

/// A read-write file with no name in the temporary directory.
fn unnamed_file() -> Option<File> {
    let dir = std::env::temp_dir();
    let tmpfile = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir);
    if let Ok(f) = tmpfile {
        return Some(f);
    }
    let path = dir.join(format!(
        "wirebench-spool-{}-{:016x}",
        std::process::id(),
        wirebench_core::store::random_u64()
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .ok()?;
    std::fs::remove_file(&path).ok()?;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::result::fixture::interval;

    #[test]
    fn parked_histograms_come_back_in_order_and_nothing_has_a_name() {
        let mut spool = Spool::new();
        let f = spool
            .file
            .as_ref()
            .expect("the temporary directory takes a file");
        let link = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(f)
        ))
        .unwrap();
        assert!(
            link.to_string_lossy().ends_with("(deleted)"),
            "the spool has a name: {}",
            link.display()
        );
        let originals: Vec<Interval> = (0..50).map(|k| interval(k, 1000.0, 10_000 + k)).collect();
        let mut points: Vec<Interval> = originals.iter().cloned().map(|p| spool.park(p)).collect();
        assert!(points.iter().all(|p| p.latency_hist.is_empty()));
        assert_eq!(spool.restore(&mut points), 0);
        assert_eq!(points, originals);
    }

    #[test]
    fn without_a_file_the_histograms_stay_in_memory() {
        let mut spool = Spool {
            file: None,
            parked: 0,
        };
        let p = interval(1, 1000.0, 5_000);
        let kept = spool.park(p.clone());
        assert_eq!(kept, p);
        let mut points = vec![kept];
        assert_eq!(spool.restore(&mut points), 0);
        assert_eq!(points[0], p);
    }
}
