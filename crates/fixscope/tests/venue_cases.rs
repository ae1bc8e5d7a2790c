//! FIX as venues really send it (#47): one capture per case, the venue's exact messages
//! written by our pcap writer from a script whose truth the test computes as it writes
//! (which order each report answers, by FIX's own fields — never fixscope's output). Each
//! capture is read on every execution plan (`--threads 1`, the default two stages,
//! `--threads 4`): every counter and every stage must be the same on each, and equal to
//! the truth.

mod support;

use serde_json::Value;
use support::*;

/// Item 3: FIX 4.2's ExecTransType. A status (20=3) and a bust (20=1) carrying a fill's
/// ExecType, and a correction (20=2), are no execution; only 20=0 reports are. The tag is
/// read wherever the engine writes it (before or after 150 and 39).
#[test]
fn fix42_exec_trans_type_decides_what_is_an_execution() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.2", 40001);
    let mut want = Expected::default();
    for (i, trans_last) in [false, true].into_iter().enumerate() {
        let id = format!("B{i}");
        let report = |trans: &'static str, exec: &'static str, status: &'static str| {
            let mut f = vec![(35, "8"), (37, "O1"), (17, "X1")];
            if !trans_last {
                f.push((20, trans));
            }
            f.extend([(150, exec), (39, status)]);
            if trans_last {
                f.push((20, trans));
            }
            f
        };
        s.client(50 * US, &[(35, "D"), (11, &id), (55, "IBM"), (54, "1")]);
        let mut ack = report("0", "0", "0");
        ack.push((11, &id));
        s.venue(40 * US, &ack);
        // A status of the order (20=3), reported with a fill's ExecType: no fill.
        let mut status = report("3", "2", "0");
        status.push((11, &id));
        s.venue(20 * US, &status);
        let mut fill = report("0", "2", "2");
        fill.push((11, &id));
        s.venue(240 * US, &fill);
        // The fill busted (20=1) and corrected (20=2) after the order finished.
        let mut bust = report("1", "2", "2");
        bust.push((11, &id));
        s.venue(100 * US, &bust);
        let mut correct = report("2", "2", "2");
        correct.push((11, &id));
        s.venue(10 * US, &correct);
        want.stage("first_response", 40 * US);
        want.stage("ack", 40 * US);
        want.stage("fill", 300 * US);
        want.stage("ack_to_fill", 260 * US);
    }
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("unsolicited_reports", 6);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "exec_trans_type.pcap", &s.packets);
    check(&summary, &want);
}

/// Item 8: reports that answer no request (FIX 4.4's ExecType D, G, H, I, 3) are counted
/// apart, whether their order is tracked or long gone; an expiry answers a waiting order
/// (an IOC) and is unsolicited for an order no longer tracked.
#[test]
fn unsolicited_reports_answer_nothing_and_raise_no_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40002);
    let mut want = Expected::default();
    let report = |id: &'static str, exec: &'static str, status: &'static str| {
        vec![
            (35, "8"),
            (11, id),
            (37, "O"),
            (17, "X"),
            (150, exec),
            (39, status),
        ]
    };
    // A waiting order polled (35=H): the status (150=I) is no answer; the ack is.
    s.client(50 * US, &[(35, "D"), (11, "C1"), (55, "IBM"), (54, "1")]);
    s.client(10 * US, &[(35, "H"), (11, "C1"), (55, "IBM"), (54, "1")]);
    s.venue(20 * US, &report("C1", "I", "A"));
    s.venue(50 * US, &report("C1", "0", "0"));
    want.stage("first_response", 80 * US);
    want.stage("ack", 80 * US);
    // Restated (D) while working, then filled, then the trade corrected (G) and busted
    // (H), done for the day (3) and its status polled (I) after it finished.
    s.venue(30 * US, &report("C1", "D", "0"));
    s.venue(100 * US, &report("C1", "F", "2"));
    want.stage("fill", 210 * US);
    want.stage("ack_to_fill", 130 * US);
    s.venue(100 * US, &report("C1", "G", "2"));
    s.venue(10 * US, &report("C1", "H", "4"));
    s.venue(10 * US, &report("C1", "3", "3"));
    s.venue(10 * US, &report("C1", "I", "2"));
    // An IOC that expired unfilled: the expiry is its answer.
    s.client(
        50 * US,
        &[(35, "D"), (11, "C2"), (55, "IBM"), (54, "1"), (59, "3")],
    );
    s.venue(45 * US, &report("C2", "C", "C"));
    want.stage("first_response", 45 * US);
    // Expiries and restatements of orders placed before the capture: not ours to pair.
    s.venue(1_000 * US, &report("OLD1", "C", "C"));
    s.venue(10 * US, &report("OLD2", "D", "0"));
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("unsolicited_reports", 8);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "unsolicited.pcap", &s.packets);
    check(&summary, &want);
}

