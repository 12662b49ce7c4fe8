//! The S3 client: one HTTP/1.1 keep-alive connection per [`HttpConn`],
//! requests presigned with SigV4 (query-string signing, the payload
//! unsigned; objects' requests by `sigv4`, the others by rusty-s3), responses streamed and discarded as they arrive
//! (checked against the expected bytes with `--verify`).
//!
//! Time to first byte: for a GET, when the first byte of the body arrives;
//! for every other request, when the response headers arrive (a PUT's
//! headers come after its whole body was sent).

use super::payload::{self, Payload};
pub use super::progress::Progress;
use super::sigv4::Presigner;
use crate::http::h1::{self, H1Conn};
use crate::tls::ClientTls;
use http_body_util::BodyExt;
use rusty_s3::{Bucket, Credentials, S3Action};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use wirebench_trace as trace;

/// How long a presigned request stays valid.
const EXPIRES: Duration = Duration::from_secs(3600);
/// The most of an error or XML response body kept.
const MAX_KEPT: usize = 1 << 20;

/// The trace id of the next request, when it is traced: requests in the
/// order this process sent them.
fn trace_id() -> Option<u64> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if !trace::enabled() {
        return None;
    }
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    trace::sampled(id).then_some(id)
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// The error of a request that did not move for `limit`.
fn stalled(what: &str, addr: &str, limit: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "{what} {addr}: nothing moved for {} (--op-timeout)",
            wirebench_core::units::Dur(limit)
        ),
    )
}

/// Awaits `f`, or fails once nothing moved on `p` for `limit`.
async fn within<T>(
    p: &Progress,
    limit: Duration,
    what: &str,
    addr: &str,
    f: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    tokio::select! {
        r = f => r,
        _ = p.stalled(limit) => Err(stalled(what, addr, limit)),
    }
}

/// One HTTP/1.1 connection (over TLS for `s3s://`), reopened when the
/// server closed it while idle.
pub struct HttpConn {
    addr: String,
    tls: Option<ClientTls>,
    conn: H1Conn,
    /// The stall checks of its requests.
    timer: super::progress::StallTimer,
}

impl HttpConn {
    pub async fn connect(addr: &str, tls: Option<ClientTls>) -> io::Result<HttpConn> {
        Ok(HttpConn {
            conn: Self::open(addr, tls.as_ref()).await?,
            addr: addr.to_string(),
            tls,
            timer: Default::default(),
        })
    }

    async fn open(addr: &str, tls: Option<&ClientTls>) -> io::Result<H1Conn> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let Some(tls) = tls else {
            return Ok(H1Conn::new(Box::new(stream)));
        };
        let stream = tls
            .connector
            .connect(tls.name.clone(), stream)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake: {e}")))?;
        Ok(H1Conn::new(Box::new(stream)))
    }

    /// Opens `conn` again (the server closed it: keep-alive timeout,
    /// `Connection: close`); a dead server refuses, which ends the run.
    async fn reopen(conn: &mut H1Conn, addr: &str, tls: Option<&ClientTls>) -> io::Result<()> {
        *conn = Self::open(addr, tls).await?;
        Ok(())
    }
}

/// What to do with a response body.
#[derive(Debug, Clone, Copy)]
pub enum Sink {
    /// Count and drop it.
    Discard,
    /// Check it against object `seed`'s bytes from `offset`.
    Verify { seed: u64, offset: u64 },
    /// Keep it (XML answers), up to 1 MiB.
    Keep,
    /// Check that it is all zeroes (the fake server's reads).
    Zeroes,
}

/// A response, read to its end.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers_at: Instant,
    pub first_body_at: Option<Instant>,
    pub bytes_in: u64,
    pub kept: Vec<u8>,
    /// "404 NoSuchKey": the status and the S3 error code, for an error status.
    pub failure: Option<String>,
    pub etag: Option<String>,
    pub content_length: Option<u64>,
}

