//! A connected byte stream over TCP or a Unix socket, its two owned halves,
//! and `FrameBuf`, the receive buffer that both client and servers parse
//! frames from.

use super::frame::{FrameError, HEADER_LEN, Header};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream, tcp, unix};
use wirebench_core::spec::Endpoint;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects to an endpoint; TCP connections get TCP_NODELAY.
    pub async fn connect(ep: &Endpoint) -> io::Result<Stream> {
        let s = match ep {
            Endpoint::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str()).await?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Endpoint::Unix(path) => Stream::Unix(UnixStream::connect(path).await?),
            Endpoint::S3 { .. } => {
                return Err(io::Error::other(format!(
                    "{ep}: an S3 endpoint, not a messenger one"
                )));
            }
        };
        Ok(s)
    }

    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        }
    }
}

pub enum ReadHalf {
    Tcp(tcp::OwnedReadHalf),
    Unix(unix::OwnedReadHalf),
}

pub enum WriteHalf {
    Tcp(tcp::OwnedWriteHalf),
    Unix(unix::OwnedWriteHalf),
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(r) => Pin::new(r).poll_read(cx, buf),
            ReadHalf::Unix(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_write(cx, buf),
            WriteHalf::Unix(w) => Pin::new(w).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_flush(cx),
            WriteHalf::Unix(w) => Pin::new(w).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_shutdown(cx),
            WriteHalf::Unix(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

/// A receive buffer holding at most one partial frame between reads. It
/// grows to fit the largest frame seen (bounded by the maximum frame size
/// the caller checks), and never otherwise.
pub struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameBuf {
    pub fn with_capacity(n: usize) -> FrameBuf {
        FrameBuf {
            buf: vec![0; n.max(HEADER_LEN * 4)],
            start: 0,
            end: 0,
        }
    }

    /// Reads once from `r`; returns the bytes read (0 at end of stream).
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < self.buf.len() / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = r.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }

    /// The next complete frame, if the buffer holds one: its header and the
    /// range of its payload in [`FrameBuf::bytes`].
    pub fn next_frame(
        &mut self,
        max_frame: u64,
    ) -> Result<Option<(Header, std::ops::Range<usize>)>, FrameError> {
        let avail = self.end - self.start;
        if avail < HEADER_LEN {
            return Ok(None);
        }
        let h = Header::decode(&self.buf[self.start..self.start + HEADER_LEN], max_frame)?;
        let total = HEADER_LEN + h.len as usize;
        if avail < total {
            if total > self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                self.buf.resize(total, 0);
            }
            return Ok(None);
        }
        let payload = self.start + HEADER_LEN..self.start + total;
        self.start += total;
        Ok(Some((h, payload)))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes received but not yet parsed.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }
}
