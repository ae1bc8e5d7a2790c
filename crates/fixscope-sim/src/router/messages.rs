//! The messages the router writes: child orders to the venue (ids linked to the parent as
//! `--id-map` says) and responses to the parent (ExecutionReports, OrderCancelRejects).
//!
//! Only fields; the engine decides what to send and when.

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::tag;

use crate::args_router::IdMap;
use crate::sending_time::UtcClock;
use crate::session::Session;

pub const ON_BEHALF_OF_COMP_ID: u32 = 115;
pub const SECONDARY_CL_ORD_ID: u32 = 526;
pub const NO_HOPS: u32 = 627;
pub const HOP_COMP_ID: u32 = 628;
pub const HOP_SENDING_TIME: u32 = 629;
pub const HOP_REF_ID: u32 = 630;

/// A child request (D, F or G) to encode.
pub struct ChildMsg<'a> {
    pub msg_type: u8,
    pub id: &'a [u8],
    /// 41: the leg's current id (F/G).
    pub orig: &'a [u8],
    pub parent_id: &'a [u8],
    pub parent_sender: &'a [u8],
    pub parent_seq: u64,
    pub symbol: &'a [u8],
    pub side: &'a [u8],
    pub qty: u64,
    pub ord_type: &'a [u8],
    pub price: &'a [u8],
}

/// Appends child `m` to `out` on the venue session.
pub fn encode_child(
    map: IdMap,
    s: &mut Session,
    enc: &mut FixEncoder,
    clock: &mut UtcClock,
    out: &mut Vec<u8>,
    now_ns: u64,
    m: &ChildMsg<'_>,
) {
    let e = s.header(enc, clock, &[m.msg_type]);
    if map == IdMap::Hops {
        // Header fields: who we act for, and our hop (the parent's MsgSeqNum as reference).
        e.field(ON_BEHALF_OF_COMP_ID, m.parent_sender)
            .field(NO_HOPS, b"1")
            .field(HOP_COMP_ID, s.sender_comp_id())
            .field(HOP_SENDING_TIME, clock.cached())
            .field_uint(HOP_REF_ID, m.parent_seq);
    }
    e.field(tag::CL_ORD_ID, m.id);
    if m.msg_type != b'D' {
        e.field(tag::ORIG_CL_ORD_ID, m.orig);
    }
    if map == IdMap::Secondary {
        e.field(SECONDARY_CL_ORD_ID, m.parent_id);
    }
    e.field(55, m.symbol).field(54, m.side);
    if m.qty > 0 {
        e.field_uint(38, m.qty);
    }
    if !m.ord_type.is_empty() {
        e.field(40, m.ord_type);
    }
    if !m.price.is_empty() {
        e.field(44, m.price);
    }
    e.field(60, clock.cached());
    s.finish(enc, out, now_ns);
}

/// An ExecutionReport to a parent.
pub struct ParentEr<'a> {
    pub clordid: &'a [u8],
    pub orig: &'a [u8],
    pub order_id: u64,
    pub exec_id: u64,
    pub exec_type: u8,
    pub ord_status: u8,
    pub symbol: &'a [u8],
    pub side: &'a [u8],
    pub qty: u64,
    pub cum: u64,
    pub price: &'a [u8],
    pub last_qty: u64,
    pub last_px: &'a [u8],
    pub text: &'a str,
}

pub fn encode_er(
    s: &mut Session,
    enc: &mut FixEncoder,
    clock: &mut UtcClock,
    out: &mut Vec<u8>,
    now_ns: u64,
    r: &ParentEr<'_>,
) {
    let e = s.header(enc, clock, b"8");
    e.field_uint(37, r.order_id)
        .field(tag::CL_ORD_ID, r.clordid);
    if !r.orig.is_empty() {
        e.field(tag::ORIG_CL_ORD_ID, r.orig);
    }
    e.field_uint(17, r.exec_id);
    if s.is_fix42() {
        e.field(20, b"0");
    }
    e.field(tag::EXEC_TYPE, &[r.exec_type])
        .field(tag::ORD_STATUS, &[r.ord_status])
        .field(55, r.symbol)
        .field(54, r.side)
        .field_uint(38, r.qty);
    if !r.price.is_empty() {
        e.field(44, r.price);
    }
    if r.last_qty > 0 {
        e.field_uint(32, r.last_qty).field(31, r.last_px);
    }
    let leaves = if matches!(r.ord_status, b'2' | b'4' | b'8' | b'C') {
        0
    } else {
        r.qty.saturating_sub(r.cum)
    };
    e.field_uint(151, leaves).field_uint(14, r.cum);
    if r.cum > 0 && !r.price.is_empty() {
        e.field(6, r.price);
    } else {
        e.field(6, b"0");
    }
    e.field(60, clock.cached());
    if r.ord_status == b'8' {
        e.field(103, b"99");
    }
    if !r.text.is_empty() {
        e.field_str(58, r.text);
    }
    s.finish(enc, out, now_ns);
}

/// OrderCancelReject (35=9) of a parent F (`msg_type` b'F') or G.
#[allow(clippy::too_many_arguments)]
pub fn encode_cancel_reject(
    s: &mut Session,
    enc: &mut FixEncoder,
    clock: &mut UtcClock,
    out: &mut Vec<u8>,
    now_ns: u64,
    clordid: &[u8],
    orig: &[u8],
    msg_type: u8,
    text: &str,
) {
    let to: &[u8] = if msg_type == b'F' { b"1" } else { b"2" };
    let e = s.header(enc, clock, b"9");
    e.field(37, b"NONE")
        .field(tag::CL_ORD_ID, clordid)
        .field(tag::ORIG_CL_ORD_ID, orig)
        .field(tag::ORD_STATUS, b"8")
        .field(434, to)
        .field(102, b"1");
    if !text.is_empty() {
        e.field_str(58, text);
    }
    s.finish(enc, out, now_ns);
}
