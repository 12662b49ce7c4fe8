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
            Endpoint::S3 { .. }
            | Endpoint::Redis { .. }
            | Endpoint::Http { .. }
            | Endpoint::Grpc { .. }
            | Endpoint::Addr { .. } => {
                return Err(io::Error::other(format!("{ep}: not a messenger endpoint")));
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

/// A receive buffer holding at most one partial frame between reads.
///
/// It grows as bytes arrive, never ahead of them: a header that announces a
/// large frame reserves room (address space) but touches no memory until
/// the payload comes, so a peer that sends headers and nothing else costs
/// little. The largest it grows to is one frame plus one read, and frames
/// are bounded by the maximum frame size the caller checks.
pub struct FrameBuf {
    /// Bytes received; `buf.len()` is the end of what was received.
    buf: Vec<u8>,
    /// Where unparsed bytes start.
    start: usize,
    /// Room to offer each read.
    read_size: usize,
    /// Bytes still missing from the frame at `start`, once its header is in.
    missing: usize,
}

/// The most room reserved ahead of the bytes for a large frame.
const MAX_READ_AHEAD: usize = 1 << 20;

impl FrameBuf {
    /// A buffer offering reads of `read_size` bytes (more while a large
    /// frame arrives).
    pub fn with_capacity(read_size: usize) -> FrameBuf {
        let read_size = read_size.max(HEADER_LEN * 4);
        FrameBuf {
            buf: Vec::with_capacity(read_size),
            start: 0,
            read_size,
            missing: 0,
        }
    }

    /// Reads once from `r`; returns the bytes read (0 at end of stream).
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> io::Result<usize> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        let want = self.read_size.max(self.missing.min(MAX_READ_AHEAD));
        if self.buf.capacity() - self.buf.len() < want {
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.reserve(want);
        }
        // Reads into the spare capacity: nothing is zero-filled first.
        r.read_buf(&mut self.buf).await
    }

    /// The next complete frame, if the buffer holds one: its header and the
    /// range of its payload in [`FrameBuf::bytes`].
    pub fn next_frame(
        &mut self,
        max_frame: u64,
    ) -> Result<Option<(Header, std::ops::Range<usize>)>, FrameError> {
        let avail = self.buf.len() - self.start;
        if avail < HEADER_LEN {
            self.missing = 0;
            return Ok(None);
        }
        let h = Header::decode(&self.buf[self.start..self.start + HEADER_LEN], max_frame)?;
        let total = HEADER_LEN + h.len as usize;
        if avail < total {
            self.missing = total - avail;
            return Ok(None);
        }
        self.missing = 0;
        let payload = self.start + HEADER_LEN..self.start + total;
        self.start += total;
        Ok(Some((h, payload)))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes received but not yet parsed.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Drops everything received (for byte streams without frames).
    pub fn consume_all(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.missing = 0;
    }

    /// The memory this buffer holds.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgr::frame::Kind;

    fn header(len: u32, seq: u64) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        Header {
            kind: Kind::Request,
            flags: 0,
            len,
            seq,
        }
        .encode_into(&mut b);
        b
    }

    #[tokio::test]
    async fn a_large_frame_header_alone_reserves_little() {
        let mut fb = FrameBuf::with_capacity(64 << 10);
        let mut input: &[u8] = &header(16 << 20, 0);
        fb.fill(&mut input).await.unwrap();
        assert!(fb.next_frame(16 << 20).unwrap().is_none());
        assert_eq!(fb.pending(), HEADER_LEN);
        let mut nothing: &[u8] = &[];
        fb.fill(&mut nothing).await.unwrap();
        // Room for the next read, not for the whole frame announced.
        assert!(
            fb.capacity() <= 2 * (MAX_READ_AHEAD + HEADER_LEN),
            "{}",
            fb.capacity()
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases(400)))]

        /// Frames of any kinds and lengths (some above the maximum), then
        /// garbage, in pieces of any sizes: the frames come out whole and
        /// in order until the first bad header, and the buffer never holds
        /// more than a frame and the room for one read ahead.
        #[test]
        fn any_bytes_in_any_pieces(
            frames in proptest::collection::vec((0u8..6, 0u32..6000, proptest::prelude::any::<u64>()), 0..12),
            garbage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            cuts in proptest::collection::vec(1usize..5000, 1..8),
        ) {
            const MAX: u64 = 4096;
            let mut wire = Vec::new();
            for &(kind, len, seq) in &frames {
                let mut h = header(len, seq);
                h[2] = kind;
                wire.extend_from_slice(&h);
                wire.extend((0..len).map(|i| i as u8));
            }
            // Garbage never starts with the frame magic.
            wire.push(0);
            wire.extend_from_slice(&garbage);
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let mut fb = FrameBuf::with_capacity(256);
            let (mut at, mut seen, mut failed) = (0, 0usize, false);
            let mut pieces = cuts.iter().cycle();
            while at < wire.len() && !failed {
                let n = (*pieces.next().unwrap()).min(wire.len() - at);
                let mut r: &[u8] = &wire[at..at + n];
                while !r.is_empty() {
                    rt.block_on(fb.fill(&mut r)).unwrap();
                }
                at += n;
                loop {
                    match fb.next_frame(MAX) {
                        Ok(Some((h, p))) => {
                            let (kind, len, seq) = frames[seen];
                            proptest::prop_assert_eq!((h.kind as u8, h.len, h.seq), (kind, len, seq));
                            proptest::prop_assert_eq!(p.len(), len as usize);
                            seen += 1;
                        }
                        Ok(None) => break,
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
                let bound = 2 * (HEADER_LEN + MAX as usize + MAX_READ_AHEAD) + 5000;
                proptest::prop_assert!(fb.capacity() <= bound, "{} > {bound}", fb.capacity());
            }
            // Every good frame before the first bad one came out.
            let good = frames
                .iter()
                .take_while(|&&(kind, len, _)| (1..=4).contains(&kind) && u64::from(len) <= MAX)
                .count();
            proptest::prop_assert_eq!(seen, good);
        }
    }

    #[tokio::test]
    async fn frames_split_anywhere_come_out_whole() {
        let mut wire = Vec::new();
        for seq in 0..50u64 {
            let len = (seq * 997 % 70_000) as u32;
            wire.extend_from_slice(&header(len, seq));
            wire.extend((0..len).map(|i| (i as u8) ^ (seq as u8)));
        }
        for piece in [1, 7, 16, 4096, 100_000] {
            let mut fb = FrameBuf::with_capacity(256);
            let mut seen = 0u64;
            for part in wire.chunks(piece) {
                let mut r: &[u8] = part;
                while !r.is_empty() {
                    fb.fill(&mut r).await.unwrap();
                }
                while let Some((h, p)) = fb.next_frame(1 << 20).unwrap() {
                    assert_eq!(h.seq, seen);
                    assert_eq!(p.len(), h.len as usize);
                    let body = &fb.bytes()[p];
                    assert!(
                        body.iter()
                            .enumerate()
                            .all(|(i, &b)| b == (i as u8) ^ (seen as u8))
                    );
                    seen += 1;
                }
            }
            assert_eq!(seen, 50, "pieces of {piece}");
        }
    }
}
