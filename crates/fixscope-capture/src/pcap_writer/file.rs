//! The capture file writer: legacy pcap (µs or ns, either byte order) and pcapng
//! (sections, interfaces with their own link type, `if_tsresol` and `if_tsoffset`,
//! enhanced/simple/custom blocks).
//!
//! Timestamps are nanoseconds since the epoch. A format coarser than 1 ns truncates them
//! (microsecond pcap keeps whole microseconds); a format finer than 1 ns (pcapng
//! `if_tsresol` 10^-12, 2^-30, ...) rounds up so that reading the file back gives the exact
//! nanosecond written.

use std::io::{self, Write};

use super::packet::{FrameOptions, TcpPacketSpec};
use crate::decode::LinkType;

/// Which file format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Legacy pcap; `nanos` selects the nanosecond magic (`a1b23c4d`) over microseconds.
    Pcap { nanos: bool, big_endian: bool },
    /// pcapng; `tsresol` is the raw `if_tsresol` byte of the first interface (6 = µs, the
    /// default, 9 = ns, `0x80 | n` = 2^-n seconds).
    PcapNg { tsresol: u8, big_endian: bool },
}

impl CaptureFormat {
    /// Little-endian pcap with microsecond timestamps (what `tcpdump -w` writes).
    pub fn pcap_micros() -> Self {
        CaptureFormat::Pcap {
            nanos: false,
            big_endian: false,
        }
    }
    /// Little-endian pcap with nanosecond timestamps.
    pub fn pcap_nanos() -> Self {
        CaptureFormat::Pcap {
            nanos: true,
            big_endian: false,
        }
    }
    /// Little-endian pcapng with nanosecond timestamps.
    pub fn pcapng_nanos() -> Self {
        CaptureFormat::PcapNg {
            tsresol: 9,
            big_endian: false,
        }
    }
}

const NS_PER_SEC: u64 = 1_000_000_000;
const SNAPLEN: u32 = 262_144;

/// How one pcapng interface encodes timestamps.
#[derive(Clone, Copy, Debug)]
struct Interface {
    link: LinkType,
    tsresol: u8,
    tsoffset_secs: i64,
}

/// Writes a pcap or pcapng capture to any `Write`.
///
/// Errors are `io::Error`s: the sink's own, or `InvalidInput` for requests the format
/// cannot express (a second interface in legacy pcap, an unrepresentable timestamp, ...).
pub struct CaptureWriter<W: Write> {
    out: W,
    format: CaptureFormat,
    /// pcapng: the current section's interfaces; legacy pcap: the file's one link type.
    interfaces: Vec<Interface>,
    buf: Vec<u8>,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a capture: writes the pcap file header, or for pcapng a section header and
    /// interface 0 with the given link type and the format's `tsresol`.
    pub fn new(out: W, format: CaptureFormat, link: LinkType) -> io::Result<Self> {
        let mut w = CaptureWriter {
            out,
            format,
            interfaces: Vec::new(),
            buf: Vec::with_capacity(2048),
        };
        match format {
            CaptureFormat::Pcap { nanos, .. } => {
                let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
                w.buf.clear();
                w.put32(magic);
                w.put16(2);
                w.put16(4);
                w.put32(0); // thiszone
                w.put32(0); // sigfigs
                w.put32(SNAPLEN);
                w.put32(link.linktype());
                w.flush_buf()?;
                w.interfaces.push(Interface {
                    link,
                    tsresol: 6,
                    tsoffset_secs: 0,
                });
            }
            CaptureFormat::PcapNg { tsresol, .. } => {
                w.write_section_header()?;
                w.add_interface(link, tsresol)?;
            }
        }
        Ok(w)
    }

    /// pcapng only: adds an interface and returns its id (for [`Self::write_packet_on`]).
    pub fn add_interface(&mut self, link: LinkType, tsresol: u8) -> io::Result<u32> {
        self.add_interface_with_offset(link, tsresol, 0)
    }