/// An S3 bucket as seen by the client.
#[derive(Clone)]
pub struct S3Client {
    pub bucket: Bucket,
    creds: Option<Credentials>,
    /// Where connections go (the endpoint's host:port, whatever the style).
    pub addr: String,
    tls: Option<ClientTls>,
    /// The Host header line of every request (bucket.host in virtual
    /// style), made once: the signed URLs all name the same host.
    host: String,
    /// A request (or a connect) that does not move for this long fails.
    pub op_timeout: Duration,
    /// Signs the object requests (GET, PUT, HEAD, DELETE) when there are
    /// credentials.
    presigner: Option<Arc<Presigner>>,
    /// Where their signature goes (the Authorization header by default).
    sign: wirebench_core::spec::S3Sign,
    /// The path an object's key is appended to (encoded).
    base_path: String,
}

/// A request target: the path and the query (origin form), and the
/// header lines of its signature when it is signed in its headers.
pub struct Target(pub String, pub Option<Arc<str>>);

impl From<Url> for Target {
    fn from(url: Url) -> Target {
        let mut t = url.path().to_string();
        if let Some(q) = url.query() {
            t.push('?');
            t.push_str(q);
        }
        Target(t, None)
    }
}

impl From<String> for Target {
    fn from(t: String) -> Target {
        Target(t, None)
    }
}

impl From<super::sigv4::HeaderSigned> for Target {
    fn from(h: super::sigv4::HeaderSigned) -> Target {
        Target(h.target, Some(h.headers))
    }
}

