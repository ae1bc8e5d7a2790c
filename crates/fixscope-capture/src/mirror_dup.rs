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
//! The table is set-associative: a packet's fingerprint is a 64-bit hash of those fields
//! (folded multiplications, as foldhash's), keyed at random per process (as the
//! pending-order table: the packets come from the wire, and a fixed key would let a sender
//! compute a packet that passes for another's copy). A set of four (fingerprint, time) entries is one cache line; a new packet takes
//! the set's oldest entry. 256 sets (16 KiB, small enough to stay in the first-level
//! cache: a bigger table cost a cache miss per segment, 7% of `fixscope pcap`'s CPU) hold
//! 1,024 segments: alone they find a copy 50 data segments after its original 99.97% of
//! the time, 100 after 99.7% (a mirror's copies come microseconds apart: at a million
//! segments a second, tens in between); an original a burst pushes out of its set young
//! waits among 32 victims, so a copy within 256 segments is missed only after more than 32
//! such bursts. A copy whose original was evicted goes on to reassembly, which trims it
//! as a retransmission — no figure changes, only the counter. Beside the sets, a 4 KiB
//! array of when each entry went in.
//! Two different packets pass for copies only if their 64-bit fingerprints are equal
//! within the window: about one in 10^13 at a million packets a second. Cost: one hash and
//! one cache line per segment of a watched port.

use std::hash::BuildHasher;
use std::net::IpAddr;

use crate::decode::TcpPacket;

/// Copies further apart than this are two packets: 1 ms, far above a mirror's delay
/// between two copies (microseconds) and far below the earliest retransmission timer.
pub const DEFAULT_WINDOW_NS: u64 = 1_000_000;

const SETS: usize = 256;
const WAYS: usize = 4;
const VICTIMS: usize = 32;
/// An entry evicted before this many later packets went in is kept among the
/// victims (its copy may yet come); one evicted older has had its chance: a mirror's copy
/// comes tens of segments after its original.
const YOUNG: u32 = 256;

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
    /// Entries a burst pushed out of their set young ([`YOUNG`]) and still inside the
    /// window (their copy may yet come): looked at after the set, so a copy is missed only
    /// when more than [`VICTIMS`] such evictions came between it and its original — not
    /// when four packets of a burst happened to share its set (1 run in ~400 missed one of
    /// `ndpi_fix2.pcap`'s 167 copies, so counters differed between runs). Only young ones:
    /// at a million segments a second every entry the sets cycle out is still inside the
    /// window, and those (a thousand packets old) flushed the victims every 32 packets —
    /// 1 run in ~1,000 of `copies_with_dozens_of_packets_in_between_are_found` missed one.
    victims: [Entry; VICTIMS],
    next_victim: usize,
    /// The latest time among `victims` (0: none): while it is outside the window, a
    /// lookup costs one comparison more.
    victims_until_ns: u64,
    window_ns: u64,
    /// When each entry went in, counted in packets put in (wrapping): beside the sets, so
    /// a set stays one cache line.
    stamps: Vec<[u32; WAYS]>,
    inserts: u32,
    /// Random per process (from foldhash's seeded `RandomState`).
    keys: [u64; 8],
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
            victims: [Entry::default(); VICTIMS],
            next_victim: 0,
            victims_until_ns: 0,
            window_ns,
            stamps: vec![[0; WAYS]; SETS],
            inserts: 0,
            keys: {
                let seeds = foldhash::fast::RandomState::default();
                // Odd keys: a multiplication by an even number loses bits.
                std::array::from_fn(|i| seeds.hash_one(i as u64) | 1)
            },
        }
    }

    /// Whether `packet`, seen at `ts_ns`, is a copy of a packet seen within the window.
    /// The first copy stays the reference, so a third copy is one too. Only segments with
    /// data are looked at: a copied pure ACK, SYN or FIN changes no figure and no
    /// counter, and some stacks send identical duplicate ACKs (IPv4 id 0) that are no copy.
    #[inline]
    pub fn is_copy(&mut self, ts_ns: u64, packet: &TcpPacket<'_>) -> bool {
        if packet.payload.is_empty() && packet.missing_tail == 0 {
            return false;
        }
        let fingerprint = self.fingerprint(packet);
        let set_index = set_of(fingerprint);
        let set = &mut self.sets[set_index].0;
        let mut oldest = 0;
        let window_ns = self.window_ns;
        let within = |e: &Entry| e.fingerprint != 0 && e.ts_ns.abs_diff(ts_ns) <= window_ns;
        for (i, e) in set.iter().enumerate() {
            if e.fingerprint == fingerprint && within(e) {
                return true;
            }
            if e.ts_ns < set[oldest].ts_ns {
                oldest = i;
            }
        }
        if self.victims_until_ns.saturating_add(window_ns) >= ts_ns
            && self
                .victims
                .iter()
                .any(|e| e.fingerprint == fingerprint && within(e))
        {
            return true;
        }
        let evicted = std::mem::replace(&mut set[oldest], Entry { fingerprint, ts_ns });
        let stamp = &mut self.stamps[set_index][oldest];
        let age = self.inserts.wrapping_sub(*stamp);
        *stamp = self.inserts;
        self.inserts = self.inserts.wrapping_add(1);
        if within(&evicted) && age < YOUNG {
            self.victims[self.next_victim] = evicted;
            self.next_victim = (self.next_victim + 1) % VICTIMS;
            self.victims_until_ns = self.victims_until_ns.max(evicted.ts_ns);
        }
        false
    }

    #[inline]
    fn fingerprint(&self, p: &TcpPacket<'_>) -> u64 {
        let k = &self.keys;
        let addrs = match (p.flow.src.addr, p.flow.dst.addr) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                u64::from(u32::from(s)) << 32 | u64::from(u32::from(d))
            }
            (s, d) => {
                let (s, d) = (v6_bits(s), v6_bits(d));
                fold(s as u64 ^ k[4], (s >> 64) as u64 ^ k[5])
                    ^ fold(d as u64 ^ k[6], (d >> 64) as u64 ^ k[7])
            }
        };
        let ports = u64::from(p.flow.src.port) << 16 | u64::from(p.flow.dst.port);
        let len = (p.payload.len() as u64).saturating_add(u64::from(p.missing_tail));
        let id = p.copy_id;
        let ids = u64::from(id.ip_id) << 48
            | u64::from(id.tcp_window) << 32
            | u64::from(id.tcp_checksum) << 16
            | u64::from(p.flags.0);
        let h = fold(addrs ^ k[0], (ports << 32 | len) ^ k[1]);
        let h = fold(h ^ (u64::from(p.seq) << 32 | u64::from(p.ack)), ids ^ k[2]);
        fold(h, k[3]).max(1)
    }
}

