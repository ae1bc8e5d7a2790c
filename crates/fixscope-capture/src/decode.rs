//! Link, IP and TCP header decoding for captured frames.
//!
//! [`decode`] takes one captured frame and finds the TCP segment in it, if any. It never
//! allocates and never panics: every length is checked against the captured bytes, and a
//! header that does not fit is a [`DecodeError`]. The TCP payload is bounded by the IP
//! length (so Ethernet padding and trailers are dropped); payload bytes the IP length
//! announces but the capture cut off (snaplen) are reported as `missing_tail`.
//!
//! Mirror-port captures wrap the watched packets in tunnels (GRE, GRETAP, ERSPAN II/III,
//! VXLAN): those are unwrapped by [`crate::encap`], which the IP decoders call only for a
//! protocol other than TCP — a plain capture's path is the TCP test it always made.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::encap::{Tunnelled, ETHERNET_HEADER};
use fixscope_model::segment::{Endpoint, FlowKey, TcpFlags};

/// The link layers we can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// Ethernet II, with any stack of 802.1Q / 802.1ad / 0x9100 VLAN tags.
    Ethernet,
    /// Linux "cooked" capture v1 (`tcpdump -i any` on older libpcap): 16-byte header.
    LinuxSll,
    /// Linux "cooked" capture v2 (`tcpdump -i any` on libpcap >= 1.10): 20-byte header.
    LinuxSll2,
    /// Bare IPv4 or IPv6; the version nibble tells which.
    RawIp,
    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    Null,
}

impl LinkType {
    pub const LINKTYPE_NULL: u32 = 0;
    pub const LINKTYPE_ETHERNET: u32 = 1;
    pub const LINKTYPE_RAW: u32 = 101;
    pub const LINKTYPE_LOOP: u32 = 108;
    pub const LINKTYPE_LINUX_SLL: u32 = 113;
    pub const LINKTYPE_IPV4: u32 = 228;
    pub const LINKTYPE_IPV6: u32 = 229;
    pub const LINKTYPE_LINUX_SLL2: u32 = 276;

    /// Maps a pcap/pcapng `LINKTYPE_*` code to a link type we decode.
    ///
    /// Only the low 16 bits are looked at: legacy pcap headers may carry FCS information in
    /// the upper bits.
    pub fn from_linktype(code: u32) -> Option<Self> {
        match code & 0xFFFF {
            Self::LINKTYPE_ETHERNET => Some(LinkType::Ethernet),
            Self::LINKTYPE_LINUX_SLL => Some(LinkType::LinuxSll),
            Self::LINKTYPE_LINUX_SLL2 => Some(LinkType::LinuxSll2),
            // 12 and 14 are DLT_RAW values some platforms wrote into old files.
            Self::LINKTYPE_RAW | Self::LINKTYPE_IPV4 | Self::LINKTYPE_IPV6 | 12 | 14 => {
                Some(LinkType::RawIp)
            }
            // LOOP is NULL with the family in network order; decoding detects the order.
            Self::LINKTYPE_NULL | Self::LINKTYPE_LOOP => Some(LinkType::Null),
            _ => None,
        }
    }

    /// The `LINKTYPE_*` code to write into a capture file for this link type.
    pub fn linktype(self) -> u32 {
        match self {
            LinkType::Ethernet => Self::LINKTYPE_ETHERNET,
            LinkType::LinuxSll => Self::LINKTYPE_LINUX_SLL,
            LinkType::LinuxSll2 => Self::LINKTYPE_LINUX_SLL2,
            LinkType::RawIp => Self::LINKTYPE_RAW,
            LinkType::Null => Self::LINKTYPE_NULL,
        }
    }
}

/// A decoded TCP segment, borrowing its payload from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<'a> {
    pub flow: FlowKey,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// The captured payload bytes (never includes link-layer padding).
    pub payload: &'a [u8],
    /// Payload bytes announced by the IP length but not captured (snaplen).
    pub missing_tail: u32,
    /// What tells two copies of one packet from a retransmission of it
    /// ([`crate::mirror_dup`]): the IPv4 identification (0 for IPv6), TCP window and checksum.
    pub copy_id: CopyId,
    /// The innermost Ethernet frame a tunnel carried the segment in (GRETAP, ERSPAN,
    /// VXLAN), from its first header byte to where the tunnel's datagram ends (the outer
    /// IP length, VXLAN's UDP length, or the captured bytes): a tap's trailer inside it
    /// lies after the segment's datagram and before that end ([`crate::wire_stamp`]).
    /// `None` for a segment no tunnel carried, or GRE carrying bare IP (no inner frame).
    /// [`TcpPacket::inner_ethernet_in`] gives it as offsets in the captured frame.
    pub inner_ethernet: Option<&'a [u8]>,
}

