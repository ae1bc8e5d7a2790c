//! `fixscope pcap --protocol PORT=ilink3`: CME iLink 3 sessions (SBE over FIXP), measured
//! as FIX is — the same stages and counters — against the script's own truth.
//!
//! The capture: one logical session (its UUID) on two TCP connections. On the first,
//! after Negotiate and Establish: orders acknowledged (ExecutionReportNew522) after ACK_NS
//! and filled in two trades (525; the second leaves nothing); an order cancelled by the
//! client (OrderCancelRequest516 under its own OrderRequestID, answered by 534 after
//! CANCEL_NS); an IOC CME eliminates on its own (524: never a cancel ack); an order
//! modified (515 → 531 after MODIFY_NS, then filled); an order refused by a
//! BusinessReject521 naming its SeqNum (after REJECT_NS). Then the client establishes
//! again on a new connection and asks for a retransmission: CME replays every earlier
//! business message with PossRetransFlag set — never counted twice — and the session
//! goes on with more orders.

mod support;
mod support_ilink3;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_ilink3::encode;
use support::*;
use support_ilink3::*;

const PORT: u16 = 15301;
const ACK_NS: u64 = 23_000;
const FIRST_FILL_NS: u64 = 140_000;
const FULL_FILL_NS: u64 = 390_000;
const CANCEL_NS: u64 = 31_000;
const MODIFY_NS: u64 = 27_000;
const MODIFY_FILL_NS: u64 = 100_000;
const REJECT_NS: u64 = 12_000;
const FILLED_ORDERS: usize = 30;
const MORE_ORDERS: usize = 10;

/// Numbers each side's business messages as iLink 3 does (SeqNum in every one).
struct Numbers {
    client: u32,
    host: u32,
}

impl Numbers {
    fn client(&mut self) -> u32 {
        self.client += 1;
        self.client - 1
    }
    fn host(&mut self) -> u32 {
        self.host += 1;
        self.host - 1
    }
}

