//! A lean HTTP/1.1 client connection for the load: the request written as
//! bytes made once, the response parsed in place (httparse) from one
//! buffer the connection keeps, its body handed on as it arrives. No task,
//! channel or header map per request: the cost per request is close to
//! the system calls'. HTTP/2 stays with hyper.
//!
//! Bounded whatever the server sends: a response head of at most
//! [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers, chunk-size lines and
//! trailers bounded too; the read buffer grows to at most 256 KiB.
//! Timeouts are the caller's (the whole exchange runs under one).

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest response head (status line and headers) read.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most headers a response may have.
pub const MAX_HEADERS: usize = 64;
/// The read buffer: its first size, and the most it grows to while a
/// large body streams through it.
const FIRST_BUF: usize = 16 * 1024;
const MAX_BUF: usize = 256 * 1024;
/// A request whose head and body together are at most this long is
/// written with one system call.
const ONE_WRITE: usize = 64 * 1024;

/// The steps in which a body's bulk wakes a plain TCP connection: once
/// this many bytes have arrived, while at least as many are still to come.
/// (Else each packet that finds the client asleep wakes it, and on a VM
/// each such wake-up costs the sender tens of microseconds: the server
/// serving a 1 MiB GET paid twice the CPU it pays a client that never
/// sleeps, such as wrk.)
const BULK_STEPS: [usize; 2] = [256 * 1024, 64 * 1024];

/// A byte stream a connection runs over (TCP, TLS over TCP).
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {
    /// The TCP socket when the stream's bytes are the socket's (plain
    /// TCP), so that a body's bulk can wake the connection in
    /// `BULK_STEPS`. None over TLS, whose records the stream may hold
    /// part of.
    fn plain_socket(&self) -> Option<BorrowedFd<'_>> {
        None
    }
}

impl Io for tokio::net::TcpStream {
    fn plain_socket(&self) -> Option<BorrowedFd<'_>> {
        Some(self.as_fd())
    }
}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for tokio_rustls::client::TlsStream<T> {}
impl Io for tokio::io::DuplexStream {}

/// The error of a request the server closed the connection on before
/// answering anything, on a connection that had answered before: a
/// keep-alive connection closed while idle. The request can be sent again
/// on a new connection (see [`unanswered`]).
#[derive(Debug)]
struct Unanswered;

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server closed the connection before answering")
    }
}

impl std::error::Error for Unanswered {}

/// Whether `e` says the request went unanswered on a connection the server
/// had closed while idle, so that it may be sent again on a new one.
pub fn unanswered(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<Unanswered>())
}

fn bad(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// A response's status and when its head arrived.
#[derive(Debug, Clone, Copy)]
pub struct Response {
    pub status: u16,
    /// When the whole head (status line and headers) had arrived.
    pub headers_at: Instant,
    /// Body bytes (after chunked decoding).
    pub bytes_in: u64,
}

/// A response's head, read.
#[derive(Debug, Clone, Copy)]
pub struct Head {
    pub status: u16,
    /// When the whole head had arrived.
    pub headers_at: Instant,
    framing: Framing,
}

/// How the body of a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    /// At the end of the connection.
    Close,
}

/// One HTTP/1.1 connection: requests one after the other (no pipelining).
pub struct H1Conn {
    io: Box<dyn Io>,
    /// Bytes read and not yet used: `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The request being written (head, and the body when small).
    out: Vec<u8>,
    /// Whether another request may follow on this connection.
    reusable: bool,
    /// Whether a response came back on it already (a close before any
    /// answer then means "closed while idle").
    answered: bool,
    /// The socket's `SO_RCVLOWAT` as last set (1: the kernel's default).
    lowat: usize,
}

impl H1Conn {
    pub fn new(io: Box<dyn Io>) -> H1Conn {
        H1Conn {
            io,
            buf: vec![0; FIRST_BUF],
            start: 0,
            end: 0,
            out: Vec::with_capacity(1024),
            reusable: true,
            answered: false,
            lowat: 1,
        }
    }

    /// Whether the connection can carry another request (the last response
    /// did not say `Connection: close`, its body did not end at the end of
    /// the connection, and nothing broke).
    pub fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// The buffer the next request is built in, emptied.
    pub fn request_buf(&mut self) -> &mut Vec<u8> {
        self.out.clear();
        &mut self.out
    }

    /// Writes the request built in [`H1Conn::request_buf`] followed by
    /// `body` (one write when they are small together).
    pub async fn send(&mut self, body: &[u8]) -> io::Result<()> {
        let r = self.send_inner(body).await;
        self.sent(r)
    }

