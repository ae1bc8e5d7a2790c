//! A host-stamped capture that shows some orders' responses before their requests (two tap
//! ports or CPUs stamping on their own, a mirror's crossing copies): each such order is
//! counted once in `response_before_request`, with no latency, no unmatched response and
//! no false `timed_out` — on one thread and sharded alike (#34).
//!
//! Truth is the script below: 200 orders acked 40 µs and filled 300 µs after the request;
//! every 10th order's ack is written (and stamped) 5 µs before its request, a host's view.
//! A second capture reorders the response stream around the request as well: the ack's
//! segment is captured before the request, the segment before it in the stream (a
//! heartbeat) after — the ack's bytes were on the wire when their own segment was
//! captured, so the hole the heartbeat fills is the capture's reordering, not a delay.

mod support;

use fixscope_testkit::fix::fix_message;
use support::*;

use fixscope_core::pcap_writer::SyntheticConnection;

const ORDERS: u64 = 200;
const REORDERED_EVERY: u64 = 10;
const ACK_NS: u64 = 40_000;
const FILL_NS: u64 = 300_000;

/// Order `id`'s NewOrderSingle.
fn order(id: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[(35, "D"), (49, "C"), (56, "X"), (11, id), (55, "IBM")],
    )
}

/// An ExecutionReport of order `id`.
fn report(id: &str, exec: &str, status: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[
            (35, "8"),
            (49, "X"),
            (56, "C"),
            (11, id),
            (150, exec),
            (39, status),
        ],
    )
}

fn reordered_capture() -> Vec<TimedPacket> {
    let mut conn =
        SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, SERVER_PORT));
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets: Vec<TimedPacket> = conn.handshake().into_iter().map(|p| at(t0, p)).collect();
    for i in 0..ORDERS {
        let t = t0 + 1_000_000 + i * 2_000_000;
        let id = format!("ORD{i:05}");
        let order = order(&id);
        let report = |exec: &str, status: &str| report(&id, exec, status);
        // Sequence numbers in the order the hosts sent; frames in the order the capture
        // wrote them.
        let request = conn.client_sends(&order);
        let ack = conn.server_sends(&report("0", "0"));
        let fill = conn.server_sends(&report("F", "2"));
        if i % REORDERED_EVERY == 0 {
            packets.push(at(t - 5_000, ack));
            packets.push(at(t, request));
        } else {
            packets.push(at(t, request));
            packets.push(at(t + ACK_NS, ack));
        }
        packets.push(at(t + FILL_NS, fill));
    }
    packets
}

#[test]
fn orders_answered_before_their_request_are_counted_once_and_raise_no_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let packets = reordered_capture();
    let reordered = ORDERS.div_ceil(REORDERED_EVERY);
    for threads in ["1", "2"] {
        // -t 100 µs: an order left waiting would time out long before the capture ends.
        let s = analyse_packets(
            dir.path(),
            format!("reordered-{threads}.pcap"),
            &packets,
            &["-t", "0.0001", "--threads", threads],
        );
        let c = |name: &str| counter(&s, name);
        assert_eq!(c("requests"), ORDERS, "{}", s["counters"]);
        assert_eq!(c("responses"), 2 * ORDERS);
        assert_eq!(c("response_before_request"), reordered, "{}", s["counters"]);
        assert_eq!(c("matched"), ORDERS - reordered);
        for alarm in ["unmatched_responses", "timed_out", "late", "time_reversed"] {
            assert_eq!(c(alarm), 0, "{alarm}: {}", s["counters"]);
        }
        assert_eq!(
            c("requests"),
            c("matched") + c("response_before_request") + c("unanswered")
        );
        // Only the orders seen in order have latencies, and they are exact: the reordered
        // ones' fills are not taken for their first responses.
        let expected = |ns: u64| vec![ns; (ORDERS - reordered) as usize];
        assert_stage(&s, "first_response", &expected(ACK_NS));
        assert_stage(&s, "ack", &expected(ACK_NS));
        assert_stage(&s, "fill", &expected(FILL_NS));
    }
    // The text report says it on the accounting line.
    let path = dir.path().join("reordered-1.pcap");
    let out = fixscope(&["pcap", path.to_str().unwrap(), "-p", "9878"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("response before request {reordered} (no latency)")),
        "{text}"
    );
}

/// Every 10th order: the server's heartbeat and then the ack (in that stream order) are
/// captured as ack 15.5 µs before the request, heartbeat 5.277 µs after it.
fn reordered_around_a_hole() -> Vec<TimedPacket> {
    let mut conn =
        SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, SERVER_PORT));
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets: Vec<TimedPacket> = conn.handshake().into_iter().map(|p| at(t0, p)).collect();
    for i in 0..ORDERS {
        let t = t0 + 1_000_000 + i * 2_000_000;
        let id = format!("ORD{i:05}");
        let order = order(&id);
        let report = |exec: &str, status: &str| report(&id, exec, status);
        let heartbeat = fix_message("FIX.4.4", &[(35, "0"), (49, "X"), (56, "C")]);
        let request = conn.client_sends(&order);
        let before_ack = conn.server_sends(&heartbeat);
        let ack = conn.server_sends(&report("0", "0"));
        let fill = conn.server_sends(&report("F", "2"));
        if i % REORDERED_EVERY == 0 {
            packets.push(at(t - 15_500, ack));
            packets.push(at(t, request));
            packets.push(at(t + 5_277, before_ack));
        } else {
            packets.push(at(t, request));
            packets.push(at(t + ACK_NS - 1_000, before_ack));
            packets.push(at(t + ACK_NS, ack));
        }
        packets.push(at(t + FILL_NS, fill));
    }
    packets
}

/// The ack read after its request (the hole before it filled then) but captured before
/// it: `response_before_request`, never a first response timed by the segment that filled
/// the hole (5.277 µs, a latency that exists nowhere).
#[test]
fn a_response_behind_a_reordering_hole_is_timed_by_its_own_segment() {
    let dir = tempfile::tempdir().unwrap();
    let packets = reordered_around_a_hole();
    let reordered = ORDERS.div_ceil(REORDERED_EVERY);
    for threads in ["1", "2", "4"] {
        let s = analyse_packets(
            dir.path(),
            format!("reordered-hole-{threads}.pcap"),
            &packets,
            &["-t", "0.0001", "--threads", threads],
        );
        let c = |name: &str| counter(&s, name);
        assert_eq!(c("requests"), ORDERS, "{}", s["counters"]);
        assert_eq!(c("response_before_request"), reordered, "{}", s["counters"]);
        assert_eq!(c("matched"), ORDERS - reordered, "{}", s["counters"]);
        for alarm in ["unmatched_responses", "timed_out", "late", "time_reversed"] {
            assert_eq!(c(alarm), 0, "{alarm}: {}", s["counters"]);
        }
        let expected = |ns: u64| vec![ns; (ORDERS - reordered) as usize];
        assert_stage(&s, "first_response", &expected(ACK_NS));
        assert_stage(&s, "ack", &expected(ACK_NS));
        assert_stage(&s, "fill", &expected(FILL_NS));
    }
}