/// The capture, in capture order, and how many CME business messages the second
/// connection replays.
fn capture() -> (Vec<TimedPacket>, u64) {
    let t0 = 1_733_011_200_000_000_000u64;
    let mut packets = Vec::new();
    // The business messages CME sent, as reports (re-encoded with PossRetransFlag on the
    // replay) or as bytes (the BusinessReject).
    let mut host_sent: Vec<fixscope_ilink3::messages::Report<'static>> = Vec::new();
    let mut n = Numbers { client: 1, host: 1 };
    let mut first = SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, PORT));
    packets.extend(first.handshake().into_iter().map(|p| at(t0, p)));
    let session = [
        (true, encode::negotiate(UUID, FIRM, t0)),
        (false, encode::negotiation_response(UUID, t0)),
        (true, encode::establish(UUID, FIRM, t0 + 1, 1)),
        (false, encode::establishment_ack(UUID, t0 + 1, 1)),
    ];
    for (i, (client, bytes)) in session.into_iter().enumerate() {
        let ts = t0 + 1_000 * (i as u64 + 1);
        packets.push(at(
            ts,
            match client {
                true => first.client_sends(&bytes),
                false => first.server_sends(&bytes),
            },
        ));
    }
    let mut host =
        |conn: &mut SyntheticConnection, r: fixscope_ilink3::messages::Report<'static>, ts| {
            host_sent.push(r);
            at(ts, conn.server_sends(&encode::report(&r)))
        };
    for i in 0..FILLED_ORDERS {
        let t = t0 + 1_000_000 + i as u64 * 1_000_000;
        let (id, order) = (1_000 + i as u64, 9_000 + i as u64);
        packets.push(at(
            t,
            first.client_sends(&new_order(n.client(), id, t - 500)),
        ));
        packets.push(host(
            &mut first,
            report(NEW, n.host(), id, order, 3),
            t + ACK_NS,
        ));
        packets.push(host(
            &mut first,
            report(TRADE, n.host(), id, order, 2),
            t + FIRST_FILL_NS,
        ));
        packets.push(host(
            &mut first,
            report(TRADE, n.host(), id, order, 0),
            t + FULL_FILL_NS,
        ));
    }
    // A cancel the client asks for, under its own OrderRequestID.
    let t = t0 + 500_000_000;
    packets.push(at(t, first.client_sends(&new_order(n.client(), 2_000, t))));
    packets.push(host(
        &mut first,
        report(NEW, n.host(), 2_000, 9_900, 3),
        t + ACK_NS,
    ));
    let tc = t + 1_000_000;
    packets.push(at(
        tc,
        first.client_sends(&cancel(n.client(), 2_001, 9_900, tc)),
    ));
    packets.push(host(
        &mut first,
        report(CANCELED, n.host(), 2_001, 9_900, 0),
        tc + CANCEL_NS,
    ));
    // An IOC CME eliminates: its ack, then its end, on CME's own account.
    let t = t0 + 510_000_000;
    packets.push(at(t, first.client_sends(&new_order(n.client(), 2_002, t))));
    packets.push(host(
        &mut first,
        report(NEW, n.host(), 2_002, 9_902, 3),
        t + ACK_NS,
    ));
    packets.push(host(
        &mut first,
        report(ELIMINATED, n.host(), 2_002, 9_902, 0),
        t + ACK_NS + 5_000,
    ));
    // A modify, acknowledged, then the order filled under the modify's OrderRequestID.
    let t = t0 + 520_000_000;
    packets.push(at(t, first.client_sends(&new_order(n.client(), 2_003, t))));
    packets.push(host(
        &mut first,
        report(NEW, n.host(), 2_003, 9_903, 3),
        t + ACK_NS,
    ));
    let tm = t + 1_000_000;
    packets.push(at(
        tm,
        first.client_sends(&replace(n.client(), 2_004, 9_903, tm)),
    ));
    packets.push(host(
        &mut first,
        report(MODIFIED, n.host(), 2_004, 9_903, 3),
        tm + MODIFY_NS,
    ));
    packets.push(host(
        &mut first,
        report(TRADE, n.host(), 2_004, 9_903, 0),
        tm + MODIFY_NS + MODIFY_FILL_NS,
    ));
    // An order refused by a BusinessReject naming its SeqNum.
    let t = t0 + 530_000_000;
    let refused = n.client();
    packets.push(at(t, first.client_sends(&new_order(refused, 2_005, t))));
    let reject = business_reject(n.host(), refused);
    packets.push(at(t + REJECT_NS, first.server_sends(&reject)));
    packets.push(at(t + 3_000_000, first.client_fin()));
    packets.push(at(t + 3_000_100, first.server_fin()));

    // The second connection: established again, a retransmission of everything.
    let t = t0 + 600_000_000;
    let mut second = SyntheticConnection::new(endpoint(false, 2, 40_001), endpoint(false, 1, PORT));
    packets.extend(second.handshake().into_iter().map(|p| at(t, p)));
    packets.push(at(
        t + 1_000,
        second.client_sends(&encode::establish(UUID, FIRM, t, n.client)),
    ));
    packets.push(at(
        t + 2_000,
        second.server_sends(&encode::establishment_ack(UUID, t, n.host)),
    ));
    let replayed = host_sent.len() as u64 + 1; // the reports and the BusinessReject
    packets.push(at(
        t + 3_000,
        second.client_sends(&encode::retransmit_request(
            UUID,
            None,
            t,
            1,
            replayed as u16,
        )),
    ));
    packets.push(at(
        t + 4_000,
        second.server_sends(&encode::retransmission(UUID, None, t, 1, replayed as u16)),
    ));
    for (j, r) in host_sent.iter().enumerate() {
        let again = fixscope_ilink3::messages::Report {
            poss_retrans: true,
            ..*r
        };
        packets.push(at(
            t + 10_000 + j as u64 * 1_000,
            second.server_sends(&encode::report(&again)),
        ));
    }
    let mut again = reject.clone();
    // PossRetransFlag of the BusinessReject (its byte, by the schema's offset).
    let flag = 12 + fixscope_ilink3::schema::business_reject_521::POSS_RETRANS_FLAG.offset;
    again[flag] = 1;
    packets.push(at(t + 9_000, second.server_sends(&again)));
    for i in 0..MORE_ORDERS {
        let t = t + 100_000_000 + i as u64 * 1_000_000;
        let (id, order) = (3_000 + i as u64, 9_500 + i as u64);
        packets.push(at(t, second.client_sends(&new_order(n.client(), id, t))));
        let msgs = [
            (report(NEW, n.host(), id, order, 3), ACK_NS),
            (report(TRADE, n.host(), id, order, 2), FIRST_FILL_NS),
            (report(TRADE, n.host(), id, order, 0), FULL_FILL_NS),
        ];
        for (r, after) in msgs {
            packets.push(at(t + after, second.server_sends(&encode::report(&r))));
        }
    }
    (packets, replayed)
}

