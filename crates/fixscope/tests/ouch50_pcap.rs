//! `fixscope pcap --protocol PORT=ouch50`: OUCH 5.0 orders keyed by UserRefNum, their
//! messages of variable length (an Optional Appendage on every Enter Order, of a size that
//! changes from order to order: only SoupBinTCP's length says where each ends), replaced
//! under a new UserRefNum (the Replaced answers the replace and ends the original), and a
//! client's cancel answered by a Cancel Pending, then the Canceled — against the script's
//! own truth.

mod support;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_ouch::encode::{appendage_bytes, login_accepted, login_request, ouch50_packet};
use fixscope_ouch::ouch50::{Accepted, Appendage, EnterOrder, Message, ReplaceOrder};
use support::*;

const PORT: u16 = 15050;
const ACK_NS: u64 = 23_000;
const REPLACE_NS: u64 = 61_000;
const FILL_NS: u64 = 240_000;
const PENDING_NS: u64 = 19_000;
const ORDERS: u32 = 25;

fn accepted(urn: u32, quantity: u32, ts: u64) -> Accepted<'static> {
    Accepted {
        timestamp_ns: ts,
        user_ref_num: urn,
        side: b'B',
        quantity,
        symbol: b"MSFT    ",
        price: 4_100_000,
        time_in_force: b'0',
        display: b'Y',
        order_reference_number: 9_000 + u64::from(urn),
        capacity: b'A',
        iso_eligibility: b'N',
        cross_type: b'N',
        order_state: b'L',
        cl_ord_id: b"CL0000000000001",
        appendage: Appendage { bytes: &[] },
    }
}

fn capture() -> Vec<TimedPacket> {
    let t0 = 1_700_000_000_000_000_000u64;
    let mut c = SyntheticConnection::new(endpoint(false, 2, 41_000), endpoint(false, 1, PORT));
    let mut packets: Vec<TimedPacket> = c.handshake().into_iter().map(|p| at(t0, p)).collect();
    packets.push(at(
        t0 + 1_000,
        c.client_sends(&login_request(b"TRDR5", b"x", b"", Some(1))),
    ));
    packets.push(at(t0 + 2_000, c.server_sends(&login_accepted(b"SESS5", 1))));
    for i in 0..ORDERS {
        let t = t0 + 1_000_000 + u64::from(i) * 1_000_000;
        let urn = 100 + 2 * i;
        // An appendage of 1..=3 elements: the Enter's length changes with i.
        let firm = b"FRMA";
        let elements: Vec<(u8, &[u8])> = [(2u8, &firm[..]), (3, b"\x00\x00\x00\x64"), (4, b"R")]
            .into_iter()
            .take(1 + (i % 3) as usize)
            .collect();
        let appendage = appendage_bytes(&elements);
        let enter = ouch50_packet(&Message::EnterOrder(EnterOrder {
            user_ref_num: urn,
            side: b'B',
            quantity: 500,
            symbol: b"MSFT    ",
            price: 4_100_000,
            time_in_force: b'0',
            display: b'Y',
            capacity: b'A',
            iso_eligibility: b'N',
            cross_type: b'N',
            cl_ord_id: b"CL0000000000001",
            appendage: Appendage { bytes: &appendage },
        }));
        packets.push(at(t, c.client_sends(&enter)));
        packets.push(at(
            t + ACK_NS,
            c.server_sends(&ouch50_packet(&Message::Accepted(accepted(urn, 500, t)))),
        ));
        // Replaced under urn + 1, which then fills whole.
        let replace = ouch50_packet(&Message::ReplaceOrder(ReplaceOrder {
            orig_user_ref_num: urn,
            user_ref_num: urn + 1,
            quantity: 400,
            price: 4_099_000,
            time_in_force: b'0',
            display: b'Y',
            iso_eligibility: b'N',
            cl_ord_id: b"CL0000000000002",
            appendage: Appendage { bytes: &[] },
        }));
        let tr = t + 100_000;
        packets.push(at(tr, c.client_sends(&replace)));
        let replaced = ouch50_packet(&Message::Replaced {
            orig_user_ref_num: urn,
            accepted: accepted(urn + 1, 400, tr),
        });
        packets.push(at(tr + REPLACE_NS, c.server_sends(&replaced)));
        let executed = ouch50_packet(&Message::Executed {
            timestamp_ns: tr,
            user_ref_num: urn + 1,
            quantity: 400,
            price: 4_099_000,
            liquidity_flag: b'A',
            match_number: 77 + u64::from(i),
            appendage: Appendage { bytes: &[] },
        });
        packets.push(at(tr + FILL_NS, c.server_sends(&executed)));
    }
    // One order cancelled by the client: Cancel Pending first, then Canceled.
    let t = t0 + 900_000_000;
    let urn = 10_000;
    let enter = ouch50_packet(&Message::EnterOrder(EnterOrder {
        user_ref_num: urn,
        side: b'S',
        quantity: 100,
        symbol: b"MSFT    ",
        price: 4_200_000,
        time_in_force: b'0',
        display: b'Y',
        capacity: b'A',
        iso_eligibility: b'N',
        cross_type: b'N',
        cl_ord_id: b"CL0000000000003",
        appendage: Appendage { bytes: &[] },
    }));
    packets.push(at(t, c.client_sends(&enter)));
    packets.push(at(
        t + ACK_NS,
        c.server_sends(&ouch50_packet(&Message::Accepted(accepted(urn, 100, t)))),
    ));
    let cancel = ouch50_packet(&Message::CancelOrder {
        user_ref_num: urn,
        quantity: 0,
    });
    packets.push(at(t + 1_000_000, c.client_sends(&cancel)));
    let pending = ouch50_packet(&Message::CancelPending {
        timestamp_ns: t,
        user_ref_num: urn,
    });
    packets.push(at(t + 1_000_000 + PENDING_NS, c.server_sends(&pending)));
    let canceled = ouch50_packet(&Message::Canceled {
        timestamp_ns: t,
        user_ref_num: urn,
        quantity: 100,
        reason: b'U',
    });
    packets.push(at(
        t + 1_000_000 + PENDING_NS + 30_000,
        c.server_sends(&canceled),
    ));
    packets
}

