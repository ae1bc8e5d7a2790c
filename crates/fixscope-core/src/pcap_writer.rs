//! A small pcap/pcapng writer and TCP frame builder, for tests and demo captures.
//!
//! ```
//! use fixscope_core::decode::LinkType;
//! use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
//! use fixscope_core::Endpoint;
//!
//! let client = Endpoint { addr: "10.0.0.1".parse().unwrap(), port: 40000 };
//! let server = Endpoint { addr: "10.0.0.2".parse().unwrap(), port: 9878 };
//! let mut conn = SyntheticConnection::new(client, server);
//! let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)?;
//! let mut ts = 1_700_000_000_000_000_000u64;
//! for spec in conn.handshake() {
//!     w.write_tcp(ts, &spec)?;
//!     ts += 1_000;
//! }
//! w.write_tcp(ts, &conn.client_sends(b"8=FIX.4.4\x019=5\x0135=0\x0110=000\x01"))?;
//! let bytes: Vec<u8> = w.finish()?;
//! # assert!(!bytes.is_empty());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Timestamps are nanoseconds since the epoch. A format coarser than 1 ns truncates them
//! (microsecond pcap keeps whole microseconds); a format finer than 1 ns (pcapng
//! `if_tsresol` 10^-12, 2^-30, ...) rounds up so that reading the file back gives the exact
//! nanosecond written.

use std::io::{self, Write};
use std::net::IpAddr;

use crate::decode::LinkType;
use crate::segment::{Endpoint, FlowKey, TcpFlags};

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

/// Extra header features to put into a built frame. `Default` is plain headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameOptions {
    /// VLAN tag TCIs, outermost first. The innermost tag uses TPID 0x8100, the outermost
    /// of several 0x88a8, any in between 0x9100. Ignored for raw IP and BSD loopback.
    pub vlan_tags: Vec<u16>,
    /// IPv4: 8 bytes of options (IHL 7). IPv6: hop-by-hop, routing and destination-options
    /// extension headers.
    pub ip_options: bool,
    /// 12 bytes of TCP options (NOP, NOP, timestamps): data offset 8.
    pub tcp_options: bool,
}

/// One TCP packet to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpPacketSpec {
    pub flow: FlowKey,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub payload: Vec<u8>,
}