impl S3Client {
    /// `tls`: None for plain HTTP, or the PEM file of extra trusted CAs
    /// (`Some(None)`: the Mozilla roots only).
    pub fn new(
        addr: &str,
        bucket: &str,
        style: wirebench_core::spec::UrlStyle,
        region: &str,
        creds: Option<Credentials>,
        tls: Option<Option<&std::path::Path>>,
    ) -> Result<S3Client, String> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let base = Url::parse(&format!("{scheme}://{addr}/"))
            .map_err(|e| format!("'{addr}' is not a host and port: {e}"))?;
        let style = match style {
            wirebench_core::spec::UrlStyle::Path => rusty_s3::UrlStyle::Path,
            wirebench_core::spec::UrlStyle::Virtual => rusty_s3::UrlStyle::VirtualHost,
        };
        let bucket = Bucket::new(base, style, bucket.to_string(), region.to_string())
            .map_err(|e| match e {
                rusty_s3::BucketError::ParseError(_) | rusty_s3::BucketError::MissingHost => {
                    format!("bucket '{bucket}' at {addr}: {e}")
                }
                _ => format!(
                    "bucket '{bucket}' at {addr}: {e} (virtual-host style needs a host name, not an IP address)"
                ),
            })?;
        let tls = match tls {
            None => None,
            Some(ca) => {
                // The certificate names the host requests go to (bucket.host in virtual style).
                let host = bucket.base_url().host_str().unwrap_or_default().to_string();
                Some(ClientTls::new(&host, ca)?)
            }
        };
        let base = bucket.base_url();
        let host = match base.port() {
            Some(p) => format!("{}:{p}", base.host_str().unwrap_or_default()),
            None => base.host_str().unwrap_or_default().to_string(),
        };
        let base_path = base.path().to_string();
        let presigner = creds.as_ref().map(|c| {
            Arc::new(Presigner::new(
                c.key(),
                c.secret(),
                region,
                &host,
                &base_path,
                EXPIRES.as_secs(),
            ))
        });
        if host.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(format!("'{host}' cannot be a Host header"));
        }
        let host = format!("Host: {host}\r\n");
        Ok(S3Client {
            bucket,
            creds,
            addr: addr.to_string(),
            tls,
            host,
            op_timeout: Duration::from_secs(10),
            presigner,
            sign: wirebench_core::spec::S3Sign::Header,
            base_path,
        })
    }

    /// The same client, signing its object requests in `sign`.
    pub fn with_sign(mut self, sign: wirebench_core::spec::S3Sign) -> S3Client {
        self.sign = sign;
        self
    }

    /// The same client, whose requests fail after `d` without progress
    /// (zero: never).
    pub fn with_op_timeout(mut self, d: Duration) -> S3Client {
        self.op_timeout = d;
        self
    }

    /// Opens a connection to the endpoint (within the op timeout).
    pub async fn connect(&self) -> io::Result<HttpConn> {
        let p = Progress::new();
        within(
            &p,
            self.op_timeout,
            "connecting to",
            &self.addr,
            HttpConn::connect(&self.addr, self.tls.clone()),
        )
        .await
    }

    pub fn creds(&self) -> Option<&Credentials> {
        self.creds.as_ref()
    }

    /// Sends one request and reads its response to the end.
    pub async fn exec(
        &self,
        conn: &mut HttpConn,
        method: rusty_s3::Method,
        target: impl Into<Target>,
        headers: &[(&str, String)],
        body: Payload,
        sink: Sink,
    ) -> io::Result<Reply> {
        let Target(target, signed) = target.into();
        let method = match method {
            rusty_s3::Method::Get => "GET",
            rusty_s3::Method::Put => "PUT",
            rusty_s3::Method::Head => "HEAD",
            rusty_s3::Method::Delete => "DELETE",
            rusty_s3::Method::Post => "POST",
        };
        let (limit, addr) = (self.op_timeout, self.addr.as_str());
        let traced = trace_id();
        let clock = Progress::new();
        let body = body.timed(clock.clone());
        // The connection's one timer watches the request: it fails once
        // nothing moved for the op timeout, naming what the request was
        // waiting for.
        let phase = std::sync::atomic::AtomicU8::new(0);
        let HttpConn {
            addr: to,
            tls,
            conn,
            timer,
        } = conn;
        let work = async {
            if !conn.is_reusable() {
                HttpConn::reopen(conn, to, tls.as_ref()).await?;
            }
            phase.store(1, std::sync::atomic::Ordering::Relaxed);
            clock.tick();
            let sent = self
                .attempt(
                    conn,
                    method,
                    &target,
                    signed.as_deref(),
                    headers,
                    body.clone(),
                    sink,
                    &clock,
                    &phase,
                    traced,
                )
                .await;
            match sent {
                // Closed by the server while idle: sent again once, on a new
                // connection.
                Err(e) if h1::unanswered(&e) => {
                    phase.store(0, std::sync::atomic::Ordering::Relaxed);
                    HttpConn::reopen(conn, to, tls.as_ref()).await?;
                    phase.store(1, std::sync::atomic::Ordering::Relaxed);
                    self.attempt(
                        conn,
                        method,
                        &target,
                        signed.as_deref(),
                        headers,
                        body,
                        sink,
                        &clock,
                        &phase,
                        traced,
                    )
                    .await
                }
                r => r,
            }
        };
        let Some(reply) = timer.run(&clock, limit, work).await else {
            let what = ["reconnecting to", "waiting for", "reading from"]
                [usize::from(phase.load(std::sync::atomic::Ordering::Relaxed))];
            return Err(stalled(what, addr, limit));
        };
        let mut reply = reply?;
        if reply.status >= 300 {
            let text = String::from_utf8_lossy(&reply.kept);
            reply.failure = Some(match xml_value(&text, "Code") {
                Some(code) => format!("{} {code}", reply.status),
                None => reply.status.to_string(),
            });
        }
        Ok(reply)
    }

    /// Writes one request on `conn` and reads its response, `clock`
    /// ticking as bytes move; the response body goes to `sink`.
    #[allow(clippy::too_many_arguments)]
    async fn attempt(
        &self,
        conn: &mut H1Conn,
        method: &str,
        target: &str,
        signed: Option<&str>,
        headers: &[(&str, String)],
        mut body: Payload,
        sink: Sink,
        clock: &Progress,
        phase: &std::sync::atomic::AtomicU8,
        traced: Option<u64>,
    ) -> io::Result<Reply> {
        use std::io::Write;
        let event = |name: &'static str| trace::record_traced(name, traced);
        event(trace::BEGIN);
        let len = http_body::Body::size_hint(&body).exact().unwrap_or(0);
        let req = conn.request_buf();
        write!(req, "{method} {target} HTTP/1.1\r\n{}", self.host).expect("a Vec takes it");
        if let Some(lines) = signed {
            req.extend_from_slice(lines.as_bytes());
        }
        if method == "PUT" || method == "POST" {
            write!(req, "Content-Length: {len}\r\n").expect("a Vec takes it");
        }
        for (k, v) in headers {
            write!(req, "{k}: {v}\r\n").expect("a Vec takes it");
        }
        if let Some(id) = traced {
            // Unsigned: a server that does not know it ignores it.
            write!(req, "{}: {id}\r\n", super::fake::TRACE_HEADER).expect("a Vec takes it");
        }
        req.extend_from_slice(b"\r\n");
        // A body of one frame goes out with the head (one write when both
        // are small); a longer one frame by frame.
        let first = match body.frame().await {
            Some(f) => f.map_err(io_err)?.into_data().unwrap_or_default(),
            None => Default::default(),
        };
        conn.send(&first).await?;
        event("headers sent");
        let mut more = false;
        while let Some(f) = body.frame().await {
            if let Ok(d) = f.map_err(io_err)?.into_data() {
                conn.send_more(&d).await?;
                more = true;
            }
        }
        if more || !first.is_empty() && len > 0 {
            event("body sent");
        }
        clock.tick();
        let (mut etag, mut content_length, mut fake) = (None, None, false);
        let head = conn
            .head(method == "HEAD", &mut |name, value| {
                if name.eq_ignore_ascii_case("etag") {
                    etag = std::str::from_utf8(value).ok().map(str::to_string);
                } else if name.eq_ignore_ascii_case("content-length") {
                    content_length = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok());
                } else if name.eq_ignore_ascii_case(super::fake::FAKE_HEADER) {
                    fake = true;
                }
            })
            .await?;
        phase.store(2, std::sync::atomic::Ordering::Relaxed);
        event("response headers");
        clock.tick();
        let error = head.status >= 300;
        // The fake server answers reads with zeroes, whatever was written.
        let sink = match sink {
            _ if error => Sink::Keep,
            Sink::Verify { .. } if fake => Sink::Zeroes,
            s => s,
        };
        let (mut kept, mut first_body_at, mut mismatch, mut got) = (Vec::new(), None, false, 0u64);
        let bytes_in = conn
            .body(&head, &mut |data| {
                clock.tick();
                if data.is_empty() {
                    return;
                }
                if first_body_at.is_none() {
                    event("first body byte");
                    first_body_at = Some(Instant::now());
                }
                match sink {
                    Sink::Keep => keep(&mut kept, data),
                    Sink::Verify { seed, offset } => {
                        mismatch = mismatch || !payload::check(seed, offset + got, data);
                    }
                    Sink::Zeroes => mismatch |= data.iter().any(|&b| b != 0),
                    Sink::Discard => {}
                }
                got += data.len() as u64;
            })
            .await?;
        event(trace::END);
        Ok(Reply {
            status: head.status,
            headers_at: head.headers_at,
            first_body_at,
            bytes_in,
            kept,
            failure: (mismatch && !error).then(|| "data mismatch".to_string()),
            etag,
            content_length,
        })
    }

    /// An object request's target, signed in its headers or presigned
    /// (plain without credentials).
    fn object(&self, method: &str, key: &str) -> Target {
        match (&self.presigner, self.sign) {
            (Some(p), wirebench_core::spec::S3Sign::Header) => {
                p.object_in_headers(method, key).into()
            }
            (Some(p), wirebench_core::spec::S3Sign::Query) => p.object(method, key).into(),
            (None, _) => {
                let mut t = self.base_path.clone();
                super::sigv4::encode_path(&mut t, key);
                t.into()
            }
        }
    }
    pub fn put_url(&self, key: &str) -> Target {
        self.object("PUT", key)
    }
    pub fn get_url(&self, key: &str) -> Target {
        self.object("GET", key)
    }
    pub fn head_url(&self, key: &str) -> Target {
        self.object("HEAD", key)
    }
    pub fn delete_url(&self, key: &str) -> Target {
        self.object("DELETE", key)
    }
    pub fn head_bucket_url(&self) -> Url {
        self.bucket.head_bucket(self.creds()).sign(EXPIRES)
    }
    pub fn create_bucket_url(&self) -> Option<Url> {
        Some(self.bucket.create_bucket(self.creds()?).sign(EXPIRES))
    }
    pub fn list_url(&self, prefix: &str, max_keys: usize) -> Url {
        let mut a = self.bucket.list_objects_v2(self.creds());
        a.with_prefix(prefix);
        a.with_max_keys(max_keys);
        a.sign(EXPIRES)
    }
    /// A page of the listing of `prefix`, from `token` (the previous
    /// page's continuation) if given.
    pub fn list_page_url(&self, prefix: &str, token: Option<&str>) -> Url {
        let mut a = self.bucket.list_objects_v2(self.creds());
        a.with_prefix(prefix);
        if let Some(t) = token {
            a.with_continuation_token(t);
        }
        a.sign(EXPIRES)
    }
    pub fn create_multipart_url(&self, key: &str) -> Url {
        self.bucket
            .create_multipart_upload(self.creds(), key)
            .sign(EXPIRES)
    }
    pub fn upload_part_url(&self, key: &str, part: u16, upload_id: &str) -> Url {
        self.bucket
            .upload_part(self.creds(), key, part, upload_id)
            .sign(EXPIRES)
    }
    pub fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> (Url, String) {
        let a = self.bucket.complete_multipart_upload(
            self.creds(),
            key,
            upload_id,
            etags.iter().map(String::as_str),
        );
        let url = a.sign(EXPIRES);
        (url, a.body())
    }
    pub fn abort_multipart_url(&self, key: &str, upload_id: &str) -> Url {
        self.bucket
            .abort_multipart_upload(self.creds(), key, upload_id)
            .sign(EXPIRES)
    }
}