impl TcpPacket<'_> {
    /// Where [`TcpPacket::inner_ethernet`] starts and ends in `frame`, the captured frame
    /// the packet was decoded from.
    #[inline]
    pub fn inner_ethernet_in(&self, frame: &[u8]) -> Option<std::ops::Range<usize>> {
        fixscope_model::wire::offsets_in(frame, self.inner_ethernet?)
    }
}

/// A decoded UDP datagram, borrowing its payload from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPacket<'a> {
    pub flow: FlowKey,
    /// The captured payload bytes (never includes link-layer padding).
    pub payload: &'a [u8],
    /// Payload bytes announced by the UDP length but not captured (snaplen).
    pub missing_tail: u32,
}

/// The header fields a mirror copies unchanged and a sender changes when it sends the same
/// bytes again (Linux gives each IPv4 packet of a connection the next identification): with
/// the flow, sequence numbers, flags and length they tell a second copy of one packet from a
/// retransmission ([`crate::mirror_dup`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyId {
    pub ip_id: u16,
    pub tcp_window: u16,
    pub tcp_checksum: u16,
}

/// What a frame turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    Tcp(TcpPacket<'a>),
    /// A UDP datagram (not a VXLAN tunnel's: that one is unwrapped): market data. The
    /// segment classifier takes it as `NotTcp`; the feed reader
    /// (`crate::pcap::read_datagrams`) reads it.
    Udp(UdpPacket<'a>),
    /// Not IP, or IP carrying something other than TCP or UDP.
    NotTcp,
    /// An IP fragment: we do not reassemble IP, so its TCP bytes are lost to us.
    IpFragment,
}

pub use fixscope_model::wire::DecodeError;
use fixscope_model::wire::{be16, need, IPPROTO_TCP, IPPROTO_UDP};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

const IPPROTO_HOPOPTS: u8 = 0;
const IPPROTO_ROUTING: u8 = 43;
const IPPROTO_FRAGMENT: u8 = 44;
const IPPROTO_AH: u8 = 51;
const IPPROTO_DSTOPTS: u8 = 60;

#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Decodes one captured frame of the given link type.
pub fn decode(link: LinkType, frame: &[u8]) -> Result<Decoded<'_>, DecodeError> {
    match link {
        LinkType::Ethernet => {
            need("Ethernet", frame, 14)?;
            ethertype_payload(be16(frame, 12), &frame[14..], 0)
        }
        LinkType::LinuxSll => {
            need("Linux cooked (SLL)", frame, 16)?;
            ethertype_payload(be16(frame, 14), &frame[16..], 0)
        }
        LinkType::LinuxSll2 => {
            need("Linux cooked (SLL2)", frame, 20)?;
            ethertype_payload(be16(frame, 0), &frame[20..], 0)
        }
        LinkType::RawIp => ip(frame, 0),
        LinkType::Null => {
            need("BSD loopback", frame, 4)?;
            let family = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
            // The family is in the writer's byte order; families are small numbers, so a
            // value with high bits set is the other order.
            let family = if family > 0xFFFF {
                family.swap_bytes()
            } else {
                family
            };
            match family {
                // AF_INET everywhere; AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, macOS.
                2 | 10 | 24 | 28 | 30 => ip(&frame[4..], 0),
                _ => Ok(Decoded::NotTcp),
            }
        }
    }
}

