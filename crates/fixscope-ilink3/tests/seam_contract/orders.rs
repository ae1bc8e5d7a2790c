//! The order layer over whole sessions: what each message means to the correlator
//! (keys, kinds, ends) and to the session table, across a reconnect with a replay.

use fixscope_ilink3::encode;
use fixscope_ilink3::messages::Report;
use fixscope_ilink3::orders::{Ilink3Connection, Ilink3Event, Outcome, SessionBook};
use fixscope_ilink3::schema::*;
use fixscope_ilink3::session::{Ilink3Counters, SessionFact};
use fixscope_ilink3::Side;
use fixscope_protocol::{OrderEvent, RequestType, ResponseKind};

use crate::samples::{self, FIRM, T0, UUID};

/// One connection of a run, counting the messages it was fed.
struct Conn {
    conn: Ilink3Connection,
    fed: u64,
}

impl Conn {
    fn new() -> Self {
        Conn {
            conn: Ilink3Connection::new(),
            fed: 0,
        }
    }

    fn client(&mut self, book: &mut SessionBook, f: &[u8]) -> Outcome {
        self.fed += 1;
        self.conn.on_message(book, Side::Client, f, 0)
    }

    fn host(&mut self, book: &mut SessionBook, f: &[u8]) -> Outcome {
        self.fed += 1;
        self.conn.on_message(book, Side::Host, f, 0)
    }

    /// Every message lands in exactly one top-level count.
    fn check_counts(&self) {
        let c = self.conn.counters();
        let total = c.ilink3_negotiate_requests
            + c.ilink3_negotiations
            + c.ilink3_negotiation_rejects
            + c.ilink3_establish_requests
            + c.ilink3_establishments
            + c.ilink3_establish_rejects
            + c.ilink3_terminates
            + c.ilink3_sequences
            + c.ilink3_retransmit_requests
            + c.ilink3_retransmissions
            + c.ilink3_retransmit_rejects
            + c.ilink3_not_applied
            + c.ilink3_business_messages
            + c.ilink3_replayed_messages
            + c.ilink3_requests
            + c.ilink3_before_establish
            + c.ilink3_undecodable_messages
            + c.ilink3_other_messages
            + c.ilink3_wrong_side_messages;
        assert_eq!(total, self.fed, "{c:?}");
    }
}

fn rpt(template_id: u16, seq: u32, ori: Option<u64>, order_id: u64, leaves: u32) -> Vec<u8> {
    encode::report(&samples::report(template_id, seq, ori, order_id, leaves))
}

fn replayed(template_id: u16, seq: u32, ori: Option<u64>, order_id: u64, leaves: u32) -> Vec<u8> {
    encode::report(&Report {
        poss_retrans: true,
        ..samples::report(template_id, seq, ori, order_id, leaves)
    })
}

/// The request's (type, key, resend); its code is its template id.
fn request(o: &Outcome) -> (RequestType, Vec<u8>, bool) {
    match o.event.as_ref().map(Ilink3Event::order_event) {
        Some(OrderEvent::Request {
            request_type,
            key,
            resend,
            code,
        }) => {
            let template: &[u8] = match request_type {
                RequestType::NewOrder => b"514",
                RequestType::Replace => b"515",
                _ => b"516",
            };
            assert_eq!(code.as_bytes(), template, "{request_type:?}");
            (request_type, key.to_vec(), resend)
        }
        other => panic!("not a request: {other:?}"),
    }
}

/// The response's (key, kind, ends, code).
fn response(o: &Outcome) -> (String, ResponseKind, String, String) {
    match o.event.as_ref().map(Ilink3Event::order_event) {
        Some(OrderEvent::Response {
            key,
            kind,
            ends,
            code,
        }) => (
            String::from_utf8_lossy(key).into(),
            kind,
            String::from_utf8_lossy(ends).into(),
            String::from_utf8_lossy(code.as_bytes()).into(),
        ),
        other => panic!("not a response: {other:?}"),
    }
}

fn kind(f: impl FnOnce(&mut ResponseKind)) -> ResponseKind {
    let mut k = ResponseKind::default();
    f(&mut k);
    k
}

fn establish(book: &mut SessionBook, c: &mut Conn, client_next: u32, host_next: u32) -> Outcome {
    c.client(book, &encode::establish(UUID, FIRM, T0, client_next));
    c.host(book, &encode::establishment_ack(UUID, T0, host_next))
}

