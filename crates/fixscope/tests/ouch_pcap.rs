//! `fixscope pcap --protocol PORT=ouch42`: Nasdaq OUCH 4.2 sessions over SoupBinTCP,
//! measured as FIX is — the same stages and counters — against the script's own truth.
//!
//! The capture: a logical session (USER01 on SESSION042) on two TCP connections. On the
//! first, orders entered, accepted after ACK_NS and executed in two parts (the fill stage
//! at the first, the order over at the second: OUCH's Executed has no leaves quantity, so
//! only the shares counted say so); an order cancelled by the client (its cancel answered
//! after CANCEL_NS, tracked apart from the order); an IOC the venue cancelled on its own
//! (never a fast cancel ack). Then the client logs in again on a new connection asking for
//! sequence 1: the host replays every earlier packet byte for byte, with nothing marking
//! them — never counted twice — and the session goes on with more orders.

mod support;
mod support_ouch;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_ouch::encode::{login_accepted, login_request, ouch42_packet};
use fixscope_ouch::ouch42::Message;
use support::*;
use support_ouch::{accepted42, enter42, executed42};

const PORT: u16 = 15001;
const ACK_NS: u64 = 37_000;
const FIRST_FILL_NS: u64 = 150_000;
const FULL_FILL_NS: u64 = 410_000;
const CANCEL_NS: u64 = 52_000;
const FILLED_ORDERS: usize = 30;
const MORE_ORDERS: usize = 10;

fn canceled(token: &[u8; 14], shares: u32, reason: u8, ts: u64) -> Vec<u8> {
    ouch42_packet(&Message::Canceled {
        timestamp_ns: ts,
        token,
        decrement_shares: shares,
        reason,
    })
}

/// The capture, in capture order, and how many host packets the re-login replays.
fn capture() -> (Vec<TimedPacket>, u64) {
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets = Vec::new();
    let mut host_sent: Vec<Vec<u8>> = Vec::new();
    let mut first = SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, PORT));
    packets.extend(first.handshake().into_iter().map(|p| at(t0, p)));
    packets.push(at(
        t0 + 1_000,
        first.client_sends(&login_request(b"USER01", b"pw", b"", Some(1))),
    ));
    packets.push(at(
        t0 + 2_000,
        first.server_sends(&login_accepted(b"SESSION042", 1)),
    ));
    let mut host = |conn: &mut SyntheticConnection, bytes: Vec<u8>, ts: u64| {
        host_sent.push(bytes.clone());
        at(ts, conn.server_sends(&bytes))
    };
    for i in 0..FILLED_ORDERS {
        let t = t0 + 1_000_000 + i as u64 * 1_000_000;
        let k = support_ouch::token("ORD", i);
        packets.push(at(t, first.client_sends(&enter42(&k, 300))));
        packets.push(host(&mut first, accepted42(&k, 300, t), t + ACK_NS));
        packets.push(host(&mut first, executed42(&k, 100, t), t + FIRST_FILL_NS));
        packets.push(host(&mut first, executed42(&k, 200, t), t + FULL_FILL_NS));
    }
    // A cancel the client asks for, answered; an IOC the venue cancels on its own.
    let t = t0 + 500_000_000;
    let (cancelled, ioc) = (
        support_ouch::token("ORD", 900),
        support_ouch::token("ORD", 901),
    );
    packets.push(at(t, first.client_sends(&enter42(&cancelled, 300))));
    packets.push(host(&mut first, accepted42(&cancelled, 300, t), t + ACK_NS));
    let cancel = ouch42_packet(&Message::CancelOrder {
        token: &cancelled,
        shares: 0,
    });
    packets.push(at(t + 1_000_000, first.client_sends(&cancel)));
    packets.push(host(
        &mut first,
        canceled(&cancelled, 300, b'U', t),
        t + 1_000_000 + CANCEL_NS,
    ));
    packets.push(at(t + 2_000_000, first.client_sends(&enter42(&ioc, 300))));
    packets.push(host(
        &mut first,
        accepted42(&ioc, 300, t),
        t + 2_000_000 + ACK_NS,
    ));
    packets.push(host(
        &mut first,
        canceled(&ioc, 300, b'I', t),
        t + 2_000_000 + ACK_NS + 5_000,
    ));
    packets.push(at(t + 3_000_000, first.client_fin()));
    packets.push(at(t + 3_000_100, first.server_fin()));
    // The second connection: a re-login from sequence 1 replays everything, then more.
    let t = t0 + 600_000_000;
    let mut second = SyntheticConnection::new(endpoint(false, 2, 40_001), endpoint(false, 1, PORT));
    packets.extend(second.handshake().into_iter().map(|p| at(t, p)));
    packets.push(at(
        t + 1_000,
        second.client_sends(&login_request(b"USER01", b"pw", b"SESSION042", Some(1))),
    ));
    packets.push(at(
        t + 2_000,
        second.server_sends(&login_accepted(b"SESSION042", 1)),
    ));
    for (j, bytes) in host_sent.iter().enumerate() {
        packets.push(at(
            t + 10_000 + j as u64 * 1_000,
            second.server_sends(bytes),
        ));
    }
    for i in 0..MORE_ORDERS {
        let t = t + 100_000_000 + i as u64 * 1_000_000;
        let k = support_ouch::token("ORD", 1_000 + i);
        packets.push(at(t, second.client_sends(&enter42(&k, 300))));
        packets.push(at(t + ACK_NS, second.server_sends(&accepted42(&k, 300, t))));
        packets.push(at(
            t + FIRST_FILL_NS,
            second.server_sends(&executed42(&k, 100, t)),
        ));
        packets.push(at(
            t + FULL_FILL_NS,
            second.server_sends(&executed42(&k, 200, t)),
        ));
    }
    (packets, host_sent.len() as u64)
}

