//! What a packet capture saw, counted: the classifier's and the capture file's counters,
//! and the busiest TCP ports when nothing was watched. Below both the classifier and the
//! acceptor detection, which each add to it.

use crate::wire_stamp::TrailerCounters;

/// What a packet capture saw: the classifier's counts, plus those only a capture file has
/// (pcapng interfaces and timestamps, a file cut short). Counters accumulate over every
/// file read with the same stats.
///
/// Serialised (for [`fixscope_model::source::counters_of`]), every counter is named with a
/// `capture_` prefix: these names are the `source` section of the JSON report, a contract.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaptureStats {
    /// Packet records (pcap records, pcapng EPBs and SPBs).
    #[serde(rename = "capture_packets")]
    pub packets: u64,
    /// Packets that decoded to a TCP segment.
    #[serde(rename = "capture_tcp_segments")]
    pub tcp_segments: u64,
    /// TCP segments with a watched port, handed on as [`fixscope_model::segment::Segment`]s.
    #[serde(rename = "capture_segments_in_port_range")]
    pub segments_in_port_range: u64,
    /// Packets that are not TCP over IP (ARP, UDP, ...).
    #[serde(rename = "capture_not_tcp")]
    pub not_tcp: u64,
    /// IP fragments (not reassembled; their TCP bytes are lost).
    #[serde(rename = "capture_ip_fragments")]
    pub ip_fragments: u64,
    /// Packets whose headers are malformed or cut before the TCP payload.
    #[serde(rename = "capture_decode_errors")]
    pub decode_errors: u64,
    /// Segments handed on whose payload the capture cut short (snaplen).
    #[serde(rename = "capture_truncated_segments")]
    pub truncated_segments: u64,
    /// Packets on an interface whose link type we do not decode (pcapng).
    #[serde(rename = "capture_unsupported_link_packets")]
    pub unsupported_link_packets: u64,
    /// pcapng packets that name an interface the section never described.
    #[serde(rename = "capture_unknown_interface_packets")]
    pub unknown_interface_packets: u64,
    /// pcapng packets whose timestamp does not fit u64 nanoseconds since the epoch (an
    /// absurd timestamp or `if_tsoffset`).
    #[serde(rename = "capture_bad_timestamps")]
    pub bad_timestamps: u64,
    /// Second (and further) copies of one packet, as a mirror port delivers them: counted
    /// here, never handed on, never a retransmission ([`crate::mirror_dup`]).
    #[serde(rename = "capture_mirror_duplicates")]
    pub mirror_duplicates: u64,
    /// Capture files that ended in the middle of a record (tcpdump killed): each was read
    /// up to it ([`CaptureStats::truncated_file`] flags the same).
    #[serde(rename = "capture_truncated_files")]
    pub truncated_files: u64,
    /// Hardware timestamps read from the frames' trailers ([`crate::wire_stamp`]).
    #[serde(flatten)]
    pub trailers: TrailerCounters,
    /// A file ended in the middle of a record; everything before it was read. A flag the
    /// binary turns into a warning, not a counter.
    #[serde(skip)]
    pub truncated_file: bool,
    /// Connections between two watched ports that carried FIX but whose acceptor neither
    /// the handshake nor an order or execution report told: taken to be the end with the
    /// lower port ([`crate::acceptor`]). The binary warns; not a counter.
    #[serde(skip)]
    pub guessed_acceptors: u64,
    /// While no segment of the watched ports was seen: the busiest TCP ports of the other
    /// segments (what to watch instead, when nothing matched). Not a counter.
    #[serde(skip)]
    pub busiest_ports: BusiestPorts,
    /// Several files were read as one timeline (merged by time): the first two (their
    /// indices in the order given) whose packets interleave in time. Not a counter.
    #[serde(skip)]
    pub overlapping_files: Option<(u32, u32)>,
    /// Several files were given out of time order: read in time order. Not a counter.
    #[serde(skip)]
    pub reordered_files: bool,
}

impl CaptureStats {
    /// Adds the counters of another file's reading (flags: either's).
    pub fn add(&mut self, other: &CaptureStats) {
        // Destructured: a new field cannot be forgotten here.
        let CaptureStats {
            packets,
            tcp_segments,
            segments_in_port_range,
            not_tcp,
            ip_fragments,
            decode_errors,
            truncated_segments,
            unsupported_link_packets,
            unknown_interface_packets,
            bad_timestamps,
            mirror_duplicates,
            truncated_files,
            trailers,
            truncated_file,
            guessed_acceptors,
            busiest_ports,
            overlapping_files,
            reordered_files,
        } = *other;
        self.packets += packets;
        self.tcp_segments += tcp_segments;
        self.segments_in_port_range += segments_in_port_range;
        self.not_tcp += not_tcp;
        self.ip_fragments += ip_fragments;
        self.decode_errors += decode_errors;
        self.truncated_segments += truncated_segments;
        self.unsupported_link_packets += unsupported_link_packets;
        self.unknown_interface_packets += unknown_interface_packets;
        self.bad_timestamps += bad_timestamps;
        self.mirror_duplicates += mirror_duplicates;
        self.truncated_files += truncated_files;
        self.trailers.trailer_timestamps += trailers.trailer_timestamps;
        self.trailers.trailer_missing += trailers.trailer_missing;
        self.trailers.trailer_fcs_mismatch += trailers.trailer_fcs_mismatch;
        self.trailers.first = self.trailers.first.or(trailers.first);
        self.trailers.first_offset_ns = self.trailers.first_offset_ns.or(trailers.first_offset_ns);
        self.trailers.keyframes += trailers.keyframes;
        self.truncated_file |= truncated_file;
        self.guessed_acceptors += guessed_acceptors;
        self.busiest_ports.add(&busiest_ports);
        self.overlapping_files = self.overlapping_files.or(overlapping_files);
        self.reordered_files |= reordered_files;
    }
}

/// The busiest TCP ports (by segments, each segment counting for both its ports), busiest
/// first: what a capture carried when none of it was on the watched ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusiestPorts(pub [(u16, u64); BusiestPorts::N]);

impl BusiestPorts {
    /// Ports kept.
    pub const N: usize = 5;

    /// The ports with a count, busiest first.
    pub fn ports(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0.iter().copied().filter(|&(_, n)| n > 0)
    }

    /// Adds another file's (counts of one port summed; the busiest kept).
    pub fn add(&mut self, other: &BusiestPorts) {
        let mut all: Vec<(u16, u64)> = self.ports().collect();
        for (port, n) in other.ports() {
            match all.iter_mut().find(|(p, _)| *p == port) {
                Some((_, m)) => *m += n,
                None => all.push((port, n)),
            }
        }
        *self = BusiestPorts::of(all);
    }

    pub(crate) fn of(mut counts: Vec<(u16, u64)>) -> BusiestPorts {
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut top = BusiestPorts::default();
        for (slot, c) in top.0.iter_mut().zip(counts) {
            *slot = c;
        }
        top
    }
}
