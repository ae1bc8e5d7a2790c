//! The plumbing between a capture file and pcap-parser's circular-buffer readers: reads that
//! fill the buffer, refilling and growing it for records that do not fit, and telling a
//! clean end from a cut-off file from a corrupt one. Failures carry byte offsets; the path
//! is attached by the caller.

use std::io::{self, Read};
use std::path::Path;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::PcapError;

use super::{CaptureError, CaptureStats};

/// The reader's starting buffer; it grows for records that do not fit.
pub(super) const BUFFER_SIZE: usize = 2 << 20;
/// The smallest starting buffer, for small files.
pub(super) const MIN_BUFFER_SIZE: usize = 64 << 10;
/// A record claiming more than this is a corrupt length field, not a packet.
pub(super) const MAX_RECORD: usize = 64 << 20;

/// A failure inside the read loops, before the path is attached.
pub(super) enum Failure {
    Read,
    Corrupt { offset: u64, detail: String },
    UnsupportedLinkType(u32),
}

pub(super) fn corrupt(offset: usize, detail: impl Into<String>) -> Failure {
    Failure::Corrupt {
        offset: offset as u64,
        detail: detail.into(),
    }
}

/// The file as `pcap-parser` sees it: every read fills the buffer (pcap-parser parses the
/// header from its first read, and a short read must not look like the end), and an I/O
/// error is kept because pcap-parser only reports "read error".
pub(super) struct FillingReader<R> {
    inner: R,
    error: Option<io::Error>,
}

impl<R> FillingReader<R> {
    pub(super) fn new(inner: R) -> Self {
        FillingReader { inner, error: None }
    }

    /// The I/O error behind a [`Failure::Read`], with the path attached.
    pub(super) fn take_error(&mut self, path: &Path) -> CaptureError {
        CaptureError::Read {
            path: path.to_path_buf(),
            error: self
                .error
                .take()
                .unwrap_or_else(|| io::Error::other("read failed")),
        }
    }
}

impl<R: Read> Read for FillingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = e.kind();
                    self.error = Some(e);
                    return Err(io::Error::from(kind));
                }
            }
        }
        Ok(n)
    }
}

/// What to do after `next()` did not return a block.
pub(super) enum Next {
    Refill,
    Grow,
    End,
    Truncated,
    Fail(Failure),
}

pub(super) fn next_after_error(e: PcapError<&[u8]>, offset: usize) -> Next {
    match e {
        PcapError::Eof => Next::End,
        PcapError::UnexpectedEof => Next::Truncated,
        PcapError::Incomplete(_) => Next::Refill,
        PcapError::BufferTooSmall => Next::Grow,
        PcapError::ReadError => Next::Fail(Failure::Read),
        e => Next::Fail(corrupt(offset, format!("unparsable record ({e})"))),
    }
}

/// Handles a `next()` that returned no block: refills or grows the buffer (Ok(true): try
/// again) or reports the end (Ok(false)).
pub(super) fn recover<R: PcapReaderIterator + ?Sized>(
    reader: &mut R,
    next: Next,
    declared_len: impl Fn(&[u8]) -> Option<usize>,
    capacity: &mut usize,
    stats: &mut CaptureStats,
) -> Result<bool, Failure> {
    if matches!(next, Next::Refill | Next::Truncated) {
        // pcap-parser's block parsers report a malformed body inside a complete block as
        // "incomplete": with the whole block buffered, that is corruption.
        let data = reader.data();
        if let Some(len) = declared_len(data) {
            if len <= data.len() {
                return Err(corrupt(reader.consumed(), "malformed block"));
            }
        }
    }
    match next {
        Next::End => Ok(false),
        Next::Truncated => {
            // pcap-parser can report a clean end this way when the buffer is empty.
            if !reader.data().is_empty() {
                stats.truncated_file = true;
                stats.truncated_files += 1;
            }
            Ok(false)
        }
        Next::Refill => {
            let before = reader.data().len();
            reader.refill().map_err(|_| Failure::Read)?;
            if reader.data().len() == before && !reader.reader_exhausted() {
                // No room to read into: the record needs a larger buffer.
                grow(reader, &declared_len, capacity)?;
            }
            Ok(true)
        }
        Next::Grow => {
            grow(reader, &declared_len, capacity)?;
            Ok(true)
        }
        Next::Fail(f) => Err(f),
    }
}

pub(super) fn grow<R: PcapReaderIterator + ?Sized>(
    reader: &mut R,
    declared_len: &impl Fn(&[u8]) -> Option<usize>,
    capacity: &mut usize,
) -> Result<(), Failure> {
    let offset = reader.consumed();
    let needed = declared_len(reader.data()).unwrap_or(*capacity * 2);
    if needed > MAX_RECORD {
        return Err(corrupt(
            offset,
            format!("record claims {needed} bytes (more than the {MAX_RECORD}-byte limit)"),
        ));
    }
    // pcap-parser wants strictly more room than the record.
    let new_capacity = (needed + 1).next_power_of_two().max(*capacity * 2);
    reader.grow(new_capacity);
    *capacity = new_capacity;
    reader.refill().map_err(|_| Failure::Read)
}

pub(super) fn read_u32(b: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}
