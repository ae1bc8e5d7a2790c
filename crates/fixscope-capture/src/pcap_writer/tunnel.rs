//! Ethernet frames wrapped the way mirror ports send them to a remote monitor: GRETAP,
//! ERSPAN type II and III, plain GRE (the inner IP packet), VXLAN — each inside an outer
//! Ethernet + IPv4 header between two tunnel endpoints.

/// How a mirrored frame travels to the monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tunnel {
    /// GRE protocol 0x6558 (Linux `gretap`), with a key.
    GreTap,
    /// GRE carrying the inner IP packet (the frame's Ethernet header dropped).
    GreIp,
    /// ERSPAN type II: GRE with a sequence number, 0x88BE, 8-byte ERSPAN header.
    ErspanII,
    /// ERSPAN type III: GRE with a sequence number, 0x22EB, 12-byte header, and the
    /// 8-byte platform subheader when `subheader` is set.
    ErspanIII { subheader: bool },
    /// VXLAN: UDP to port 4789, 8-byte header with the I flag.
    Vxlan,
}

/// `frame` (an Ethernet frame with no padding to care about) inside `tunnel`, in an outer
/// Ethernet/IPv4 frame from 192.0.2.1 to 192.0.2.2.
pub fn wrap(frame: &[u8], tunnel: Tunnel) -> Vec<u8> {
    let (proto, inner): (u8, Vec<u8>) = match tunnel {
        Tunnel::GreTap => (47, gre(0x2000, 0x6558, &[0, 0, 0, 42], frame)),
        Tunnel::GreIp => {
            // Past any VLAN tags to the IP packet.
            let mut at = 12;
            while matches!(
                u16::from_be_bytes([frame[at], frame[at + 1]]),
                0x8100 | 0x88A8 | 0x9100
            ) {
                at += 4;
            }
            let ethertype = u16::from_be_bytes([frame[at], frame[at + 1]]);
            (47, gre(0, ethertype, &[], &frame[at + 2..]))
        }
        Tunnel::ErspanII => {
            // Version 1, VLAN 0, session 7; index 0.
            let mut body = vec![0x10, 0x00, 0x00, 0x07, 0, 0, 0, 0];
            body.extend_from_slice(frame);
            (47, gre(0x1000, 0x88BE, &[0, 0, 0, 1], &body))
        }
        Tunnel::ErspanIII { subheader } => {
            // Version 2, session 7, a timestamp, then SGT/flags with O in the last bit.
            let mut body = vec![0x20, 0x00, 0x00, 0x07, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0];
            if subheader {
                body[11] |= 0x01;
                body.extend_from_slice(&[0xAA; 8]);
            }
            body.extend_from_slice(frame);
            (47, gre(0x1000, 0x22EB, &[0, 0, 0, 1], &body))
        }
        Tunnel::Vxlan => {
            let mut udp = Vec::with_capacity(16 + frame.len());
            udp.extend_from_slice(&50_000u16.to_be_bytes());
            udp.extend_from_slice(&4789u16.to_be_bytes());
            udp.extend_from_slice(&((16 + frame.len()) as u16).to_be_bytes());
            udp.extend_from_slice(&[0, 0]); // no checksum (allowed over IPv4)
            udp.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 0x2A, 0]); // I flag, VNI 42
            udp.extend_from_slice(frame);
            (17, udp)
        }
    };
    let mut out = Vec::with_capacity(34 + inner.len());
    out.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x12]);
    out.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x11]);
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    out.push(0x45);
    out.push(0);
    out.extend_from_slice(&((20 + inner.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    out.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    out.extend_from_slice(&inner);
    out
}

fn gre(flags: u16, proto: u16, fields: &[u8], body: &[u8]) -> Vec<u8> {
    let mut g = Vec::with_capacity(8 + fields.len() + body.len());
    g.extend_from_slice(&flags.to_be_bytes());
    g.extend_from_slice(&proto.to_be_bytes());
    g.extend_from_slice(fields);
    g.extend_from_slice(body);
    g
}
