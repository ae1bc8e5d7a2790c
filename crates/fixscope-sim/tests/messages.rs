//! Message contents and session behaviour seen by a hand-driven FIX peer over TCP.

mod common;

use std::time::Duration;

use common::*;

const D_FIELDS: &[(u32, &str)] = &[
    (21, "1"),
    (55, "IBM"),
    (54, "1"),
    (38, "100"),
    (40, "2"),
    (44, "10.5"),
];

fn order(p: &mut RawPeer, clordid: &str) {
    let mut f = vec![(11, clordid)];
    f.extend_from_slice(D_FIELDS);
    p.send("D", &f, None);
}

#[test]
fn execution_reports_fix44() {
    let ex = Exchange::start(&[]);
    let mut p = RawPeer::connect(ex.addr, "FIX.4.4");
    let logon = p.logon();
    assert_eq!(
        (field(&logon, 49).as_str(), field(&logon, 56).as_str()),
        ("EXCH", "RAW")
    );
    order(&mut p, "A1");
    let ack = p.expect("8");
    for (tag, want) in [
        (11, "A1"),
        (150, "0"),
        (39, "0"),
        (55, "IBM"),
        (54, "1"),
        (38, "100"),
        (14, "0"),
        (151, "100"),
        (6, "0"),
        (34, "2"),
        (8, "FIX.4.4"),
    ] {
        assert_eq!(field(&ack, tag), want, "tag {tag} in {}", show(&ack));
    }
    assert!(!field(&ack, 37).is_empty() && !field(&ack, 17).is_empty());
    assert!(field(&ack, 31).is_empty() && field(&ack, 32).is_empty());
    let fill = p.expect("8");
    for (tag, want) in [
        (11, "A1"),
        (150, "F"),
        (39, "2"),
        (31, "10.5"),
        (32, "100"),
        (14, "100"),
        (151, "0"),
        (6, "10.5"),
        (34, "3"),
    ] {
        assert_eq!(field(&fill, tag), want, "tag {tag} in {}", show(&fill));
    }
    assert_eq!(field(&fill, 37), field(&ack, 37), "same OrderID");
    assert_ne!(field(&fill, 17), field(&ack, 17), "new ExecID");
    p.send("5", &[], None);
    p.expect("5");
    let s = ex.stop();
    assert_eq!((s.logons, s.logouts), (1, 1));
}

#[test]
fn fix42_exec_types_and_partial_fills() {
    let ex = Exchange::start(&["--partial-fills", "1"]);
    let mut p = RawPeer::connect(ex.addr, "FIX.4.2");
    p.logon();
    order(&mut p, "B1");
    let ack = p.expect("8");
    assert_eq!(
        (field(&ack, 150), field(&ack, 39), field(&ack, 20)),
        ("0".into(), "0".into(), "0".into())
    );
    let part = p.expect("8");
    assert_eq!(
        (field(&part, 150), field(&part, 39), field(&part, 32)),
        ("1".into(), "1".into(), "50".into())
    );
    assert_eq!(
        (field(&part, 14), field(&part, 151)),
        ("50".into(), "50".into())
    );
    let full = p.expect("8");
    assert_eq!(
        (field(&full, 150), field(&full, 39), field(&full, 32)),
        ("2".into(), "2".into(), "50".into())
    );
    assert_eq!(
        (field(&full, 14), field(&full, 151)),
        ("100".into(), "0".into())
    );
}

#[test]
fn fixt_logon_carries_default_appl_ver_id() {
    let ex = Exchange::start(&[]);
    let mut p = RawPeer::connect(ex.addr, "FIXT.1.1");
    let logon = p.logon();
    assert_eq!(field(&logon, 8), "FIXT.1.1");
    assert_eq!(field(&logon, 1137), "9");
    order(&mut p, "C1");
    assert_eq!(field(&p.expect("8"), 150), "0");
    assert_eq!(field(&p.expect("8"), 150), "F");
}

