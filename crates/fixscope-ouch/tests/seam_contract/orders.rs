//! The order layer (`orders`, `session`): sessions built with the encoder, and the events
//! they must give written out here by hand — keys, kinds, codes — from the rules in
//! docs/protocols.md ("Session and pairing rules"), never from the code under test.

use fixscope_ouch::encode::{self, ouch42_packet, ouch50_packet};
use fixscope_ouch::orders::SessionBook;
use fixscope_ouch::orders::{OuchConnection, Outcome, Version};
use fixscope_ouch::ouch42::{self as o42};
use fixscope_ouch::ouch50::{self as o50, Appendage};
use fixscope_ouch::session::{Key, SessionFact, SessionName};
use fixscope_ouch::soupbin::Side;
use fixscope_protocol::{OrderEvent, RequestType, ResponseCode, ResponseKind};
use proptest::prelude::*;

use super::samples;

const TS: u64 = 34_200_000_000_000;

/// One TCP connection of a run whose book is shared.
struct Conn(OuchConnection);

impl Conn {
    fn new(version: Version) -> Self {
        Conn(OuchConnection::new(version))
    }
    fn send(&mut self, book: &mut SessionBook, side: Side, packet: &[u8]) -> Outcome {
        self.0.on_packet(book, side, packet, TS)
    }
    fn client(&mut self, book: &mut SessionBook, packet: &[u8]) -> Outcome {
        self.send(book, Side::Client, packet)
    }
    fn host(&mut self, book: &mut SessionBook, packet: &[u8]) -> Outcome {
        self.send(book, Side::Host, packet)
    }
    /// Logs in as `user` into `session`, the host's next packet numbered `next`.
    fn login(&mut self, book: &mut SessionBook, user: &[u8], session: &[u8], next: u64) {
        let asked = self.client(
            book,
            &encode::login_request(user, b"pw", session, Some(next)),
        );
        assert!(matches!(
            asked.fact,
            Some(SessionFact::LoginRequested { .. })
        ));
        let accepted = self.host(book, &encode::login_accepted(session, next));
        assert!(accepted.event.is_none());
    }
}

/// The event of `o`, as the seam's, compared with `expected`.
fn assert_event(o: &Outcome, expected: Option<OrderEvent<'_>>, what: &str) {
    assert_eq!(
        o.event.as_ref().map(|e| e.order_event()),
        expected,
        "{what}"
    );
}

/// A request event, its code the OUCH message's letter (a key marked as a modify's:
/// Modify `M`, though tracked as a replace).
fn request(request_type: RequestType, key: &[u8], resend: bool) -> Option<OrderEvent<'_>> {
    let modify = key.ends_with(b"\xffmodify");
    let letter: &[u8] = match request_type {
        RequestType::NewOrder => b"O",
        RequestType::Replace if modify => b"M",
        RequestType::Replace => b"U",
        _ => b"X",
    };
    Some(OrderEvent::Request {
        request_type,
        key,
        resend,
        code: ResponseCode::of(letter),
    })
}

/// A response event; `flags` names the kind's true fields.
fn response<'a>(key: &'a [u8], flags: &str, ends: &'a [u8], code: &[u8]) -> Option<OrderEvent<'a>> {
    let mut kind = ResponseKind::default();
    for flag in flags.split_whitespace() {
        match flag {
            "ack" => kind.ack = true,
            "fill" => kind.fill = true,
            "terminal" => kind.terminal = true,
            "ends_original" => kind.ends_original = true,
            "reject" => kind.reject = true,
            "unsolicited" => kind.unsolicited = true,
            "venue_initiated" => kind.venue_initiated = true,
            other => panic!("no flag {other}"),
        }
    }
    Some(OrderEvent::Response {
        key,
        kind,
        ends,
        code: ResponseCode::of(code),
    })
}

// OUCH 4.2 messages (enter42's shares: 300; replace42's: 200).
fn enter42(token: &'static [u8]) -> Vec<u8> {
    ouch42_packet(&samples::enter42(token))
}
fn accepted42(token: &'static [u8]) -> Vec<u8> {
    ouch42_packet(&o42::Message::Accepted(samples::accepted42(token, TS)))
}
fn executed42(token: &'static [u8], shares: u32, match_number: u64) -> Vec<u8> {
    ouch42_packet(&o42::Message::Executed {
        timestamp_ns: TS,
        token,
        executed_shares: shares,
        execution_price: 1_895_000,
        liquidity_flag: b'A',
        match_number,
    })
}
fn canceled42(token: &'static [u8], decrement: u32, reason: u8) -> Vec<u8> {
    ouch42_packet(&o42::Message::Canceled {
        timestamp_ns: TS,
        token,
        decrement_shares: decrement,
        reason,
    })
}
fn cancel42(token: &'static [u8]) -> Vec<u8> {
    ouch42_packet(&o42::Message::CancelOrder { token, shares: 0 })
}

