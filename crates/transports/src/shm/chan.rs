//! One direction of a session, whatever carries it: a shared-memory ring,
//! or (for comparison) a pipe, a Unix socket or a TCP loopback socket
//! carrying the same records. Every wait lasts at most [`SLICE`], after
//! which the caller sees whether the peer is gone or the run is over.

use super::ring::{Consumer, Producer, REC_HEADER, Rec};
use super::wake::Waiter;
use crate::sys;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

/// The longest a transport call waits before returning to its caller.
pub const SLICE: Duration = Duration::from_millis(10);

/// The most bytes buffered for one write on a descriptor channel.
const FD_BATCH: usize = 256 * 1024;

/// The session's control socket: it closes when the peer process ends,
/// however it ends, which is how a survivor learns that its peer died.
pub struct Peer(pub UnixStream);

impl Peer {
    pub fn gone(&self) -> bool {
        sys::fdpass::peer_closed(&self.0)
    }
}

fn peer_gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the peer closed the session (or died)",
    )
}

pub enum Tx {
    Ring {
        p: Producer,
        waiter: Waiter,
        peer: Arc<Peer>,
    },
    Fd {
        w: File,
        buf: Vec<u8>,
    },
}

impl Tx {
    /// Writes a record if there is room now (a descriptor always has room:
    /// the record is buffered until `flush`).
    #[inline]
    pub fn try_write(&mut self, rec: &Rec, payload: &[u8]) -> bool {
        match self {
            Tx::Ring { p, .. } => p.try_write(rec, payload),
            Tx::Fd { buf, .. } => {
                if !buf.is_empty() && buf.len() + REC_HEADER + payload.len() > FD_BATCH {
                    return false;
                }
                buf.extend_from_slice(&rec.to_bytes());
                buf.extend_from_slice(payload);
                true
            }
        }
    }

    /// Makes the records written visible to the peer (publishes the ring,
    /// or writes the buffer out, blocking while the kernel's buffer is full).
    #[inline]
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Tx::Ring { p, .. } => {
                p.publish();
                Ok(())
            }
            Tx::Fd { w, buf } => {
                if !buf.is_empty() {
                    w.write_all(buf)?;
                    buf.clear();
                }
                Ok(())
            }
        }
    }

    /// Waits up to a slice for room for a record of `len` bytes.
    pub fn wait_room(&mut self, len: u64) -> io::Result<bool> {
        match self {
            Tx::Ring { p, waiter, peer } => {
                if p.wait_room(waiter, len, SLICE) {
                    return Ok(true);
                }
                if peer.gone() {
                    return Err(peer_gone());
                }
                Ok(false)
            }
            Tx::Fd { .. } => Ok(true),
        }
    }
}

/// Both directions over one connected socket (Unix or TCP), its reads
/// returning within a slice.
pub fn socket_channel(sock: std::os::fd::OwnedFd, max_len: usize) -> io::Result<(Tx, Rx)> {
    let w = sock.try_clone()?;
    // SO_RCVTIMEO works on any socket: set it through a UnixStream view.
    let view = UnixStream::from(sock);
    view.set_read_timeout(Some(SLICE))?;
    let tx = Tx::Fd {
        w: w.into(),
        buf: Vec::new(),
    };
    let rx = Rx::fd(std::os::fd::OwnedFd::from(view).into(), false, max_len);
    Ok((tx, rx))
}

pub enum Rx {
    Ring {
        c: Consumer,
        waiter: Waiter,
        peer: Arc<Peer>,
        scratch: Vec<u8>,
    },
    Fd {
        r: File,
        /// A pipe has no receive timeout: poll it first.
        pipe: bool,
        buf: Vec<u8>,
        start: usize,
        end: usize,
        max_len: usize,
    },
}

impl Rx {
    /// A reader of `fd` (a socket with a receive timeout set, or a pipe)
    /// for records of at most `max_len` bytes.
    pub fn fd(r: File, pipe: bool, max_len: usize) -> Rx {
        let cap = (2 * (REC_HEADER + max_len)).max(256 * 1024);
        Rx::Fd {
            r,
            pipe,
            buf: vec![0; cap],
            start: 0,
            end: 0,
            max_len,
        }
    }

    /// Waits up to a slice for records, then hands each one available (at
    /// most `max`) to `f`, its payload read out of the channel. Returns how
    /// many; 0 when the slice passed without any.
    pub fn recv(
        &mut self,
        max: usize,
        mut f: impl FnMut(&Rec, &[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        match self {
            Rx::Ring {
                c,
                waiter,
                peer,
                scratch,
            } => {
                let mut n = 0;
                while n < max {
                    let Some(rec) = c.peek()? else {
                        if n > 0 {
                            break;
                        }
                        if c.wait_data(waiter, SLICE) {
                            continue;
                        }
                        if peer.gone() {
                            return Err(peer_gone());
                        }
                        return Ok(0);
                    };
                    let len = rec.len as usize;
                    if scratch.len() < len {
                        scratch.resize(len, 0);
                    }
                    c.take(&rec, &mut scratch[..len]);
                    let r = f(&rec, &scratch[..len]);
                    n += 1;
                    if r.is_err() {
                        c.release();
                        return r.map(|_| n);
                    }
                }
                c.release();
                Ok(n)
            }
            Rx::Fd {
                r,
                pipe,
                buf,
                start,
                end,
                max_len,
            } => {
                let mut n = 0;
                loop {
                    // Hand out the complete records buffered.
                    while n < max && *end - *start >= REC_HEADER {
                        let h: &[u8; REC_HEADER] = buf[*start..*start + REC_HEADER]
                            .try_into()
                            .expect("header bytes");
                        let rec = Rec::from_bytes(h);
                        let len = rec.len as usize;
                        if len > *max_len {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!("record of {len} bytes, above the session's {max_len}"),
                            ));
                        }
                        if *end - *start < REC_HEADER + len {
                            break;
                        }
                        let body = *start + REC_HEADER;
                        f(&rec, &buf[body..body + len])?;
                        *start = body + len;
                        n += 1;
                    }
                    if n > 0 {
                        return Ok(n);
                    }
                    // Make room, then read more.
                    if *start > 0 {
                        buf.copy_within(*start..*end, 0);
                        *end -= *start;
                        *start = 0;
                    }
                    if *pipe && !sys::wait_readable(r.as_fd(), SLICE)? {
                        return Ok(0);
                    }
                    match r.read(&mut buf[*end..]) {
                        Ok(0) => return Err(peer_gone()),
                        Ok(k) => *end += k,
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock
                                    | io::ErrorKind::TimedOut
                                    | io::ErrorKind::Interrupted
                            ) =>
                        {
                            return Ok(0);
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}
