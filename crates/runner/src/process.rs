//! Processes and signals: SIGINT, SIGTERM and SIGHUP taken by one thread and turned
//! into a [`Cancel`] the run polls; children that die with their parent;
//! signals sent by PID. Contract: termination signals are blocked in every
//! thread of a process that calls [`watch_signals`] or
//! [`block_termination_signals`] before it spawns threads, so that they
//! never kill it half-way through writing a result.

use nix::sys::signal::{SigSet, Signal};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Raises the soft limit of open files to the hard one (each connection
/// takes a descriptor).
pub use wirebench_load::os::raise_open_files_limit;

/// A run's cancel flag (the drivers', below the runner).
pub use wirebench_load::driver::Cancel;

fn termination_set() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    // A closed terminal: stop as on SIGTERM, keeping what was measured.
    set.add(Signal::SIGHUP);
    set
}

/// Whether SIGHUP stopped this process (it then exits 129, not 130).
static HUNG_UP: AtomicBool = AtomicBool::new(false);

/// The exit status of a process stopped by a signal: 129 after SIGHUP,
/// 130 after SIGINT or SIGTERM.
pub fn interrupted_exit_code() -> u8 {
    if HUNG_UP.load(Ordering::Relaxed) {
        129
    } else {
        130
    }
}

/// After SIGHUP: standard output and error that were the terminal now go
/// to /dev/null (writing to a hung-up terminal fails, and a failed write
/// must not stop the saving of the result). Files and pipes are kept.
fn detach_from_terminal() {
    use std::io::IsTerminal;
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    if std::io::stdout().is_terminal() {
        let _ = nix::unistd::dup2_stdout(&null);
    }
    if std::io::stderr().is_terminal() {
        let _ = nix::unistd::dup2_stderr(&null);
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread (and the threads it
/// spawns later), so that one thread can wait for them with
/// [`wait_for_termination`] instead of having them kill the process.
pub fn block_termination_signals() -> io::Result<()> {
    termination_set().thread_block().map_err(io::Error::other)
}

/// Waits for SIGINT or SIGTERM (which must be blocked); returns its name.
pub fn wait_for_termination() -> io::Result<&'static str> {
    let s = termination_set().wait().map_err(io::Error::other)?;
    Ok(s.as_str())
}

/// Takes over SIGINT and SIGTERM: they are blocked in every thread and
/// taken by one waiting thread, which cancels the returned flag with the
/// signal's name ("SIGINT received"); a second signal forces it.
pub fn watch_signals() -> io::Result<Cancel> {
    block_termination_signals()?;
    let cancel = Cancel::new();
    let c = cancel.clone();
    std::thread::Builder::new()
        .name("wb-signals".into())
        .spawn(move || {
            while let Ok(s) = wait_for_termination() {
                if s == Signal::SIGHUP.as_str() {
                    HUNG_UP.store(true, Ordering::Relaxed);
                    detach_from_terminal();
                }
                if c.is_cancelled() {
                    c.force();
                } else {
                    c.cancel(format!("{s} received"));
                }
            }
        })?;
    Ok(cancel)
}

/// Asks the kernel to send SIGTERM to this process when the thread that
/// started it exits, and checks the parent is still `parent` (it may have
/// died before the request took effect).
pub fn terminate_with_parent(parent: u32) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(io::Error::other)?;
    if nix::unistd::getppid().as_raw() as u32 != parent {
        return Err(io::Error::other("the parent process is gone"));
    }
    Ok(())
}

/// Sends SIGTERM (or SIGKILL) to a process by PID.
pub fn signal_process(pid: u32, kill: bool) -> io::Result<()> {
    let sig = if kill {
        Signal::SIGKILL
    } else {
        Signal::SIGTERM
    };
    send(pid, sig)
}

/// Sends a process the termination signal named (`SIGINT`, `SIGTERM`,
/// `SIGHUP`), SIGTERM for any other name or none: what a parent received,
/// passed on so that its child records it by its own name.
pub fn forward_signal(pid: u32, name: Option<&str>) -> io::Result<()> {
    let sig = match name {
        Some("SIGINT") => Signal::SIGINT,
        Some("SIGHUP") => Signal::SIGHUP,
        _ => Signal::SIGTERM,
    };
    send(pid, sig)
}

/// Sends SIGINT to a process by PID (perf writes its data on SIGINT).
pub fn interrupt_process(pid: u32) -> io::Result<()> {
    send(pid, Signal::SIGINT)
}

fn send(pid: u32, sig: Signal) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::other(format!("no such pid {pid}")))?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).map_err(io::Error::other)
}

/// Lets the child that `cmd` starts receive SIGINT and SIGTERM: this
/// process blocks them in every thread (see [`block_termination_signals`])
/// and a child inherits the mask, so a tool such as perf, which stops on
/// SIGINT, would otherwise never stop.
pub fn unblock_termination_signals_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let set = termination_set();
    // SAFETY: the closure runs in the child between fork and exec; it only
    // calls pthread_sigmask (async-signal-safe) on a set built beforehand,
    // and allocates nothing, even on error.
    unsafe {
        cmd.pre_exec(move || {
            set.thread_unblock()
                .map_err(|e| io::Error::from_raw_os_error(e as i32))
        });
    }
}

/// Pins the child that `cmd` starts to `cpus` before it runs a line of
/// its own (threads it starts inherit the set).
pub fn pin_child(cmd: &mut std::process::Command, cpus: &[usize]) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(io::Error::other)?;
    }
    // SAFETY: the closure runs in the child between fork and exec; it only
    // calls sched_setaffinity (a system call) on a set built beforehand,
    // and allocates nothing, even on error.
    unsafe {
        cmd.pre_exec(move || {
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
                .map_err(|e| io::Error::from_raw_os_error(e as i32))
        });
    }
    Ok(())
}

/// Sends SIGTERM (or SIGKILL) to every process of a process group.
pub fn signal_group(pgid: u32, kill: bool) -> io::Result<()> {
    let sig = if kill {
        Signal::SIGKILL
    } else {
        Signal::SIGTERM
    };
    let pgid =
        i32::try_from(pgid).map_err(|_| io::Error::other(format!("no such group {pgid}")))?;
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), sig).map_err(io::Error::other)
}

/// Stops `child`, the leader of its own process group: SIGTERM to the
/// group, SIGKILL after `grace`, and SIGKILL to what is left of the group
/// once the leader is gone. How the leader ended (None: killed after the
/// grace).
pub fn stop_group(
    child: &mut std::process::Child,
    grace: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let pgid = child.id();
    let _ = signal_group(pgid, false);
    let deadline = std::time::Instant::now() + grace;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            let _ = signal_group(pgid, true);
            return Some(s);
        }
        if std::time::Instant::now() >= deadline {
            let _ = signal_group(pgid, true);
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// How a child process ended, in words.
pub fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(9)) => "killed by signal 9 (SIGKILL)".into(),
        (None, Some(15)) => "killed by signal 15 (SIGTERM)".into(),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_wins() {
        let c = Cancel::new();
        assert!(!c.is_cancelled());
        let d = c.clone();
        d.cancel("SIGINT received");
        c.cancel("later");
        assert_eq!(c.reason(), Some("SIGINT received"));
        assert!(!c.is_forced());
        d.force();
        assert!(c.is_forced());
    }
}
