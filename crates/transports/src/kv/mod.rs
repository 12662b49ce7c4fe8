//! Key-value stores: Redis (RESP2, RESP3) and memcached (text, meta).
//! Each connection pipelines `depth` commands; the engine times every
//! reply against its request and counts it by operation type (get, set,
//! incr), a miss or a server error by its cause. Keys are
//! `<prefix><number>`, picked by the run's distribution; a key's value
//! follows from its number alone (so `--verify` can check every GET, even
//! while other connections SET).

pub(crate) mod driver;

/// No embedded server: a run measures the real one (`--target`).
pub static SERVER: Option<crate::server::Server> = None;
pub mod memcache;
pub mod reply;
pub mod resp;

pub use reply::{Answer, ReplyError};

use crate::keys::KeyPicker;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{Endpoint, KvMode, KvProtocol, KvSpec};
use wirebench_load::{Conn, ConnRx, ConnTx, Pattern, Received, Reply, Transport};
use wirebench_trace as trace;

/// One operation of a key-value run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    Get,
    Set,
    Incr,
}

impl KvOp {
    pub fn name(self) -> &'static str {
        match self {
            KvOp::Get => "get",
            KvOp::Set => "set",
            KvOp::Incr => "incr",
        }
    }
}

/// A Redis user and password (the password from $REDISCLI_AUTH).
#[derive(Clone)]
pub struct Auth {
    pub user: Option<String>,
    pub password: String,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Auth {{ user: {:?}, password: <hidden> }}", self.user)
    }
}

/// The values of a run: key `k` gets `size_of(k)` bytes of a fixed
/// pattern, starting at an offset of its own.
#[derive(Debug)]
struct Values {
    pattern: Vec<u8>,
}

const OFFSETS: u64 = 251;

impl Values {
    fn new(max: u64) -> Values {
        let len = usize::try_from(max + OFFSETS).expect("checked: at most 512MiB");
        Values {
            pattern: (0..len).map(|i| (i % 253) as u8).collect(),
        }
    }

    fn of(&self, spec: &KvSpec, key: u64) -> &[u8] {
        let size = usize::try_from(spec.sizes.size_of(key)).expect("checked: at most 512MiB");
        let at = usize::try_from(key % OFFSETS).expect("below 251");
        &self.pattern[at..at + size]
    }
}

/// A connection's choices: the operation of a mixed run, and the key.
struct Picker(KeyPicker);

impl Picker {
    fn new(spec: &KvSpec, seed: u64, conn: u64, conns: u64) -> Picker {
        Picker(KeyPicker::new(spec.key_dist, spec.keys, seed, conn, conns))
    }

    fn op(&mut self, spec: &KvSpec) -> KvOp {
        match spec.mode {
            KvMode::Get => KvOp::Get,
            KvMode::Set => KvOp::Set,
            KvMode::Incr => KvOp::Incr,
            KvMode::Mixed => {
                let (sets, gets) = (spec.ratio.0, spec.ratio.1);
                if self.0.ratio(sets, sets + gets) {
                    KvOp::Set
                } else {
                    KvOp::Get
                }
            }
        }
    }

    fn key(&mut self, _spec: &KvSpec) -> u64 {
        self.0.key()
    }
}

/// The client of a key-value run: what every connection shares.
#[derive(Debug)]
pub struct KvClient {
    addr: String,
    db: u32,
    auth: Option<Auth>,
    pub spec: KvSpec,
    verify: bool,
    seed: u64,
    conns_per_client: u64,
    conns: u64,
    values: Values,
    /// The longest reply a connection accepts (the largest value, plus room).
    max_reply: usize,
}

