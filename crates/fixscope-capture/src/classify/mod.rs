//! From a captured frame to a [`Segment`]: decode link/IP/TCP, decide the direction from the
//! watched ports, drop the second copy of a mirrored packet ([`crate::mirror_dup`]), count
//! what was seen.
//!
//! Every packet-level source hands its frames here — capture files today, a mirror-port
//! (AF_PACKET) capture later — so they count and classify alike. The live eBPF source is not
//! one: its kernel side decodes and classifies before anything reaches user space.

use crate::acceptor::Acceptors;
use crate::decode::{decode, Decoded, LinkType};
use crate::mirror_dup::MirrorDuplicates;
use crate::wire_stamp::WireStamps;
use fixscope_model::ports::PortSet;
use fixscope_model::segment::{Direction, Segment};

pub use crate::capture_stats::{BusiestPorts, CaptureStats};

/// Segments per TCP port, counted only while no segment of the watched ports was seen
/// (a capture on the wrong `-p` says what it carried); allocated at the first.
#[derive(Clone, Default)]
struct PortCounts(Option<Box<[u32]>>);

impl std::fmt::Debug for PortCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PortCounts")
    }
}

impl PortCounts {
    #[cold]
    fn count(&mut self, a: u16, b: u16) {
        let counts = self
            .0
            .get_or_insert_with(|| vec![0u32; 1 << 16].into_boxed_slice());
        for port in [a, b] {
            let n = &mut counts[usize::from(port)];
            *n = n.saturating_add(1);
        }
    }

    fn busiest(&self) -> BusiestPorts {
        let Some(counts) = &self.0 else {
            return BusiestPorts::default();
        };
        let all = counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(port, &n)| (port as u16, u64::from(n)))
            .collect();
        BusiestPorts::of(all)
    }
}

/// Turns captured frames into segments of the watched ports.
#[derive(Clone, Debug)]
pub struct FrameClassifier {
    ports: PortSet,
    copies: MirrorDuplicates,
    /// Connections between two watched ports: which end is the acceptor.
    acceptors: Acceptors,
    /// TCP ports of the segments not watched, while none is.
    others: PortCounts,
    /// Hardware timestamps from the frames' trailers (Ethernet only).
    stamps: WireStamps,
}

impl FrameClassifier {
    /// Segments to or from any of `ports` are handed on: towards a watched port is a
    /// request, from one a response ([`PortSet::classify`]).
    pub fn new(ports: PortSet) -> Self {
        FrameClassifier {
            ports,
            copies: MirrorDuplicates::default(),
            acceptors: Acceptors::default(),
            others: PortCounts::default(),
            stamps: WireStamps::new(crate::wire_stamp::chosen()),
        }
    }

    /// Reads the hardware stamps as `stamps` does (tests: the run's choice is process-wide).
    #[cfg(test)]
    pub(crate) fn set_stamps(&mut self, stamps: WireStamps) {
        self.stamps = stamps;
    }

    pub fn ports(&self) -> &PortSet {
        &self.ports
    }

