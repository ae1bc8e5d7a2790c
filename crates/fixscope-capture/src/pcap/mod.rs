//! Reading pcap and pcapng capture files into [`Segment`]s.
//!
//! Files are streamed through `pcap-parser`'s circular-buffer readers, so memory stays
//! constant however large the capture. Timestamps become nanoseconds since the epoch with
//! integer arithmetic only. Enhanced Packet Blocks (nearly every packet of a pcapng file) and
//! blocks we have no use for are handled here straight from the reader's buffer rather than
//! by `pcap-parser`, whose EPB parser allocates a `Vec` for the options of every packet and
//! whose other block parsers mistake a malformed body for a truncated file.
//!
//! A capture that ends in the middle of a record (tcpdump was killed) is read up to that
//! record and flagged in [`CaptureStats::truncated_file`]; damage anywhere else is a
//! [`CaptureError`] naming the file and the byte offset of the bad record.
//!
//! Parts: `input` (the buffer and pcap-parser plumbing: refill, grow, errors), `legacy`
//! (pcap records), `ng` (pcapng blocks, interfaces), `timestamp` (pcapng time units to
//! nanoseconds). Every frame goes to the [`FrameClassifier`], shared with any other
//! packet-level source.

mod input;
mod legacy;
mod mapped;
pub use mapped::prefetch;
mod ng;
mod secrets;
pub use secrets::{tls_key_log_blocks, DSB_TLS_KEY_LOG};
#[cfg(test)]
mod tests;
mod timestamp;

use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};

pub use crate::classify::CaptureStats;
use crate::classify::FrameClassifier;
use crate::decode::LinkType;
use fixscope_model::ports::PortSet;
use fixscope_model::segment::Segment;
/// What a consumer of segments wants after one (the same type every source uses).
pub use fixscope_model::source::Flow;
use input::{Failure, FillingReader, BUFFER_SIZE, MIN_BUFFER_SIZE};

/// Why a capture file could not be read. The OS error is part of the text and not a
/// `source` as well: printed with its causes (`{:#}`) it would be said twice.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open {}: {error}", path.display())]
    Open { path: PathBuf, error: io::Error },
    #[error("error reading {}: {error}", path.display())]
    Read { path: PathBuf, error: io::Error },
    #[error("{} is not a pcap or pcapng capture file", path.display())]
    NotACapture { path: PathBuf },
    /// A compressed capture (`.pcap.gz`): said with the way to read it.
    #[error("{} is {format}-compressed, not a pcap or pcapng capture file: decompress it on the way in, e.g. `{cat} {} | fixscope pcap - …`", path.display(), if path == Path::new("/dev/stdin") { "FILE".into() } else { path.display().to_string() })]
    Compressed {
        path: PathBuf,
        /// `gzip`, `zstd`, `xz`, `bzip2`.
        format: &'static str,
        /// The tool that decompresses it to stdout (`zcat`).
        cat: &'static str,
    },
    #[error("{} is corrupt at byte {offset}: {detail}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{}: unsupported link type {linktype} (supported: Ethernet, Linux cooked SLL/SLL2, raw IP, BSD loopback)", path.display())]
    UnsupportedLinkType { path: PathBuf, linktype: u32 },
}

const NS_PER_SEC: u64 = 1_000_000_000;

/// The compression a file's first bytes announce, and the tool that writes it out
/// decompressed: gzip (`1f 8b`), zstd, xz, bzip2.
pub fn compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const KNOWN: [(&[u8], &str, &str); 4] = [
        (&[0x1f, 0x8b], "gzip", "zcat"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd", "zstdcat"),
        (&[0xfd, 0x37, 0x7a, 0x58], "xz", "xzcat"),
        (b"BZh", "bzip2", "bzcat"),
    ];
    KNOWN
        .iter()
        .find(|(magic, _, _)| head.starts_with(magic))
        .map(|&(_, format, cat)| (format, cat))
}

/// The command that writes `path` out decompressed with `cat`, beside it:
/// `zcat run.pcap.gz > run.pcap`.
pub fn decompress_command(path: &Path, cat: &str) -> String {
    let known = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("gz" | "zst" | "xz" | "bz2")
    );
    let out = if known {
        path.with_extension("")
    } else {
        let mut name = path.as_os_str().to_owned();
        name.push(".decompressed");
        PathBuf::from(name)
    };
    format!("{cat} {} > {}", path.display(), out.display())
}

