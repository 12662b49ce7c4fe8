//! A program the run starts (`--server-cmd`, an exec run's `--client-cmd`)
//! and everything it starts, stopped as one.
//!
//! - Its own process group, as before: Ctrl-C in the terminal reaches
//!   wirebench only, which stops the program after the load.
//! - Where cgroup v2 lets this process make one, its own cgroup: a
//!   grandchild that left the group (`setsid`, a daemon's double fork) is
//!   still in it, and `cgroup.kill` stops them all.
//! - A guard: a small `sh` of its own group, reading a pipe that only this
//!   process holds. Stopping the program tells it so; if wirebench dies
//!   without doing it (SIGKILL, a crash), the pipe ends and the guard stops
//!   the tree (TERM, KILL a second later, the cgroup killed and removed),
//!   so a server the run started never outlives it.

use crate::process;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where this process's cgroup v2 is, if it has one it may make children
/// in (the unified hierarchy mounted, alone or beside v1's).
fn own_cgroup() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2").then(|| left.split_whitespace().nth(4))?
    })?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new(mount).join(own.trim_start_matches('/'));
    dir.join("cgroup.procs").exists().then_some(dir)
}

/// A cgroup made for one tree, `None` where none can be made.
fn new_cgroup(label: &str) -> Option<PathBuf> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = own_cgroup()?.join(format!(
        "wirebench-{}-{label}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).ok()?;
    Some(dir)
}

/// Whether this process may make cgroups of its own (and so stop a
/// program's children that left its process group).
pub fn cgroups_available() -> bool {
    match new_cgroup("probe") {
        Some(d) => {
            let _ = std::fs::remove_dir(d);
            true
        }
        None => false,
    }
}

/// How a tree is being started: what `prepare` set on the command.
pub struct Prepared {
    cgroup: Option<PathBuf>,
}

/// Sets `cmd` to start a tree: its own process group and, where one can be
/// made, its own cgroup (which the child joins before it execs, so nothing
/// it starts is ever outside).
pub fn prepare(cmd: &mut Command, label: &str) -> Prepared {
    cmd.process_group(0);
    let cgroup = new_cgroup(label);
    if let Some(dir) = &cgroup
        && let Ok(procs) = std::ffi::CString::new(
            dir.join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
    {
        // SAFETY: between fork and exec the closure makes three system
        // calls (open, write, close) on a path built beforehand, and
        // allocates nothing. A write that fails leaves the child out of
        // the cgroup: its process group still holds it.
        unsafe {
            cmd.pre_exec(move || {
                let fd =
                    nix::libc::open(procs.as_ptr(), nix::libc::O_WRONLY | nix::libc::O_CLOEXEC);
                if fd >= 0 {
                    // "0": the writer itself.
                    let _ = nix::libc::write(fd, b"0".as_ptr().cast(), 1);
                    nix::libc::close(fd);
                }
                Ok(())
            });
        }
    }
    Prepared { cgroup }
}

/// A started tree: the leader's group, its cgroup, and its guard.
pub struct Tree {
    pgid: u32,
    cgroup: Option<PathBuf>,
    guard: Option<(Child, ChildStdin)>,
    stopped: bool,
}

impl Tree {
    /// The tree whose leader `pid` was started by a command [`prepare`]d
    /// as `p`; its guard starts now.
    pub fn started(p: Prepared, pid: u32) -> Tree {
        let guard = guard(pid, p.cgroup.as_deref());
        Tree {
            pgid: pid,
            cgroup: p.cgroup,
            guard,
            stopped: false,
        }
    }

    /// Where the tree can be a forgotten `prepare`: its cgroup goes too.
    pub fn abandon(p: Prepared) {
        if let Some(d) = p.cgroup {
            let _ = std::fs::remove_dir(d);
        }
    }

    /// Whether it has its own cgroup.
    pub fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// SIGTERM (or SIGKILL) to every process of the group and the cgroup.
    pub fn signal(&self, kill: bool) {
        let _ = process::signal_group(self.pgid, kill);
        if let Some(d) = &self.cgroup {
            if kill {
                let _ = std::fs::write(d.join("cgroup.kill"), "1");
            } else {
                for pid in members(d) {
                    let _ = process::signal_process(pid, false);
                }
            }
        }
    }

    /// Stops `leader` and everything it started: TERM, then KILL after
    /// `grace` (or once the leader is gone), the cgroup emptied and
    /// removed, the guard released. How the leader ended (None: killed
    /// after the grace).
    pub fn stop(&mut self, leader: &mut Child, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(s)) = leader.try_wait() {
            self.kill();
            return Some(s);
        }
        self.signal(false);
        let deadline = Instant::now() + grace;
        let status = loop {
            if let Ok(Some(s)) = leader.try_wait() {
                break Some(s);
            }
            if Instant::now() >= deadline {
                self.signal(true);
                let _ = leader.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.kill();
        status
    }

    /// SIGKILL to whatever is left, the cgroup removed once empty (up to
    /// a second), the guard released.
    pub fn kill(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.signal(true);
        if let Some(d) = &self.cgroup {
            let deadline = Instant::now() + Duration::from_secs(1);
            while !members(d).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = std::fs::remove_dir(d);
        }
        if let Some((mut g, mut stdin)) = self.guard.take() {
            // "done": it exits without touching anything.
            let _ = stdin.write_all(b"done\n");
            drop(stdin);
            let _ = g.wait();
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The PIDs in cgroup `dir`.
fn members(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The guard of the tree led by `pgid`: it waits for a line on its stdin
/// and exits; if its stdin ends first (this process died), it stops the
/// tree.
fn guard(pgid: u32, cgroup: Option<&Path>) -> Option<(Child, ChildStdin)> {
    const SCRIPT: &str = r#"read -r _ && exit 0
kill -TERM -- "-$WB_PGID" 2>/dev/null
sleep 1
kill -KILL -- "-$WB_PGID" 2>/dev/null
if [ -n "$WB_CGROUP" ]; then
  echo 1 > "$WB_CGROUP/cgroup.kill" 2>/dev/null
  sleep 0.2
  rmdir "$WB_CGROUP" 2>/dev/null
fi
exit 0"#;
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", SCRIPT])
        .env("WB_PGID", pgid.to_string())
        .env(
            "WB_CGROUP",
            cgroup.map(|c| c.as_os_str().to_owned()).unwrap_or_default(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Out of the terminal's group: a Ctrl-C is wirebench's to handle.
        .process_group(0);
    let mut child = cmd.spawn().ok()?;
    let stdin = child.stdin.take()?;
    Some((child, stdin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    }

    /// The PID a program wrote in `file`, once it has.
    fn pid_in(file: &Path) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(p) = std::fs::read_to_string(file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return p;
            }
            assert!(Instant::now() < deadline, "no pid in {}", file.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_tree_stops_with_its_grandchild_that_left_the_group() {
        let dir = std::env::temp_dir().join(format!("wb-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pid");
        let mut cmd = Command::new("/bin/sh");
        cmd.args([
            "-c",
            &format!(
                "setsid sh -c 'echo $$ > {}; exec sleep 60' & wait",
                file.display()
            ),
        ]);
        let p = prepare(&mut cmd, "test");
        let mut child = cmd.spawn().unwrap();
        let mut tree = Tree::started(p, child.id());
        let grandchild = pid_in(&file);
        assert!(alive(grandchild));
        tree.stop(&mut child, Duration::from_secs(2));
        let deadline = Instant::now() + Duration::from_secs(3);
        while alive(grandchild) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let gone = !alive(grandchild);
        if !gone {
            let _ = process::signal_process(grandchild, true);
        }
        let _ = std::fs::remove_dir_all(&dir);
        // Only a cgroup finds a process that left the group and session.
        if tree.has_cgroup() {
            assert!(gone, "the setsid grandchild {grandchild} outlived its tree");
        }
    }
}
