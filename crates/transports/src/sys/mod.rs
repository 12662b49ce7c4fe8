//! OS glue of the transports and servers: CPU pinning, waiting on a
//! descriptor, a socket's receive low-water mark; shared memory ([`shmem`]) and descriptor passing
//! ([`fdpass`]). (Signals and child processes are the runner's.) Contract: the `unsafe` code of the
//! transports lives in this folder only, each module stating its contract;
//! each call either does what it says or returns the OS error.

use std::io;

pub use wirebench_load::os::pin_current_thread;

/// Pins the whole calling process's future threads to `cpus`: threads
/// inherit the mask of the thread that spawns them.
pub fn pin_process_threads(cpus: &[usize]) -> io::Result<()> {
    pin_current_thread(cpus)
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

/// Makes the TCP socket `fd` read as ready (and wake its reader) only once
/// `bytes` have arrived, or at its end, or when its receive buffer would
/// not hold them (the kernel's own exceptions). `bytes` must not be more
/// than will come, or the reader waits until its timeout.
pub fn set_recv_lowat(fd: std::os::fd::BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    use nix::libc::{SO_RCVLOWAT, SOL_SOCKET, c_int, setsockopt, socklen_t};
    use std::os::fd::AsRawFd;
    let value = c_int::try_from(bytes.max(1)).unwrap_or(c_int::MAX);
    // SAFETY: `fd` is open for as long as it is borrowed, and the option's
    // value is the c_int it points to, of the length given.
    let r = unsafe {
        setsockopt(
            fd.as_raw_fd(),
            SOL_SOCKET,
            SO_RCVLOWAT,
            (&raw const value).cast(),
            std::mem::size_of::<c_int>() as socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
