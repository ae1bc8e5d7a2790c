use super::*;
use fixscope_fix::encode::test_message as msg;

use crate::correlate::REORDER_WINDOW_NS;

fn order(id: &str) -> Vec<u8> {
    msg(&[(35, "D"), (49, "C"), (56, "X"), (11, id), (55, "IBM")])
}

fn report(id: &str, exec_type: &str, ord_status: &str) -> Vec<u8> {
    msg(&[
        (35, "8"),
        (49, "X"),
        (56, "C"),
        (11, id),
        (150, exec_type),
        (39, ord_status),
    ])
}

struct H {
    c: Correlator,
    out: Vec<Latency>,
}

impl H {
    fn new(limits: CorrelatorLimits) -> Self {
        H {
            c: Correlator::new(KeySpec::default(), limits),
            out: Vec::new(),
        }
    }
    fn req(&mut self, session: u64, m: &[u8], ts: u64) {
        let f = MessageFacts::extract(m, &KeySpec::default());
        let t = RequestType::from_msg_type(f.msg_type).unwrap();
        let out = &mut self.out;
        self.c.on_request(session, t, &f, ts, |l, _, _| out.push(l));
    }
    fn resp(&mut self, session: u64, m: &[u8], ts: u64) {
        let f = MessageFacts::extract(m, &KeySpec::default());
        let out = &mut self.out;
        self.c.on_response(session, &f, ts, |l, _| out.push(l));
    }
    fn stages(&self) -> Vec<(Stage, u64)> {
        self.out.iter().map(|l| (l.stage, l.ns)).collect()
    }
    /// requests = matched + every reason a request was never answered.
    fn assert_every_request_accounted(&self) {
        let c = &self.c.counters;
        assert_eq!(
            c.requests,
            c.matched
                + c.response_before_request
                + c.answered_after_capture_hole
                + self.c.unanswered_pending() as u64
                + c.unanswered_evicted
                + c.unanswered_closed
                + c.untracked_requests,
            "{c:?}, {} unanswered pending",
            self.c.unanswered_pending()
        );
    }
}

fn ttl(ttl_ns: u64) -> CorrelatorLimits {
    CorrelatorLimits {
        max_pending: 100,
        ttl_ns,
    }
}

#[test]
fn order_ack_partial_fill_full_fill() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100);
    h.resp(1, &report("A", "0", "0"), 150);
    h.resp(1, &report("A", "F", "1"), 400);
    h.resp(1, &report("A", "F", "2"), 900);
    assert_eq!(
        h.stages(),
        vec![
            (Stage::FirstResponse, 50),
            (Stage::Ack, 50),
            (Stage::Fill, 300),
            (Stage::AckToFill, 250)
        ]
    );
    assert_eq!(h.c.counters.matched, 1);
    assert_eq!(h.c.counters.unmatched_responses, 0);
    assert_eq!(h.c.pending(), 0);
    h.assert_every_request_accounted();
}

#[test]
fn a_response_after_the_timeout_records_its_true_latency_and_counts_late() {
    let mut h = H::new(ttl(500));
    h.req(1, &order("SLOW"), 0);
    h.req(1, &order("FAST"), 10);
    h.resp(1, &report("FAST", "0", "0"), 60);
    h.c.expire(499);
    assert_eq!(h.c.counters.timed_out, 0);
    h.c.expire(501);
    // Counted at once when -t passes, still tracked.
    assert_eq!(h.c.counters.timed_out, 1);
    assert_eq!(h.c.unanswered_pending(), 1);
    h.c.expire(10_000);
    assert_eq!(h.c.counters.timed_out, 1, "a request times out once");
    h.resp(1, &report("SLOW", "0", "0"), 2_000_000);
    assert_eq!(h.out.last().unwrap().stage, Stage::Ack);
    let first: Vec<_> = h
        .out
        .iter()
        .filter(|l| l.stage == Stage::FirstResponse)
        .map(|l| (l.ns, l.late))
        .collect();
    assert_eq!(first, vec![(50, false), (2_000_000, true)]);
    assert_eq!(h.c.counters.late, 1);
    assert_eq!(h.c.counters.matched, 2);
    assert_eq!(h.c.counters.unmatched_responses, 0);
    assert_eq!(h.c.unanswered_pending(), 0);
    h.assert_every_request_accounted();
}

