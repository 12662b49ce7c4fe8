//! The load side of the shm transport: each engine connection is a session
//! (its own rings, its own server thread). Requests carry the engine's
//! stamps; the server echoes them, so the receiving thread times each
//! response on its own.

use super::chan::{Peer, Rx, Tx, socket_channel};
use super::proto::{Hello, PROTOCOL_VERSION, Welcome};
use super::ring::{self, KIND_DATA, KIND_REQUEST, KIND_RESPONSE, Rec, Shm};
use super::wake::Waiter;
use crate::sys::fdpass;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use wirebench_core::spec::{Channel, ShmMode as Mode, Wait};
use wirebench_load::transport::{
    BlockingConn, BlockingRx, BlockingTransport, BlockingTx, Pattern, Received, Stamp,
};
use wirebench_trace as trace;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShmClient {
    pub socket: PathBuf,
    pub hello: Hello,
}

impl ShmClient {
    pub fn new(
        socket: PathBuf,
        channel: Channel,
        mode: Mode,
        size: u64,
        ring: u64,
        wait: Wait,
        verify: bool,
    ) -> ShmClient {
        ShmClient {
            socket,
            hello: Hello {
                version: PROTOCOL_VERSION,
                channel,
                mode,
                size,
                ring,
                wait,
                verify,
            },
        }
    }

    /// Opens a session: the control socket, the server's descriptors, and
    /// the session's number (the server's; trace ids carry it, so that the
    /// client's and the server's match).
    fn open(&self) -> io::Result<(UnixStream, Vec<OwnedFd>, u64)> {
        let mut s = UnixStream::connect(&self.socket).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot reach the shm server at {}: {e}",
                    self.socket.display()
                ),
            )
        })?;
        let mut line = serde_json::to_vec(&self.hello).expect("serializable");
        line.push(b'\n');
        s.write_all(&line)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let (msg, fds) = fdpass::recv(&s)?;
        s.set_read_timeout(None)?;
        let w: Welcome = serde_json::from_slice(&msg)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad welcome: {e}")))?;
        if !w.ok {
            return Err(io::Error::other(format!(
                "the shm server refused the session: {}",
                w.error.unwrap_or_default()
            )));
        }
        Ok((s, fds, w.session))
    }
}

fn expect_fds(fds: Vec<OwnedFd>, n: usize) -> io::Result<Vec<OwnedFd>> {
    if fds.len() != n {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the server sent {} descriptors, expected {n}", fds.len()),
        ));
    }
    Ok(fds)
}

impl BlockingTransport for ShmClient {
    type Conn = ShmConn;

    fn pattern(&self) -> Pattern {
        match self.hello.mode {
            Mode::Nores => Pattern::SendOnly,
            Mode::Stream => Pattern::ReceiveOnly,
            Mode::Sync | Mode::Async => Pattern::RequestResponse,
        }
    }

    fn connect(&self, _worker: usize, _index: usize) -> io::Result<ShmConn> {
        let (ctl, fds, session) = self.open()?;
        let trace_base = session << 40;
        let peer = Arc::new(Peer(ctl));
        let h = &self.hello;
        let waiter = Waiter { wait: h.wait };
        let max = h.size as usize;
        let (tx, rx) = match h.channel {
            Channel::Shm => {
                let mut fds = expect_fds(fds, 1)?;
                let shm = Shm::attach(fds.remove(0), h.ring)?;
                // Spinning sides never sleep: no wake-up to check for.
                let notify = h.wait != Wait::Spin;
                let tx = Tx::Ring {
                    p: ring::Producer::new(shm.clone(), ring::REQUESTS, notify),
                    waiter,
                    peer: peer.clone(),
                };
                let rx = Rx::Ring {
                    c: ring::Consumer::new(shm, ring::RESPONSES, notify),
                    waiter,
                    peer: peer.clone(),
                    scratch: vec![0; max],
                };
                (tx, rx)
            }
            Channel::Pipe => {
                let mut fds = expect_fds(fds, 2)?;
                let resp_r = fds.pop().expect("two");
                let req_w = fds.pop().expect("two");
                let tx = Tx::Fd {
                    w: req_w.into(),
                    buf: Vec::new(),
                };
                (tx, Rx::fd(resp_r.into(), true, max))
            }
            Channel::Unix | Channel::Tcp => {
                let mut fds = expect_fds(fds, 1)?;
                socket_channel(fds.remove(0), max)?
            }
        };
        Ok(ShmConn {
            tx: ShmTx {
                trace_base,
                ends: h.mode == Mode::Nores,
                chan: tx,
                size: h.size,
                verify: h.verify,
                seq: 0,
                payload: vec![0; max],
                _peer: peer.clone(),
            },
            rx: ShmRx {
                trace_base,
                chan: rx,
                mode: h.mode,
                size: h.size,
                verify: h.verify,
                seq: 0,
                _peer: peer,
            },
        })
    }
}

