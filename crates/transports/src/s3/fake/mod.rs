//! The embedded fake S3 server (`serve --transport s3`): s3s parses,
//! routes and (when given credentials) checks SigV4 signatures; this
//! backend keeps object metadata in memory, counts written data and drops
//! it, and answers reads with zeroes of the stored size. Memory is bounded:
//! at most `max_objects` objects and `max_uploads` multipart uploads, and
//! at most `max_conns` connections, each closed when its request headers
//! take longer than `header_timeout` or nothing moves for `idle_timeout`.

use super::idle::IdleIo;
use super::sigv4::{InHeaders, Verifier};
use crate::accept::AcceptErrors;
use bytes::Bytes;
use futures_util::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use wirebench_core::result::ServerStats;
use wirebench_trace as trace;

/// An idle timeout that never comes (136 years).
const NEVER: Duration = Duration::from_secs(u32::MAX as u64);

/// A response header of the fake server's reads: the body is zeroes.
pub const FAKE_HEADER: &str = "x-wirebench-fake";

/// A request header the client puts on a traced request: its trace id, by
/// which the fake server's events join the client's into one operation.
pub const TRACE_HEADER: &str = "x-wirebench-trace";

/// What the fake server serves.
#[derive(Clone)]
pub struct FakeConfig {
    /// host:port to listen on.
    pub listen: String,
    /// Buckets that exist from the start.
    pub buckets: Vec<String>,
    /// Access key and secret: requests must be signed with them. None:
    /// anonymous requests are served (and signed ones refused).
    pub creds: Option<(String, String)>,
    /// Virtual-host style: requests to `BUCKET.<domain>` name the bucket.
    pub domain: Option<String>,
    /// Worker threads (the process is pinned by the caller).
    pub threads: usize,
    pub max_objects: usize,
    pub max_uploads: usize,
    /// Serve HTTPS with this configuration (`s3s://`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Connections served at once; more are closed as they come.
    pub max_conns: usize,
    /// A request's headers must arrive within this, from the connection's
    /// start or the previous response.
    pub header_timeout: Duration,
    /// Nothing moving either way this long closes a connection.
    pub idle_timeout: Option<Duration>,
}

impl FakeConfig {
    /// The default limits, on `listen`, with one bucket.
    pub fn new(listen: &str, bucket: &str) -> FakeConfig {
        use wirebench_core::limits as l;
        FakeConfig {
            listen: listen.into(),
            buckets: vec![bucket.into()],
            creds: None,
            domain: None,
            threads: 1,
            max_objects: 10_000_000,
            max_uploads: 10_000,
            tls: None,
            max_conns: l::SERVER_DEFAULT_MAX_CONNS,
            header_timeout: Duration::from_secs(l::S3_HEADER_TIMEOUT_S),
            idle_timeout: Some(Duration::from_secs(l::SERVER_DEFAULT_IDLE_TIMEOUT_S)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    size: u64,
    etag: u64,
    parts: u32,
}

#[derive(Default)]
struct Bucket {
    objects: BTreeMap<String, Meta>,
}

struct Upload {
    bucket: String,
    key: String,
    parts: BTreeMap<i32, u64>,
}

#[derive(Default)]
struct Counters {
    conns: AtomicU64,
    over_cap: AtomicU64,
    requests: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

struct Store {
    buckets: Mutex<HashMap<String, Bucket>>,
    uploads: Mutex<HashMap<String, Upload>>,
    objects: AtomicU64,
    next: AtomicU64,
    counters: Arc<Counters>,
    max_objects: usize,
    max_uploads: usize,
}

/// The ETag of part `number` of `size` bytes.
fn part_etag(size: u64, number: i32) -> ETag {
    etag_of(size ^ ((number as u64) << 48), 0)
}

fn etag_of(n: u64, parts: u32) -> ETag {
    let h = wirebench_core::spec::mix64(n);
    if parts > 0 {
        ETag::Strong(format!("{h:016x}{h:016x}-{parts}"))
    } else {
        ETag::Strong(format!("{h:016x}{h:016x}"))
    }
}

/// Reads a request body to its end, counting it; checks its length.
async fn drain(body: Option<StreamingBlob>, expected: Option<i64>, c: &Counters) -> S3Result<u64> {
    let mut n = 0u64;
    if let Some(mut b) = body {
        while let Some(chunk) = b.next().await {
            let chunk = chunk.map_err(|e| s3_error!(IncompleteBody, "reading the body: {e}"))?;
            n += chunk.len() as u64;
        }
    }
    c.bytes_in.fetch_add(n, Ordering::Relaxed);
    if let Some(e) = expected
        && e as u64 != n
    {
        return Err(s3_error!(IncompleteBody, "{n} bytes received of {e}"));
    }
    Ok(n)
}

static ZEROS: [u8; 256 * 1024] = [0; 256 * 1024];

/// `left` bytes of zeroes, as a response body.
struct Zeros {
    left: u64,
    counters: Arc<Counters>,
}

impl futures_util::Stream for Zeros {
    type Item = Result<Bytes, s3s::StdError>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(ZEROS.len() as u64) as usize;
        self.left -= n as u64;
        self.counters
            .bytes_out
            .fetch_add(n as u64, Ordering::Relaxed);
        Poll::Ready(Some(Ok(Bytes::from_static(&ZEROS[..n]))))
    }
}

impl s3s::stream::ByteStream for Zeros {
    fn remaining_length(&self) -> s3s::stream::RemainingLength {
        s3s::stream::RemainingLength::new_exact(self.left as usize)
    }
}

impl Store {
    fn with_bucket<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Bucket) -> S3Result<T>,
    ) -> S3Result<T> {
        let mut b = self.buckets.lock().expect("not poisoned");
        match b.get_mut(name) {
            Some(bucket) => f(bucket),
            None => Err(s3_error!(NoSuchBucket, "no bucket '{name}'")),
        }
    }

    fn meta(&self, bucket: &str, key: &str) -> S3Result<Meta> {
        self.with_bucket(bucket, |b| {
            b.objects
                .get(key)
                .copied()
                .ok_or_else(|| s3_error!(NoSuchKey, "no key '{key}'"))
        })
    }

    fn insert(&self, bucket: &str, key: String, size: u64, parts: u32) -> S3Result<ETag> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.with_bucket(bucket, |b| {
            if !b.objects.contains_key(&key) {
                if self.objects.load(Ordering::Relaxed) as usize >= self.max_objects {
                    return Err(s3_error!(
                        ServiceUnavailable,
                        "the fake server holds at most {} objects",
                        self.max_objects
                    ));
                }
                self.objects.fetch_add(1, Ordering::Relaxed);
            }
            b.objects.insert(
                key,
                Meta {
                    size,
                    etag: n,
                    parts,
                },
            );
            Ok(etag_of(n, parts))
        })
    }
}