/// The set a packet with this fingerprint goes in: its top bits.
#[inline]
fn set_of(fingerprint: u64) -> usize {
    (fingerprint >> 56) as usize & (SETS - 1)
}

/// The folded 128-bit product (as foldhash and wyhash mix): every input bit reaches the
/// result; with the per-process keys an outsider cannot aim at a value.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ (m >> 64) as u64
}

fn v6_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V6(v) => u128::from(v),
        IpAddr::V4(v) => u128::from(v.to_ipv6_mapped()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, Decoded, LinkType};
    use crate::pcap_writer::{FrameOptions, SyntheticConnection};
    use fixscope_model::segment::Endpoint;

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
        let tagged = c.client_sends(b"xy").frame(
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
    fn segments_without_data_are_never_copies() {
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let ack = c
            .client_sends(b"")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        assert!(!d.is_copy(0, &packet(&ack)));
        assert!(!d.is_copy(1, &packet(&ack)));
    }

    #[test]
    fn ipv6_copies_are_recognised_and_flows_kept_apart() {
        let ep = |a: &str, port| Endpoint {
            addr: a.parse().unwrap(),
            port,
        };
        let mut d = MirrorDuplicates::default();
        let mut a = SyntheticConnection::new(ep("2001:db8::2", 40000), ep("2001:db8::1", 9878));
        let mut b = SyntheticConnection::new(ep("2001:db8::3", 40000), ep("2001:db8::1", 9878));
        let fa = a
            .client_sends(b"same")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        let fb = b
            .client_sends(b"same")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        assert!(!d.is_copy(0, &packet(&fa)));
        assert!(
            !d.is_copy(1, &packet(&fb)),
            "another client's packet is no copy"
        );
        assert!(d.is_copy(2, &packet(&fa)));
        assert!(d.is_copy(3, &packet(&fb)));
    }

    #[test]
    fn copies_with_dozens_of_packets_in_between_are_found() {
        // Each packet's copy comes 50 data segments later (a mirror's copies come
        // microseconds apart: at a million segments a second, tens in between). The sets
        // alone kept 99.97% of them (a simulation of them said; the keys are random per
        // process, so which ones they missed varied); with the entries a burst evicted young
        // kept, every one.
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let frames: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                c.client_sends(b"0123456789")
                    .frame(LinkType::Ethernet, &FrameOptions::default())
            })
            .collect();
        let mut found = 0;
        for (i, f) in frames.iter().enumerate() {
            assert!(!d.is_copy(i as u64, &packet(f)));
            if i >= 50 {
                found += usize::from(d.is_copy(i as u64, &packet(&frames[i - 50])));
            }
        }
        assert_eq!(found, 2950, "every copy found");
    }

    /// At a million segments a second every entry the sets cycle out is still inside the
    /// window: those old evictions must not push out a young one (an original a burst
    /// evicted) before its copy comes. The packets are chosen by the set their fingerprint
    /// falls in, so this holds for any per-process keys.
    #[test]
    fn old_evictions_inside_the_window_keep_a_young_one() {
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let mut frames = (0..20_000).map(|_| {
            c.client_sends(b"0123456789")
                .frame(LinkType::Ethernet, &FrameOptions::default())
        });
        let mut ts = 0u64;
        let mut put = |d: &mut MirrorDuplicates, f: &[u8]| {
            ts += 1; // all inside the window
            assert!(!d.is_copy(ts, &packet(f)));
        };
        // Every set full of entries a thousand packets old.
        for f in frames.by_ref().take(4 * SETS * WAYS) {
            put(&mut d, &f);
        }
        let set_of_frame = |d: &MirrorDuplicates, f: &[u8]| set_of(d.fingerprint(&packet(f)));
        let original = frames.next().unwrap();
        let set = set_of_frame(&d, &original);
        put(&mut d, &original);
        // A burst in its set evicts it young...
        let burst: Vec<Vec<u8>> = frames
            .by_ref()
            .filter(|f| set_of_frame(&d, f) == set)
            .take(WAYS)
            .collect();
        assert_eq!(burst.len(), WAYS, "packets for the original's set");
        for f in &burst {
            put(&mut d, f);
        }
        // ...then more old evictions than there are victims, elsewhere.
        let others: Vec<Vec<u8>> = frames
            .by_ref()
            .filter(|f| set_of_frame(&d, f) != set)
            .take(2 * VICTIMS)
            .collect();
        for f in &others {
            put(&mut d, f);
        }
        ts += 1;
        assert!(
            d.is_copy(ts, &packet(&original)),
            "the original's copy is found"
        );
    }

    /// A burst that fills the original's set before its copy comes (four packets in the
    /// same set, whichever the per-process keys make it): the copy is still found — the
    /// original waits among the evicted entries while inside the window.
    #[test]
    fn a_copy_is_found_after_a_burst_filled_its_originals_set() {
        let mut d = MirrorDuplicates::default();
        let mut c = conn();
        let set_of_frame = |d: &MirrorDuplicates, f: &[u8]| set_of(d.fingerprint(&packet(f)));
        let original = c
            .client_sends(b"the order")
            .frame(LinkType::Ethernet, &FrameOptions::default());
        let set = set_of_frame(&d, &original);
        let burst: Vec<Vec<u8>> = (0..200_000)
            .map(|_| {
                c.client_sends(b"0123456789")
                    .frame(LinkType::Ethernet, &FrameOptions::default())
            })
            .filter(|f| set_of_frame(&d, f) == set)
            .take(WAYS)
            .collect();
        assert_eq!(burst.len(), WAYS, "packets of the original's set");
        assert!(!d.is_copy(0, &packet(&original)));
        for (i, f) in burst.iter().enumerate() {
            assert!(!d.is_copy(1 + i as u64, &packet(f)));
        }
        assert!(
            d.is_copy(10, &packet(&original)),
            "the copy of an original pushed out of its set inside the window"
        );
        assert!(
            !d.is_copy(10 + DEFAULT_WINDOW_NS + 1, &packet(&original)),
            "past the window: a packet of its own"
        );
    }
}
