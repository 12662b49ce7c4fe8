//! The msgr client: opens a connection, makes the handshake, and sends and
//! receives frames for the load engine. In `rr` mode it sends raw
//! fixed-size requests and counts raw fixed-size responses.

use super::frame::{
    self, FLAG_VERIFY, HEADER_LEN, Header, Hello, Kind, Status, VERSION, WELCOME_LEN, WRITE_CHUNK,
    Welcome,
};
use super::stream::{FrameBuf, ReadHalf, Stream, WriteHalf};
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wirebench_core::spec::{Endpoint, MsgrMode as Mode};
use wirebench_load::{Conn, ConnRx, ConnTx, Pattern, Received, Transport};
use wirebench_trace as trace;

/// A msgr client for the load engine.
#[derive(Debug, Clone)]
pub struct MsgrClient {
    endpoint: Endpoint,
    mode: Mode,
    size: usize,
    response_size: usize,
    verify: bool,
}

impl MsgrClient {
    pub fn new(endpoint: Endpoint, mode: Mode, size: usize, response_size: usize) -> MsgrClient {
        MsgrClient {
            endpoint,
            mode,
            size,
            response_size,
            verify: false,
        }
    }

    /// Fill payloads with a per-sequence pattern and check every payload received.
    pub fn verify(mut self, on: bool) -> MsgrClient {
        self.verify = on;
        self
    }

    fn hint(&self) -> &'static str {
        "it does not speak msgr v1; for a raw request/response server use --mode rr"
    }

    async fn handshake(&self, r: &mut ReadHalf, w: &mut WriteHalf) -> io::Result<()> {
        let hello = Hello {
            version: VERSION,
            mode: frame::mode_code(self.mode).expect("rr has no handshake"),
            flags: if self.verify { FLAG_VERIFY } else { 0 },
            size: self.size as u32,
            response_size: self.response_size as u32,
        };
        w.write_all(&hello.encode()).await?;
        let mut b = [0u8; WELCOME_LEN];
        match r.read_exact(&mut b).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(io::Error::other(format!(
                    "{} closed the connection during the msgr handshake: {}",
                    self.endpoint,
                    self.hint()
                )));
            }
            Err(e) => return Err(e),
        }
        let Some(welcome) = Welcome::decode(&b) else {
            return Err(io::Error::other(format!(
                "{} answered the msgr handshake with bytes that are not msgr: {}",
                self.endpoint,
                self.hint()
            )));
        };
        let ep = &self.endpoint;
        match welcome.status {
            s if s == Status::Ok as u8 => Ok(()),
            s if s == Status::UnsupportedVersion as u8 => Err(io::Error::other(format!(
                "{ep} speaks msgr version {}, this client speaks version {VERSION}: use the same wirebench version on both sides",
                welcome.version
            ))),
            s if s == Status::FrameTooLarge as u8 => Err(io::Error::other(format!(
                "{ep} refused --size {} / --response-size {}: its maximum frame is {} bytes (start it with a larger --max-frame)",
                self.size, self.response_size, welcome.max_frame
            ))),
            s if s == Status::BadMode as u8 => Err(io::Error::other(format!(
                "{ep} does not serve mode {}",
                self.mode
            ))),
            s => Err(io::Error::other(format!(
                "{ep} refused the handshake with status {s}"
            ))),
        }
    }
}

impl Transport for MsgrClient {
    type Conn = MsgrConn;

    fn pattern(&self) -> Pattern {
        match self.mode {
            Mode::Echo | Mode::Rr => Pattern::RequestResponse,
            Mode::Oneway => Pattern::SendOnly,
            Mode::Stream => Pattern::ReceiveOnly,
        }
    }

    async fn connect(&self, _worker: usize, _index: usize) -> io::Result<MsgrConn> {
        // Trace ids: connections in the order this process opened them.
        static CONNS: trace::Connections = trace::Connections::new();
        let trace_base = CONNS.next_base();
        let s = Stream::connect(&self.endpoint).await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot connect to {}: {e}", self.endpoint),
            )
        })?;
        let (mut r, mut w) = s.into_split();
        if self.mode != Mode::Rr {
            self.handshake(&mut r, &mut w).await?;
        }
        let (send_kind, send_size, recv_kind, recv_size) = match self.mode {
            Mode::Echo => (Kind::Request, self.size, Kind::Response, self.response_size),
            Mode::Oneway => (Kind::OneWay, self.size, Kind::Response, 0),
            Mode::Stream => (Kind::Request, 0, Kind::Stream, self.size),
            Mode::Rr => (Kind::Request, self.size, Kind::Response, self.response_size),
        };
        let raw = self.mode == Mode::Rr;
        let frame_len = if raw {
            recv_size
        } else {
            HEADER_LEN + recv_size
        };
        Ok(MsgrConn {
            tx: MsgrTx {
                trace_base,
                traced: !raw && self.mode != Mode::Stream,
                w,
                kind: send_kind,
                size: send_size,
                verify: self.verify,
                raw,
                seq: 0,
                buf: Vec::new(),
            },
            rx: MsgrRx {
                trace_base,
                r,
                fb: FrameBuf::with_capacity(if raw {
                    0
                } else {
                    (256 << 10).max(2 * frame_len)
                }),
                kind: recv_kind,
                len: recv_size,
                verify: self.verify,
                raw,
                next_seq: 0,
                raw_pending: 0,
                scratch: if raw { vec![0; 64 << 10] } else { Vec::new() },
            },
        })
    }
}

