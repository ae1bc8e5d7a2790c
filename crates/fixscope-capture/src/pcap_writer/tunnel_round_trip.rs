//! Every tunnel the writer wraps a frame in, unwrapped by the decoder ([`crate::encap`]) to
//! the same packet: the writer's tunnels and the decoder's agree.

use crate::decode::{decode, Decoded, LinkType, TcpPacket};
use crate::encap::MAX_DEPTH;
use crate::pcap_writer::{wrap_in_tunnel, FrameOptions, SyntheticConnection, Tunnel};
use fixscope_model::segment::Endpoint;

const TUNNELS: [Tunnel; 6] = [
    Tunnel::GreTap,
    Tunnel::GreIp,
    Tunnel::ErspanII,
    Tunnel::ErspanIII { subheader: false },
    Tunnel::ErspanIII { subheader: true },
    Tunnel::Vxlan,
];

fn conn(v6: bool) -> SyntheticConnection {
    let ep = |a: &str, port| Endpoint {
        addr: a.parse().unwrap(),
        port,
    };
    if v6 {
        SyntheticConnection::new(ep("2001:db8::2", 40000), ep("2001:db8::1", 9878))
    } else {
        SyntheticConnection::new(ep("10.0.0.2", 40000), ep("10.0.0.1", 9878))
    }
}

fn tcp(frame: &[u8]) -> TcpPacket<'_> {
    match decode(LinkType::Ethernet, frame) {
        Ok(Decoded::Tcp(t)) => t,
        other => panic!("expected TCP, got {other:?}"),
    }
}

/// An Ethernet frame without the padding to 60 bytes (a tunnel carries it as it was).
fn unpadded(spec: &crate::pcap_writer::TcpPacketSpec, opts: &FrameOptions) -> Vec<u8> {
    let mut f = spec.frame(LinkType::Ethernet, opts);
    // Total length of the IP datagram tells where the frame ends.
    let vlans = opts.vlan_tags.len() * 4;
    let ip = 14 + vlans;
    let len = if f[ip] >> 4 == 4 {
        usize::from(u16::from_be_bytes([f[ip + 2], f[ip + 3]]))
    } else {
        40 + usize::from(u16::from_be_bytes([f[ip + 4], f[ip + 5]]))
    };
    f.truncate(ip + len);
    f
}

#[test]
fn every_tunnel_gives_the_packet_inside_as_it_was() {
    for v6 in [false, true] {
        for tags in [vec![], vec![100], vec![10, 20]] {
            let opts = FrameOptions {
                vlan_tags: tags.clone(),
                ..FrameOptions::default()
            };
            let mut c = conn(v6);
            let spec = c.client_sends(b"8=FIX.4.4\x019=5\x0135=D\x0110=000\x01");
            let frame = unpadded(&spec, &opts);
            let plain = tcp(&frame);
            assert_eq!(plain.inner_ethernet, None);
            for tunnel in TUNNELS {
                let wrapped = wrap_in_tunnel(&frame, tunnel);
                let got = decode(LinkType::Ethernet, &wrapped);
                // And where the frame inside lies (none for GRE carrying bare IP).
                let inner = inner_start(tunnel).map(|at| &wrapped[at..]);
                assert_eq!(
                    got,
                    Ok(Decoded::Tcp(TcpPacket {
                        inner_ethernet: inner,
                        ..plain
                    })),
                    "{tunnel:?} v6={v6} tags={tags:?}"
                );
            }
        }
    }
}

/// Where the frame inside `tunnel` starts in [`wrap_in_tunnel`]'s frame: after the outer
/// Ethernet (14) and IPv4 (20) headers and the tunnel's own; `None` for GRE carrying IP.
fn inner_start(tunnel: Tunnel) -> Option<usize> {
    let own = match tunnel {
        // GRE with a key.
        Tunnel::GreTap => 8,
        Tunnel::GreIp => return None,
        // GRE with a sequence number, then ERSPAN's header.
        Tunnel::ErspanII => 8 + 8,
        Tunnel::ErspanIII { subheader: false } => 8 + 12,
        Tunnel::ErspanIII { subheader: true } => 8 + 12 + 8,
        // UDP, then VXLAN's header.
        Tunnel::Vxlan => 8 + 8,
    };
    Some(34 + own)
}

