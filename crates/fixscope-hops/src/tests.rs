//! The hop linker against hand-made router traffic: every stage and every ledger count.

use super::*;
use fixscope_fix::framing::FramedMessage;
use fixscope_model::order::OrderBreakdown;

/// What the linker recorded: (stage, ns, session).
#[derive(Default)]
struct Recorded(Vec<(Stage, u64, u64)>);

impl OrderSink for Recorded {
    fn record_order(&mut self, latency: Latency, _: &OrderRef<'_>) {
        self.0.push((latency.stage, latency.ns, latency.session));
    }
    fn attach_breakdown(&mut self, _: u64, _: u64, _: &OrderBreakdown) {}
}

impl Recorded {
    fn of(&self, stage: Stage) -> Vec<u64> {
        self.0
            .iter()
            .filter(|r| r.0 == stage)
            .map(|r| r.1)
            .collect()
    }
}

const UP: u64 = 1;
const DOWN: u64 = 2;

struct H {
    linker: HopLinker,
    out: Recorded,
}

impl H {
    fn new(link: &str, md: bool) -> Self {
        let mut legs = vec!["up=9879".parse().unwrap(), "down=9878".parse().unwrap()];
        if md {
            legs.push("md=9100".parse().unwrap());
        }
        H {
            linker: HopLinker::new(HopConfig {
                legs: Legs(legs),
                link: link.parse().unwrap(),
                window_ns: 1_000_000,
                answer_wait_ns: 5_000_000,
            }),
            out: Recorded::default(),
        }
    }

    fn send(&mut self, leg: LegKind, session: u64, direction: Direction, ts: u64, fields: &str) {
        let bytes = fields.replace('|', "\x01").into_bytes();
        let facts = fixscope_orders::correlate::MessageFacts::extract(
            &bytes,
            &fixscope_orders::correlate::KeySpec::default(),
        );
        let msg = FramedMessage {
            bytes: &bytes,
            first_byte_ts_ns: ts,
            last_byte_ts_ns: ts,
            first_byte_seq: 0,
            last_byte_seq: 0,
        };
        self.linker
            .on_message(leg, session, direction, &facts, &msg, &mut self.out);
    }

    fn parent(&mut self, ts: u64, fields: &str) {
        self.send(
            LegKind::Up,
            UP,
            Direction::Request,
            ts,
            &format!("8=FIX.4.4|9=1|35=D|49=CLI|{fields}"),
        );
    }
    fn child(&mut self, ts: u64, fields: &str) {
        self.send(
            LegKind::Down,
            DOWN,
            Direction::Request,
            ts,
            &format!("8=FIX.4.4|9=1|35=D|49=RTR|{fields}"),
        );
    }
    fn venue(&mut self, ts: u64, id: &str, exec: char) {
        self.send(
            LegKind::Down,
            DOWN,
            Direction::Response,
            ts,
            &format!("8=FIX.4.4|9=1|35=8|11={id}|150={exec}|"),
        );
    }
    fn answer(&mut self, ts: u64, id: &str, exec: char) {
        self.send(
            LegKind::Up,
            UP,
            Direction::Response,
            ts,
            &format!("8=FIX.4.4|9=1|35=8|11={id}|150={exec}|"),
        );
    }
    fn finish(&mut self) -> HopCounters {
        self.linker.finish(&mut self.out);
        self.linker.counters
    }
}

/// Every parent and every child in exactly one count.
fn ledger_holds(c: &HopCounters) {
    assert_eq!(
        c.parents,
        c.linked + c.unlinked_parent + c.ambiguous + c.parents_pending,
        "{c:?}"
    );
    assert_eq!(
        c.children,
        c.linked_children + c.unlinked_child + c.ambiguous_child + c.late_link + c.children_pending,
        "{c:?}"
    );
}

#[test]
fn a_routed_order_splits_into_its_hops_exactly() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "34=7|11=P1|54=1|55=MSFT|");
    h.child(1_400, "11=R1|526=P1|54=1|55=MSFT|");
    h.venue(2_500, "R1", '0');
    h.answer(2_750, "P1", '0');
    h.venue(3_000, "R1", 'F');
    h.answer(3_100, "P1", 'F');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![400]);
    assert_eq!(h.out.of(Stage::HopBack), vec![250]);
    // client_rtt (1_750, the correlator's) = 400 + venue_rtt (1_100) + 250.
    assert_eq!((c.linked, c.linked_children, c.local_ack), (1, 1, 0));
    assert_eq!(h.linker.linked_by_rule[0].1, 1);
    ledger_holds(&c);
}

