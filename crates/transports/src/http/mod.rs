//! The HTTP transport: GET, POST or PUT of one URL against any server,
//! over HTTP/1.1 (keep-alive, one request outstanding per connection: no
//! pipelining) or HTTP/2 (h2c with prior knowledge on `http://`, ALPN on
//! `https://`), where `--depth` streams share each connection. With
//! `--churn` every request opens a connection of its own (and says
//! `Connection: close`): its time then includes connecting and the TLS
//! handshake.
//!
//! Time to first byte: when the response's headers arrive. A response with
//! an error status (400 and above) is a failure counted by its cause ("404
//! Not Found") and the run goes on; a connection that cannot be made or
//! breaks, or a request that takes longer than `--op-timeout`, ends the run.
//! A connection the server closed between requests (keep-alive limits,
//! HTTP/2 GOAWAY) is opened again once.

pub(crate) mod driver;

/// No embedded server: a run measures the real one (`--target`).
pub static SERVER: Option<crate::server::Server> = None;
pub mod h1;

use crate::keys::KeyPicker;
use crate::tls::ClientTls;
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_core::spec::{Endpoint, HttpMethod, HttpSpec, HttpVersion, KeyDist};
use wirebench_core::transport::http::KEY_PLACEHOLDER;
use wirebench_core::units::Dur;
use wirebench_load::calls::{CallConn, CallOutcome, CallTransport};
use wirebench_trace as trace;

/// Records `name` for the traced operation `id`, if there is one.
fn event(id: Option<u64>, name: &'static str) {
    trace::record_traced(name, id);
}

type Body = Full<Bytes>;

