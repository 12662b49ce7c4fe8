//! Object payloads as HTTP bodies, produced as they are sent (never held
//! whole): zeroes from one static buffer, or with `--verify` pseudo-random
//! bytes that follow from the object's seed and the offset alone, so a
//! reader can check any byte range it receives without keeping anything.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Bytes per body frame.
pub const CHUNK: usize = 256 * 1024;

static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// The 8 bytes at `block` (offset / 8) of the object with `seed`.
#[inline]
fn word(seed: u64, block: u64) -> [u8; 8] {
    wirebench_core::spec::mix64(seed ^ block.wrapping_mul(0xD6E8_FEB8_6659_FD93)).to_le_bytes()
}

/// Fills `out` with the object's bytes from `offset`.
pub fn fill(seed: u64, offset: u64, out: &mut [u8]) {
    let mut pos = offset;
    let mut i = 0;
    while i < out.len() {
        let w = word(seed, pos / 8);
        let within = (pos % 8) as usize;
        let n = (8 - within).min(out.len() - i);
        out[i..i + n].copy_from_slice(&w[within..within + n]);
        i += n;
        pos += n as u64;
    }
}

/// Whether `data` is the object's bytes from `offset`.
pub fn check(seed: u64, offset: u64, data: &[u8]) -> bool {
    let mut buf = [0u8; 4096];
    let mut done = 0;
    while done < data.len() {
        let n = (data.len() - done).min(buf.len());
        fill(seed, offset + done as u64, &mut buf[..n]);
        if buf[..n] != data[done..done + n] {
            return false;
        }
        done += n;
    }
    true
}

/// A request body of `len` bytes: zeroes, or the object's bytes from
/// `offset` when `seed` is given.
#[derive(Clone)]
pub struct Payload {
    left: u64,
    offset: u64,
    seed: Option<u64>,
    /// A body held in memory (small XML documents) instead.
    held: Option<Bytes>,
    /// Told each time a frame leaves (the request's progress).
    clock: Option<super::progress::Progress>,
}

impl Payload {
    pub fn new(len: u64, offset: u64, seed: Option<u64>) -> Payload {
        Payload {
            left: len,
            offset,
            seed,
            held: None,
            clock: None,
        }
    }

    /// The same body, telling `clock` each time a frame leaves.
    pub(super) fn timed(mut self, clock: super::progress::Progress) -> Payload {
        self.clock = Some(clock);
        self
    }

    /// A body of bytes held in memory (small XML documents).
    pub fn text(text: String) -> Payload {
        Payload {
            left: text.len() as u64,
            offset: 0,
            seed: None,
            held: Some(Bytes::from(text)),
            clock: None,
        }
    }

    /// A body of bytes held in memory (a file's, bounded by the caller).
    pub fn bytes(b: Bytes) -> Payload {
        Payload {
            left: b.len() as u64,
            offset: 0,
            seed: None,
            held: Some(b),
            clock: None,
        }
    }

    pub fn empty() -> Payload {
        Payload::new(0, 0, None)
    }
}

impl Body for Payload {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        if let Some(c) = &self.clock {
            c.tick();
        }
        if let Some(b) = self.held.take() {
            self.left = 0;
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        let n = self.left.min(CHUNK as u64) as usize;
        let data = match self.seed {
            None => Bytes::from_static(&ZEROS[..n]),
            Some(seed) => {
                let mut v = vec![0u8; n];
                fill(seed, self.offset, &mut v);
                Bytes::from(v)
            }
        };
        self.left -= n as u64;
        self.offset += n as u64;
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_checks_against_the_whole() {
        let mut whole = vec![0u8; 10_000];
        fill(7, 0, &mut whole);
        for (a, b) in [(0, 10_000), (3, 17), (8, 4096), (4093, 9999)] {
            assert!(check(7, a as u64, &whole[a..b]), "{a}..{b}");
            let mut part = vec![0u8; b - a];
            fill(7, a as u64, &mut part);
            assert_eq!(part, whole[a..b]);
        }
        assert!(!check(8, 0, &whole[..64]), "another object's bytes");
        let mut bad = whole[100..200].to_vec();
        bad[50] ^= 1;
        assert!(!check(7, 100, &bad));
    }
}