impl TcpPacketSpec {
    /// Encodes the packet for a link type, with correct IPv4 header and TCP checksums.
    /// IPv4 or IPv6 follows the flow's addresses (a mixed flow is encoded as IPv6, with the
    /// IPv4 address mapped). Ethernet frames are padded to the 60-byte minimum.
    pub fn frame(&self, link: LinkType, opts: &FrameOptions) -> Vec<u8> {
        let ip = self.ip_packet(opts);
        let v6 = ip[0] >> 4 == 6;
        let ethertype: u16 = if v6 { 0x86DD } else { 0x0800 };
        let mut f = Vec::with_capacity(ip.len() + 64);
        match link {
            LinkType::Ethernet => {
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02]); // dst MAC
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01]); // src MAC
                push_vlans(&mut f, &opts.vlan_tags, ethertype);
                f.extend_from_slice(&ip);
                if f.len() < 60 {
                    f.resize(60, 0);
                }
            }
            LinkType::LinuxSll => {
                f.extend_from_slice(&0u16.to_be_bytes()); // packet type: to us
                f.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
                f.extend_from_slice(&6u16.to_be_bytes()); // address length
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0, 0]);
                push_vlans(&mut f, &opts.vlan_tags, ethertype);
                f.extend_from_slice(&ip);
            }
            LinkType::LinuxSll2 => {
                let (first, rest) = vlan_split(&opts.vlan_tags, ethertype);
                f.extend_from_slice(&first.to_be_bytes()); // protocol
                f.extend_from_slice(&[0, 0]); // reserved
                f.extend_from_slice(&2u32.to_be_bytes()); // ifindex
                f.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
                f.push(0); // packet type
                f.push(6); // address length
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0, 0]);
                f.extend_from_slice(&rest);
                f.extend_from_slice(&ip);
            }
            LinkType::RawIp => f.extend_from_slice(&ip),
            LinkType::Null => {
                let family: u32 = if v6 { 24 } else { 2 };
                f.extend_from_slice(&family.to_le_bytes());
                f.extend_from_slice(&ip);
            }
        }
        f
    }

    fn ip_packet(&self, opts: &FrameOptions) -> Vec<u8> {
        let mut tcp = Vec::with_capacity(32 + self.payload.len());
        tcp.extend_from_slice(&self.flow.src.port.to_be_bytes());
        tcp.extend_from_slice(&self.flow.dst.port.to_be_bytes());
        tcp.extend_from_slice(&self.seq.to_be_bytes());
        tcp.extend_from_slice(&self.ack.to_be_bytes());
        let offset_words: u8 = if opts.tcp_options { 8 } else { 5 };
        tcp.push(offset_words << 4);
        tcp.push(self.flags.0);
        tcp.extend_from_slice(&65535u16.to_be_bytes()); // window
        tcp.extend_from_slice(&[0, 0]); // checksum, below
        tcp.extend_from_slice(&[0, 0]); // urgent pointer
        if opts.tcp_options {
            tcp.extend_from_slice(&[1, 1, 8, 10]);
            tcp.extend_from_slice(&0x0102_0304u32.to_be_bytes());
            tcp.extend_from_slice(&0x0506_0708u32.to_be_bytes());
        }
        tcp.extend_from_slice(&self.payload);

        match (self.flow.src.addr, self.flow.dst.addr) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let (s, d) = (s.octets(), d.octets());
                let mut pseudo = Vec::with_capacity(12);
                pseudo.extend_from_slice(&s);
                pseudo.extend_from_slice(&d);
                pseudo.extend_from_slice(&[0, 6]);
                pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
                let sum = checksum(&[&pseudo, &tcp]);
                tcp[16..18].copy_from_slice(&sum.to_be_bytes());

                let options: &[u8] = if opts.ip_options {
                    // Router alert, then NOPs and end-of-options.
                    &[0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00]
                } else {
                    &[]
                };
                let header_len = 20 + options.len();
                let mut ip = Vec::with_capacity(header_len + tcp.len());
                ip.push(0x40 | (header_len / 4) as u8);
                ip.push(0);
                // Lengths above 64 KiB are written as 0, like a captured TSO packet.
                let total = u16::try_from(header_len + tcp.len()).unwrap_or(0);
                ip.extend_from_slice(&total.to_be_bytes());
                ip.extend_from_slice(&[0, 0, 0x40, 0]); // id 0, DF
                ip.extend_from_slice(&[64, 6, 0, 0]); // TTL, TCP, checksum below
                ip.extend_from_slice(&s);
                ip.extend_from_slice(&d);
                ip.extend_from_slice(options);
                let sum = checksum(&[&ip]);
                ip[10..12].copy_from_slice(&sum.to_be_bytes());
                ip.extend_from_slice(&tcp);
                ip
            }
            (s, d) => {
                let (s, d) = (v6_octets(s), v6_octets(d));
                let mut pseudo = Vec::with_capacity(40);
                pseudo.extend_from_slice(&s);
                pseudo.extend_from_slice(&d);
                pseudo.extend_from_slice(&(tcp.len() as u32).to_be_bytes());
                pseudo.extend_from_slice(&[0, 0, 0, 6]);
                let sum = checksum(&[&pseudo, &tcp]);
                tcp[16..18].copy_from_slice(&sum.to_be_bytes());

                let mut ext = Vec::new();
                let first_next = if opts.ip_options {
                    // Hop-by-hop (PadN), routing (type 253, experimental, 0 segments
                    // left), destination options (PadN): 8 bytes each.
                    ext.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
                    ext.extend_from_slice(&[60, 0, 253, 0, 0, 0, 0, 0]);
                    ext.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
                    0
                } else {
                    6
                };
                let plen = u16::try_from(ext.len() + tcp.len()).unwrap_or(0);
                let mut ip = Vec::with_capacity(40 + ext.len() + tcp.len());
                ip.extend_from_slice(&[0x60, 0, 0, 0]);
                ip.extend_from_slice(&plen.to_be_bytes());
                ip.push(first_next);
                ip.push(64);
                ip.extend_from_slice(&s);
                ip.extend_from_slice(&d);
                ip.extend_from_slice(&ext);
                ip.extend_from_slice(&tcp);
                ip
            }
        }
    }
}

