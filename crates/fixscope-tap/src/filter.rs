//! The kernel BPF filter of a mirror-port capture, compiled by libpcap from `-p` (and
//! `--ip`): only the watched TCP ports reach user space — plain, under one or two VLAN
//! tags (802.1Q, QinQ), and any GRE or VXLAN packet (a remote mirror's tunnel, whose
//! inner ports the core's `encap` checks in user space); with a tick form of
//! `--wire-timestamps` (`arista-7150`, `fusion`), its keyframes too (IPv4 protocol 253,
//! EtherType 0x88B5), without which the ticks cannot be read.
//!
//! libpcap's `vlan` keyword moves the offsets of everything after it in the expression,
//! so the untagged tests come first, then one tag, then two.

use std::net::IpAddr;

use fixscope_core::PortSet;

/// The filter expression (tcpdump syntax) for these ports and address, letting the
/// tick forms' keyframes through when `keyframes`.
pub fn filter_expression(ports: &PortSet, ip: Option<IpAddr>, keyframes: bool) -> String {
    let ranges: Vec<String> = ports
        .ranges()
        .iter()
        .map(|r| {
            if r.lo == r.hi {
                format!("port {}", r.lo)
            } else {
                format!("portrange {}-{}", r.lo, r.hi)
            }
        })
        .collect();
    let mut tcp = format!("tcp and ({})", ranges.join(" or "));
    if let Some(ip) = ip {
        tcp = format!("{tcp} and host {ip}");
    }
    let tunnels = format!(
        "ip proto 47 or ip6 proto 47 or udp dst port {}",
        fixscope_core::encap::VXLAN_PORT
    );
    let mut watched = format!("({tcp}) or {tunnels}");
    if keyframes {
        watched.push_str(" or ip proto 253 or ether proto 0x88b5");
    }
    format!("{watched} or (vlan and ({watched})) or (vlan and ({watched}))")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::decode::LinkType;
    use fixscope_core::pcap_writer::{wrap_in_tunnel, FrameOptions, SyntheticConnection, Tunnel};
    use fixscope_core::Endpoint;

    fn program(expr: &str) -> pcap::BpfProgram {
        let dead = pcap::Capture::dead(pcap::Linktype::ETHERNET).unwrap();
        dead.compile(expr, true).unwrap()
    }

    fn frame(server_port: u16, v6: bool, tags: Vec<u16>) -> Vec<u8> {
        let ep = |a: &str, port| Endpoint {
            addr: a.parse().unwrap(),
            port,
        };
        let mut c = if v6 {
            SyntheticConnection::new(ep("2001:db8::2", 40000), ep("2001:db8::1", server_port))
        } else {
            SyntheticConnection::new(ep("10.0.0.2", 40000), ep("10.0.0.1", server_port))
        };
        c.client_sends(b"8=FIX.4.4\x01").frame(
            LinkType::Ethernet,
            &FrameOptions {
                vlan_tags: tags,
                ..FrameOptions::default()
            },
        )
    }

    #[test]
    fn passes_the_watched_ports_plain_tagged_and_tunnelled_and_nothing_else() {
        let ports: PortSet = "9878,9000-9010".parse().unwrap();
        let p = program(&filter_expression(&ports, None, false));
        for v6 in [false, true] {
            for tags in [vec![], vec![7], vec![7, 8]] {
                for port in [9878, 9000, 9005, 9010] {
                    assert!(
                        p.filter(&frame(port, v6, tags.clone())),
                        "{port} {tags:?} v6={v6}"
                    );
                }
                for port in [9877, 8999, 9011, 80] {
                    assert!(
                        !p.filter(&frame(port, v6, tags.clone())),
                        "{port} {tags:?} v6={v6}"
                    );
                }
            }
        }
        for tunnel in [
            Tunnel::GreTap,
            Tunnel::ErspanII,
            Tunnel::ErspanIII { subheader: false },
            Tunnel::Vxlan,
        ] {
            let inner = frame(9878, false, vec![]);
            assert!(p.filter(&wrap_in_tunnel(&inner, tunnel)), "{tunnel:?}");
        }
        // Not TCP, not a tunnel: ARP.
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(!p.filter(&arp));
    }

    #[test]
    fn an_address_narrows_the_plain_traffic() {
        let ports: PortSet = "9878".parse().unwrap();
        let p = program(&filter_expression(
            &ports,
            Some("10.0.0.1".parse().unwrap()),
            false,
        ));
        assert!(p.filter(&frame(9878, false, vec![])));
        let p = program(&filter_expression(
            &ports,
            Some("10.9.9.9".parse().unwrap()),
            false,
        ));
        assert!(!p.filter(&frame(9878, false, vec![])));
        assert!(!p.filter(&frame(9878, false, vec![3])));
    }

    /// An IPv4 datagram of protocol 253 (a 7150 keyframe), or a frame of EtherType
    /// 0x88B5 (a Fusion keyframe), under `tags`.
    fn keyframe(fusion: bool, tags: &[u16]) -> Vec<u8> {
        let mut f = vec![0xFF; 6];
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        for tag in tags {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&tag.to_be_bytes());
        }
        if fusion {
            f.extend_from_slice(&[0x88, 0xB5]);
            f.extend_from_slice(b"EXKF\x01\0\0\0");
        } else {
            f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 82, 0, 0, 0x40, 0, 64, 253, 0, 0]);
            f.extend_from_slice(&[1, 2, 3, 4, 111, 111, 111, 111]);
        }
        f.resize(f.len().max(100), 0);
        f
    }

    #[test]
    fn keyframes_pass_only_for_a_tick_form() {
        let ports: PortSet = "9878".parse().unwrap();
        let with = program(&filter_expression(&ports, None, true));
        let without = program(&filter_expression(&ports, None, false));
        for fusion in [false, true] {
            for tags in [&[][..], &[7][..], &[7, 8][..]] {
                assert!(with.filter(&keyframe(fusion, tags)), "{fusion} {tags:?}");
                assert!(
                    !without.filter(&keyframe(fusion, tags)),
                    "{fusion} {tags:?}"
                );
            }
        }
        assert!(with.filter(&frame(9878, false, vec![])));
        assert!(!with.filter(&frame(80, false, vec![])));
    }
}