impl KvClient {
    /// The client of `spec` against `endpoint` (redis:// or memcached://).
    pub fn new(
        endpoint: &Endpoint,
        spec: KvSpec,
        auth: Option<Auth>,
        verify: bool,
        clients: u64,
        conns_per_client: u64,
    ) -> Result<KvClient, String> {
        let (addr, db) = match endpoint {
            Endpoint::Redis { addr, db, .. } => (addr.clone(), *db),
            Endpoint::Addr { scheme, addr } if scheme == "memcached" => (addr.clone(), 0),
            other => return Err(format!("{other}: not a key-value endpoint")),
        };
        let memcached = endpoint.scheme() == "memcached";
        if memcached != matches!(spec.protocol, KvProtocol::Text | KvProtocol::Meta) {
            return Err(format!("{endpoint}: does not speak {:?}", spec.protocol));
        }
        let max = spec.sizes.max();
        Ok(KvClient {
            addr,
            db,
            auth,
            verify,
            seed: 0x5eed,
            conns_per_client,
            conns: clients * conns_per_client,
            values: Values::new(max),
            max_reply: usize::try_from(max).unwrap_or(usize::MAX) + 64 * 1024,
            spec,
        })
    }

    fn redis(&self) -> bool {
        matches!(self.spec.protocol, KvProtocol::Resp2 | KvProtocol::Resp3)
    }

    /// Connects and says hello: RESP3's HELLO, AUTH, SELECT.
    async fn open(&self) -> io::Result<KvConn> {
        let stream = TcpStream::connect(self.addr.as_str())
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("connect to {}: {e}", self.addr)))?;
        stream.set_nodelay(true)?;
        let (r, w) = stream.into_split();
        let mut rx = KvRx {
            r,
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            queue: Rc::new(RefCell::new(VecDeque::new())),
            client: None,
            replies: Vec::new(),
            max_reply: self.max_reply,
            redis: self.redis(),
        };
        let mut w = w;
        if self.redis() {
            let mut hello: Vec<Vec<u8>> = Vec::new();
            let mut what = Vec::new();
            let pass = self.auth.as_ref().map(|a| {
                (
                    a.user.clone().unwrap_or_else(|| "default".into()),
                    a.password.clone(),
                )
            });
            if self.spec.protocol == KvProtocol::Resp3 {
                let mut args: Vec<&[u8]> = vec![b"HELLO", b"3"];
                if let Some((u, p)) = &pass {
                    args.extend([b"AUTH".as_slice(), u.as_bytes(), p.as_bytes()]);
                }
                let mut out = Vec::new();
                resp::command(&mut out, &args);
                hello.push(out);
                what.push("HELLO 3");
            } else if let Some((u, p)) = &pass {
                let mut out = Vec::new();
                resp::command(&mut out, &[b"AUTH", u.as_bytes(), p.as_bytes()]);
                hello.push(out);
                what.push("AUTH");
            }
            if self.db != 0 {
                let mut out = Vec::new();
                resp::command(&mut out, &[b"SELECT", self.db.to_string().as_bytes()]);
                hello.push(out);
                what.push("SELECT");
            }
            for (cmd, what) in hello.iter().zip(what) {
                w.write_all(cmd).await?;
                if let Answer::Failed(cause) = rx.next_answer().await? {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("{what} refused by redis://{}: {cause}", self.addr),
                    ));
                }
            }
        }
        Ok(KvConn { r: rx, w })
    }
}

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A request in flight: what its reply is checked against.
#[derive(Debug, Clone, Copy)]
struct Pending {
    op: KvOp,
    key: u64,
    bytes_out: u64,
    /// Its trace id, when it is traced.
    traced: Option<u64>,
}

/// A connection, before the engine splits it.
pub struct KvConn {
    r: KvRx,
    w: OwnedWriteHalf,
}

/// The client of one run on the engine (shared by its connections).
#[derive(Debug, Clone)]
pub struct KvTransport(pub Arc<KvClient>);

impl Transport for KvTransport {
    type Conn = KvBound;
    fn pattern(&self) -> Pattern {
        Pattern::RequestResponse
    }
    async fn connect(&self, worker: usize, index: usize) -> io::Result<KvBound> {
        let c = &self.0;
        let conn = worker as u64 * c.conns_per_client + index as u64;
        let k = c.open().await?;
        Ok(KvBound {
            conn: k,
            picker: Picker::new(&c.spec, c.seed, conn, c.conns),
            client: c.clone(),
        })
    }
}

