//! Sessions are more than CompIDs (#47, item 9). A FIX session is its BeginString and its
//! CompIDs: the same CompIDs on FIX.4.2 and FIX.4.4 (a migration) are two sessions, each
//! with its own ClOrdIDs. A hub carries several firms on one session, each with its own
//! ClOrdIDs: the firm (OnBehalfOfCompID 115 on a request, DeliverToCompID 128 on its
//! response) joins the order's key. Truth comes from the script, read on every plan.

mod support;

use support::*;

/// Two connections with the same CompIDs, FIX.4.2 and FIX.4.4, both numbering their
/// orders 0, 1, 2…, interleaved: each order is answered by its own session's reports.
#[test]
fn same_comp_ids_on_two_begin_strings_are_two_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = 1_000_000_000;
    let mut old = Script::logged_on("FIX.4.2", 40021, t0, false);
    let mut new = Script::logged_on("FIX.4.4", 40022, t0 + 7 * US, false);
    let mut want = Expected::default();
    let n = 20;
    for i in 0..n {
        let id = i.to_string();
        let order = [(35, "D"), (11, id.as_str()), (55, "IBM"), (54, "1")];
        // Each session's request falls between the other's request and its answers.
        old.client(100 * US, &order);
        old.venue(30 * US + i * 100, &report42(&id, "0", "0"));
        old.venue(20 * US, &report42(&id, "2", "2"));
        want.stage("first_response", 30 * US + i * 100);
        want.stage("ack", 30 * US + i * 100);
        want.stage("fill", 50 * US + i * 100);
        want.stage("ack_to_fill", 20 * US);
        new.client(100 * US - 6 * US, &order);
        new.venue(
            45 * US + i * 10,
            &[(35, "8"), (11, &id), (150, "0"), (39, "0")],
        );
        new.venue(35 * US, &[(35, "8"), (11, &id), (150, "F"), (39, "2")]);
        // Both scripts advance by the same 200 µs per order: they stay interleaved.
        old.t += 50 * US - i * 100;
        new.t += 20 * US + 6 * US - i * 10;
        want.stage("first_response", 45 * US + i * 10);
        want.stage("ack", 45 * US + i * 10);
        want.stage("fill", 80 * US + i * 10);
        want.stage("ack_to_fill", 35 * US);
    }
    want.counters.insert("requests", 2 * n);
    want.counters.insert("matched", 2 * n);
    want.counters.insert("pending", 0);
    let mut packets = old.packets;
    packets.extend(new.packets);
    packets.sort_by_key(|p| p.ts_ns);
    let summary = every_plan(dir.path(), "two_versions.pcap", &packets);
    check(&summary, &want);
    // Two sessions, told apart by their BeginString (a field added beside the CompIDs).
    let sessions = summary["sessions"].as_array().unwrap();
    let mut versions: Vec<(&str, &str, &str, u64)> = sessions
        .iter()
        .map(|s| {
            (
                s["begin_string"].as_str().unwrap(),
                s["sender_comp_id"].as_str().unwrap(),
                s["target_comp_id"].as_str().unwrap(),
                s["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    versions.sort();
    assert_eq!(
        versions,
        [
            ("FIX.4.2", "CLIENT", "VENUE", n),
            ("FIX.4.4", "CLIENT", "VENUE", n)
        ]
    );
    // The text table names them with their BeginString (only because they share CompIDs).
    let path = dir.path().join("two_versions.pcap");
    let out = fixscope(&["pcap", path.to_str().unwrap(), "-p", "9878"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for name in ["CLIENT->VENUE FIX.4.2", "CLIENT->VENUE FIX.4.4"] {
        assert!(text.contains(name), "{name} in:\n{text}");
    }
}

fn ack(id: &str) -> Vec<(u32, &str)> {
    vec![(35, "8"), (11, id), (150, "0"), (39, "0")]
}

fn fill(id: &str) -> Vec<(u32, &str)> {
    vec![(35, "8"), (11, id), (150, "F"), (39, "2")]
}

/// A FIX 4.2 ExecutionReport (ExecTransType New).
fn report42<'a>(id: &'a str, exec: &'a str, status: &'a str) -> Vec<(u32, &'a str)> {
    vec![(35, "8"), (11, id), (20, "0"), (150, exec), (39, status)]
}

/// A hub session carrying firms A and B (115 on the requests, 128 on the venue's
/// answers), both numbering their orders 1, 2, 3…: each order is paired with its own
/// firm's reports; a cancel ends only its firm's original, a BusinessMessageReject by
/// ClOrdID answers only its firm's order.
#[test]
fn a_hub_s_firms_keep_their_own_clordids() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40023);
    let mut want = Expected::default();
    let (a, b) = ([(115, "A")], [(115, "B")]);
    let (to_a, to_b) = ([(128, "A")], [(128, "B")]);
    let n = 10;
    for i in 1..=n {
        let id = i.to_string();
        let order = [(35, "D"), (11, id.as_str()), (55, "IBM"), (54, "1")];
        s.client_routed(50 * US, &a, &order);
        s.client_routed(5 * US, &b, &order);
        // The venue answers B first, then A.
        s.venue_routed(20 * US + i * 10, &to_b, &ack(&id));
        s.venue_routed(15 * US, &to_a, &ack(&id));
        s.venue_routed(30 * US, &to_a, &fill(&id));
        s.venue_routed(10 * US, &to_b, &fill(&id));
        want.stage("first_response", 40 * US + i * 10);
        want.stage("ack", 40 * US + i * 10);
        want.stage("fill", 70 * US + i * 10);
        want.stage("ack_to_fill", 30 * US);
        want.stage("first_response", 20 * US + i * 10);
        want.stage("ack", 20 * US + i * 10);
        want.stage("fill", 75 * US + i * 10);
        want.stage("ack_to_fill", 55 * US);
    }
    // Both place X; B cancels its X (OrigClOrdID 41): only B's X ends, A's X fills.
    let x = [(35, "D"), (11, "X"), (55, "IBM"), (54, "1")];
    s.client_routed(50 * US, &a, &x);
    s.client_routed(5 * US, &b, &x);
    s.venue_routed(10 * US, &to_a, &ack("X"));
    s.venue_routed(10 * US, &to_b, &ack("X"));
    want.stage("first_response", 15 * US);
    want.stage("ack", 15 * US);
    want.stage("first_response", 20 * US);
    want.stage("ack", 20 * US);
    s.client_routed(
        10 * US,
        &b,
        &[(35, "F"), (11, "XC"), (41, "X"), (55, "IBM")],
    );
    s.venue_routed(
        12 * US,
        &to_b,
        &[(35, "8"), (11, "XC"), (41, "X"), (150, "4"), (39, "4")],
    );
    want.stage("first_response", 12 * US);
    want.stage("ack", 12 * US);
    s.venue_routed(100 * US, &to_a, &fill("X"));
    want.stage("fill", 147 * US);
    want.stage("ack_to_fill", 132 * US);
    // Both place R; the venue rejects A's by ClOrdID (379) and fills B's.
    let r = [(35, "D"), (11, "R"), (55, "IBM"), (54, "1")];
    s.client_routed(50 * US, &a, &r);
    s.client_routed(5 * US, &b, &r);
    s.venue_routed(
        20 * US,
        &to_a,
        &[(35, "j"), (372, "D"), (379, "R"), (380, "4")],
    );
    want.stage("first_response", 25 * US);
    want.stage("ack", 25 * US);
    s.venue_routed(30 * US, &to_b, &ack("R"));
    s.venue_routed(30 * US, &to_b, &fill("R"));
    want.stage("first_response", 50 * US);
    want.stage("ack", 50 * US);
    want.stage("fill", 80 * US);
    want.stage("ack_to_fill", 30 * US);
    let requests = 2 * n + 2 + 1 + 2;
    want.counters.insert("requests", requests);
    want.counters.insert("matched", requests);
    want.counters.insert("business_rejects", 1);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "hub.pcap", &s.packets);
    check(&summary, &want);
    // One session: the firms are within it.
    assert_eq!(summary["sessions"].as_array().unwrap().len(), 1);
}

/// A venue that does not echo the firm (no 128 on its reports) still answers the firm's
/// order — the one order of that ClOrdID under any firm; where two firms' orders share the
/// ClOrdID, a report without the firm answers neither (never guessed: unmatched).
#[test]
fn a_report_without_the_firm_answers_the_one_order_of_its_clordid() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40031);
    let mut want = Expected::default();
    for i in 0..5 {
        let id = format!("U{i}");
        s.client_routed(
            50 * US,
            &[(115, "A")],
            &[(35, "D"), (11, &id), (55, "IBM"), (54, "1")],
        );
        s.venue(30 * US, &ack(&id));
        s.venue(20 * US, &fill(&id));
        want.stage("first_response", 30 * US);
        want.stage("ack", 30 * US);
        want.stage("fill", 50 * US);
        want.stage("ack_to_fill", 20 * US);
    }
    // Two firms' orders under one ClOrdID: a report without 128 names neither.
    s.client_routed(
        50 * US,
        &[(115, "A")],
        &[(35, "D"), (11, "SHARED"), (55, "IBM"), (54, "1")],
    );
    s.client_routed(
        5 * US,
        &[(115, "B")],
        &[(35, "D"), (11, "SHARED"), (55, "IBM"), (54, "1")],
    );
    s.venue(30 * US, &ack("SHARED"));
    // Then each firm's own ack, with 128: exact.
    s.venue_routed(10 * US, &[(128, "A")], &ack("SHARED"));
    s.venue_routed(10 * US, &[(128, "B")], &ack("SHARED"));
    // A's order: sent 5 µs before B's, acked 45 µs after it; B's 50 µs after its own.
    want.stage("first_response", 45 * US);
    want.stage("ack", 45 * US);
    want.stage("first_response", 50 * US);
    want.stage("ack", 50 * US);
    want.counters.insert("requests", 7);
    want.counters.insert("matched", 7);
    want.counters.insert("unmatched_responses", 1);
    let summary = every_plan(dir.path(), "hub_without_128.pcap", &s.packets);
    check(&summary, &want);
}