// OUCH 5.0 messages (enter50's quantity: 500).
fn enter50(n: u32) -> Vec<u8> {
    ouch50_packet(&samples::enter50(n, b""))
}
fn accepted50(n: u32) -> Vec<u8> {
    ouch50_packet(&o50::Message::Accepted(samples::accepted50(n, b"")))
}
fn executed50(n: u32, quantity: u32) -> Vec<u8> {
    ouch50_packet(&o50::Message::Executed {
        timestamp_ns: TS,
        user_ref_num: n,
        quantity,
        price: 4_123_400,
        liquidity_flag: b'R',
        match_number: 1,
        appendage: Appendage { bytes: b"" },
    })
}

const T1: &[u8] = b"T1";
const T1_CANCEL: &[u8] = b"T1\xffcancel";

#[test]
fn ouch42_enter_accepted_and_fills_are_terminal_only_at_the_full_fill() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.client(
        &mut book,
        &encode::login_request(b"USER01", b"pw", b"", Some(1)),
    );
    let login = c.host(&mut book, &encode::login_accepted(b"SESSION042", 1));
    let name = SessionName {
        session: Key::new(b"SESSION042"),
        username: Key::new(b"USER01"),
    };
    assert_eq!(
        login.fact,
        Some(SessionFact::LoggedIn {
            name,
            next_sequence: 1,
            resumed: false,
            gap_packets: 0
        })
    );
    assert_eq!(c.0.session(), Some(&name));
    let system = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::SystemEvent {
            timestamp_ns: TS,
            event_code: b'S',
        }),
    );
    assert_event(&system, None, "system event");
    assert_eq!(
        system.fact,
        Some(SessionFact::Sequenced {
            sequence: 1,
            replayed: false,
            recovered: false
        })
    );
    // The token is 14 bytes on the wire, space padded: the key is without the padding.
    let o = c.client(&mut book, &enter42(T1));
    assert_event(&o, request(RequestType::NewOrder, T1, false), "enter");
    assert_event(
        &c.host(&mut book, &accepted42(T1)),
        response(T1, "ack", b"", b"A"),
        "accepted",
    );
    let partial = c.host(&mut book, &executed42(T1, 100, 1));
    assert_event(&partial, response(T1, "fill", b"", b"E"), "partial fill");
    assert_eq!(book.open_orders(&name), 1);
    let full = c.host(&mut book, &executed42(T1, 200, 2));
    assert_event(&full, response(T1, "fill terminal", b"", b"E"), "full fill");
    assert_eq!(book.open_orders(&name), 0);
    assert_eq!(book.highest_sequence(&name), 4);
    let n = c.0.counters();
    assert_eq!(
        (
            n.soupbin_logins,
            n.soupbin_sequenced_packets,
            n.ouch_other_messages
        ),
        (1, 4, 1)
    );
    assert_eq!((n.soupbin_replayed_packets, n.ouch_resent_requests), (0, 0));
}

#[test]
fn ouch50_enter_accepted_and_fills_are_keyed_by_the_user_ref_num_in_decimal() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch50);
    c.login(&mut book, b"USER05", b"SESSION050", 1);
    let o = c.client(&mut book, &enter50(1001));
    assert_event(&o, request(RequestType::NewOrder, b"1001", false), "enter");
    let a = c.host(&mut book, &accepted50(1001));
    assert_event(&a, response(b"1001", "ack", b"", b"A"), "accepted");
    let e = c.host(&mut book, &executed50(1001, 200));
    assert_event(&e, response(b"1001", "fill", b"", b"E"), "partial");
    let e = c.host(&mut book, &executed50(1001, 300));
    assert_event(&e, response(b"1001", "fill terminal", b"", b"E"), "full");
    // Rejected: a reject, an ack, terminal, on the rejected Enter's key.
    c.client(&mut book, &enter50(7));
    let j = c.host(
        &mut book,
        &ouch50_packet(&o50::Message::Rejected {
            timestamp_ns: TS,
            user_ref_num: 7,
            reason: 0x0102,
            cl_ord_id: b"X",
        }),
    );
    assert_event(
        &j,
        response(b"7", "ack reject terminal", b"", b"J"),
        "rejected",
    );
}

