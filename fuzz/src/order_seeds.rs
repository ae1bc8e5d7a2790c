//! Seeds of the order-protocol targets, built with each crate's encoder: whole OUCH 4.2 and
//! 5.0 sessions over SoupBinTCP and an iLink 3 session over FIXP — logins, orders, acks,
//! fills, cancels, replays after a re-login, gaps, holes in the TCP stream, segments cut
//! inside a header — as [`crate::script::segments_script`] conversations.

use fixscope_ilink3::encode as il;
use fixscope_ilink3::messages::{BusinessReject, Report, Request};
use fixscope_ilink3::schema as ils;
use fixscope_ouch::encode::{self as oe, ouch42_packet, ouch50_packet};
use fixscope_ouch::ouch42 as o42;
use fixscope_ouch::ouch50::{self as o50, Appendage};

use crate::script::segments_script;

const C: usize = 0;
const H: usize = 1;
const TS: u64 = 34_200_000_000_001;

/// One packet per segment, each `(direction, bytes)`.
fn one_per_segment(packets: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let segs: Vec<(usize, bool, &[u8])> = packets
        .iter()
        .map(|(d, p)| (*d, false, p.as_slice()))
        .collect();
    segments_script(&segs)
}

fn accepted42(token: &'static [u8], shares: u32) -> o42::Accepted<'static> {
    o42::Accepted {
        timestamp_ns: TS,
        token,
        side: b'B',
        shares,
        stock: b"AAPL",
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        order_reference_number: 77_000_001,
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        order_state: b'L',
        bbo_weight_indicator: b'2',
    }
}

fn enter42(token: &'static [u8]) -> Vec<u8> {
    ouch42_packet(&o42::Message::EnterOrder(o42::EnterOrder {
        token,
        side: b'B',
        shares: 300,
        stock: b"AAPL",
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        customer_type: b'R',
    }))
}

/// An OUCH 4.2 session: every request type and response type, session packets.
fn ouch42_session() -> Vec<(usize, Vec<u8>)> {
    let t1 = b"ORD00000000001";
    let t2 = b"ORD00000000002";
    let t3 = b"ORD00000000003";
    let s = |m: o42::Message<'_>| ouch42_packet(&m);
    vec![
        (C, oe::login_request(b"USER01", b"pw", b"", Some(1))),
        (H, oe::login_accepted(b"SESSION042", 1)),
        (
            H,
            s(o42::Message::SystemEvent {
                timestamp_ns: TS,
                event_code: b'S',
            }),
        ),
        (C, enter42(t1)),
        (H, s(o42::Message::Accepted(accepted42(t1, 300)))),
        (
            C,
            s(o42::Message::ReplaceOrder(o42::ReplaceOrder {
                existing_token: t1,
                replacement_token: t2,
                shares: 200,
                price: 1_894_900,
                time_in_force: 99_999,
                display: b'Y',
                iso_eligibility: b'N',
                min_quantity: 0,
            })),
        ),
        (
            H,
            s(o42::Message::Replaced(o42::Replaced {
                accepted: accepted42(t2, 200),
                previous_token: t1,
            })),
        ),
        (
            H,
            s(o42::Message::Executed {
                timestamp_ns: TS + 9,
                token: t2,
                executed_shares: 100,
                execution_price: 1_894_900,
                liquidity_flag: b'A',
                match_number: 5_550_001,
            }),
        ),
        (
            H,
            s(o42::Message::BrokenTrade {
                timestamp_ns: TS + 10,
                token: t2,
                match_number: 5_550_001,
                reason: b'E',
            }),
        ),
        (
            H,
            s(o42::Message::PriceCorrection {
                timestamp_ns: TS + 11,
                token: t2,
                match_number: 5_550_001,
                new_execution_price: 1_894_800,
                reason: b'E',
            }),
        ),
        (C, oe::packet(b'R', b"")),
        (H, oe::packet(b'H', b"")),
        (
            C,
            s(o42::Message::ModifyOrder {
                token: t2,
                side: b'S',
                shares: 50,
            }),
        ),
        (
            H,
            s(o42::Message::OrderModified {
                timestamp_ns: TS + 12,
                token: t2,
                side: b'S',
                shares: 50,
            }),
        ),
        (
            C,
            s(o42::Message::CancelOrder {
                token: t2,
                shares: 0,
            }),
        ),
        (
            H,
            s(o42::Message::CancelPending {
                timestamp_ns: TS + 13,
                token: t2,
            }),
        ),
        (
            H,
            s(o42::Message::CancelReject {
                timestamp_ns: TS + 14,
                token: t2,
            }),
        ),
        (
            C,
            s(o42::Message::CancelOrder {
                token: t2,
                shares: 0,
            }),
        ),
        (
            H,
            s(o42::Message::Canceled {
                timestamp_ns: TS + 20,
                token: t2,
                decrement_shares: 100,
                reason: b'U',
            }),
        ),
        (C, enter42(t3)),
        (
            H,
            s(o42::Message::AiqCanceled {
                timestamp_ns: TS + 21,
                token: t3,
                decrement_shares: 300,
                reason: b'Q',
                quantity_prevented_from_trading: 300,
                execution_price: 1_895_000,
                liquidity_flag: b'A',
            }),
        ),
        (C, enter42(b"ORD9")),
        (
            H,
            s(o42::Message::Rejected {
                timestamp_ns: TS + 30,
                token: b"ORD9",
                reason: b'S',
            }),
        ),
        (H, oe::packet(b'+', b"debug text")),
        (C, oe::packet(b'O', b"")),
        (H, oe::packet(b'Z', b"")),
    ]
}

/// A re-login on the same connection: a replay of what was seen, a gap, a recovery.
fn ouch42_relogin() -> Vec<(usize, Vec<u8>)> {
    let exec = |token: &'static [u8], n: u64| {
        ouch42_packet(&o42::Message::Executed {
            timestamp_ns: TS + n,
            token,
            executed_shares: 10,
            execution_price: 1_895_000,
            liquidity_flag: b'A',
            match_number: n,
        })
    };
    let t = b"ORD00000000001";
    let mut out = vec![
        (
            C,
            oe::login_request(b"USER01", b"pw", b"SESSION042", Some(1)),
        ),
        (H, oe::login_accepted(b"SESSION042", 1)),
        (C, enter42(t)),
        (
            H,
            ouch42_packet(&o42::Message::Accepted(accepted42(t, 300))),
        ),
        (H, exec(t, 2)),
        (H, exec(t, 3)),
        (
            C,
            oe::login_request(b"USER01", b"pw", b"SESSION042", Some(2)),
        ),
        (H, oe::login_accepted(b"SESSION042", 2)),
        (H, exec(t, 2)),
        (H, exec(t, 3)),
        (H, exec(t, 4)),
        // Skips 5..=9.
        (H, oe::login_accepted(b"SESSION042", 10)),
        (H, exec(t, 10)),
        (H, oe::login_accepted(b"SESSION042", 6)),
    ];
    for n in 6..=10 {
        out.push((H, exec(t, n)));
    }
    out.push((C, enter42(t)));
    out.push((H, oe::login_rejected(b'A')));
    out
}