/// One connection's request sender: our own lean HTTP/1.1 connection, or
/// hyper's HTTP/2 one.
enum Sender {
    H1(Box<h1::H1Conn>),
    H2(http2::SendRequest<Body>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => !s.is_reusable(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

/// A request that failed: why, and whether the server let it go
/// unprocessed (so that it may be sent again on a new connection).
struct Failed {
    retry: bool,
    error: io::Error,
}

/// How long opening a connection took.
#[derive(Debug, Clone, Copy)]
struct Phases {
    connect: Duration,
    tls: Option<Duration>,
}

impl Phases {
    /// `out`, saying it opened this connection first.
    fn on(self, mut out: CallOutcome) -> CallOutcome {
        out.connect = Some(self.connect);
        out.tls = self.tls;
        out
    }
}

/// Everything a request of the run needs, made once.
pub struct HttpClient {
    /// Where connections go (`host:port`).
    addr: String,
    /// The target as written, for messages.
    target: String,
    tls: Option<ClientTls>,
    version: HttpVersion,
    method: Method,
    op: &'static str,
    /// Origin form (`/path?query`) for HTTP/1.1, absolute for HTTP/2.
    uri: Uri,
    /// Host (HTTP/1.1), Connection: close (churn), Content-Length and the
    /// extra headers.
    headers: HeaderMap,
    body: Bytes,
    /// HTTP/1.1: the request's bytes before and after its target ("GET "
    /// and " HTTP/1.1\r\nHost: ...\r\n\r\n"), made once.
    h1_head: (Vec<u8>, Vec<u8>),
    churn: bool,
    op_timeout: Duration,
    /// gRPC: the status is in the trailers (`grpc-status`), not the HTTP
    /// status line.
    grpc: bool,
    /// With `{key}` in the path: the request target before and after the
    /// key number, and the keys and their distribution.
    template: Option<Template>,
}

/// A request target with a key number in it.
struct Template {
    before: String,
    after: String,
    keys: u64,
    dist: KeyDist,
}

fn err(what: impl std::fmt::Display) -> io::Error {
    io::Error::other(what.to_string())
}

/// An HTTP/1.1 request's bytes before and after its target.
fn h1_head(method: &Method, headers: &HeaderMap) -> (Vec<u8>, Vec<u8>) {
    let before = format!("{method} ").into_bytes();
    let mut after = b" HTTP/1.1\r\n".to_vec();
    for (name, value) in headers {
        after.extend_from_slice(name.as_str().as_bytes());
        after.extend_from_slice(b": ");
        after.extend_from_slice(value.as_bytes());
        after.extend_from_slice(b"\r\n");
    }
    after.extend_from_slice(b"\r\n");
    (before, after)
}

impl HttpClient {
    /// The client of `spec`'s requests to `endpoint` (an `Endpoint::Http`).
    pub fn new(endpoint: &Endpoint, spec: &HttpSpec, op_timeout: Duration) -> Result<Self, String> {
        let Endpoint::Http { tls, addr, path } = endpoint else {
            return Err(format!("{endpoint}: not an HTTP endpoint"));
        };
        let scheme = if *tls { "https" } else { "http" };
        let tls = match tls {
            false => None,
            true => {
                let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
                let alpn: Vec<Vec<u8>> = match spec.version {
                    HttpVersion::H1 => vec![b"http/1.1".to_vec()],
                    HttpVersion::H2 => vec![b"h2".to_vec()],
                };
                Some(ClientTls::with_alpn(host, spec.ca_file.as_deref(), alpn)?)
            }
        };
        let target = match spec.version {
            HttpVersion::H1 => path.clone(),
            HttpVersion::H2 => format!("{scheme}://{addr}{path}"),
        };
        let template = match (spec.keys, target.split_once(KEY_PLACEHOLDER)) {
            (Some(keys), Some((before, after))) => Some(Template {
                before: before.to_string(),
                after: after.to_string(),
                keys,
                dist: spec.key_dist,
            }),
            _ => None,
        };
        // With a template, key 0 stands for every key (digits only differ).
        let uri: Uri = target
            .replacen(KEY_PLACEHOLDER, "0", usize::from(template.is_some()))
            .parse()
            .map_err(|e| format!("{endpoint}: not a request target: {e}"))?;
        let mut headers = HeaderMap::new();
        if spec.version == HttpVersion::H1 {
            let host = HeaderValue::from_str(addr.strip_suffix(":80").unwrap_or(addr))
                .map_err(|e| format!("'{addr}' cannot be a Host header: {e}"))?;
            headers.insert(HOST, host);
            if spec.churn {
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
        if spec.method.has_body() {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(spec.body_bytes));
        }
        for h in &spec.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("--header '{h}': not 'Name: value'"))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|e| format!("--header '{h}': {e}"))?;
            let value =
                HeaderValue::from_str(value.trim()).map_err(|e| format!("--header '{h}': {e}"))?;
            headers.append(name, value);
        }
        let body_len =
            usize::try_from(spec.body_bytes).map_err(|_| "--size: too large".to_string())?;
        let method = match spec.method {
            HttpMethod::Get => Method::GET,
            HttpMethod::Post => Method::POST,
            HttpMethod::Put => Method::PUT,
        };
        Ok(HttpClient {
            h1_head: h1_head(&method, &headers),
            addr: addr.clone(),
            target: endpoint.to_string(),
            tls,
            version: spec.version,
            method,
            op: match spec.method {
                HttpMethod::Get => "get",
                HttpMethod::Post => "post",
                HttpMethod::Put => "put",
            },
            uri,
            headers,
            body: Bytes::from(vec![b'w'; body_len]),
            churn: spec.churn,
            op_timeout,
            grpc: false,
            template,
        })
    }

    /// The client of a gRPC method's calls to `endpoint` (an
    /// `Endpoint::Grpc`): POSTs of `path` (`/package.Service/Method`) over
    /// HTTP/2 with the framed request `message`, and `metadata`.
    pub fn grpc(
        endpoint: &Endpoint,
        path: &str,
        message: Bytes,
        metadata: &[String],
        ca_file: Option<&std::path::Path>,
        op_timeout: Duration,
    ) -> Result<Self, String> {
        let Endpoint::Grpc { tls, addr } = endpoint else {
            return Err(format!("{endpoint}: not a gRPC endpoint"));
        };
        let http = Endpoint::Http {
            tls: *tls,
            addr: addr.clone(),
            path: path.to_string(),
        };
        let spec = HttpSpec {
            method: HttpMethod::Post,
            version: HttpVersion::H2,
            body_bytes: message.len() as u64,
            headers: metadata.to_vec(),
            churn: false,
            ca_file: ca_file.map(|p| p.to_path_buf()),
            keys: None,
            key_dist: wirebench_core::spec::KeyDist::Uniform,
        };
        let mut c = HttpClient::new(&http, &spec, op_timeout)?;
        c.headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        c.headers
            .insert(http::header::TE, HeaderValue::from_static("trailers"));
        c.headers.remove(CONTENT_LENGTH);
        c.body = message;
        c.op = "call";
        c.grpc = true;
        c.target = format!("{endpoint}{path}");
        Ok(c)
    }

    /// The target as written (with the gRPC method's path).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The run's timeout of one request.
    pub fn op_timeout(&self) -> Duration {
        self.op_timeout
    }

    /// The request target's path (with its query).
    pub fn path(&self) -> &str {
        self.uri.path_and_query().map_or("/", |p| p.as_str())
    }

    /// The body every request carries.
    pub fn body(&self) -> Bytes {
        self.body.clone()
    }

    /// Sends `body` to `path` on a connection of its own, the other headers
    /// as the run's, and returns the response's status, its body (at most
    /// `limit` bytes) and trailers: for exchanges outside the load (gRPC
    /// reflection).
    pub async fn fetch(
        &self,
        path: &str,
        body: Bytes,
        limit: usize,
    ) -> io::Result<(http::StatusCode, HeaderMap, Bytes, HeaderMap)> {
        let once = async {
            let mut s = self.open().await?;
            if let Sender::H1(c) = &mut s {
                return self.fetch_h1(c, path, &body, limit).await;
            }
            let mut req = Request::new(Full::new(body));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = match self.version {
                HttpVersion::H1 => path.parse(),
                HttpVersion::H2 => {
                    let base = self.uri.to_string();
                    let origin =
                        base.len() - self.uri.path_and_query().map_or(0, |p| p.as_str().len());
                    format!("{}{path}", &base[..origin]).parse()
                }
            }
            .map_err(err)?;
            *req.headers_mut() = self.headers.clone();
            let Sender::H2(s) = &mut s else {
                unreachable!("HTTP/1.1 answered above")
            };
            let resp = s.send_request(req).await.map_err(|e| self.broken(&e))?;
            let (head, body) = resp.into_parts();
            let all = http_body_util::Limited::new(body, limit)
                .collect()
                .await
                .map_err(|e| err(format!("{} {path}: {e}", self.addr)))?;
            let trailers = all.trailers().cloned().unwrap_or_default();
            Ok((head.status, head.headers, all.to_bytes(), trailers))
        };
        crate::watchdog::within(self.op_timeout, once)
            .await
            .ok_or_else(|| self.timed_out())?
    }

    /// [`HttpClient::fetch`] over HTTP/1.1.
    async fn fetch_h1(
        &self,
        c: &mut h1::H1Conn,
        path: &str,
        body: &[u8],
        limit: usize,
    ) -> io::Result<(http::StatusCode, HeaderMap, Bytes, HeaderMap)> {
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        let (before, after) = h1_head(&Method::POST, &headers);
        let req = c.request_buf();
        req.extend_from_slice(&before);
        req.extend_from_slice(path.as_bytes());
        req.extend_from_slice(&after);
        let what = |e: io::Error| err(format!("POST {}{path}: {e}", self.addr));
        c.send(body).await.map_err(what)?;
        let (mut head, mut kept) = (HeaderMap::new(), Vec::new());
        let r = c
            .response(
                false,
                &mut |n, v| {
                    if let (Ok(n), Ok(v)) = (
                        HeaderName::from_bytes(n.as_bytes()),
                        HeaderValue::from_bytes(v),
                    ) {
                        head.append(n, v);
                    }
                },
                &mut |d| {
                    kept.extend_from_slice(&d[..d.len().min(limit.saturating_sub(kept.len()))])
                },
            )
            .await
            .map_err(what)?;
        let status = http::StatusCode::from_u16(r.status).map_err(err)?;
        Ok((status, head, Bytes::from(kept), HeaderMap::new()))
    }

    /// Opens a connection: TCP, TLS where asked, then the HTTP handshake.
    async fn open(&self) -> io::Result<Sender> {
        Ok(self.open_timed().await?.0)
    }

    /// As [`HttpClient::open`], with how long the TCP connect and the TLS
    /// handshake took. Boxed: its future (the TLS handshake's included) is
    /// about 9 KB, which every request's future would otherwise hold and
    /// copy on each request, for a connection opened once in many.
    fn open_timed(&self) -> Pin<Box<impl Future<Output = io::Result<(Sender, Phases)>> + '_>> {
        Box::pin(self.open_timed_inline())
    }

