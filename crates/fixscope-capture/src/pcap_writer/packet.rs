//! TCP packets built as captured frames: Ethernet (any VLAN stack), Linux cooked v1/v2,
//! raw IP and BSD loopback around IPv4 or IPv6 (with options or extension headers), with
//! correct IPv4 header and TCP checksums.

use std::net::IpAddr;

use crate::decode::LinkType;
use fixscope_model::segment::{FlowKey, TcpFlags};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap_writer::test_support::conn;

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
}