#[test]
fn ouch42_orders_are_measured_as_fix_orders_and_a_replay_is_never_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, replayed) = capture();
    let port = PORT.to_string();
    let protocol = format!("{PORT}=ouch42");
    // The default plan, one thread, four: the same figures and counters.
    for threads in [None, Some("1"), Some("4")] {
        let mut flags = vec!["-p", &port, "--protocol", &protocol, "-t", "5"];
        if let Some(n) = threads {
            flags.extend(["--threads", n]);
        }
        let name = format!("ouch-{}.pcap", threads.unwrap_or("default"));
        let s = analyse_packets(dir.path(), name, &packets, &flags);
        let c = |name: &str| counter(&s, name);
        let orders = (FILLED_ORDERS + 2 + MORE_ORDERS) as u64;
        // Every Enter and the one Cancel; nothing from the replay.
        assert_eq!(c("requests"), orders + 1, "{}", s["counters"]);
        assert_eq!(c("matched"), orders + 1, "{}", s["counters"]);
        assert_eq!(c("soupbin_replayed_packets"), replayed, "{}", s["counters"]);
        assert_eq!(c("soupbin_logins"), 2);
        for alarm in [
            "unmatched_responses",
            "timed_out",
            "late",
            "time_reversed",
            "duplicate_requests",
            "unanswered",
            "soupbin_undecodable_packets",
            "ouch_undecodable_messages",
        ] {
            assert_eq!(c(alarm), 0, "{alarm}: {}", s["counters"]);
        }
        // Acks: every Enter's, the Cancel's (its Canceled), exactly.
        let mut acks = vec![ACK_NS; FILLED_ORDERS + 2 + MORE_ORDERS];
        acks.push(CANCEL_NS);
        acks.sort();
        assert_stage(&s, "ack", &acks);
        assert_stage(&s, "first_response", &acks);
        let filled = FILLED_ORDERS + MORE_ORDERS;
        assert_stage(&s, "fill", &vec![FIRST_FILL_NS; filled]);
        assert_stage(&s, "ack_to_fill", &vec![FIRST_FILL_NS - ACK_NS; filled]);
        // One logical session, named by its user and session, across both connections;
        // every filled order (its second Executed) and the cancelled ones are over.
        let sessions = s["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        let layer = &sessions[0]["session_layer"];
        assert_eq!(layer["logged_on"], true, "{layer}");
        assert_eq!(layer["connections"], 2, "{layer}");
        assert_eq!(c("pending"), 0, "{}", s["counters"]);
    }
}

/// The same capture with no `--protocol`: each connection recognised by its SoupBinTCP
/// login, its version (4.2) read from its first order, and measured as if named — every
/// figure and counter the same on every plan. On a port named `fix` it is said: each
/// connection that began with a login is counted, an alarm, never a silent run of no
/// orders.
#[test]
fn an_ouch_session_is_recognised_by_its_login_and_its_version_by_its_orders() {
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = capture();
    let s = assert_recognised_as_named(dir.path(), &packets, PORT, "ouch42", 2);
    assert_eq!(
        s["sessions"][0]["begin_string"], "OUCH 4.2",
        "{}",
        s["sessions"]
    );
    // The text summary raises the alarm of a port named `fix`.
    let path = dir.path().join("as-fix.pcap");
    let port = PORT.to_string();
    let fix = format!("{PORT}=fix");
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        &port,
        "--protocol",
        &fix,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let alarms = text.lines().find(|l| l.contains("alarms:")).unwrap_or("");
    assert!(alarms.contains("unnamed_protocol_connections 2"), "{text}");
}

/// A SoupBinTCP session recognised by its login whose data packets never show the OUCH
/// version (System Events read alike in 4.2 and 5.0) is counted `ouch_version_unread`,
/// an alarm, on every plan; one that sends no data at all is not (nothing unmeasured).
#[test]
fn an_ouch_session_that_never_shows_its_version_is_an_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets = Vec::new();
    for (i, with_data) in [(0u16, true), (1, false)] {
        let mut c =
            SyntheticConnection::new(endpoint(false, 2, 40_000 + i), endpoint(false, 1, PORT));
        let t = t0 + u64::from(i) * 1_000_000_000;
        packets.extend(c.handshake().into_iter().map(|p| at(t, p)));
        packets.push(at(
            t + 1_000,
            c.client_sends(&login_request(b"USER01", b"pw", b"", Some(1))),
        ));
        packets.push(at(t + 2_000, c.server_sends(&login_accepted(b"SESS", 1))));
        if with_data {
            let event = ouch42_packet(&Message::SystemEvent {
                timestamp_ns: 1,
                event_code: b'S',
            });
            packets.push(at(t + 3_000, c.server_sends(&event)));
        }
    }
    let port = PORT.to_string();
    for threads in ["1", "2", "4"] {
        let name = format!("unread-{threads}.pcap");
        let flags = ["-p", &port, "--threads", threads];
        let s = analyse_packets(dir.path(), name, &packets, &flags);
        assert_eq!(counter(&s, "ouch_version_unread"), 1, "{}", s["counters"]);
        assert_eq!(counter(&s, "unnamed_protocol_connections"), 0);
    }
}
