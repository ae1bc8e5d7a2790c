//! One packet seen twice on a mirror is one packet.
//!
//! A switch mirroring both directions of a port, or several ports a packet crosses (the
//! gateway's and the uplink's), or a SPAN session with ingress and egress both selected,
//! delivers some packets twice, microseconds apart. Reassembly would trim the second copy
//! as a retransmission — no latency would change — but the counters would then report
//! retransmissions the hosts never made. So a packet-level source asks [`MirrorDuplicates`]
//! first, and a copy is counted (`capture_mirror_duplicates`) and not handed on.
//!
//! A copy is a packet whose every field a mirror leaves alone — flow, sequence and
//! acknowledgement numbers, flags, length, IPv4 identification, TCP window and checksum
//! (which covers the payload) — equals those of a packet seen less than the window
//! ([`DEFAULT_WINDOW_NS`]) before. Fields a mirror or a router on its way may change (TTL,
//! IP checksum, VLAN tags, tunnels) are not compared. A sender's retransmission differs: a
//! Linux sender gives every IPv4 packet of a connection the next identification, and a
//! retransmission comes a retransmission timeout (≥ 200 ms), a tail-loss probe (≥ 10 ms) or
//! at least a round trip of duplicate ACKs later. The one look-alike: an IPv6 (no
//! identification) fast retransmit inside the window with an unchanged window and
//! timestamp option — it is then counted as a copy, and every figure stays the same,
//! since the pipeline uses the first copy of any byte either way.
//!
//! The table is set-associative: a packet's fingerprint is a 64-bit hash of those fields,
//! keyed at random per process (foldhash, as the pending-order table: the packets come from
//! the wire, and a fixed key would let a sender compute a packet that passes for another's
//! copy). A set of four (fingerprint, time) entries is one cache line; a new packet takes
//! the set's oldest entry. 2048 sets (128 KiB) hold the window's packets up to several
//! million packets a second; past that a copy whose original was evicted goes on to
//! reassembly, which trims it as a retransmission — no figure changes, only the counter.
//! Two different packets pass for copies only if their 64-bit fingerprints are equal
//! within the window: about one in 10^13 at a million packets a second. Cost: one hash and
//! one cache line per segment of a watched port.

use std::hash::{BuildHasher, Hash, Hasher};

use crate::decode::TcpPacket;

/// Copies further apart than this are two packets: 1 ms, far above a mirror's delay
/// between two copies (microseconds) and far below the earliest retransmission timer.
pub const DEFAULT_WINDOW_NS: u64 = 1_000_000;

const SETS: usize = 2048;
const WAYS: usize = 4;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// 0: empty (a fingerprint of 0 is stored as 1).
    fingerprint: u64,
    ts_ns: u64,
}

/// Four entries in one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Set([Entry; WAYS]);

/// Recognises the second copy of a packet (see the module documentation).
#[derive(Clone, Debug)]
pub struct MirrorDuplicates {
    sets: Vec<Set>,
    window_ns: u64,
    hasher: foldhash::fast::RandomState,
}

impl Default for MirrorDuplicates {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW_NS)
    }
}

