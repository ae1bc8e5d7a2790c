use super::*;
use crate::decode::{decode, Decoded, LinkType, TcpPacket};
use crate::pcap_writer::{wrap_in_tunnel, FrameOptions, SyntheticConnection, Tunnel};
use crate::segment::Endpoint;

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
            for tunnel in TUNNELS {
                let wrapped = wrap_in_tunnel(&frame, tunnel);
                let got = decode(LinkType::Ethernet, &wrapped);
                assert_eq!(
                    got,
                    Ok(Decoded::Tcp(plain)),
                    "{tunnel:?} v6={v6} tags={tags:?}"
                );
            }
        }
    }
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
    // GRE with an unknown protocol, GRE version 1 (PPTP), UDP to another port, VXLAN
    // without its I flag.
    let mut other = wrap_in_tunnel(&frame, Tunnel::GreTap);
    other[34 + 2..34 + 4].copy_from_slice(&0x880Bu16.to_be_bytes());
    assert_eq!(decode(LinkType::Ethernet, &other), Ok(Decoded::NotTcp));
    let mut pptp = wrap_in_tunnel(&frame, Tunnel::GreTap);
    pptp[34 + 1] |= 0x01;
    assert_eq!(decode(LinkType::Ethernet, &pptp), Ok(Decoded::NotTcp));
    let mut udp = wrap_in_tunnel(&frame, Tunnel::Vxlan);
    udp[34 + 2..34 + 4].copy_from_slice(&53u16.to_be_bytes());
    assert_eq!(decode(LinkType::Ethernet, &udp), Ok(Decoded::NotTcp));
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
