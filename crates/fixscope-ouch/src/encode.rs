//! Building SoupBinTCP packets and OUCH messages from the spec's byte layouts (the
//! tests' streams, the tshark cross-check's capture). Alpha fields are space padded on the
//! right (cut if longer), numeric SoupBinTCP fields space padded on the left; a message
//! type the encoders do not know is written as its `Other` bytes.

use crate::soupbin::packet_type;
use crate::{ouch42, ouch50};

/// A logical packet: 2-byte big-endian length (of type + payload), the type, the payload.
/// A payload over 65,534 bytes cannot be one: its length field is cut to 16 bits.
pub fn packet(packet_type: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() + 1) as u16;
    let mut out = Vec::with_capacity(payload.len() + 3);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(packet_type);
    out.extend_from_slice(payload);
    out
}

/// `value` space padded on the right to `width` bytes.
fn alpha(out: &mut Vec<u8>, value: &[u8], width: usize) {
    let n = value.len().min(width);
    out.extend_from_slice(&value[..n]);
    out.resize(out.len() + width - n, b' ');
}

/// A number in ASCII, space padded on the left to 20 bytes (blank: `None`).
fn numeric20(out: &mut Vec<u8>, value: Option<u64>) {
    let digits = value.map(|v| v.to_string()).unwrap_or_default();
    out.resize(out.len() + 20 - digits.len(), b' ');
    out.extend_from_slice(digits.as_bytes());
}

/// `L`: Login Request.
pub fn login_request(
    username: &[u8],
    password: &[u8],
    session: &[u8],
    sequence: Option<u64>,
) -> Vec<u8> {
    let mut p = Vec::new();
    alpha(&mut p, username, 6);
    alpha(&mut p, password, 10);
    alpha(&mut p, session, 10);
    numeric20(&mut p, sequence);
    packet(packet_type::LOGIN_REQUEST, &p)
}

/// `A`: Login Accepted.
pub fn login_accepted(session: &[u8], next_sequence: u64) -> Vec<u8> {
    let mut p = Vec::new();
    alpha(&mut p, session, 10);
    numeric20(&mut p, Some(next_sequence));
    packet(packet_type::LOGIN_ACCEPTED, &p)
}

/// `J`: Login Rejected.
pub fn login_rejected(reason: u8) -> Vec<u8> {
    packet(packet_type::LOGIN_REJECTED, &[reason])
}

/// An OUCH 4.2 request in a `U` packet, a response in an `S` packet.
pub fn ouch42_packet(message: &ouch42::Message<'_>) -> Vec<u8> {
    use ouch42::Message::*;
    let t = match message {
        EnterOrder(_) | ReplaceOrder(_) | CancelOrder { .. } | ModifyOrder { .. } => {
            packet_type::UNSEQUENCED_DATA
        }
        _ => packet_type::SEQUENCED_DATA,
    };
    packet(t, &ouch42_message(message))
}

/// An OUCH 5.0 request in a `U` packet, a response in an `S` packet.
pub fn ouch50_packet(message: &ouch50::Message<'_>) -> Vec<u8> {
    use ouch50::Message::*;
    let t = match message {
        EnterOrder(_) | ReplaceOrder(_) | CancelOrder { .. } | ModifyOrder { .. } => {
            packet_type::UNSEQUENCED_DATA
        }
        _ => packet_type::SEQUENCED_DATA,
    };
    packet(t, &ouch50_message(message))
}

/// Big-endian fields appended in order.
struct W(Vec<u8>);