#[test]
fn a_parent_decides_only_after_its_window() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_400, "11=R1|526=P1|54=1|");
    h.venue(2_500, "R1", '0');
    h.answer(2_750, "P1", '0');
    assert!(
        h.out.0.is_empty(),
        "nothing is recorded while a second child may come"
    );
    assert_eq!(h.linker.counters.parents_pending, 1);
    // Time passes the window: the parent is decided.
    h.linker.expire(1_000 + 1_000_001, &mut h.out);
    assert_eq!(h.out.of(Stage::HopOut), vec![400]);
    assert_eq!(h.out.of(Stage::HopBack), vec![250]);
    assert_eq!(h.linker.counters.parents_pending, 0);
}

#[test]
fn fan_out_records_every_child_and_the_earliest_venue_answer() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_100, "11=R1|526=P1|54=1|");
    h.child(1_200, "11=R2|526=P1|54=1|");
    h.venue(1_900, "R2", '0');
    h.venue(2_000, "R1", '0');
    h.answer(2_100, "P1", '0');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![100, 200]);
    assert_eq!(
        h.out.of(Stage::HopBack),
        vec![200],
        "from R2's answer, the first"
    );
    assert_eq!((c.linked, c.linked_children, c.fanout_parents), (1, 2, 1));
    assert_eq!(h.linker.children_per_parent, vec![0, 1]);
    ledger_holds(&c);
}

#[test]
fn two_identical_children_make_the_parent_ambiguous() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_100, "11=R1|526=P1|54=1|");
    h.child(1_200, "11=R1|526=P1|54=1|");
    h.venue(1_900, "R1", '0');
    h.answer(2_100, "P1", '0');
    let c = h.finish();
    assert!(h.out.of(Stage::HopOut).is_empty() && h.out.of(Stage::HopBack).is_empty());
    assert_eq!((c.ambiguous, c.ambiguous_child, c.linked), (1, 2, 0));
    ledger_holds(&c);
}

#[test]
fn a_child_naming_two_parents_links_to_neither() {
    let mut h = H::new("11", false);
    // Two clients' orders with one ClOrdID and side; a child with it.
    h.parent(1_000, "11=A|54=1|");
    h.send(
        LegKind::Up,
        3,
        Direction::Request,
        1_050,
        "8=FIX.4.4|9=1|35=D|49=CLI2|11=A|54=1|",
    );
    h.child(1_100, "11=A|54=1|");
    // The other side does not link by 11.
    h.parent(1_200, "11=B|54=1|");
    h.child(1_300, "11=B|54=2|");
    let c = h.finish();
    assert!(h.out.of(Stage::HopOut).is_empty());
    assert_eq!((c.ambiguous, c.ambiguous_child), (2, 1));
    assert_eq!((c.unlinked_parent, c.unlinked_child), (1, 1));
    ledger_holds(&c);
}

#[test]
fn a_router_that_acks_before_it_routes_is_local_ack() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.answer(1_100, "P1", '0');
    h.child(1_400, "11=R1|526=P1|54=1|");
    h.venue(2_000, "R1", '0');
    h.venue(2_500, "R1", 'F');
    h.answer(2_600, "P1", 'F');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![400]);
    assert!(
        h.out.of(Stage::HopBack).is_empty(),
        "the router's ack came before the venue's"
    );
    assert_eq!((c.linked, c.local_ack), (1, 1));
    ledger_holds(&c);
}

#[test]
fn hops_rule_links_by_sender_and_sequence() {
    let mut h = H::new("hops", false);
    h.parent(1_000, "34=41|11=P1|54=1|");
    h.parent(1_010, "34=42|11=P2|54=1|");
    h.child(1_500, "115=CLI|627=1|628=RTR|630=42|11=R9|54=1|");
    h.venue(1_900, "R9", '0');
    h.answer(2_000, "P2", '0');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![490]);
    assert_eq!(h.out.of(Stage::HopBack), vec![100]);
    assert_eq!((c.linked, c.unlinked_parent), (1, 1));
    ledger_holds(&c);
}

#[test]
fn a_child_after_the_window_is_a_late_link_not_a_hop() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_000 + 2_000_000, "11=R1|526=P1|54=1|");
    let c = h.finish();
    assert!(h.out.of(Stage::HopOut).is_empty());
    assert_eq!((c.late_link, c.unlinked_parent), (1, 1));
    ledger_holds(&c);
}

