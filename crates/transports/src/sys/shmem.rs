//! Shared memory between processes: a memfd (an anonymous file, never a
//! path in /dev/shm, so nothing can be left behind) mapped shared, and
//! passed to the peer over a Unix socket.
//!
//! Contract: a [`Region`] is `len` bytes of zeroed memory mapped at a page
//! boundary. Its first page(s) hold a header of type `H`, made of atomics
//! and plain integers only ([`SharedHeader`]), which both processes access
//! through `&H`. The rest is a data area accessed only with bounds-checked
//! byte copies; callers guarantee (with the acquire/release protocol of
//! their header) that two processes never copy to the same bytes at once.
//! This module and `sys/` are the only `unsafe` code of the transports.

use memmap2::MmapMut;
use nix::sys::memfd::{MFdFlags, memfd_create};
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A header type that may live in shared memory: every bit pattern,
/// including all zeros, is a valid value, and it has no pointers, no
/// `Drop`, and interior mutability through atomics only.
///
/// # Safety
/// Implement only for `#[repr(C)]` types made of atomics, integers and
/// arrays of them.
pub unsafe trait SharedHeader: Sync + 'static {}

pub struct Region<H: SharedHeader> {
    map: MmapMut,
    file: File,
    data_offset: usize,
    _h: PhantomData<H>,
}

// The mapping is plain shared memory; `H` is Sync and the data area is
// only copied through `&self` methods whose callers follow the protocol.
unsafe impl<H: SharedHeader> Send for Region<H> {}
unsafe impl<H: SharedHeader> Sync for Region<H> {}

const PAGE: usize = 4096;

impl<H: SharedHeader> Region<H> {
    fn data_offset() -> usize {
        std::mem::size_of::<H>().next_multiple_of(PAGE)
    }

    /// Creates a zeroed region with `data_len` bytes after the header. The
    /// memfd is named `name` (seen in /proc/PID/fd and /proc/PID/maps).
    pub fn create(name: &str, data_len: usize) -> io::Result<Region<H>> {
        assert!(std::mem::align_of::<H>() <= PAGE);
        let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
        let file = File::from(fd);
        let len = Self::data_offset() + data_len;
        file.set_len(len as u64)?;
        Self::map(file)
    }

    /// Maps a region received from the peer; checks its size against
    /// `data_len`.
    pub fn attach(fd: OwnedFd, data_len: usize) -> io::Result<Region<H>> {
        let file = File::from(fd);
        let len = file.metadata()?.len() as usize;
        if len != Self::data_offset() + data_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "shared region is {len} bytes, expected {}",
                    Self::data_offset() + data_len
                ),
            ));
        }
        Self::map(file)
    }

    fn map(file: File) -> io::Result<Region<H>> {
        // SAFETY: the file is a memfd this process holds; its size is fixed
        // (nobody truncates it), so the mapping stays valid while `map` lives.
        let map = unsafe { MmapMut::map_mut(&file)? };
        Ok(Region {
            map,
            file,
            data_offset: Self::data_offset(),
            _h: PhantomData,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    pub fn header(&self) -> &H {
        // SAFETY: the mapping is page-aligned and at least size_of::<H>()
        // long; any bit pattern is a valid H (SharedHeader), and H is only
        // mutated through atomics.
        unsafe { &*(self.map.as_ptr() as *const H) }
    }

    pub fn data_len(&self) -> usize {
        self.map.len() - self.data_offset
    }

    /// Copies `src` into the data area at `offset`.
    #[inline]
    pub fn write(&self, offset: usize, src: &[u8]) {
        assert!(offset + src.len() <= self.data_len(), "write out of bounds");
        // SAFETY: in bounds (checked above); the caller's protocol gives
        // this process exclusive use of these bytes now. Writing through a
        // shared reference is how shared memory works: the map is writable.
        unsafe {
            let dst = (self.map.as_ptr() as *mut u8).add(self.data_offset + offset);
            std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
        }
    }

    /// Copies bytes of the data area at `offset` into `dst`.
    #[inline]
    pub fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset + dst.len() <= self.data_len(), "read out of bounds");
        // SAFETY: in bounds; the peer does not write these bytes now.
        unsafe {
            let src = self.map.as_ptr().add(self.data_offset + offset);
            std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len());
        }
    }
}
