//! The metrics listener: `GET /metrics` over HTTP/1.1, nothing else.
//!
//! Safe by default: an address that is not loopback is refused unless a
//! bearer token is given (`--metrics-token-file`; Prometheus sends it with
//! `authorization: {credentials_file: ...}`), and then every request must
//! carry it. Each peer is bounded: a connection waits for its first request
//! in one of [`MAX_PENDING`] slots ([`MAX_PENDING_PER_PEER`] per address),
//! its headers within [`HEADER_TIMEOUT`] and hyper's size limit; only a
//! request that passed the token takes one of the [`MAX_CONNS`] serving
//! slots, so peers without the token (dripping their headers, say) never
//! keep a scraper that has it out. A request without the token is answered
//! 401 and its connection closed; a connection lives at most
//! [`CONN_LIFETIME`].

use super::board::Shared;
use super::expose::{Format, page};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioIo, TokioTimer};
use ring::hmac;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::time::Duration;

/// Connections served at once (each past the token).
pub const MAX_CONNS: usize = 16;
/// Connections waiting for their first request (not yet past the token).
pub const MAX_PENDING: usize = 64;
/// Of those, from one peer address.
pub const MAX_PENDING_PER_PEER: usize = 32;
/// Time a peer has to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a connection is kept (a scraper then opens another).
pub const CONN_LIFETIME: Duration = Duration::from_secs(60);

/// How metrics are served.
#[derive(Debug, Clone)]
pub struct MetricsOptions {
    /// `--metrics-listen ADDR`.
    pub listen: SocketAddr,
    /// `--metrics-token-file FILE`: the bearer token every request needs.
    pub token_file: Option<PathBuf>,
    /// `--metrics-hold DURATION`: how long the final figures stay served
    /// after the work ends (for a scraper's last look).
    pub hold: Duration,
    /// A sweep's point this run is (its `point` label).
    pub point: Option<String>,
}

impl MetricsOptions {
    /// Refuses a listener that anyone could reach without a token, and a
    /// token too short to mean anything.
    pub fn check(&self) -> Result<Option<String>, String> {
        let token = match &self.token_file {
            Some(f) => {
                let (t, loose) = wirebench_core::files::read_secret(f, "--metrics-token-file")?;
                if let Some(w) = loose {
                    eprintln!("{w}");
                }
                if t.len() < 16 {
                    return Err(format!(
                        "--metrics-token-file {}: a token is at least 16 characters (e.g. `openssl rand -hex 32`)",
                        f.display()
                    ));
                }
                Some(t)
            }
            None => None,
        };
        if !self.listen.ip().is_loopback() && token.is_none() {
            return Err(format!(
                "--metrics-listen {}: not a loopback address; anyone who reaches it would read the run's metrics: give --metrics-token-file (a bearer token) too, or listen on 127.0.0.1",
                self.listen
            ));
        }
        Ok(token)
    }
}

/// The listening thread; stopped by [`Listener::finish`] or on drop.
pub struct Listener {
    addr: SocketAddr,
    /// The serving thread's id (0 until it has started).
    tid: std::sync::Arc<std::sync::atomic::AtomicI32>,
    hold: Duration,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    pub fn start(opts: &MetricsOptions, board: Shared) -> std::io::Result<Listener> {
        let token = opts
            .check()
            .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
        let listener = StdListener::bind(opts.listen).map_err(|e| {
            std::io::Error::new(e.kind(), format!("--metrics-listen {}: {e}", opts.listen))
        })?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        // The token is compared by its MAC under a key of this process:
        // in constant time, whatever its length.
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .map_err(|_| std::io::Error::other("no randomness for the metrics token's key"))?;
        let want = token.map(|t| hmac::sign(&key, format!("Bearer {t}").as_bytes()));
        let auth = std::sync::Arc::new((key, want));
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let tid = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
        let tid_of = tid.clone();
        let thread = std::thread::Builder::new()
            .name("wb-metrics".into())
            .spawn(move || {
                tid_of.store(nix::unistd::gettid().as_raw(), std::sync::atomic::Ordering::Release);
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let mut conns = tokio::task::JoinSet::new();
                    let served = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNS));
                    let pending = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_PENDING));
                    let per_peer = PerPeer::default();
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            a = listener.accept() => {
                                let Ok((stream, peer)) = a else {
                                    // Out of descriptors, say: wait, then go on.
                                    tokio::time::sleep(Duration::from_millis(50)).await;
                                    continue;
                                };
                                // A slot to wait in for the first request,
                                // else the connection is closed at once.
                                let Ok(wait) = pending.clone().try_acquire_owned() else {
                                    continue;
                                };
                                let Some(peer) = per_peer.enter(peer.ip()) else {
                                    continue;
                                };
                                let slot = std::sync::Arc::new(std::sync::Mutex::new(Slot::Pending { _held: (wait, peer) }));
                                let (board, auth, served) = (board.clone(), auth.clone(), served.clone());
                                conns.spawn(async move {
                                    let svc = hyper::service::service_fn(move |req| {
                                        let r = admit(&req, &auth, &slot, &served)
                                            .unwrap_or_else(|| answer(&req, &board));
                                        async move { Ok::<_, std::convert::Infallible>(r) }
                                    });
                                    let mut http = hyper::server::conn::http1::Builder::new();
                                    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                                    let conn = http.serve_connection(TokioIo::new(stream), svc);
                                    let _ = tokio::time::timeout(CONN_LIFETIME, conn).await;
                                });
                            }
                            Some(_) = conns.join_next(), if !conns.is_empty() => {}
                        }
                    }
                    conns.shutdown().await;
                });
            })?;
        Ok(Listener {
            addr,
            tid,
            hold: opts.hold,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Keeps the serving thread off `busy` (the client's CPUs): on the
    /// other CPUs this process may use. Where it runs after, as a CPU list
    /// (None: every CPU it may use is busy, so it stays where it was, or
    /// it could not be moved).
    pub fn keep_off(&self, busy: &[usize]) -> Option<Vec<usize>> {
        let tid = self.tid.load(std::sync::atomic::Ordering::Acquire);
        if tid == 0 || busy.is_empty() {
            return None;
        }
        let mine = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
        let mut set = nix::sched::CpuSet::new();
        let mut free = Vec::new();
        for cpu in 0..nix::sched::CpuSet::count() {
            if mine.is_set(cpu).unwrap_or(false) && !busy.contains(&cpu) {
                set.set(cpu).ok()?;
                free.push(cpu);
            }
        }
        if free.is_empty() {
            return None;
        }
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid), &set).ok()?;
        Some(free)
    }

    /// Keeps serving for the hold, then stops.
    pub fn finish(mut self) {
        std::thread::sleep(self.hold);
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop_now();
    }
}

