//! The metrics listener: `GET /metrics` over HTTP/1.1, nothing else.
//!
//! Safe by default: an address that is not loopback is refused unless a
//! bearer token is given (`--metrics-token-file`; Prometheus sends it with
//! `authorization: {credentials_file: ...}`), and then every request must
//! carry it. Each peer is bounded: at most [`MAX_CONNS`] connections at
//! once (more are closed at once), headers within [`HEADER_TIMEOUT`] and
//! hyper's size limit, and a connection lives at most [`CONN_LIFETIME`].

use super::board::Shared;
use super::expose::{Format, page};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioIo, TokioTimer};
use ring::hmac;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::time::Duration;

/// Connections served at once.
pub const MAX_CONNS: usize = 16;
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
                let t = std::fs::read_to_string(f)
                    .map_err(|e| format!("--metrics-token-file {}: {e}", f.display()))?;
                let t = t.trim().to_string();
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
        let thread = std::thread::Builder::new()
            .name("wb-metrics".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let mut conns = tokio::task::JoinSet::new();
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            a = listener.accept() => {
                                let Ok((stream, _)) = a else {
                                    // Out of descriptors, say: wait, then go on.
                                    tokio::time::sleep(Duration::from_millis(50)).await;
                                    continue;
                                };
                                if conns.len() >= MAX_CONNS {
                                    continue;
                                }
                                let (board, auth) = (board.clone(), auth.clone());
                                conns.spawn(async move {
                                    let svc = hyper::service::service_fn(move |req| {
                                        let r = answer(&req, &board, &auth);
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
            hold: opts.hold,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
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

fn answer<B>(req: &http::Request<B>, board: &Shared, auth: &Auth) -> http::Response<Full<Bytes>> {
    let reply = |status: http::StatusCode, text: &str| {
        let mut r = http::Response::new(Full::new(Bytes::from(text.to_string())));
        *r.status_mut() = status;
        r
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
            return r;
        }
    }
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
    let body = board.with(|b| page(b, format));
    let mut r = http::Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(format.content_type()),
    );
    r
}