#[test]
fn a_session_pairs_on_order_request_id_and_a_reconnect_counts_nothing_twice() {
    let mut book = SessionBook::new();
    let mut a = Conn::new();
    let neg = a.client(&mut book, &encode::negotiate(UUID, FIRM, T0));
    assert!(matches!(
        neg.fact,
        Some(SessionFact::NegotiateRequested { uuid: UUID, .. })
    ));
    a.host(&mut book, &encode::negotiation_response(UUID, T0));
    let est = establish(&mut book, &mut a, 1, 1);
    let Some(SessionFact::Established {
        name,
        resumed,
        gap_messages,
        ..
    }) = est.fact
    else {
        panic!("{est:?}")
    };
    assert_eq!(
        (name.uuid, name.firm.as_bytes(), resumed, gap_messages),
        (UUID, FIRM, false, 0)
    );

    // A new order, its ack, a partial fill and the fill that ends it.
    let nos = a.client(&mut book, &samples::nos(1, 1001));
    assert_eq!(
        request(&nos),
        (RequestType::NewOrder, b"1001".to_vec(), false)
    );
    assert_eq!(
        nos.sending_time_ns,
        Some(T0 + 1),
        "the client's SendingTimeEpoch"
    );
    let ack = a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 1, Some(1001), 7001, 10),
    );
    let ack_kind = kind(|k| k.ack = true);
    assert_eq!(
        response(&ack),
        ("1001".into(), ack_kind, "".into(), "522".into())
    );
    assert_eq!(ack.sending_time_ns, Some(T0 + 1_001));
    let partial = a.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            2,
            Some(1001),
            7001,
            6,
        ),
    );
    assert_eq!(response(&partial).1, kind(|k| k.fill = true));
    let full = a.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            3,
            Some(1001),
            7001,
            0,
        ),
    );
    assert_eq!(
        response(&full).1,
        kind(|k| (k.fill, k.terminal) = (true, true))
    );
    assert_eq!(book.open_orders(UUID), 0);

    // A replace ends the order it replaced; a fill after it goes to the replace's key
    // (whichever OrderRequestID it echoes); a cancel ends the replacement.
    a.client(&mut book, &samples::nos(2, 2001));
    a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 4, Some(2001), 7002, 10),
    );
    let rep = a.client(&mut book, &samples::replace(3, 2002, 7002));
    assert_eq!(
        request(&rep),
        (RequestType::Replace, b"2002".to_vec(), false)
    );
    let modified = a.host(
        &mut book,
        &rpt(execution_report_modify_531::ID, 5, Some(2002), 7002, 10),
    );
    let replaced = kind(|k| (k.ack, k.ends_original) = (true, true));
    assert_eq!(
        response(&modified),
        ("2002".into(), replaced, "2001".into(), "531".into())
    );
    let fill = a.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            6,
            Some(2001),
            7002,
            5,
        ),
    );
    assert_eq!(response(&fill).0, "2002");
    let can = a.client(&mut book, &samples::cancel(4, 2003, 7002));
    assert_eq!(
        request(&can),
        (RequestType::Cancel, b"2003".to_vec(), false)
    );
    let cancelled = a.host(
        &mut book,
        &rpt(execution_report_cancel_534::ID, 7, Some(2003), 7002, 0),
    );
    let cancel_ack = kind(|k| (k.ack, k.terminal, k.ends_original) = (true, true, true));
    assert_eq!(
        response(&cancelled),
        ("2003".into(), cancel_ack, "2002".into(), "534".into())
    );

    // An IOC's Elimination with no cancel pending: CME's own end, not a cancel's ack.
    a.client(&mut book, &samples::nos(5, 3001));
    a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 8, Some(3001), 7003, 10),
    );
    let elim = a.host(
        &mut book,
        &rpt(execution_report_elimination_524::ID, 9, Some(3001), 7003, 0),
    );
    let expired = kind(|k| (k.venue_initiated, k.terminal) = (true, true));
    assert_eq!(
        response(&elim),
        ("3001".into(), expired, "".into(), "524".into())
    );

    // A BusinessReject answers the request its RefSeqNum numbers.
    a.client(&mut book, &samples::nos(6, 4001));
    let br = a.host(&mut book, &samples::business_reject(10, 6));
    let reject = kind(|k| (k.ack, k.reject, k.terminal) = (true, true, true));
    assert_eq!(
        response(&br),
        ("4001".into(), reject, "".into(), "521".into())
    );
    let unpaired = a.host(&mut book, &samples::business_reject(11, 99));
    assert_eq!(unpaired.event, None);
    // A request whose OrderRequestID was seen: a resend.
    let again = a.client(&mut book, &samples::nos(7, 1001));
    assert_eq!(
        request(&again),
        (RequestType::NewOrder, b"1001".to_vec(), true)
    );
    // An order whose ack the capture will miss.
    a.client(&mut book, &samples::nos(8, 5001));
    a.check_counts();
    let c = *a.conn.counters();
    assert_eq!(
        (c.ilink3_business_rejects_unpaired, c.ilink3_resent_requests),
        (1, 1)
    );
    assert_eq!(book.highest_sequence(UUID), 11);

    // A second connection of the same UUID: CME's next is 14, so 12 and 13 were missed.
    let mut b = Conn::new();
    let est = establish(&mut book, &mut b, 9, 14);
    let Some(SessionFact::Established {
        resumed,
        gap_messages,
        ..
    }) = est.fact
    else {
        panic!("{est:?}")
    };
    assert_eq!((resumed, gap_messages), (true, 2));
    let rr = b.client(
        &mut book,
        &encode::retransmit_request(UUID, None, T0, 1, 13),
    );
    assert!(matches!(
        rr.fact,
        Some(SessionFact::RetransmitRequested {
            from_seq: 1,
            count: 13,
            ..
        })
    ));
    b.host(&mut book, &encode::retransmission(UUID, None, T0, 1, 13));
    // The replay: what was seen emits nothing; 12 (the missed ack) is recovered.
    for seq in [1, 2, 3] {
        let ori = Some(1001);
        let out = b.host(
            &mut book,
            &replayed(execution_report_trade_outright_525::ID, seq, ori, 7001, 0),
        );
        assert_eq!(out.event, None, "{seq}");
        assert_eq!(
            out.fact,
            Some(SessionFact::Sequenced {
                seq,
                replayed: true,
                recovered: false
            })
        );
    }
    let missed = b.host(
        &mut book,
        &replayed(execution_report_new_522::ID, 12, Some(5001), 7005, 10),
    );
    assert_eq!(missed.event, None);
    assert_eq!(
        missed.fact,
        Some(SessionFact::Sequenced {
            seq: 12,
            replayed: true,
            recovered: true
        })
    );
    b.host(
        &mut book,
        &replayed(execution_report_status_532::ID, 13, Some(5001), 7005, 10),
    );
    // Live again: the missed order's fill pairs by what the recovered ack taught.
    let live = b.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            14,
            Some(5001),
            7005,
            4,
        ),
    );
    assert_eq!(response(&live).0, "5001");
    let dup = b.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            14,
            Some(5001),
            7005,
            4,
        ),
    );
    assert_eq!(dup.event, None, "the same number again is a replay");
    // A jump: 15 and 16 never seen; the one after them is new all the same.
    let jump = b.host(
        &mut book,
        &rpt(
            execution_report_trade_outright_525::ID,
            17,
            Some(5001),
            7005,
            0,
        ),
    );
    assert!(response(&jump).1.terminal);
    // Marked a retransmission though above the highest: a replay of one never seen.
    let above = b.host(
        &mut book,
        &replayed(execution_report_status_532::ID, 18, Some(5001), 7005, 0),
    );
    assert_eq!(above.event, None);
    let seq = b.host(&mut book, &encode::sequence(UUID, 21));
    assert!(matches!(
        seq.fact,
        Some(SessionFact::Heartbeat {
            gap_messages: 2,
            ..
        })
    ));
    b.check_counts();
    let c: Ilink3Counters = *b.conn.counters();
    assert_eq!(c.ilink3_replayed_messages, 7);
    assert_eq!(c.ilink3_recovered_messages, 3);
    assert_eq!(c.ilink3_business_messages, 2);
    assert_eq!(
        (c.ilink3_sequence_gaps, c.ilink3_sequence_gap_messages),
        (3, 6)
    );
    assert_eq!(c.ilink3_unknown_order_responses, 0);
    assert_eq!(book.len(), 1);
}

