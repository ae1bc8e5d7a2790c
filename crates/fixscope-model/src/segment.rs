//! The seam between sources and the shared pipeline.
//!
//! Every source (pcap/pcapng files, the live eBPF ring buffer) turns what it captures into
//! [`Segment`]s; everything after that — reassembly, framing, correlation, statistics,
//! reporting — is the same code for all of them.

use std::fmt;
use std::net::IpAddr;

/// How far a capture may put frames out of the wire's order, by the capture's clock: two
/// tap ports or CPUs stamping on their own, a mirror's crossing copies. Captures reorder by
/// microseconds (host stamps 5–100 µs late); 10 ms is two orders of magnitude more, and
/// short enough that a ClOrdID is not reused on its session within it. A response with no
/// request waits this long for one (`correlate/early.rs`); a hole the peer acknowledged
/// waits this long for the segment before it is a gap (`reassembly.rs`).
pub const REORDER_WINDOW_NS: u64 = 10_000_000;

/// The two times of in-order stream bytes. They differ only for bytes held behind a hole:
/// the receiver read them when the hole filled, but they were on the wire when their own
/// segment was captured. A request is complete when its last byte is readable; a response
/// was sent when its first byte was on the wire — a later segment that fills a hole before
/// it is the capture's (or the network's) reordering, not the responder's delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteTimes {
    /// The capture time of the segment that carried them.
    pub captured_ns: u64,
    /// When the receiver could read them in order: the later of their own time and the
    /// time of the segment that filled a hole before them.
    pub readable_ns: u64,
}

impl ByteTimes {
    /// Bytes readable when captured (no hole before them).
    #[inline]
    pub const fn at(ts_ns: u64) -> Self {
        ByteTimes {
            captured_ns: ts_ns,
            readable_ns: ts_ns,
        }
    }
}

/// One side of a TCP connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub addr: IpAddr,
    pub port: u16,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.port),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.port),
        }
    }
}

/// A segment's addresses as seen on the wire (source → destination).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: Endpoint,
    pub dst: Endpoint,
}

/// Which way a segment travels relative to the watched FIX service.
///
/// Requests (orders) flow towards the watched port; responses (execution reports) flow away
/// from it. Sources decide this from ports and role (pcap) or from the hook that saw the
/// packet (live), so the pipeline never has to guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Request,
    Response,
}

/// The TCP flags the pipeline cares about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;

    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
}

/// One captured TCP segment, borrowed from the source's buffer.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// Capture time in nanoseconds (pcap: the file's clock; live: `bpf_ktime_get_ns`, i.e.
    /// CLOCK_MONOTONIC). Only differences between timestamps of one source are meaningful.
    pub ts_ns: u64,
    pub flow: FlowKey,
    pub direction: Direction,
    /// TCP sequence number of the first payload byte (of the SYN itself when SYN is set).
    pub seq: u32,
    /// TCP acknowledgement number (meaningful when `flags` has ACK): tells reassembly of the
    /// other direction which bytes the peer has received, so a hole the peer has already
    /// acknowledged is known to be a capture loss rather than a network loss.
    pub ack: u32,
    pub flags: TcpFlags,
    /// The captured payload bytes.
    pub payload: &'a [u8],
    /// Payload bytes that were on the wire after `payload` but were not captured (pcap
    /// snaplen, a live copy limit). Reassembly treats them as a gap.
    pub missing_tail: u32,
}

impl Segment<'_> {
    /// The connection this segment belongs to, the same for both directions.
    pub fn connection(&self) -> ConnectionKey {
        ConnectionKey::of(self.flow, self.direction)
    }

    /// Length of the segment in sequence space (payload plus SYN/FIN).
    pub fn wire_payload_len(&self) -> u32 {
        self.payload.len() as u32 + self.missing_tail
    }
}

/// A TCP connection named by its two ends: `client` sends requests, `server` answers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionKey {
    pub client: Endpoint,
    pub server: Endpoint,
}

impl ConnectionKey {
    /// The connection of bytes on `flow` going in `direction` (a request's flow is client →
    /// server).
    #[inline]
    pub fn of(flow: FlowKey, direction: Direction) -> ConnectionKey {
        match direction {
            Direction::Request => ConnectionKey {
                client: flow.src,
                server: flow.dst,
            },
            Direction::Response => ConnectionKey {
                client: flow.dst,
                server: flow.src,
            },
        }
    }
}

impl fmt::Display for ConnectionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.client, self.server)
    }
}