#[test]
fn ouch50_replaces_appendages_and_cancels_are_measured_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let s = analyse_packets(
        dir.path(),
        "ouch50.pcap",
        &capture(),
        &[
            "-p",
            &PORT.to_string(),
            "--protocol",
            &format!("{PORT}=ouch50"),
        ],
    );
    let c = |name: &str| counter(&s, name);
    let orders = ORDERS as u64;
    // Every Enter, every Replace, the Cancel.
    assert_eq!(c("requests"), 2 * orders + 2, "{}", s["counters"]);
    assert_eq!(c("matched"), 2 * orders + 2, "{}", s["counters"]);
    for alarm in [
        "unmatched_responses",
        "timed_out",
        "unanswered",
        "ouch_undecodable_messages",
        "soupbin_undecodable_packets",
        "skipped_bytes",
    ] {
        assert_eq!(c(alarm), 0, "{alarm}: {}", s["counters"]);
    }
    let mut firsts = vec![ACK_NS; ORDERS as usize + 1];
    firsts.extend(vec![REPLACE_NS; ORDERS as usize]);
    firsts.push(PENDING_NS);
    firsts.sort();
    assert_stage(&s, "first_response", &firsts);
    // The replacements' fills, from the replace; the originals ended by their Replaced.
    assert_stage(&s, "fill", &vec![FILL_NS; ORDERS as usize]);
    assert_eq!(c("pending"), 0, "{}", s["counters"]);
}

/// With no `--protocol`, recognised by its login and read as 5.0 from its first order
/// (variable-length, appendages): every figure the same as named, on every plan.
#[test]
fn an_ouch50_session_is_recognised_and_its_version_read_from_its_orders() {
    let dir = tempfile::tempdir().unwrap();
    let s = assert_recognised_as_named(dir.path(), &capture(), PORT, "ouch50", 1);
    assert_eq!(
        s["sessions"][0]["begin_string"], "OUCH 5.0",
        "{}",
        s["sessions"]
    );
}