/// Skips VLAN tags, then hands IP to the IP decoder. `depth` counts the tunnels already
/// unwrapped around this frame.
pub(crate) fn ethertype_payload(
    mut ethertype: u16,
    mut rest: &[u8],
    depth: u8,
) -> Result<Decoded<'_>, DecodeError> {
    loop {
        match ethertype {
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
                need("VLAN tag", rest, 4)?;
                ethertype = be16(rest, 2);
                rest = &rest[4..];
            }
            // Arista's timestamp header (a 7280 tapping): subtype, version, 48- or 64-bit
            // time, then the original EtherType; its time is read by `crate::wire_stamp`.
            fixscope_model::wire::ARISTA_ETHERTYPE => {
                need("Arista timestamp header", rest, 4)?;
                let time_len = match be16(rest, 2) {
                    0x0010 | 0x0110 => 8,
                    0x0020 | 0x0120 => 6,
                    _ => return Ok(Decoded::NotTcp),
                };
                need("Arista timestamp header", rest, 4 + time_len + 2)?;
                ethertype = be16(rest, 4 + time_len);
                rest = &rest[4 + time_len + 2..];
            }
            _ => break,
        }
    }
    match ethertype {
        ETHERTYPE_IPV4 => ipv4(rest, depth),
        ETHERTYPE_IPV6 => ipv6(rest, depth),
        _ => Ok(Decoded::NotTcp),
    }
}

/// Decodes what a tunnel header (`crate::encap`) found inside it, one tunnel deeper.
fn inside_tunnel(inner: Tunnelled<'_>, depth: u8) -> Result<Decoded<'_>, DecodeError> {
    match inner {
        Tunnelled::Ethernet(frame) => {
            need("inner Ethernet", frame, ETHERNET_HEADER)?;
            let mut d = ethertype_payload(be16(frame, 12), &frame[ETHERNET_HEADER..], depth + 1)?;
            if let Decoded::Tcp(t) = &mut d {
                // The innermost frame: a deeper tunnel's, when there was one, is kept.
                t.inner_ethernet.get_or_insert(frame);
            }
            Ok(d)
        }
        Tunnelled::Ip(packet) => ip(packet, depth + 1),
        Tunnelled::None => Ok(Decoded::NotTcp),
    }
}

pub(crate) fn ip(b: &[u8], depth: u8) -> Result<Decoded<'_>, DecodeError> {
    need("IP", b, 1)?;
    match b[0] >> 4 {
        4 => ipv4(b, depth),
        6 => ipv6(b, depth),
        v => Err(DecodeError::BadIpVersion(v)),
    }
}

fn ipv4(b: &[u8], depth: u8) -> Result<Decoded<'_>, DecodeError> {
    need("IPv4", b, 20)?;
    let version = b[0] >> 4;
    if version != 4 {
        return Err(DecodeError::BadIpVersion(version));
    }
    let header = usize::from(b[0] & 0x0F) * 4;
    if header < 20 {
        return Err(DecodeError::BadIpv4HeaderLength(header));
    }
    need("IPv4", b, header)?;
    let total = usize::from(be16(b, 2));
    // A total length of 0 is what TSO/GSO super-packets look like when captured on the
    // sending host: the captured bytes are all there is to go by.
    let ip_end = if total == 0 { b.len() } else { total };
    if ip_end < header {
        return Err(DecodeError::BadIpv4TotalLength { total, header });
    }
    let frag = be16(b, 6);
    if frag & 0x3FFF != 0 {
        // MF set or a non-zero offset.
        return Ok(Decoded::IpFragment);
    }
    let src = IpAddr::V4(Ipv4Addr::new(b[12], b[13], b[14], b[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(b[16], b[17], b[18], b[19]));
    if b[9] == IPPROTO_UDP {
        if let Some(d) = udp(b, header, ip_end, src, dst) {
            return Ok(d);
        }
    }
    if b[9] != IPPROTO_TCP {
        return inside_tunnel(
            crate::encap::unwrap(b[9], &b[header..ip_end.min(b.len())], depth)?,
            depth,
        );
    }
    tcp(b, header, ip_end, src, dst, be16(b, 4))
}

fn ipv6(b: &[u8], depth: u8) -> Result<Decoded<'_>, DecodeError> {
    need("IPv6", b, 40)?;
    let version = b[0] >> 4;
    if version != 6 {
        return Err(DecodeError::BadIpVersion(version));
    }
    let payload = usize::from(be16(b, 4));
    // 0 means a jumbogram or a captured GSO packet: use the captured bytes.
    let ip_end = if payload == 0 { b.len() } else { 40 + payload };
    let mut next = b[6];
    let mut at = 40;
    // Each extension header is at least 8 bytes long, so this loop ends.
    loop {
        match next {
            IPPROTO_TCP => break,
            IPPROTO_FRAGMENT => return Ok(Decoded::IpFragment),
            IPPROTO_HOPOPTS | IPPROTO_ROUTING | IPPROTO_DSTOPTS | IPPROTO_AH => {
                need("IPv6 extension", b, at + 2)?;
                let len = if next == IPPROTO_AH {
                    (usize::from(b[at + 1]) + 2) * 4
                } else {
                    (usize::from(b[at + 1]) + 1) * 8
                };
                if at + len > ip_end {
                    return Err(DecodeError::BadIpv6ExtensionHeaders {
                        payload: ip_end - 40,
                    });
                }
                need("IPv6 extension", b, at + len)?;
                next = b[at];
                at += len;
            }
            IPPROTO_UDP => {
                let (src, dst) = ipv6_addresses(b);
                if let Some(d) = udp(b, at, ip_end, src, dst) {
                    return Ok(d);
                }
                let inner = crate::encap::unwrap(next, &b[at..ip_end.min(b.len())], depth)?;
                return inside_tunnel(inner, depth);
            }
            // A tunnel (GRE, VXLAN over UDP) or something else: no next header (59),
            // ESP, ICMPv6, ...
            _ => {
                let inner = crate::encap::unwrap(next, &b[at..ip_end.min(b.len())], depth)?;
                return inside_tunnel(inner, depth);
            }
        }
    }
    let (src, dst) = ipv6_addresses(b);
    tcp(b, at, ip_end, src, dst, 0)
}

