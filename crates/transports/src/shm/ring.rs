//! A bounded single-producer single-consumer ring of records in shared
//! memory, modelled on rtrb: the producer owns `head`, the consumer owns
//! `tail`, each on its own cache line, and each side keeps a private copy
//! of the other's index and rereads it only when it looks full (or empty).
//!
//! A record is a 32-byte header and its payload, padded to 8 bytes; records
//! wrap around the end of the ring. A record never exceeds the ring, and a
//! writer facing a full ring waits: memory never grows with the load.

use super::wake::{Waiter, WakeWord};
use crate::sys::shmem::{Region, SharedHeader};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wirebench_core::limits;

/// Header of every record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rec {
    /// Payload bytes.
    pub len: u32,
    pub kind: u32,
    pub seq: u64,
    /// Stamps the client put in its request; the server echoes them.
    pub t0: u64,
    pub t1: u64,
}

pub const REC_HEADER: usize = limits::SHM_RECORD_HEADER as usize;
pub const KIND_REQUEST: u32 = 1;
pub const KIND_RESPONSE: u32 = 2;
pub const KIND_DATA: u32 = 3;

impl Rec {
    pub fn to_bytes(&self) -> [u8; REC_HEADER] {
        let mut b = [0u8; REC_HEADER];
        b[0..4].copy_from_slice(&self.len.to_le_bytes());
        b[4..8].copy_from_slice(&self.kind.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.t0.to_le_bytes());
        b[24..32].copy_from_slice(&self.t1.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; REC_HEADER]) -> Rec {
        let u32at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Rec {
            len: u32at(0),
            kind: u32at(4),
            seq: u64at(8),
            t0: u64at(16),
            t1: u64at(24),
        }
    }

    /// Bytes a record with `len` payload bytes takes in a ring.
    pub fn stride(len: u64) -> u64 {
        limits::shm_stride(len)
    }
}

#[repr(C, align(128))]
#[derive(Default)]
struct Line<T>(T);

/// The shared control block of one ring.
#[repr(C)]
#[derive(Default)]
pub struct RingCtl {
    head: Line<AtomicU64>,
    tail: Line<AtomicU64>,
    /// The consumer sleeps here waiting for records.
    data: Line<WakeWord>,
    /// The producer sleeps here waiting for room.
    space: Line<WakeWord>,
}

/// The header of a session's region: request ring, then response ring.
#[repr(C)]
#[derive(Default)]
pub struct RegionHeader {
    magic: AtomicU64,
    capacity: AtomicU64,
    rings: [RingCtl; 2],
}

// SAFETY: repr(C), atomics only (WakeWord is two AtomicU32).
unsafe impl SharedHeader for RegionHeader {}

const MAGIC: u64 = 0x5742_5348_4d31_0001; // "WBSHM1" + version

pub const REQUESTS: usize = 0;
pub const RESPONSES: usize = 1;

/// A session's shared memory: two rings of `capacity` bytes each.
pub struct Shm {
    region: Region<RegionHeader>,
    capacity: u64,
}

impl Shm {
    pub fn create(name: &str, capacity: u64) -> std::io::Result<Arc<Shm>> {
        assert!(capacity.is_power_of_two());
        let region = Region::<RegionHeader>::create(name, 2 * capacity as usize)?;
        let h = region.header();
        h.capacity.store(capacity, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        Ok(Arc::new(Shm { region, capacity }))
    }

    pub fn attach(fd: std::os::fd::OwnedFd, capacity: u64) -> std::io::Result<Arc<Shm>> {
        let region = Region::<RegionHeader>::attach(fd, 2 * capacity as usize)?;
        let h = region.header();
        if h.magic.load(Ordering::Acquire) != MAGIC
            || h.capacity.load(Ordering::Relaxed) != capacity
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the shared region is not a wirebench shm region of this version",
            ));
        }
        Ok(Arc::new(Shm { region, capacity }))
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.region.fd()
    }

    fn ctl(&self, ring: usize) -> &RingCtl {
        &self.region.header().rings[ring]
    }

    /// Copies `src` into ring `ring` at byte position `pos`, wrapping.
    fn copy_in(&self, ring: usize, pos: u64, src: &[u8]) {
        let cap = self.capacity;
        let off = (pos & (cap - 1)) as usize;
        let base = ring * cap as usize;
        let first = src.len().min(cap as usize - off);
        self.region.write(base + off, &src[..first]);
        if first < src.len() {
            self.region.write(base, &src[first..]);
        }
    }

    fn copy_out(&self, ring: usize, pos: u64, dst: &mut [u8]) {
        let cap = self.capacity;
        let off = (pos & (cap - 1)) as usize;
        let base = ring * cap as usize;
        let first = dst.len().min(cap as usize - off);
        self.region.read(base + off, &mut dst[..first]);
        if first < dst.len() {
            self.region.read(base, &mut dst[first..]);
        }
    }
}