/// A connection of a run: its socket, its picker and the client.
pub struct KvBound {
    conn: KvConn,
    picker: Picker,
    client: Arc<KvClient>,
}

impl Conn for KvBound {
    type Tx = KvTx;
    type Rx = KvRx;
    fn split(self) -> (KvTx, KvRx) {
        let mut rx = self.conn.r;
        rx.client = Some(self.client.clone());
        // Trace ids: connections in the order this process split them, in
        // the high bits; the request's number on its connection below.
        static CONNS: trace::Connections = trace::Connections::new();
        let tx = KvTx {
            trace_base: CONNS.next_base(),
            seq: 0,
            unsent: Vec::new(),
            w: self.conn.w,
            out: Vec::new(),
            key: String::new(),
            picker: Some(self.picker),
            queue: rx.queue.clone(),
            client: self.client,
        };
        (tx, rx)
    }
}

pub struct KvTx {
    trace_base: u64,
    seq: u64,
    /// The traced requests encoded and not yet written.
    unsent: Vec<u64>,
    w: OwnedWriteHalf,
    out: Vec<u8>,
    key: String,
    picker: Option<Picker>,
    queue: Rc<RefCell<VecDeque<Pending>>>,
    client: Arc<KvClient>,
}

impl KvTx {
    /// Names key number `key` in `self.key`: `<prefix><key>`, or for a
    /// counter (INCR) `<prefix>n:<key>`.
    fn name_key(&mut self, counter: bool, key: u64) {
        self.key.clear();
        self.key.push_str(&self.client.spec.prefix);
        if counter {
            self.key.push_str("n:");
        }
        self.key.push_str(itoa::Buffer::new().format(key));
    }

    /// Appends the command of `op` on key number `key` to the output.
    fn encode(&mut self, op: KvOp, key: u64) {
        self.name_key(op == KvOp::Incr, key);
        let c = &self.client;
        let before = self.out.len();
        let k = self.key.as_bytes();
        let meta = c.spec.protocol == KvProtocol::Meta;
        match (c.redis(), op) {
            (true, KvOp::Get) => resp::command(&mut self.out, &[b"GET", k]),
            (true, KvOp::Set) => {
                resp::command(&mut self.out, &[b"SET", k, c.values.of(&c.spec, key)])
            }
            (true, KvOp::Incr) => resp::command(&mut self.out, &[b"INCR", k]),
            (false, KvOp::Get) => memcache::get(&mut self.out, meta, k),
            (false, KvOp::Set) => memcache::set(&mut self.out, meta, k, c.values.of(&c.spec, key)),
            (false, KvOp::Incr) => memcache::incr(&mut self.out, meta, k),
        }
        let traced = trace::sampled(self.seq).then_some(self.trace_base | self.seq);
        self.seq += 1;
        if let Some(id) = traced {
            trace::record(trace::BEGIN, id);
            self.unsent.push(id);
        }
        self.queue.borrow_mut().push_back(Pending {
            op,
            key,
            bytes_out: (self.out.len() - before) as u64,
            traced,
        });
    }

    /// Writes what was encoded; returns the bytes.
    async fn flush(&mut self) -> io::Result<usize> {
        let n = self.out.len();
        self.w.write_all(&self.out).await?;
        self.out.clear();
        for id in self.unsent.drain(..) {
            trace::record("request sent", id);
        }
        Ok(n)
    }
}

impl ConnTx for KvTx {
    async fn send(&mut self, n: usize) -> io::Result<usize> {
        let mut picker = self.picker.take().expect("a picker");
        for _ in 0..n {
            let op = picker.op(&self.client.spec);
            let key = picker.key(&self.client.spec);
            self.encode(op, key);
        }
        self.picker = Some(picker);
        self.flush().await
    }
}

pub struct KvRx {
    r: OwnedReadHalf,
    buf: Vec<u8>,
    start: usize,
    queue: Rc<RefCell<VecDeque<Pending>>>,
    client: Option<Arc<KvClient>>,
    replies: Vec<Reply>,
    max_reply: usize,
    redis: bool,
}

