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
/// Written as a plain fold over `u8`s widened to `u32`, which the compiler vectorises; this
/// runs once per framed message on the hot path.
#[inline]
pub fn checksum(bytes: &[u8]) -> u8 {
    let mut sum: u32 = 0;
    for chunk in bytes.chunks(1 << 16) {
        sum = sum.wrapping_add(chunk.iter().map(|&b| b as u32).sum::<u32>());
    }
    (sum & 0xff) as u8
}