const APPENDAGE: &[u8] = &[5, 2, b'F', b'R', b'M', b'1', 5, 3, 0, 0, 0, 100];

fn accepted50(user_ref_num: u32, appendage: &'static [u8]) -> o50::Accepted<'static> {
    o50::Accepted {
        timestamp_ns: TS,
        user_ref_num,
        side: b'S',
        quantity: 500,
        symbol: b"MSFT",
        price: 4_123_400,
        time_in_force: b'0',
        display: b'Y',
        order_reference_number: 88_000_002,
        capacity: b'P',
        iso_eligibility: b'N',
        cross_type: b'N',
        order_state: b'L',
        cl_ord_id: b"CL-0001",
        appendage: Appendage { bytes: appendage },
    }
}

fn enter50(user_ref_num: u32, appendage: &'static [u8]) -> Vec<u8> {
    ouch50_packet(&o50::Message::EnterOrder(o50::EnterOrder {
        user_ref_num,
        side: b'S',
        quantity: 500,
        symbol: b"MSFT",
        price: 4_123_400,
        time_in_force: b'0',
        display: b'Y',
        capacity: b'P',
        iso_eligibility: b'N',
        cross_type: b'N',
        cl_ord_id: b"CL-0001",
        appendage: Appendage { bytes: appendage },
    }))
}

/// An OUCH 5.0 session with appendages.
fn ouch50_session() -> Vec<(usize, Vec<u8>)> {
    let s = |m: o50::Message<'_>| ouch50_packet(&m);
    vec![
        (
            C,
            oe::login_request(b"USER05", b"pw", b"SESSION050", Some(12)),
        ),
        (H, oe::login_accepted(b"SESSION050", 12)),
        (C, enter50(1001, APPENDAGE)),
        (C, enter50(1002, b"")),
        (H, s(o50::Message::Accepted(accepted50(1001, APPENDAGE)))),
        (H, s(o50::Message::Accepted(accepted50(1002, b"")))),
        (
            C,
            s(o50::Message::ReplaceOrder(o50::ReplaceOrder {
                orig_user_ref_num: 1001,
                user_ref_num: 1003,
                quantity: 400,
                price: 4_123_300,
                time_in_force: b'0',
                display: b'Y',
                iso_eligibility: b'N',
                cl_ord_id: b"CL-0003",
                appendage: Appendage { bytes: APPENDAGE },
            })),
        ),
        (
            H,
            s(o50::Message::Replaced {
                orig_user_ref_num: 1001,
                accepted: accepted50(1003, APPENDAGE),
            }),
        ),
        (
            H,
            s(o50::Message::Executed {
                timestamp_ns: TS + 5,
                user_ref_num: 1003,
                quantity: 100,
                price: 4_123_300,
                liquidity_flag: b'R',
                match_number: 6_660_001,
                appendage: Appendage { bytes: b"" },
            }),
        ),
        (
            C,
            s(o50::Message::ModifyOrder {
                user_ref_num: 1003,
                side: b'S',
                quantity: 200,
            }),
        ),
        (
            H,
            s(o50::Message::OrderModified {
                timestamp_ns: TS + 6,
                user_ref_num: 1003,
                side: b'S',
                quantity: 200,
            }),
        ),
        (
            C,
            s(o50::Message::CancelOrder {
                user_ref_num: 1003,
                quantity: 0,
            }),
        ),
        (
            H,
            s(o50::Message::CancelPending {
                timestamp_ns: TS + 7,
                user_ref_num: 1003,
            }),
        ),
        (
            H,
            s(o50::Message::Canceled {
                timestamp_ns: TS + 8,
                user_ref_num: 1003,
                quantity: 200,
                reason: b'U',
            }),
        ),
        (
            C,
            s(o50::Message::CancelOrder {
                user_ref_num: 1002,
                quantity: 0,
            }),
        ),
        (
            H,
            s(o50::Message::CancelReject {
                timestamp_ns: TS + 9,
                user_ref_num: 1002,
            }),
        ),
        (
            H,
            s(o50::Message::BrokenTrade {
                timestamp_ns: TS + 10,
                user_ref_num: 1003,
                match_number: 6_660_001,
                reason: b'E',
                cl_ord_id: b"CL-0003",
            }),
        ),
        (
            H,
            s(o50::Message::AiqCanceled {
                timestamp_ns: TS + 11,
                user_ref_num: 1002,
                decrement_shares: 500,
                reason: b'Q',
                quantity_prevented_from_trading: 500,
                execution_price: 4_123_400,
                liquidity_flag: b'A',
            }),
        ),
        (C, enter50(1002, b"")),
        (C, enter50(1004, b"")),
        (
            H,
            s(o50::Message::Rejected {
                timestamp_ns: TS + 12,
                user_ref_num: 1004,
                reason: 0x0102,
                cl_ord_id: b"CL-0004",
            }),
        ),
        (
            H,
            s(o50::Message::SystemEvent {
                timestamp_ns: TS + 13,
                event_code: b'E',
            }),
        ),
        (C, oe::packet(b'R', b"")),
        (H, oe::packet(b'H', b"")),
    ]
}

/// The OUCH 4.2 session with a hole in each direction, a segment cut inside a length
/// prefix and one inside a packet, packets of the wrong side, bad headers and packets
/// batched several to a segment.
fn ouch_damaged() -> Vec<u8> {
    let packets = ouch42_session();
    let client: Vec<u8> = packets
        .iter()
        .filter(|p| p.0 == C)
        .flat_map(|p| p.1.clone())
        .collect();
    let host: Vec<u8> = packets
        .iter()
        .filter(|p| p.0 == H)
        .flat_map(|p| p.1.clone())
        .collect();
    let (c1, c2) = client.split_at(1);
    let (h1, h2) = host.split_at(40);
    segments_script(&[
        (C, false, c1),
        (C, false, &c2[..60]),
        (H, false, h1),
        (H, false, &h2[..200]),
        (C, true, &c2[60..]),
        (H, true, &h2[200..]),
        (H, false, &oe::login_accepted(b"SESSION042", 1)),
        (C, false, b"\x00\x00S\x00\x01H"),
        (C, false, b"\xff\xffU"),
        (C, false, &oe::packet(b'H', b"")),
        (C, false, &oe::packet(b'R', b"")),
        (H, false, &oe::packet(b'S', b"")),
        (H, false, &oe::packet(b'S', b"Ashort")),
    ])
}

/// `(name, script)` of the `soupbin_ouch` seeds.
pub(crate) fn soupbin_ouch() -> Vec<(String, Vec<u8>)> {
    vec![
        ("ouch42-session".into(), one_per_segment(&ouch42_session())),
        (
            "ouch42-relogin-replay-gap".into(),
            one_per_segment(&ouch42_relogin()),
        ),
        ("ouch50-session".into(), one_per_segment(&ouch50_session())),
        ("ouch42-holes-cuts-garbage".into(), ouch_damaged()),
    ]
}

const UUID: u64 = 1_733_000_000_000_001;
const FIRM: &[u8] = b"FRM01";
const T0: u64 = 1_733_011_200_000_000_000;

fn request(seq: u32, order_request_id: u64, order_id: Option<u64>) -> Request<'static> {
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

fn report(t: u16, seq: u32, ori: Option<u64>, leaves: u32, poss_retrans: bool) -> Vec<u8> {
    il::report(&Report {
        template_id: t,
        seq_num: seq,
        uuid: UUID,
        cl_ord_id: b"CL-0001",
        order_id: Some(7001),
        order_request_id: ori,
        poss_retrans,
        sending_time_ns: Some(T0 + 1_000 + u64::from(seq)),
        transact_time_ns: Some(T0 + 900 + u64::from(seq)),
        leaves_qty: Some(leaves),
        cum_qty: Some(10 - leaves),
        last_qty: Some(1),
        ord_status: Some(if leaves == 0 { 2 } else { 1 }),
        delay_to_time_ns: None,
    })
}

/// An iLink 3 session: negotiation, establishment, every request and report template,
/// keep-alives, a retransmission of a gap, a business reject, termination.
fn ilink3_session() -> Vec<(usize, Vec<u8>)> {
    use ils::*;
    let cancel = Request {
        price: None,
        order_qty: None,
        ..request(3, 1003, Some(7001))
    };
    vec![
        (C, il::negotiate(UUID, FIRM, T0)),
        (H, il::negotiation_response(UUID, T0)),
        (C, il::establish(UUID, FIRM, T0 + 1, 1)),
        (H, il::establishment_ack(UUID, T0 + 1, 1)),
        (C, il::new_order(&request(1, 1001, None))),
        (
            H,
            report(execution_report_new_522::ID, 1, Some(1001), 10, false),
        ),
        (
            H,
            report(
                execution_report_trade_outright_525::ID,
                2,
                Some(1001),
                9,
                false,
            ),
        ),
        (C, il::replace(&request(2, 1002, Some(7001)))),
        (
            H,
            report(
                execution_report_pending_replace_565::ID,
                3,
                Some(1002),
                9,
                false,
            ),
        ),
        (
            H,
            report(execution_report_modify_531::ID, 4, Some(1002), 9, false),
        ),
        (C, il::sequence(UUID, 3)),
        (H, il::sequence(UUID, 5)),
        (C, il::cancel(&cancel)),
        (
            H,
            report(
                execution_report_pending_cancel_564::ID,
                5,
                Some(1003),
                9,
                false,
            ),
        ),
        (
            H,
            report(execution_report_cancel_534::ID, 6, Some(1003), 0, false),
        ),
        (C, il::new_order(&request(4, 1004, None))),
        (
            H,
            report(
                execution_report_trade_spread_526::ID,
                7,
                Some(1004),
                0,
                false,
            ),
        ),
        (
            H,
            report(execution_report_trade_spread_leg_527::ID, 8, None, 0, false),
        ),
        (
            H,
            report(execution_report_status_532::ID, 9, Some(1004), 0, false),
        ),
        (
            H,
            report(order_cancel_reject_535::ID, 10, Some(1005), 0, false),
        ),
        (
            H,
            report(
                order_cancel_replace_reject_536::ID,
                11,
                Some(1006),
                0,
                false,
            ),
        ),
        (C, il::new_order(&request(5, 1007, None))),
        (
            H,
            report(execution_report_reject_523::ID, 12, Some(1007), 0, false),
        ),
        (
            H,
            report(
                execution_report_elimination_524::ID,
                13,
                Some(1008),
                0,
                false,
            ),
        ),
        (
            H,
            il::business_reject(&BusinessReject {
                seq_num: 14,
                uuid: UUID,
                ref_seq_num: Some(3),
                poss_retrans: false,
                sending_time_ns: Some(T0 + 5_000),
            }),
        ),
        // 15..=17 skipped, then asked for and replayed.
        (
            H,
            report(execution_report_new_522::ID, 18, Some(1009), 10, false),
        ),
        (C, il::retransmit_request(UUID, None, T0 + 9, 15, 3)),
        (H, il::retransmission(UUID, None, T0 + 9, 15, 3)),
        (
            H,
            report(execution_report_new_522::ID, 15, Some(1010), 10, true),
        ),
        (
            H,
            report(execution_report_new_522::ID, 16, Some(1011), 10, true),
        ),
        (
            H,
            report(execution_report_new_522::ID, 2, Some(1001), 9, true),
        ),
        (H, il::retransmit_reject(UUID, T0 + 10, 1)),
        (H, il::not_applied(UUID, 3, 1)),
        (C, il::terminate(UUID, T0 + 11, 0)),
        (H, il::terminate(UUID, T0 + 11, 0)),
    ]
}

/// A re-establish skipping numbers, rejections, and frames that are no iLink 3 message:
/// another schema id, a BlockLength shorter than the template's root, a template the
/// schema lacks, a request from CME's side.
fn ilink3_reestablish_corrupt() -> Vec<u8> {
    use ils::*;
    let nos = il::new_order(&request(9, 1020, None));
    let mut other_schema = nos.clone();
    other_schema[8] = 1;
    let short_block = il::Builder::new(new_order_single_514::ID)
        .put(new_order_single_514::SEQ_NUM, 10)
        .block_length(24)
        .finish();
    let mut unknown = nos.clone();
    unknown[6..8].copy_from_slice(&4242u16.to_le_bytes());
    let mut bad_encoding = nos.clone();
    bad_encoding[3] = 0xCB;
    let packets = [
        (C, il::establish(UUID, FIRM, T0 + 20, 8)),
        (H, il::establishment_reject(UUID, T0 + 20, 3)),
        (C, il::negotiate(UUID + 1, FIRM, T0 + 21)),
        (H, il::negotiation_reject(UUID + 1, T0 + 21, 4)),
        (C, il::establish(UUID, FIRM, T0 + 22, 8)),
        (H, il::establishment_ack(UUID, T0 + 22, 40)),
        (C, nos.clone()),
        (C, other_schema),
        (C, short_block),
        (C, unknown),
        (H, nos.clone()),
        (
            H,
            report(execution_report_new_522::ID, 40, Some(1020), 10, false),
        ),
        (
            H,
            report(execution_report_new_522::ID, 40, Some(1020), 10, false),
        ),
        (C, bad_encoding),
        (C, nos),
    ];
    let segs: Vec<(usize, bool, &[u8])> = packets
        .iter()
        .enumerate()
        .map(|(i, (d, p))| (*d, i == 13, p.as_slice()))
        .collect();
    segments_script(&segs)
}

/// `(name, script)` of the `sofh_ilink3` seeds.
pub(crate) fn sofh_ilink3() -> Vec<(String, Vec<u8>)> {
    let session = ilink3_session();
    // The client's messages batched into two segments, the second cut inside an SOFH.
    let client: Vec<u8> = session
        .iter()
        .filter(|p| p.0 == C)
        .flat_map(|p| p.1.clone())
        .collect();
    let host: Vec<u8> = session
        .iter()
        .filter(|p| p.0 == H)
        .flat_map(|p| p.1.clone())
        .collect();
    let batched = segments_script(&[
        (C, false, &client[..client.len() / 2 + 1]),
        (C, false, &client[client.len() / 2 + 1..]),
        (H, false, &host[..3]),
        (H, false, &host[3..]),
    ]);
    vec![
        ("session".into(), one_per_segment(&session)),
        ("session-batched-cut".into(), batched),
        (
            "reestablish-gap-corrupt".into(),
            ilink3_reestablish_corrupt(),
        ),
    ]
}
