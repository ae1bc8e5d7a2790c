//! A consumer for a `BPF_MAP_TYPE_RINGBUF` map, reading the mmap'ed ring directly.
//!
//! libbpf's `ring_buffer` takes a callback fixed at creation and consumes in ring order; the
//! merge of the per-CPU rings (`merge.rs`) reads records in place, possibly beyond ones it
//! holds back, and releases their space later, and the busy-poll path wants nothing but
//! two loads when the rings are empty.
//! The layout (kernel/bpf/ringbuf.c): page 0 holds the consumer position (read-write for
//! us); from page 1 on, the producer position page, then the data area mapped twice so a
//! record that wraps is still contiguous. Each record has an 8-byte header
//! (`u32 len | BUSY | DISCARD`, `u32 page offset`) and is padded to 8 bytes.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const BUSY_BIT: u32 = 1 << 31;
const DISCARD_BIT: u32 = 1 << 30;
const HDR_SZ: u64 = 8;

pub(crate) struct Ring {
    fd: OwnedFd,
    page: usize,
    size: usize,
    mask: u64,
    consumer: NonNull<u8>,
    producer: NonNull<u8>,
}

// SAFETY: the mappings are owned by this value and only touched through `&mut self`
// (consume) or atomics (avail); moving it to another thread is fine.
unsafe impl Send for Ring {}

/// The system's page size (the unit of the ring's mappings).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

impl Ring {
    /// Maps ring-buffer map `fd` of `size` bytes (its max_entries); the ring keeps the
    /// descriptor (the consumer sleeps in ppoll on it).
    pub(crate) fn new(fd: OwnedFd, size: usize) -> io::Result<Ring> {
        let page = page_size();
        if !size.is_power_of_two() || size < page {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad ring size"));
        }
        // SAFETY: mapping a fresh region of a valid ringbuf fd; the result is checked.
        let consumer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if consumer == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above; the kernel only allows read-only mappings past page 0.
        let producer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page + 2 * size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                page as libc::off_t,
            )
        };
        if producer == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            // SAFETY: unmapping exactly the region mapped above.
            unsafe { libc::munmap(consumer, page) };
            return Err(e);
        }
        Ok(Ring {
            fd,
            page,
            size,
            mask: size as u64 - 1,
            // SAFETY: mmap never returns NULL on success (MAP_FAILED is checked above).
            consumer: unsafe { NonNull::new_unchecked(consumer.cast()) },
            // SAFETY: as above.
            producer: unsafe { NonNull::new_unchecked(producer.cast()) },
        })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Size of the data area in bytes.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: page 0 of the mapping holds the 8-aligned u64 consumer position and
        // lives as long as `self`.
        unsafe { &*(self.consumer.as_ptr() as *const AtomicU64) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: as for consumer_pos, on the producer page.
        unsafe { &*(self.producer.as_ptr() as *const AtomicU64) }
    }

    /// Bytes written by the kernel and not yet consumed.
    pub(crate) fn avail(&self) -> u64 {
        let prod = self.producer_pos().load(Ordering::Acquire);
        let cons = self.consumer_pos().load(Ordering::Relaxed);
        prod.saturating_sub(cons)
    }

    /// The position of the first record not yet released.
    pub(crate) fn consumer(&self) -> u64 {
        self.consumer_pos().load(Ordering::Relaxed)
    }

    /// The position after the last reserved record (committed or not).
    pub(crate) fn producer(&self) -> u64 {
        self.producer_pos().load(Ordering::Acquire)
    }

    /// The record at `pos`, which must lie between [`Ring::consumer`] and a value
    /// [`Ring::producer`] returned (records are read in place; the kernel does not reuse
    /// their space until [`Ring::release`] moves past them).
    pub(crate) fn record_at(&self, pos: u64) -> At<'_> {
        let data = self.producer.as_ptr().wrapping_add(self.page);
        // SAFETY: `pos & mask` is inside the first copy of the data area; the header is
        // 8-aligned because records are.
        let hdr = unsafe { &*(data.add((pos & self.mask) as usize) as *const AtomicU32) };
        let len = hdr.load(Ordering::Acquire);
        if len & BUSY_BIT != 0 {
            return At::Busy;
        }
        let rec_len = u64::from(len & !(BUSY_BIT | DISCARD_BIT));
        let next = pos + ((rec_len + HDR_SZ + 7) & !7);
        if len & DISCARD_BIT != 0 || rec_len > self.size as u64 {
            return At::Skip { next };
        }
        // SAFETY: the committed record's `rec_len` bytes follow its header; the double
        // mapping keeps them contiguous even across the wrap, and the kernel does not reuse
        // them until the consumer position moves past them (`release`).
        let bytes = unsafe {
            std::slice::from_raw_parts(
                data.add(((pos & self.mask) + HDR_SZ) as usize),
                rec_len as usize,
            )
        };
        At::Record { bytes, next }
    }

    /// Gives the space of every record before `pos` back to the kernel.
    pub(crate) fn release(&mut self, pos: u64) {
        self.consumer_pos().store(pos, Ordering::Release);
    }
}

/// What [`Ring::record_at`] found.
#[derive(Debug)]
pub(crate) enum At<'a> {
    /// A committed record and the position of the next one.
    Record { bytes: &'a [u8], next: u64 },
    /// A discarded (or impossible) record to step over.
    Skip { next: u64 },
    /// Reserved, not yet committed: nothing at or after it can be read yet.
    Busy,
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the two regions mapped in `new`; no references into
        // them outlive `&mut self`.
        unsafe {
            libc::munmap(self.consumer.as_ptr().cast(), self.page);
            libc::munmap(self.producer.as_ptr().cast(), self.page + 2 * self.size);
        }
    }
}

/// A read-only view of a ring's fill level, for a thread other than the consumer (the
/// priority guard). It has its own mapping of the two position pages, which stays valid
/// on its own (a mapping holds the map) however the consumer's `Ring` is dropped.
pub(crate) struct RingLevel {
    positions: NonNull<u8>,
    page: usize,
}

// SAFETY: only read through atomics; the mapping is owned by this value.
unsafe impl Send for RingLevel {}

impl RingLevel {
    /// Maps the consumer and producer position pages of ring-buffer map `fd` read-only.
    pub(crate) fn new(fd: RawFd) -> io::Result<RingLevel> {
        let page = page_size();
        // SAFETY: a fresh read-only mapping of a valid ringbuf fd (the kernel allows
        // read-only mappings of any of its pages); the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RingLevel {
            // SAFETY: mmap never returns NULL on success.
            positions: unsafe { NonNull::new_unchecked(p.cast()) },
            page,
        })
    }

    /// Bytes written by the kernel and not yet consumed.
    pub(crate) fn pending(&self) -> u64 {
        // SAFETY: page 0 holds the consumer position, page 1 the producer position, both
        // 8-aligned u64s inside our mapping.
        let (cons, prod) = unsafe {
            (
                &*(self.positions.as_ptr() as *const AtomicU64),
                &*(self.positions.as_ptr().add(self.page) as *const AtomicU64),
            )
        };
        let prod = prod.load(Ordering::Acquire);
        prod.saturating_sub(cons.load(Ordering::Relaxed))
    }
}

impl Drop for RingLevel {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `new`.
        unsafe { libc::munmap(self.positions.as_ptr().cast(), 2 * self.page) };
    }
}
