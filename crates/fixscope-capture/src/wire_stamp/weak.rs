//! Stamps with no check at all (#34), read only when asked for: the VSS Monitoring / APCON
//! trailer and the Arista 7280's source-MAC timestamp. Whatever bytes a frame has there
//! read as some time (all a decoder can refuse is nanoseconds of 10^9 or more), so they are
//! never looked for by `--wire-timestamps auto`.
//!
//! - VSS / APCON: after the frame as it was on the wire (padded to 60 bytes): seconds u32 ·
//!   nanoseconds u32 (its top two bits the clock source: 0 free-running, 1 NTP, 2 GPS,
//!   3 PTP; 30 bits of ns) · a port stamp of 0, 1 or 2 bytes · the new FCS (4, when the
//!   capture kept it). Big-endian. Wireshark's `packet-vssmonitoring.c`; ntop's PF_RING
//!   reads the 12-byte form (seconds, ns, FCS).
//! - Arista 7280 `mac timestamp replace source-mac`: the 6 bytes of the source MAC are
//!   the low 16 bits of the seconds · nanoseconds u32 (< 10^9), big-endian — the 48-bit
//!   time of the 7280's header, put where the source MAC was (jcul/arista_mac_timestamp's
//!   Wireshark script; Solarflare's SolarCapture `ts_src_mac`). The seconds' other bits
//!   are the capture's, the nearest match (within ±9 h); whether the switch's clock is UTC
//!   or TAI the frame does not say.

use fixscope_model::wire::be16;

/// What a frame holds where a weak stamp would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    Time {
        unix_ns: u64,
        port: u8,
    },
    /// No byte for it.
    Missing,
    /// Bytes that cannot be one (a length no layout has, nanoseconds ≥ 10^9).
    Mismatch,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// VSS: the clock-source bits of the nanoseconds word.
const VSS_NS_MASK: u32 = 0x3FFF_FFFF;

/// The VSS trailer of an Ethernet `frame` whose IP datagram ends at `l3_end` (`None`: no
/// IP length to go by — then the 8 bytes before a valid FCS, else the last 8).
pub(super) fn vss(frame: &[u8], l3_end: Option<usize>) -> Found {
    let len = frame.len();
    let fcs_holds =
        || len >= 12 && crc32fast::hash(&frame[..len - 4]).to_le_bytes() == frame[len - 4..];
    let (start, end) = match l3_end {
        Some(end) => {
            let start = end.max(60);
            // time 8 · port stamp 0-2 · the FCS when kept: the length says which.
            match len.checked_sub(start) {
                Some(n @ 8..=10) => (start, start + n),
                Some(n @ 12..=14) => (start, start + n - 4),
                None | Some(0 | 4) => return Found::Missing,
                _ => return Found::Mismatch,
            }
        }
        None if len < 68 => return Found::Missing,
        None if fcs_holds() => (len - 12, len - 4),
        None => (len - 8, len),
    };
    let seconds = be32(frame, start);
    let nanos = be32(frame, start + 4) & VSS_NS_MASK;
    if seconds == 0 || nanos >= 1_000_000_000 {
        return Found::Mismatch;
    }
    Found::Time {
        unix_ns: u64::from(seconds) * 1_000_000_000 + u64::from(nanos),
        // A 1-byte port stamp; a 2-byte one's low byte.
        port: if end > start + 8 { frame[end - 1] } else { 0 },
    }
}

/// The seconds whose low 16 bits are `low`, nearest `host_s` (the capture's seconds).
pub(super) fn nearest_seconds(low: u64, host_s: u64) -> u64 {
    let mut s = (host_s & !0xFFFF) | low;
    if s + 0x8000 < host_s {
        s += 0x1_0000;
    } else if s > host_s + 0x8000 && s >= 0x1_0000 {
        s -= 0x1_0000;
    }
    s
}

/// The Arista 7280 source-MAC time of an Ethernet `frame` the capture got at `host_ns`.
pub(super) fn arista_mac(frame: &[u8], host_ns: u64) -> Found {
    if frame.len() < 14 {
        return Found::Missing;
    }
    let nanos = be32(frame, 8);
    if nanos >= 1_000_000_000 {
        return Found::Mismatch;
    }
    let seconds = nearest_seconds(u64::from(be16(frame, 6)), host_ns / 1_000_000_000);
    Found::Time {
        unix_ns: seconds * 1_000_000_000 + u64::from(nanos),
        port: 0,
    }
}
