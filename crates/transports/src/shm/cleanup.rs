//! Leftovers of dead processes: files named `wirebench-shm-<pid>...` (and
//! `wirebench-trace-server-<pid>.txt`) in the
//! temporary directory and in /dev/shm whose PID no longer runs. A running
//! process's files are never touched, whoever owns them.

use super::proto::PREFIX;
use std::path::{Path, PathBuf};

/// The directories searched.
pub fn places() -> Vec<PathBuf> {
    let mut v = vec![std::env::temp_dir()];
    for p in ["/tmp", "/dev/shm"] {
        let p = PathBuf::from(p);
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// Prefixes of the temporary files wirebench names after their owner's PID:
/// the shm server's control socket, and the trace an embedded server
/// writes for its run (`run --trace`) before the run moves it into its
/// results (left in place if the run is killed first).
pub const PREFIXES: [&str; 2] = [PREFIX, "wirebench-trace-server-"];

/// The owner's PID in a name of ours.
pub fn owner(name: &str) -> Option<u32> {
    let rest = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Whether a process `pid` runs. `/proc/N` exists for a thread's id too
/// (not listed, but there): only a thread group's leader is a process.
fn alive(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .is_some_and(|t| t.trim() == pid.to_string())
}

/// Removes `path` (a file of ours) if its owner no longer runs: what the
/// survivor of a session does when its peer died. Returns the owner's PID
/// when it removed the file.
pub fn remove_if_owner_gone(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let pid = owner(name)?;
    if alive(pid) || !path.exists() {
        return None;
    }
    std::fs::remove_file(path).ok().map(|_| pid)
}

/// What a clean found: removed files, and files left because their owner runs.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Vec<PathBuf>,
    pub kept: Vec<(PathBuf, u32)>,
    pub failed: Vec<(PathBuf, String)>,
}

impl Cleaned {
    /// What a clean did (or, `dry_run`, would do) in `dirs`, for people:
    /// one line per file. The files it failed to remove are not listed.
    pub fn lines(&self, dry_run: bool, dirs: &[PathBuf]) -> Vec<String> {
        let kept = |(p, pid): &(PathBuf, u32)| match dry_run {
            true => format!("in use by running pid {pid}: {}", p.display()),
            false => format!("left (pid {pid} is running): {}", p.display()),
        };
        let removed = |p: &PathBuf| match dry_run {
            true => format!("would remove: {}", p.display()),
            false => format!("removed: {}", p.display()),
        };
        let mut v: Vec<String> = match dry_run {
            true => self
                .kept
                .iter()
                .map(kept)
                .chain(self.removed.iter().map(removed))
                .collect(),
            false => self
                .removed
                .iter()
                .map(removed)
                .chain(self.kept.iter().map(kept))
                .collect(),
        };
        if !dry_run && self.removed.is_empty() && self.failed.is_empty() {
            let dirs: Vec<String> = dirs.iter().map(|p| p.display().to_string()).collect();
            v.push(format!("nothing to clean in {}", dirs.join(", ")));
        }
        v
    }
}

/// Removes the leftovers of dead processes in `dirs`.
pub fn clean(dirs: &[PathBuf]) -> Cleaned {
    visit(dirs, true)
}

/// What [`clean`] would do: `removed` lists what it would remove.
pub fn scan(dirs: &[PathBuf]) -> Cleaned {
    visit(dirs, false)
}

fn visit(dirs: &[PathBuf], remove: bool) -> Cleaned {
    let mut out = Cleaned::default();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = owner(&name) else { continue };
            let path = e.path();
            if alive(pid) {
                out.kept.push((path, pid));
                continue;
            }
            if !remove {
                out.removed.push(path);
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => out.removed.push(path),
                Err(err) => out.failed.push((path, err.to_string())),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_names() {
        assert_eq!(owner("wirebench-shm-123.sock"), Some(123));
        assert_eq!(owner("wirebench-shm-77-3"), Some(77));
        assert_eq!(owner("wirebench-shm-x"), None);
        assert_eq!(owner("other-123"), None);
        assert_eq!(owner("wirebench-trace-server-42.txt"), Some(42));
    }

    #[test]
    fn a_threads_id_is_no_running_process() {
        assert!(alive(std::process::id()));
        // A thread of this process: its /proc/TID is there, yet it is no
        // process of its own.
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            let _ = stop_rx.recv();
        });
        let running = rx.recv().unwrap();
        assert!(std::path::Path::new(&format!("/proc/{running}")).exists());
        assert!(!alive(running), "thread {running} taken for a process");
        stop_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