#[test]
fn working_orders_are_tracked_until_their_fill_however_late() {
    let mut h = H::new(ttl(1_000));
    h.req(1, &order("A"), 0);
    h.resp(1, &report("A", "0", "0"), 100);
    h.c.expire(1_000_000);
    assert_eq!(h.c.counters.timed_out, 0, "answered within -t");
    h.resp(1, &report("A", "F", "2"), 5_000_000);
    assert_eq!(
        h.stages()[2..],
        [(Stage::Fill, 5_000_000), (Stage::AckToFill, 4_999_900)]
    );
    assert_eq!(h.c.pending(), 0);
}

#[test]
fn time_reversed_latencies_are_counted_never_recorded_as_zero() {
    let mut h = H::new(CorrelatorLimits::default());
    // The fill's clock is 5 µs behind the ack's (merged captures, skewed clocks).
    h.req(1, &order("A"), 100_000);
    h.resp(1, &report("A", "0", "0"), 120_000);
    h.resp(1, &report("A", "F", "2"), 115_000);
    assert_eq!(
        h.stages(),
        vec![
            (Stage::FirstResponse, 20_000),
            (Stage::Ack, 20_000),
            (Stage::Fill, 15_000)
        ]
    );
    assert_eq!(h.c.counters.time_reversed, 1); // ack_to_fill
    assert_eq!(h.c.counters.matched, 1);
    assert_eq!(h.c.pending(), 0);
    h.assert_every_request_accounted();
}

/// A tracked order whose first response is stamped before it (a host-order capture: the
/// response's segment was captured before the request's, then read after it because a
/// later-stamped segment filled a hole before it) has no latency to trust: counted once
/// in `response_before_request`, never matched, none of its stages recorded.
#[test]
fn a_first_response_stamped_before_its_tracked_request_is_response_before_request() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100_000);
    h.resp(1, &report("A", "0", "0"), 95_000);
    h.resp(1, &report("A", "F", "2"), 130_000);
    assert_eq!(h.stages(), vec![]);
    assert_eq!(h.c.counters.response_before_request, 1);
    assert_eq!(h.c.counters.matched, 0);
    assert_eq!(h.c.counters.time_reversed, 0);
    assert_eq!(h.c.counters.unmatched_responses, 0);
    assert_eq!(h.c.pending(), 0);
    h.assert_every_request_accounted();
    // A reject answering by key the same way.
    h.req(1, &order("B"), 200_000);
    h.resp(1, &report("B", "8", "8"), 199_000);
    assert_eq!(h.c.counters.response_before_request, 2);
    assert_eq!(h.stages(), vec![]);
    h.assert_every_request_accounted();
}

#[test]
fn same_clordid_on_two_sessions_never_mixes() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100);
    h.req(2, &order("A"), 200);
    h.resp(2, &report("A", "0", "0"), 210);
    h.resp(1, &report("A", "0", "0"), 190);
    assert_eq!(h.out[0].ns, 10);
    assert_eq!(h.out[0].session, 2);
    assert_eq!(h.out[2].ns, 90);
    assert_eq!(h.out[2].session, 1);
}

#[test]
fn duplicates_unmatched_and_missing_keys_are_counted() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100);
    h.req(1, &order("A"), 120);
    h.resp(1, &report("B", "0", "0"), 130);
    h.resp(1, &report("A", "0", "0"), 150);
    h.req(1, &msg(&[(35, "D"), (55, "IBM")]), 160);
    assert_eq!(h.c.counters.duplicate_requests, 1);
    // B's response waits the reorder window for a request; at the end it is unmatched.
    assert_eq!(h.c.counters.unmatched_responses, 0);
    h.c.end_of_input();
    assert_eq!(h.c.counters.unmatched_responses, 1);
    assert_eq!(h.c.counters.missing_key, 1);
    assert_eq!(h.c.counters.untracked_requests, 2);
    assert_eq!(h.stages()[0], (Stage::FirstResponse, 50));
    h.assert_every_request_accounted();
}