    /// pcapng only: adds an interface whose timestamps are relative to `tsoffset_secs`
    /// (the `if_tsoffset` option) and returns its id.
    pub fn add_interface_with_offset(
        &mut self,
        link: LinkType,
        tsresol: u8,
        tsoffset_secs: i64,
    ) -> io::Result<u32> {
        if !matches!(self.format, CaptureFormat::PcapNg { .. }) {
            return Err(invalid("legacy pcap has exactly one interface"));
        }
        let link_code = u16::try_from(link.linktype())
            .map_err(|_| invalid("link type does not fit a pcapng IDB"))?;
        let mut opts: Vec<(u16, Vec<u8>)> = Vec::new();
        // if_tsresol defaults to 6 (µs); leave it out then so readers exercise the default.
        if tsresol != 6 {
            opts.push((9, vec![tsresol]));
        }
        if tsoffset_secs != 0 {
            opts.push((14, self.bytes64(tsoffset_secs as u64).to_vec()));
        }
        self.buf.clear();
        self.put32(1); // IDB
        let len_at = self.buf.len();
        self.put32(0);
        self.put16(link_code);
        self.put16(0);
        self.put32(SNAPLEN);
        self.put_options(&opts);
        self.finish_block(len_at);
        self.flush_buf()?;
        self.interfaces.push(Interface {
            link,
            tsresol,
            tsoffset_secs,
        });
        u32::try_from(self.interfaces.len() - 1).map_err(|_| invalid("too many interfaces"))
    }

    /// pcapng only: starts a new section (which forgets all interfaces) whose interface 0
    /// has the given link type and resolution.
    pub fn start_section(&mut self, link: LinkType, tsresol: u8) -> io::Result<()> {
        if !matches!(self.format, CaptureFormat::PcapNg { .. }) {
            return Err(invalid("legacy pcap has a single section"));
        }
        self.interfaces.clear();
        self.write_section_header()?;
        self.add_interface(link, tsresol)?;
        Ok(())
    }

    /// Writes a complete frame on interface 0.
    pub fn write_packet(&mut self, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        self.write_packet_on(0, ts_ns, frame, None)
    }

    /// Writes a frame on an interface (always 0 for legacy pcap). `orig_len` is the length
    /// on the wire; a value above `frame.len()` records the frame as cut by a snaplen.
    pub fn write_packet_on(
        &mut self,
        if_id: u32,
        ts_ns: u64,
        frame: &[u8],
        orig_len: Option<u32>,
    ) -> io::Result<()> {
        let caplen = u32::try_from(frame.len()).map_err(|_| invalid("frame too large"))?;
        let orig_len = orig_len.unwrap_or(caplen).max(caplen);
        self.buf.clear();
        match self.format {
            CaptureFormat::Pcap { nanos, .. } => {
                if if_id != 0 {
                    return Err(invalid("legacy pcap has only interface 0"));
                }
                let secs = u32::try_from(ts_ns / NS_PER_SEC)
                    .map_err(|_| invalid("timestamp beyond 2106 does not fit legacy pcap"))?;
                let sub = ts_ns % NS_PER_SEC;
                let frac = if nanos { sub } else { sub / 1000 };
                self.put32(secs);
                self.put32(frac as u32);
                self.put32(caplen);
                self.put32(orig_len);
                self.buf.extend_from_slice(frame);
            }
            CaptureFormat::PcapNg { .. } => {
                let iface = *self
                    .interfaces
                    .get(if_id as usize)
                    .ok_or_else(|| invalid(format!("no interface {if_id} in this section")))?;
                let units = ns_to_units(ts_ns, iface)?;
                self.put32(6); // EPB
                let len_at = self.buf.len();
                self.put32(0);
                self.put32(if_id);
                self.put32((units >> 32) as u32);
                self.put32(units as u32);
                self.put32(caplen);
                self.put32(orig_len);
                self.buf.extend_from_slice(frame);
                self.pad4();
                self.finish_block(len_at);
            }
        }
        self.flush_buf()
    }

    /// pcapng only: writes a Simple Packet Block (interface 0, no timestamp: readers use
    /// the previous packet's).
    pub fn write_simple_packet(&mut self, frame: &[u8]) -> io::Result<()> {
        if !matches!(self.format, CaptureFormat::PcapNg { .. }) {
            return Err(invalid("simple packet blocks are pcapng only"));
        }
        let len = u32::try_from(frame.len()).map_err(|_| invalid("frame too large"))?;
        self.buf.clear();
        self.put32(3); // SPB
        let len_at = self.buf.len();
        self.put32(0);
        self.put32(len);
        self.buf.extend_from_slice(frame);
        self.pad4();
        self.finish_block(len_at);
        self.flush_buf()
    }