#[test]
fn a_replace_is_keyed_by_its_new_order_and_its_answer_ends_the_old_one() {
    // 4.2: Existing T1 → Replacement T2 (200 shares).
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.login(&mut book, b"USER01", b"S42", 1);
    c.client(&mut book, &enter42(T1));
    c.host(&mut book, &accepted42(T1));
    let r = c.client(&mut book, &ouch42_packet(&samples::replace42(T1, b"T2")));
    assert_event(&r, request(RequestType::Replace, b"T2", false), "replace");
    let replaced = ouch42_packet(&o42::Message::Replaced(o42::Replaced {
        accepted: samples::accepted42(b"T2", TS),
        previous_token: T1,
    }));
    let u = c.host(&mut book, &replaced);
    assert_event(
        &u,
        response(b"T2", "ack ends_original", T1, b"U"),
        "replaced",
    );
    // The new order's shares are the Replace's.
    let e = c.host(&mut book, &executed42(b"T2", 200, 3));
    assert_event(
        &e,
        response(b"T2", "fill terminal", b"", b"E"),
        "fill of the new",
    );

    // 5.0: OrigUserRefNum 1001 → UserRefNum 1003 (400).
    let mut c = Conn::new(Version::Ouch50);
    c.login(&mut book, b"USER05", b"S50", 1);
    c.client(&mut book, &enter50(1001));
    c.host(&mut book, &accepted50(1001));
    let replace = samples::client50()[3].clone();
    assert_event(
        &c.client(&mut book, &replace),
        request(RequestType::Replace, b"1003", false),
        "replace",
    );
    let replaced = samples::host50()[3].clone();
    let u = c.host(&mut book, &replaced);
    assert_event(
        &u,
        response(b"1003", "ack ends_original", b"1001", b"U"),
        "replaced",
    );
    let e = c.host(&mut book, &executed50(1003, 399));
    assert_event(&e, response(b"1003", "fill", b"", b"E"), "not all of 400");
    let e = c.host(&mut book, &executed50(1003, 1));
    assert_event(
        &e,
        response(b"1003", "fill terminal", b"", b"E"),
        "all of 400",
    );
}

#[test]
fn a_cancel_is_tracked_apart_from_its_order_and_its_answer_ends_the_order() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.login(&mut book, b"USER01", b"S42", 1);
    c.client(&mut book, &enter42(T1));
    c.host(&mut book, &accepted42(T1));
    let x = c.client(&mut book, &cancel42(T1));
    assert_event(&x, request(RequestType::Cancel, T1_CANCEL, false), "cancel");
    assert_ne!(T1_CANCEL, T1);
    let p = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::CancelPending {
            timestamp_ns: TS,
            token: T1,
        }),
    );
    assert_event(&p, response(T1_CANCEL, "ack", b"", b"P"), "cancel pending");
    let canceled = c.host(&mut book, &canceled42(T1, 300, b'U'));
    assert_event(
        &canceled,
        response(T1_CANCEL, "ack terminal ends_original", T1, b"C"),
        "canceled",
    );

    // 5.0 alike, the cancel under the UserRefNum's decimal and the mark.
    let mut c = Conn::new(Version::Ouch50);
    c.login(&mut book, b"USER05", b"S50", 1);
    c.client(&mut book, &enter50(5));
    let x = c.client(
        &mut book,
        &ouch50_packet(&o50::Message::CancelOrder {
            user_ref_num: 5,
            quantity: 0,
        }),
    );
    assert_event(
        &x,
        request(RequestType::Cancel, b"5\xffcancel", false),
        "cancel",
    );
    let again = c.client(
        &mut book,
        &ouch50_packet(&o50::Message::CancelOrder {
            user_ref_num: 5,
            quantity: 0,
        }),
    );
    assert_event(
        &again,
        request(RequestType::Cancel, b"5\xffcancel", true),
        "a second cancel while one is pending is a resend",
    );
    let canceled = c.host(
        &mut book,
        &ouch50_packet(&o50::Message::Canceled {
            timestamp_ns: TS,
            user_ref_num: 5,
            quantity: 500,
            reason: b'U',
        }),
    );
    assert_event(
        &canceled,
        response(b"5\xffcancel", "ack terminal ends_original", b"5", b"C"),
        "canceled",
    );
}