    async fn send_inner(&mut self, body: &[u8]) -> io::Result<()> {
        if self.out.len() + body.len() <= ONE_WRITE {
            self.out.extend_from_slice(body);
            self.io.write_all(&self.out).await?;
        } else {
            self.io.write_all(&self.out).await?;
            self.io.write_all(body).await?;
        }
        self.io.flush().await
    }

    /// Writes the request built in [`H1Conn::request_buf`]; its body is
    /// to follow with [`H1Conn::send_more`].
    pub async fn send_head(&mut self) -> io::Result<()> {
        let r = async {
            self.io.write_all(&self.out).await?;
            self.io.flush().await
        }
        .await;
        self.sent(r)
    }

    /// Writes more of a request's body.
    pub async fn send_more(&mut self, data: &[u8]) -> io::Result<()> {
        let r = async {
            self.io.write_all(data).await?;
            self.io.flush().await
        }
        .await;
        if r.is_err() {
            self.reusable = false;
        }
        r
    }

    /// A failed write on a connection that answered before, with nothing
    /// of a response read, is a connection closed while idle.
    fn sent(&mut self, r: io::Result<()>) -> io::Result<()> {
        let Err(e) = r else { return Ok(()) };
        self.reusable = false;
        let closed = matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
        );
        if closed && self.answered && self.start == self.end {
            return Err(io::Error::new(e.kind(), Unanswered));
        }
        Err(e)
    }

    /// Reads more bytes into the buffer (making room first); false at the
    /// end of the connection. `to_come`: bytes known to be still on their
    /// way beyond those buffered (0: not known).
    async fn fill(&mut self, to_come: u64) -> io::Result<bool> {
        self.wake_for(to_come)?;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                (self.start, self.end) = (0, self.end - self.start);
            } else if self.buf.len() < MAX_BUF {
                self.buf.resize((self.buf.len() * 2).min(MAX_BUF), 0);
            } else {
                return Err(bad("read buffer full"));
            }
        }
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n > 0)
    }

    /// Sets the socket to wake the connection once the largest of
    /// [`BULK_STEPS`] that `to_come` holds has arrived, or at every byte.
    /// Never more than will come, so that no read waits for bytes that are
    /// not on their way.
    fn wake_for(&mut self, to_come: u64) -> io::Result<()> {
        let Some(fd) = self.io.plain_socket() else {
            return Ok(());
        };
        let want = BULK_STEPS
            .into_iter()
            .find(|&step| to_come >= step as u64)
            .unwrap_or(1);
        if want != self.lowat {
            crate::sys::set_recv_lowat(fd, want)?;
            self.lowat = want;
        }
        Ok(())
    }

    /// Reads the response to the request just sent. Each header goes to
    /// `header` (name, value), each piece of the body to `body` as it
    /// arrives. `head_request`: the request was a HEAD (no body follows
    /// whatever the headers say). Informational (1xx) responses are skipped.
    pub async fn response(
        &mut self,
        head_request: bool,
        header: &mut dyn FnMut(&str, &[u8]),
        body: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Response> {
        let head = self.head(head_request, header).await?;
        let bytes_in = self.body(&head, body).await?;
        Ok(Response {
            status: head.status,
            headers_at: head.headers_at,
            bytes_in,
        })
    }

    /// Reads the head of the response to the request just sent (see
    /// [`H1Conn::response`]); its body is to be read with [`H1Conn::body`].
    pub async fn head(
        &mut self,
        head_request: bool,
        header: &mut dyn FnMut(&str, &[u8]),
    ) -> io::Result<Head> {
        let first = self.start == self.end;
        let r = async {
            loop {
                let (status, framing) = self.parse_head(first, head_request, header).await?;
                if !(100..200).contains(&status) || status == 101 {
                    break Ok((status, framing));
                }
            }
        }
        .await;
        match r {
            Ok((status, framing)) => Ok(Head {
                status,
                headers_at: Instant::now(),
                framing,
            }),
            Err(e) => {
                self.reusable = false;
                Err(e)
            }
        }
    }

    /// Reads the body of the response whose head is `head`, each piece to
    /// `body` as it arrives; returns its length.
    pub async fn body(&mut self, head: &Head, body: &mut dyn FnMut(&[u8])) -> io::Result<u64> {
        let r = match head.framing {
            Framing::None => Ok(0),
            Framing::Length(n) => self.body_length(n, body).await,
            Framing::Chunked => self.body_chunked(body).await,
            Framing::Close => {
                self.reusable = false;
                self.body_to_close(body).await
            }
        };
        match &r {
            Ok(_) => self.answered = true,
            Err(_) => self.reusable = false,
        }
        r
    }

    /// Reads and parses one response head; leaves the buffer at its body.
    async fn parse_head(
        &mut self,
        first: bool,
        head_request: bool,
        header: &mut dyn FnMut(&str, &[u8]),
    ) -> io::Result<(u16, Framing)> {
        loop {
            if self.start < self.end {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut resp = httparse::Response::new(&mut slots);
                match resp.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(len)) => {
                        let status = resp.code.unwrap_or(0);
                        let mut framing = Framing::Close;
                        let mut chunked = false;
                        let mut close = resp.version == Some(0);
                        for h in resp.headers.iter() {
                            let name = h.name;
                            if name.eq_ignore_ascii_case("content-length") {
                                let n = std::str::from_utf8(h.value)
                                    .ok()
                                    .and_then(|v| v.trim().parse::<u64>().ok())
                                    .ok_or_else(|| bad("a bad Content-Length"))?;
                                if framing != Framing::Close && framing != Framing::Length(n) {
                                    return Err(bad("two different Content-Lengths"));
                                }
                                framing = Framing::Length(n);
                            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                                chunked = h.value.rsplit(|&b| b == b',').next().is_some_and(|v| {
                                    v.trim_ascii().eq_ignore_ascii_case(b"chunked")
                                });
                            } else if name.eq_ignore_ascii_case("connection") {
                                let v = h.value.trim_ascii();
                                if v.eq_ignore_ascii_case(b"close") {
                                    close = true;
                                } else if v.eq_ignore_ascii_case(b"keep-alive") {
                                    close = false;
                                }
                            }
                            header(name, h.value);
                        }
                        if chunked {
                            framing = Framing::Chunked;
                        }
                        if head_request
                            || (100..200).contains(&status)
                            || status == 204
                            || status == 304
                        {
                            framing = Framing::None;
                        }
                        if close {
                            self.reusable = false;
                        }
                        self.start += len;
                        return Ok((status, framing));
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.end - self.start >= MAX_HEAD {
                            return Err(bad(format!(
                                "a response head longer than {} KiB",
                                MAX_HEAD / 1024
                            )));
                        }
                    }
                    Err(httparse::Error::TooManyHeaders) => {
                        return Err(bad(format!(
                            "a response with more than {MAX_HEADERS} headers"
                        )));
                    }
                    Err(e) => return Err(bad(format!("not an HTTP/1.1 response: {e}"))),
                }
            }
            let got = self.start < self.end;
            // A connection closed while idle ends (or is reset, when the
            // request reached a closed socket) before any byte of an answer.
            let idle_close = first && !got && self.answered;
            let more = match self.fill(0).await {
                Err(e) if idle_close && e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(io::Error::new(e.kind(), Unanswered));
                }
                r => r?,
            };
            if !more {
                self.reusable = false;
                if idle_close {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, Unanswered));
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection in the middle of a response head",
                ));
            }
        }
    }

    /// A body of `n` bytes.
    async fn body_length(&mut self, n: u64, body: &mut dyn FnMut(&[u8])) -> io::Result<u64> {
        let mut left = n;
        while left > 0 {
            if self.start == self.end && !self.fill(left).await? {
                return Err(short_body(n - left, n));
            }
            let take = (self.end - self.start).min(usize::try_from(left).unwrap_or(usize::MAX));
            body(&self.buf[self.start..self.start + take]);
            self.start += take;
            left -= take as u64;
        }
        Ok(n)
    }

    /// A body to the end of the connection.
    async fn body_to_close(&mut self, body: &mut dyn FnMut(&[u8])) -> io::Result<u64> {
        let mut got = 0u64;
        loop {
            if self.start < self.end {
                body(&self.buf[self.start..self.end]);
                got += (self.end - self.start) as u64;
                self.start = self.end;
            }
            if !self.fill(0).await? {
                return Ok(got);
            }
        }
    }

    /// A chunked body (its trailers skipped).
    async fn body_chunked(&mut self, body: &mut dyn FnMut(&[u8])) -> io::Result<u64> {
        let mut got = 0u64;
        loop {
            let size = loop {
                match httparse::parse_chunk_size(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.start += used;
                        break size;
                    }
                    Ok(httparse::Status::Partial) if self.end - self.start < 4096 => {
                        self.more("a chunk size").await?;
                    }
                    _ => return Err(bad("a bad chunk size line")),
                }
            };
            if size == 0 {
                return self.trailers().await.map(|()| got);
            }
            let mut left = size;
            while left > 0 {
                if self.start == self.end {
                    self.more("a chunk").await?;
                }
                let take = (self.end - self.start).min(usize::try_from(left).unwrap_or(usize::MAX));
                body(&self.buf[self.start..self.start + take]);
                self.start += take;
                left -= take as u64;
            }
            got += size;
            while self.end - self.start < 2 {
                self.more("a chunk's end").await?;
            }
            if &self.buf[self.start..self.start + 2] != b"\r\n" {
                return Err(bad("a chunk not followed by CRLF"));
            }
            self.start += 2;
        }
    }

    /// Skips a chunked body's trailers, to the empty line that ends them.
    async fn trailers(&mut self) -> io::Result<()> {
        let mut seen = 0usize;
        loop {
            match self.buf[self.start..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                Some(0) => {
                    self.start += 2;
                    return Ok(());
                }
                Some(i) => {
                    self.start += i + 2;
                    seen += i + 2;
                }
                None => self.more("the trailers").await?,
            }
            if seen > MAX_HEAD {
                return Err(bad("trailers longer than the longest head"));
            }
        }
    }

    /// Reads more, failing at the end of the connection in the middle of
    /// `what`.
    async fn more(&mut self, what: &str) -> io::Result<()> {
        if self.fill(0).await? {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the server closed the connection in the middle of {what}"),
        ))
    }
}