#[test]
fn reject_is_an_ack_and_ends_the_request() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100);
    h.resp(1, &report("A", "8", "8"), 130);
    assert_eq!(
        h.stages(),
        vec![(Stage::FirstResponse, 30), (Stage::Ack, 30)]
    );
    assert_eq!(h.c.pending(), 0);
    let cancel_reject = msg(&[(35, "9"), (11, "C1"), (41, "A"), (39, "8")]);
    h.req(1, &msg(&[(35, "F"), (11, "C1"), (41, "A")]), 200);
    h.resp(1, &cancel_reject, 260);
    assert_eq!(h.out.last().unwrap().request_type, RequestType::Cancel);
    assert_eq!(h.out.last().unwrap().ns, 60);
    assert_eq!(h.c.pending(), 0);
}

#[test]
fn a_confirmed_cancel_or_replace_ends_the_original_order() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 100);
    h.resp(1, &report("A", "0", "0"), 110);
    h.req(1, &order("B"), 120);
    h.resp(1, &report("B", "0", "0"), 130);
    assert_eq!(h.c.pending(), 2, "resting orders stay tracked");
    // Cancel A: confirmed with 11=the cancel's ClOrdID, 41=A, 39=4.
    h.req(1, &msg(&[(35, "F"), (11, "CXL"), (41, "A")]), 200);
    let canceled = msg(&[(35, "8"), (11, "CXL"), (41, "A"), (150, "4"), (39, "4")]);
    h.resp(1, &canceled, 230);
    assert_eq!(h.c.pending(), 1);
    // Replace B: the replacement lives on under its new ClOrdID, B is over.
    h.req(1, &msg(&[(35, "G"), (11, "B2"), (41, "B")]), 300);
    let replaced = msg(&[(35, "8"), (11, "B2"), (41, "B"), (150, "5"), (39, "0")]);
    h.resp(1, &replaced, 320);
    assert_eq!(h.c.pending(), 1, "B gone, B2 tracked");
    // A cancel that was rejected leaves the original alone.
    h.req(1, &msg(&[(35, "F"), (11, "CXL2"), (41, "B2")]), 400);
    h.resp(
        1,
        &msg(&[(35, "9"), (11, "CXL2"), (41, "B2"), (39, "0")]),
        410,
    );
    assert_eq!(h.c.pending(), 1, "B2 still resting");
    h.resp(1, &report("B2", "F", "2"), 900);
    let fill = h.out.iter().rfind(|l| l.stage == Stage::Fill).unwrap();
    assert_eq!(fill.ns, 600, "B2's fill after the rejected cancel");
    assert_eq!(h.c.pending(), 0);
    assert_eq!(h.c.counters.unmatched_responses, 0);
    h.assert_every_request_accounted();
}

#[test]
fn capacity_evicts_oldest_first_and_says_whether_it_was_answered() {
    let mut h = H::new(CorrelatorLimits {
        max_pending: 2,
        ttl_ns: u64::MAX,
    });
    h.req(1, &order("A"), 0);
    h.req(1, &order("B"), 1);
    h.resp(1, &report("B", "0", "0"), 2);
    h.req(1, &order("C"), 3); // evicts A (unanswered)
    h.req(1, &order("D"), 4); // evicts B (answered, working)
    assert_eq!(h.c.counters.evicted, 2);
    assert_eq!(h.c.counters.unanswered_evicted, 1);
    assert_eq!(h.c.counters.expired_after_response, 1);
    h.resp(1, &report("A", "0", "0"), 5);
    h.resp(1, &report("C", "0", "0"), 5);
    h.c.expire(6 + REORDER_WINDOW_NS);
    assert_eq!(h.c.counters.unmatched_responses, 1);
    assert_eq!(h.c.counters.matched, 2);
    h.assert_every_request_accounted();
}

#[test]
fn a_closed_connection_accounts_for_its_unanswered_requests() {
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order("A"), 0);
    h.req(2, &order("A"), 1);
    h.req(1, &order("B"), 2);
    h.req(1, &order("C"), 3);
    h.resp(1, &report("C", "0", "0"), 4);
    h.c.close_session(1);
    assert_eq!(h.c.counters.unanswered_closed, 2);
    assert_eq!(h.c.counters.expired_after_response, 1);
    assert_eq!(h.c.pending(), 1, "session 2's request stays");
    h.resp(2, &report("A", "0", "0"), 9);
    assert_eq!(h.out.last().unwrap().ns, 8);
    h.assert_every_request_accounted();
    h.c.close_session(7); // never seen: nothing happens
    assert_eq!(h.c.counters.unanswered_closed, 2);
}

