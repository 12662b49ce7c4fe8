//! Wire format, all integers little-endian.
//!
//! Handshake, client to server (24 bytes):
//! `magic "WBMSGR\r\n" | version u16 | mode u8 | flags u8 | size u32 | response_size u32 | reserved u32`
//!
//! Handshake, server to client (16 bytes):
//! `magic "WBMSGR\r\n" | version u16 | status u8 | reserved u8 | max_frame u32`
//!
//! Frame header (16 bytes): `magic u16 | kind u8 | flags u8 | len u32 | seq u64`,
//! then `len` bytes of payload. Sequence numbers start at 0 on each
//! connection and each side's frames come in order.

use wirebench_core::spec::MsgrMode as Mode;

pub const MAGIC: [u8; 8] = *b"WBMSGR\r\n";
pub const VERSION: u16 = 1;
pub const HELLO_LEN: usize = 24;
pub const WELCOME_LEN: usize = 16;
pub const HEADER_LEN: usize = 16;
// The run adds a header per message to the payload to give the wire bytes.
const _: () = assert!(HEADER_LEN as u64 == wirebench_core::spec::MSGR_HEADER_BYTES);
pub const FRAME_MAGIC: u16 = 0xB7E5;
/// Default largest payload a server accepts.
pub const DEFAULT_MAX_FRAME: u64 = wirebench_core::limits::MSGR_DEFAULT_MAX_FRAME;

/// Writers build at most this much before writing it (or one frame, if
/// larger), so memory stays bounded whatever depth x size is asked for.
pub const WRITE_CHUNK: usize = 256 << 10;

/// Handshake flag: payloads carry a pattern derived from the sequence number.
pub const FLAG_VERIFY: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Request = 1,
    Response = 2,
    OneWay = 3,
    Stream = 4,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Request,
            2 => Kind::Response,
            3 => Kind::OneWay,
            4 => Kind::Stream,
            _ => return None,
        })
    }
}

/// Handshake status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    UnsupportedVersion = 1,
    BadMode = 2,
    FrameTooLarge = 3,
}

/// The mode byte of the handshake; `rr` has no handshake.
pub fn mode_code(m: Mode) -> Option<u8> {
    match m {
        Mode::Echo => Some(1),
        Mode::Oneway => Some(2),
        Mode::Stream => Some(3),
        Mode::Rr => None,
    }
}

