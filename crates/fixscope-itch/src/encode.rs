//! Building MoldUDP64 packets and ITCH 5.0 messages from the specs' byte layouts (the
//! tests' feeds, the tshark cross-check's capture). An `Other` message is written as its
//! header and zeros up to its type's size.

use crate::itch50::{self, Header, Message};
use crate::moldudp64::{Session, END_OF_SESSION, HEARTBEAT};

fn header(out: &mut Vec<u8>, session: &[u8], sequence: u64, count: u16) {
    out.extend_from_slice(Session::new(session).as_bytes());
    out.extend_from_slice(&sequence.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
}

/// A downstream packet carrying `messages` from `sequence` (each block's length cut to 16
/// bits; more than 65,534 messages cannot be one packet).
pub fn downstream(session: &[u8], sequence: u64, messages: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + messages.iter().map(|m| 2 + m.len()).sum::<usize>());
    header(&mut out, session, sequence, messages.len() as u16);
    for m in messages {
        out.extend_from_slice(&(m.len() as u16).to_be_bytes());
        out.extend_from_slice(m);
    }
    out
}

/// A heartbeat: `next_sequence` is the next message's number.
pub fn heartbeat(session: &[u8], next_sequence: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    header(&mut out, session, next_sequence, HEARTBEAT);
    out
}

pub fn end_of_session(session: &[u8], next_sequence: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    header(&mut out, session, next_sequence, END_OF_SESSION);
    out
}

/// A Request Packet: retransmit `count` messages from `sequence`.
pub fn request(session: &[u8], sequence: u64, count: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    header(&mut out, session, sequence, count);
    out
}

fn itch_header(out: &mut Vec<u8>, h: &Header) {
    out.push(h.message_type);
    out.extend_from_slice(&h.stock_locate.to_be_bytes());
    out.extend_from_slice(&h.tracking_number.to_be_bytes());
    out.extend_from_slice(&h.timestamp_ns.to_be_bytes()[2..]);
}

/// The bytes of an ITCH 5.0 message (the header's type byte decides between `A` and
/// `F`'s layouts only through `attribution`).
pub fn message(m: &Message) -> Vec<u8> {
    let h = m.header();
    let mut out = Vec::with_capacity(64);
    itch_header(&mut out, &h);
    let u32b = |v: u32| v.to_be_bytes();
    match *m {
        Message::SystemEvent { event_code, .. } => out.push(event_code),
        Message::StockDirectory(d) => {
            out.extend_from_slice(&d.stock.0);
            out.push(d.market_category);
            out.push(d.financial_status);
            out.extend_from_slice(&u32b(d.round_lot_size));
            out.push(d.round_lots_only);
            out.push(d.issue_classification);
            out.extend_from_slice(&d.issue_sub_type);
            out.push(d.authenticity);
            out.push(d.short_sale_threshold);
            out.push(d.ipo_flag);
            out.push(d.luld_reference_price_tier);
            out.push(d.etp_flag);
            out.extend_from_slice(&u32b(d.etp_leverage_factor));
            out.push(d.inverse_indicator);
        }
        Message::AddOrder(a) => {
            out.extend_from_slice(&a.order_reference_number.to_be_bytes());
            out.push(a.side);
            out.extend_from_slice(&u32b(a.shares));
            out.extend_from_slice(&a.stock.0);
            out.extend_from_slice(&u32b(a.price));
            if let Some(mpid) = a.attribution {
                out.extend_from_slice(&mpid);
            }
        }
        Message::OrderExecuted {
            order_reference_number,
            executed_shares,
            match_number,
            ..
        } => {
            out.extend_from_slice(&order_reference_number.to_be_bytes());
            out.extend_from_slice(&u32b(executed_shares));
            out.extend_from_slice(&match_number.to_be_bytes());
        }
        Message::OrderExecutedWithPrice {
            order_reference_number,
            executed_shares,
            match_number,
            printable,
            execution_price,
            ..
        } => {
            out.extend_from_slice(&order_reference_number.to_be_bytes());
            out.extend_from_slice(&u32b(executed_shares));
            out.extend_from_slice(&match_number.to_be_bytes());
            out.push(printable);
            out.extend_from_slice(&u32b(execution_price));
        }
        Message::OrderCancel {
            order_reference_number,
            canceled_shares,
            ..
        } => {
            out.extend_from_slice(&order_reference_number.to_be_bytes());
            out.extend_from_slice(&u32b(canceled_shares));
        }
        Message::OrderDelete {
            order_reference_number,
            ..
        } => out.extend_from_slice(&order_reference_number.to_be_bytes()),
        Message::OrderReplace {
            original_order_reference_number,
            new_order_reference_number,
            shares,
            price,
            ..
        } => {
            out.extend_from_slice(&original_order_reference_number.to_be_bytes());
            out.extend_from_slice(&new_order_reference_number.to_be_bytes());
            out.extend_from_slice(&u32b(shares));
            out.extend_from_slice(&u32b(price));
        }
        Message::Trade(t) => {
            out.extend_from_slice(&t.order_reference_number.to_be_bytes());
            out.push(t.side);
            out.extend_from_slice(&u32b(t.shares));
            out.extend_from_slice(&t.stock.0);
            out.extend_from_slice(&u32b(t.price));
            out.extend_from_slice(&t.match_number.to_be_bytes());
        }
        Message::CrossTrade(c) => {
            out.extend_from_slice(&c.shares.to_be_bytes());
            out.extend_from_slice(&c.stock.0);
            out.extend_from_slice(&u32b(c.cross_price));
            out.extend_from_slice(&c.match_number.to_be_bytes());
            out.push(c.cross_type);
        }
        Message::BrokenTrade { match_number, .. } => {
            out.extend_from_slice(&match_number.to_be_bytes())
        }
        Message::Other { header } => {
            let size = itch50::expected_size(header.message_type).unwrap_or(out.len());
            out.resize(size.max(out.len()), 0);
        }
    }
    out
}

/// A header for a message of type `t`.
pub fn itch_header_of(t: u8, stock_locate: u16, timestamp_ns: u64) -> Header {
    Header {
        message_type: t,
        stock_locate,
        tracking_number: 0,
        timestamp_ns,
    }
}