fn ipv6_addresses(b: &[u8]) -> (IpAddr, IpAddr) {
    let mut src = [0u8; 16];
    src.copy_from_slice(&b[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&b[24..40]);
    (
        IpAddr::V6(Ipv6Addr::from(src)),
        IpAddr::V6(Ipv6Addr::from(dst)),
    )
}

/// The UDP datagram whose header is at `b[at..]` (the IP datagram ending at `ip_end`,
/// maybe past the captured bytes), or `None` for one the tunnel code looks into (VXLAN)
/// or whose header cannot be read or whose length does not fit its IP datagram (nothing
/// to hand a feed reader; the segment classifier counts it `NotTcp` either way).
fn udp(b: &[u8], at: usize, ip_end: usize, src: IpAddr, dst: IpAddr) -> Option<Decoded<'_>> {
    let u = b.get(at..at + 8)?;
    let (sport, dport, len) = (be16(u, 0), be16(u, 2), usize::from(be16(u, 4)));
    if dport == crate::encap::VXLAN_PORT || len < 8 || at + len > ip_end {
        return None;
    }
    let end = at + len;
    let captured = end.min(b.len());
    Some(Decoded::Udp(UdpPacket {
        flow: FlowKey {
            src: Endpoint {
                addr: src,
                port: sport,
            },
            dst: Endpoint {
                addr: dst,
                port: dport,
            },
        },
        payload: b.get(at + 8..captured).unwrap_or_default(),
        missing_tail: (end - captured.max(at + 8)) as u32,
    }))
}

