//! Legacy pcap files read in place: the file is memory-mapped and every frame is a slice
//! of the page cache — no `read` copying 500 MB into a buffer (a tenth of `fixscope pcap`'s
//! CPU when one pipeline reads; paid by every worker of a sharded run, which each read
//! the whole file).
//!
//! Only what this module reads exactly as [`super::legacy`] does takes this path: a
//! legacy pcap whose header pcap-parser accepts and names a link type we decode, record by
//! record while each fits the snaplen and the file. At the first record that does not (a
//! corrupt length, a file cut off), or for anything else — pcapng, pipes — the streaming
//! reader reads, and says what is wrong where. The records are parsed by pcap-parser's
//! own frame parsers, on the mapped bytes.
//!
//! Each record's length says where the next starts, a chain of dependent loads that no
//! hardware prefetcher follows across pages: the walk prefetches the bytes ahead itself
//! (about 100 ns a record without, on the project's VM: a fifth of the pipeline).
//!
//! A file truncated by another process while it is mapped would fault (SIGBUS) on the
//! pages cut off; files are mapped at their length when opened, so a file that grows
//! (tcpdump still writing) is read up to there. docs/architecture.md says so.

use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pcap_parser::pcap::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
};

use super::{FrameSink, BYTES_READ, NS_PER_SEC};
use crate::decode::LinkType;

/// libpcap's largest snaplen; legacy records may be this long whatever the header says
/// (as [`super::legacy`]).
const MAX_LEGACY_CAPLEN: u32 = 262_144;
/// Progress ([`super::bytes_read`]) is counted in steps of this many bytes.
const PROGRESS_STEP: usize = 1 << 20;
/// The legacy pcap file header's length.
pub(super) const FILE_HEADER: usize = 24;
/// How far ahead of the walk the bytes are prefetched.
const PREFETCH_AHEAD: usize = 4096;

/// A capture mapped into memory, when it is a well-formed legacy pcap (see the module).
pub(super) struct MappedPcap {
    /// Shared: a two-stage run's messages borrow their bytes from it (`fixscope_core::twostage`).
    map: Arc<memmap2::Mmap>,
    link: LinkType,
    frac_ns: u64,
    big_endian: bool,
    modified: bool,
    max_caplen: u32,
}

impl MappedPcap {
    /// `None`: read `file` with the streaming reader instead.
    pub(super) fn open(file: &File) -> Option<MappedPcap> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < FILE_HEADER as u64 {
            return None;
        }
        // SAFETY: the map is only read. Its bytes may change under us if another process
        // writes the file; every length read from it is bounds-checked before use, so
        // changed bytes give wrong frames, never out-of-bounds reads. A file truncated
        // meanwhile faults (documented in the module and docs/architecture.md).
        // Populated: the kernel maps every page of the file at once, which costs a fraction
        // of taking a fault per page as the walk first touches it.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(file) }.ok()?;
        let (_, header) = parse_pcap_header(&map).ok()?;
        let link = LinkType::from_linktype(header.network.0 as u32)?;
        let mapped = MappedPcap {
            link,
            frac_ns: if header.is_nanosecond_precision() {
                1
            } else {
                1000
            },
            big_endian: header.is_bigendian(),
            modified: header.is_modified_format(),
            // A record longer than the streaming reader takes goes to it (its error).
            max_caplen: header
                .snaplen
                .max(MAX_LEGACY_CAPLEN)
                .min((super::input::MAX_RECORD - 24) as u32),
            map: Arc::new(map),
        };
        Some(mapped)
    }

    /// The mapping, for a consumer whose segments' payloads outlive the walk.
    pub(super) fn shared_map(&self) -> &Arc<memmap2::Mmap> {
        &self.map
    }

    fn record_header(&self) -> usize {
        if self.modified {
            24
        } else {
            16
        }
    }

    fn caplen_at(&self, at: usize) -> Option<u32> {
        super::input::read_u32(&self.map, at + 8, self.big_endian)
    }

    /// The file header (the streaming reader needs it in front of the records it takes over).
    pub(super) fn file_header(&self) -> &[u8] {
        &self.map[..FILE_HEADER]
    }

    /// Hands every frame to `sink`, in file order, until it says stop. `Some(offset)`: the
    /// record at `offset` is not one this walk takes (see the module); the streaming
    /// reader goes on from there.
    pub(super) fn read(&self, sink: &mut impl FrameSink, count_progress: bool) -> Option<usize> {
        let map: &[u8] = &self.map;
        let header = self.record_header();
        let mut at = FILE_HEADER;
        let mut prefetched = at;
        let mut counted = 0usize;
        let mut handed_over = None;
        while at < map.len() && !sink.stopped() {
            while prefetched < (at + PREFETCH_AHEAD).min(map.len()) {
                prefetch(map, prefetched);
                prefetched += 64;
            }
            let fits = match self.caplen_at(at) {
                Some(caplen) if caplen <= self.max_caplen => {
                    at + header + (caplen as usize) <= map.len()
                }
                _ => false,
            };
            let parsed = if !fits {
                None
            } else if self.modified {
                parse_pcap_frame_modified(&map[at..]).ok()
            } else if self.big_endian {
                parse_pcap_frame_be(&map[at..]).ok()
            } else {
                parse_pcap_frame(&map[at..]).ok()
            };
            let Some((next, b)) = parsed else {
                handed_over = Some(at);
                break;
            };
            // u32 seconds * 10^9 + a 32-bit fraction always fits u64.
            let ts_ns = u64::from(b.ts_sec) * NS_PER_SEC + u64::from(b.ts_usec) * self.frac_ns;
            sink.frame(self.link, ts_ns, b.data);
            at = map.len() - next.len();
            if count_progress && at - counted >= PROGRESS_STEP {
                BYTES_READ.fetch_add((at - counted) as u64, Ordering::Relaxed);
                counted = at;
            }
        }
        if count_progress {
            BYTES_READ.fetch_add((at - counted) as u64, Ordering::Relaxed);
        }
        handed_over
    }
}

/// Asks for the cache line at `map[at]` ahead of its use.
#[inline(always)]
pub fn prefetch(map: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: a prefetch is a hint: it never faults and changes no state we see;
        // `at < map.len()`, so the address is inside the mapping anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                map.as_ptr().add(at).cast::<i8>(),
                std::arch::x86_64::_MM_HINT_T0,
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (map, at);
}
