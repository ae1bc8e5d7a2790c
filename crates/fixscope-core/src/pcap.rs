//! Reading pcap and pcapng capture files into [`Segment`]s.
//!
//! Files are streamed through `pcap-parser`'s circular-buffer readers, so memory stays
//! constant however large the capture. Timestamps become nanoseconds since the epoch with
//! integer arithmetic only. Enhanced Packet Blocks (nearly every packet of a pcapng file) are
//! parsed here straight from the reader's buffer rather than by `pcap-parser`, whose EPB
//! parser allocates a `Vec` for the options of every packet.
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
/// A record claiming more than this is a corrupt length field, not a packet.
const MAX_RECORD: usize = 64 << 20;
/// libpcap's largest snaplen; legacy records may be this long whatever the header says.
const MAX_LEGACY_CAPLEN: u32 = 262_144;
const NS_PER_SEC: u64 = 1_000_000_000;

const SHB_MAGIC: u32 = 0x0A0D_0D0A;
const EPB_TYPE: u32 = 6;
const BOM: u32 = 0x1A2B_3C4D;

/// Reads one pcap or pcapng file, decodes every packet, classifies TCP segments with
/// `ports.classify(src_port, dst_port)` and calls `on_segment` for those in range, in file
/// order.
pub fn read_capture(
    path: &Path,
    ports: &PortSet,
    stats: &mut CaptureStats,
    on_segment: impl FnMut(&Segment<'_>),
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
    let mut source = Source {
        inner: io::Cursor::new(magic).chain(file),
        error: None,
    };
    let mut sink = Sink {
        ports,
        stats,
        on_segment,
    };
    let result = match kind {
        Kind::Pcap => read_pcap(&mut source, &mut sink),
        Kind::PcapNg => read_pcapng(&mut source, &mut sink),
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
}

impl<F: FnMut(&Segment<'_>)> Sink<'_, F> {
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
                (self.on_segment)(&Segment {
                    ts_ns,
                    flow: t.flow,
                    direction,
                    seq: t.seq,
                    flags: t.flags,
                    payload: t.payload,
                    missing_tail: t.missing_tail,
                });
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
    sink: &mut Sink<'_, impl FnMut(&Segment<'_>)>,
) -> Result<(), Failure> {
    let mut reader = LegacyPcapReader::new(BUFFER_SIZE, source).map_err(|e| match e {
        PcapError::ReadError => Failure::Read,
        PcapError::Incomplete(_) | PcapError::Eof => corrupt(0, "file header cut short"),
        e => corrupt(0, format!("bad file header ({e})")),
    })?;
    let mut capacity = BUFFER_SIZE;
    let mut link = LinkType::Ethernet;
    let mut frac_ns: u64 = 1000;
    let mut big_endian = false;
    let mut record_header = 16;
    let mut max_caplen = 0u32;
    loop {
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
        sink: &mut Sink<'_, impl FnMut(&Segment<'_>)>,
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

/// A complete EPB at the start of `d`, parsed without allocating.
struct Epb<'a> {
    len: usize,
    if_id: u32,
    units: u64,
    data: &'a [u8],
}

/// Ok(None) when `d` does not start with a complete EPB (let pcap-parser handle it).
fn fast_epb(d: &[u8], big_endian: bool) -> Result<Option<Epb<'_>>, String> {
    let (Some(block_type), Some(len)) = (read_u32(d, 0, big_endian), read_u32(d, 4, big_endian))
    else {
        return Ok(None);
    };
    let len = len as usize;
    if block_type != EPB_TYPE || d.len() < len {
        return Ok(None);
    }
    if len < 32 || len % 4 != 0 {
        return Err(format!("enhanced packet block length {len} is invalid"));
    }
    let field = |at| read_u32(d, at, big_endian).unwrap_or(0);
    if field(len - 4) as usize != len {
        return Err("enhanced packet block's trailing length differs from its leading one".into());
    }
    let caplen = field(20) as usize;
    if caplen > len - 32 {
        return Err(format!(
            "enhanced packet block of {len} bytes claims {caplen} captured bytes"
        ));
    }
    Ok(Some(Epb {
        len,
        if_id: field(8),
        units: (u64::from(field(12)) << 32) | u64::from(field(16)),
        data: &d[28..28 + caplen],
    }))
}

fn read_pcapng<R: Read>(
    source: R,
    sink: &mut Sink<'_, impl FnMut(&Segment<'_>)>,
) -> Result<(), Failure> {
    let mut reader = PcapNGReader::new(BUFFER_SIZE, source).map_err(|e| match e {
        PcapError::ReadError => Failure::Read,
        PcapError::Incomplete(_) | PcapError::Eof => corrupt(0, "section header cut short"),
        e => corrupt(0, format!("bad section header ({e})")),
    })?;
    let mut capacity = BUFFER_SIZE;
    let mut st = NgState {
        big_endian: false,
        interfaces: Vec::new(),
        last_ts_ns: 0,
    };
    loop {
        let offset = reader.consumed();
        // Fast path: the common complete EPB, straight from the buffer.
        match fast_epb(reader.data(), st.big_endian) {
            Ok(Some(epb)) => {
                if let Some(ts) = st.packet(sink, epb.if_id, Some(epb.units), epb.data) {
                    st.last_ts_ns = ts;
                }
                let len = epb.len;
                reader.consume(len);
                continue;
            }
            Ok(None) => {}
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
                        // Normally taken by the fast path; kept for completeness.
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