#[test]
fn the_innermost_ethernet_frame_is_reported_where_it_lies() {
    let mut c = conn(false);
    let frame = unpadded(
        &c.client_sends(b"8=FIX.4.4\x019=5\x0135=D\x01"),
        &FrameOptions::default(),
    );
    // A tap's trailer after the datagram is part of the frame a tunnel carries.
    let mut trailed = frame.clone();
    trailed.extend_from_slice(&[0xA5; 20]);
    for tunnel in TUNNELS {
        for inner in [&frame, &trailed] {
            let wrapped = wrap_in_tunnel(inner, tunnel);
            let want = inner_start(tunnel).map(|at| at..at + inner.len());
            let t = tcp(&wrapped);
            assert_eq!(t.inner_ethernet_in(&wrapped), want, "{tunnel:?}");
            assert_eq!(t.payload, b"8=FIX.4.4\x019=5\x0135=D\x01");
            if let Some(at) = want.clone() {
                assert_eq!(&wrapped[at], &inner[..]);
            }
            // Bytes after the outer datagram (the outer frame's own trailer or FCS) are
            // not the inner frame's: it ends with the outer IP length.
            let mut outer = wrapped.clone();
            outer.extend_from_slice(&[0x5A; 24]);
            assert_eq!(tcp(&outer).inner_ethernet_in(&outer), want, "{tunnel:?}");
            // Cut by a snaplen inside the inner frame's trailer: it ends with the bytes.
            if inner.len() > frame.len() {
                let cut = &wrapped[..wrapped.len() - 7];
                let t = tcp(cut);
                assert_eq!(t.missing_tail, 0);
                assert_eq!(
                    t.inner_ethernet_in(cut),
                    want.map(|at| at.start..at.end - 7),
                    "{tunnel:?}"
                );
            }
        }
    }
    // VXLAN's inner frame ends with its UDP datagram, short of the outer IP length.
    let mut vxlan = wrap_in_tunnel(&trailed, Tunnel::Vxlan);
    let udp_len = 16 + frame.len() as u16;
    vxlan[34 + 4..34 + 6].copy_from_slice(&udp_len.to_be_bytes());
    assert_eq!(
        tcp(&vxlan).inner_ethernet_in(&vxlan),
        Some(50..50 + frame.len())
    );
    // A UDP length that does not fit is not gone by.
    for bad in [15u16, 0xFFFF] {
        vxlan[34 + 4..34 + 6].copy_from_slice(&bad.to_be_bytes());
        assert_eq!(
            tcp(&vxlan).inner_ethernet_in(&vxlan),
            Some(50..50 + trailed.len())
        );
    }
    // Tunnels in tunnels: the innermost Ethernet frame, inside GRE carrying IP too.
    let erspan = wrap_in_tunnel(&trailed, Tunnel::ErspanII);
    let nested = wrap_in_tunnel(&erspan, Tunnel::Vxlan);
    let at = 50 + 50;
    assert_eq!(
        tcp(&nested).inner_ethernet_in(&nested),
        Some(at..at + trailed.len())
    );
    let over_ip = wrap_in_tunnel(&erspan, Tunnel::GreIp);
    let at = 34 + 4 + 20 + 16;
    assert_eq!(
        tcp(&over_ip).inner_ethernet_in(&over_ip),
        Some(at..at + trailed.len())
    );
    let ip_inside = wrap_in_tunnel(&wrap_in_tunnel(&trailed, Tunnel::GreIp), Tunnel::GreTap);
    assert_eq!(
        tcp(&ip_inside).inner_ethernet_in(&ip_inside),
        Some(42..ip_inside.len())
    );
    // No tunnel: no inner frame; a slice from elsewhere has no offsets in the frame.
    assert_eq!(tcp(&trailed).inner_ethernet, None);
    let t = tcp(&nested);
    assert_eq!(t.inner_ethernet_in(&trailed), None);
}