pub struct ShmConn {
    tx: ShmTx,
    rx: ShmRx,
}

impl BlockingConn for ShmConn {
    type Tx = ShmTx;
    type Rx = ShmRx;
    fn split(self) -> (ShmTx, ShmRx) {
        (self.tx, self.rx)
    }
}

pub struct ShmTx {
    /// Trace ids: the server's session number in the high bits, the
    /// sequence number below.
    trace_base: u64,
    /// No response (nores): an operation ends when its request is sent.
    ends: bool,
    chan: Tx,
    size: u64,
    verify: bool,
    seq: u64,
    payload: Vec<u8>,
    /// Keeps the control socket open while either half lives.
    _peer: Arc<Peer>,
}

impl BlockingTx for ShmTx {
    fn send(&mut self, stamps: &[Stamp]) -> io::Result<(usize, usize)> {
        let mut n = 0;
        while n < stamps.len() {
            if self.verify {
                super::proto::fill_pattern(self.seq, &mut self.payload);
            }
            let rec = Rec {
                len: self.size as u32,
                kind: KIND_REQUEST,
                seq: self.seq,
                t0: stamps[n].intended,
                t1: stamps[n].sent,
            };
            if self.chan.try_write(&rec, &self.payload) {
                // Begins once written into the channel (a full ring
                // would write it again).
                if trace::sampled(self.seq) {
                    trace::record(trace::BEGIN, self.trace_base | self.seq);
                }
                self.seq += 1;
                n += 1;
                continue;
            }
            if n > 0 {
                break;
            }
            self.chan.flush()?;
            if !self.chan.wait_room(self.size)? {
                return Ok((0, 0));
            }
        }
        self.chan.flush()?;
        if trace::enabled() {
            // Sent: published to the server (and woken, if it sleeps).
            for seq in self.seq - n as u64..self.seq {
                if trace::sampled(seq) {
                    trace::record("request sent", self.trace_base | seq);
                    if self.ends {
                        trace::record(trace::END, self.trace_base | seq);
                    }
                }
            }
        }
        Ok((n, n * self.size as usize))
    }
}

pub struct ShmRx {
    trace_base: u64,
    chan: Rx,
    mode: Mode,
    size: u64,
    verify: bool,
    seq: u64,
    _peer: Arc<Peer>,
}

/// The most messages taken in one receive call.
const RECV_BATCH: usize = 1024;

impl BlockingRx for ShmRx {
    fn recv(&mut self, done: &mut Vec<Stamp>) -> io::Result<Received> {
        let (mode, size, verify, trace_base) = (self.mode, self.size, self.verify, self.trace_base);
        let seq = &mut self.seq;
        let kind = if mode == Mode::Stream {
            KIND_DATA
        } else {
            KIND_RESPONSE
        };
        let n = self.chan.recv(RECV_BATCH, |rec, payload| {
            let bad = |why: String| Err(io::Error::new(io::ErrorKind::InvalidData, why));
            if rec.kind != kind || rec.len as u64 != size {
                return bad(format!(
                    "protocol error: record of kind {} with {} bytes (expected kind {kind}, {size} bytes)",
                    rec.kind, rec.len
                ));
            }
            if rec.seq != *seq {
                return bad(format!(
                    "protocol error: message {} arrived, expected {}",
                    rec.seq, *seq
                ));
            }
            if verify && !super::proto::check_pattern(rec.seq, payload) {
                return bad(format!("message {}: payload corrupt", rec.seq));
            }
            if trace::sampled(rec.seq) {
                let id = trace_base | rec.seq;
                if kind == KIND_DATA {
                    // A streamed message starts at the server.
                    trace::record(trace::BEGIN, id);
                    trace::record("data received", id);
                } else {
                    trace::record("response received", id);
                }
                trace::record(trace::END, id);
            }
            *seq += 1;
            if kind == KIND_RESPONSE {
                done.push(Stamp {
                    intended: rec.t0,
                    sent: rec.t1,
                });
            }
            Ok(())
        })?;
        Ok(Received {
            ops: n,
            bytes: n * size as usize,
        })
    }
}