#[test]
fn an_iocs_canceled_with_no_cancel_pending_is_the_venues_never_a_fast_cancel_ack() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.login(&mut book, b"USER01", b"S42", 1);
    c.client(&mut book, &enter42(T1));
    c.host(&mut book, &accepted42(T1));
    let ioc = c.host(&mut book, &canceled42(T1, 300, b'I'));
    assert_event(
        &ioc,
        response(T1, "venue_initiated terminal", b"", b"C"),
        "ioc",
    );
    // A partly filled IOC: its remainder's Canceled ends it.
    c.client(&mut book, &enter42(b"T2"));
    c.host(&mut book, &accepted42(b"T2"));
    c.host(&mut book, &executed42(b"T2", 100, 9));
    let rest = c.host(&mut book, &canceled42(b"T2", 200, b'I'));
    assert_event(
        &rest,
        response(b"T2", "venue_initiated terminal", b"", b"C"),
        "rest",
    );
    // AIQ Canceled: the venue's, less than the order's shares: not over.
    c.client(&mut book, &enter42(b"T3"));
    let aiq = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::AiqCanceled {
            timestamp_ns: TS,
            token: b"T3",
            decrement_shares: 100,
            reason: b'Q',
            quantity_prevented_from_trading: 100,
            execution_price: 0,
            liquidity_flag: b'A',
        }),
    );
    assert_event(&aiq, response(b"T3", "venue_initiated", b"", b"D"), "aiq");
}

#[test]
fn a_cancel_reject_ends_the_cancel_not_the_order() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.login(&mut book, b"USER01", b"S42", 1);
    c.client(&mut book, &enter42(T1));
    c.host(&mut book, &accepted42(T1));
    c.client(&mut book, &cancel42(T1));
    let i = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::CancelReject {
            timestamp_ns: TS,
            token: T1,
        }),
    );
    assert_event(
        &i,
        response(T1_CANCEL, "ack reject terminal", b"", b"I"),
        "reject",
    );
    let e = c.host(&mut book, &executed42(T1, 300, 4));
    assert_event(
        &e,
        response(T1, "fill terminal", b"", b"E"),
        "the order lives on",
    );
}

#[test]
fn a_modify_is_a_replace_under_its_own_marked_key_and_other_reports_are_unsolicited() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    c.login(&mut book, b"USER01", b"S42", 1);
    c.client(&mut book, &enter42(T1));
    let m = c.client(
        &mut book,
        &ouch42_packet(&o42::Message::ModifyOrder {
            token: T1,
            side: b'B',
            shares: 50,
        }),
    );
    assert_event(
        &m,
        request(RequestType::Replace, b"T1\xffmodify", false),
        "modify",
    );
    let modified = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::OrderModified {
            timestamp_ns: TS,
            token: T1,
            side: b'B',
            shares: 50,
        }),
    );
    assert_event(
        &modified,
        response(b"T1\xffmodify", "ack terminal", b"", b"M"),
        "modified",
    );
    let bust = c.host(
        &mut book,
        &ouch42_packet(&o42::Message::BrokenTrade {
            timestamp_ns: TS,
            token: T1,
            match_number: 1,
            reason: b'E',
        }),
    );
    assert_event(
        &bust,
        response(T1, "unsolicited", b"", b"B"),
        "broken trade",
    );
    // The modified order's shares are 50 now.
    let e = c.host(&mut book, &executed42(T1, 50, 5));
    assert_event(
        &e,
        response(T1, "fill terminal", b"", b"E"),
        "modified size filled",
    );
}

