//! A consumer for a `BPF_MAP_TYPE_RINGBUF` map, reading the mmap'ed ring directly.
//!
//! libbpf's `ring_buffer` takes a callback fixed at creation; we need a different one on
//! every `poll`, and the busy-poll path wants nothing but two loads when the ring is empty.
//! The layout (kernel/bpf/ringbuf.c): page 0 holds the consumer position (read-write for
//! us); from page 1 on, the producer position page, then the data area mapped twice so a
//! record that wraps is still contiguous. Each record has an 8-byte header
//! (`u32 len | BUSY | DISCARD`, `u32 page offset`) and is padded to 8 bytes.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use fixscope_core::source::Flow;

const BUSY_BIT: u32 = 1 << 31;
const DISCARD_BIT: u32 = 1 << 30;
const HDR_SZ: u64 = 8;

pub(crate) struct Ring {
    fd: RawFd,
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
    /// Maps ring-buffer map `fd` of `size` bytes (its max_entries). The caller keeps `fd`
    /// open for as long as this `Ring` lives.
    pub(crate) fn new(fd: RawFd, size: usize) -> io::Result<Ring> {
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
                fd,
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
                fd,
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
        self.fd
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

    /// Hands every committed record to `f`, in ring order, releasing each record's space
    /// after `f` returns. Stops at the first record still being written, when the ring is
    /// empty, after one ring's worth of bytes (so a fast producer cannot keep us here), or
    /// right after a record for which `f` says [`Flow::Stop`]. Returns the number of
    /// records passed to `f`.
    pub(crate) fn consume(&mut self, f: &mut dyn FnMut(&[u8]) -> Flow) -> usize {
        let data = self.producer.as_ptr().wrapping_add(self.page);
        let cons_pos = self.consumer_pos();
        let mut cons = cons_pos.load(Ordering::Relaxed);
        let budget_end = cons + self.size as u64;
        // The consumer position is published every RELEASE_EVERY bytes and when we stop,
        // not after every record: each producer (BPF, on every CPU) reads that cache line
        // on every reserve, and a line rewritten per record moves between cores each time.
        let release_every = (self.size as u64 / 16).max(HDR_SZ);
        let mut released = cons;
        let mut n = 0;
        loop {
            let prod = self.producer_pos().load(Ordering::Acquire);
            if cons >= prod || cons >= budget_end {
                cons_pos.store(cons, Ordering::Release);
                return n;
            }
            while cons < prod {
                // SAFETY: `cons & mask` is inside the first copy of the data area; the
                // header is 8-aligned because records are.
                let hdr = unsafe { &*(data.add((cons & self.mask) as usize) as *const AtomicU32) };
                let len = hdr.load(Ordering::Acquire);
                if len & BUSY_BIT != 0 {
                    cons_pos.store(cons, Ordering::Release);
                    return n;
                }
                let rec_len = u64::from(len & !(BUSY_BIT | DISCARD_BIT));
                if len & DISCARD_BIT == 0 && rec_len <= self.size as u64 {
                    // SAFETY: the committed record's `rec_len` bytes follow its header;
                    // the double mapping keeps them contiguous even across the wrap, and
                    // the kernel does not reuse them until we advance the consumer
                    // position below.
                    let rec = unsafe {
                        std::slice::from_raw_parts(
                            data.add(((cons & self.mask) + HDR_SZ) as usize),
                            rec_len as usize,
                        )
                    };
                    let flow = f(rec);
                    n += 1;
                    if flow == Flow::Stop {
                        cons += (rec_len + HDR_SZ + 7) & !7;
                        cons_pos.store(cons, Ordering::Release);
                        return n;
                    }
                }
                cons += (rec_len + HDR_SZ + 7) & !7;
                if cons - released >= release_every {
                    cons_pos.store(cons, Ordering::Release);
                    released = cons;
                }
            }
        }
    }
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
