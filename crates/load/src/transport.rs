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
    /// Their payload bytes (no frame header).
    pub bytes: usize,
}

/// Something that opens connections for the load engine. Called on each
/// worker's own thread, inside its current-thread runtime.
pub trait Transport: Send + Sync + 'static {
    type Conn: Conn;
    fn pattern(&self) -> Pattern;
    /// Opens connection `index` of worker `worker`, handshake included.
    fn connect(&self, worker: usize, index: usize) -> impl Future<Output = io::Result<Self::Conn>>;
    /// A transport over several endpoints ([`crate::spread::Spread`]): the
    /// endpoint connection `index` of worker `worker` reaches, whose
    /// counts are kept apart. None: one endpoint.
    fn lane(&self, _worker: usize, _index: usize) -> Option<usize> {
        None
    }
}

pub trait Conn: 'static {
    type Tx: ConnTx;
    type Rx: ConnRx;
    fn split(self) -> (Self::Tx, Self::Rx);
}

pub trait ConnTx: 'static {
    /// Sends `n` requests (numbered in order by the transport); returns the
    /// payload bytes written (a frame's header is not payload: the run adds
    /// it to the wire bytes from the transport's spec).
    fn send(&mut self, n: usize) -> impl Future<Output = io::Result<usize>>;
}

pub trait ConnRx: 'static {
    /// Waits for at least one complete message; returns how many arrived.
    /// A closed connection is an error (`UnexpectedEof`).
    fn recv(&mut self) -> impl Future<Output = io::Result<Received>>;

    /// Transports of typed operations (a cache's GET and SET): what each
    /// response of the last `recv` was, in order, one per response. Empty
    /// (the default) for untyped transports, whose responses are counted
    /// as operations that succeeded.
    fn replies(&self) -> &[Reply] {
        &[]
    }
}

/// What one response of a typed request/response transport said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The operation type ("get", "set"...).
    pub op: &'static str,
    /// The request's bytes and the response's.
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Why it failed ("-ERR wrong type", "miss"); None when it succeeded.
    pub failure: Option<String>,
}

/// When a request was meant to leave and when it left, in nanoseconds
/// since the worker's epoch. A blocking transport carries them in its
/// requests and gets them back with the responses, so a receiving thread
/// times each response without sharing a queue with the sending thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    pub intended: u64,
    pub sent: u64,
}

/// A transport whose operations block the calling thread (shared-memory
/// rings, pipes): each connection gets its own threads, and every call
/// returns within a short slice (~10 ms) so that the thread can see the
/// run's end. Called on the worker's threads.
pub trait BlockingTransport: Send + Sync + 'static {
    type Conn: BlockingConn;
    fn pattern(&self) -> Pattern;
    fn connect(&self, worker: usize, index: usize) -> io::Result<Self::Conn>;
}

pub trait BlockingConn: Send + 'static {
    type Tx: BlockingTx;
    type Rx: BlockingRx;
    fn split(self) -> (Self::Tx, Self::Rx);
}

pub trait BlockingTx: Send + 'static {
    /// Sends one request per stamp, in order; waits at most a slice for
    /// room. Returns how many were sent (a prefix, maybe none) and the bytes.
    fn send(&mut self, stamps: &[Stamp]) -> io::Result<(usize, usize)>;
}

pub trait BlockingRx: Send + 'static {
    /// Waits at most a slice for messages. Pushes to `done` the stamps of
    /// the responses received (request/response only); `ops` is 0 when
    /// the slice passed without any. A closed peer is an error.
    fn recv(&mut self, done: &mut Vec<Stamp>) -> io::Result<Received>;
}
