//! A small pcap/pcapng writer, TCP frame builder and scripted TCP conversations, for tests,
//! benchmarks and generated captures. Not part of the product: built for this crate's own
//! tests, and for others with the `capture-writer` feature.
//!
//! ```
//! use fixscope_capture::decode::LinkType;
//! use fixscope_capture::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
//! use fixscope_model::Endpoint;
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
//!
//! Parts: `file` (the pcap/pcapng file writer), `packet` (link/IP/TCP frames with correct
//! checksums), `tunnel` (mirror encapsulations: GRE, ERSPAN, VXLAN), `conversation` (sequence numbers of a scripted TCP connection), `rewrite`
//! (a capture written again with other payloads: FIX over TLS on the same segment times).

mod conversation;
mod file;
mod packet;
mod rewrite;
mod tunnel;

pub use conversation::SyntheticConnection;
pub use file::{CaptureFormat, CaptureWriter};
pub use packet::{FrameOptions, TcpPacketSpec};
pub use rewrite::{CaptureRewriter, PayloadRewrite, RewriteSummary};
pub use tunnel::{wrap as wrap_in_tunnel, Tunnel};

#[cfg(test)]
mod tunnel_round_trip;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::LinkType;
    use crate::pcap_writer::test_support::{conn, ep};

    const NS_PER_SEC: u64 = 1_000_000_000;

    /// Wireshark reads what we write: timestamps, checksums, every link type.
    #[test]
    fn tshark_agrees_with_the_writer() {
        fixscope_testkit::require_tool("tshark_agrees_with_the_writer", "tshark");
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

/// What the writer's tests share: endpoints and a connection between them.
#[cfg(test)]
pub(crate) mod test_support {
    use super::SyntheticConnection;
    use fixscope_model::segment::Endpoint;

    pub fn ep(addr: &str, port: u16) -> Endpoint {
        Endpoint {
            addr: addr.parse().unwrap(),
            port,
        }
    }

    pub fn conn() -> SyntheticConnection {
        SyntheticConnection::new(ep("10.1.1.1", 40001), ep("10.1.1.2", 9878))
    }
}