impl KvRx {
    fn parse(&self) -> Result<Option<(Answer<'_>, usize)>, ReplyError> {
        let buf = &self.buf[self.start..];
        if self.redis {
            resp::parse(buf, self.max_reply)
        } else {
            memcache::parse(buf, self.max_reply)
        }
    }

    /// Reads more bytes; the buffer keeps at most one incomplete reply.
    async fn fill(&mut self) -> io::Result<()> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        let n = self.r.read_buf(&mut self.buf).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        Ok(())
    }

    /// The next reply's answer, owned (the handshake's and prepare's).
    async fn next_answer(&mut self) -> io::Result<Answer<'static>> {
        loop {
            if let Some((a, n)) = self.parse()? {
                let owned = match a {
                    Answer::Skip => {
                        self.start += n;
                        continue;
                    }
                    Answer::Value(_) => Answer::Done,
                    Answer::Done => Answer::Done,
                    Answer::Miss => Answer::Miss,
                    Answer::Int(i) => Answer::Int(i),
                    Answer::Failed(c) => Answer::Failed(c),
                };
                self.start += n;
                return Ok(owned);
            }
            self.fill().await?;
        }
    }

    /// What `answer` says of the request it answers.
    fn judge(
        client: &KvClient,
        p: Pending,
        answer: &Answer<'_>,
        bytes_in: u64,
    ) -> io::Result<Reply> {
        let failure = match (p.op, answer) {
            (_, Answer::Failed(cause)) => Some(cause.clone()),
            (KvOp::Get, Answer::Value(v)) => {
                if client.verify {
                    let want = client.values.of(&client.spec, p.key);
                    if *v != want {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "verify: GET of key {}{} returned {} bytes that differ from the {} bytes SET writes",
                                client.spec.prefix,
                                p.key,
                                v.len(),
                                want.len()
                            ),
                        ));
                    }
                }
                None
            }
            (KvOp::Get | KvOp::Incr, Answer::Miss) => Some("miss".to_string()),
            (KvOp::Set, Answer::Done) | (KvOp::Incr, Answer::Int(_) | Answer::Done) => None,
            (op, a) => Some(
                format!("unexpected reply to {}: {a:?}", op.name())
                    .chars()
                    .take(100)
                    .collect(),
            ),
        };
        Ok(Reply {
            op: p.op.name(),
            bytes_out: p.bytes_out,
            bytes_in,
            failure,
        })
    }
}

impl ConnRx for KvRx {
    async fn recv(&mut self) -> io::Result<Received> {
        self.replies.clear();
        let client = self.client.clone().expect("split sets the client");
        let mut bytes = 0;
        loop {
            while let Some((answer, n)) = self.parse()? {
                if answer != Answer::Skip {
                    let p = self.queue.borrow_mut().pop_front().ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            "protocol error: a reply to no request",
                        )
                    })?;
                    if let Some(id) = p.traced {
                        trace::record("response received", id);
                        trace::record(trace::END, id);
                    }
                    let reply = KvRx::judge(&client, p, &answer, n as u64)?;
                    self.replies.push(reply);
                }
                self.start += n;
                bytes += n;
            }
            if !self.replies.is_empty() {
                return Ok(Received {
                    ops: self.replies.len(),
                    bytes,
                });
            }
            self.fill().await?;
        }
    }

    fn replies(&self) -> &[Reply] {
        &self.replies
    }
}

/// Connects once and asks for a key: the endpoint answers, in the
/// protocol, and the credentials are accepted. Bounded by `timeout`.
pub async fn preflight(client: &Arc<KvClient>, timeout: Duration) -> Result<(), String> {
    let t = KvTransport(client.clone());
    let what = if client.redis() { "redis" } else { "memcached" };
    let check = async {
        let conn = t.connect(0, 0).await.map_err(|e| e.to_string())?;
        let (mut tx, mut rx) = conn.split();
        tx.encode(KvOp::Get, 0);
        tx.flush().await.map_err(|e| e.to_string())?;
        rx.recv().await.map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                format!("the server closed the connection on a GET: is it a {what} server?")
            }
            _ => format!("{e}: is it a {what} server?"),
        })?;
        Ok(())
    };
    match tokio::time::timeout(timeout, check).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "no answer in {} s: is it a {what} server?",
            timeout.as_secs_f64()
        )),
    }
}