fn short_body(got: u64, of: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the server closed the connection after {got} of the body's {of} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A connection whose server side writes `answer` (in pieces of
    /// `piece` bytes) and then closes; the requests it got.
    async fn exchange(
        answers: &[&[u8]],
        piece: usize,
        head: bool,
    ) -> Vec<io::Result<(Response, Vec<(String, String)>, Vec<u8>)>> {
        let (client, mut server) = tokio::io::duplex(1 << 20);
        let all: Vec<u8> = answers.concat();
        let feeder = tokio::spawn(async move {
            // (The client may stop reading early: a refused answer.)
            for c in all.chunks(piece.max(1)) {
                if server.write_all(c).await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
            let _ = server.shutdown().await;
            // Keeps reading what the client sends until it goes away.
            let mut sink = Vec::new();
            let _ = server.read_to_end(&mut sink).await;
        });
        let mut c = H1Conn::new(Box::new(client));
        let mut out = Vec::new();
        for _ in 0..answers.len() {
            c.request_buf()
                .extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
            c.send(b"").await.unwrap();
            let (mut hs, mut body) = (Vec::new(), Vec::new());
            let r = c
                .response(
                    head,
                    &mut |n, v| hs.push((n.to_string(), String::from_utf8_lossy(v).into())),
                    &mut |d| body.extend_from_slice(d),
                )
                .await;
            let failed = r.is_err();
            out.push(r.map(|r| (r, hs, body)));
            if failed {
                break;
            }
        }
        drop(c);
        feeder.await.unwrap();
        out
    }

    #[tokio::test]
    async fn bodies_by_length_chunks_and_close_read_whole_in_any_pieces() {
        let length: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello";
        let chunked: &[u8] = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0A\r\n0123456789\r\n0\r\nX-T: t\r\n\r\n";
        let close: &[u8] = b"HTTP/1.0 200 OK\r\n\r\nto the end";
        for piece in [1, 2, 7, 1000] {
            let out = exchange(&[length, chunked, close], piece, false).await;
            let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
            assert_eq!(out.len(), 3, "piece {piece}");
            assert_eq!((out[0].0.status, out[0].0.bytes_in), (200, 5));
            assert_eq!(out[0].2, b"hello");
            assert!(out[0].1.contains(&("X-A".into(), "1".into())));
            assert_eq!((out[1].0.status, out[1].0.bytes_in), (404, 13));
            assert_eq!(out[1].2, b"abc0123456789");
            assert_eq!(out[2].2, b"to the end", "piece {piece}");
        }
    }

    #[tokio::test]
    async fn informational_answers_are_skipped_and_head_has_no_body() {
        let a: &[u8] =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        let out = exchange(&[a], 4, false).await;
        let (r, _, body) = out.into_iter().next().unwrap().unwrap();
        assert_eq!((r.status, body.as_slice()), (200, &b"abc"[..]));
        // A HEAD's Content-Length announces a body that does not come.
        let h: &[u8] =
            b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let out = exchange(&[h, b""], 3, true).await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().unwrap().0.bytes_in, 0);
        assert_eq!(out[1].as_ref().unwrap().0.status, 204);
    }

    #[tokio::test]
    async fn a_close_after_an_answer_is_unanswered_and_other_ends_are_errors() {
        let ok: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        // The second request finds the connection closed: it may be sent again.
        let out = exchange(&[ok, b""], 100, false).await;
        let e = out[1].as_ref().unwrap_err();
        assert!(unanswered(e), "{e}");
        // A first request that gets nothing is not "unanswered": the server
        // refused it.
        let out = exchange(&[b""], 100, false).await;
        assert!(!unanswered(out[0].as_ref().unwrap_err()));
        // A body cut short names how much came.
        let short: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        let e = exchange(&[short], 100, false).await.remove(0).unwrap_err();
        assert!(e.to_string().contains("3 of the body's 10 bytes"), "{e}");
        assert!(!unanswered(&e));
    }

    #[tokio::test]
    async fn hostile_answers_are_refused_with_bounded_memory() {
        // One header that never ends.
        let mut huge = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        huge.resize(MAX_HEAD * 3, b'a');
        let e = exchange(&[&huge], 4096, false).await.remove(0).unwrap_err();
        assert!(e.to_string().contains("longer than 64 KiB"), "{e}");
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_HEADERS + 1 {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let e = exchange(&[&many], 4096, false).await.remove(0).unwrap_err();
        assert!(e.to_string().contains("more than 64 headers"), "{e}");
        let bad_chunk: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        let e = exchange(&[bad_chunk], 4096, false)
            .await
            .remove(0)
            .unwrap_err();
        assert!(e.to_string().contains("chunk size"), "{e}");
        let two: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        let e = exchange(&[two], 4096, false).await.remove(0).unwrap_err();
        assert!(e.to_string().contains("two different"), "{e}");
        let garbage: &[u8] = b"SSH-2.0-OpenSSH_9.2\r\n";
        let e = exchange(&[garbage], 4096, false)
            .await
            .remove(0)
            .unwrap_err();
        assert!(e.to_string().contains("not an HTTP/1.1 response"), "{e}");
    }

    /// Over plain TCP a body's bulk wakes the connection in steps. Bodies
    /// of sizes around the steps, each written in uneven pieces, come
    /// whole, and the small answer after each is read at once: a step left
    /// set would have it wait for bytes that never come (the timeout).
    #[tokio::test]
    async fn bodies_around_the_bulk_steps_come_whole_over_tcp() {
        use std::time::Duration;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sizes: Vec<usize> = vec![
            1,
            65_535,
            65_536,
            65_537,
            262_143,
            262_144,
            262_145,
            1 << 20,
            3_000_001,
        ];
        let answers: Vec<usize> = sizes.iter().flat_map(|&n| [n, 5]).collect();
        let byte = |i: usize| (i % 251) as u8;
        let sent = answers.clone();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            let pieces = [1usize, 1000, 70_000, 200_000, 13];
            for (k, &n) in sent.iter().enumerate() {
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    let got = s.read(&mut buf).await.unwrap();
                    assert!(got > 0, "the client went away");
                    req.extend_from_slice(&buf[..got]);
                }
                req.clear();
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
                s.write_all(head.as_bytes()).await.unwrap();
                let body: Vec<u8> = (0..n).map(byte).collect();
                let mut at = 0;
                for p in pieces.iter().cycle().skip(k) {
                    if at == n {
                        break;
                    }
                    let end = (at + p).min(n);
                    s.write_all(&body[at..end]).await.unwrap();
                    at = end;
                    tokio::task::yield_now().await;
                }
            }
        });
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut c = H1Conn::new(Box::new(stream));
        for &n in &answers {
            c.request_buf()
                .extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
            c.send(b"").await.unwrap();
            let mut body = Vec::new();
            let r = tokio::time::timeout(
                Duration::from_secs(5),
                c.response(false, &mut |_, _| {}, &mut |d| body.extend_from_slice(d)),
            )
            .await
            .unwrap_or_else(|_| panic!("a body of {n} bytes did not come in 5 s"))
            .unwrap();
            assert_eq!((r.status, r.bytes_in), (200, n as u64));
            assert!(body.len() == n && body.iter().enumerate().all(|(i, &b)| b == byte(i)));
        }
        assert_eq!(c.lowat, 1, "back to every byte after the last body");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn connection_close_ends_reuse() {
        let a: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (client, mut server) = tokio::io::duplex(4096);
        server.write_all(a).await.unwrap();
        let mut c = H1Conn::new(Box::new(client));
        c.request_buf().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        c.send(b"").await.unwrap();
        let r = c
            .response(false, &mut |_, _| {}, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        assert!(!c.is_reusable());
    }
}