#[test]
fn compound_and_alternative_keys() {
    let key = KeySpec::parse("11,1").unwrap();
    let mut c = Correlator::new(key.clone(), CorrelatorLimits::default());
    let req = msg(&[(35, "D"), (1, "ACC1"), (11, "A")]);
    let other = msg(&[(35, "8"), (11, "A"), (1, "ACC2"), (150, "0"), (39, "0")]);
    let same = msg(&[(35, "8"), (11, "A"), (1, "ACC1"), (150, "0"), (39, "0")]);
    let f = MessageFacts::extract(&req, &key);
    c.on_request(1, RequestType::NewOrder, &f, 10, |_, _, _| {});
    let mut n = 0;
    c.on_response(1, &MessageFacts::extract(&other, &key), 20, |_, _| n += 1);
    assert_eq!(n, 0);
    c.on_response(1, &MessageFacts::extract(&same, &key), 30, |_, _| n += 1);
    assert_eq!(n, 2);
}

#[test]
fn long_clordid_has_no_length_limit() {
    let id = "X".repeat(200);
    let mut h = H::new(CorrelatorLimits::default());
    h.req(1, &order(&id), 1);
    h.resp(1, &report(&id, "0", "0"), 4);
    assert_eq!(h.stages()[0], (Stage::FirstResponse, 3));
}

#[test]
fn memory_stays_flat_on_endless_input() {
    let mut h = H::new(CorrelatorLimits {
        max_pending: 64,
        ttl_ns: 50,
    });
    for i in 0..100_000u64 {
        h.req(1, &order(&i.to_string()), i);
        match i % 3 {
            0 => h.resp(1, &report(&i.to_string(), "F", "2"), i + 1),
            1 => h.resp(1, &report(&i.to_string(), "0", "0"), i + 1), // working order
            _ => {}                                                   // never answered
        }
        h.c.expire(i);
    }
    let (slots, by_age, unanswered) = h.c.footprint();
    assert!(slots <= 64, "slots grew to {slots}");
    assert!(by_age <= 2 * 64 + 1024, "age queue {by_age}");
    assert!(unanswered <= 2 * 64 + 1024, "alert queue {unanswered}");
    h.assert_every_request_accounted();
}

/// A capture that shows an order's ack before its request (host stamps that reorder): the
/// order is counted once in `response_before_request`, records no latency, its responses
/// are not unmatched (the fill after the request included) and it never times out.
#[test]
fn a_response_before_its_request_is_counted_once_and_records_nothing() {
    let mut h = H::new(ttl(1_000));
    h.req(1, &order("A"), 100);
    h.resp(1, &report("B", "0", "0"), 140); // B's ack, before B's request
    h.resp(1, &report("A", "0", "0"), 150);
    h.req(1, &order("B"), 160);
    h.resp(1, &report("B", "F", "2"), 400); // B's fill: not a first response
    h.c.expire(1_000_000);
    h.c.expire(u64::MAX / 2);
    h.c.end_of_input();
    let c = h.c.counters;
    assert_eq!(c.response_before_request, 1);
    assert_eq!(c.matched, 1);
    assert_eq!(c.unmatched_responses, 0);
    assert_eq!(c.timed_out, 0);
    assert_eq!(c.time_reversed, 0);
    // Only A's latencies: B's fill is not taken for its first response.
    assert!(h.out.iter().all(|l| l.ns == 50), "{:?}", h.stages());
    assert_eq!(h.c.pending(), 1, "A works on; B's fill ended B");
    h.assert_every_request_accounted();
}

/// Both of an order's responses before its request (the fill ends it): counted once,
/// nothing tracked; a response no request claims within the window is unmatched then.
#[test]
fn a_finished_order_seen_late_is_not_tracked_and_unclaimed_responses_expire() {
    let mut h = H::new(ttl(1_000));
    h.resp(1, &report("A", "0", "0"), 100);
    h.resp(1, &report("A", "F", "2"), 120);
    h.resp(1, &report("Z", "0", "0"), 130);
    h.resp(2, &report("A", "0", "0"), 135); // the same key on another session
    h.req(1, &order("A"), 140);
    assert_eq!(h.c.counters.response_before_request, 1);
    assert_eq!(h.c.pending(), 0);
    h.c.expire(130 + REORDER_WINDOW_NS);
    assert_eq!(h.c.counters.unmatched_responses, 0, "within the window");
    h.c.expire(136 + REORDER_WINDOW_NS);
    assert_eq!(h.c.counters.unmatched_responses, 2, "Z and session 2's A");
    // Too late for Z's request: it is an order like any other, and times out.
    h.req(1, &order("Z"), 200 + REORDER_WINDOW_NS);
    h.c.expire(10_000 + REORDER_WINDOW_NS);
    assert_eq!(h.c.counters.timed_out, 1);
    assert!(h.out.is_empty());
    h.assert_every_request_accounted();
}