/// Item 4: a BusinessMessageReject answers the order only when RefMsgType (372) names the
/// order's request type; a rejected status poll under the order's ClOrdID is no answer.
#[test]
fn a_business_reject_answers_only_the_request_type_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40003);
    let mut want = Expected::default();
    s.client(50 * US, &[(35, "D"), (11, "E1"), (55, "IBM"), (54, "1")]);
    s.client(5 * US, &[(35, "H"), (11, "E1"), (55, "IBM"), (54, "1")]);
    s.venue(15 * US, &[(35, "j"), (372, "H"), (379, "E1"), (380, "3")]);
    s.venue(70 * US, &[(35, "8"), (11, "E1"), (150, "0"), (39, "0")]);
    s.venue(60 * US, &[(35, "8"), (11, "E1"), (150, "F"), (39, "2")]);
    want.stage("first_response", 90 * US);
    want.stage("ack", 90 * US);
    want.stage("fill", 150 * US);
    want.stage("ack_to_fill", 60 * US);
    // The venue rejects a NewOrderSingle by its ClOrdID and type (no RefSeqNum).
    s.client(50 * US, &[(35, "D"), (11, "E2"), (55, "IBM"), (54, "1")]);
    s.venue(33 * US, &[(35, "j"), (372, "D"), (379, "E2"), (380, "5")]);
    want.stage("first_response", 33 * US);
    want.stage("ack", 33 * US);
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("business_rejects", 2);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "business_reject.pcap", &s.packets);
    check(&summary, &want);
}

/// Item 5: a reject of a PossDup replay (35=3 naming the replay's MsgSeqNum, which is the
/// original's) rejects the replay; the original order works on and its fill is its own.
#[test]
fn a_reject_of_a_replay_is_not_the_order_s_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40004);
    let mut want = Expected::default();
    let order = [(35, "D"), (11, "F1"), (55, "IBM"), (54, "1")];
    let seq = s.client(50 * US, &order);
    s.client_replays(10 * US, seq, &order);
    let seq_text = seq.to_string();
    s.venue(
        10 * US,
        &[(35, "3"), (45, &seq_text), (373, "10"), (372, "D")],
    );
    s.venue(50 * US, &[(35, "8"), (11, "F1"), (150, "0"), (39, "0")]);
    s.venue(50 * US, &[(35, "8"), (11, "F1"), (150, "F"), (39, "2")]);
    want.stage("first_response", 70 * US);
    want.stage("ack", 70 * US);
    want.stage("fill", 120 * US);
    want.stage("ack_to_fill", 50 * US);
    // A reject of the order itself, by its MsgSeqNum, still answers it.
    let seq = s.client(50 * US, &[(35, "D"), (11, "F2"), (55, "IBM"), (54, "1")]);
    let seq_text = seq.to_string();
    s.venue(25 * US, &[(35, "3"), (45, &seq_text), (373, "5")]);
    want.stage("first_response", 25 * US);
    want.stage("ack", 25 * US);
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("possdup_requests", 1);
    want.counters.insert("session_rejects", 2);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "replay_reject.pcap", &s.packets);
    check(&summary, &want);
}

/// Item 10: a replace or cancel confirmed with OrigClOrdID after ExecType and OrdStatus
/// ends the original order as one with it first does: none stays tracked.
#[test]
fn orig_cl_ord_id_after_exec_type_ends_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40005);
    let mut want = Expected::default();
    let n = 40;
    for i in 0..n {
        let (orig, new) = (format!("G{i}"), format!("R{i}"));
        s.client(50 * US, &[(35, "D"), (11, &orig), (55, "IBM"), (54, "1")]);
        s.venue(30 * US, &[(35, "8"), (11, &orig), (150, "0"), (39, "0")]);
        want.stage("first_response", 30 * US);
        want.stage("ack", 30 * US);
        let (request, exec, status) = if i % 2 == 0 {
            ("G", "5", "0")
        } else {
            ("F", "4", "4")
        };
        s.client(
            50 * US,
            &[
                (35, request),
                (11, &new),
                (41, &orig),
                (55, "IBM"),
                (54, "1"),
            ],
        );
        s.venue(
            20 * US,
            &[
                (35, "8"),
                (11, &new),
                (150, exec),
                (39, status),
                (41, &orig),
            ],
        );
        want.stage("first_response", 20 * US);
        want.stage("ack", 20 * US);
        if i % 2 == 0 {
            // The replacement fills; the original was over at the replace.
            s.venue(
                40 * US,
                &[(35, "8"), (11, &new), (150, "F"), (39, "2"), (41, &orig)],
            );
            want.stage("fill", 60 * US);
            want.stage("ack_to_fill", 40 * US);
        }
    }
    want.counters.insert("requests", 2 * n);
    want.counters.insert("matched", 2 * n);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "orig_after.pcap", &s.packets);
    check(&summary, &want);
}