pub struct MsgrConn {
    tx: MsgrTx,
    rx: MsgrRx,
}

impl Conn for MsgrConn {
    type Tx = MsgrTx;
    type Rx = MsgrRx;
    fn split(self) -> (MsgrTx, MsgrRx) {
        (self.tx, self.rx)
    }
}

pub struct MsgrTx {
    /// Trace ids: the connection in the high bits, the sequence number below.
    trace_base: u64,
    /// Whether what is sent is traced: requests and one-way messages, not
    /// the request that starts a stream (nor rr's raw bytes).
    traced: bool,
    w: WriteHalf,
    kind: Kind,
    size: usize,
    verify: bool,
    raw: bool,
    seq: u64,
    /// Frames are built here; payloads stay zero unless verifying.
    buf: Vec<u8>,
}

impl ConnTx for MsgrTx {
    async fn send(&mut self, n: usize) -> io::Result<usize> {
        let frame = if self.raw {
            self.size
        } else {
            HEADER_LEN + self.size
        };
        // At most WRITE_CHUNK bytes (or one frame) are built at a time.
        let per_write = (WRITE_CHUNK / frame).max(1);
        let mut left = n;
        while left > 0 {
            let k = left.min(per_write);
            let total = k * frame;
            if self.buf.len() < total {
                self.buf.resize(total, 0);
            }
            if !self.raw {
                for f in self.buf[..total].chunks_mut(frame) {
                    Header {
                        kind: self.kind,
                        flags: 0,
                        len: self.size as u32,
                        seq: self.seq,
                    }
                    .encode_into(f);
                    if self.verify {
                        frame::fill_pattern(self.seq, &mut f[HEADER_LEN..]);
                    }
                    if self.traced && trace::sampled(self.seq) {
                        trace::record(trace::BEGIN, self.trace_base | self.seq);
                    }
                    self.seq += 1;
                }
            }
            self.w.write_all(&self.buf[..total]).await.map_err(lost)?;
            if self.traced && trace::enabled() {
                for seq in self.seq - k as u64..self.seq {
                    if trace::sampled(seq) {
                        trace::record("request sent", self.trace_base | seq);
                        if self.kind == Kind::OneWay {
                            trace::record(trace::END, self.trace_base | seq);
                        }
                    }
                }
            }
            left -= k;
        }
        // The payload: the run adds the headers to the wire bytes.
        Ok(n * self.size)
    }
}

pub struct MsgrRx {
    trace_base: u64,
    r: ReadHalf,
    fb: FrameBuf,
    kind: Kind,
    len: usize,
    verify: bool,
    raw: bool,
    next_seq: u64,
    /// rr mode: bytes of a response received so far, and the read buffer.
    raw_pending: usize,
    scratch: Vec<u8>,
}

/// Names a lost connection plainly: a server that dies with unread data
/// resets the connection instead of closing it.
fn lost(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::ConnectionReset => {
            io::Error::new(e.kind(), format!("the server reset the connection ({e})"))
        }
        io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => {
            io::Error::new(e.kind(), format!("the server closed the connection ({e})"))
        }
        _ => e,
    }
}

fn protocol(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("protocol error: {msg}"))
}

impl ConnRx for MsgrRx {
    async fn recv(&mut self) -> io::Result<Received> {
        if self.raw {
            loop {
                let n = self.r.read(&mut self.scratch).await.map_err(lost)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ));
                }
                // Raw bytes need no parsing: count whole responses.
                self.raw_pending += n;
                let ops = self.raw_pending / self.len.max(1);
                self.raw_pending %= self.len.max(1);
                if ops > 0 {
                    return Ok(Received {
                        ops,
                        bytes: ops * self.len,
                    });
                }
            }
        }
        let mut ops = 0;
        let mut bytes = 0;
        loop {
            while let Some((h, payload)) = self
                .fb
                .next_frame(self.len as u64)
                .map_err(|e| protocol(e.to_string()))?
            {
                if h.kind != self.kind || h.seq != self.next_seq || h.len as usize != self.len {
                    return Err(protocol(format!(
                        "expected {:?} #{} of {} bytes, got {:?} #{} of {} bytes",
                        self.kind, self.next_seq, self.len, h.kind, h.seq, h.len
                    )));
                }
                if self.verify && !frame::check_pattern(h.seq, &self.fb.bytes()[payload]) {
                    return Err(protocol(format!(
                        "payload of {:?} #{} is corrupt",
                        h.kind, h.seq
                    )));
                }
                if trace::sampled(h.seq) {
                    let id = self.trace_base | h.seq;
                    if self.kind == Kind::Stream {
                        // A streamed frame is traced from its arrival.
                        trace::record(trace::BEGIN, id);
                        trace::record("data received", id);
                    } else {
                        trace::record("response received", id);
                    }
                    trace::record(trace::END, id);
                }
                self.next_seq += 1;
                ops += 1;
                bytes += self.len;
            }
            if ops > 0 {
                return Ok(Received { ops, bytes });
            }
            if self.fb.fill(&mut self.r).await.map_err(lost)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
        }
    }
}