#[test]
fn pending_cancels_rejects_and_unsolicited_reports() {
    let mut book = SessionBook::new();
    let mut a = Conn::new();
    establish(&mut book, &mut a, 1, 1);
    a.client(&mut book, &samples::nos(1, 1001));
    a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 1, Some(1001), 7001, 10),
    );
    // A cancel refused: the cancel's entry is over, the order lives.
    a.client(&mut book, &samples::cancel(2, 1002, 7001));
    let refused = a.host(
        &mut book,
        &rpt(order_cancel_reject_535::ID, 2, Some(1002), 7001, 10),
    );
    let reject = kind(|k| (k.ack, k.reject, k.terminal) = (true, true, true));
    assert_eq!(
        response(&refused),
        ("1002".into(), reject, "".into(), "535".into())
    );
    assert_eq!(book.open_orders(UUID), 1);
    // A cancel pending (as FIX's 150=6: the ack), then done.
    a.client(&mut book, &samples::cancel(3, 1003, 7001));
    let pending = a.host(
        &mut book,
        &rpt(
            execution_report_pending_cancel_564::ID,
            3,
            Some(1003),
            7001,
            10,
        ),
    );
    assert_eq!(response(&pending).1, kind(|k| k.ack = true));
    let status = a.host(
        &mut book,
        &rpt(execution_report_status_532::ID, 4, Some(1001), 7001, 10),
    );
    assert_eq!(
        response(&status).0,
        "1001",
        "a status goes to the order's entry"
    );
    assert!(response(&status).1.unsolicited);
    let done = a.host(
        &mut book,
        &rpt(execution_report_cancel_534::ID, 5, Some(1003), 7001, 0),
    );
    assert_eq!(response(&done).2, "1001", "ends the order");
    assert_eq!(book.open_orders(UUID), 0);
    // A cancel nobody asked for (cancel on disconnect): CME's own, on the order's entry.
    a.client(&mut book, &samples::nos(4, 2001));
    a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 6, Some(2001), 7002, 10),
    );
    let cod = a.host(
        &mut book,
        &rpt(execution_report_cancel_534::ID, 7, Some(2001), 7002, 0),
    );
    let expired = kind(|k| (k.venue_initiated, k.terminal) = (true, true));
    assert_eq!(
        response(&cod),
        ("2001".into(), expired, "".into(), "534".into())
    );
    // A new order rejected; a report of an order never seen.
    a.client(&mut book, &samples::nos(5, 3001));
    let rej = a.host(
        &mut book,
        &rpt(execution_report_reject_523::ID, 8, Some(3001), 0, 0),
    );
    assert_eq!(response(&rej).1, reject);
    a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 9, Some(9999), 7999, 10),
    );
    a.check_counts();
    assert_eq!(a.conn.counters().ilink3_unknown_order_responses, 1);
}