#[test]
fn a_relogin_replays_nothing_twice_and_a_resent_order_is_a_resend() {
    let mut book = SessionBook::new();
    let mut first = Conn::new(Version::Ouch42);
    first.login(&mut book, b"USER01", b"S42", 1);
    first.client(&mut book, &enter42(T1));
    first.client(&mut book, &enter42(b"T2"));
    let host = [accepted42(T1), accepted42(b"T2"), executed42(T1, 100, 1)];
    for p in &host {
        assert!(first.host(&mut book, p).event.is_some());
    }
    // The TCP connection fails; a new one logs into the same session asking for 2.
    let mut second = Conn::new(Version::Ouch42);
    second.client(
        &mut book,
        &encode::login_request(b"USER01", b"pw", b"S42", Some(2)),
    );
    let login = second.host(&mut book, &encode::login_accepted(b"S42", 2));
    assert!(matches!(
        login.fact,
        Some(SessionFact::LoggedIn {
            resumed: true,
            gap_packets: 0,
            ..
        })
    ));
    for p in &host[1..] {
        let o = second.host(&mut book, p);
        assert_event(&o, None, "a replayed packet");
        assert!(matches!(
            o.fact,
            Some(SessionFact::Sequenced { replayed: true, .. })
        ));
    }
    assert_eq!(second.0.counters().soupbin_replayed_packets, 2);
    let new = second.host(&mut book, &executed42(T1, 200, 2));
    assert_event(
        &new,
        response(T1, "fill terminal", b"", b"E"),
        "new after the replay",
    );
    let resent = second.client(&mut book, &enter42(b"T2"));
    assert_event(
        &resent,
        request(RequestType::NewOrder, b"T2", true),
        "resent",
    );
    assert_eq!(second.0.counters().ouch_resent_requests, 1);
    let fresh = second.client(&mut book, &enter42(b"T3"));
    assert_event(
        &fresh,
        request(RequestType::NewOrder, b"T3", false),
        "fresh",
    );
    // Another user's session of the same id is another logical session.
    let mut other = Conn::new(Version::Ouch42);
    other.login(&mut book, b"USER02", b"S42", 1);
    let o = other.host(&mut book, &accepted42(b"T9"));
    assert_event(
        &o,
        response(b"T9", "ack", b"", b"A"),
        "other user's first packet",
    );
    assert_eq!(book.len(), 2);

    // 5.0: a UserRefNum not above the last seen is a resend.
    let mut c = Conn::new(Version::Ouch50);
    c.login(&mut book, b"USER05", b"S50", 1);
    c.client(&mut book, &enter50(10));
    c.client(&mut book, &enter50(11));
    let mut c2 = Conn::new(Version::Ouch50);
    c2.login(&mut book, b"USER05", b"S50", 1);
    let again = c2.client(&mut book, &enter50(10));
    assert_event(
        &again,
        request(RequestType::NewOrder, b"10", true),
        "5.0 resend",
    );
    let next = c2.client(&mut book, &enter50(12));
    assert_event(
        &next,
        request(RequestType::NewOrder, b"12", false),
        "5.0 new",
    );
}

#[test]
fn a_relogin_past_the_highest_seen_is_a_gap_whose_packets_count_for_shares_if_replayed_later() {
    let mut book = SessionBook::new();
    let mut first = Conn::new(Version::Ouch42);
    first.login(&mut book, b"USER01", b"S42", 1);
    for t in [&b"A1"[..], b"A2", b"A3"] {
        first.client(&mut book, &ouch42_packet(&samples::enter42(t)));
    }
    for t in [&b"A1"[..], b"A2", b"A3"] {
        first.host(
            &mut book,
            &ouch42_packet(&o42::Message::Accepted(samples::accepted42(t, TS))),
        );
    }
    // Packets 4 and 5 were sent on no captured connection.
    let mut second = Conn::new(Version::Ouch42);
    second.client(
        &mut book,
        &encode::login_request(b"USER01", b"pw", b"S42", Some(6)),
    );
    let login = second.host(&mut book, &encode::login_accepted(b"S42", 6));
    assert!(matches!(
        login.fact,
        Some(SessionFact::LoggedIn {
            gap_packets: 2,
            resumed: true,
            ..
        })
    ));
    let n = second.0.counters();
    assert_eq!(
        (n.soupbin_sequence_gaps, n.soupbin_sequence_gap_packets),
        (1, 2)
    );
    let six = second.host(&mut book, &executed42(b"A1", 300, 6));
    assert_event(
        &six,
        response(b"A1", "fill terminal", b"", b"E"),
        "packet 6",
    );
    // A third connection asks for 4: 4 and 5 were never seen sent; they are replays all
    // the same (their time is the reconnect's), so no event, but their fills count: A2
    // is filled by packet 4, and A3's second fill (packet 7) is its last.
    let mut third = Conn::new(Version::Ouch42);
    third.login(&mut book, b"USER01", b"S42", 4);
    let four = third.host(&mut book, &executed42(b"A2", 300, 4));
    assert_event(&four, None, "packet 4");
    assert_eq!(
        four.fact,
        Some(SessionFact::Sequenced {
            sequence: 4,
            replayed: true,
            recovered: true
        })
    );
    let five = third.host(&mut book, &executed42(b"A3", 100, 5));
    assert_event(&five, None, "packet 5");
    let six_again = third.host(&mut book, &executed42(b"A1", 300, 6));
    assert_event(&six_again, None, "packet 6 again");
    assert!(matches!(
        six_again.fact,
        Some(SessionFact::Sequenced {
            replayed: true,
            recovered: false,
            ..
        })
    ));
    let seven = third.host(&mut book, &executed42(b"A3", 200, 7));
    assert_event(
        &seven,
        response(b"A3", "fill terminal", b"", b"E"),
        "packet 7",
    );
    let n = third.0.counters();
    assert_eq!(
        (n.soupbin_replayed_packets, n.soupbin_recovered_packets),
        (3, 2)
    );
    let name = SessionName {
        session: Key::new(b"S42"),
        username: Key::new(b"USER01"),
    };
    assert_eq!(book.open_orders(&name), 0, "A2 ended by a recovered packet");
}