fn keep(kept: &mut Vec<u8>, data: &[u8]) {
    let room = MAX_KEPT.saturating_sub(kept.len());
    kept.extend_from_slice(&data[..data.len().min(room)]);
}

/// The text of the first `<name>` element of an XML document.
pub fn xml_value(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))? + start;
    Some(xml[start..end].to_string())
}

/// How many `<name>` elements an XML document has.
pub fn xml_count(xml: &str, name: &str) -> usize {
    xml.matches(&format!("<{name}>")).count()
}

/// The keys of a ListObjectsV2 answer, once it is read as one: well-formed
/// XML whose root is `ListBucketResult`; else why not (an answer the client
/// cannot read is a failure, never a success).
pub fn list_keys(body: &[u8]) -> Result<u64, String> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_reader(body);
    let mut buf = Vec::new();
    let (mut depth, mut root, mut keys) = (0usize, None, 0u64);
    loop {
        let event = r
            .read_event_into(&mut buf)
            .map_err(|_| "not XML".to_string())?;
        match event {
            Event::Start(e) => {
                if depth == 0 {
                    root = Some(e.name().as_ref().to_vec());
                } else if depth == 2 && e.name().as_ref() == b"Key" {
                    keys += 1;
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Empty(e) if depth == 0 => root = Some(e.name().as_ref().to_vec()),
            Event::Text(t) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                return Err("not XML (text outside an element)".into());
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    match root.as_deref() {
        _ if depth > 0 => Err("not XML (cut short)".into()),
        Some(b"ListBucketResult") => Ok(keys),
        Some(other) => Err(format!(
            "not a ListBucketResult (a {})",
            String::from_utf8_lossy(other)
        )),
        None => Err("not XML (empty)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::fake;

    #[test]
    fn issue_35_a_list_answer_is_read_or_failed() {
        let ok = b"<?xml version=\"1.0\"?>\n<ListBucketResult><Name>b</Name><Contents><Key>a</Key></Contents><Contents><Key>b</Key></Contents></ListBucketResult>";
        assert_eq!(list_keys(ok), Ok(2));
        assert_eq!(list_keys(b"<ListBucketResult/>"), Ok(0));
        for (bad, why) in [
            (&b"<<<not xml"[..], "not XML"),
            (b"", "not XML (empty)"),
            (b"<ListBucketResult><Contents>", "cut short"),
            (b"<Error><Code>x</Code></Error>", "a Error"),
            (b"hello", "text outside"),
        ] {
            let e = list_keys(bad).unwrap_err();
            assert!(e.contains(why), "{}: {e}", String::from_utf8_lossy(bad));
        }
    }

    /// A connection the server closed while it was idle is opened again,
    /// and the request sent on it answered (and checked byte for byte); a
    /// missing object is a failure by its S3 code.
    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_closed_while_idle_is_opened_again() {
        let mut cfg = fake::FakeConfig::new("127.0.0.1:0", "bkt");
        cfg.creds = Some(("AKID".into(), "SECRET".into()));
        cfg.idle_timeout = Some(Duration::from_millis(200));
        let server = fake::start(&cfg).unwrap();
        let creds = Credentials::new("AKID", "SECRET");
        let client = S3Client::new(
            &server.addr.to_string(),
            "bkt",
            wirebench_core::spec::UrlStyle::Path,
            "us-east-1",
            Some(creds),
            None,
        )
        .unwrap();
        let mut conn = client.connect().await.unwrap();
        let put = client
            .exec(
                &mut conn,
                rusty_s3::Method::Put,
                client.put_url("k"),
                &[],
                Payload::new(5000, 0, Some(9)),
                Sink::Discard,
            )
            .await
            .unwrap();
        assert_eq!(put.status, 200, "{:?}", put.failure);
        // Longer than the server's idle timeout: it closes the connection.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let get = client
            .exec(
                &mut conn,
                rusty_s3::Method::Get,
                client.get_url("k"),
                &[],
                Payload::empty(),
                Sink::Verify { seed: 9, offset: 0 },
            )
            .await
            .unwrap();
        assert_eq!(get.status, 200, "{:?}", get.failure);
        assert_eq!((get.bytes_in, get.failure), (5000, None));
        assert!(get.first_body_at.is_some());
        let missing = client
            .exec(
                &mut conn,
                rusty_s3::Method::Get,
                client.get_url("nope"),
                &[],
                Payload::empty(),
                Sink::Discard,
            )
            .await
            .unwrap();
        assert_eq!(missing.failure.as_deref(), Some("404 NoSuchKey"));
        let stats = server.shutdown();
        assert_eq!(stats.conns_accepted, 2, "one connection, opened again once");
    }

    /// A server that takes the request and never answers: the request
    /// fails once nothing moved for the op timeout, saying what it waited
    /// for.
    #[tokio::test(flavor = "current_thread")]
    async fn a_request_nothing_answers_fails_after_the_op_timeout() {
        let mute = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = mute.local_addr().unwrap().to_string();
        let held = tokio::spawn(async move {
            let (s, _) = mute.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(s);
        });
        let client = S3Client::new(
            &addr,
            "bkt",
            wirebench_core::spec::UrlStyle::Path,
            "us-east-1",
            None,
            None,
        )
        .unwrap()
        .with_op_timeout(Duration::from_millis(300));
        let mut conn = client.connect().await.unwrap();
        let start = Instant::now();
        let e = client
            .exec(
                &mut conn,
                rusty_s3::Method::Get,
                client.get_url("k"),
                &[],
                Payload::empty(),
                Sink::Discard,
            )
            .await
            .unwrap_err();
        let took = start.elapsed();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("waiting for"), "{e}");
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(2),
            "{took:?}"
        );
        held.abort();
    }
}