const HOUR: u64 = 3_600_000_000_000;

/// Item 1: a new trading day without 141=Y. Day 2 logs on with 34=1 and reuses day 1's
/// ClOrdIDs while day 1's orders still rest: each day-2 request is a new order (its
/// answers are its own, microseconds), the day-1 order of that ClOrdID stops being tracked
/// (`expired_after_response`, no alarm), and no 23-hour fill is credited to day 1.
#[test]
fn a_new_trading_day_reusing_clordids_pairs_each_day_with_its_own_orders() {
    let dir = tempfile::tempdir().unwrap();
    let mut want = Expected::default();
    let mut day1 = Script::logged_on("FIX.4.4", 40011, 1_000_000_000, false);
    for i in 0..5 {
        let id = format!("N{i}");
        day1.client(
            50 * US,
            &[(35, "D"), (11, &id), (55, "IBM"), (54, "1"), (59, "1")],
        );
        day1.venue(30 * US, &[(35, "8"), (11, &id), (150, "0"), (39, "0")]);
        want.stage("first_response", 30 * US);
        want.stage("ack", 30 * US);
    }
    let mut day2 = Script::logged_on("FIX.4.4", 40012, 1_000_000_000 + 23 * HOUR, false);
    for i in 0..5 {
        let id = format!("N{i}");
        day2.client(50 * US, &[(35, "D"), (11, &id), (55, "IBM"), (54, "1")]);
        day2.venue(40 * US, &[(35, "8"), (11, &id), (150, "0"), (39, "0")]);
        day2.venue(60 * US, &[(35, "8"), (11, &id), (150, "F"), (39, "2")]);
        want.stage("first_response", 40 * US);
        want.stage("ack", 40 * US);
        want.stage("fill", 100 * US);
        want.stage("ack_to_fill", 60 * US);
    }
    want.counters.insert("requests", 10);
    want.counters.insert("matched", 10);
    want.counters.insert("unanswered", 0);
    want.counters.insert("expired_after_response", 5);
    want.counters.insert("pending", 0);
    let summary = every_plan_of_files(
        dir.path(),
        &[("day1.pcap", &day1.packets), ("day2.pcap", &day2.packets)],
    );
    check(&summary, &want);
}

/// Item 2: a venue that resets on every Logon (141=Y). Orders acked before the reconnect
/// rest at the venue; their fills, after it, are theirs (not unmatched). A request still
/// waiting at the reset stops waiting (`unanswered_closed`: the reset ended it).
#[test]
fn resting_orders_keep_their_fills_across_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let mut want = Expected::default();
    let t0 = 1_000_000_000;
    let mut before = Script::logged_on("FIX.4.4", 40013, t0, false);
    let mut placed = Vec::new();
    for i in 0..4 {
        let id = format!("P{i}");
        before.client(50 * US, &[(35, "D"), (11, &id), (55, "IBM"), (54, "1")]);
        placed.push((id.clone(), before.t));
        before.venue(30 * US, &[(35, "8"), (11, &id), (150, "0"), (39, "0")]);
        want.stage("first_response", 30 * US);
        want.stage("ack", 30 * US);
    }
    // One request the venue never answered before the connection dropped.
    before.client(50 * US, &[(35, "D"), (11, "LOST"), (55, "IBM"), (54, "1")]);
    let reconnect = before.t + 2_000_000_000;
    let mut after = Script::logged_on("FIX.4.4", 40014, reconnect, true);
    for (id, request_ts) in &placed {
        after.venue(70 * US, &[(35, "8"), (11, id), (150, "F"), (39, "2")]);
        want.stage("fill", after.t - request_ts);
        want.stage("ack_to_fill", after.t - request_ts - 30 * US);
    }
    want.counters.insert("requests", 5);
    want.counters.insert("matched", 4);
    want.counters.insert("unanswered_closed", 1);
    // LOST waited 2 s unanswered, past the default -t (0.5 s): a true timeout.
    want.counters.insert("timed_out", 1);
    want.counters.insert("pending", 0);
    let mut packets = before.packets;
    packets.extend(after.packets);
    let summary = every_plan(dir.path(), "reset_resting.pcap", &packets);
    check(&summary, &want);
}

