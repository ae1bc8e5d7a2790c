//! CME iLink 3 messages the iLink 3 tests send (ilink3_pcap.rs, ilink3_live.rs), laid out
//! by the protocol crate's encoder from the schema's generated offsets.

#![allow(dead_code)]

use fixscope_ilink3::encode;
use fixscope_ilink3::messages::{BusinessReject, Report, Request};
use fixscope_ilink3::schema;

pub const UUID: u64 = 1_733_000_000_000_001;
pub const FIRM: &[u8] = b"FRM01";

/// A request numbered `seq` under OrderRequestID `id` (of order `order_id` for a
/// replace or cancel), sent at `sending_ns` by the application's clock.
pub fn request(seq: u32, id: u64, order_id: Option<u64>, sending_ns: u64) -> Request<'static> {
    Request {
        seq_num: seq,
        order_request_id: id,
        cl_ord_id: b"CL-0001",
        order_id,
        sending_time_ns: Some(sending_ns),
        security_id: Some(42_000),
        side: Some(1),
        order_qty: Some(3),
        price: Some(4_512_250_000_000),
    }
}

pub fn new_order(seq: u32, id: u64, sending_ns: u64) -> Vec<u8> {
    encode::new_order(&request(seq, id, None, sending_ns))
}

pub fn cancel(seq: u32, id: u64, order_id: u64, sending_ns: u64) -> Vec<u8> {
    let r = Request {
        price: None,
        order_qty: None,
        ..request(seq, id, Some(order_id), sending_ns)
    };
    encode::cancel(&r)
}

pub fn replace(seq: u32, id: u64, order_id: u64, sending_ns: u64) -> Vec<u8> {
    encode::replace(&request(seq, id, Some(order_id), sending_ns))
}

/// An execution report of `template_id` numbered `seq` by CME, echoing OrderRequestID
/// `id`, of order `order_id` with `leaves` of 3 contracts left.
pub fn report(template_id: u16, seq: u32, id: u64, order_id: u64, leaves: u32) -> Report<'static> {
    Report {
        template_id,
        seq_num: seq,
        uuid: UUID,
        cl_ord_id: b"CL-0001",
        order_id: Some(order_id),
        order_request_id: Some(id),
        poss_retrans: false,
        sending_time_ns: None,
        transact_time_ns: None,
        leaves_qty: Some(leaves),
        cum_qty: Some(3 - leaves),
        last_qty: Some(1),
        ord_status: Some(if leaves == 0 { 2 } else { 1 }),
        delay_to_time_ns: None,
    }
}

pub const NEW: u16 = schema::execution_report_new_522::ID;
pub const TRADE: u16 = schema::execution_report_trade_outright_525::ID;
pub const CANCELED: u16 = schema::execution_report_cancel_534::ID;
pub const MODIFIED: u16 = schema::execution_report_modify_531::ID;
pub const ELIMINATED: u16 = schema::execution_report_elimination_524::ID;

pub fn business_reject(seq: u32, ref_seq: u32) -> Vec<u8> {
    encode::business_reject(&BusinessReject {
        seq_num: seq,
        uuid: UUID,
        ref_seq_num: Some(ref_seq),
        poss_retrans: false,
        sending_time_ns: None,
    })
}
