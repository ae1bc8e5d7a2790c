//! Which OUCH version a SoupBinTCP session speaks, read from its own messages.
//!
//! SoupBinTCP's login does not say (4.2 and 5.0 log in alike), so a connection recognised
//! by its login alone, with no `--protocol` naming its version, is read once one of its
//! data messages can be read by exactly one version, strictly:
//!
//! - OUCH 4.2: the message's length is its type's fixed length (4.2 has no optional
//!   fields), and its Order Token — 14 bytes of printable ASCII — is printable;
//! - OUCH 5.0: the length is the type's fixed part plus the Optional Appendage its own
//!   length field declares (exactly the fixed part where the type has none), and the
//!   appendage's elements fill it exactly.
//!
//! A message both versions read so (System Event is 10 bytes in both) or neither does
//! decides nothing: the next one is looked at. Nothing is guessed.

use crate::orders::Version;
use crate::soupbin::{self, SoupPacket};
use crate::{ouch42, ouch50};

/// The version the SoupBinTCP packet `frame` (length prefix included) can be read by
/// alone, if it is a data packet only one version reads.
pub fn version_of(frame: &[u8]) -> Option<Version> {
    let (message, request) = match soupbin::decode(frame).ok()? {
        SoupPacket::UnsequencedData { message } => (message, true),
        SoupPacket::SequencedData { message } => (message, false),
        _ => return None,
    };
    match (reads_as_42(message, request), reads_as_50(message, request)) {
        (true, false) => Some(Version::Ouch42),
        (false, true) => Some(Version::Ouch50),
        _ => None,
    }
}

/// Whether OUCH 4.2 reads `m` strictly: its type's length, and a printable token.
fn reads_as_42(m: &[u8], request: bool) -> bool {
    use ouch42::size::*;
    let Some(&t) = m.first() else {
        return false;
    };
    // (fixed length, where the 14-byte token starts)
    let shape = if request {
        match t {
            b'O' => (ENTER_ORDER, 1),
            b'U' => (REPLACE_ORDER, 1),
            b'X' => (CANCEL_ORDER, 1),
            b'M' => (MODIFY_ORDER, 1),
            _ => return false,
        }
    } else {
        match t {
            b'A' => (ACCEPTED, 9),
            b'U' => (REPLACED, 9),
            b'C' => (CANCELED, 9),
            b'D' => (AIQ_CANCELED, 9),
            b'E' => (EXECUTED, 9),
            b'B' => (BROKEN_TRADE, 9),
            b'K' => (PRICE_CORRECTION, 9),
            b'J' => (REJECTED, 9),
            b'P' => (CANCEL_PENDING, 9),
            b'I' => (CANCEL_REJECT, 9),
            b'M' => (ORDER_MODIFIED, 9),
            // System Event has no token: its length alone (10, as 5.0's) proves nothing.
            b'S' => return m.len() == SYSTEM_EVENT,
            _ => return false,
        }
    };
    let (len, token_at) = shape;
    m.len() == len
        && m[token_at..token_at + 14]
            .iter()
            .all(|c| (0x20..=0x7e).contains(c))
}

/// Whether OUCH 5.0 reads `m` strictly: its type's fixed part plus exactly the appendage
/// it declares (the length field is the fixed part's last two bytes), well formed.
fn reads_as_50(m: &[u8], request: bool) -> bool {
    use ouch50::size::*;
    let Some(&t) = m.first() else {
        return false;
    };
    // (fixed part, whether it ends with an appendage's length)
    let (fixed, appendage) = if request {
        match t {
            b'O' => (ENTER_ORDER, true),
            b'U' => (REPLACE_ORDER, true),
            b'X' => (CANCEL_ORDER, false),
            b'M' => (MODIFY_ORDER, false),
            _ => return false,
        }
    } else {
        match t {
            b'S' => (SYSTEM_EVENT, false),
            b'A' => (ACCEPTED, true),
            b'U' => (REPLACED, true),
            b'C' => (CANCELED, false),
            b'D' => (AIQ_CANCELED, false),
            b'E' => (EXECUTED, true),
            b'B' => (BROKEN_TRADE, false),
            b'J' => (REJECTED, false),
            b'P' => (CANCEL_PENDING, false),
            b'I' => (CANCEL_REJECT, false),
            b'M' => (ORDER_MODIFIED, false),
            _ => return false,
        }
    };
    if !appendage {
        return m.len() == fixed;
    }
    if m.len() < fixed {
        return false;
    }
    let declared = usize::from(u16::from_be_bytes([m[fixed - 2], m[fixed - 1]]));
    m.len() == fixed + declared && ouch50::Appendage { bytes: &m[fixed..] }.well_formed()
}