pub struct Producer {
    shm: Arc<Shm>,
    ring: usize,
    head: u64,
    cached_tail: u64,
    published: u64,
    /// Whether the consumer may sleep (not `--wait spin`): then every
    /// publication checks for a sleeper, behind a full fence.
    notify: bool,
}

impl Producer {
    /// The producer of ring `ring`; `notify`: the consumer may sleep.
    pub fn new(shm: Arc<Shm>, ring: usize, notify: bool) -> Producer {
        let head = shm.ctl(ring).head.0.load(Ordering::Acquire);
        let cached_tail = shm.ctl(ring).tail.0.load(Ordering::Acquire);
        Producer {
            shm,
            ring,
            head,
            cached_tail,
            published: head,
            notify,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.shm.capacity
    }

    fn has_room(&mut self, need: u64) -> bool {
        if self.shm.capacity - (self.head - self.cached_tail) >= need {
            return true;
        }
        self.cached_tail = self.shm.ctl(self.ring).tail.0.load(Ordering::Acquire);
        self.shm.capacity - (self.head - self.cached_tail) >= need
    }

    /// Writes a record if it fits now (unpublished until [`Self::publish`]).
    #[inline]
    pub fn try_write(&mut self, rec: &Rec, payload: &[u8]) -> bool {
        debug_assert_eq!(rec.len as usize, payload.len());
        let need = Rec::stride(payload.len() as u64);
        assert!(need <= self.shm.capacity, "record larger than the ring");
        if !self.has_room(need) {
            return false;
        }
        self.shm.copy_in(self.ring, self.head, &rec.to_bytes());
        self.shm
            .copy_in(self.ring, self.head + REC_HEADER as u64, payload);
        self.head += need;
        true
    }

    /// Makes the records written so far visible, and wakes the consumer if
    /// it sleeps.
    #[inline]
    pub fn publish(&mut self) {
        if self.published != self.head {
            let ctl = self.shm.ctl(self.ring);
            ctl.head.0.store(self.head, Ordering::Release);
            self.published = self.head;
            if self.notify {
                ctl.data.0.notify();
            }
        }
    }

    /// Waits up to `timeout` for room for a record of `len` payload bytes.
    pub fn wait_room(&mut self, waiter: &Waiter, len: u64, timeout: Duration) -> bool {
        let need = Rec::stride(len);
        let Producer {
            shm,
            ring,
            head,
            cached_tail,
            ..
        } = self;
        let ctl = shm.ctl(*ring);
        let cap = shm.capacity;
        let room = || {
            *cached_tail = ctl.tail.0.load(Ordering::Acquire);
            cap - (*head - *cached_tail) >= need
        };
        waiter.wait(&ctl.space.0, room, timeout)
    }
}

pub struct Consumer {
    shm: Arc<Shm>,
    ring: usize,
    tail: u64,
    cached_head: u64,
    published: u64,
    /// Whether the producer may sleep waiting for room.
    notify: bool,
}

impl Consumer {
    /// The consumer of ring `ring`; `notify`: the producer may sleep.
    pub fn new(shm: Arc<Shm>, ring: usize, notify: bool) -> Consumer {
        let tail = shm.ctl(ring).tail.0.load(Ordering::Acquire);
        Consumer {
            shm,
            ring,
            tail,
            cached_head: tail,
            published: tail,
            notify,
        }
    }

    fn has_data(&mut self) -> bool {
        if self.cached_head != self.tail {
            return true;
        }
        self.cached_head = self.shm.ctl(self.ring).head.0.load(Ordering::Acquire);
        self.cached_head != self.tail
    }

