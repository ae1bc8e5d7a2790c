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

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{
    Block, EnhancedPacketBlock, LegacyPcapReader, OptionCode, PcapBlockOwned, PcapError,
    PcapNGReader,
};

use crate::decode::{decode, Decoded, LinkType};
use crate::ports::PortSet;
use crate::segment::Segment;

/// What reading captures saw. Counters accumulate over every file read with the same
/// stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaptureStats {
    /// Packet records (pcap records, pcapng EPBs and SPBs).
    pub packets: u64,
    /// Packets that decoded to a TCP segment.
    pub tcp_segments: u64,
    /// TCP segments with a watched port, handed on as [`Segment`]s.
    pub segments_in_port_range: u64,
    /// Packets that are not TCP over IP (ARP, UDP, ...).
    pub not_tcp: u64,
    /// IP fragments (not reassembled; their TCP bytes are lost).
    pub ip_fragments: u64,
    /// Packets whose headers are malformed or cut before the TCP payload.
    pub decode_errors: u64,
    /// Segments handed on whose payload the capture cut short (snaplen).
    pub truncated_segments: u64,
    /// Packets on an interface whose link type we do not decode (pcapng).
    pub unsupported_link_packets: u64,
    /// pcapng packets that name an interface the section never described.
    pub unknown_interface_packets: u64,
    /// pcapng packets whose timestamp does not fit u64 nanoseconds since the epoch (an
    /// absurd timestamp or `if_tsoffset`).
    pub bad_timestamps: u64,
    /// A file ended in the middle of a record; everything before it was read.
    pub truncated_file: bool,
}

/// Why a capture file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("error reading {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a pcap or pcapng capture file", path.display())]
    NotACapture { path: PathBuf },
    #[error("{} is corrupt at byte {offset}: {detail}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{}: unsupported link type {linktype} (supported: Ethernet, Linux cooked SLL/SLL2, raw IP, BSD loopback)", path.display())]
    UnsupportedLinkType { path: PathBuf, linktype: u32 },
}

/// The reader's starting buffer; it grows for records that do not fit.
const BUFFER_SIZE: usize = 2 << 20;
/// The smallest starting buffer, for small files.
const MIN_BUFFER_SIZE: usize = 64 << 10;
/// A record claiming more than this is a corrupt length field, not a packet.
const MAX_RECORD: usize = 64 << 20;
/// libpcap's largest snaplen; legacy records may be this long whatever the header says.
const MAX_LEGACY_CAPLEN: u32 = 262_144;
const NS_PER_SEC: u64 = 1_000_000_000;

const SHB_MAGIC: u32 = 0x0A0D_0D0A;
const EPB_TYPE: u32 = 6;
const BOM: u32 = 0x1A2B_3C4D;

/// What a consumer of segments wants after one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Stop reading (the consumer cannot go on, e.g. its output was closed).
    Stop,
}