/// A capture read out of the wire's order whose times are right (a tap's hardware stamps in
/// the host's order): responses read before their request but stamped after it answer it
/// when it comes, with their true latencies, in time order — no `response_before_request`.
#[test]
fn responses_read_first_but_stamped_after_the_request_answer_it_exactly() {
    let mut h = H::new(ttl(1_000));
    h.resp(1, &report("A", "F", "2"), 180); // A's fill, read first
    h.resp(1, &report("A", "0", "0"), 150); // A's ack
    h.resp(1, &report("B", "0", "0"), 170); // B's ack
    h.req(1, &order("A"), 100);
    h.req(1, &order("B"), 120);
    h.resp(1, &report("B", "F", "2"), 300); // B's fill, in order
    h.c.expire(u64::MAX / 2);
    h.c.end_of_input();
    let c = h.c.counters;
    assert_eq!(c.response_before_request, 0);
    assert_eq!((c.matched, c.unmatched_responses, c.timed_out), (2, 0, 0));
    assert_eq!(
        h.stages(),
        [
            (Stage::FirstResponse, 50), // A: the ack (150) before the fill (180)
            (Stage::Ack, 50),
            (Stage::Fill, 80),
            (Stage::AckToFill, 30),
            (Stage::FirstResponse, 50), // B
            (Stage::Ack, 50),
            (Stage::Fill, 180),
            (Stage::AckToFill, 130),
        ]
    );
    assert_eq!(h.c.pending(), 0, "both filled");
    h.assert_every_request_accounted();
}

/// A held response stamped past `-t` after its request: the order timed out on the wire,
/// and is counted as the sweep would have (timed_out, then late), its latency recorded.
#[test]
fn a_held_response_past_the_timeout_counts_timed_out_and_late() {
    let mut h = H::new(ttl(1_000));
    h.resp(1, &report("A", "0", "0"), 5_000);
    h.req(1, &order("A"), 100);
    let c = h.c.counters;
    assert_eq!((c.matched, c.timed_out, c.late), (1, 1, 1));
    assert_eq!(h.stages()[0], (Stage::FirstResponse, 4_900));
    h.assert_every_request_accounted();
}

/// A hole in a session's responses may have held the ack of every order waiting: the
/// response seen after it is not measured as a first response (a CI run measured a fill
/// 238 µs after the client had read the lost ack). Orders sent after the first response
/// that followed the hole are measured; the other session is untouched; nothing waiting
/// across the hole raises `timed_out`.
#[test]
fn a_hole_in_the_responses_measures_no_order_waiting_across_it() {
    let mut h = H::new(ttl(1_000));
    h.req(1, &order("A"), 100);
    h.req(1, &order("B"), 110);
    h.req(2, &order("C"), 120);
    h.resp(1, &report("A", "0", "0"), 150); // A acked before the hole
    h.c.capture_hole_in_responses(1);
    // B's ack was in the hole; a request sent before the next response is suspect too.
    h.req(1, &order("D"), 160);
    h.c.expire(2_000); // past -t: B and D waited across the hole, C did not
    assert_eq!(h.c.counters.timed_out, 1, "only C: {:?}", h.c.counters);
    h.resp(1, &report("B", "F", "2"), 2_100); // first seen after the hole: B's fill
    h.req(1, &order("E"), 2_200); // after the first response past the hole
    h.resp(1, &report("A", "F", "2"), 2_300); // A's fill may have been in the hole too
    h.resp(1, &report("D", "0", "0"), 2_400);
    h.resp(1, &report("E", "0", "0"), 2_450);
    h.resp(2, &report("C", "0", "0"), 2_500);
    assert_eq!(
        h.stages(),
        vec![
            (Stage::FirstResponse, 50),
            (Stage::Ack, 50),
            (Stage::FirstResponse, 250),
            (Stage::Ack, 250),
            (Stage::FirstResponse, 2_380),
            (Stage::Ack, 2_380),
        ],
        "A before the hole, E after it, C on the other session: nothing of B or D"
    );
    let c = h.c.counters;
    assert_eq!((c.matched, c.answered_after_capture_hole), (3, 2));
    assert_eq!((c.late, c.unmatched_responses), (1, 0), "C was late");
    h.assert_every_request_accounted();
}

