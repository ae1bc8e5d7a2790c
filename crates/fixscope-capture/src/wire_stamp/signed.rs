//! Trailers that carry their own signature and checksum instead of the frame's original
//! FCS: Ixia (Keysight) network-visibility and Gigamon. Both sit at the end of the frame
//! (before the FCS when the capture kept it) and give seconds and nanoseconds, big-endian.
//! A chance match needs a 16-bit signature, a length byte and a 16-bit checksum to agree.
//! Layouts: Wireshark's `packet-ixiatrailer.c` and `packet-gmhdr.c`.

use fixscope_model::wire::be16;

/// Ixia's signature, before the trailer's checksum.
const IXIA_SIGNATURE: u16 = 0xAF12;
/// Ixia: source 1 · time length 1 (8) · seconds 4 · ns 4 · length 1 (10) · signature 2 ·
/// checksum 2.
pub(super) const IXIA_LEN: usize = 15;
/// Gigamon's EtherType, which ends its trailer before the checksum.
const GIGAMON_ETHERTYPE: u16 = 0x22E5;
/// Gigamon's timestamp TLV types (local clock, NTP, external).
const GIGAMON_TIMESTAMPS: [u8; 3] = [3, 4, 5];

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The Internet checksum (RFC 1071) of `bytes`, an odd last byte padded with zero.
fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(c.get(1).copied().unwrap_or(0)))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

fn time(seconds: u32, nanos: u32) -> Option<(u64, u64)> {
    (nanos < 1_000_000_000).then_some((u64::from(seconds), u64::from(nanos)))
}

/// An Ixia trailer ending `tail`: (seconds, nanoseconds).
pub(super) fn ixia(tail: &[u8]) -> Option<(u64, u64)> {
    let t = tail.get(tail.len().checked_sub(IXIA_LEN)?..)?;
    let valid = (3..=7).contains(&t[0])
        && t[1] == 8
        && t[10] == 10
        && be16(t, 11) == IXIA_SIGNATURE
        && internet_checksum(&t[..13]) == be16(t, 13);
    valid.then(|| time(be32(t, 2), be32(t, 6)))?
}

/// A Gigamon trailer ending `tail` (TLVs · length 1 · EtherType 0x22E5 · checksum 2) with a
/// timestamp TLV: (seconds, nanoseconds).
pub(super) fn gigamon(tail: &[u8]) -> Option<(u64, u64)> {
    let n = tail.len();
    if n < 5 || be16(tail, n - 4) != GIGAMON_ETHERTYPE {
        return None;
    }
    let length = usize::from(tail[n - 5]);
    let start = (n - 5).checked_sub(length)?;
    if internet_checksum(&tail[start..n - 2]) != be16(tail, n - 2) {
        return None;
    }
    let mut tlvs = &tail[start..n - 5];
    while tlvs.len() >= 2 {
        let (kind, len) = (tlvs[0], usize::from(tlvs[1]));
        let value = tlvs.get(2..2 + len)?;
        if GIGAMON_TIMESTAMPS.contains(&kind) && len == 8 {
            return time(be32(value, 0), be32(value, 4));
        }
        tlvs = &tlvs[2 + len..];
    }
    None
}

/// The Ixia trailer for a time (test fixtures).
pub(super) fn ixia_trailer(seconds: u64, nanos: u64) -> Vec<u8> {
    let mut t = vec![6, 8]; // PTP-synchronised, 8 bytes of time
    t.extend_from_slice(&(seconds as u32).to_be_bytes());
    t.extend_from_slice(&(nanos as u32).to_be_bytes());
    t.push(10);
    t.extend_from_slice(&IXIA_SIGNATURE.to_be_bytes());
    let sum = internet_checksum(&t);
    t.extend_from_slice(&sum.to_be_bytes());
    t
}

/// The Gigamon trailer for a time, after a source-port TLV (test fixtures).
pub(super) fn gigamon_trailer(seconds: u64, nanos: u64) -> Vec<u8> {
    let mut t = vec![2, 3, 0x08, 0x00, 0x19]; // source port
    t.extend_from_slice(&[4, 8]); // NTP-synchronised time
    t.extend_from_slice(&(seconds as u32).to_be_bytes());
    t.extend_from_slice(&(nanos as u32).to_be_bytes());
    let length = t.len() as u8;
    t.push(length);
    t.extend_from_slice(&GIGAMON_ETHERTYPE.to_be_bytes());
    let sum = internet_checksum(&t);
    t.extend_from_slice(&sum.to_be_bytes());
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internet_checksum_as_rfc_1071_computes_it() {
        // RFC 1071's example words 0001 f203 f4f5 f6f7: sum 0xddf2 (folded), checksum 0x220d.
        assert_eq!(
            internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
    }

    #[test]
    fn ixia_and_gigamon_read_back_and_reject_a_flipped_byte() {
        let (s, ns) = (1_700_000_000, 123_456_789);
        for (name, trailer, read) in [
            (
                "ixia",
                ixia_trailer(s, ns),
                ixia as fn(&[u8]) -> Option<(u64, u64)>,
            ),
            ("gigamon", gigamon_trailer(s, ns), gigamon),
        ] {
            let mut tail = vec![0x55; 7];
            tail.extend_from_slice(&trailer);
            assert_eq!(read(&tail), Some((s, ns)), "{name}");
            for i in 0..trailer.len() {
                let mut broken = tail.clone();
                broken[7 + i] ^= 0x01;
                assert_eq!(read(&broken), None, "{name}: byte {i} flipped");
            }
        }
    }
}
