//! Tunnels a mirror port wraps the watched packets in, unwrapped to the packet inside.
//!
//! A switch that sends its mirror (SPAN) to a monitor host across a routed network
//! encapsulates each copy: ERSPAN type II or III (GRE protocol 0x88BE / 0x22EB, Cisco,
//! Arista, Juniper, Linux `erspan`), plain GRE carrying IP, GRETAP (GRE carrying Ethernet,
//! 0x6558), or VXLAN (UDP port 4789). [`crate::decode`] calls [`unwrap`] for any IP
//! protocol other than TCP, so a plain capture never comes here; the packet inside is
//! decoded like any frame (VLAN tags, IPv4/IPv6, further tunnels up to [`MAX_DEPTH`]).
//!
//! Formats: GRE RFC 2784/2890; ERSPAN draft-foschiano-erspan-03 (type II: 8-byte header;
//! type III: 12 bytes, plus the 8-byte platform-specific subheader when its `O` bit is set;
//! type I: GRE without a sequence number and no ERSPAN header); VXLAN RFC 7348.

use fixscope_model::wire::{be16, need, DecodeError, IPPROTO_GRE, IPPROTO_UDP};

/// What a tunnel header holds: the frame or packet for the decoder to go on with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tunnelled<'a> {
    /// An Ethernet frame (GRE TEB, ERSPAN, VXLAN).
    Ethernet(&'a [u8]),
    /// An IP packet (GRE carrying IPv4 or IPv6).
    Ip(&'a [u8]),
    /// Not a tunnel we unwrap, or too deep.
    None,
}

/// Tunnels inside tunnels unwrapped at most (a mirror of a tunnelled link is two deep);
/// deeper ones are not looked into (`NotTcp`), so a crafted packet cannot recurse far.
pub const MAX_DEPTH: u8 = 4;

/// The UDP port of VXLAN (IANA). Linux's old default 8472 is not taken: other protocols
/// use it, and a guess would turn their packets into decode errors.
pub const VXLAN_PORT: u16 = 4789;

const GRE_PROTO_TEB: u16 = 0x6558;
const GRE_PROTO_ERSPAN_II: u16 = 0x88BE;
const GRE_PROTO_ERSPAN_III: u16 = 0x22EB;
const GRE_PROTO_IPV4: u16 = 0x0800;
const GRE_PROTO_IPV6: u16 = 0x86DD;

const GRE_CHECKSUM: u16 = 0x8000;
const GRE_ROUTING: u16 = 0x4000;
const GRE_KEY: u16 = 0x2000;
const GRE_SEQUENCE: u16 = 0x1000;
const GRE_VERSION: u16 = 0x0007;

/// An Ethernet header without VLAN tags.
pub const ETHERNET_HEADER: usize = 14;

/// The packet inside an IP payload of protocol `proto` (the payload cut at the IP length),
/// or `NotTcp` when `proto` is not a tunnel we unwrap.
pub fn unwrap(proto: u8, payload: &[u8], depth: u8) -> Result<Tunnelled<'_>, DecodeError> {
    if depth >= MAX_DEPTH {
        return Ok(Tunnelled::None);
    }
    match proto {
        IPPROTO_GRE => gre(payload),
        IPPROTO_UDP => udp(payload),
        _ => Ok(Tunnelled::None),
    }
}

fn gre(b: &[u8]) -> Result<Tunnelled<'_>, DecodeError> {
    need("GRE", b, 4)?;
    let flags = be16(b, 0);
    // Version 1 is PPTP's enhanced GRE, and source routing (RFC 1701) is obsolete: neither
    // carries a mirror.
    if flags & (GRE_VERSION | GRE_ROUTING) != 0 {
        return Ok(Tunnelled::None);
    }
    let proto = be16(b, 2);
    let mut at = 4;
    for bit in [GRE_CHECKSUM, GRE_KEY, GRE_SEQUENCE] {
        if flags & bit != 0 {
            at += 4;
        }
    }
    need("GRE", b, at)?;
    let inner = &b[at..];
    match proto {
        GRE_PROTO_TEB => Ok(Tunnelled::Ethernet(inner)),
        GRE_PROTO_IPV4 | GRE_PROTO_IPV6 => Ok(Tunnelled::Ip(inner)),
        // Type I has no sequence number and no ERSPAN header; type II has both.
        GRE_PROTO_ERSPAN_II if flags & GRE_SEQUENCE == 0 => Ok(Tunnelled::Ethernet(inner)),
        GRE_PROTO_ERSPAN_II => {
            need("ERSPAN II", inner, 8)?;
            Ok(Tunnelled::Ethernet(&inner[8..]))
        }
        GRE_PROTO_ERSPAN_III => {
            need("ERSPAN III", inner, 12)?;
            // The `O` bit (last bit of the third word): a platform-specific subheader follows.
            let header = if inner[11] & 0x01 != 0 { 20 } else { 12 };
            need("ERSPAN III", inner, header)?;
            Ok(Tunnelled::Ethernet(&inner[header..]))
        }
        _ => Ok(Tunnelled::None),
    }
}

fn udp(b: &[u8]) -> Result<Tunnelled<'_>, DecodeError> {
    need("UDP", b, 8)?;
    if be16(b, 2) != VXLAN_PORT {
        return Ok(Tunnelled::None);
    }
    let vxlan = &b[8..];
    need("VXLAN", vxlan, 8)?;
    // The I flag says the VNI is valid; a VXLAN packet without it is not one to decode.
    if vxlan[0] & 0x08 == 0 {
        return Ok(Tunnelled::None);
    }
    // The inner frame ends where the UDP datagram does (a tap's trailer inside it is read
    // up to there); a length that does not fit what is there is not gone by.
    let udp_len = usize::from(be16(b, 4));
    let end = if (16..=b.len()).contains(&udp_len) {
        udp_len
    } else {
        b.len()
    };
    Ok(Tunnelled::Ethernet(&b[16..end]))
}