    /// The next record's header, if one is there. A header that does not
    /// fit the ring is corrupt: an error.
    #[inline]
    pub fn peek(&mut self) -> std::io::Result<Option<Rec>> {
        if !self.has_data() {
            return Ok(None);
        }
        let mut b = [0u8; REC_HEADER];
        self.shm.copy_out(self.ring, self.tail, &mut b);
        let rec = Rec::from_bytes(&b);
        let stride = Rec::stride(rec.len as u64);
        if stride > self.cached_head - self.tail {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "corrupt record in shared memory: {} payload bytes, {} in the ring",
                    rec.len,
                    self.cached_head - self.tail
                ),
            ));
        }
        Ok(Some(rec))
    }

    /// Copies the payload of the record `peek` returned into `dst` (its
    /// length) and consumes the record.
    #[inline]
    pub fn take(&mut self, rec: &Rec, dst: &mut [u8]) {
        debug_assert_eq!(dst.len(), rec.len as usize);
        self.shm
            .copy_out(self.ring, self.tail + REC_HEADER as u64, dst);
        self.tail += Rec::stride(rec.len as u64);
    }

    /// Frees the records consumed so far, and wakes the producer if it sleeps.
    #[inline]
    pub fn release(&mut self) {
        if self.published != self.tail {
            let ctl = self.shm.ctl(self.ring);
            ctl.tail.0.store(self.tail, Ordering::Release);
            self.published = self.tail;
            if self.notify {
                ctl.space.0.notify();
            }
        }
    }

    pub fn wait_data(&mut self, waiter: &Waiter, timeout: Duration) -> bool {
        let Consumer {
            shm,
            ring,
            tail,
            cached_head,
            ..
        } = self;
        let ctl = shm.ctl(*ring);
        let data = || {
            *cached_head = ctl.head.0.load(Ordering::Acquire);
            *cached_head != *tail
        };
        waiter.wait(&ctl.data.0, data, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::wake::Wait;

    #[test]
    fn records_wrap_and_keep_their_bytes() {
        let shm = Shm::create("wirebench-test-ring", 4096).unwrap();
        let mut p = Producer::new(shm.clone(), REQUESTS, true);
        let mut c = Consumer::new(shm.clone(), REQUESTS, true);
        let mut buf = vec![0u8; 1000];
        for seq in 0..200u64 {
            let len = (seq * 37 % 1000) as usize + 1;
            let payload: Vec<u8> = (0..len).map(|i| (i as u64 + seq) as u8).collect();
            let rec = Rec {
                len: len as u32,
                kind: KIND_REQUEST,
                seq,
                t0: seq * 2,
                t1: seq * 3,
            };
            assert!(p.try_write(&rec, &payload));
            p.publish();
            let got = c.peek().unwrap().expect("a record");
            assert_eq!(got, rec);
            c.take(&got, &mut buf[..len]);
            assert_eq!(&buf[..len], &payload[..]);
            c.release();
            assert!(c.peek().unwrap().is_none());
        }
    }

    #[test]
    fn a_full_ring_refuses_and_the_writer_waits_for_room() {
        let shm = Shm::create("wirebench-test-ring", 4096).unwrap();
        let mut p = Producer::new(shm.clone(), RESPONSES, true);
        let payload = [7u8; 1000];
        let rec = Rec {
            len: 1000,
            ..Rec::default()
        };
        let mut n = 0;
        while p.try_write(&rec, &payload) {
            n += 1;
        }
        assert_eq!(n, 4096 / Rec::stride(1000) as usize);
        p.publish();
        let waiter = Waiter { wait: Wait::Futex };
        assert!(!p.wait_room(&waiter, 1000, Duration::from_millis(20)));
        let shm2 = shm.clone();
        let reader = std::thread::spawn(move || {
            let mut c = Consumer::new(shm2, RESPONSES, true);
            let w = Waiter { wait: Wait::Futex };
            let mut buf = [0u8; 1000];
            let mut got = 0;
            while got < n + 3 {
                if !c.wait_data(&w, Duration::from_secs(5)) {
                    break;
                }
                while let Some(r) = c.peek().unwrap() {
                    c.take(&r, &mut buf);
                    got += 1;
                }
                c.release();
            }
            got
        });
        for _ in 0..3 {
            assert!(p.wait_room(&waiter, 1000, Duration::from_secs(5)));
            assert!(p.try_write(&rec, &payload));
            p.publish();
        }
        assert_eq!(reader.join().unwrap(), n + 3);
    }
}
