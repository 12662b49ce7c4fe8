//! Passing file descriptors (a memfd, pipe ends, a socket) with a short
//! message over a connected Unix stream socket (SCM_RIGHTS).
//!
//! Contract: [`send`] sends `msg` (at most [`MAX_MSG`] bytes) and `fds` in
//! one `sendmsg`; [`recv`] returns them from one `recvmsg`, the descriptors
//! owned (close-on-exec). A message cut short or descriptors dropped by the
//! kernel are errors, never a partial success.

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

pub const MAX_MSG: usize = 4096;
const MAX_FDS: usize = 4;

pub fn send(sock: &UnixStream, msg: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    assert!(msg.len() <= MAX_MSG && fds.len() <= MAX_FDS && !msg.is_empty());
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let cmsg = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage] = if raw.is_empty() { &[] } else { &cmsg };
    let n = sendmsg::<()>(
        sock.as_raw_fd(),
        &[IoSlice::new(msg)],
        cmsgs,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map_err(io::Error::from)?;
    if n != msg.len() {
        return Err(io::Error::other("control message sent in part"));
    }
    Ok(())
}

/// Receives one message and the descriptors sent with it.
pub fn recv(sock: &UnixStream) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut buf = vec![0u8; MAX_MSG];
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let (n, raw) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        let mut raw = Vec::new();
        for c in msg.cmsgs().map_err(io::Error::from)? {
            if let ControlMessageOwned::ScmRights(fds) = c {
                raw.extend(fds);
            }
        }
        (msg.bytes, raw)
    };
    // SAFETY: the kernel just installed these descriptors in this process
    // for us; nobody else owns them.
    let fds = raw
        .into_iter()
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the peer closed the control socket",
        ));
    }
    buf.truncate(n);
    Ok((buf, fds))
}

/// Whether the peer of a connected stream socket has closed it (or died):
/// a non-blocking peek that reads nothing.
pub fn peer_closed(sock: &UnixStream) -> bool {
    let mut b = [0u8; 1];
    match nix::sys::socket::recv(
        sock.as_raw_fd(),
        &mut b,
        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(0) => true,
        Ok(_) => false,
        Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EINTR) => false,
        Err(_) => true,
    }
}