/// Decodes the TCP header at `b[at..]`; the IP datagram ends at `ip_end` (which may lie
/// past the captured bytes).
fn tcp(
    b: &[u8],
    at: usize,
    ip_end: usize,
    src: IpAddr,
    dst: IpAddr,
    ip_id: u16,
) -> Result<Decoded<'_>, DecodeError> {
    let t = &b[at..];
    need("TCP", t, 20)?;
    let header = usize::from(t[12] >> 4) * 4;
    if header < 20 {
        return Err(DecodeError::BadTcpHeaderLength(header));
    }
    if at + header > ip_end {
        return Err(DecodeError::TcpHeaderBeyondIp {
            tcp: header,
            ip: ip_end - at,
        });
    }
    need("TCP", t, header)?;
    let payload_start = at + header;
    let captured_end = ip_end.min(b.len());
    let missing = ip_end - captured_end;
    Ok(Decoded::Tcp(TcpPacket {
        flow: FlowKey {
            src: Endpoint {
                addr: src,
                port: be16(t, 0),
            },
            dst: Endpoint {
                addr: dst,
                port: be16(t, 2),
            },
        },
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: TcpFlags(t[13]),
        payload: &b[payload_start..captured_end],
        // An IP length is at most 64 KiB (or the captured length), so this fits.
        missing_tail: u32::try_from(missing).unwrap_or(u32::MAX),
        copy_id: CopyId {
            ip_id,
            tcp_window: be16(t, 14),
            tcp_checksum: be16(t, 16),
        },
        inner_ethernet: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap_writer::{FrameOptions, TcpPacketSpec};

    fn v4_flow() -> FlowKey {
        FlowKey {
            src: Endpoint {
                addr: "10.0.0.1".parse().unwrap(),
                port: 40000,
            },
            dst: Endpoint {
                addr: "10.0.0.2".parse().unwrap(),
                port: 9878,
            },
        }
    }

    fn v6_flow() -> FlowKey {
        FlowKey {
            src: Endpoint {
                addr: "2001:db8::1".parse().unwrap(),
                port: 40000,
            },
            dst: Endpoint {
                addr: "2001:db8::2".parse().unwrap(),
                port: 9878,
            },
        }
    }

    fn spec(flow: FlowKey, payload: &[u8]) -> TcpPacketSpec {
        TcpPacketSpec {
            flow,
            seq: 0xFFFF_FFF0,
            ack: 77,
            flags: TcpFlags(TcpFlags::PSH | TcpFlags::ACK),
            payload: payload.to_vec(),
        }
    }

    fn tcp_of(d: Decoded<'_>) -> TcpPacket<'_> {
        match d {
            Decoded::Tcp(t) => t,
            other => panic!("expected TCP, got {other:?}"),
        }
    }

    const ALL_LINKS: [LinkType; 5] = [
        LinkType::Ethernet,
        LinkType::LinuxSll,
        LinkType::LinuxSll2,
        LinkType::RawIp,
        LinkType::Null,
    ];

    #[test]
    fn linktype_codes_round_trip() {
        for link in ALL_LINKS {
            assert_eq!(LinkType::from_linktype(link.linktype()), Some(link));
        }
        assert_eq!(LinkType::from_linktype(228), Some(LinkType::RawIp));
        assert_eq!(LinkType::from_linktype(229), Some(LinkType::RawIp));
        assert_eq!(LinkType::from_linktype(108), Some(LinkType::Null));
        // FCS bits in the upper half of a legacy header's link type are ignored.
        assert_eq!(
            LinkType::from_linktype(0x1000_0001),
            Some(LinkType::Ethernet)
        );
        assert_eq!(LinkType::from_linktype(105), None); // 802.11
    }

    #[test]
    fn decodes_every_link_type_v4_and_v6_with_and_without_options() {
        for link in ALL_LINKS {
            for flow in [v4_flow(), v6_flow()] {
                for (ip_options, tcp_options) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let opts = FrameOptions {
                        vlan_tags: vec![],
                        ip_options,
                        tcp_options,
                    };
                    let s = spec(flow, b"8=FIX.4.4\x019=5\x0135=D\x01");
                    let frame = s.frame(link, &opts);
                    let t = tcp_of(decode(link, &frame).unwrap());
                    assert_eq!(t.flow, flow, "{link:?} {opts:?}");
                    assert_eq!(t.seq, s.seq);
                    assert_eq!(t.flags, s.flags);
                    assert_eq!(t.payload, &s.payload[..], "{link:?} {opts:?}");
                    assert_eq!(t.missing_tail, 0);
                }
            }
        }
    }

    #[test]
    fn skips_any_stack_of_vlan_tags() {
        for tags in [vec![10], vec![100, 200], vec![1, 2, 3], vec![7; 6]] {
            for link in [LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2] {
                let opts = FrameOptions {
                    vlan_tags: tags.clone(),
                    ..FrameOptions::default()
                };
                let s = spec(v4_flow(), b"hello");
                let frame = s.frame(link, &opts);
                let t = tcp_of(decode(link, &frame).unwrap());
                assert_eq!(t.payload, b"hello");
                assert_eq!(t.flow, v4_flow());
            }
        }
        // The three tag protocol ids are all recognised.
        let s = spec(v6_flow(), b"x");
        let mut frame = s.frame(LinkType::Ethernet, &FrameOptions::default());
        for tpid in [0x8100u16, 0x88A8, 0x9100] {
            let mut tagged = frame[..12].to_vec();
            tagged.extend_from_slice(&tpid.to_be_bytes());
            tagged.extend_from_slice(&[0x00, 0x05]);
            tagged.extend_from_slice(&frame[12..]);
            frame = tagged;
        }
        assert_eq!(
            tcp_of(decode(LinkType::Ethernet, &frame).unwrap()).payload,
            b"x"
        );
    }

    #[test]
    fn trims_ethernet_padding() {
        // A bare ACK is 54 bytes and gets padded to 60 on the wire.
        let mut s = spec(v4_flow(), b"");
        s.flags = TcpFlags(TcpFlags::ACK);
        let frame = s.frame(LinkType::Ethernet, &FrameOptions::default());
        assert_eq!(frame.len(), 60);
        let t = tcp_of(decode(LinkType::Ethernet, &frame).unwrap());
        assert!(t.payload.is_empty());
        assert_eq!(t.missing_tail, 0);
        // A 2-byte payload is padded too, and the padding must not leak into it.
        let s = spec(v4_flow(), b"ab");
        let mut frame = s.frame(LinkType::Ethernet, &FrameOptions::default());
        frame.extend_from_slice(&[0xEE; 4]); // an FCS-like trailer
        let t = tcp_of(decode(LinkType::Ethernet, &frame).unwrap());
        assert_eq!(t.payload, b"ab");
    }

    #[test]
    fn snaplen_cut_reports_missing_tail() {
        for flow in [v4_flow(), v6_flow()] {
            let s = spec(flow, &[b'z'; 100]);
            let frame = s.frame(LinkType::Ethernet, &FrameOptions::default());
            let cut = &frame[..frame.len() - 30];
            let t = tcp_of(decode(LinkType::Ethernet, cut).unwrap());
            assert_eq!(t.payload.len(), 70);
            assert_eq!(t.missing_tail, 30);
            // Cut inside the TCP header: an error, not a guess.
            let header_end = frame.len() - 100;
            let cut = &frame[..header_end - 1];
            assert!(matches!(
                decode(LinkType::Ethernet, cut),
                Err(DecodeError::Truncated { layer: "TCP", .. })
            ));
        }
    }

    #[test]
    fn ipv4_total_length_zero_uses_captured_length() {
        let s = spec(v4_flow(), &[b'q'; 3000]);
        let mut frame = s.frame(LinkType::RawIp, &FrameOptions::default());
        frame[2] = 0;
        frame[3] = 0;
        let t = tcp_of(decode(LinkType::RawIp, &frame).unwrap());
        assert_eq!(t.payload.len(), 3000);
        assert_eq!(t.missing_tail, 0);
    }

    #[test]
    fn ipv4_fragments_are_reported() {
        let s = spec(v4_flow(), b"payload");
        let base = s.frame(LinkType::RawIp, &FrameOptions::default());
        // More fragments set.
        let mut f = base.clone();
        f[6] = 0x20;
        assert_eq!(decode(LinkType::RawIp, &f), Ok(Decoded::IpFragment));
        // Non-zero offset.
        let mut f = base.clone();
        f[6] = 0x00;
        f[7] = 0x10;
        assert_eq!(decode(LinkType::RawIp, &f), Ok(Decoded::IpFragment));
        // DF alone is not a fragment.
        let mut f = base;
        f[6] = 0x40;
        f[7] = 0;
        assert!(matches!(decode(LinkType::RawIp, &f), Ok(Decoded::Tcp(_))));
    }

    #[test]
    fn ipv6_fragment_header_is_reported() {
        let s = spec(v6_flow(), b"payload");
        let base = s.frame(LinkType::RawIp, &FrameOptions::default());
        // Insert a fragment header (8 bytes) between the IPv6 header and TCP.
        let mut f = base[..40].to_vec();
        f[6] = IPPROTO_FRAGMENT;
        let plen = be16(&base, 4) + 8;
        f[4..6].copy_from_slice(&plen.to_be_bytes());
        f.extend_from_slice(&[IPPROTO_TCP, 0, 0x00, 0x01, 0, 0, 0, 42]);
        f.extend_from_slice(&base[40..]);
        assert_eq!(decode(LinkType::RawIp, &f), Ok(Decoded::IpFragment));
    }

    #[test]
    fn ipv6_extension_headers_are_walked() {
        let s = spec(v6_flow(), b"after-ext");
        let opts = FrameOptions {
            ip_options: true,
            ..FrameOptions::default()
        };
        let frame = s.frame(LinkType::RawIp, &opts);
        // The writer emits hop-by-hop, routing and destination options.
        assert_eq!(frame[6], IPPROTO_HOPOPTS);
        let t = tcp_of(decode(LinkType::RawIp, &frame).unwrap());
        assert_eq!(t.payload, b"after-ext");
        // An extension header claiming more than the payload is an error.
        let mut bad = frame.clone();
        bad[41] = 200;
        assert!(matches!(
            decode(LinkType::RawIp, &bad),
            Err(DecodeError::BadIpv6ExtensionHeaders { .. })
        ));
        // No-next-header ends the chain: not TCP.
        let mut none = frame;
        none[40] = 59;
        assert_eq!(decode(LinkType::RawIp, &none), Ok(Decoded::NotTcp));
    }

    #[test]
    fn non_tcp_is_classified() {
        // ARP over Ethernet.
        let mut arp = vec![0u8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(decode(LinkType::Ethernet, &arp), Ok(Decoded::NotTcp));
        // UDP over IPv4.
        let s = spec(v4_flow(), b"x");
        let mut udp = s.frame(LinkType::RawIp, &FrameOptions::default());
        udp[9] = 17;
        assert_eq!(decode(LinkType::RawIp, &udp), Ok(Decoded::NotTcp));
        // An unknown BSD loopback family.
        assert_eq!(
            decode(LinkType::Null, &[7, 0, 0, 0, 0x45]),
            Ok(Decoded::NotTcp)
        );
    }

    #[test]
    fn null_link_accepts_either_byte_order() {
        let s = spec(v4_flow(), b"loop");
        let mut frame = s.frame(LinkType::Null, &FrameOptions::default());
        frame[..4].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(
            tcp_of(decode(LinkType::Null, &frame).unwrap()).payload,
            b"loop"
        );
    }

    #[test]
    fn malformed_headers_are_errors() {
        let s = spec(v4_flow(), b"abc");
        let good = s.frame(LinkType::RawIp, &FrameOptions::default());
        // Bad version.
        let mut f = good.clone();
        f[0] = 0x55;
        assert_eq!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::BadIpVersion(5))
        );
        // IHL below 5.
        let mut f = good.clone();
        f[0] = 0x44;
        assert_eq!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::BadIpv4HeaderLength(16))
        );
        // IHL beyond the captured bytes.
        let mut f = good.clone();
        f[0] = 0x4F;
        f.truncate(40);
        assert!(matches!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::Truncated { layer: "IPv4", .. })
        ));
        // Total length below the header length.
        let mut f = good.clone();
        f[2] = 0;
        f[3] = 10;
        assert!(matches!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::BadIpv4TotalLength { .. })
        ));
        // TCP data offset below 5.
        let mut f = good.clone();
        f[20 + 12] = 0x40;
        assert_eq!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::BadTcpHeaderLength(16))
        );
        // TCP header longer than the IP payload.
        let mut f = good.clone();
        f[20 + 12] = 0xF0;
        assert!(matches!(
            decode(LinkType::RawIp, &f),
            Err(DecodeError::TcpHeaderBeyondIp { .. })
        ));
        // IPv4 Ethertype carrying an IPv6 header.
        let v6 = spec(v6_flow(), b"abc").frame(LinkType::RawIp, &FrameOptions::default());
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(&v6);
        assert_eq!(
            decode(LinkType::Ethernet, &f),
            Err(DecodeError::BadIpVersion(6))
        );
        // Empty and tiny frames on every link type are errors, never panics.
        for link in ALL_LINKS {
            assert!(decode(link, &[]).is_err());
        }
    }

    #[test]
    fn every_prefix_of_a_frame_decodes_without_panicking() {
        let opts = FrameOptions {
            vlan_tags: vec![1, 2],
            ip_options: true,
            tcp_options: true,
        };
        for link in ALL_LINKS {
            for flow in [v4_flow(), v6_flow()] {
                let frame = spec(flow, b"0123456789").frame(link, &opts);
                for n in 0..=frame.len() {
                    let _ = decode(link, &frame[..n]);
                }
                // And every single-byte corruption.
                for i in 0..frame.len() {
                    for v in [0x00, 0xFF, 0x45, 0x60] {
                        let mut f = frame.clone();
                        f[i] = v;
                        if let Ok(Decoded::Tcp(t)) = decode(link, &f) {
                            assert!(t.payload.len() <= f.len());
                        }
                    }
                }
            }
        }
    }
}