    /// One captured frame of link type `link`, taken at `ts_ns`: counts it in `stats` and
    /// returns the TCP segment it carries when one of its ports is watched and it is not
    /// a second copy of a packet. Never panics; a malformed frame is a counted decode
    /// error.
    ///
    /// A segment between two watched ports goes the way its connection's acceptor says
    /// ([`crate::acceptor`]): until that is known, segments are held (copied) — `None` —
    /// and come out of [`FrameClassifier::take_released`] in capture order once they may
    /// ([`FrameClassifier::has_released`]: ask after every frame, and call
    /// [`FrameClassifier::finish`] at the end).
    #[inline]
    pub fn classify<'f>(
        &mut self,
        link: LinkType,
        ts_ns: u64,
        frame: &'f [u8],
        stats: &mut CaptureStats,
    ) -> Option<Segment<'f>> {
        stats.packets += 1;
        match decode(link, frame) {
            Ok(Decoded::Tcp(t)) => {
                stats.tcp_segments += 1;
                let ts_ns = self.wire_time(link, frame, &t, ts_ns, stats);
                let Some(mut direction) = self.ports.classify(t.flow.src.port, t.flow.dst.port)
                else {
                    if stats.segments_in_port_range == 0 {
                        self.others.count(t.flow.src.port, t.flow.dst.port);
                    }
                    return None;
                };
                if self.copies.is_copy(ts_ns, &t) {
                    stats.mirror_duplicates += 1;
                    return None;
                }
                let both_watched =
                    direction == Direction::Request && self.ports.contains(t.flow.src.port);
                if both_watched || !self.acceptors.idle() {
                    let known = (!both_watched).then_some(direction);
                    direction = self.acceptors.segment(ts_ns, &t, known, stats)?;
                }
                stats.segments_in_port_range += 1;
                if t.missing_tail > 0 {
                    stats.truncated_segments += 1;
                }
                Some(Segment {
                    ts_ns,
                    flow: t.flow,
                    direction,
                    seq: t.seq,
                    ack: t.ack,
                    flags: t.flags,
                    payload: t.payload,
                    missing_tail: t.missing_tail,
                })
            }
            // Market data is read apart (`crate::pcap::read_datagrams`).
            Ok(Decoded::NotTcp | Decoded::Udp(_)) => {
                stats.not_tcp += 1;
                if link == LinkType::Ethernet && self.stamps.needs_keyframes() {
                    // A tick form's keyframes are no TCP: they set its clock.
                    self.stamps.keyframe(frame, ts_ns, &mut stats.trailers);
                }
                None
            }
            Ok(Decoded::IpFragment) => {
                stats.ip_fragments += 1;
                None
            }
            Err(_) => {
                stats.decode_errors += 1;
                None
            }
        }
    }

    /// The segment's time: a tap's hardware stamp when the frame carries one after its
    /// datagram ([`crate::wire_stamp`]), else the capture's.
    #[inline(always)]
    fn wire_time(
        &mut self,
        link: LinkType,
        frame: &[u8],
        t: &crate::decode::TcpPacket<'_>,
        ts_ns: u64,
        stats: &mut CaptureStats,
    ) -> u64 {
        if link != LinkType::Ethernet || t.missing_tail > 0 {
            return ts_ns;
        }
        // The payload borrows the frame: where it ends is where the datagram does (the
        // innermost one, inside a tunnel's Ethernet frame when it came out of one).
        let end = t.payload.as_ptr() as usize - frame.as_ptr() as usize + t.payload.len();
        self.stamps
            .stamp_after(
                frame,
                Some(end),
                t.inner_ethernet,
                ts_ns,
                &mut stats.trailers,
            )
            .map_or(ts_ns, |s| s.unix_ns)
    }

    /// Segments between two watched ports are waiting in
    /// [`FrameClassifier::take_released`] (their connection's acceptor was decided).
    #[inline]
    pub fn has_released(&self) -> bool {
        self.acceptors.has_released()
    }

    /// Hands the released segments on, in order (counted in `stats` as handed on);
    /// stops when `on_segment` returns false.
    #[cold]
    pub fn take_released(
        &mut self,
        stats: &mut CaptureStats,
        on_segment: &mut dyn FnMut(&Segment<'_>, &mut CaptureStats) -> bool,
    ) {
        self.acceptors.take_released(stats, on_segment);
    }

    /// The end of the frames (a capture file read to its end): connections between two
    /// watched ports still undecided are decided by their ports and their segments
    /// released ([`FrameClassifier::take_released`]); when no segment of the watched ports
    /// was seen, the busiest other TCP ports go to [`CaptureStats::busiest_ports`].
    pub fn finish(&mut self, stats: &mut CaptureStats) {
        self.acceptors.flush(stats);
        if stats.segments_in_port_range == 0 {
            stats.busiest_ports.add(&self.others.busiest());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap_writer::{FrameOptions, SyntheticConnection};
    use fixscope_model::segment::{Direction, Endpoint};
    use fixscope_model::source::counters_of;

    fn conn() -> SyntheticConnection {
        let ep = |a: &str, port| Endpoint {
            addr: a.parse().unwrap(),
            port,
        };
        SyntheticConnection::new(ep("10.0.0.2", 40000), ep("10.0.0.1", 9878))
    }

    #[test]
    fn classifies_by_port_and_counts_every_kind_of_frame() {
        let mut classifier = FrameClassifier::new(PortSet::single(9878));
        let mut stats = CaptureStats::default();
        let mut c = conn();
        let opts = FrameOptions::default();
        let request = c.client_sends(b"8=FIX.4.4\x01");
        let response = c.server_sends(b"8=FIX.4.4\x01 reply");

        let f = request.frame(LinkType::Ethernet, &opts);
        let s = classifier
            .classify(LinkType::Ethernet, 7, &f, &mut stats)
            .expect("a request");
        assert_eq!(
            (s.ts_ns, s.direction, s.flow, s.seq, s.payload),
            (
                7,
                Direction::Request,
                request.flow,
                request.seq,
                &b"8=FIX.4.4\x01"[..]
            )
        );
        let f = response.frame(LinkType::RawIp, &opts);
        let s = classifier
            .classify(LinkType::RawIp, 8, &f, &mut stats)
            .expect("a response");
        assert_eq!((s.direction, s.flow), (Direction::Response, response.flow));

        // The same packet again at once: a mirror's second copy, counted and dropped.
        let f = response.frame(LinkType::RawIp, &opts);
        assert!(classifier
            .classify(LinkType::RawIp, 9, &f, &mut stats)
            .is_none());
        // Cut by a snaplen: handed on, counted as truncated (seen again 10 ms later: a
        // retransmission for reassembly, no copy).
        let f = response.frame(LinkType::Ethernet, &opts);
        let s = classifier
            .classify(
                LinkType::Ethernet,
                10_000_000,
                &f[..f.len() - 3],
                &mut stats,
            )
            .expect("a cut response");
        assert_eq!(s.missing_tail, 3);
        // Another port; ARP; an IP fragment; a frame cut inside its IP header.
        let mut other = request.clone();
        other.flow.dst.port = 80;
        let f = other.frame(LinkType::Ethernet, &opts);
        assert!(classifier
            .classify(LinkType::Ethernet, 0, &f, &mut stats)
            .is_none());
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(classifier
            .classify(LinkType::Ethernet, 0, &arp, &mut stats)
            .is_none());
        let mut frag = request.frame(LinkType::Ethernet, &opts);
        frag[14 + 6] |= 0x20;
        assert!(classifier
            .classify(LinkType::Ethernet, 0, &frag, &mut stats)
            .is_none());
        assert!(classifier
            .classify(LinkType::Ethernet, 0, &frag[..20], &mut stats)
            .is_none());

        assert_eq!(
            stats,
            CaptureStats {
                packets: 8,
                tcp_segments: 5,
                segments_in_port_range: 3,
                mirror_duplicates: 1,
                not_tcp: 1,
                ip_fragments: 1,
                decode_errors: 1,
                truncated_segments: 1,
                ..CaptureStats::default()
            }
        );
    }

    #[test]
    fn the_busiest_other_ports_are_kept_while_nothing_matches() {
        let mut classifier = FrameClassifier::new(PortSet::single(9999));
        let mut stats = CaptureStats::default();
        let opts = FrameOptions::default();
        let mut c = conn();
        for i in 0..6 {
            let spec = if i % 3 == 0 {
                c.server_sends(b"x")
            } else {
                c.client_sends(b"y")
            };
            let f = spec.frame(LinkType::Ethernet, &opts);
            assert!(classifier
                .classify(LinkType::Ethernet, i, &f, &mut stats)
                .is_none());
        }
        classifier.finish(&mut stats);
        let busiest: Vec<(u16, u64)> = stats.busiest_ports.ports().collect();
        assert_eq!(busiest, vec![(9878, 6), (40000, 6)]);
        // Two files' lists add up; the busiest are kept.
        let mut other = BusiestPorts::default();
        other.0[0] = (80, 20);
        other.0[1] = (40000, 1);
        stats.busiest_ports.add(&other);
        let busiest: Vec<(u16, u64)> = stats.busiest_ports.ports().collect();
        assert_eq!(busiest, vec![(80, 20), (40000, 7), (9878, 6)]);
        // Once something matched, nothing is counted or kept.
        let mut classifier = FrameClassifier::new(PortSet::single(9878));
        let mut stats = CaptureStats::default();
        let f = c.client_sends(b"z").frame(LinkType::Ethernet, &opts);
        assert!(classifier
            .classify(LinkType::Ethernet, 9, &f, &mut stats)
            .is_some());
        classifier.finish(&mut stats);
        assert_eq!(stats.busiest_ports, BusiestPorts::default());
    }

    #[test]
    fn counters_keep_their_json_names() {
        // The `source` section of the JSON report: existing names are a contract.
        let stats = CaptureStats {
            packets: 1,
            tcp_segments: 2,
            segments_in_port_range: 3,
            not_tcp: 4,
            ip_fragments: 5,
            decode_errors: 6,
            truncated_segments: 7,
            unsupported_link_packets: 8,
            unknown_interface_packets: 9,
            bad_timestamps: 10,
            mirror_duplicates: 11,
            truncated_files: 12,
            trailers: crate::wire_stamp::TrailerCounters {
                trailer_timestamps: 13,
                trailer_missing: 14,
                trailer_fcs_mismatch: 15,
                first: None,
                first_offset_ns: None,
                keyframes: 0,
            },
            truncated_file: true,
            guessed_acceptors: 12,
            busiest_ports: BusiestPorts::default(),
            overlapping_files: Some((0, 1)),
            reordered_files: true,
        };
        let names: Vec<(String, u64)> = counters_of(&stats);
        let want = [
            "capture_packets",
            "capture_tcp_segments",
            "capture_segments_in_port_range",
            "capture_not_tcp",
            "capture_ip_fragments",
            "capture_decode_errors",
            "capture_truncated_segments",
            "capture_unsupported_link_packets",
            "capture_unknown_interface_packets",
            "capture_bad_timestamps",
            "capture_mirror_duplicates",
            "capture_truncated_files",
            "trailer_timestamps",
            "trailer_missing",
            "trailer_fcs_mismatch",
        ];
        let want: Vec<(String, u64)> = want
            .iter()
            .zip(1..)
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        assert_eq!(names, want);
    }
}

#[cfg(test)]
mod trailer_tests;