type Auth = (hmac::Key, Option<hmac::Tag>);

/// How many connections each peer address has waiting for their first
/// request.
#[derive(Clone, Default)]
struct PerPeer(
    std::sync::Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
);

/// One waiting connection of a peer: counted until dropped.
struct PeerWait {
    of: PerPeer,
    ip: std::net::IpAddr,
}

impl PerPeer {
    /// A waiting place for `ip`, unless it has [`MAX_PENDING_PER_PEER`].
    fn enter(&self, ip: std::net::IpAddr) -> Option<PeerWait> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(ip).or_insert(0);
        if *n >= MAX_PENDING_PER_PEER {
            return None;
        }
        *n += 1;
        Some(PeerWait {
            of: self.clone(),
            ip,
        })
    }
}

impl Drop for PeerWait {
    fn drop(&mut self) {
        let mut m = self.of.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

/// Where a connection stands: waiting for a request past the token (in a
/// waiting slot), or served (in a serving slot).
/// Each holds its slot until it is replaced or dropped.
enum Slot {
    Pending {
        _held: (tokio::sync::OwnedSemaphorePermit, PeerWait),
    },
    Served {
        _held: tokio::sync::OwnedSemaphorePermit,
    },
}

fn reply(status: http::StatusCode, text: &str) -> http::Response<Full<Bytes>> {
    let mut r = http::Response::new(Full::new(Bytes::from(text.to_string())));
    *r.status_mut() = status;
    r
}

/// The token, then a serving slot: None when the request may be answered;
/// else the answer (401, or 503 with every serving slot taken), and the
/// connection is closed after it.
fn admit<B>(
    req: &http::Request<B>,
    auth: &Auth,
    slot: &std::sync::Mutex<Slot>,
    served: &std::sync::Arc<tokio::sync::Semaphore>,
) -> Option<http::Response<Full<Bytes>>> {
    let close = |mut r: http::Response<Full<Bytes>>| {
        r.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
        Some(r)
    };
    if let (key, Some(want)) = auth {
        let given = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if hmac::verify(key, given, want.as_ref()).is_err() {
            let mut r = reply(http::StatusCode::UNAUTHORIZED, "a bearer token is needed\n");
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return close(r);
        }
    }
    let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Slot::Pending { .. } = &*s {
        match served.clone().try_acquire_owned() {
            // The waiting slot is given back as the serving one is taken.
            Ok(p) => *s = Slot::Served { _held: p },
            Err(_) => {
                return close(reply(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "every connection this listener serves is taken\n",
                ));
            }
        }
    }
    None
}

/// The page (or why not), for a request past the token.
fn answer<B>(req: &http::Request<B>, board: &Shared) -> http::Response<Full<Bytes>> {
    if req.uri().path() != "/metrics" {
        return reply(http::StatusCode::NOT_FOUND, "only /metrics is here\n");
    }
    if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
        return reply(http::StatusCode::METHOD_NOT_ALLOWED, "GET /metrics only\n");
    }
    let accept = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let format = Format::of_accept(accept);
    let body = board.page(format as usize, |b| page(b, format));
    let mut r = http::Response::new(Full::new(body));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(format.content_type()),
    );
    r
}