#[test]
fn tick_to_order_times_the_host_s_own_orders_from_their_symbol_s_tick() {
    let mut h = H::new("526=11", true);
    let md = |h: &mut H, ts, body: &str| {
        h.send(
            LegKind::Md,
            9,
            Direction::Response,
            ts,
            &format!("8=FIX.4.4|9=1|{body}"),
        );
    };
    md(&mut h, 1_000, "35=W|55=MSFT|268=1|269=0|270=1.5|");
    md(
        &mut h,
        1_200,
        "35=X|268=2|279=0|55=AAPL|270=1|279=0|55=IBM|270=2|",
    );
    h.child(1_500, "11=S1|54=1|55=MSFT|");
    h.child(1_600, "11=S2|54=1|55=IBM|");
    h.child(1_700, "11=S3|54=1|55=ZZZ|");
    let c = h.finish();
    assert_eq!(h.out.of(Stage::TickToOrder), vec![500, 400]);
    assert_eq!((c.unlinked_child, c.tick_missing), (3, 1));
    ledger_holds(&c);
}

#[test]
fn a_hole_where_an_answer_may_have_been_measures_no_hop_back() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_100, "11=R1|526=P1|54=1|");
    h.venue(1_500, "R1", '0');
    // The router's ack to P1 was lost in a hole; its fill is no ack.
    h.linker.capture_hole(UP, Direction::Response);
    h.venue(1_700, "R1", 'F');
    h.answer(1_800, "P1", 'F');
    h.answer(1_900, "P1", '0');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![100]);
    assert!(h.out.of(Stage::HopBack).is_empty());
    assert_eq!((c.hops_after_capture_hole, c.local_ack), (1, 0));
}

#[test]
fn a_cancel_with_no_link_tag_follows_its_41_chain_across_the_hop() {
    let mut h = H::new("526=11", false);
    h.parent(1_000, "11=P1|54=1|");
    h.child(1_400, "11=R1|526=P1|54=1|");
    h.venue(2_000, "R1", '0');
    h.answer(2_200, "P1", '0');
    // Soon after (the new order's window still open): the cancel names P1, its child R1.
    let cancel = |h: &mut H, at: u64, id: &str, orig: &str, child: &str, child_orig: &str| {
        h.send(
            LegKind::Up,
            UP,
            Direction::Request,
            at,
            &format!("8=FIX.4.4|9=1|35=F|49=CLI|11={id}|41={orig}|54=1|"),
        );
        h.send(
            LegKind::Down,
            DOWN,
            Direction::Request,
            at + 300,
            &format!("8=FIX.4.4|9=1|35=F|49=RTR|11={child}|41={child_orig}|54=1|"),
        );
        h.venue(at + 900, child, '4');
        h.answer(at + 1_000, id, '4');
    };
    cancel(&mut h, 5_000, "P2", "P1", "R2", "R1");
    // Seconds later (P1 long forgotten): a replace of P2's chain... of the original, R1.
    h.linker.expire(10_000_000_000, &mut h.out);
    cancel(&mut h, 10_000_000_000, "P3", "P1", "R3", "R1");
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![400, 300, 300]);
    assert_eq!(h.out.of(Stage::HopBack), vec![200, 100, 100]);
    assert_eq!((c.linked, c.linked_children, c.unlinked_child), (3, 3, 0));
    let by: Vec<(String, u64)> = h.linker.figures().rules;
    assert_eq!(
        by,
        vec![("526=11".to_string(), 1), ("41-chain".to_string(), 2)]
    );
    ledger_holds(&c);
}

#[test]
fn answers_stamped_before_what_they_answer_measure_no_hop() {
    let mut h = H::new("526=11", false);
    // A child stamped before the parent is no child of it.
    h.parent(1_000, "11=P0|54=1|");
    h.child(900, "11=R0|526=P0|54=1|");
    // A venue answer stamped before its child went out (a reordered capture).
    h.parent(2_000, "11=P1|54=1|");
    h.child(2_400, "11=R1|526=P1|54=1|");
    h.venue(2_300, "R1", '0');
    h.answer(2_600, "P1", '0');
    let c = h.finish();
    assert_eq!(h.out.of(Stage::HopOut), vec![400]);
    assert!(h.out.of(Stage::HopBack).is_empty());
    assert!(
        h.out.0.iter().all(|r| r.1 < 1 << 40),
        "no wrapped negative hop"
    );
    assert_eq!(
        (c.hops_time_reversed, c.unlinked_parent, c.unlinked_child),
        (1, 1, 1)
    );
    ledger_holds(&c);
}