/// Why a reading of captures did not reach their end, as the summary says it
/// (`SummaryReport::incomplete`): a file that could not be read on, or a stop (Ctrl-C,
/// SIGTERM). `None`: every capture was read to its end.
pub fn incomplete_reason(error: Option<&dyn std::fmt::Display>, stopped: bool) -> Option<String> {
    match error {
        Some(e) => Some(format!("{e}; nothing after it was read")),
        None if stopped => Some("stopped (SIGINT/SIGTERM) before the end of the captures".into()),
        None => None,
    }
}

/// Reads one pcap or pcapng file, decodes every packet, classifies TCP segments with
/// `ports.classify(src_port, dst_port)` ([`FrameClassifier`]) and calls `on_segment` for
/// those in range, in file order.
pub fn read_capture(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    mut on_segment: impl FnMut(&Segment<'_>),
) -> Result<(), CaptureError> {
    read_capture_until(path, ports, stats, |segment| {
        on_segment(segment);
        Flow::Continue
    })
}

/// [`read_capture`] that stops at the first record after `on_segment` said [`Flow::Stop`].
pub fn read_capture_until(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    mut on_segment: impl FnMut(&Segment<'_>) -> Flow,
) -> Result<(), CaptureError> {
    read_capture_counted(path, ports, stats, |segment, _| on_segment(segment))
}

/// [`read_capture_until`] whose consumer also sees the counters up to each segment (the
/// background reader ships them with its batches).
pub(crate) fn read_capture_counted(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    on_segment: impl FnMut(&Segment<'_>, &CaptureStats) -> Flow,
) -> Result<(), CaptureError> {
    read_capture_progress(path, ports, stats, true, on_segment)
}

/// [`read_capture_counted`], adding what it reads to [`bytes_read`] only when
/// `count_progress` (of several threads reading the same file, one counts).
pub fn read_capture_progress(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    count_progress: bool,
    on_segment: impl FnMut(&Segment<'_>, &CaptureStats) -> Flow,
) -> Result<(), CaptureError> {
    read_capture_shared(path, ports, stats, count_progress, |_| {}, on_segment)
}

/// [`read_capture_progress`] that hands `on_map` the file's mapping before its first
/// segment when the file is read in place ([`mapped`]): the segments' payloads are then
/// slices of it, and a consumer that keeps the mapping may refer to them after the call
/// (`fixscope_core::twostage` hands messages over as ranges of it). Not called for a file read
/// by the streaming reader (pcapng, pipes), whose payloads live only during the call.
pub fn read_capture_shared(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    count_progress: bool,
    on_map: impl FnOnce(&std::sync::Arc<memmap2::Mmap>),
    on_segment: impl FnMut(&Segment<'_>, &CaptureStats) -> Flow,
) -> Result<(), CaptureError> {
    let mut sink = Sink {
        classifier: FrameClassifier::new(ports.clone()),
        stats,
        on_segment,
        stopped: false,
    };
    let result = read_path_into(path, &mut sink, count_progress, on_map);
    sink.finish();
    result
}

/// Reads the capture file at `path` into `sink`: in place when it is a mapped pcap
/// (`on_map` gets the mapping first), else by the streaming reader.
fn read_path_into(
    path: &Path,
    sink: &mut impl FrameSink,
    count_progress: bool,
    on_map: impl FnOnce(&std::sync::Arc<memmap2::Mmap>),
) -> Result<(), CaptureError> {
    let file = File::open(path).map_err(|error| CaptureError::Open {
        path: path.to_path_buf(),
        error,
    })?;
    // Small files get a small buffer (a big one costs time to zero); pipes get the default.
    let capacity = match file.metadata() {
        Ok(m) if m.is_file() => usize::try_from(m.len())
            .unwrap_or(BUFFER_SIZE)
            .saturating_add(1)
            .clamp(MIN_BUFFER_SIZE, BUFFER_SIZE),
        _ => BUFFER_SIZE,
    };
    if let Some(mapped) = mapped::MappedPcap::open(&file) {
        on_map(mapped.shared_map());
        let Some(at) = mapped.read(sink, count_progress) else {
            return Ok(());
        };
        // A record the mapped walk does not take (corrupt, cut off): the streaming reader
        // goes on from it, with the file header in front, and says what is wrong where.
        let mut file = file;
        file.seek(io::SeekFrom::Start(at as u64))
            .map_err(|error| CaptureError::Read {
                path: path.to_path_buf(),
                error,
            })?;
        let header = io::Cursor::new(mapped.file_header().to_vec());
        let base = at as u64 - mapped::FILE_HEADER as u64;
        return if count_progress {
            read_records(
                Kind::Pcap,
                header.chain(Counting(file)),
                capacity,
                path,
                sink,
                base,
            )
        } else {
            read_records(Kind::Pcap, header.chain(file), capacity, path, sink, base)
        };
    }
    if count_progress {
        read_stream_into(Counting(file), capacity, path, sink)
    } else {
        read_stream_into(file, capacity, path, sink)
    }
}

/// Every UDP datagram of the capture file at `path` (market data: its own reading, apart
/// from the segments'), with its capture time, in file order, until `on_datagram` says
/// [`Flow::Stop`]. `stats` counts what was read (packets, IP fragments, frames that do
/// not decode). Hardware trailers are not read for datagrams yet: the capture's stamps
/// time them.
pub fn read_datagrams(
    path: &Path,
    stats: &mut CaptureStats,
    on_datagram: impl FnMut(u64, &crate::decode::UdpPacket<'_>) -> Flow,
) -> Result<(), CaptureError> {
    let mut sink = DatagramSink {
        stats,
        on_datagram,
        stopped: false,
    };
    read_path_into(path, &mut sink, false, |_| {})
}

/// Hands each frame's UDP datagram on ([`read_datagrams`]).
struct DatagramSink<'a, F> {
    stats: &'a mut CaptureStats,
    on_datagram: F,
    stopped: bool,
}

impl<F: FnMut(u64, &crate::decode::UdpPacket<'_>) -> Flow> FrameSink for DatagramSink<'_, F> {
    fn frame(&mut self, link: LinkType, ts_ns: u64, frame: &[u8]) {
        self.stats.packets += 1;
        match crate::decode::decode(link, frame) {
            Ok(crate::decode::Decoded::Udp(d)) => {
                if !self.stopped {
                    self.stopped = (self.on_datagram)(ts_ns, &d) == Flow::Stop;
                }
            }
            Ok(crate::decode::Decoded::IpFragment) => self.stats.ip_fragments += 1,
            Ok(_) => {}
            Err(_) => self.stats.decode_errors += 1,
        }
    }

    fn stopped(&self) -> bool {
        self.stopped
    }

    fn stats(&mut self) -> &mut CaptureStats {
        self.stats
    }
}

/// The timestamp of the first packet record of the capture file at `path` (a pcap record,
/// a pcapng Enhanced Packet Block), reading no further than that: how several files are
/// put in time order before they are read (`crate::prefetch::merge`). `None` for what is
/// not a regular file (a pipe is read once), a file without packets, or one that cannot
/// be read up to its first packet (reading it says why; it has no segment to give).
pub(crate) fn first_timestamp(path: &Path) -> Option<u64> {
    scan_first_packets(path, |ts, _, _| Some(ts))
}

/// The hardware clock a capture's frames carry ([`crate::wire_stamp`]: the run's
/// `--wire-timestamps`), from its first packets (any port): its kind and first device, or
/// `None` (no stamp there, not a regular file). Read before the run so every report of it
/// names the clock.
pub fn wire_clock(path: &Path) -> Option<(crate::wire_stamp::TrailerKind, u16)> {
    let mut stamps = crate::wire_stamp::WireStamps::new(crate::wire_stamp::chosen());
    let mut counters = crate::wire_stamp::TrailerCounters::default();
    scan_first_packets(path, |ts, link, frame| {
        (link == Some(LinkType::Ethernet))
            .then(|| stamps.stamp(frame, ts, &mut counters))
            .flatten()
            .map(|s| (s.kind, s.device))
    })
}

/// Hands `f` the packets (time, link type, bytes) among the first blocks of a regular
/// file until it returns something, reading no further: how [`first_timestamp`] and
/// [`wire_clock`] look at a capture before it is read.
fn scan_first_packets<T>(
    path: &Path,
    mut f: impl FnMut(u64, Option<LinkType>, &[u8]) -> Option<T>,
) -> Option<T> {
    use pcap_parser::{PcapBlockOwned, PcapError};
    /// Blocks and refills looked at, at most.
    const LOOK: usize = 4096;
    let file = File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut capacity = MIN_BUFFER_SIZE;
    let mut reader = pcap_parser::create_reader(capacity, file).ok()?;
    let mut frac_ns = 1000;
    let mut legacy_link = None;
    let mut ng = ng::FirstPacket::default();
    for _ in 0..LOOK {
        match reader.next() {
            Ok((len, block)) => {
                let found = match &block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        frac_ns = if h.is_nanosecond_precision() { 1 } else { 1000 };
                        legacy_link = LinkType::from_linktype(h.network.0 as u32);
                        None
                    }
                    PcapBlockOwned::Legacy(b) => {
                        let ts = u64::from(b.ts_sec) * NS_PER_SEC + u64::from(b.ts_usec) * frac_ns;
                        let caplen = (b.caplen as usize).min(b.data.len());
                        f(ts, legacy_link, &b.data[..caplen])
                    }
                    PcapBlockOwned::NG(b) => {
                        ng.packet(b).and_then(|(ts, link, data)| f(ts, link, data))
                    }
                };
                if found.is_some() {
                    return found;
                }
                reader.consume(len);
            }
            Err(PcapError::Incomplete(_)) => {
                let before = reader.data().len();
                reader.refill().ok()?;
                if reader.data().len() == before {
                    if reader.reader_exhausted() {
                        return None;
                    }
                    // A block larger than the buffer.
                    capacity *= 2;
                    if capacity > input::MAX_RECORD * 2 {
                        return None;
                    }
                    reader.grow(capacity);
                    reader.refill().ok()?;
                }
            }
            Err(PcapError::BufferTooSmall) => {
                capacity *= 2;
                if capacity > input::MAX_RECORD * 2 {
                    return None;
                }
                reader.grow(capacity);
                reader.refill().ok()?;
            }
            Err(_) => return None,
        }
    }
    None
}

/// Bytes of capture read so far by this process, all files (a progress bar reads it).
pub fn bytes_read() -> u64 {
    BYTES_READ.load(std::sync::atomic::Ordering::Relaxed)
}

static BYTES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A reader counting what it reads into [`BYTES_READ`] (one relaxed add per refill of
/// the parser's buffer, not per packet).
struct Counting<R>(R);

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        BYTES_READ.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// [`read_capture_until`] over any byte stream (a pipe, or bytes in memory for the fuzz
/// targets and tests); `name` is what errors call it.
pub fn read_capture_from(
    input: impl Read,
    name: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    mut on_segment: impl FnMut(&Segment<'_>) -> Flow,
) -> Result<(), CaptureError> {
    read_stream(input, MIN_BUFFER_SIZE, name, ports, stats, |segment, _| {
        on_segment(segment)
    })
}

fn read_stream<R: Read>(
    file: R,
    capacity: usize,
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    on_segment: impl FnMut(&Segment<'_>, &CaptureStats) -> Flow,
) -> Result<(), CaptureError> {
    let mut sink = Sink {
        classifier: FrameClassifier::new(ports.clone()),
        stats,
        on_segment,
        stopped: false,
    };
    let result = read_stream_into(file, capacity, path, &mut sink);
    sink.finish();
    result
}

/// Sniffs a stream's format from its magic and reads its records into `sink`.
fn read_stream_into<R: Read>(
    mut file: R,
    capacity: usize,
    path: &Path,
    sink: &mut impl FrameSink,
) -> Result<(), CaptureError> {
    // Sniff the magic ourselves (not `create_reader`) for clear errors; a cursor puts the
    // bytes back in front of the file, which also works for pipes.
    let mut magic = [0u8; 4];
    let mut sniff = FillingReader::new(&mut file);
    let n = sniff.read(&mut magic).map_err(|_| sniff.take_error(path))?;
    let kind = match (n, u32::from_le_bytes(magic)) {
        (4, ng::SHB_MAGIC) => Kind::PcapNg,
        (4, 0xa1b2_c3d4 | 0xa1b2_3c4d | 0xd4c3_b2a1 | 0x4d3c_b2a1 | 0xa1b2_cd34) => Kind::Pcap,
        _ => {
            return Err(match compression(&magic[..n]) {
                Some((format, cat)) => CaptureError::Compressed {
                    path: path.to_path_buf(),
                    format,
                    cat,
                },
                None => CaptureError::NotACapture {
                    path: path.to_path_buf(),
                },
            })
        }
    };
    read_records(
        kind,
        io::Cursor::new(magic).chain(file),
        capacity,
        path,
        sink,
        0,
    )
}

/// Reads the records of a `kind` capture from `input` (from its file header on) into
/// `sink`; `base` is added to the offsets errors name (the file's offset of `input`'s
/// first record byte, less the header's length, when `input` is a header followed by the
/// rest of a file: [`mapped`] hands over that way).
fn read_records<R: Read>(
    kind: Kind,
    input: R,
    capacity: usize,
    path: &Path,
    sink: &mut impl FrameSink,
    base: u64,
) -> Result<(), CaptureError> {
    let mut source = FillingReader::new(input);
    let result = match kind {
        Kind::Pcap => legacy::read_pcap(&mut source, capacity, sink),
        Kind::PcapNg => ng::read_pcapng(&mut source, capacity, sink),
    };
    result.map_err(|e| match e {
        Failure::Read => source.take_error(path),
        Failure::Corrupt { offset, detail } => CaptureError::Corrupt {
            path: path.to_path_buf(),
            offset: offset + base,
            detail,
        },
        Failure::UnsupportedLinkType(linktype) => CaptureError::UnsupportedLinkType {
            path: path.to_path_buf(),
            linktype,
        },
    })
}

enum Kind {
    Pcap,
    PcapNg,
}

/// What the record readers (legacy, mapped, pcapng) hand each packet record's frame to:
/// the segment classifier ([`Sink`]) or the market-data reader ([`DatagramSink`]).
pub(super) trait FrameSink {
    /// One packet record's frame.
    fn frame(&mut self, link: LinkType, ts_ns: u64, frame: &[u8]);
    /// The consumer said [`Flow::Stop`]: the read loops end at the next record.
    fn stopped(&self) -> bool;
    fn stats(&mut self) -> &mut CaptureStats;
}

/// Where decoded packets go.
struct Sink<'a, F> {
    classifier: FrameClassifier,
    stats: &'a mut CaptureStats,
    on_segment: F,
    /// The consumer said [`Flow::Stop`]: the read loops end at the next record.
    stopped: bool,
}

impl<F: FnMut(&Segment<'_>, &CaptureStats) -> Flow> FrameSink for Sink<'_, F> {
    /// One packet record's frame (counted in `packets` by the classifier).
    #[inline]
    fn frame(&mut self, link: LinkType, ts_ns: u64, frame: &[u8]) {
        self.classified(link, ts_ns, frame)
    }

    #[inline]
    fn stopped(&self) -> bool {
        self.stopped
    }

    #[inline]
    fn stats(&mut self) -> &mut CaptureStats {
        self.stats
    }
}

impl<F: FnMut(&Segment<'_>, &CaptureStats) -> Flow> Sink<'_, F> {
    #[inline]
    fn classified(&mut self, link: LinkType, ts_ns: u64, frame: &[u8]) {
        let segment = self.classifier.classify(link, ts_ns, frame, self.stats);
        if self.classifier.has_released() {
            self.released();
        }
        if let Some(segment) = segment {
            if !self.stopped {
                self.stopped = (self.on_segment)(&segment, self.stats) == Flow::Stop;
            }
        }
    }

    /// Segments the classifier held (a connection between two watched ports whose
    /// acceptor was not yet known), in order, before the frame that released them.
    #[cold]
    fn released(&mut self) {
        let on_segment = &mut self.on_segment;
        let stopped = &mut self.stopped;
        self.classifier
            .take_released(self.stats, &mut |segment, stats| {
                if !*stopped {
                    *stopped = on_segment(segment, stats) == Flow::Stop;
                }
                !*stopped
            });
    }

    /// The file was read to its end (or to damage): what the classifier still holds is
    /// handed on.
    fn finish(&mut self) {
        if self.stopped {
            return;
        }
        self.classifier.finish(self.stats);
        if self.classifier.has_released() {
            self.released();
        }
    }
}