struct Fake(Arc<Store>);

fn ok<T>(t: T) -> S3Result<S3Response<T>> {
    Ok(S3Response::new(t))
}

/// Path style for any host; virtual-host style for `BUCKET.<domain>[:port]`.
struct Hosts(Option<String>);

impl s3s::host::S3Host for Hosts {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<s3s::host::VirtualHost<'a>> {
        let name = host.rsplit_once(':').map_or(host, |(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        if let Some(domain) = &self.0
            && let Some(bucket) = name
                .strip_suffix(domain.as_str())
                .and_then(|b| b.strip_suffix('.'))
            && !bucket.is_empty()
        {
            return Ok(s3s::host::VirtualHost::new(domain.as_str()).with_bucket(bucket));
        }
        Ok(s3s::host::VirtualHost::new(name))
    }
}

/// A running fake server.
pub struct FakeServer {
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Stops accepting, closes the connections, and returns the counters.
    pub fn shutdown(mut self) -> ServerStats {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let c = &self.counters;
        let requests = c.requests.load(Ordering::Relaxed);
        ServerStats {
            conns_accepted: c.conns.load(Ordering::Relaxed),
            conns_refused: 0,
            conns_over_cap: c.over_cap.load(Ordering::Relaxed),
            frames_in: requests,
            frames_out: requests,
            bytes_in: c.bytes_in.load(Ordering::Relaxed),
            bytes_out: c.bytes_out.load(Ordering::Relaxed),
            max_outstanding_per_conn: 1,
        }
    }
}

/// The longest XML body taken (a CompleteMultipartUpload of 10,000 parts
/// is ~1 MiB).
pub const XML_BODY_MAX: u64 = 2 << 20;

/// What a service call of the fake server gives.
type Answer = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<s3s::HttpResponse, s3s::HttpError>> + Send>,
>;

fn futures_ready(r: s3s::HttpResponse) -> Answer {
    Box::pin(std::future::ready(Ok(r)))
}

/// The answer to a POST whose XML body is too long, or of no announced
/// length (400 MaxMessageLengthExceeded, 411 MissingContentLength, as S3
/// answers them); None for any other request.
fn xml_body_refused<B>(req: &http::Request<B>) -> Option<s3s::HttpResponse> {
    if req.method() != http::Method::POST {
        return None;
    }
    let len = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let (status, code, message) = match len {
        Some(n) if n <= XML_BODY_MAX => return None,
        Some(n) => (
            http::StatusCode::BAD_REQUEST,
            "MaxMessageLengthExceeded",
            format!("an XML body of {n} bytes: at most {XML_BODY_MAX}"),
        ),
        None => (
            http::StatusCode::LENGTH_REQUIRED,
            "MissingContentLength",
            "an XML body needs its Content-Length".to_string(),
        ),
    };
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .header(http::header::CONNECTION, "close")
        .body(s3s::Body::from(xml))
        .ok()
}

/// Starts the fake server on its own runtime (`threads` workers).
pub fn start(cfg: &FakeConfig) -> io::Result<FakeServer> {
    let counters = Arc::new(Counters::default());
    let store = Arc::new(Store {
        buckets: Mutex::new(
            cfg.buckets
                .iter()
                .map(|b| (b.clone(), Bucket::default()))
                .collect(),
        ),
        uploads: Mutex::new(HashMap::new()),
        objects: AtomicU64::new(0),
        next: AtomicU64::new(1),
        counters: counters.clone(),
        max_objects: cfg.max_objects,
        max_uploads: cfg.max_uploads,
    });
    let mut b = s3s::service::S3ServiceBuilder::new(Fake(store.clone()));
    if let Some((key, secret)) = &cfg.creds {
        b.set_auth(s3s::auth::SimpleAuth::from_single(
            key.clone(),
            secret.clone(),
        ));
    }
    b.set_host(Hosts(cfg.domain.clone()));
    let service = b.build();
    // The fast path: presigned requests whose signature our own verifier
    // accepts go, without it, to a service that checks nothing; every other
    // request (signed in headers, or refused) to s3s's full check.
    let fast = cfg.creds.as_ref().map(|(key, secret)| {
        let mut b = s3s::service::S3ServiceBuilder::new(Fake(store));
        b.set_host(Hosts(cfg.domain.clone()));
        (
            Arc::new((Verifier::new(key, secret), Seen::new())),
            b.build(),
        )
    });
    let listener = std::net::TcpListener::bind(&cfg.listen)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {}: {e}", cfg.listen)))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .thread_name("wb-s3-fake")
        .enable_all()
        .build()?;
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let c2 = counters.clone();
    let tls = cfg.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let (max_conns, header_timeout, idle) = (cfg.max_conns, cfg.header_timeout, cfg.idle_timeout);
    let thread = std::thread::Builder::new()
        .name("wb-s3-accept".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let mut conns = tokio::task::JoinSet::new();
                let mut errors = AcceptErrors::default();
                loop {
                    tokio::select! {
                        _ = &mut stop_rx => break,
                        a = listener.accept() => {
                            let stream = match a {
                                Ok((stream, _)) => stream,
                                Err(e) => {
                                    errors.failed(&e).await;
                                    continue;
                                }
                            };
                            errors.succeeded();
                            if conns.len() >= max_conns {
                                c2.over_cap.fetch_add(1, Ordering::Relaxed);
                                errors.over_cap(max_conns);
                                continue;
                            }
                            let _ = stream.set_nodelay(true);
                            c2.conns.fetch_add(1, Ordering::Relaxed);
                            conns.spawn(serve_conn(
                                stream,
                                service.clone(),
                                fast.clone(),
                                c2.clone(),
                                tls.clone(),
                                header_timeout,
                                idle,
                            ));
                        }
                        Some(_) = conns.join_next(), if !conns.is_empty() => {}
                    }
                }
                conns.shutdown().await;
            });
            rt.shutdown_background();
        })?;
    Ok(FakeServer {
        addr,
        counters,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// The fast path's verifier and its service that checks nothing (None:
/// the server takes requests unsigned).
type FastPath = Option<(Arc<(Verifier, Seen)>, s3s::service::S3Service)>;

/// Serves one connection: each request to the fast path when its presigned
/// signature is ours, else to s3s's full check; XML bodies capped; traced
/// requests marked; closed when its headers are late or nothing moves.
async fn serve_conn(
    stream: tokio::net::TcpStream,
    service: s3s::service::S3Service,
    fast: FastPath,
    c3: Arc<Counters>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_timeout: Duration,
    idle: Option<Duration>,
) {
    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        c3.requests.fetch_add(1, Ordering::Relaxed);
        // An XML body (POST: complete an upload,
        // delete objects) is read whole: its size
        // is capped before a byte of it is.
        if let Some(refused) = xml_body_refused(&req) {
            return futures_ready(refused);
        }
        let s = match fast
            .as_ref()
            .and_then(|(v, anon)| Some((presigned(&v.0, &v.1, &req)?, anon)))
        {
            Some((uri, anon)) => {
                *req.uri_mut() = uri;
                // Checked: the service that
                // checks nothing sees no
                // signature.
                let h = req.headers_mut();
                h.remove(http::header::AUTHORIZATION);
                h.remove("x-amz-date");
                h.remove("x-amz-content-sha256");
                anon.clone()
            }
            None => service.clone(),
        };
        let traced = req
            .headers()
            .get(TRACE_HEADER)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(id) = traced {
            trace::record(trace::BEGIN, id);
        }
        Box::pin(async move {
            let r = hyper::service::Service::call(&s, req).await;
            if let Some(id) = traced {
                // A PUT's body read, a GET's response
                // headers ready (its body streams after).
                trace::record("handled", id);
                trace::record(trace::END, id);
            }
            r
        })
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    // Idle connections are closed; so is one
    // that sends nothing at all.
    let stream = IdleIo::new(stream, idle.unwrap_or(NEVER));
    match tls {
        None => {
            let _ = http.serve_connection(TokioIo::new(stream), svc).await;
        }
        // A failed handshake closes this connection only.
        Some(acceptor) => {
            let handshake = tokio::time::timeout(header_timeout, acceptor.accept(stream));
            if let Ok(Ok(s)) = handshake.await {
                let _ = http.serve_connection(TokioIo::new(s), svc).await;
            }
        }
    }
}

mod auth;
mod ops;
use auth::*;

#[cfg(test)]
mod tests;
