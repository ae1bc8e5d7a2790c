//! FIX on the protocol seam (fixscope-protocol): framing of a byte stream into messages
//! (`framing`), reading fields (`message`), the facts the correlator reads in one pass
//! (`facts`, `key`, `orders`) and building messages (`encode`, for the simulator and the
//! tests). The core above still takes `MessageFacts` itself and runs FIX's session layer
//! (`session`): they go behind the seam's neutral order message as it grows
//! (docs/architecture.md, "Adding a protocol").

pub mod encode;
pub mod facts;
pub mod framing;
pub mod key;
pub mod message;
pub mod orders;
mod scan;

/// FIX on the seam: a connection whose first bytes are `8=FIX` (FIX.4.x and FIXT.1.1).
pub struct Fix;

impl fixscope_protocol::Protocol for Fix {
    const NAME: &'static str = "fix";
    type Framer = framing::StreamFramer;

    fn recognise(first_bytes: &[u8]) -> fixscope_protocol::Recognition {
        use fixscope_protocol::Recognition;
        const BEGIN: &[u8] = b"8=FIX";
        let n = first_bytes.len().min(BEGIN.len());
        if first_bytes[..n] != BEGIN[..n] {
            Recognition::No
        } else if n < BEGIN.len() {
            Recognition::NeedMore
        } else {
            Recognition::Yes
        }
    }
}

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
    pub const EXEC_TRANS_TYPE: u32 = 20;
    pub const ORIG_CL_ORD_ID: u32 = 41;
    pub const SYMBOL: u32 = 55;
    pub const SIDE: u32 = 54;
    pub const ACCOUNT: u32 = 1;
    pub const SENDER_COMP_ID: u32 = 49;
    pub const TARGET_COMP_ID: u32 = 56;
    pub const ORD_STATUS: u32 = 39;
    pub const EXEC_TYPE: u32 = 150;
    pub const BEGIN_SEQ_NO: u32 = 7;
    pub const END_SEQ_NO: u32 = 16;
    pub const NEW_SEQ_NO: u32 = 36;
    pub const POSS_DUP_FLAG: u32 = 43;
    pub const REF_SEQ_NUM: u32 = 45;
    pub const POSS_RESEND: u32 = 97;
    pub const ON_BEHALF_OF_COMP_ID: u32 = 115;
    pub const DELIVER_TO_COMP_ID: u32 = 128;
    pub const HEART_BT_INT: u32 = 108;
    pub const TEST_REQ_ID: u32 = 112;
    pub const GAP_FILL_FLAG: u32 = 123;
    pub const RESET_SEQ_NUM_FLAG: u32 = 141;
    pub const SESSION_REJECT_REASON: u32 = 373;
    pub const REF_MSG_TYPE: u32 = 372;
    pub const MULTI_LEG_REPORTING_TYPE: u32 = 442;
    pub const BUSINESS_REJECT_REF_ID: u32 = 379;
    pub const BUSINESS_REJECT_REASON: u32 = 380;
}

/// A framed message's BeginString (8) value: framing checked that it starts `8=` and that
/// the value ends with SOH within a few bytes.
pub fn begin_string(message: &[u8]) -> &[u8] {
    let value = message.get(2..).unwrap_or_default();
    let end = message::find_soh(value).unwrap_or(value.len());
    &value[..end]
}

/// FIX fields `--by` takes by name as well as by number (FIX 4.4's names), for the
/// orders' fields one groups by.
pub const FIELD_NAMES: &[(&str, u32)] = &[
    ("Account", 1),
    ("Currency", 15),
    ("HandlInst", 21),
    ("OrdType", 40),
    ("SecurityID", 48),
    ("SenderCompID", 49),
    ("SenderSubID", 50),
    ("Side", 54),
    ("Symbol", 55),
    ("TargetCompID", 56),
    ("TargetSubID", 57),
    ("TimeInForce", 59),
    ("ExDestination", 100),
    ("ClientID", 109),
    ("OnBehalfOfCompID", 115),
    ("DeliverToCompID", 128),
    ("SecurityType", 167),
    ("SecurityExchange", 207),
    ("TradingSessionID", 336),
    ("OrderCapacity", 528),
];

/// The tag of a FIX field named `name` in [`FIELD_NAMES`] (case-insensitive).
pub fn tag_of_name(name: &str) -> Option<u32> {
    FIELD_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
        .map(|&(_, t)| t)
}

/// A comma-separated list of distinct tag numbers, 1 to `max` of them (`--key`, `--by`).
pub fn parse_tag_list(s: &str, max: usize) -> Result<Vec<u32>, String> {
    let mut tags = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part.parse::<u32>() {
            Ok(t) if t > 0 => {
                if tags.contains(&t) {
                    return Err(format!("tag {t} appears twice"));
                }
                tags.push(t)
            }
            _ => return Err(format!("'{part}' is not a FIX tag number")),
        }
    }
    if tags.is_empty() || tags.len() > max {
        return Err(format!("1 to {max} tags"));
    }
    Ok(tags)
}

/// A FIX unsigned integer field (digits only, at most 10 of them, fits u32).
pub fn parse_u32(value: &[u8]) -> Option<u32> {
    if value.is_empty() || value.len() > 10 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(b - b'0');
    }
    u32::try_from(n).ok()
}

/// Sum of bytes modulo 256, as FIX's CheckSum (10) defines it.
///
/// Runs over every byte of every framed message on the hot path: 16 bytes per
/// instruction where the CPU allows ([`scan::byte_sum`]).
#[inline]
pub fn checksum(bytes: &[u8]) -> u8 {
    (scan::byte_sum(bytes) & 0xff) as u8
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