/// The count of `stage` under request type `msg_type` in `by_msg_type` (0 when absent).
fn by_type_count(summary: &Value, msg_type: &str, stage: &str) -> u64 {
    summary["by_msg_type"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["msg_type"] == msg_type)
        .flat_map(|t| t["stages"].as_array().unwrap())
        .filter(|s| s["stage"] == stage)
        .map(|s| s["count"].as_u64().unwrap())
        .sum()
}

/// Every session's `requests`, summed.
fn session_requests(summary: &Value) -> u64 {
    summary["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum()
}

/// Item 8: a NewOrderMultileg (35=AB) is a request under its ClOrdID; its reports answer
/// it by the rules of any order. Leg reports (442=2) are executions of the order (the first
/// leg to trade is its fill when it comes first); a report of the multileg order (442=2 or
/// 3) after another of its reports ended it is an `unsolicited_reports`, never unmatched.
#[test]
fn a_multileg_order_is_measured_and_its_leg_reports_raise_no_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40021);
    let mut want = Expected::default();
    let order = |id: &'static str| {
        vec![
            (35, "AB"),
            (11, id),
            (54, "1"),
            (555, "2"),
            (600, "OPT-C"),
            (624, "1"),
            (654, "L1"),
            (600, "OPT-P"),
            (624, "2"),
            (654, "L2"),
            (38, "10"),
            (40, "2"),
            (44, "1.5"),
        ]
    };
    let report =
        |id: &'static str, exec: &'static str, status: &'static str, mlrt, leg: &'static str| {
            let mut f: Vec<(u32, &str)> = vec![
                (35, "8"),
                (11, id),
                (37, "O"),
                (17, "X"),
                (150, exec),
                (39, status),
                (442, mlrt),
            ];
            if !leg.is_empty() {
                f.push((654, leg));
            }
            f
        };
    // The multileg order's own fill first, then one report per leg.
    s.client(50 * US, &order("M1"));
    s.venue(40 * US, &report("M1", "0", "0", "3", ""));
    s.venue(100 * US, &report("M1", "F", "2", "3", ""));
    s.venue(10 * US, &report("M1", "F", "2", "2", "L1"));
    s.venue(10 * US, &report("M1", "F", "2", "2", "L2"));
    want.stage("first_response", 40 * US);
    want.stage("ack", 40 * US);
    want.stage("fill", 140 * US);
    want.stage("ack_to_fill", 100 * US);
    // The legs first (the first leg's fill is the order's), then the order's own report.
    s.client(50 * US, &order("M2"));
    s.venue(30 * US, &report("M2", "0", "0", "3", ""));
    s.venue(70 * US, &report("M2", "F", "2", "2", "L1"));
    s.venue(10 * US, &report("M2", "F", "2", "2", "L2"));
    s.venue(10 * US, &report("M2", "F", "2", "3", ""));
    want.stage("first_response", 30 * US);
    want.stage("ack", 30 * US);
    want.stage("fill", 100 * US);
    want.stage("ack_to_fill", 70 * US);
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("unsolicited_reports", 4);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "multileg.pcap", &s.packets);
    check(&summary, &want);
    assert_eq!(session_requests(&summary), 2);
    for stage in ["first_response", "ack", "fill", "ack_to_fill"] {
        assert_eq!(by_type_count(&summary, "AB", stage), 2, "AB {stage}");
        assert_eq!(by_type_count(&summary, "D", stage), 0, "D {stage}");
    }
}