    async fn open_timed_inline(&self) -> io::Result<(Sender, Phases)> {
        let start = Instant::now();
        let tcp = tokio::net::TcpStream::connect(&self.addr)
            .await
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot connect to {}: {e}", self.addr))
            })?;
        tcp.set_nodelay(true)?;
        let connected = Instant::now();
        let mut phases = Phases {
            connect: connected - start,
            tls: None,
        };
        let Some(tls) = &self.tls else {
            return Ok((self.handshake(tcp).await?, phases));
        };
        let stream = tls
            .connector
            .connect(tls.name.clone(), tcp)
            .await
            .map_err(|e| {
                io::Error::new(e.kind(), format!("TLS handshake with {}: {e}", self.addr))
            })?;
        if self.version == HttpVersion::H2 && stream.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(err(format!(
                "{} did not agree to HTTP/2 in the TLS handshake (ALPN): use --http 1.1",
                self.addr
            )));
        }
        phases.tls = Some(connected.elapsed());
        Ok((self.handshake(stream).await?, phases))
    }

    async fn handshake<S>(&self, stream: S) -> io::Result<Sender>
    where
        S: h1::Io + 'static,
    {
        match self.version {
            HttpVersion::H1 => Ok(Sender::H1(Box::new(h1::H1Conn::new(Box::new(stream))))),
            HttpVersion::H2 => {
                let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                    .await
                    .map_err(err)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(Sender::H2(send))
            }
        }
    }

    /// The run's request, for key number `key` where the path has one.
    fn request(&self, key: Option<u64>) -> Request<Body> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = match (&self.template, key) {
            (Some(t), Some(k)) => format!("{}{k}{}", t.before, t.after)
                .parse()
                .expect("checked with key 0: digits only differ"),
            _ => self.uri.clone(),
        };
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// Sends one request on `sender` and reads its response to the end;
    /// `traced`: its trace id, if it is traced.
    async fn exchange(
        &self,
        sender: &mut Sender,
        key: Option<u64>,
        traced: Option<u64>,
    ) -> Result<CallOutcome, Failed> {
        match sender {
            Sender::H1(c) => self.exchange_h1(c, key, traced).await.map_err(|e| Failed {
                retry: h1::unanswered(&e),
                error: err(format!("{} {}: {e}", self.method, self.target)),
            }),
            Sender::H2(s) => self.exchange_h2(s, key, traced).await.map_err(|e| Failed {
                retry: unprocessed(&e),
                error: self.broken(&e),
            }),
        }
    }

    /// [`HttpClient::exchange`] on our own HTTP/1.1 connection.
    async fn exchange_h1(
        &self,
        c: &mut h1::H1Conn,
        key: Option<u64>,
        traced: Option<u64>,
    ) -> io::Result<CallOutcome> {
        let req = c.request_buf();
        req.extend_from_slice(&self.h1_head.0);
        match (&self.template, key) {
            (Some(t), Some(k)) => {
                use std::io::Write;
                req.extend_from_slice(t.before.as_bytes());
                write!(req, "{k}").expect("a Vec takes it");
                req.extend_from_slice(t.after.as_bytes());
            }
            _ => req.extend_from_slice(self.path().as_bytes()),
        }
        req.extend_from_slice(&self.h1_head.1);
        c.send(&self.body).await?;
        event(traced, "request sent");
        if traced.is_none() {
            let r = c.response(false, &mut |_, _| {}, &mut |_| {}).await?;
            return Ok(self.outcome(r.status, r.headers_at, r.bytes_in, None));
        }
        let head = c.head(false, &mut |_, _| {}).await?;
        event(traced, "response headers");
        let mut first = true;
        let bytes_in = c
            .body(&head, &mut |d| {
                if first && !d.is_empty() {
                    event(traced, "first body byte");
                    first = false;
                }
            })
            .await?;
        Ok(self.outcome(head.status, head.headers_at, bytes_in, None))
    }

    /// [`HttpClient::exchange`] on an HTTP/2 connection.
    async fn exchange_h2(
        &self,
        s: &mut http2::SendRequest<Body>,
        key: Option<u64>,
        traced: Option<u64>,
    ) -> Result<CallOutcome, hyper::Error> {
        let req = self.request(key);
        s.ready().await?;
        // hyper sends the request and answers with the response's head.
        let resp = s.send_request(req).await?;
        event(traced, "response headers");
        let headers_at = Instant::now();
        let status = resp.status();
        // gRPC: a Trailers-Only answer has its status in the headers.
        let mut grpc_status = self.grpc.then(|| grpc_status_of(resp.headers())).flatten();
        let mut body = resp.into_body();
        let mut bytes_in = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame?;
            if let Some(d) = frame.data_ref() {
                if bytes_in == 0 && !d.is_empty() {
                    event(traced, "first body byte");
                }
                bytes_in += d.len() as u64;
            } else if let Some(t) = frame.trailers_ref().filter(|_| self.grpc) {
                grpc_status = grpc_status.or_else(|| grpc_status_of(t));
            }
        }
        Ok(self.outcome(status.as_u16(), headers_at, bytes_in, grpc_status))
    }

    /// A response's outcome: a failure for an error status (an HTTP status of
    /// 400 and above; for gRPC, any status but OK).
    fn outcome(
        &self,
        status: u16,
        headers_at: Instant,
        bytes_in: u64,
        grpc_status: Option<(u32, String)>,
    ) -> CallOutcome {
        let failure = if self.grpc {
            match (status, grpc_status) {
                (200, Some((0, _))) => None,
                (200, Some((code, _))) => {
                    Some(format!("grpc-status {code} {}", grpc_code_name(code)))
                }
                (200, None) => Some("no grpc-status".to_string()),
                (code, _) => Some(format!("HTTP {code}")),
            }
        } else {
            (status >= 400).then(|| {
                let reason = http::StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                format!("{status} {reason}").trim_end().to_string()
            })
        };
        CallOutcome {
            op: self.op,
            first_byte: Some(headers_at),
            bytes_out: self.body.len() as u64,
            bytes_in,
            failure,
            status: Some(status),
            ..Default::default()
        }
    }

    /// What a failed exchange means for the run.
    fn broken(&self, e: &hyper::Error) -> io::Error {
        err(format!("{} {}: {}", self.method, self.target, chain(e)))
    }

    fn timed_out(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{} {}: no complete answer within {} (--op-timeout)",
                self.method,
                self.target,
                Dur(self.op_timeout)
            ),
        )
    }
}

