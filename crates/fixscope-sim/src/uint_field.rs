//! FIX unsigned-integer field values (MsgSeqNum, BeginSeqNo, OrderQty...) as numbers.
//!
//! Its own module, below the session layer, so that the session and what it owns (the
//! replay store, the wire truth) parse numbers the same way without needing each other.

/// The value of an unsigned-integer field: ASCII digits only, at most 19 of them (always
/// fits a u64); anything else, or an empty value, is `None`.
pub fn parse_uint(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as u64;
    }
    Some(n)
}
