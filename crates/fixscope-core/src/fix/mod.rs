//! FIX protocol: framing of a byte stream into messages, reading fields, and building
//! messages (for the simulator and the tests).

pub mod encode;
pub mod framing;
pub mod message;

/// The field separator.
pub const SOH: u8 = 0x01;

/// Tags fixscope reads.
pub mod tag {
    pub const BEGIN_STRING: u32 = 8;
    pub const BODY_LENGTH: u32 = 9;
    pub const CHECKSUM: u32 = 10;
    pub const CL_ORD_ID: u32 = 11;
    pub const MSG_SEQ_NUM: u32 = 34;
    pub const MSG_TYPE: u32 = 35;
    pub const ORIG_CL_ORD_ID: u32 = 41;
    pub const SENDER_COMP_ID: u32 = 49;
    pub const TARGET_COMP_ID: u32 = 56;
    pub const ORD_STATUS: u32 = 39;
    pub const EXEC_TYPE: u32 = 150;
}

/// Sum of bytes modulo 256, as FIX's CheckSum (10) defines it.
///
/// Runs once per framed message on the hot path, so it adds 8 bytes at a time: each u64
/// word is split into four 16-bit lanes of byte pairs, accumulated for at most 128 words
/// (128 × 2 × 255 < 65536, so no lane overflows into its neighbour) and then folded.
#[inline]
pub fn checksum(bytes: &[u8]) -> u8 {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    let mut total: u64 = 0;
    let mut words = bytes.chunks_exact(8);
    loop {
        let mut lanes: u64 = 0;
        let mut n = 0;
        for word in words.by_ref().take(128) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let x = u64::from_le_bytes(w);
            lanes += (x & LOW_BYTES) + ((x >> 8) & LOW_BYTES);
            n += 1;
        }
        total +=
            (lanes & 0xffff) + ((lanes >> 16) & 0xffff) + ((lanes >> 32) & 0xffff) + (lanes >> 48);
        if n < 128 {
            break;
        }
    }
    let tail: u64 = words.remainder().iter().map(|&b| b as u64).sum();
    ((total + tail) & 0xff) as u8
}

#[cfg(test)]
mod tests {
    #[test]
    fn checksum_matches_a_plain_sum_for_every_length() {
        let bytes: Vec<u8> = (0..5000u32)
            .map(|i| (i * 7919 % 251) as u8 | 0x80)
            .collect();
        for len in (0..100).chain([1023, 1024, 1025, 2047, 2048, 4999, 5000]) {
            let plain = bytes[..len].iter().map(|&b| b as u64).sum::<u64>() % 256;
            assert_eq!(super::checksum(&bytes[..len]) as u64, plain, "length {len}");
        }
        let all_ff = vec![0xffu8; 4096];
        assert_eq!(super::checksum(&all_ff) as u64, (4096 * 255) % 256);
    }
}
