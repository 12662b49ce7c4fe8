//! udp-echo: the client of any UDP echo server, and an embedded one
//! (`serve`). A connection is a UDP socket connected to the server: each
//! request is one datagram of the run's size, and its answer is the
//! datagram that comes back, in order. A datagram lost is a request never
//! answered, which the run's `--timeout` ends as a failure.

pub(crate) mod driver;
pub mod serve;
pub use serve::SERVER;

use crate::msgr::frame::{check_pattern, fill_pattern};
use std::io;
use std::sync::Arc;
use tokio::net::UdpSocket;
use wirebench_load::{Conn, ConnRx, ConnTx, Pattern, Received, Transport};

/// Answers read at once after the first, without waiting.
const BATCH: usize = 64;

/// The client: datagrams of `size` bytes to `addr`.
#[derive(Debug, Clone)]
pub struct UdpEchoClient {
    addr: String,
    size: usize,
    verify: bool,
}

impl UdpEchoClient {
    /// `addr` is `host:port`; `verify`: each datagram carries its
    /// sequence number's pattern, checked in its answer.
    pub fn new(addr: &str, size: usize, verify: bool) -> UdpEchoClient {
        UdpEchoClient {
            addr: addr.to_string(),
            size,
            verify,
        }
    }
}

impl Transport for UdpEchoClient {
    type Conn = UdpEchoConn;

    fn pattern(&self) -> Pattern {
        Pattern::RequestResponse
    }

    async fn connect(&self, _worker: usize, _index: usize) -> io::Result<UdpEchoConn> {
        let peer = tokio::net::lookup_host(&self.addr)
            .await?
            .next()
            .ok_or_else(|| io::Error::other(format!("{}: no address", self.addr)))?;
        // Bound where the server is reached from: loopback for loopback.
        let local = match (peer.is_ipv6(), peer.ip().is_loopback()) {
            (false, true) => "127.0.0.1:0",
            (false, false) => "0.0.0.0:0",
            (true, true) => "[::1]:0",
            (true, false) => "[::]:0",
        };
        let sock = UdpSocket::bind(local).await?;
        sock.connect(peer).await?;
        Ok(UdpEchoConn {
            sock: Arc::new(sock),
            size: self.size,
            verify: self.verify,
        })
    }
}

/// A socket connected to the server.
pub struct UdpEchoConn {
    sock: Arc<UdpSocket>,
    size: usize,
    verify: bool,
}

impl Conn for UdpEchoConn {
    type Tx = UdpEchoTx;
    type Rx = UdpEchoRx;

    fn split(self) -> (UdpEchoTx, UdpEchoRx) {
        (
            UdpEchoTx {
                sock: self.sock.clone(),
                buf: vec![0; self.size],
                seq: 0,
                verify: self.verify,
            },
            UdpEchoRx {
                sock: self.sock,
                // One byte more than an answer: a longer one is seen as such.
                buf: vec![0; self.size + 1],
                size: self.size,
                seq: 0,
                verify: self.verify,
            },
        )
    }
}

pub struct UdpEchoTx {
    sock: Arc<UdpSocket>,
    buf: Vec<u8>,
    seq: u64,
    verify: bool,
}

impl ConnTx for UdpEchoTx {
    async fn send(&mut self, n: usize) -> io::Result<usize> {
        for _ in 0..n {
            if self.verify {
                fill_pattern(self.seq, &mut self.buf);
            }
            let sent = self.sock.send(&self.buf).await?;
            if sent != self.buf.len() {
                return Err(io::Error::other(format!(
                    "sent {sent} bytes of a datagram of {}",
                    self.buf.len()
                )));
            }
            self.seq += 1;
        }
        Ok(n * self.buf.len())
    }
}

pub struct UdpEchoRx {
    sock: Arc<UdpSocket>,
    buf: Vec<u8>,
    size: usize,
    seq: u64,
    verify: bool,
}

impl UdpEchoRx {
    /// Checks one answer of `len` bytes (in `buf`).
    fn answer(&mut self, len: usize) -> io::Result<()> {
        if len != self.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("an answer of {len} bytes to a datagram of {}", self.size),
            ));
        }
        if self.verify && !check_pattern(self.seq, &self.buf[..len]) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("answer {} is not its request's bytes", self.seq),
            ));
        }
        self.seq += 1;
        Ok(())
    }
}

impl ConnRx for UdpEchoRx {
    async fn recv(&mut self) -> io::Result<Received> {
        let len = self.sock.recv(&mut self.buf).await?;
        self.answer(len)?;
        let mut got = Received { ops: 1, bytes: len };
        while got.ops < BATCH {
            match self.sock.try_recv(&mut self.buf) {
                Ok(len) => {
                    self.answer(len)?;
                    got.ops += 1;
                    got.bytes += len;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }
}