    /// pcapng only: writes a block of an arbitrary type (its body is padded to 4 bytes),
    /// e.g. to check that readers skip blocks they do not know.
    pub fn write_custom_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        if !matches!(self.format, CaptureFormat::PcapNg { .. }) {
            return Err(invalid("blocks are pcapng only"));
        }
        self.buf.clear();
        self.put32(block_type);
        let len_at = self.buf.len();
        self.put32(0);
        self.buf.extend_from_slice(body);
        self.pad4();
        self.finish_block(len_at);
        self.flush_buf()
    }

    /// Builds `spec` for interface 0's link type with plain headers and writes it.
    pub fn write_tcp(&mut self, ts_ns: u64, spec: &TcpPacketSpec) -> io::Result<()> {
        self.write_tcp_on(0, ts_ns, spec, &FrameOptions::default())
    }

    /// Builds `spec` for the interface's link type with `opts` and writes it.
    pub fn write_tcp_on(
        &mut self,
        if_id: u32,
        ts_ns: u64,
        spec: &TcpPacketSpec,
        opts: &FrameOptions,
    ) -> io::Result<()> {
        let link = self.link_of(if_id)?;
        let frame = spec.frame(link, opts);
        self.write_packet_on(if_id, ts_ns, &frame, None)
    }

    /// The sink, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// The sink, e.g. to see how many bytes a `Vec` sink holds so far.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The sink, as is.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn link_of(&self, if_id: u32) -> io::Result<LinkType> {
        self.interfaces
            .get(if_id as usize)
            .map(|i| i.link)
            .ok_or_else(|| invalid(format!("no interface {if_id}")))
    }

    fn big_endian(&self) -> bool {
        match self.format {
            CaptureFormat::Pcap { big_endian, .. } | CaptureFormat::PcapNg { big_endian, .. } => {
                big_endian
            }
        }
    }

    fn write_section_header(&mut self) -> io::Result<()> {
        self.buf.clear();
        self.put32(0x0A0D_0D0A);
        let len_at = self.buf.len();
        self.put32(0);
        self.put32(0x1A2B_3C4D);
        self.put16(1);
        self.put16(0);
        let unknown = self.bytes64(u64::MAX); // section length: unspecified
        self.buf.extend_from_slice(&unknown);
        self.finish_block(len_at);
        self.flush_buf()
    }

    fn put16(&mut self, v: u16) {
        let b = if self.big_endian() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }

    fn put32(&mut self, v: u32) {
        let b = if self.big_endian() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }

    fn bytes64(&self, v: u64) -> [u8; 8] {
        if self.big_endian() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn pad4(&mut self) {
        while self.buf.len() & 3 != 0 {
            self.buf.push(0);
        }
    }

    fn put_options(&mut self, opts: &[(u16, Vec<u8>)]) {
        if opts.is_empty() {
            return;
        }
        for (code, value) in opts {
            self.put16(*code);
            self.put16(value.len() as u16);
            self.buf.extend_from_slice(value);
            self.pad4();
        }
        self.put16(0); // opt_endofopt
        self.put16(0);
    }

    /// Appends the trailing block length and patches the leading one at `len_at`.
    fn finish_block(&mut self, len_at: usize) {
        let total = (self.buf.len() + 4) as u32;
        self.put32(total);
        let b = if self.big_endian() {
            total.to_be_bytes()
        } else {
            total.to_le_bytes()
        };
        self.buf[len_at..len_at + 4].copy_from_slice(&b);
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)
    }
}