impl W {
    fn new(t: u8) -> Self {
        W(vec![t])
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn alpha(mut self, v: &[u8], width: usize) -> Self {
        alpha(&mut self.0, v, width);
        self
    }
    /// An appendage: its length (u16), then its bytes.
    fn appendage(self, a: &ouch50::Appendage<'_>) -> Self {
        let mut w = self.u16(a.bytes.len() as u16);
        w.0.extend_from_slice(a.bytes);
        w
    }
}

fn accepted42(w: W, a: &ouch42::Accepted<'_>) -> W {
    w.u64(a.timestamp_ns)
        .alpha(a.token, 14)
        .u8(a.side)
        .u32(a.shares)
        .alpha(a.stock, 8)
        .u32(a.price)
        .u32(a.time_in_force)
        .alpha(a.firm, 4)
        .u8(a.display)
        .u64(a.order_reference_number)
        .u8(a.capacity)
        .u8(a.iso_eligibility)
        .u32(a.min_quantity)
        .u8(a.cross_type)
        .u8(a.order_state)
}

/// An OUCH 4.2 message's bytes (type byte first).
pub fn ouch42_message(message: &ouch42::Message<'_>) -> Vec<u8> {
    use ouch42::Message::*;
    let w = match *message {
        EnterOrder(o) => W::new(b'O')
            .alpha(o.token, 14)
            .u8(o.side)
            .u32(o.shares)
            .alpha(o.stock, 8)
            .u32(o.price)
            .u32(o.time_in_force)
            .alpha(o.firm, 4)
            .u8(o.display)
            .u8(o.capacity)
            .u8(o.iso_eligibility)
            .u32(o.min_quantity)
            .u8(o.cross_type)
            .u8(o.customer_type),
        ReplaceOrder(r) => W::new(b'U')
            .alpha(r.existing_token, 14)
            .alpha(r.replacement_token, 14)
            .u32(r.shares)
            .u32(r.price)
            .u32(r.time_in_force)
            .u8(r.display)
            .u8(r.iso_eligibility)
            .u32(r.min_quantity),
        CancelOrder { token, shares } => W::new(b'X').alpha(token, 14).u32(shares),
        ModifyOrder {
            token,
            side,
            shares,
        } => W::new(b'M').alpha(token, 14).u8(side).u32(shares),
        SystemEvent {
            timestamp_ns,
            event_code,
        } => W::new(b'S').u64(timestamp_ns).u8(event_code),
        Accepted(a) => accepted42(W::new(b'A'), &a).u8(a.bbo_weight_indicator),
        Replaced(r) => accepted42(W::new(b'U'), &r.accepted)
            .alpha(r.previous_token, 14)
            .u8(r.accepted.bbo_weight_indicator),
        Canceled {
            timestamp_ns,
            token,
            decrement_shares,
            reason,
        } => W::new(b'C')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u32(decrement_shares)
            .u8(reason),
        AiqCanceled {
            timestamp_ns,
            token,
            decrement_shares,
            reason,
            quantity_prevented_from_trading,
            execution_price,
            liquidity_flag,
        } => W::new(b'D')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u32(decrement_shares)
            .u8(reason)
            .u32(quantity_prevented_from_trading)
            .u32(execution_price)
            .u8(liquidity_flag),
        Executed {
            timestamp_ns,
            token,
            executed_shares,
            execution_price,
            liquidity_flag,
            match_number,
        } => W::new(b'E')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u32(executed_shares)
            .u32(execution_price)
            .u8(liquidity_flag)
            .u64(match_number),
        BrokenTrade {
            timestamp_ns,
            token,
            match_number,
            reason,
        } => W::new(b'B')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u64(match_number)
            .u8(reason),
        PriceCorrection {
            timestamp_ns,
            token,
            match_number,
            new_execution_price,
            reason,
        } => W::new(b'K')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u64(match_number)
            .u32(new_execution_price)
            .u8(reason),
        Rejected {
            timestamp_ns,
            token,
            reason,
        } => W::new(b'J').u64(timestamp_ns).alpha(token, 14).u8(reason),
        CancelPending {
            timestamp_ns,
            token,
        } => W::new(b'P').u64(timestamp_ns).alpha(token, 14),
        CancelReject {
            timestamp_ns,
            token,
        } => W::new(b'I').u64(timestamp_ns).alpha(token, 14),
        OrderModified {
            timestamp_ns,
            token,
            side,
            shares,
        } => W::new(b'M')
            .u64(timestamp_ns)
            .alpha(token, 14)
            .u8(side)
            .u32(shares),
        Other { bytes, .. } => W(bytes.to_vec()),
    };
    w.0
}

fn accepted50(w: W, a: &ouch50::Accepted<'_>) -> W {
    w.u8(a.side)
        .u32(a.quantity)
        .alpha(a.symbol, 8)
        .u64(a.price)
        .u8(a.time_in_force)
        .u8(a.display)
        .u64(a.order_reference_number)
        .u8(a.capacity)
        .u8(a.iso_eligibility)
        .u8(a.cross_type)
        .u8(a.order_state)
        .alpha(a.cl_ord_id, 14)
        .appendage(&a.appendage)
}

/// An OUCH 5.0 message's bytes (type byte first).
pub fn ouch50_message(message: &ouch50::Message<'_>) -> Vec<u8> {
    use ouch50::Message::*;
    let w = match *message {
        EnterOrder(o) => W::new(b'O')
            .u32(o.user_ref_num)
            .u8(o.side)
            .u32(o.quantity)
            .alpha(o.symbol, 8)
            .u64(o.price)
            .u8(o.time_in_force)
            .u8(o.display)
            .u8(o.capacity)
            .u8(o.iso_eligibility)
            .u8(o.cross_type)
            .alpha(o.cl_ord_id, 14)
            .appendage(&o.appendage),
        ReplaceOrder(r) => W::new(b'U')
            .u32(r.orig_user_ref_num)
            .u32(r.user_ref_num)
            .u32(r.quantity)
            .u64(r.price)
            .u8(r.time_in_force)
            .u8(r.display)
            .u8(r.iso_eligibility)
            .alpha(r.cl_ord_id, 14)
            .appendage(&r.appendage),
        CancelOrder {
            user_ref_num,
            quantity,
        } => W::new(b'X').u32(user_ref_num).u32(quantity),
        ModifyOrder {
            user_ref_num,
            side,
            quantity,
        } => W::new(b'M').u32(user_ref_num).u8(side).u32(quantity),
        SystemEvent {
            timestamp_ns,
            event_code,
        } => W::new(b'S').u64(timestamp_ns).u8(event_code),
        Accepted(a) => accepted50(W::new(b'A').u64(a.timestamp_ns).u32(a.user_ref_num), &a),
        Replaced {
            orig_user_ref_num,
            accepted: a,
        } => accepted50(
            W::new(b'U')
                .u64(a.timestamp_ns)
                .u32(orig_user_ref_num)
                .u32(a.user_ref_num),
            &a,
        ),
        Canceled {
            timestamp_ns,
            user_ref_num,
            quantity,
            reason,
        } => W::new(b'C')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u32(quantity)
            .u8(reason),
        AiqCanceled {
            timestamp_ns,
            user_ref_num,
            decrement_shares,
            reason,
            quantity_prevented_from_trading,
            execution_price,
            liquidity_flag,
        } => W::new(b'D')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u32(decrement_shares)
            .u8(reason)
            .u32(quantity_prevented_from_trading)
            .u64(execution_price)
            .u8(liquidity_flag),
        Executed {
            timestamp_ns,
            user_ref_num,
            quantity,
            price,
            liquidity_flag,
            match_number,
            appendage,
        } => W::new(b'E')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u32(quantity)
            .u64(price)
            .u8(liquidity_flag)
            .u64(match_number)
            .appendage(&appendage),
        BrokenTrade {
            timestamp_ns,
            user_ref_num,
            match_number,
            reason,
            cl_ord_id,
        } => W::new(b'B')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u64(match_number)
            .u8(reason)
            .alpha(cl_ord_id, 14),
        Rejected {
            timestamp_ns,
            user_ref_num,
            reason,
            cl_ord_id,
        } => W::new(b'J')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u16(reason)
            .alpha(cl_ord_id, 14),
        CancelPending {
            timestamp_ns,
            user_ref_num,
        } => W::new(b'P').u64(timestamp_ns).u32(user_ref_num),
        CancelReject {
            timestamp_ns,
            user_ref_num,
        } => W::new(b'I').u64(timestamp_ns).u32(user_ref_num),
        OrderModified {
            timestamp_ns,
            user_ref_num,
            side,
            quantity,
        } => W::new(b'M')
            .u64(timestamp_ns)
            .u32(user_ref_num)
            .u8(side)
            .u32(quantity),
        Other { bytes, .. } => W(bytes.to_vec()),
    };
    w.0
}

/// An appendage's bytes from (tag, value) elements.
pub fn appendage_bytes(elements: &[(u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, value) in elements {
        out.push((value.len() + 1) as u8);
        out.push(*tag);
        out.extend_from_slice(value);
    }
    out
}
