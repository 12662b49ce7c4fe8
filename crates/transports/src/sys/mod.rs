//! OS glue of the transports and servers: CPU pinning, signal masks, dying
//! with the parent, waiting on a descriptor; shared memory ([`shmem`]) and
//! descriptor passing ([`fdpass`]). Contract: the `unsafe` code of the
//! transports lives in this folder only, each module stating its contract;
//! each call either does what it says or returns the OS error.

use nix::sys::signal::{SigSet, Signal};
use std::io;

pub use wirebench_load::os::pin_current_thread;

/// Pins the whole calling process's future threads to `cpus`: threads
/// inherit the mask of the thread that spawns them.
pub fn pin_process_threads(cpus: &[usize]) -> io::Result<()> {
    pin_current_thread(cpus)
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

fn termination_set() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set
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
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).map_err(io::Error::other)
}

pub mod fdpass;
pub mod shmem;

/// Waits up to `timeout` for `fd` to be readable (or closed); returns
/// whether it is.
pub fn wait_readable(
    fd: std::os::fd::BorrowedFd<'_>,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    match poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    ) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
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