fn v6_octets(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

/// Splits VLAN tags into the first protocol field and the bytes after it.
fn vlan_split(tags: &[u16], ethertype: u16) -> (u16, Vec<u8>) {
    if tags.is_empty() {
        return (ethertype, Vec::new());
    }
    let tpid = |i: usize| -> u16 {
        if i + 1 == tags.len() {
            0x8100
        } else if i == 0 {
            0x88A8
        } else {
            0x9100
        }
    };
    let mut rest = Vec::with_capacity(tags.len() * 4);
    for (i, tci) in tags.iter().enumerate() {
        rest.extend_from_slice(&tci.to_be_bytes());
        let next = if i + 1 < tags.len() {
            tpid(i + 1)
        } else {
            ethertype
        };
        rest.extend_from_slice(&next.to_be_bytes());
    }
    (tpid(0), rest)
}

fn push_vlans(f: &mut Vec<u8>, tags: &[u16], ethertype: u16) {
    let (first, rest) = vlan_split(tags, ethertype);
    f.extend_from_slice(&first.to_be_bytes());
    f.extend_from_slice(&rest);
}

/// The Internet checksum over the concatenation of `parts` (each of even length except
/// possibly the last).
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    for part in parts {
        let mut chunks = part.chunks_exact(2);
        for c in &mut chunks {
            sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u64::from(*last) << 8;
        }
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Tracks the sequence numbers of one synthetic TCP connection, so tests can script
/// traffic. Initial sequence numbers sit just below `u32::MAX`, so a few hundred bytes of
/// traffic wrap the sequence space.
#[derive(Clone, Debug)]
pub struct SyntheticConnection {
    client: Endpoint,
    server: Endpoint,
    client_seq: u32,
    server_seq: u32,
}

impl SyntheticConnection {
    /// Client ISN `u32::MAX - 99` (wraps after 100 bytes), server ISN `u32::MAX - 299`.
    pub fn new(client: Endpoint, server: Endpoint) -> Self {
        Self::with_isns(client, server, u32::MAX - 99, u32::MAX - 299)
    }

    /// A connection with chosen initial sequence numbers.
    pub fn with_isns(client: Endpoint, server: Endpoint, client_isn: u32, server_isn: u32) -> Self {
        SyntheticConnection {
            client,
            server,
            client_seq: client_isn,
            server_seq: server_isn,
        }
    }

    /// Client → server addresses.
    pub fn client_flow(&self) -> FlowKey {
        FlowKey {
            src: self.client,
            dst: self.server,
        }
    }

    /// Server → client addresses.
    pub fn server_flow(&self) -> FlowKey {
        FlowKey {
            src: self.server,
            dst: self.client,
        }
    }

    /// SYN, SYN-ACK, ACK; each SYN takes one sequence number.
    pub fn handshake(&mut self) -> Vec<TcpPacketSpec> {
        let syn = self.client_packet(TcpFlags::SYN, 0, &[]);
        self.client_seq = self.client_seq.wrapping_add(1);
        let syn_ack = self.server_packet(TcpFlags::SYN | TcpFlags::ACK, &[]);
        self.server_seq = self.server_seq.wrapping_add(1);
        let ack = self.client_packet(TcpFlags::ACK, self.server_seq, &[]);
        vec![syn, syn_ack, ack]
    }

    /// A PSH-ACK data segment from the client; advances the client's sequence number.
    pub fn client_sends(&mut self, payload: &[u8]) -> TcpPacketSpec {
        let p = self.client_packet(TcpFlags::PSH | TcpFlags::ACK, self.server_seq, payload);
        self.client_seq = self.client_seq.wrapping_add(payload.len() as u32);
        p
    }

    /// A PSH-ACK data segment from the server; advances the server's sequence number.
    pub fn server_sends(&mut self, payload: &[u8]) -> TcpPacketSpec {
        let p = self.server_packet(TcpFlags::PSH | TcpFlags::ACK, payload);
        self.server_seq = self.server_seq.wrapping_add(payload.len() as u32);
        p
    }

    /// FIN-ACK from the client (takes one sequence number).
    pub fn client_fin(&mut self) -> TcpPacketSpec {
        let p = self.client_packet(TcpFlags::FIN | TcpFlags::ACK, self.server_seq, &[]);
        self.client_seq = self.client_seq.wrapping_add(1);
        p
    }

    /// FIN-ACK from the server (takes one sequence number).
    pub fn server_fin(&mut self) -> TcpPacketSpec {
        let p = self.server_packet(TcpFlags::FIN | TcpFlags::ACK, &[]);
        self.server_seq = self.server_seq.wrapping_add(1);
        p
    }

    /// RST-ACK from the client.
    pub fn client_rst(&mut self) -> TcpPacketSpec {
        self.client_packet(TcpFlags::RST | TcpFlags::ACK, self.server_seq, &[])
    }

    /// RST-ACK from the server.
    pub fn server_rst(&mut self) -> TcpPacketSpec {
        self.server_packet(TcpFlags::RST | TcpFlags::ACK, &[])
    }

    /// The client's next sequence number.
    pub fn client_seq(&self) -> u32 {
        self.client_seq
    }

    /// The server's next sequence number.
    pub fn server_seq(&self) -> u32 {
        self.server_seq
    }

    fn client_packet(&self, flags: u8, ack: u32, payload: &[u8]) -> TcpPacketSpec {
        TcpPacketSpec {
            flow: self.client_flow(),
            seq: self.client_seq,
            ack,
            flags: TcpFlags(flags),
            payload: payload.to_vec(),
        }
    }

    fn server_packet(&self, flags: u8, payload: &[u8]) -> TcpPacketSpec {
        TcpPacketSpec {
            flow: self.server_flow(),
            seq: self.server_seq,
            ack: self.client_seq,
            flags: TcpFlags(flags),
            payload: payload.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(addr: &str, port: u16) -> Endpoint {
        Endpoint {
            addr: addr.parse().unwrap(),
            port,
        }
    }

    fn conn() -> SyntheticConnection {
        SyntheticConnection::new(ep("10.1.1.1", 40001), ep("10.1.1.2", 9878))
    }

    #[test]
    fn synthetic_connection_tracks_and_wraps_sequence_numbers() {
        let mut c = conn();
        let c0 = c.client_seq();
        let s0 = c.server_seq();
        let hs = c.handshake();
        assert_eq!(hs.len(), 3);
        assert!(hs[0].flags.syn() && hs[0].seq == c0 && hs[0].flow == c.client_flow());
        assert_eq!(hs[1].flags, TcpFlags(TcpFlags::SYN | TcpFlags::ACK));
        assert_eq!((hs[1].seq, hs[1].ack), (s0, c0.wrapping_add(1)));
        assert_eq!(hs[1].flow, c.server_flow());
        assert_eq!(
            (hs[2].seq, hs[2].ack),
            (c0.wrapping_add(1), s0.wrapping_add(1))
        );
        assert_eq!(hs[2].flags, TcpFlags(TcpFlags::ACK));

        let a = c.client_sends(&[1; 150]);
        assert_eq!(a.seq, c0.wrapping_add(1));
        assert_eq!(a.payload.len(), 150);
        // 1 + 150 bytes past an ISN 99 below the top: the client wrapped.
        assert_eq!(c.client_seq(), 51);
        let b = c.server_sends(&[2; 400]);
        assert_eq!(b.ack, 51);
        assert_eq!(c.server_seq(), s0.wrapping_add(401));
        assert!(c.server_seq() < s0, "server wrapped too");
        let fin = c.client_fin();
        assert!(fin.flags.fin() && fin.seq == 51 && c.client_seq() == 52);
        let sfin = c.server_fin();
        assert!(sfin.flags.fin() && sfin.ack == 52);
        let rst = c.client_rst();
        assert!(rst.flags.rst() && rst.seq == 52 && c.client_seq() == 52);
        assert!(c.server_rst().flags.rst());
    }

    #[test]
    fn ipv4_header_checksum_verifies() {
        let mut c = conn();
        let spec = c.client_sends(b"odd length payload!");
        for ip_options in [false, true] {
            let opts = FrameOptions {
                ip_options,
                ..FrameOptions::default()
            };
            let f = spec.frame(LinkType::RawIp, &opts);
            let ihl = usize::from(f[0] & 0x0F) * 4;
            assert_eq!(ihl, if ip_options { 28 } else { 20 });
            assert_eq!(checksum(&[&f[..ihl]]), 0);
            // TCP checksum over pseudo-header + segment also verifies to 0.
            let mut pseudo = f[12..20].to_vec();
            pseudo.extend_from_slice(&[0, 6]);
            pseudo.extend_from_slice(&((f.len() - ihl) as u16).to_be_bytes());
            assert_eq!(checksum(&[&pseudo, &f[ihl..]]), 0);
        }
    }

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

    /// Wireshark reads what we write: timestamps, checksums, every link type.
    #[test]
    fn tshark_agrees_with_the_writer() {
        if std::process::Command::new("tshark")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("tshark not installed; skipping");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut c = SyntheticConnection::new(ep("2001:db8::1", 40001), ep("10.0.0.9", 9878));
        let mut c4 = conn();
        let mut w = CaptureWriter::new(
            Vec::new(),
            CaptureFormat::PcapNg {
                tsresol: 0x80 | 30,
                big_endian: true,
            },
            LinkType::Ethernet,
        )
        .unwrap();
        let ifaces = [
            0,
            w.add_interface(LinkType::LinuxSll, 6).unwrap(),
            w.add_interface(LinkType::LinuxSll2, 9).unwrap(),
            // Not 10^-12: Wireshark overflows 64 bits converting such fractions.
            w.add_interface_with_offset(LinkType::RawIp, 10, 1_700_000_000)
                .unwrap(),
            w.add_interface(LinkType::Null, 0x80 | 20).unwrap(),
        ];
        let all = FrameOptions {
            vlan_tags: vec![7, 8],
            ip_options: true,
            tcp_options: true,
        };
        let mut expected = Vec::new();
        let mut ts = 1_700_000_000_123_456_789u64;
        for (i, &if_id) in ifaces.iter().enumerate() {
            // IPv4 on even interfaces, a mixed v6/v4-mapped flow on odd ones.
            let spec = if i % 2 == 0 {
                c4.client_sends(b"8=FIX.4.4\x01")
            } else {
                c.server_sends(b"8=FIX.4.4\x01")
            };
            let opts = if i % 2 == 0 {
                all.clone()
            } else {
                FrameOptions::default()
            };
            w.write_tcp_on(if_id, ts, &spec, &opts).unwrap();
            let want = match i {
                1 => ts / 1000 * 1000,
                4 => (((ts as u128 * (1 << 20) / 1_000_000_000) * 1_000_000_000) >> 20) as u64,
                _ => ts,
            };
            expected.push(format!(
                "{}.{:09}\t1\t1\t{}",
                want / NS_PER_SEC,
                want % NS_PER_SEC,
                spec.payload.len()
            ));
            ts += 1_000_000_001;
        }
        let path = dir.path().join("w.pcapng");
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        let out = std::process::Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args([
                "-o",
                "tcp.check_checksum:TRUE",
                "-o",
                "ip.check_checksum:TRUE",
            ])
            .args(["-T", "fields", "-e", "frame.time_epoch"])
            .args(["-e", "ip.checksum.status", "-e", "tcp.checksum.status"])
            .args(["-e", "tcp.len"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // IPv6 packets have no IP checksum: tshark prints an empty field.
        let got: Vec<String> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let ip = if f[1].is_empty() { "1" } else { f[1] };
                format!("{}\t{ip}\t{}\t{}", f[0], f[2], f[3])
            })
            .collect();
        assert_eq!(got, expected);
    }
}