/// Commands of the prepare phase in flight per connection.
const PREPARE_BATCH: u64 = 256;
/// Connections of the prepare phase.
const PREPARE_CONNS: u64 = 4;

/// Whether the run needs a prepare phase: reads need their keys written,
/// memcached's incr its counters.
pub fn needs_prepare(spec: &KvSpec) -> bool {
    spec.mode.reads()
        || (spec.mode == KvMode::Incr
            && matches!(spec.protocol, KvProtocol::Text | KvProtocol::Meta))
}

/// Writes every key the run reads (or every counter memcached's incr
/// needs), over a few pipelined connections. A batch that makes no
/// progress for `timeout` fails the phase (a silent server never hangs it).
pub async fn prepare(client: &Arc<KvClient>, timeout: Duration) -> Result<PhaseReport, String> {
    let began = Instant::now();
    let spec = &client.spec;
    let counters = spec.mode == KvMode::Incr;
    let conns = PREPARE_CONNS.min(spec.keys);
    let mut tasks = Vec::new();
    for c in 0..conns {
        let t = KvTransport(client.clone());
        let (from, to) = (spec.keys * c / conns, spec.keys * (c + 1) / conns);
        tasks.push(async move {
            let silent = || {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no progress in {} s", timeout.as_secs_f64()),
                )
            };
            let conn = tokio::time::timeout(timeout, t.connect(0, 0))
                .await
                .map_err(|_| silent())??;
            let (mut tx, mut rx) = conn.split();
            let (mut bytes, mut errors) = (0u64, 0u64);
            let mut key = from;
            while key < to {
                let end = (key + PREPARE_BATCH).min(to);
                for k in key..end {
                    if counters {
                        tx.name_key(true, k);
                        let meta = tx.client.spec.protocol == KvProtocol::Meta;
                        let before = tx.out.len();
                        memcache::set(&mut tx.out, meta, tx.key.as_bytes(), b"0");
                        tx.queue.borrow_mut().push_back(Pending {
                            op: KvOp::Set,
                            key: k,
                            bytes_out: (tx.out.len() - before) as u64,
                            traced: None,
                        });
                    } else {
                        tx.encode(KvOp::Set, k);
                    }
                }
                bytes += tokio::time::timeout(timeout, tx.flush())
                    .await
                    .map_err(|_| silent())?? as u64;
                let mut left = end - key;
                while left > 0 {
                    tokio::time::timeout(timeout, rx.recv())
                        .await
                        .map_err(|_| silent())??;
                    for r in rx.replies() {
                        errors += u64::from(r.failure.is_some());
                    }
                    left -= rx.replies().len() as u64;
                }
                key = end;
            }
            io::Result::Ok((bytes, errors))
        });
    }
    let (mut bytes, mut errors) = (0, 0);
    for r in futures_util::future::join_all(tasks).await {
        let (b, e) = r.map_err(|e| format!("prepare: {e}"))?;
        bytes += b;
        errors += e;
    }
    if errors > 0 {
        return Err(format!(
            "prepare: the server refused {errors} of the {} SETs",
            spec.keys
        ));
    }
    Ok(PhaseReport {
        objects: spec.keys,
        bytes,
        seconds: began.elapsed().as_secs_f64(),
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_core::spec::{KeyDist, Ratio, SizeSpec};

    fn spec(dist: KeyDist, mode: KvMode) -> KvSpec {
        KvSpec {
            mode,
            protocol: KvProtocol::Resp2,
            ratio: Ratio(1, 3),
            keys: 1000,
            key_dist: dist,
            sizes: SizeSpec::List(vec![10, 20]),
            prefix: "p:".into(),
        }
    }

    #[test]
    fn keys_follow_their_distribution() {
        let s = spec(KeyDist::Zipf(0.99), KvMode::Mixed);
        let mut p = Picker::new(&s, 1, 0, 1);
        let mut hits = vec![0u32; 1000];
        let mut sets = 0;
        for _ in 0..100_000 {
            hits[p.key(&s) as usize] += 1;
            sets += u32::from(p.op(&s) == KvOp::Set);
        }
        // Zipf 0.99 over 1000 keys: key 0 takes about 13%, key 9 a tenth of it.
        assert!((11_000..15_000).contains(&hits[0]), "{}", hits[0]);
        assert!(hits[0] > 5 * hits[9], "{} vs {}", hits[0], hits[9]);
        assert!(
            (23_000..27_000).contains(&sets),
            "{sets} sets of 100000 at 1:3"
        );

        let u = spec(KeyDist::Uniform, KvMode::Get);
        let mut p = Picker::new(&u, 1, 0, 1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..100_000 {
            hits[p.key(&u) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (40..200).contains(&h)));

        let q = spec(KeyDist::Sequential, KvMode::Get);
        let mut p = Picker::new(&q, 1, 1, 4);
        let first: Vec<u64> = (0..3).map(|_| p.key(&q)).collect();
        assert_eq!(first, vec![250, 251, 252]);
    }

    #[test]
    fn a_keys_value_follows_from_its_number() {
        let s = spec(KeyDist::Uniform, KvMode::Get);
        let v = Values::new(s.sizes.max());
        assert_eq!(v.of(&s, 0).len(), 10);
        assert_eq!(v.of(&s, 1).len(), 20);
        assert_ne!(v.of(&s, 2), v.of(&s, 4));
        assert_eq!(v.of(&s, 2), v.of(&s, 2));
    }
}

#[cfg(test)]
mod props {
    use super::{Answer, memcache, resp};
    use proptest::prelude::*;

    fn parse(
        b: &[u8],
        max: usize,
        redis: bool,
    ) -> Result<Option<(Answer<'_>, usize)>, super::ReplyError> {
        if redis {
            resp::parse(b, max)
        } else {
            memcache::parse(b, max)
        }
    }

    /// Reads every reply of `buf` in turn, as a connection would.
    fn read_all(buf: &[u8], max: usize, redis: bool) -> Result<usize, super::ReplyError> {
        let mut at = 0;
        let mut n = 0;
        loop {
            let r = if redis {
                resp::parse(&buf[at..], max)?
            } else {
                memcache::parse(&buf[at..], max)?
            };
            let Some((a, used)) = r else { return Ok(n) };
            assert!(used > 0 && at + used <= buf.len());
            if let Answer::Value(v) = a {
                assert!(v.len() <= max);
            }
            at += used;
            n += 1;
        }
    }

    /// Bytes that look like replies: fragments of both protocols, mixed.
    fn replyish() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"+OK\r\n".to_vec()),
            Just(b"$5\r\nhello\r\n".to_vec()),
            Just(b"$-1\r\n".to_vec()),
            Just(b"*2\r\n".to_vec()),
            Just(b"%1\r\n".to_vec()),
            Just(b"|1\r\n".to_vec()),
            Just(b">2\r\n".to_vec()),
            Just(b":12\r\n".to_vec()),
            Just(b"VALUE k 0 3\r\nabc\r\nEND\r\n".to_vec()),
            Just(b"VA 2\r\nab\r\n".to_vec()),
            Just(b"END\r\n".to_vec()),
            Just(b"STORED\r\n".to_vec()),
            Just(b"\r\n".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases(2000)))]

        /// Whatever a peer sends, the readers neither panic nor claim more
        /// bytes than they were given, nor a value above the bound; and a
        /// reply read whole reads the same when it arrives in two pieces.
        #[test]
        fn replies_of_any_shape_read_or_refuse(buf in replyish(), max in 0usize..64, cut in any::<prop::sample::Index>()) {
            for redis in [true, false] {
                let whole = read_all(&buf, max, redis);
                if let Ok(Some((_, used))) = parse(&buf, max, redis) {
                    // Any prefix of a complete reply is incomplete, not an error
                    // nor another reply.
                    let c = cut.index(used);
                    prop_assert_eq!(parse(&buf[..c], max, redis), Ok(None), "cut {} of {}", c, used);
                }
                let _ = whole;
            }
        }
    }
}