/// Converts nanoseconds to an interface's timestamp units: truncating when the unit is
/// coarser than 1 ns, rounding up when finer (so the reader's floor gives `ts_ns` back).
fn ns_to_units(ts_ns: u64, iface: Interface) -> io::Result<u64> {
    let offset_ns = i128::from(iface.tsoffset_secs) * i128::from(NS_PER_SEC);
    let rel = i128::from(ts_ns) - offset_ns;
    let rel = u128::try_from(rel).map_err(|_| invalid("timestamp before the if_tsoffset"))?;
    let r = iface.tsresol;
    let units: u128 = if r & 0x80 == 0 {
        match u32::from(r) {
            e @ 0..=9 => rel / 10u128.pow(9 - e),
            e @ 10..=19 => rel * 10u128.pow(e - 9),
            _ => return Err(invalid("if_tsresol above 10^-19")),
        }
    } else {
        let e = u32::from(r & 0x7F);
        if e > 63 {
            return Err(invalid("if_tsresol above 2^-63"));
        }
        let scaled = rel << e;
        let ns = u128::from(NS_PER_SEC);
        if (1u128 << e) > ns {
            scaled.div_ceil(ns)
        } else {
            scaled / ns
        }
    };
    u64::try_from(units).map_err(|_| invalid("timestamp does not fit 64 bits at this resolution"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_truncate_when_coarse_and_round_up_when_fine() {
        let iface = |tsresol, tsoffset_secs| Interface {
            link: LinkType::Ethernet,
            tsresol,
            tsoffset_secs,
        };
        assert_eq!(ns_to_units(1_999, iface(6, 0)).unwrap(), 1);
        assert_eq!(ns_to_units(1_999, iface(9, 0)).unwrap(), 1_999);
        assert_eq!(ns_to_units(7, iface(12, 0)).unwrap(), 7_000);
        // 2^-30 s units are finer than 1 ns: round up.
        assert_eq!(ns_to_units(1, iface(0x80 | 30, 0)).unwrap(), 2);
        assert_eq!(
            ns_to_units(NS_PER_SEC, iface(0x80 | 30, 0)).unwrap(),
            1 << 30
        );
        // 2^-10 s units are coarser: truncate.
        assert_eq!(ns_to_units(1_953_124, iface(0x80 | 10, 0)).unwrap(), 1);
        assert_eq!(ns_to_units(5 * NS_PER_SEC + 3, iface(9, 5)).unwrap(), 3);
        assert!(ns_to_units(NS_PER_SEC, iface(9, 5)).is_err());
        assert!(ns_to_units(u64::MAX, iface(12, 0)).is_err());
        assert!(ns_to_units(1, iface(20, 0)).is_err());
    }

    #[test]
    fn rejects_what_a_format_cannot_express() {
        let mut w =
            CaptureWriter::new(Vec::new(), CaptureFormat::pcap_micros(), LinkType::Ethernet)
                .unwrap();
        assert!(w.add_interface(LinkType::RawIp, 9).is_err());
        assert!(w.start_section(LinkType::RawIp, 9).is_err());
        assert!(w.write_simple_packet(&[0; 60]).is_err());
        assert!(w.write_packet_on(1, 0, &[0; 60], None).is_err());
        assert!(w.write_packet(u64::MAX, &[0; 60]).is_err());
        let mut w = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::pcapng_nanos(),
            LinkType::Ethernet,
        )
        .unwrap();
        assert!(w.write_packet_on(1, 0, &[0; 60], None).is_err());
        assert_eq!(w.add_interface(LinkType::RawIp, 6).unwrap(), 1);
        assert!(w.write_packet_on(1, 0, &[0; 60], None).is_ok());
        w.start_section(LinkType::Null, 9).unwrap();
        assert!(w.write_packet_on(1, 0, &[0; 60], None).is_err());
    }

    #[test]
    fn layouts_match_the_file_formats() {
        let bytes = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::Pcap {
                nanos: true,
                big_endian: true,
            },
            LinkType::LinuxSll2,
        )
        .unwrap()
        .finish()
        .unwrap();
        assert_eq!(&bytes[..4], &[0xa1, 0xb2, 0x3c, 0x4d]);
        assert_eq!(&bytes[20..24], &276u32.to_be_bytes());
        let bytes = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_micros(), LinkType::RawIp)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(bytes.len(), 24);
        let mut w = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::PcapNg {
                tsresol: 6,
                big_endian: false,
            },
            LinkType::Ethernet,
        )
        .unwrap();
        // SHB 28 bytes + IDB 20 bytes (default resolution: no options).
        assert_eq!(w.get_ref().len(), 48);
        w.write_packet(0, &[0xAB; 5]).unwrap();
        let bytes = w.into_inner();
        // EPB: 28-byte header, 5 bytes padded to 8, 4-byte trailer.
        assert_eq!(bytes.len(), 48 + 40);
        assert_eq!(&bytes[48..52], &6u32.to_le_bytes());
        assert_eq!(&bytes[52..56], &40u32.to_le_bytes());
        assert_eq!(&bytes[84..88], &40u32.to_le_bytes());
    }
}