#[test]
fn bad_input_is_counted_and_numbering_goes_on() {
    let mut book = SessionBook::new();
    let mut c = Conn::new(Version::Ouch42);
    // Before a login: no logical session to put it in.
    assert_event(&c.client(&mut book, &enter42(T1)), None, "before login");
    c.login(&mut book, b"USER01", b"S42", 1);
    // An Accepted one byte short inside a valid packet; a 5.0 message on a 4.2 port.
    let mut short = o42_bytes(&o42::Message::Accepted(samples::accepted42(T1, TS)));
    short.pop();
    let o = c.host(&mut book, &encode::packet(b'S', &short));
    assert_event(&o, None, "undecodable");
    assert!(matches!(
        o.fact,
        Some(SessionFact::Sequenced { sequence: 1, .. })
    ));
    assert_event(&c.client(&mut book, &enter50(3)), None, "5.0 on a 4.2 port");
    assert_event(
        &c.client(&mut book, &encode::packet(b'U', b"")),
        None,
        "empty",
    );
    // Not a packet at all; a host packet from the client; a login with no number.
    assert_event(
        &c.client(&mut book, b"\x00\x05Sab"),
        None,
        "length mismatch",
    );
    assert_event(&c.client(&mut book, &accepted42(T1)), None, "wrong side");
    let mut blank = encode::login_accepted(b"S42", 1);
    blank[13..].fill(b' ');
    assert_event(&c.host(&mut book, &blank), None, "blank sequence number");
    // The next good S packet is number 2.
    let a = c.host(&mut book, &accepted42(T1));
    assert_event(&a, response(T1, "ack", b"", b"A"), "good");
    assert!(matches!(
        a.fact,
        Some(SessionFact::Sequenced { sequence: 2, .. })
    ));
    let n = *c.0.counters();
    assert_eq!(n.soupbin_before_login, 1);
    assert_eq!(n.ouch_undecodable_messages, 3);
    assert_eq!(n.soupbin_undecodable_packets, 2);
    assert_eq!(n.soupbin_wrong_side_packets, 1);
    assert_eq!(
        n.ouch_unknown_order_responses, 1,
        "T1's Enter came before the login"
    );
}

fn o42_bytes(m: &o42::Message<'_>) -> Vec<u8> {
    encode::ouch42_message(m)
}

proptest! {
    /// Any bytes in any packet type on either side, either version: counted, no panic.
    #[test]
    fn arbitrary_packets_never_panic(
        packets in prop::collection::vec(
            (any::<bool>(), prop::sample::select(b"+AJHSZLURO".to_vec()),
             prop::collection::vec(any::<u8>(), 0..90)),
            0..40),
        v50 in any::<bool>(),
    ) {
        let mut book = SessionBook::new();
        let version = if v50 { Version::Ouch50 } else { Version::Ouch42 };
        let mut c = Conn::new(version);
        c.login(&mut book, b"U", b"S", 1);
        for (host, t, payload) in packets {
            let side = if host { Side::Host } else { Side::Client };
            c.send(&mut book, side, &encode::packet(t, &payload));
        }
    }
}