#[test]
fn a_connection_without_establish_uses_the_uuid_cme_messages_carry() {
    let mut book = SessionBook::new();
    let mut a = Conn::new();
    let early = a.client(&mut book, &samples::nos(1, 1001));
    assert_eq!(early.event, None);
    assert_eq!(a.conn.counters().ilink3_before_establish, 1);
    let report = a.host(
        &mut book,
        &rpt(execution_report_new_522::ID, 40, Some(1001), 7001, 10),
    );
    assert_eq!(response(&report).0, "1001");
    assert_eq!(a.conn.session().map(|s| s.uuid), Some(UUID));
    let next = a.client(&mut book, &samples::nos(2, 1002));
    assert_eq!(request(&next).1, b"1002");
    // Session messages of both sides.
    a.client(&mut book, &encode::sequence(UUID, 3));
    a.host(&mut book, &encode::not_applied(UUID, 2, 1));
    a.host(&mut book, &encode::terminate(UUID, T0, 0));
    a.host(&mut book, &encode::negotiation_reject(UUID, T0, 3));
    a.host(&mut book, &encode::establishment_reject(UUID, T0, 4));
    a.host(&mut book, &encode::retransmit_reject(UUID, T0, 5));
    a.client(&mut book, &encode::Builder::new(517).finish());
    a.check_counts();
    let c = a.conn.counters();
    assert_eq!(c.ilink3_other_messages, 1);
    assert_eq!(
        (
            c.ilink3_not_applied,
            c.ilink3_terminates,
            c.ilink3_sequences
        ),
        (1, 1, 1)
    );
}