/// Reads one pcap or pcapng file, decodes every packet, classifies TCP segments with
/// `ports.classify(src_port, dst_port)` and calls `on_segment` for those in range, in file
/// order.
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
    on_segment: impl FnMut(&Segment<'_>) -> Flow,
) -> Result<(), CaptureError> {
    let mut file = File::open(path).map_err(|source| CaptureError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    // Sniff the magic ourselves (not `create_reader`) for clear errors; a cursor puts the
    // bytes back in front of the file, which also works for pipes.
    let mut magic = [0u8; 4];
    let mut sniff = Source {
        inner: &mut file,
        error: None,
    };
    let n = sniff.read(&mut magic).map_err(|_| sniff.take_error(path))?;
    let kind = match (n, u32::from_le_bytes(magic)) {
        (4, SHB_MAGIC) => Kind::PcapNg,
        (4, 0xa1b2_c3d4 | 0xa1b2_3c4d | 0xd4c3_b2a1 | 0x4d3c_b2a1 | 0xa1b2_cd34) => Kind::Pcap,
        _ => {
            return Err(CaptureError::NotACapture {
                path: path.to_path_buf(),
            })
        }
    };
    // Small files get a small buffer (a big one costs time to zero); pipes get the default.
    let capacity = match file.metadata() {
        Ok(m) if m.is_file() => usize::try_from(m.len())
            .unwrap_or(BUFFER_SIZE)
            .saturating_add(1)
            .clamp(MIN_BUFFER_SIZE, BUFFER_SIZE),
        _ => BUFFER_SIZE,
    };
    let mut source = Source {
        inner: io::Cursor::new(magic).chain(file),
        error: None,
    };
    let mut sink = Sink {
        ports,
        stats,
        on_segment,
        stopped: false,
    };
    let result = match kind {
        Kind::Pcap => read_pcap(&mut source, capacity, &mut sink),
        Kind::PcapNg => read_pcapng(&mut source, capacity, &mut sink),
    };
    result.map_err(|e| match e {
        Failure::Read => source.take_error(path),
        Failure::Corrupt { offset, detail } => CaptureError::Corrupt {
            path: path.to_path_buf(),
            offset,
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

/// A failure inside the read loops, before the path is attached.
enum Failure {
    Read,
    Corrupt { offset: u64, detail: String },
    UnsupportedLinkType(u32),
}

fn corrupt(offset: usize, detail: impl Into<String>) -> Failure {
    Failure::Corrupt {
        offset: offset as u64,
        detail: detail.into(),
    }
}

/// The file as `pcap-parser` sees it: every read fills the buffer (pcap-parser parses the
/// header from its first read, and a short read must not look like the end), and an I/O
/// error is kept because pcap-parser only reports "read error".
struct Source<R> {
    inner: R,
    error: Option<io::Error>,
}

impl<R> Source<R> {
    fn take_error(&mut self, path: &Path) -> CaptureError {
        CaptureError::Read {
            path: path.to_path_buf(),
            source: self
                .error
                .take()
                .unwrap_or_else(|| io::Error::other("read failed")),
        }
    }
}

impl<R: Read> Read for Source<R> {
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

/// Where decoded packets go.
struct Sink<'a, F> {
    ports: &'a PortSet,
    stats: &'a mut CaptureStats,
    on_segment: F,
    /// The consumer said [`Flow::Stop`]: the read loops end at the next record.
    stopped: bool,
}

impl<F: FnMut(&Segment<'_>) -> Flow> Sink<'_, F> {
    #[inline]
    fn frame(&mut self, link: LinkType, ts_ns: u64, frame: &[u8]) {
        match decode(link, frame) {
            Ok(Decoded::Tcp(t)) => {
                self.stats.tcp_segments += 1;
                let Some(direction) = self.ports.classify(t.flow.src.port, t.flow.dst.port) else {
                    return;
                };
                self.stats.segments_in_port_range += 1;
                if t.missing_tail > 0 {
                    self.stats.truncated_segments += 1;
                }
                let flow = (self.on_segment)(&Segment {
                    ts_ns,
                    flow: t.flow,
                    direction,
                    seq: t.seq,
                    ack: t.ack,
                    flags: t.flags,
                    payload: t.payload,
                    missing_tail: t.missing_tail,
                });
                self.stopped = flow == Flow::Stop;
            }
            Ok(Decoded::NotTcp) => self.stats.not_tcp += 1,
            Ok(Decoded::IpFragment) => self.stats.ip_fragments += 1,
            Err(_) => self.stats.decode_errors += 1,
        }
    }
}

/// What to do after `next()` did not return a block.
enum Next {
    Refill,
    Grow,
    End,
    Truncated,
    Fail(Failure),
}

fn classify_error(e: PcapError<&[u8]>, offset: usize) -> Next {
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
fn recover<R: PcapReaderIterator + ?Sized>(
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

fn grow<R: PcapReaderIterator + ?Sized>(
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

fn read_u32(b: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}

fn read_pcap<R: Read>(
    source: R,
    mut capacity: usize,
    sink: &mut Sink<'_, impl FnMut(&Segment<'_>) -> Flow>,
) -> Result<(), Failure> {
    let mut reader = LegacyPcapReader::new(capacity, source).map_err(|e| match e {
        PcapError::ReadError => Failure::Read,
        PcapError::Incomplete(_) | PcapError::Eof => corrupt(0, "file header cut short"),
        e => corrupt(0, format!("bad file header ({e})")),
    })?;
    let mut link = LinkType::Ethernet;
    let mut frac_ns: u64 = 1000;
    let mut big_endian = false;
    let mut record_header = 16;
    let mut max_caplen = 0u32;
    loop {
        if sink.stopped {
            return Ok(());
        }
        let offset = reader.consumed();
        // Legacy pcap has no checksums: a corrupt length would make us read garbage as
        // records. Like libpcap, reject lengths beyond the snaplen and the 256 KiB maximum.
        if max_caplen > 0 {
            if let Some(caplen) = read_u32(reader.data(), 8, big_endian) {
                if caplen > max_caplen {
                    return Err(corrupt(
                        offset,
                        format!("record claims {caplen} captured bytes (snaplen {max_caplen})"),
                    ));
                }
            }
        }
        let next = match reader.next() {
            Ok((len, block)) => {
                match block {
                    PcapBlockOwned::Legacy(b) => {
                        sink.stats.packets += 1;
                        // u32 seconds * 10^9 + a 32-bit fraction always fits u64.
                        let ts_ns =
                            u64::from(b.ts_sec) * NS_PER_SEC + u64::from(b.ts_usec) * frac_ns;
                        sink.frame(link, ts_ns, b.data);
                    }
                    PcapBlockOwned::LegacyHeader(h) => {
                        let code = h.network.0 as u32;
                        link = LinkType::from_linktype(code)
                            .ok_or(Failure::UnsupportedLinkType(code & 0xFFFF))?;
                        frac_ns = if h.is_nanosecond_precision() { 1 } else { 1000 };
                        big_endian = h.is_bigendian();
                        record_header = if h.is_modified_format() { 24 } else { 16 };
                        max_caplen = h.snaplen.max(MAX_LEGACY_CAPLEN);
                    }
                    PcapBlockOwned::NG(_) => {
                        return Err(corrupt(offset, "pcapng block inside a pcap file"))
                    }
                }
                reader.consume(len);
                continue;
            }
            Err(e) => classify_error(e, offset),
        };
        let declared =
            |d: &[u8]| read_u32(d, 8, big_endian).map(|caplen| record_header + caplen as usize);
        if !recover(&mut reader, next, declared, &mut capacity, sink.stats)? {
            return Ok(());
        }
    }
}

/// How a pcapng interface's timestamps become nanoseconds.
#[derive(Clone, Copy, Debug)]
enum TsScale {
    /// Units of 10^-k s with k <= 9: multiply.
    Mul(u64),
    /// Units of 10^-k s with k > 9: divide.
    Div(u64),
    /// Units of 2^-k s.
    Pow2(u32),
}

impl TsScale {
    /// From a raw `if_tsresol` byte; None for resolutions beyond what 64 bits can count.
    fn from_tsresol(r: u8) -> Option<Self> {
        if r & 0x80 == 0 {
            match u32::from(r) {
                k @ 0..=9 => Some(TsScale::Mul(10u64.pow(9 - k))),
                k @ 10..=19 => Some(TsScale::Div(10u64.pow(k - 9))),
                _ => None,
            }
        } else {
            let k = u32::from(r & 0x7F);
            (k <= 63).then_some(TsScale::Pow2(k))
        }
    }

    /// Nanoseconds since the epoch (rounded down), or None if out of u64 range.
    #[inline]
    fn to_ns(self, units: u64, offset_ns: i128) -> Option<u64> {
        let ns: u128 = match self {
            TsScale::Mul(m) => u128::from(units) * u128::from(m),
            TsScale::Div(d) => u128::from(units / d),
            TsScale::Pow2(k) => (u128::from(units) * u128::from(NS_PER_SEC)) >> k,
        };
        u64::try_from(ns as i128 + offset_ns).ok()
    }
}

#[derive(Clone, Copy, Debug)]
struct Interface {
    link: Option<LinkType>,
    scale: TsScale,
    offset_ns: i128,
    snaplen: u32,
}

/// pcapng reading state for the current section.
struct NgState {
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// Timestamp for Simple Packet Blocks, which carry none.
    last_ts_ns: u64,
}

impl NgState {
    #[inline]
    fn packet(
        &self,
        sink: &mut Sink<'_, impl FnMut(&Segment<'_>) -> Flow>,
        if_id: u32,
        units: Option<u64>,
        data: &[u8],
    ) -> Option<u64> {
        sink.stats.packets += 1;
        let Some(iface) = self.interfaces.get(if_id as usize) else {
            sink.stats.unknown_interface_packets += 1;
            return None;
        };
        let Some(link) = iface.link else {
            sink.stats.unsupported_link_packets += 1;
            return None;
        };
        let ts_ns = match units {
            Some(units) => match iface.scale.to_ns(units, iface.offset_ns) {
                Some(ts) => ts,
                None => {
                    sink.stats.bad_timestamps += 1;
                    return None;
                }
            },
            None => self.last_ts_ns,
        };
        sink.frame(link, ts_ns, data);
        Some(ts_ns)
    }
}

/// A packet block, parsed from the reader's buffer without allocating.
struct PacketBlock<'a> {
    if_id: u32,
    units: u64,
    data: &'a [u8],
}

/// What the block at the start of the buffer is, as far as we handle it ourselves.
enum Peek<'a> {
    /// A complete EPB (or obsolete Packet Block) of `len` bytes.
    Packet(PacketBlock<'a>, usize),
    /// A complete block we have no use for (statistics, name resolution, custom, ...).
    Skip(usize),
    /// Section/interface headers, simple packets, or a block not yet fully buffered: left
    /// to pcap-parser, which also asks for more data.
    Parser,
}

const IDB_TYPE: u32 = 1;
const OBSOLETE_PB_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;

fn peek_block(d: &[u8], big_endian: bool) -> Result<Peek<'_>, String> {
    let (Some(block_type), Some(len)) = (read_u32(d, 0, big_endian), read_u32(d, 4, big_endian))
    else {
        return Ok(Peek::Parser);
    };
    // The section header's type reads the same in both byte orders.
    if matches!(block_type, SHB_MAGIC | IDB_TYPE | SPB_TYPE) {
        return Ok(Peek::Parser);
    }
    let len = len as usize;
    if len < 12 || len & 3 != 0 {
        return Err(format!(
            "block of type {block_type:#x} has invalid length {len}"
        ));
    }
    if d.len() < len {
        return Ok(Peek::Parser);
    }
    let field = |at| read_u32(d, at, big_endian).unwrap_or(0);
    if field(len - 4) as usize != len {
        return Err(format!(
            "block of type {block_type:#x}: trailing length differs from leading length {len}"
        ));
    }
    if !matches!(block_type, EPB_TYPE | OBSOLETE_PB_TYPE) {
        return Ok(Peek::Skip(len));
    }
    if len < 32 {
        return Err(format!("packet block length {len} is too short"));
    }
    let caplen = field(20) as usize;
    if caplen > len - 32 {
        return Err(format!(
            "packet block of {len} bytes claims {caplen} captured bytes"
        ));
    }
    let if_id = if block_type == EPB_TYPE {
        field(8)
    } else {
        // Obsolete Packet Block: a 16-bit interface id, then a drops count.
        let b = [d[8], d[9]];
        u32::from(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    Ok(Peek::Packet(
        PacketBlock {
            if_id,
            units: (u64::from(field(12)) << 32) | u64::from(field(16)),
            data: &d[28..28 + caplen],
        },
        len,
    ))
}

fn read_pcapng<R: Read>(
    source: R,
    mut capacity: usize,
    sink: &mut Sink<'_, impl FnMut(&Segment<'_>) -> Flow>,
) -> Result<(), Failure> {
    let mut reader = PcapNGReader::new(capacity, source).map_err(|e| match e {
        PcapError::ReadError => Failure::Read,
        PcapError::Incomplete(_) | PcapError::Eof => corrupt(0, "section header cut short"),
        e => corrupt(0, format!("bad section header ({e})")),
    })?;
    let mut st = NgState {
        big_endian: false,
        interfaces: Vec::new(),
        last_ts_ns: 0,
    };
    loop {
        if sink.stopped {
            return Ok(());
        }
        let offset = reader.consumed();
        // Fast path: complete EPBs (nearly every block) and blocks we skip, straight
        // from the buffer.
        match peek_block(reader.data(), st.big_endian) {
            Ok(Peek::Packet(p, len)) => {
                if let Some(ts) = st.packet(sink, p.if_id, Some(p.units), p.data) {
                    st.last_ts_ns = ts;
                }
                reader.consume(len);
                continue;
            }
            Ok(Peek::Skip(len)) => {
                reader.consume(len);
                continue;
            }
            Ok(Peek::Parser) => {}
            Err(detail) => return Err(corrupt(offset, detail)),
        }
        let next = match reader.next() {
            Ok((len, PcapBlockOwned::NG(block))) => {
                match block {
                    Block::SectionHeader(shb) => {
                        st.big_endian = shb.big_endian();
                        st.interfaces.clear();
                    }
                    Block::InterfaceDescription(idb) => {
                        st.interfaces.push(interface(&idb, st.big_endian, offset)?);
                    }
                    Block::EnhancedPacket(epb) => {
                        // Taken by the fast path; kept in case pcap-parser sees one first.
                        let data = epb_data(&epb);
                        let units = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        if let Some(ts) = st.packet(sink, epb.if_id, Some(units), data) {
                            st.last_ts_ns = ts;
                        }
                    }
                    Block::SimplePacket(spb) => {
                        // Captured length: the original length, capped by the block and
                        // by interface 0's snaplen.
                        let mut caplen = (spb.origlen as usize).min(spb.data.len());
                        if let Some(i) = st.interfaces.first() {
                            if i.snaplen != 0 {
                                caplen = caplen.min(i.snaplen as usize);
                            }
                        }
                        st.packet(sink, 0, None, &spb.data[..caplen]);
                    }
                    _ => {} // statistics, name resolution, custom, unknown: not ours
                }
                reader.consume(len);
                continue;
            }
            Ok((_, _)) => return Err(corrupt(offset, "pcap record inside a pcapng file")),
            Err(e) => classify_error(e, offset),
        };
        let be = st.big_endian;
        let declared = |d: &[u8]| {
            // A section header carries its own byte order in its byte-order magic.
            let be = if read_u32(d, 0, false) == Some(SHB_MAGIC) {
                read_u32(d, 8, false)? != BOM
            } else {
                be
            };
            read_u32(d, 4, be).map(|len| len as usize)
        };
        if !recover(&mut reader, next, declared, &mut capacity, sink.stats)? {
            return Ok(());
        }
    }
}

fn epb_data<'a>(epb: &EnhancedPacketBlock<'a>) -> &'a [u8] {
    let caplen = (epb.caplen as usize).min(epb.data.len());
    &epb.data[..caplen]
}

fn interface(
    idb: &pcap_parser::InterfaceDescriptionBlock<'_>,
    big_endian: bool,
    offset: usize,
) -> Result<Interface, Failure> {
    let code = idb.linktype.0 as u32;
    let mut tsresol = 6u8;
    let mut tsoffset: i64 = 0;
    // Read the options ourselves: pcap-parser decodes if_tsoffset as little-endian even
    // in big-endian sections.
    for opt in &idb.options {
        let value = opt.value();
        if opt.code == OptionCode::IfTsresol && opt.len >= 1 && !value.is_empty() {
            tsresol = value[0];
        } else if opt.code == OptionCode::IfTsoffset && opt.len >= 8 && value.len() >= 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&value[..8]);
            tsoffset = if big_endian {
                i64::from_be_bytes(b)
            } else {
                i64::from_le_bytes(b)
            };
        }
    }
    let scale = TsScale::from_tsresol(tsresol).ok_or_else(|| {
        corrupt(
            offset,
            format!("interface description has an invalid if_tsresol {tsresol:#04x}"),
        )
    })?;
    Ok(Interface {
        link: LinkType::from_linktype(code),
        scale,
        offset_ns: i128::from(tsoffset) * i128::from(NS_PER_SEC),
        snaplen: idb.snaplen,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::pcap_writer::{
        CaptureFormat, CaptureWriter, FrameOptions, SyntheticConnection, TcpPacketSpec,
    };
    use crate::segment::{Direction, Endpoint, FlowKey, TcpFlags};

    /// A Segment with its payload copied out of the reader's buffer.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Seen {
        ts_ns: u64,
        flow: FlowKey,
        direction: Direction,
        seq: u32,
        flags: TcpFlags,
        payload: Vec<u8>,
        missing_tail: u32,
    }

    fn read(path: &Path, ports: &PortSet) -> (Result<(), CaptureError>, Vec<Seen>, CaptureStats) {
        let mut stats = CaptureStats::default();
        let mut seen = Vec::new();
        let r = read_capture(path, ports, &mut stats, |s| {
            seen.push(Seen {
                ts_ns: s.ts_ns,
                flow: s.flow,
                direction: s.direction,
                seq: s.seq,
                flags: s.flags,
                payload: s.payload.to_vec(),
                missing_tail: s.missing_tail,
            })
        });
        (r, seen, stats)
    }

    fn fix_port() -> PortSet {
        PortSet::single(9878)
    }

    fn endpoints(v6: bool) -> (Endpoint, Endpoint) {
        let (c, s) = if v6 {
            ("2001:db8::10", "2001:db8::20")
        } else {
            ("192.168.1.10", "192.168.1.20")
        };
        (
            Endpoint {
                addr: c.parse().unwrap(),
                port: 51000,
            },
            Endpoint {
                addr: s.parse().unwrap(),
                port: 9878,
            },
        )
    }

    /// A scripted session whose sequence numbers wrap in both directions.
    fn script(v6: bool) -> Vec<TcpPacketSpec> {
        let (c, s) = endpoints(v6);
        let mut conn = SyntheticConnection::new(c, s);
        let mut v = conn.handshake();
        v.push(conn.client_sends(b"8=FIX.4.4\x019=12\x0135=D\x0111=1\x0110=000\x01"));
        v.push(conn.server_sends(&[b'A'; 150]));
        v.push(conn.client_sends(&[b'B'; 80]));
        v.push(conn.server_sends(&[b'C'; 200]));
        v.push(conn.client_fin());
        v.push(conn.server_fin());
        v.push(conn.client_rst());
        v
    }

    fn expected(spec: &TcpPacketSpec, ts_ns: u64) -> Seen {
        Seen {
            ts_ns,
            flow: spec.flow,
            direction: if spec.flow.dst.port == 9878 {
                Direction::Request
            } else {
                Direction::Response
            },
            seq: spec.seq,
            flags: spec.flags,
            payload: spec.payload.clone(),
            missing_tail: 0,
        }
    }

    const BASE_NS: u64 = 1_700_000_000 * NS_PER_SEC;

    /// A timestamp step that the format represents exactly.
    fn exact_step(format: CaptureFormat) -> u64 {
        match format {
            CaptureFormat::Pcap { nanos: false, .. } => 1_001_000,
            CaptureFormat::Pcap { nanos: true, .. } => 1_000_003,
            CaptureFormat::PcapNg { tsresol, .. } if tsresol & 0x80 == 0 => {
                10u64.pow(9u32.saturating_sub(u32::from(tsresol))) * 1001
            }
            CaptureFormat::PcapNg { tsresol, .. } => match u32::from(tsresol & 0x7F) {
                k @ 0..=9 => NS_PER_SEC >> k,
                10..=29 => 1_953_125,
                _ => 1_000_003,
            },
        }
    }

    fn all_formats() -> Vec<CaptureFormat> {
        let mut v = Vec::new();
        for big_endian in [false, true] {
            for nanos in [false, true] {
                v.push(CaptureFormat::Pcap { nanos, big_endian });
            }
            for tsresol in [6, 9, 3, 10, 0x80 | 10, 0x80 | 20, 0x80 | 30] {
                v.push(CaptureFormat::PcapNg {
                    tsresol,
                    big_endian,
                });
            }
        }
        v
    }

    const ALL_LINKS: [LinkType; 5] = [
        LinkType::Ethernet,
        LinkType::LinuxSll,
        LinkType::LinuxSll2,
        LinkType::RawIp,
        LinkType::Null,
    ];

    fn frame_variants() -> Vec<FrameOptions> {
        vec![
            FrameOptions::default(),
            FrameOptions {
                vlan_tags: vec![42],
                ..FrameOptions::default()
            },
            FrameOptions {
                vlan_tags: vec![1, 2, 3],
                ip_options: true,
                tcp_options: false,
            },
            FrameOptions {
                vlan_tags: vec![],
                ip_options: true,
                tcp_options: true,
            },
        ]
    }

    #[test]
    fn round_trips_every_format_link_type_and_header_variant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rt.cap");
        for format in all_formats() {
            let step = exact_step(format);
            for link in ALL_LINKS {
                for opts in frame_variants() {
                    for v6 in [false, true] {
                        let mut w = CaptureWriter::new(Vec::new(), format, link).unwrap();
                        let mut want = Vec::new();
                        let mut ts = BASE_NS + 7 * step;
                        for spec in script(v6) {
                            w.write_tcp_on(0, ts, &spec, &opts).unwrap();
                            want.push(expected(&spec, ts));
                            ts += step;
                        }
                        // One segment cut by a snaplen: 10 payload bytes missing.
                        let (c, s) = endpoints(v6);
                        let mut conn = SyntheticConnection::new(c, s);
                        let spec = conn.client_sends(&[b'T'; 100]);
                        let frame = spec.frame(link, &opts);
                        let orig = frame.len() as u32;
                        w.write_packet_on(0, ts, &frame[..frame.len() - 10], Some(orig))
                            .unwrap();
                        let mut cut = expected(&spec, ts);
                        cut.payload.truncate(90);
                        cut.missing_tail = 10;
                        want.push(cut);

                        std::fs::write(&path, w.finish().unwrap()).unwrap();
                        let (r, seen, stats) = read(&path, &fix_port());
                        let ctx = format!("{format:?} {link:?} {opts:?} v6={v6}");
                        r.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert_eq!(seen, want, "{ctx}");
                        let n = want.len() as u64;
                        assert_eq!(
                            stats,
                            CaptureStats {
                                packets: n,
                                tcp_segments: n,
                                segments_in_port_range: n,
                                truncated_segments: 1,
                                ..CaptureStats::default()
                            },
                            "{ctx}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sub_nanosecond_resolutions_give_exact_nanoseconds() {
        // Odd nanosecond values through resolutions finer than 1 ns, with and without an
        // if_tsoffset (10^-12 and 2^-40 overflow 64 bits without one).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fine.pcapng");
        for big_endian in [false, true] {
            let format = CaptureFormat::PcapNg {
                tsresol: 0x80 | 30,
                big_endian,
            };
            let mut w = CaptureWriter::new(Vec::new(), format, LinkType::RawIp).unwrap();
            let ifaces = [
                0,
                w.add_interface(LinkType::RawIp, 10).unwrap(),
                w.add_interface_with_offset(LinkType::RawIp, 12, 1_699_999_990)
                    .unwrap(),
                w.add_interface_with_offset(LinkType::RawIp, 0x80 | 40, 1_700_000_000)
                    .unwrap(),
                w.add_interface_with_offset(LinkType::RawIp, 0x80 | 60, 1_700_000_000)
                    .unwrap(),
                w.add_interface_with_offset(LinkType::RawIp, 9, -1_000)
                    .unwrap(),
                w.add_interface_with_offset(LinkType::RawIp, 18, 1_700_000_000)
                    .unwrap(),
            ];
            let specs = script(false);
            let mut want = Vec::new();
            let mut ts = BASE_NS + 123_456_789;
            for (i, spec) in specs.iter().enumerate() {
                let if_id = ifaces[i % ifaces.len()];
                w.write_tcp_on(if_id, ts, spec, &FrameOptions::default())
                    .unwrap();
                want.push(expected(spec, ts));
                ts += 999_999_937;
            }
            std::fs::write(&path, w.finish().unwrap()).unwrap();
            let (r, seen, stats) = read(&path, &fix_port());
            r.unwrap();
            assert_eq!(seen, want);
            assert_eq!(stats.packets, specs.len() as u64);
        }
    }

    #[test]
    fn timestamp_scaling_is_exact_integer_math() {
        let s = |r| TsScale::from_tsresol(r).unwrap();
        assert_eq!(
            s(6).to_ns(1_700_000_000_123_456, 0),
            Some(1_700_000_000_123_456_000)
        );
        assert_eq!(s(9).to_ns(u64::MAX, 0), Some(u64::MAX));
        assert_eq!(s(0).to_ns(3, 0), Some(3_000_000_000));
        assert_eq!(s(12).to_ns(1_999, 0), Some(1));
        // 2^-30: one unit is 0.931... ns; 2^30 units is exactly one second.
        assert_eq!(s(0x80 | 30).to_ns(1 << 30, 0), Some(NS_PER_SEC));
        assert_eq!(s(0x80 | 30).to_ns((1 << 30) + 1, 0), Some(NS_PER_SEC));
        assert_eq!(s(0x80 | 30).to_ns((1 << 30) + 2, 0), Some(NS_PER_SEC + 1));
        assert_eq!(s(0x80).to_ns(5, 0), Some(5 * NS_PER_SEC));
        assert_eq!(s(0x80 | 63).to_ns(1 << 63, 0), Some(NS_PER_SEC));
        // Offsets move the epoch; results outside u64 are refused, not wrapped.
        assert_eq!(s(9).to_ns(5, 1_000_000_000), Some(1_000_000_005));
        assert_eq!(s(9).to_ns(5, -6), None);
        assert_eq!(s(0).to_ns(u64::MAX, 0), None);
        assert!(TsScale::from_tsresol(20).is_none());
        assert!(TsScale::from_tsresol(0x80 | 64).is_none());
    }

    fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Hand-made little-endian pcapng block.
    fn ng_block(block_type: u32, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        let mut body = body.to_vec();
        while body.len() & 3 != 0 {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        b.extend_from_slice(&block_type.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&body);
        b.extend_from_slice(&len.to_le_bytes());
        b
    }

    fn epb_body(if_id: u32, units: u64, frame: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [
            if_id,
            (units >> 32) as u32,
            units as u32,
            frame.len() as u32,
            frame.len() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(frame);
        b
    }

    #[test]
    fn pcapng_interfaces_sections_simple_and_unknown_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let (c, s) = endpoints(false);
        let mut conn = SyntheticConnection::new(c, s);
        let mut want = Vec::new();
        let mut w = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::pcapng_nanos(),
            LinkType::Ethernet,
        )
        .unwrap();
        let sll2 = w.add_interface(LinkType::LinuxSll2, 6).unwrap();
        let raw = w
            .add_interface_with_offset(LinkType::RawIp, 9, 1_000)
            .unwrap();
        let mut ts = BASE_NS;
        for (i, spec) in conn.handshake().into_iter().enumerate() {
            let if_id = [0, sll2, raw][i];
            w.write_tcp_on(if_id, ts, &spec, &FrameOptions::default())
                .unwrap();
            want.push(expected(&spec, ts));
            ts += 1_000;
        }
        // Blocks we do not know are skipped.
        w.write_custom_block(0x0000_0BAD, b"mystery").unwrap();
        w.write_custom_block(0x8000_0001, &[]).unwrap();
        // A simple packet block has no timestamp: it takes the previous packet's.
        let spec = conn.client_sends(b"simple");
        w.write_simple_packet(&spec.frame(LinkType::Ethernet, &FrameOptions::default()))
            .unwrap();
        want.push(expected(&spec, ts - 1_000));
        // An interface with a link type we do not decode (802.11), and a packet on it.
        let mut idb = Vec::new();
        idb.extend_from_slice(&105u16.to_le_bytes());
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&0u32.to_le_bytes());
        let mut bytes = w.finish().unwrap();
        bytes.extend_from_slice(&ng_block(1, &idb));
        bytes.extend_from_slice(&ng_block(6, &epb_body(3, 0, &[0u8; 40])));
        // A packet on an interface nobody described.
        bytes.extend_from_slice(&ng_block(6, &epb_body(9, 0, &[0u8; 40])));

        // A second section, big-endian, whose interface 0 is Linux cooked v1 at 2^-30 s:
        // the first section's interfaces are gone.
        let mut w = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::PcapNg {
                tsresol: 0x80 | 30,
                big_endian: true,
            },
            LinkType::LinuxSll,
        )
        .unwrap();
        let spec = conn.server_sends(b"second section");
        w.write_tcp(ts, &spec).unwrap();
        want.push(expected(&spec, ts));
        let mut second = w.finish().unwrap();
        // An EPB for interface 2, which exists only in the first section. Big-endian.
        let mut epb = vec![0, 0, 0, 6, 0, 0, 0, 60, 0, 0, 0, 2];
        epb.extend_from_slice(&[0; 16]); // ts, caplen 0, origlen 0
        epb.resize(56, 0);
        epb.extend_from_slice(&60u32.to_be_bytes());
        second.extend_from_slice(&epb);
        bytes.extend_from_slice(&second);
        // And a third, little-endian section again.
        let mut w =
            CaptureWriter::new(Vec::new(), CaptureFormat::pcapng_nanos(), LinkType::Null).unwrap();
        let spec = conn.client_fin();
        w.write_tcp(ts + 5, &spec).unwrap();
        want.push(expected(&spec, ts + 5));
        bytes.extend_from_slice(&w.finish().unwrap());

        let path = write_file(dir.path(), "multi.pcapng", &bytes);
        let (r, seen, stats) = read(&path, &fix_port());
        r.unwrap();
        assert_eq!(seen, want);
        assert_eq!(
            stats,
            CaptureStats {
                packets: 9,
                tcp_segments: 6,
                segments_in_port_range: 6,
                unsupported_link_packets: 1,
                unknown_interface_packets: 2,
                ..CaptureStats::default()
            }
        );
    }

    #[test]
    fn counts_out_of_range_non_tcp_fragments_and_bad_headers() {
        let dir = tempfile::tempdir().unwrap();
        let (c, s) = endpoints(false);
        let mut conn = SyntheticConnection::new(c, s);
        let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)
            .unwrap();
        let plain = FrameOptions::default();
        let in_range = conn.client_sends(b"x");
        w.write_tcp(BASE_NS, &in_range).unwrap();
        // Another port.
        let mut other = in_range.clone();
        other.flow.dst.port = 80;
        w.write_tcp(BASE_NS, &other).unwrap();
        // ARP.
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        w.write_packet(BASE_NS, &arp).unwrap();
        // A fragment.
        let mut frag = in_range.frame(LinkType::Ethernet, &plain);
        frag[14 + 6] |= 0x20;
        w.write_packet(BASE_NS, &frag).unwrap();
        // Garbage: a frame cut inside the IP header, and one with a bad IHL.
        let f = in_range.frame(LinkType::Ethernet, &plain);
        w.write_packet_on(0, BASE_NS, &f[..20], Some(f.len() as u32))
            .unwrap();
        let mut bad = f.clone();
        bad[14] = 0x41;
        w.write_packet(BASE_NS, &bad).unwrap();
        w.write_packet(BASE_NS, &[]).unwrap();
        let path = write_file(dir.path(), "mixed.pcap", &w.finish().unwrap());
        let (r, seen, stats) = read(&path, &fix_port());
        r.unwrap();
        assert_eq!(seen, vec![expected(&in_range, BASE_NS)]);
        assert_eq!(
            stats,
            CaptureStats {
                packets: 7,
                tcp_segments: 2,
                segments_in_port_range: 1,
                not_tcp: 1,
                ip_fragments: 1,
                decode_errors: 3,
                ..CaptureStats::default()
            }
        );
    }

    /// A capture of `n` data packets, plus the file offset where the last record starts.
    fn capture(format: CaptureFormat, n: usize) -> (Vec<u8>, usize, Vec<Seen>) {
        let (c, s) = endpoints(false);
        let mut conn = SyntheticConnection::new(c, s);
        let mut w = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet).unwrap();
        let mut want = Vec::new();
        let mut last_start = 0;
        for i in 0..n {
            let spec = conn.client_sends(format!("packet {i:06} ").repeat(4).as_bytes());
            let ts = BASE_NS + i as u64 * 1_000;
            last_start = w.get_ref().len();
            w.write_tcp(ts, &spec).unwrap();
            want.push(expected(&spec, ts));
        }
        (w.finish().unwrap(), last_start, want)
    }

    #[test]
    fn file_cut_inside_the_last_record_is_read_up_to_it() {
        let dir = tempfile::tempdir().unwrap();
        for format in [CaptureFormat::pcap_micros(), CaptureFormat::pcapng_nanos()] {
            let (bytes, last, want) = capture(format, 5);
            for cut in last..bytes.len() {
                let path = write_file(dir.path(), "cut.cap", &bytes[..cut]);
                let (r, seen, stats) = read(&path, &fix_port());
                r.unwrap_or_else(|e| panic!("{format:?} cut at {cut}: {e}"));
                assert_eq!(seen, want[..4], "{format:?} cut at {cut}");
                assert_eq!(stats.truncated_file, cut != last, "{format:?} cut at {cut}");
                assert_eq!(stats.packets, 4);
            }
            let path = write_file(dir.path(), "whole.cap", &bytes);
            let (r, seen, stats) = read(&path, &fix_port());
            r.unwrap();
            assert_eq!(seen, want);
            assert!(!stats.truncated_file);
        }
    }

    #[test]
    fn streams_files_larger_than_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        for format in [CaptureFormat::pcap_nanos(), CaptureFormat::pcapng_nanos()] {
            let (c, s) = endpoints(true);
            let mut conn = SyntheticConnection::new(c, s);
            let mut w = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet).unwrap();
            let n = 25_000u64;
            for i in 0..n {
                let payload = vec![b'0' + (i % 10) as u8; 50 + (i % 150) as usize];
                w.write_tcp(BASE_NS + i, &conn.client_sends(&payload))
                    .unwrap();
            }
            let bytes = w.finish().unwrap();
            assert!(bytes.len() > 2 * BUFFER_SIZE);
            let path = write_file(dir.path(), "big.cap", &bytes);
            let mut stats = CaptureStats::default();
            let mut count = 0u64;
            let mut next_seq = None;
            read_capture(&path, &fix_port(), &mut stats, |s| {
                assert_eq!(s.ts_ns, BASE_NS + count);
                assert_eq!(s.payload.len(), 50 + (count % 150) as usize);
                if let Some(seq) = next_seq {
                    assert_eq!(s.seq, seq);
                }
                next_seq = Some(s.seq.wrapping_add(s.payload.len() as u32));
                count += 1;
            })
            .unwrap();
            assert_eq!(count, n);
            assert_eq!(stats.packets, n);
            assert!(!stats.truncated_file);
        }
    }

    #[test]
    fn records_larger_than_the_buffer_grow_it() {
        // A 3 MiB TSO super-packet (IPv4 total length 0) in a pcapng file.
        let dir = tempfile::tempdir().unwrap();
        let (c, s) = endpoints(false);
        let mut conn = SyntheticConnection::new(c, s);
        let mut w =
            CaptureWriter::new(Vec::new(), CaptureFormat::pcapng_nanos(), LinkType::RawIp).unwrap();
        let small = conn.client_sends(b"before");
        w.write_tcp(BASE_NS, &small).unwrap();
        let big = conn.client_sends(&vec![b'G'; 3 << 20]);
        w.write_tcp(BASE_NS + 1, &big).unwrap();
        let after = conn.client_sends(b"after");
        w.write_tcp(BASE_NS + 2, &after).unwrap();
        let path = write_file(dir.path(), "jumbo.pcapng", &w.finish().unwrap());
        let (r, seen, _) = read(&path, &fix_port());
        r.unwrap();
        assert_eq!(
            seen,
            vec![
                expected(&small, BASE_NS),
                expected(&big, BASE_NS + 1),
                expected(&after, BASE_NS + 2)
            ]
        );
    }

    #[test]
    fn corrupt_records_before_the_end_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        // Legacy pcap: the second record's captured length is absurd.
        let (mut bytes, _, _) = capture(CaptureFormat::pcap_micros(), 4);
        let first_len = 16 + u32::from_le_bytes(bytes[32..36].try_into().unwrap()) as usize;
        let second = 24 + first_len;
        bytes[second + 8..second + 12].copy_from_slice(&0x00FF_FFFFu32.to_le_bytes());
        let path = write_file(dir.path(), "bad-caplen.pcap", &bytes);
        let (r, seen, _) = read(&path, &fix_port());
        assert_eq!(seen.len(), 1);
        match r {
            Err(e @ CaptureError::Corrupt { offset, .. }) => {
                assert_eq!(offset, second as u64);
                assert!(e.to_string().contains("bad-caplen.pcap"), "{e}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }

        // pcapng: the second EPB's lengths are damaged in three ways.
        let (bytes, _, _) = capture(CaptureFormat::pcapng_nanos(), 4);
        // SHB (28) + IDB (20 + 8 for if_tsresol + 4 end) = 60.
        let shb_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
        let idb_len =
            u32::from_le_bytes(bytes[shb_len + 4..shb_len + 8].try_into().unwrap()) as usize;
        let first = shb_len + idb_len;
        let epb_len = u32::from_le_bytes(bytes[first + 4..first + 8].try_into().unwrap()) as usize;
        let second = first + epb_len;
        let damage: [(&str, usize, u32); 4] = [
            ("huge", second + 4, 0x4000_0000),
            ("tiny", second + 4, 13),
            ("trailer", second + epb_len - 4, 999),
            ("caplen", second + 20, 5000),
        ];
        for (name, at, value) in damage {
            let mut b = bytes.clone();
            b[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let path = write_file(dir.path(), &format!("{name}.pcapng"), &b);
            let (r, seen, _) = read(&path, &fix_port());
            assert_eq!(seen.len(), 1, "{name}");
            match r {
                Err(e @ CaptureError::Corrupt { offset, .. }) => {
                    assert_eq!(offset, second as u64, "{name}: {e}");
                    assert!(e.to_string().contains(&format!("{name}.pcapng")), "{e}");
                }
                other => panic!("{name}: expected Corrupt, got {other:?}"),
            }
        }
        // An unknown block shorter than a block header.
        let mut b = bytes[..second].to_vec();
        b.extend_from_slice(&[0xAD, 0x0B, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0]);
        b.extend_from_slice(&bytes[second..]);
        let path = write_file(dir.path(), "short-block.pcapng", &b);
        assert!(matches!(
            read(&path, &fix_port()).0,
            Err(CaptureError::Corrupt { .. })
        ));
    }

    #[test]
    fn rejects_files_that_are_not_captures() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("empty", &b""[..]),
            ("tiny", &b"\xd4\xc3"[..]),
            ("text", &b"8=FIX.4.4\x019=5\x0135=0\x0110=000\x01"[..]),
        ] {
            let path = write_file(dir.path(), name, bytes);
            match read(&path, &fix_port()).0 {
                Err(e @ CaptureError::NotACapture { .. }) => {
                    assert!(e.to_string().contains(name), "{e}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        // A pcap magic with a cut header; a pcapng magic with a cut section header.
        for (name, bytes) in [
            ("cut-header.pcap", &b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00"[..]),
            ("cut-shb.pcapng", &b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00"[..]),
        ] {
            let path = write_file(dir.path(), name, bytes);
            assert!(
                matches!(
                    read(&path, &fix_port()).0,
                    Err(CaptureError::Corrupt { offset: 0, .. })
                ),
                "{name}"
            );
        }
        // Missing file, and a directory (opens, then fails to read).
        let missing = dir.path().join("nope.pcap");
        assert!(matches!(
            read(&missing, &fix_port()).0,
            Err(CaptureError::Open { .. })
        ));
        assert!(matches!(
            read(dir.path(), &fix_port()).0,
            Err(CaptureError::Read { .. })
        ));
    }

    #[test]
    fn legacy_pcap_with_unsupported_link_type_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Vec::new();
        f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        f.extend_from_slice(&2u16.to_le_bytes());
        f.extend_from_slice(&4u16.to_le_bytes());
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&65535u32.to_le_bytes());
        f.extend_from_slice(&105u32.to_le_bytes());
        let path = write_file(dir.path(), "wifi.pcap", &f);
        assert!(matches!(
            read(&path, &fix_port()).0,
            Err(CaptureError::UnsupportedLinkType { linktype: 105, .. })
        ));
    }

    #[test]
    fn reads_from_a_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, _, want) = capture(CaptureFormat::pcapng_nanos(), 20);
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !matches!(status, Ok(s) if s.success()) {
            eprintln!("mkfifo unavailable; skipping");
            return;
        }
        let writer_path = fifo.clone();
        let t = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(writer_path)
                .unwrap();
            // Dribble the bytes so reads come back short.
            for chunk in bytes.chunks(7) {
                f.write_all(chunk).unwrap();
            }
        });
        let (r, seen, _) = read(&fifo, &fix_port());
        t.join().unwrap();
        r.unwrap();
        assert_eq!(seen, want);
    }

    #[test]
    fn header_only_captures_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        for format in [CaptureFormat::pcap_micros(), CaptureFormat::pcapng_nanos()] {
            let bytes = CaptureWriter::new(Vec::new(), format, LinkType::Ethernet)
                .unwrap()
                .finish()
                .unwrap();
            let path = write_file(dir.path(), "empty.cap", &bytes);
            let (r, seen, stats) = read(&path, &fix_port());
            r.unwrap();
            assert!(seen.is_empty());
            assert_eq!(stats, CaptureStats::default());
        }
    }

    /// The public nDPI captures vendored in the repository (testdata/captures/ndpi).
    fn ndpi(name: &str) -> PathBuf {
        fixscope_testkit::test_data(&format!("captures/ndpi/{name}"))
    }

    #[test]
    fn reads_ndpi_fix_capture() {
        let path = ndpi("ndpi_fix.pcap");
        let (r, seen, stats) = read(&path, &"4000".parse().unwrap());
        r.unwrap();
        // Figures from tshark: 1261 TCP packets, all on port 4000, 37586 payload bytes.
        assert_eq!(
            stats,
            CaptureStats {
                packets: 1261,
                tcp_segments: 1261,
                segments_in_port_range: 1261,
                ..CaptureStats::default()
            }
        );
        let bytes: usize = seen.iter().map(|s| s.payload.len()).sum();
        assert_eq!(bytes, 37586);
        let first = &seen[0];
        assert_eq!(first.ts_ns, 1_493_755_109_242_949_000);
        assert_eq!(first.flow.src.to_string(), "8.17.22.31:4000");
        assert_eq!(first.direction, Direction::Response);
        assert_eq!(first.seq, 929_923_212);
        assert_eq!(first.payload.len(), 86);
        assert!(seen.iter().all(|s| s.missing_tail == 0));
    }

    #[test]
    fn reads_ndpi_fix2_capture() {
        let path = ndpi("ndpi_fix2.pcap");
        let (r, seen, stats) = read(&path, &"1024".parse().unwrap());
        r.unwrap();
        // tshark: 3049 packets, 3 ARP, 3046 TCP to/from port 1024, 67956 payload bytes.
        assert_eq!(
            stats,
            CaptureStats {
                packets: 3049,
                tcp_segments: 3046,
                segments_in_port_range: 3046,
                not_tcp: 3,
                ..CaptureStats::default()
            }
        );
        assert_eq!(seen.iter().map(|s| s.payload.len()).sum::<usize>(), 67956);
        let (r, _, stats) = read(&path, &"4000".parse().unwrap());
        r.unwrap();
        assert_eq!(stats.segments_in_port_range, 0);
    }
}
