//! What every packet decoder shares: its error, bounds checks and byte readers, and the
//! IP protocol numbers. Below `decode` (frames) and `encap` (tunnel headers), so the two
//! depend on this and not on each other.

pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
pub const IPPROTO_GRE: u8 = 47;

/// Why a frame could not be decoded.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("{layer} header truncated: needs {need} bytes, {have} captured")]
    Truncated {
        layer: &'static str,
        need: usize,
        have: usize,
    },
    #[error("IP version {0} where IPv4 or IPv6 was expected")]
    BadIpVersion(u8),
    #[error("IPv4 header length {0} bytes is below the 20-byte minimum")]
    BadIpv4HeaderLength(usize),
    #[error("IPv4 total length {total} is shorter than its {header}-byte header")]
    BadIpv4TotalLength { total: usize, header: usize },
    #[error("IPv6 extension headers run past the {payload}-byte IPv6 payload")]
    BadIpv6ExtensionHeaders { payload: usize },
    #[error("TCP data offset {0} bytes is below the 20-byte minimum")]
    BadTcpHeaderLength(usize),
    #[error("TCP header ({tcp} bytes) is longer than the IP payload ({ip} bytes)")]
    TcpHeaderBeyondIp { tcp: usize, ip: usize },
}

#[inline]
pub fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub fn need(layer: &'static str, b: &[u8], len: usize) -> Result<(), DecodeError> {
    if b.len() < len {
        Err(DecodeError::Truncated {
            layer,
            need: len,
            have: b.len(),
        })
    } else {
        Ok(())
    }
}

/// Arista's registered EtherType, for the timestamp header a 7280 inserts after the source
/// MAC (skipped by `fixscope_core::decode`, read by `fixscope_core::wire_stamp`).
pub const ARISTA_ETHERTYPE: u16 = 0xD28B;

/// Where `part`, a part of `frame` (a header or a frame inside it, as the decoders hand
/// them on), lies in `frame`; `None` for a slice from elsewhere.
#[inline]
pub fn offsets_in(frame: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= frame.len()).then_some(start..end)
}