#[test]
fn ilink3_orders_are_measured_as_fix_orders_and_a_retransmission_is_never_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, replayed) = capture();
    let port = PORT.to_string();
    let protocol = format!("{PORT}=ilink3");
    // The default plan, one thread, four: the same figures and counters.
    for threads in [None, Some("1"), Some("4")] {
        let mut flags = vec!["-p", &port, "--protocol", &protocol, "-t", "5"];
        if let Some(n) = threads {
            flags.extend(["--threads", n]);
        }
        let name = format!("ilink3-{}.pcap", threads.unwrap_or("default"));
        let s = analyse_packets(dir.path(), name, &packets, &flags);
        let c = |name: &str| counter(&s, name);
        let entered = FILLED_ORDERS + 4 + MORE_ORDERS;
        // Every NewOrderSingle, the cancel and the modify; nothing from the replay.
        assert_eq!(c("requests"), entered as u64 + 2, "{}", s["counters"]);
        assert_eq!(c("matched"), entered as u64 + 2, "{}", s["counters"]);
        assert_eq!(c("ilink3_replayed_messages"), replayed, "{}", s["counters"]);
        assert_eq!(c("ilink3_establishments"), 2);
        for alarm in [
            "unmatched_responses",
            "timed_out",
            "late",
            "time_reversed",
            "duplicate_requests",
            "unanswered",
            "ilink3_undecodable_messages",
            "ilink3_business_rejects_unpaired",
            "ilink3_unknown_order_responses",
            "ilink3_sequence_gaps",
        ] {
            assert_eq!(c(alarm), 0, "{alarm}: {}", s["counters"]);
        }
        // Acks: every NewOrderSingle's 522, the refused one's BusinessReject, the cancel's
        // 534, the modify's 531 — exactly; the IOC's elimination is none of them.
        let mut acks = vec![ACK_NS; entered - 1];
        acks.extend([REJECT_NS, CANCEL_NS, MODIFY_NS]);
        acks.sort();
        assert_stage(&s, "ack", &acks);
        assert_stage(&s, "first_response", &acks);
        let filled = FILLED_ORDERS + MORE_ORDERS;
        let mut fills = vec![FIRST_FILL_NS; filled];
        fills.push(MODIFY_NS + MODIFY_FILL_NS);
        assert_stage(&s, "fill", &fills);
        let mut ack_to_fill = vec![FIRST_FILL_NS - ACK_NS; filled];
        ack_to_fill.push(MODIFY_FILL_NS);
        ack_to_fill.sort();
        assert_stage(&s, "ack_to_fill", &ack_to_fill);
        // One logical session, named by its firm and UUID, across both connections;
        // every order is over (filled, cancelled, eliminated, modified then filled,
        // refused).
        let sessions = s["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        assert_eq!(sessions[0]["sender_comp_id"], "FRM01", "{}", sessions[0]);
        assert_eq!(sessions[0]["target_comp_id"], UUID.to_string());
        let layer = &sessions[0]["session_layer"];
        assert_eq!(layer["logged_on"], true, "{layer}");
        assert_eq!(layer["connections"], 2, "{layer}");
        assert_eq!(c("pending"), 0, "{}", s["counters"]);
    }
}

/// The same capture with no `--protocol`: each connection recognised by its FIXP
/// Negotiate in CME's SOFH and measured as if named, on every plan; on a port named `fix`
/// an alarm, never a silent run of no orders.
#[test]
fn an_ilink3_session_is_recognised_by_its_login() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = capture();
    let s = assert_recognised_as_named(dir.path(), &packets, PORT, "ilink3", 2);
    assert_eq!(
        s["sessions"][0]["begin_string"], "iLink 3",
        "{}",
        s["sessions"]
    );
}

/// `--trace`: every request and response event, at the times the stages use, named by the
/// protocol's own codes (template ids) and keys (OrderRequestIDs): each NewOrderSingle's
/// first response is its 522, ACK_NS later; nothing of the retransmission is traced.
#[test]
fn the_trace_names_ilink3_messages_by_template_id_at_the_stages_times() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = capture();
    let port = PORT.to_string();
    let protocol = format!("{PORT}=ilink3");
    let trace = dir.path().join("trace.csv");
    let trace_arg = trace.to_str().unwrap().to_string();
    let flags = ["-p", &port, "--protocol", &protocol, "--trace", &trace_arg];
    analyse_packets(dir.path(), "t.pcap", &packets, &flags);
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("ts_ns,session,direction,msg_type,key"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let requests: Vec<_> = rows.iter().filter(|r| r[2] == "request").collect();
    assert_eq!(requests.len(), FILLED_ORDERS + 4 + MORE_ORDERS + 2);
    let count = |dir: &str, code: &str| rows.iter().filter(|r| r[2] == dir && r[3] == code).count();
    assert_eq!(count("request", "516"), 1);
    assert_eq!(count("request", "515"), 1);
    assert_eq!(count("response", "522"), FILLED_ORDERS + 3 + MORE_ORDERS);
    assert_eq!(count("response", "521"), 1);
    for r in requests.iter().filter(|r| r[3] == "514" && r[4] != "2005") {
        let first = rows
            .iter()
            .find(|x| x[2] == "response" && x[4] == r[4])
            .unwrap_or_else(|| panic!("no response to {r:?}"));
        assert_eq!(first[3], "522", "{r:?}");
        let (rq, rs): (u64, u64) = (r[0].parse().unwrap(), first[0].parse().unwrap());
        assert_eq!(rs - rq, ACK_NS, "{r:?} {first:?}");
    }
}
