//! A request (NewOrderSingle, OrderCancelRequest, OrderCancelReplaceRequest) as the
//! exchange reads it on arrival: its fields into its slot, and why a new order is invalid.
//!
//! Apart from the engine, which decides what to do with it and when.

use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::orders::{Slot, FORCED_ORDER};
use super::tags::{ACCOUNT, EX_DESTINATION, ORDER_QTY, PRICE, SIDE, SYMBOL};
use crate::uint_field::parse_uint;

/// Reads request `msg`'s fields into slot `s` (appending to its buffers, which the caller
/// hands over empty); true when it is a PossResend (97=Y).
pub fn read_request(s: &mut Slot, msg: &[u8]) -> bool {
    let mut poss_resend = false;
    for (tg, v) in Fields::new(msg) {
        match tg {
            tag::CL_ORD_ID => s.clordid.extend_from_slice(v),
            tag::ORIG_CL_ORD_ID => s.orig_clordid.extend_from_slice(v),
            tag::MSG_SEQ_NUM => s.msg_seq = parse_uint(v).unwrap_or(0),
            SYMBOL => s.symbol.extend_from_slice(v),
            SIDE => s.side = v.first().copied().unwrap_or(0),
            ORDER_QTY => s.qty = parse_qty(v),
            PRICE => s.price.extend_from_slice(v),
            ACCOUNT => s.account.extend_from_slice(v),
            EX_DESTINATION => s.venue.extend_from_slice(v),
            97 => poss_resend = v == b"Y",
            _ => {}
        }
    }
    poss_resend
}

/// Why the NewOrderSingle read into `s` will be rejected when its ack is due (a missing
/// or bad field, or `--order-reject-every`), if it will.
pub fn new_order_reject(s: &Slot) -> Option<&'static str> {
    if s.clordid.is_empty() {
        Some("missing ClOrdID (11)")
    } else if s.symbol.is_empty() {
        Some("missing Symbol (55)")
    } else if !matches!(s.side, b'1'..=b'9') {
        Some("bad Side (54)")
    } else if s.qty == 0 {
        Some("bad OrderQty (38)")
    } else if s.forced == FORCED_ORDER {
        Some("rejected (--order-reject-every)")
    } else {
        None
    }
}

/// Parses an OrderQty; a decimal part is ignored (the simulator trades whole units).
fn parse_qty(v: &[u8]) -> u64 {
    let int = v.split(|&b| b == b'.').next().unwrap_or(v);
    parse_uint(int).unwrap_or(0)
}