pub fn mode_from_code(b: u8) -> Option<Mode> {
    match b {
        1 => Some(Mode::Echo),
        2 => Some(Mode::Oneway),
        3 => Some(Mode::Stream),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub mode: u8,
    pub flags: u8,
    pub size: u32,
    pub response_size: u32,
}

impl Hello {
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10] = self.mode;
        b[11] = self.flags;
        b[12..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..20].copy_from_slice(&self.response_size.to_le_bytes());
        b
    }

    /// None when the bytes do not start with the msgr magic.
    pub fn decode(b: &[u8; HELLO_LEN]) -> Option<Hello> {
        (b[..8] == MAGIC).then(|| Hello {
            version: u16::from_le_bytes([b[8], b[9]]),
            mode: b[10],
            flags: b[11],
            size: u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")),
            response_size: u32::from_le_bytes(b[16..20].try_into().expect("4 bytes")),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome {
    pub version: u16,
    pub status: u8,
    pub max_frame: u32,
}

impl Welcome {
    pub fn encode(&self) -> [u8; WELCOME_LEN] {
        let mut b = [0u8; WELCOME_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10] = self.status;
        b[12..16].copy_from_slice(&self.max_frame.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; WELCOME_LEN]) -> Option<Welcome> {
        (b[..8] == MAGIC).then(|| Welcome {
            version: u16::from_le_bytes([b[8], b[9]]),
            status: b[10],
            max_frame: u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub flags: u8,
    pub len: u32,
    pub seq: u64,
}

/// Why a frame header is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("bad frame magic {0:#06x} (garbage or a desynchronised peer)")]
    Magic(u16),
    #[error("unknown frame kind {0}")]
    Kind(u8),
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge { len: u64, max: u64 },
}

impl Header {
    pub fn encode_into(&self, b: &mut [u8]) {
        b[..2].copy_from_slice(&FRAME_MAGIC.to_le_bytes());
        b[2] = self.kind as u8;
        b[3] = self.flags;
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
    }

    pub fn decode(b: &[u8], max_frame: u64) -> Result<Header, FrameError> {
        let magic = u16::from_le_bytes([b[0], b[1]]);
        if magic != FRAME_MAGIC {
            return Err(FrameError::Magic(magic));
        }
        let kind = Kind::from_u8(b[2]).ok_or(FrameError::Kind(b[2]))?;
        let len = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
        if u64::from(len) > max_frame {
            return Err(FrameError::TooLarge {
                len: len.into(),
                max: max_frame,
            });
        }
        Ok(Header {
            kind,
            flags: b[3],
            len,
            seq: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
        })
    }
}

/// The payload pattern of one sequence number, generated 8 bytes at a
/// time, so a large payload can be made (or checked) in pieces: every
/// piece but the last must be a multiple of 8 bytes long.
#[derive(Debug, Clone)]
pub struct Pattern(u64);

impl Pattern {
    pub fn new(seq: u64) -> Pattern {
        Pattern(seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> [u8; 8] {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        x.to_le_bytes()
    }

    /// Writes the next `buf.len()` bytes of the pattern.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            chunk.copy_from_slice(&self.next()[..chunk.len()]);
        }
    }

    /// Whether `buf` holds the next `buf.len()` bytes of the pattern.
    pub fn check(&mut self, buf: &[u8]) -> bool {
        buf.chunks(8)
            .all(|chunk| chunk == &self.next()[..chunk.len()])
    }
}

/// Fills a payload with the pattern of sequence number `seq`.
pub fn fill_pattern(seq: u64, buf: &mut [u8]) {
    Pattern::new(seq).fill(buf);
}

/// Whether a payload holds the pattern of `seq`.
pub fn check_pattern(seq: u64, buf: &[u8]) -> bool {
    Pattern::new(seq).check(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_round_trip() {
        let h = Hello {
            version: VERSION,
            mode: 1,
            flags: FLAG_VERIFY,
            size: 64,
            response_size: 4096,
        };
        assert_eq!(Hello::decode(&h.encode()), Some(h));
        let w = Welcome {
            version: VERSION,
            status: Status::Ok as u8,
            max_frame: 1 << 24,
        };
        assert_eq!(Welcome::decode(&w.encode()), Some(w));
        assert_eq!(Hello::decode(&[0u8; HELLO_LEN]), None);
    }

    #[test]
    fn header_round_trip_and_refusals() {
        let h = Header {
            kind: Kind::Request,
            flags: 0,
            len: 100,
            seq: 7,
        };
        let mut b = [0u8; HEADER_LEN];
        h.encode_into(&mut b);
        assert_eq!(Header::decode(&b, 1000), Ok(h));
        assert_eq!(
            Header::decode(&b, 99),
            Err(FrameError::TooLarge { len: 100, max: 99 })
        );
        b[2] = 9;
        assert_eq!(Header::decode(&b, 1000), Err(FrameError::Kind(9)));
        assert!(matches!(
            Header::decode(b"GET / HTTP/1.1\r\n", 1000),
            Err(FrameError::Magic(_))
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases(3000)))]

        /// Any 16 bytes decode as a header or are refused; what decodes
        /// encodes back to the same bytes. Any 24 bytes are a hello or not.
        #[test]
        fn headers_and_hellos_decode_or_refuse(
            b in proptest::prelude::any::<[u8; 16]>(),
            max in proptest::prelude::any::<u32>(),
            hello in proptest::prelude::any::<[u8; 24]>(),
        ) {
            if let Ok(h) = Header::decode(&b, u64::from(max)) {
                proptest::prop_assert!(h.len <= max);
                let mut again = [0u8; 16];
                h.encode_into(&mut again);
                proptest::prop_assert_eq!(again, b);
            }
            if let Some(h) = Hello::decode(&hello) {
                proptest::prop_assert_eq!(&h.encode()[..20], &hello[..20]);
            }
        }
    }

    #[test]
    fn patterns_differ_by_sequence() {
        let mut a = [0u8; 100];
        fill_pattern(5, &mut a);
        assert!(check_pattern(5, &a));
        assert!(!check_pattern(6, &a));
        a[60] ^= 1;
        assert!(!check_pattern(5, &a));
        // In pieces, the same bytes.
        let mut b = [0u8; 100];
        let mut p = Pattern::new(5);
        p.fill(&mut b[..48]);
        p.fill(&mut b[48..]);
        fill_pattern(5, &mut a);
        assert_eq!(a[..], b[..]);
        for m in [Mode::Echo, Mode::Oneway, Mode::Stream] {
            assert_eq!(mode_from_code(mode_code(m).unwrap()), Some(m));
        }
    }
}