impl MirrorDuplicates {
    pub fn new(window_ns: u64) -> Self {
        MirrorDuplicates {
            sets: vec![Set::default(); SETS],
            window_ns,
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Whether `packet`, seen at `ts_ns`, is a copy of a packet seen within the window.
    /// The first copy stays the reference, so a third copy is one too.
    #[inline]
    pub fn is_copy(&mut self, ts_ns: u64, packet: &TcpPacket<'_>) -> bool {
        let fingerprint = self.fingerprint(packet);
        let set = &mut self.sets[(fingerprint >> 53) as usize & (SETS - 1)].0;
        let mut oldest = 0;
        for (i, e) in set.iter().enumerate() {
            if e.fingerprint == fingerprint && e.ts_ns.abs_diff(ts_ns) <= self.window_ns {
                return true;
            }
            if e.ts_ns < set[oldest].ts_ns {
                oldest = i;
            }
        }
        set[oldest] = Entry { fingerprint, ts_ns };
        false
    }

    #[inline]
    fn fingerprint(&self, p: &TcpPacket<'_>) -> u64 {
        let mut h = self.hasher.build_hasher();
        p.flow.hash(&mut h);
        h.write_u64(u64::from(p.seq) << 32 | u64::from(p.ack));
        let len = (p.payload.len() as u64).saturating_add(u64::from(p.missing_tail));
        h.write_u64(len << 32 | u64::from(p.flags.0));
        let id = p.copy_id;
        h.write_u64(
            u64::from(id.ip_id) << 32 | u64::from(id.tcp_window) << 16 | u64::from(id.tcp_checksum),
        );
        h.finish().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, Decoded, LinkType};
    use crate::pcap_writer::{FrameOptions, SyntheticConnection};
    use crate::segment::Endpoint;

    fn packet(frame: &[u8]) -> TcpPacket<'_> {
        match decode(LinkType::Ethernet, frame) {
            Ok(Decoded::Tcp(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    fn conn() -> SyntheticConnection {
        let ep = |a: &str, port| Endpoint {
            addr: a.parse().unwrap(),
            port,
        };
        SyntheticConnection::new(ep("10.0.0.2", 40000), ep("10.0.0.1", 9878))
    }

    #[test]
    fn a_second_and_third_copy_within_the_window_are_copies() {
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let f = c
            .client_sends(b"8=FIX.4.4\x01")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        // With a VLAN tag on the way: the same packet.
        let tagged = c.client_sends(b"").frame(
            LinkType::Ethernet,
            &FrameOptions {
                vlan_tags: vec![5],
                ..FrameOptions::default()
            },
        );
        assert!(!d.is_copy(1_000, &packet(&f)));
        assert!(d.is_copy(1_500, &packet(&f)));
        assert!(d.is_copy(1_000 + DEFAULT_WINDOW_NS, &packet(&f)));
        // Past the window from the first copy: a retransmission, for reassembly to count.
        assert!(!d.is_copy(1_001 + DEFAULT_WINDOW_NS, &packet(&f)));
        assert!(!d.is_copy(5_000_000, &packet(&tagged)));
        // A copy may be stamped before the one the source handed first (two capture ports).
        assert!(d.is_copy(4_999_000, &packet(&tagged)));
    }

    #[test]
    fn a_retransmission_differs_by_its_ip_identification_or_any_other_field() {
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let f = c
            .client_sends(b"abcdef")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        assert!(!d.is_copy(0, &packet(&f)));
        // Identification (bytes 18-19 of the frame), window, checksum, ack, a payload byte
        // (which changes nothing here but the length is the same: the checksum tells).
        for (at, what) in [
            (19, "ip id"),
            (14 + 20 + 15, "window"),
            (14 + 20 + 17, "tcp checksum"),
            (14 + 20 + 11, "ack"),
        ] {
            let mut g = f.clone();
            g[at] ^= 0x01;
            assert!(!d.is_copy(10, &packet(&g)), "{what}");
        }
        let other_flow = c
            .server_sends(b"abcdef")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        assert!(!d.is_copy(20, &packet(&other_flow)));
    }

    #[test]
    fn many_packets_in_between_do_not_hide_a_copy_often() {
        // 1000 packets of other seqs between a packet and its copy: the table holds them.
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let frames: Vec<Vec<u8>> = (0..1000)
            .map(|_| {
                c.client_sends(b"0123456789")
                    .frame(LinkType::Ethernet, &FrameOptions::default())
            })
            .collect();
        for (i, f) in frames.iter().enumerate() {
            assert!(!d.is_copy(i as u64, &packet(f)));
        }
        let found = frames
            .iter()
            .enumerate()
            .filter(|(i, f)| d.is_copy(1_000 + *i as u64, &packet(f)))
            .count();
        assert!(found >= 950, "{found} of 1000 copies recognised");
    }
}