/// `--records`: one row per request with its latencies and the count it landed in; the
/// rows' outcomes add up to the counters.
#[test]
fn every_request_gets_one_record_with_its_outcome() {
    let mut h = H::new(CorrelatorLimits {
        max_pending: 3,
        ttl_ns: 1_000,
    });
    h.c.keep_records();
    let with_symbol = |id: &str| msg(&[(35, "D"), (11, id), (55, "IBM"), (54, "1"), (1, "ACC")]);
    let req = |h: &mut H, session, m: &[u8], ts| {
        h.c.records_mut().unwrap().fields.read(m);
        h.req(session, m, ts);
    };
    req(&mut h, 1, &with_symbol("A"), 100);
    h.resp(1, &report("A", "0", "0"), 130);
    h.resp(1, &report("A", "F", "2"), 150); // done: matched
    req(&mut h, 1, &with_symbol("B"), 200);
    req(&mut h, 1, &with_symbol("B"), 210); // duplicate: untracked at once
    h.resp(1, &report("B", "8", "8"), 260); // rejected
    req(&mut h, 1, &order("C"), 300);
    h.c.expire(1_400); // C timed out
    h.resp(1, &report("C", "0", "0"), 1_500); // late, still working
    req(&mut h, 2, &order("D"), 1_600); // closed unanswered
    h.c.close_session(2);
    req(&mut h, 1, &order("E"), 1_700);
    req(&mut h, 1, &order("F"), 1_800);
    req(&mut h, 1, &order("G"), 1_900); // evicts C (answered: no row outcome change)
    req(&mut h, 1, &order("H"), 2_000); // evicts E unanswered
    h.c.close_records(); // the end: F, G, H unanswered
    let mut rows = Vec::new();
    h.c.records_mut().unwrap().take_done(&mut rows);
    type Row<'a> = (String, &'a str, Option<u64>, Option<u64>, Option<u64>, bool);
    let got: Vec<Row<'_>> = rows
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.key).into_owned(),
                r.outcome.name(),
                r.first_response_ns,
                r.ack_ns,
                r.fill_ns,
                r.timed_out,
            )
        })
        .collect();
    let want = [
        (
            "A".to_string(),
            "matched",
            Some(30),
            Some(30),
            Some(50),
            false,
        ),
        ("B".into(), "untracked", None, None, None, false),
        ("B".into(), "rejected", Some(60), Some(60), None, false),
        ("D".into(), "closed", None, None, None, false),
        ("C".into(), "late", Some(1_200), Some(1_200), None, true),
        ("E".into(), "evicted", None, None, None, false),
    ];
    assert_eq!(got[..6], want[..], "{rows:#?}");
    let mut rest: Vec<(String, &str)> = got[6..].iter().map(|r| (r.0.clone(), r.1)).collect();
    rest.sort();
    assert_eq!(
        rest,
        vec![
            ("F".to_string(), "unanswered"),
            ("G".into(), "unanswered"),
            ("H".into(), "unanswered")
        ]
    );
    assert_eq!(rows[0].fields.symbol, b"IBM");
    assert_eq!(
        (&rows[0].fields.side[..], &rows[0].fields.account[..]),
        (&b"1"[..], &b"ACC"[..])
    );
    assert_eq!(rows[0].fields.cl_ord_id, b"A");
    // The rows add up to the counters: one row per request.
    let c = h.c.counters;
    let count = |names: &[&str]| {
        rows.iter()
            .filter(|r| names.contains(&r.outcome.name()))
            .count() as u64
    };
    assert_eq!(rows.len() as u64, c.requests);
    assert_eq!(count(&["matched", "late", "rejected"]), c.matched);
    assert_eq!(count(&["late"]), c.late);
    assert_eq!(count(&["evicted"]), c.unanswered_evicted);
    assert_eq!(count(&["closed"]), c.unanswered_closed);
    assert_eq!(count(&["untracked"]), c.untracked_requests);
}