#[test]
fn cancel_replace_and_rejects() {
    let ex = Exchange::start(&["--no-fill"]);
    let mut p = RawPeer::connect(ex.addr, "FIX.4.4");
    p.logon();
    order(&mut p, "A1");
    let ack = p.expect("8");
    assert_eq!(field(&ack, 150), "0");

    p.send(
        "G",
        &[
            (41, "A1"),
            (11, "A2"),
            (55, "IBM"),
            (54, "1"),
            (38, "200"),
            (40, "2"),
            (44, "11"),
        ],
        None,
    );
    let rep = p.expect("8");
    for (tag, want) in [
        (150, "5"),
        (39, "0"),
        (11, "A2"),
        (41, "A1"),
        (38, "200"),
        (44, "11"),
        (151, "200"),
    ] {
        assert_eq!(field(&rep, tag), want, "tag {tag} in {}", show(&rep));
    }
    assert_eq!(field(&rep, 37), field(&ack, 37));

    // The old ClOrdID is gone; the new one cancels.
    p.send("F", &[(41, "A1"), (11, "A3"), (55, "IBM"), (54, "1")], None);
    let rej = p.expect("9");
    assert_eq!(
        (field(&rej, 434), field(&rej, 41), field(&rej, 11)),
        ("1".into(), "A1".into(), "A3".into())
    );
    p.send("F", &[(41, "A2"), (11, "A4"), (55, "IBM"), (54, "1")], None);
    let cxl = p.expect("8");
    for (tag, want) in [(150, "4"), (39, "4"), (11, "A4"), (41, "A2"), (151, "0")] {
        assert_eq!(field(&cxl, tag), want, "tag {tag} in {}", show(&cxl));
    }
    p.send("G", &[(41, "A2"), (11, "A5"), (38, "300")], None);
    assert_eq!(field(&p.expect("9"), 434), "2");

    // Bad D (no Symbol) and a duplicate live ClOrdID are rejected with 150=8.
    p.send("D", &[(11, "B1"), (54, "1"), (38, "100")], None);
    let bad = p.expect("8");
    assert_eq!(
        (field(&bad, 150), field(&bad, 39)),
        ("8".into(), "8".into())
    );
    assert!(!field(&bad, 58).is_empty());
    order(&mut p, "B2");
    assert_eq!(field(&p.expect("8"), 150), "0");
    order(&mut p, "B2");
    assert_eq!(field(&p.expect("8"), 150), "8");
    let s = ex.stop();
    assert_eq!(
        (s.cancelled, s.replaced, s.cancel_rejects, s.rejects),
        (1, 1, 2, 2),
        "{s}"
    );
}

#[test]
fn session_layer_over_tcp() {
    let ex = Exchange::start(&[]);
    let mut p = RawPeer::connect(ex.addr, "FIX.4.4");
    p.logon();
    // TestRequest -> Heartbeat echoing the id.
    p.send("1", &[(112, "PING-1")], None);
    let hb = p.expect("0");
    assert_eq!(field(&hb, 112), "PING-1");
    // We skip seq numbers: the exchange asks for them again.
    p.seq += 3;
    order(&mut p, "G1");
    let rr = p.expect("2");
    // The range really missing (3..5; the order came as 6), not "everything after" (16=0).
    assert_eq!((field(&rr, 7), field(&rr, 16)), ("3".into(), "5".into()));
    // The order itself is still handled.
    assert_eq!(field(&p.expect("8"), 150), "0");
    assert_eq!(field(&p.expect("8"), 150), "F");
    // We ask for a resend: answered with one SequenceReset-GapFill up to the next number.
    p.send("2", &[(7, "2"), (16, "0")], None);
    let gf = p.expect("4");
    assert_eq!(
        (field(&gf, 34), field(&gf, 123), field(&gf, 43)),
        ("2".into(), "Y".into(), "Y".into())
    );
    let next: u64 = field(&gf, 36).parse().unwrap();
    // Logon, Heartbeat, ResendRequest, two ERs were sent: next is 6.
    assert_eq!(next, 6);
    // An unsupported application message gets a session Reject.
    p.send("R", &[(131, "Q1")], None);
    let rej = p.expect("3");
    assert_eq!(field(&rej, 373), "11");
    // Logout is answered and the connection closed.
    p.send("5", &[], None);
    p.expect("5");
    assert!(p.next(Duration::from_millis(500)).is_none());
    let s = ex.stop();
    assert_eq!(s.session.resend_requests_sent, 1);
    assert_eq!(s.session.gap_fills_sent, 1);
    assert_eq!(s.session.test_requests_answered, 1);
}

#[test]
fn non_logon_first_message_is_dropped() {
    let ex = Exchange::start(&[]);
    let mut p = RawPeer::connect(ex.addr, "FIX.4.4");
    order(&mut p, "X1");
    assert!(p.next(Duration::from_millis(500)).is_none());
    let s = ex.stop();
    assert_eq!(s.protocol_errors, 1);
    assert_eq!(s.orders, 0);
}