#[test]
fn a_tunnel_inside_a_tunnel_is_unwrapped_up_to_the_limit() {
    let mut c = conn(false);
    let spec = c.client_sends(b"deep");
    let mut frame = unpadded(&spec, &FrameOptions::default());
    for _ in 0..MAX_DEPTH {
        frame = wrap_in_tunnel(&frame, Tunnel::GreTap);
    }
    assert_eq!(tcp(&frame).payload, b"deep");
    let deeper = wrap_in_tunnel(&frame, Tunnel::ErspanII);
    assert_eq!(decode(LinkType::Ethernet, &deeper), Ok(Decoded::NotTcp));
}

#[test]
fn what_is_no_tunnel_of_ours_is_not_tcp() {
    let mut c = conn(false);
    let frame = unpadded(&c.client_sends(b"x"), &FrameOptions::default());
    // GRE with an unknown protocol, GRE version 1 (PPTP), VXLAN without its I flag; UDP
    // to another port is a datagram (market data), not a tunnel.
    let mut other = wrap_in_tunnel(&frame, Tunnel::GreTap);
    other[34 + 2..34 + 4].copy_from_slice(&0x880Bu16.to_be_bytes());
    assert_eq!(decode(LinkType::Ethernet, &other), Ok(Decoded::NotTcp));
    let mut pptp = wrap_in_tunnel(&frame, Tunnel::GreTap);
    pptp[34 + 1] |= 0x01;
    assert_eq!(decode(LinkType::Ethernet, &pptp), Ok(Decoded::NotTcp));
    let mut udp = wrap_in_tunnel(&frame, Tunnel::Vxlan);
    udp[34 + 2..34 + 4].copy_from_slice(&53u16.to_be_bytes());
    match decode(LinkType::Ethernet, &udp) {
        Ok(Decoded::Udp(d)) => {
            assert_eq!(d.flow.dst.port, 53);
            assert_eq!(d.payload, &udp[34 + 8..], "the VXLAN header and its frame");
            assert_eq!(d.missing_tail, 0);
        }
        other => panic!("not a datagram: {other:?}"),
    }
    udp.truncate(udp.len() - 3);
    let Ok(Decoded::Udp(cut)) = decode(LinkType::Ethernet, &udp) else {
        panic!("a datagram cut by the snaplen is one still");
    };
    assert_eq!(cut.missing_tail, 3);
    let mut no_vni = wrap_in_tunnel(&frame, Tunnel::Vxlan);
    no_vni[34 + 8] = 0;
    assert_eq!(decode(LinkType::Ethernet, &no_vni), Ok(Decoded::NotTcp));
}

#[test]
fn cut_tunnel_headers_are_errors_and_no_prefix_panics() {
    let mut c = conn(true);
    let frame = unpadded(&c.server_sends(b"0123456789"), &FrameOptions::default());
    for tunnel in TUNNELS {
        let wrapped = wrap_in_tunnel(&frame, tunnel);
        // Cut inside the tunnel header (after the outer IPv4 header, whose length field
        // still announces the whole datagram).
        let cut = &wrapped[..34 + 6];
        assert!(
            decode(LinkType::Ethernet, cut).is_err(),
            "{tunnel:?}: {:?}",
            decode(LinkType::Ethernet, cut)
        );
        for n in 0..=wrapped.len() {
            let _ = decode(LinkType::Ethernet, &wrapped[..n]);
        }
        for i in 0..wrapped.len() {
            let mut f = wrapped.clone();
            f[i] ^= 0xFF;
            let _ = decode(LinkType::Ethernet, &f);
        }
    }
}
