//! What both server designs share: their configuration, the per-connection
//! counters and their registry, and the listening socket.

use super::faults;
use crate::msgr::stream::Stream;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirebench_core::result::ServerStats;
use wirebench_core::spec::{Arch, Endpoint};

/// How to run a reference server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub arch: Arch,
    pub listen: Endpoint,
    /// One reactor per CPU, or the pool's threads (as many as CPUs), pinned.
    pub cpus: Vec<usize>,
    /// Reactor only: busy-poll instead of sleeping in epoll_wait.
    pub poll: bool,
    pub conn: ConnConfig,
}

/// What every connection handler needs.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    pub max_frame: u64,
    /// Raw request/response (no handshake, no framing): (request, response) bytes.
    pub raw: Option<(usize, usize)>,
    pub handshake_timeout: Duration,
    /// Close a connection that makes no progress this long (None: never).
    pub idle_timeout: Option<Duration>,
    /// Connections served at once; more are closed as they come.
    pub max_conns: usize,
    /// Injected faults (echo mode), shared by all connections.
    pub faults: Option<Arc<faults::Faults>>,
}

impl ConnConfig {
    /// Framed msgr with the default limits.
    pub fn new(max_frame: u64) -> ConnConfig {
        use wirebench_core::limits as l;
        ConnConfig {
            max_frame,
            raw: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(l::SERVER_DEFAULT_IDLE_TIMEOUT_S)),
            max_conns: l::SERVER_DEFAULT_MAX_CONNS,
            faults: None,
        }
    }
}

/// Counters of one connection. Only that connection's task writes them
/// (plain load + store, no contended atomics on the hot path); readers sum
/// them when asked.
#[derive(Debug, Default)]
pub struct ConnStats {
    pub frames_in: AtomicU64,
    pub frames_out: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub max_outstanding: AtomicU64,
}

#[inline]
pub(crate) fn bump(a: &AtomicU64, v: u64) {
    a.store(a.load(Ordering::Relaxed) + v, Ordering::Relaxed);
}

/// All connections' counters, live and closed.
#[derive(Debug, Default)]
pub struct StatsRegistry {
    live: Mutex<Vec<Arc<ConnStats>>>,
    closed: Mutex<ServerStats>,
    pub(crate) accepted: AtomicU64,
    pub(crate) refused: AtomicU64,
    /// Closed on arrival: `max_conns` were served already.
    pub(crate) over_cap: AtomicU64,
    served: std::sync::atomic::AtomicUsize,
}

fn fold(into: &mut ServerStats, c: &ConnStats) {
    into.frames_in += c.frames_in.load(Ordering::Relaxed);
    into.frames_out += c.frames_out.load(Ordering::Relaxed);
    into.bytes_in += c.bytes_in.load(Ordering::Relaxed);
    into.bytes_out += c.bytes_out.load(Ordering::Relaxed);
    into.max_outstanding_per_conn = into
        .max_outstanding_per_conn
        .max(c.max_outstanding.load(Ordering::Relaxed));
}

impl StatsRegistry {
    /// Whether a new connection may be served: its place is taken at once
    /// (a burst of accepts cannot all pass before the first is served),
    /// and given back by [`StatsRegistry::retire`] or
    /// [`StatsRegistry::release`]. Counts it when refused.
    pub(crate) fn admit(&self, max_conns: usize) -> bool {
        let took = self
            .served
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max_conns).then_some(n + 1)
            })
            .is_ok();
        if !took {
            self.over_cap.fetch_add(1, Ordering::Relaxed);
        }
        took
    }

    /// Gives back the place of an admitted connection that was not served.
    pub(crate) fn release(&self) {
        self.served.fetch_sub(1, Ordering::AcqRel);
    }

    /// An admitted connection now served.
    pub(crate) fn register(&self) -> Arc<ConnStats> {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        let c = Arc::new(ConnStats::default());
        self.live.lock().expect("stats lock").push(c.clone());
        c
    }

    pub(crate) fn retire(&self, c: &Arc<ConnStats>) {
        let mut live = self.live.lock().expect("stats lock");
        live.retain(|x| !Arc::ptr_eq(x, c));
        self.served.fetch_sub(1, Ordering::AcqRel);
        fold(&mut self.closed.lock().expect("stats lock"), c);
    }

    pub fn snapshot(&self) -> ServerStats {
        let mut s = *self.closed.lock().expect("stats lock");
        for c in self.live.lock().expect("stats lock").iter() {
            fold(&mut s, c);
        }
        s.conns_accepted = self.accepted.load(Ordering::Relaxed);
        s.conns_refused = self.refused.load(Ordering::Relaxed);
        s.conns_over_cap = self.over_cap.load(Ordering::Relaxed);
        s
    }
}

/// A bound listening socket, before it joins a runtime.
pub enum StdListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

impl StdListener {
    /// Binds `ep`. A Unix socket path that exists is reused only when
    /// nothing answers on it (a stale socket left by a killed server).
    pub fn bind(ep: &Endpoint) -> io::Result<(StdListener, Endpoint)> {
        match ep {
            Endpoint::Tcp(addr) => {
                let l = std::net::TcpListener::bind(addr.as_str())
                    .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {ep}: {e}")))?;
                let local = l.local_addr()?;
                l.set_nonblocking(true)?;
                Ok((StdListener::Tcp(l), Endpoint::Tcp(local.to_string())))
            }
            Endpoint::S3 { .. }
            | Endpoint::Redis { .. }
            | Endpoint::Http { .. }
            | Endpoint::Grpc { .. }
            | Endpoint::Addr { .. } => Err(io::Error::other(format!(
                "{ep}: a messenger server listens on tcp://HOST:PORT or unix:PATH"
            ))),
            Endpoint::Unix(path) => {
                if path.exists() {
                    if std::os::unix::net::UnixStream::connect(path).is_ok() {
                        return Err(io::Error::new(
                            io::ErrorKind::AddrInUse,
                            format!("cannot listen on {ep}: a server already answers there"),
                        ));
                    }
                    std::fs::remove_file(path).map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("cannot remove the stale socket {ep}: {e}"),
                        )
                    })?;
                }
                let l = std::os::unix::net::UnixListener::bind(path)
                    .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {ep}: {e}")))?;
                l.set_nonblocking(true)?;
                Ok((StdListener::Unix(l), ep.clone()))
            }
        }
    }

    pub fn try_clone(&self) -> io::Result<StdListener> {
        Ok(match self {
            StdListener::Tcp(l) => StdListener::Tcp(l.try_clone()?),
            StdListener::Unix(l) => StdListener::Unix(l.try_clone()?),
        })
    }

    /// Registers the listener with the current tokio runtime.
    pub fn into_tokio(self) -> io::Result<Listener> {
        Ok(match self {
            StdListener::Tcp(l) => Listener::Tcp(tokio::net::TcpListener::from_std(l)?),
            StdListener::Unix(l) => Listener::Unix(tokio::net::UnixListener::from_std(l)?),
        })
    }
}

pub enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

impl Listener {
    /// Accepts one connection; TCP connections get TCP_NODELAY.
    pub async fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                Ok((Stream::Unix(s), "unix peer".into()))
            }
        }
    }
}

pub(crate) fn log(peer: &str, msg: &str) {
    eprintln!("wirebench serve: {peer}: {msg}");
}