/// Item 8: a NewOrderList (35=E) is one request per order of its NoOrders (73) group, each
/// under its own ClOrdID at the list's time; each order is answered by its own reports. A
/// session Reject of the list (by its MsgSeqNum) answers every order in it.
#[test]
fn each_order_of_a_new_order_list_is_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40022);
    let mut want = Expected::default();
    let list = |list_id: &'static str, ids: &[&'static str]| {
        let mut f = vec![(35, "E"), (66, list_id), (394, "3"), (68, "3"), (73, "3")];
        let n = ids.len();
        f[3].1 = ["0", "1", "2", "3"][n];
        f[4].1 = ["0", "1", "2", "3"][n];
        for (i, id) in ids.iter().enumerate() {
            f.extend([
                (11, *id),
                (67, ["1", "2", "3"][i]),
                (55, ["IBM", "MSFT", "AAPL"][i]),
                (54, "1"),
                (38, "100"),
                (40, "2"),
                (44, "10"),
            ]);
        }
        f
    };
    let report = |id: &'static str, exec: &'static str, status: &'static str| {
        vec![
            (35, "8"),
            (11, id),
            (66, "L1"),
            (37, "O"),
            (17, "X"),
            (150, exec),
            (39, status),
        ]
    };
    s.client(50 * US, &list("L1", &["L1-A", "L1-B", "L1-C"]));
    // The venue's ListStatus (35=N) answers no order.
    s.venue(
        5 * US,
        &[
            (35, "N"),
            (66, "L1"),
            (429, "1"),
            (82, "0"),
            (431, "3"),
            (83, "1"),
        ],
    );
    s.venue(25 * US, &report("L1-A", "0", "0"));
    s.venue(20 * US, &report("L1-B", "0", "0"));
    s.venue(20 * US, &report("L1-C", "0", "0"));
    s.venue(30 * US, &report("L1-B", "F", "2"));
    s.venue(10 * US, &report("L1-A", "F", "1"));
    s.venue(10 * US, &report("L1-A", "F", "2"));
    s.venue(10 * US, &report("L1-C", "F", "2"));
    // A's first execution is its partial fill.
    for (ack, fill) in [(30, 110), (50, 100), (70, 130)] {
        want.stage("first_response", ack * US);
        want.stage("ack", ack * US);
        want.stage("fill", fill * US);
        want.stage("ack_to_fill", (fill - ack) * US);
    }
    // A list the venue rejects whole (35=3 naming its MsgSeqNum): both orders answered.
    let seq = s.client(50 * US, &list("L2", &["L2-A", "L2-B"]));
    let seq = seq.to_string();
    s.venue(35 * US, &[(35, "3"), (45, &seq), (373, "5"), (372, "E")]);
    for _ in 0..2 {
        want.stage("first_response", 35 * US);
        want.stage("ack", 35 * US);
    }
    want.counters.insert("requests", 5);
    want.counters.insert("matched", 5);
    want.counters.insert("session_rejects", 1);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "order_list.pcap", &s.packets);
    check(&summary, &want);
    assert_eq!(session_requests(&summary), 5);
    assert_eq!(by_type_count(&summary, "E", "first_response"), 5);
    assert_eq!(by_type_count(&summary, "E", "fill"), 3);
}

/// Item 8: a NewOrderCross (35=s) is one request per side of its NoSides (552) group, each
/// under its own ClOrdID at the cross's time; each side is answered by its own reports.
#[test]
fn each_side_of_a_new_order_cross_is_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Script::new("FIX.4.4", 40023);
    let mut want = Expected::default();
    s.client(
        50 * US,
        &[
            (35, "s"),
            (548, "X1"),
            (549, "1"),
            (550, "0"),
            (552, "2"),
            (54, "1"),
            (11, "XB"),
            (1, "ACC-B"),
            (38, "100"),
            (54, "2"),
            (11, "XS"),
            (1, "ACC-S"),
            (38, "100"),
            (55, "IBM"),
            (40, "2"),
            (44, "10"),
        ],
    );
    let report = |id: &'static str, exec: &'static str, status: &'static str| {
        vec![
            (35, "8"),
            (11, id),
            (548, "X1"),
            (37, "O"),
            (17, "X"),
            (150, exec),
            (39, status),
        ]
    };
    s.venue(30 * US, &report("XB", "0", "0"));
    s.venue(15 * US, &report("XS", "0", "0"));
    s.venue(50 * US, &report("XB", "F", "2"));
    s.venue(5 * US, &report("XS", "F", "2"));
    for (ack, fill) in [(30, 95), (45, 100)] {
        want.stage("first_response", ack * US);
        want.stage("ack", ack * US);
        want.stage("fill", fill * US);
        want.stage("ack_to_fill", (fill - ack) * US);
    }
    want.counters.insert("requests", 2);
    want.counters.insert("matched", 2);
    want.counters.insert("pending", 0);
    let summary = every_plan(dir.path(), "cross.pcap", &s.packets);
    check(&summary, &want);
    assert_eq!(session_requests(&summary), 2);
    assert_eq!(by_type_count(&summary, "s", "ack"), 2);
}
