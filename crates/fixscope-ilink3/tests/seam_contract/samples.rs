//! Sample iLink 3 messages with values set here, and each direction of a session
//! carrying them.

use fixscope_ilink3::encode;
use fixscope_ilink3::messages::{BusinessReject, Report, Request};
use fixscope_ilink3::schema;

pub const UUID: u64 = 1_733_000_000_000_001;
pub const FIRM: &[u8] = b"FRM01";
/// 2024-12-01T00:00:00Z in ns.
pub const T0: u64 = 1_733_011_200_000_000_000;

pub fn request(seq: u32, order_request_id: u64, order_id: Option<u64>) -> Request<'static> {
    Request {
        seq_num: seq,
        order_request_id,
        cl_ord_id: b"CL-0001",
        order_id,
        sending_time_ns: Some(T0 + u64::from(seq)),
        security_id: Some(42_000),
        side: Some(1),
        order_qty: Some(10),
        price: Some(4_512_250_000_000),
    }
}

pub fn nos(seq: u32, order_request_id: u64) -> Vec<u8> {
    encode::new_order(&request(seq, order_request_id, None))
}

pub fn replace(seq: u32, order_request_id: u64, order_id: u64) -> Vec<u8> {
    encode::replace(&request(seq, order_request_id, Some(order_id)))
}

pub fn cancel(seq: u32, order_request_id: u64, order_id: u64) -> Vec<u8> {
    let r = Request {
        price: None,
        order_qty: None,
        ..request(seq, order_request_id, Some(order_id))
    };
    encode::cancel(&r)
}

/// An execution report of `template_id` numbered `seq`, echoing `order_request_id`, of
/// the order `order_id`, with `leaves` contracts left of 10.
pub fn report(
    template_id: u16,
    seq: u32,
    order_request_id: Option<u64>,
    order_id: u64,
    leaves: u32,
) -> Report<'static> {
    Report {
        template_id,
        seq_num: seq,
        uuid: UUID,
        cl_ord_id: b"CL-0001",
        order_id: Some(order_id),
        order_request_id,
        poss_retrans: false,
        sending_time_ns: Some(T0 + 1_000 + u64::from(seq)),
        transact_time_ns: Some(T0 + 900 + u64::from(seq)),
        leaves_qty: Some(leaves),
        cum_qty: Some(10 - leaves),
        last_qty: Some(1),
        ord_status: Some(if leaves == 0 { 2 } else { 1 }),
        delay_to_time_ns: None,
    }
}

pub fn business_reject(seq: u32, ref_seq: u32) -> Vec<u8> {
    encode::business_reject(&BusinessReject {
        seq_num: seq,
        uuid: UUID,
        ref_seq_num: Some(ref_seq),
        poss_retrans: false,
        sending_time_ns: Some(T0 + 5_000),
    })
}

/// The client's side of a session: Negotiate, Establish, orders, keep-alives.
pub fn client_stream() -> Vec<Vec<u8>> {
    vec![
        encode::negotiate(UUID, FIRM, T0),
        encode::establish(UUID, FIRM, T0 + 1, 1),
        nos(1, 1001),
        replace(2, 1002, 7001),
        encode::sequence(UUID, 3),
        cancel(3, 1003, 7001),
        encode::retransmit_request(UUID, None, T0 + 9, 1, 2),
        encode::terminate(UUID, T0 + 10, 0),
    ]
}

/// CME's side: the answers, every execution report template, session messages.
pub fn host_stream() -> Vec<Vec<u8>> {
    use schema::*;
    let r = |t, seq, ori, leaves| encode::report(&report(t, seq, ori, 7001, leaves));
    vec![
        encode::negotiation_response(UUID, T0),
        encode::establishment_ack(UUID, T0 + 1, 1),
        r(execution_report_new_522::ID, 1, Some(1001), 10),
        r(execution_report_trade_outright_525::ID, 2, Some(1001), 9),
        r(execution_report_modify_531::ID, 3, Some(1002), 9),
        encode::sequence(UUID, 4),
        r(execution_report_pending_cancel_564::ID, 4, Some(1003), 9),
        r(execution_report_cancel_534::ID, 5, Some(1003), 0),
        r(execution_report_trade_spread_526::ID, 6, Some(1004), 0),
        r(execution_report_trade_spread_leg_527::ID, 7, None, 0),
        r(execution_report_status_532::ID, 8, Some(1004), 0),
        r(order_cancel_reject_535::ID, 9, Some(1005), 0),
        r(order_cancel_replace_reject_536::ID, 10, Some(1006), 0),
        r(execution_report_reject_523::ID, 11, Some(1007), 0),
        r(execution_report_elimination_524::ID, 12, Some(1008), 0),
        r(execution_report_pending_replace_565::ID, 13, Some(1009), 9),
        business_reject(14, 3),
        encode::retransmission(UUID, None, T0 + 9, 1, 2),
        encode::not_applied(UUID, 3, 1),
        encode::terminate(UUID, T0 + 10, 0),
    ]
}

pub fn concat(frames: &[Vec<u8>]) -> (Vec<u8>, usize) {
    (frames.concat(), frames.len())
}

/// Each direction as one stream, with its message count.
pub fn streams() -> Vec<(&'static str, (Vec<u8>, usize))> {
    vec![
        ("client", concat(&client_stream())),
        ("host", concat(&host_stream())),
    ]
}
