//! The seam between the engine and a transport. A transport opens
//! connections; a connection splits into a sending half and a receiving
//! half, driven by two tasks so that a full socket in one direction never
//! blocks the other (a single task doing send-then-receive deadlocks once
//! depth x size exceeds the socket buffers).

use std::future::Future;
use std::io;

/// How a connection's operations complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Each request gets one response, in order (echo, rr). The engine keeps
    /// `depth` requests outstanding per connection and times each one.
    RequestResponse,
    /// Requests only (oneway): an operation completes when it is sent.
    SendOnly,
    /// The peer sends (stream): an operation is a message received.
    ReceiveOnly,
}

/// What one receive call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Received {
    /// Complete messages (responses, or stream frames).
    pub ops: usize,
    pub bytes: usize,
}

/// Something that opens connections for the load engine. Called on each
/// worker's own thread, inside its current-thread runtime.
pub trait Transport: Send + Sync + 'static {
    type Conn: Conn;
    fn pattern(&self) -> Pattern;
    /// Opens connection `index` of worker `worker`, handshake included.
    fn connect(&self, worker: usize, index: usize) -> impl Future<Output = io::Result<Self::Conn>>;
}

pub trait Conn: 'static {
    type Tx: ConnTx;
    type Rx: ConnRx;
    fn split(self) -> (Self::Tx, Self::Rx);
}

pub trait ConnTx: 'static {
    /// Sends `n` requests (numbered in order by the transport); returns the
    /// bytes written.
    fn send(&mut self, n: usize) -> impl Future<Output = io::Result<usize>>;
}

pub trait ConnRx: 'static {
    /// Waits for at least one complete message; returns how many arrived.
    /// A closed connection is an error (`UnexpectedEof`).
    fn recv(&mut self) -> impl Future<Output = io::Result<Received>>;
}