/// The `grpc-status` code of headers or trailers, and its message.
fn grpc_status_of(h: &HeaderMap) -> Option<(u32, String)> {
    let code = h.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
    let msg = h
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .unwrap_or("")
        .to_string();
    Some((code, msg))
}

/// The name of a gRPC status code.
pub fn grpc_code_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|c| NAMES.get(c))
        .copied()
        .unwrap_or("(unknown code)")
}

/// An error and its causes: "http2 error: connection error: ...".
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// Whether the server let the request go unprocessed, so that it may be
/// sent again on a new connection: the connection was closed before it
/// went out, or (HTTP/2) a graceful GOAWAY or a refused stream.
fn unprocessed(e: &hyper::Error) -> bool {
    if e.is_canceled() || e.is_closed() {
        return true;
    }
    let h2 = std::error::Error::source(e).and_then(|c| c.downcast_ref::<h2::Error>());
    h2.is_some_and(|h| {
        h.reason() == Some(h2::Reason::REFUSED_STREAM)
            || (h.is_go_away() && h.reason() == Some(h2::Reason::NO_ERROR))
    })
}

/// Checks, before any load, that the endpoint takes a connection and
/// answers one request in the version asked. Returns the answer's status.
pub async fn preflight(client: &HttpClient) -> io::Result<http::StatusCode> {
    let once = async {
        let mut s = client.open().await?;
        let out = client.exchange(&mut s, None, None).await.map_err(|f| {
            let hint = if client.version == HttpVersion::H2 && client.tls.is_none() {
                " (does the server speak HTTP/2 without TLS, with prior knowledge? nginx needs 'listen ... http2' for that)"
            } else {
                ""
            };
            err(format!("{}{hint}", f.error))
        })?;
        let status = out.status.expect("an HTTP answer has a status");
        http::StatusCode::from_u16(status).map_err(err)
    };
    crate::watchdog::within(client.op_timeout, once)
        .await
        .ok_or_else(|| client.timed_out())?
}

mod calls;
pub use calls::{HttpConn, HttpTransport};

#[cfg(test)]
mod tests;
