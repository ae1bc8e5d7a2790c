//! pcapng: sections (each with its byte order), the interfaces they describe (link type,
//! timestamp unit and offset, snaplen) and the packets on them. Enhanced Packet Blocks
//! (nearly every packet) and blocks we have no use for are read straight from the buffer;
//! section and interface headers and simple packets go through pcap-parser.

use std::io::Read;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{
    Block, EnhancedPacketBlock, OptionCode, PcapBlockOwned, PcapError, PcapNGReader,
};

use super::input::{corrupt, next_after_error, read_u32, recover, Failure};
use super::timestamp::TsScale;
use super::{FrameSink, NS_PER_SEC};
use crate::decode::LinkType;

pub(super) const SHB_MAGIC: u32 = 0x0A0D_0D0A;
const EPB_TYPE: u32 = 6;
const BOM: u32 = 0x1A2B_3C4D;

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
    /// One packet block: its frame goes to the classifier (which counts the packet), or
    /// it is counted here as a packet we cannot place. Returns its timestamp.
    #[inline]
    fn packet(
        &self,
        sink: &mut impl FrameSink,
        if_id: u32,
        units: Option<u64>,
        data: &[u8],
    ) -> Option<u64> {
        let Some(iface) = self.interfaces.get(if_id as usize) else {
            sink.stats().packets += 1;
            sink.stats().unknown_interface_packets += 1;
            return None;
        };
        let Some(link) = iface.link else {
            sink.stats().packets += 1;
            sink.stats().unsupported_link_packets += 1;
            return None;
        };
        let ts_ns = match units {
            Some(units) => match iface.scale.to_ns(units, iface.offset_ns) {
                Some(ts) => ts,
                None => {
                    sink.stats().packets += 1;
                    sink.stats().bad_timestamps += 1;
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

pub(super) fn read_pcapng<R: Read>(
    source: R,
    mut capacity: usize,
    sink: &mut impl FrameSink,
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
        if sink.stopped() {
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
            Err(e) => next_after_error(e, offset),
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
        if !recover(&mut reader, next, declared, &mut capacity, sink.stats())? {
            return Ok(());
        }
    }
}

/// The first packet's timestamp of a pcapng file, block by block as pcap-parser hands
/// them ([`super::first_timestamp`]: the order of several files).
#[derive(Default)]
pub(super) struct FirstPacket {
    big_endian: bool,
    interfaces: Vec<Option<Interface>>,
}

impl FirstPacket {
    /// The block's time, link type and bytes when it is a packet with a time.
    pub(super) fn packet<'a>(
        &mut self,
        block: &Block<'a>,
    ) -> Option<(u64, Option<LinkType>, &'a [u8])> {
        let ts = self.block(block)?;
        match block {
            Block::EnhancedPacket(epb) => {
                let iface = self.interfaces.get(epb.if_id as usize)?.as_ref()?;
                Some((ts, iface.link, epb_data(epb)))
            }
            _ => None,
        }
    }

    /// The block's timestamp when it is a packet with one.
    pub(super) fn block(&mut self, block: &Block<'_>) -> Option<u64> {
        match block {
            Block::SectionHeader(shb) => {
                self.big_endian = shb.big_endian();
                self.interfaces.clear();
                None
            }
            Block::InterfaceDescription(idb) => {
                self.interfaces
                    .push(interface(idb, self.big_endian, 0).ok());
                None
            }
            Block::EnhancedPacket(epb) => {
                let iface = self.interfaces.get(epb.if_id as usize)?.as_ref()?;
                let units = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                iface.scale.to_ns(units, iface.offset_ns)
            }
            _ => None,
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
