//! The breakdown (`crate::breakdown`) through a whole pipeline, from synthetic segments and socket calls: every case of issue #13 (several
//! messages per read, reads spanning messages, split writes, several responses per write,
//! calls before or after their segments, missing calls, anomalies, the client side).

use crate::breakdown::{BreakdownCounters, OrderBreakdown, AWAIT_NS, MAX_CALLS};
use crate::correlate::Stage;
use crate::fix::encode::test_message as fix;
use crate::report::{IntervalReport, Reporter, SummaryReport};
use crate::segment::Direction;
use crate::segment::{Endpoint, FlowKey, Segment, TcpFlags};
use crate::socket_event::Wakeup;
use crate::socket_event::{SocketCall, SocketEvent};
use crate::{Pipeline, PipelineConfig};

struct NoReport;
impl Reporter for NoReport {
    fn interval(&mut self, _: &IntervalReport<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, _: &SummaryReport<'_>) -> std::io::Result<()> {
        Ok(())
    }
}

fn ep(last: u8, port: u16) -> Endpoint {
    Endpoint {
        addr: std::net::IpAddr::from([10, 0, 0, last]),
        port,
    }
}

/// One connection: the client's request stream from `req_isn`, the server's responses from
/// `resp_isn`; bytes are placed by their stream offset.
struct H {
    p: Pipeline,
    req_isn: u32,
    resp_isn: u32,
}

fn flow(direction: Direction) -> FlowKey {
    let (c, s) = (ep(1, 40000), ep(2, 9878));
    match direction {
        Direction::Request => FlowKey { src: c, dst: s },
        Direction::Response => FlowKey { src: s, dst: c },
    }
}

impl H {
    fn new() -> Self {
        H::with_isns(1_000, 50_000)
    }

    fn with_isns(req_isn: u32, resp_isn: u32) -> Self {
        H {
            p: Pipeline::new(PipelineConfig {
                breakdown: true,
                interval_ns: 0,
                ..PipelineConfig::default()
            }),
            req_isn,
            resp_isn,
        }
    }

    fn seq(&self, direction: Direction, offset: usize) -> u32 {
        let isn = match direction {
            Direction::Request => self.req_isn,
            Direction::Response => self.resp_isn,
        };
        isn.wrapping_add(offset as u32)
    }

    /// Stream bytes `bytes` at stream `offset` seen at TC at `ts_ns`.
    fn seg(&mut self, direction: Direction, offset: usize, bytes: &[u8], ts_ns: u64) {
        let seg = Segment {
            ts_ns,
            flow: flow(direction),
            direction,
            seq: self.seq(direction, offset),
            ack: 0,
            flags: TcpFlags(TcpFlags::PSH),
            payload: bytes,
            missing_tail: 0,
        };
        self.p.on_segment(&seg);
    }

    fn call(
        &mut self,
        direction: Direction,
        call: SocketCall,
        offset: usize,
        len: usize,
        ts_ns: u64,
        wakeup: Option<Wakeup>,
    ) {
        let ev = SocketEvent {
            ts_ns,
            flow: flow(direction),
            direction,
            call,
            seq: self.seq(direction, offset),
            len: len as u32,
            tid: 7,
            wakeup,
        };
        self.p.on_socket_event(&ev);
    }

    fn read(&mut self, offset: usize, len: usize, ts_ns: u64) {
        self.call(
            Direction::Request,
            SocketCall::Read,
            offset,
            len,
            ts_ns,
            None,
        );
    }

    fn write(&mut self, offset: usize, len: usize, ts_ns: u64) {
        self.call(
            Direction::Response,
            SocketCall::Write,
            offset,
            len,
            ts_ns,
            None,
        );
    }

    fn finish(&mut self) -> BreakdownCounters {
        self.p.finish(&[], &mut NoReport).unwrap();
        self.p.counters().breakdown.unwrap()
    }

    /// The breakdown of the order `key` as its first-response slow-order entry carries it,
    /// with that first response.
    fn order(&self, key: &str) -> (u64, OrderBreakdown) {
        let o = self
            .p
            .stats()
            .slowest(Stage::FirstResponse)
            .iter()
            .find(|o| o.key == key)
            .unwrap_or_else(|| panic!("order {key} not among the slowest"));
        (o.latency_ns, o.breakdown.expect("breakdown attached"))
    }

    fn count(&mut self, stage: Stage) -> u64 {
        self.p.summary_now(&[], &mut NoReport).unwrap();
        self.p.stats().cumulative(stage).count()
    }
}

fn order(id: &str) -> Vec<u8> {
    fix(&[(35, "D"), (11, id), (55, "X")])
}

fn ack(id: &str) -> Vec<u8> {
    fix(&[(35, "8"), (11, id), (150, "0"), (39, "0")])
}

fn exact(first_response: u64, b: &OrderBreakdown) {
    let sum = b.wire_to_read.unwrap() + b.app.unwrap() + b.write_to_wire.unwrap();
    assert_eq!(
        sum, first_response,
        "stages must sum to first_response: {b:?}"
    );
}

#[test]
fn one_order_splits_exactly_with_sched_delay() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    // The reading thread slept; woken at 1_100, on a CPU at 1_300, read returned at 1_500.
    h.call(
        Direction::Request,
        SocketCall::Read,
        0,
        o.len(),
        1_500,
        Some(Wakeup {
            woken_ns: 1_100,
            on_cpu_ns: 1_300,
        }),
    );
    h.write(0, a.len(), 3_000);
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    let c = h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(fr, 2_200);
    assert_eq!(
        b,
        OrderBreakdown {
            wire_to_read: Some(500),
            app: Some(1_500),
            write_to_wire: Some(200),
            sched_delay: Some(200),
        }
    );
    exact(fr, &b);
    assert_eq!((c.breakdown_orders, c.breakdown_missing), (1, 0));
    for s in Stage::BREAKDOWN {
        assert_eq!(h.count(s), 1, "{}", s.name());
    }
}

#[test]
fn several_messages_per_read_and_several_responses_per_write() {
    let mut h = H::new();
    let (o1, o2) = (order("A"), order("B"));
    let (a1, a2) = (ack("A"), ack("B"));
    let mut req = o1.clone();
    req.extend_from_slice(&o2);
    let mut resp = a1.clone();
    resp.extend_from_slice(&a2);
    // Both orders in one segment and one read; both acks in one write and one segment.
    h.seg(Direction::Request, 0, &req, 1_000);
    h.read(0, req.len(), 1_400);
    h.write(0, resp.len(), 2_000);
    h.seg(Direction::Response, 0, &resp, 2_300);
    h.finish();
    for key in ["A", "B"] {
        let (fr, b) = h.order(key);
        assert_eq!(fr, 1_300);
        assert_eq!(
            (b.wire_to_read, b.app, b.write_to_wire),
            (Some(400), Some(600), Some(300))
        );
        exact(fr, &b);
    }
}

#[test]
fn a_read_spanning_two_messages_times_the_second_by_the_read_holding_its_last_byte() {
    let mut h = H::new();
    let (o1, o2) = (order("A"), order("B"));
    let mut req = o1.clone();
    req.extend_from_slice(&o2);
    let cut = o1.len() + 5;
    // Segments: [A + 5 bytes of B] at 1_000, [rest of B] at 1_200. Reads split the same
    // way at other points: [0, cut - 2) returns at 1_500, [cut - 2, end) at 1_900.
    h.seg(Direction::Request, 0, &req[..cut], 1_000);
    h.seg(Direction::Request, cut, &req[cut..], 1_200);
    h.read(0, cut - 2, 1_500);
    h.read(cut - 2, req.len() - (cut - 2), 1_900);
    let (a1, a2) = (ack("A"), ack("B"));
    h.write(0, a1.len(), 2_000);
    h.write(a1.len(), a2.len(), 2_500);
    h.seg(Direction::Response, 0, &a1, 2_100);
    h.seg(Direction::Response, a1.len(), &a2, 2_600);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(500), Some(500), Some(100))
    );
    exact(fr, &b);
    let (fr, b) = h.order("B");
    // B's last byte reached the wire at 1_200 and was returned by the second read.
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(700), Some(600), Some(100))
    );
    exact(fr, &b);
}

#[test]
fn a_split_write_times_the_response_by_the_write_holding_its_first_byte() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    h.read(0, o.len(), 1_100);
    // The ack goes out in two writes (10 bytes, then the rest) and two segments.
    h.write(0, 10, 2_000);
    h.write(10, a.len() - 10, 2_400);
    h.seg(Direction::Response, 0, &a[..10], 2_050);
    h.seg(Direction::Response, 10, &a[10..], 2_450);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(fr, 1_050);
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(100), Some(900), Some(50))
    );
    exact(fr, &b);
}

#[test]
fn calls_arriving_after_their_segments_finish_the_waiting_order() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    assert_eq!(h.count(Stage::App), 0);
    h.read(0, o.len(), 1_500);
    h.write(0, a.len(), 3_000);
    let c = h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(500), Some(1_500), Some(200))
    );
    exact(fr, &b);
    assert_eq!((c.breakdown_orders, c.breakdown_missing), (1, 0));
    assert_eq!(h.count(Stage::App), 1);
}

#[test]
fn a_call_never_seen_is_counted_missing_after_the_connection_closed() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    h.read(0, o.len(), 1_500);
    // No write call for the ack.
    h.seg(Direction::Response, 0, &a, 3_200);
    let rst = Segment {
        ts_ns: 4_000,
        flow: flow(Direction::Request),
        direction: Direction::Request,
        seq: h.seq(Direction::Request, o.len()),
        ack: 0,
        flags: TcpFlags(TcpFlags::RST),
        payload: &[],
        missing_tail: 0,
    };
    h.p.on_segment(&rst);
    // Its calls may still be on their way: it waits out AWAIT_NS after the close.
    assert_eq!(h.p.counters().breakdown.unwrap().breakdown_missing, 0);
    h.p.advance_to(4_000 + AWAIT_NS / 2, &[], &mut NoReport)
        .unwrap();
    assert_eq!(h.p.counters().breakdown.unwrap().breakdown_missing, 0);
    let later = 4_000 + AWAIT_NS + 200_000_000;
    h.p.advance_to(later, &[], &mut NoReport).unwrap();
    assert_eq!(
        h.p.counters().breakdown.unwrap().breakdown_missing,
        0,
        "no call that late came yet"
    );
    h.read(10_000, 10, later);
    h.p.advance_to(later + 200_000_000, &[], &mut NoReport)
        .unwrap();
    assert_eq!(h.p.counters().breakdown.unwrap().breakdown_missing, 1);
    let c = h.finish();
    assert_eq!((c.breakdown_orders, c.breakdown_missing), (0, 1));
    for s in Stage::BREAKDOWN {
        assert_eq!(h.count(s), 0, "{} recorded without its calls", s.name());
    }
    let (_, b) = h.order("A");
    assert_eq!(
        b,
        OrderBreakdown::default(),
        "a slow order without calls has nulls"
    );
}

#[test]
fn an_order_waiting_too_long_is_given_up() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    // The source's clock moves on past AWAIT_NS, but no call came yet: the calls' ring may
    // just be drained late, so the order still waits.
    let later = 3_200 + AWAIT_NS + 200_000_000;
    h.p.advance_to(later, &[], &mut NoReport).unwrap();
    assert_eq!(h.p.counters().breakdown.unwrap().breakdown_missing, 0);
    // A call stamped that late (other bytes) shows the calls' ring is past the order.
    h.read(10_000, 10, later);
    h.p.advance_to(later + 200_000_000, &[], &mut NoReport)
        .unwrap();
    assert_eq!(h.p.counters().breakdown.unwrap().breakdown_missing, 1);
    // Calls that come now record nothing.
    h.read(0, o.len(), 1_500);
    h.write(0, a.len(), 3_000);
    let c = h.finish();
    assert_eq!((c.breakdown_orders, c.breakdown_missing), (0, 1));
    assert_eq!(h.count(Stage::App), 0);
}

#[test]
fn negative_stages_are_counted_never_recorded() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    // The read "returned" before the request reached the wire: a clock anomaly.
    h.read(0, o.len(), 900);
    h.write(0, a.len(), 3_000);
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    let c = h.finish();
    assert_eq!((c.breakdown_orders, c.breakdown_negative), (0, 1));
    for s in Stage::BREAKDOWN {
        assert_eq!(h.count(s), 0, "{}", s.name());
    }
}

#[test]
fn sched_delay_only_when_the_thread_slept_waiting_for_the_request() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    // Woken at 900, before the request reached the wire at 1_000: not waiting for it.
    h.call(
        Direction::Request,
        SocketCall::Read,
        0,
        o.len(),
        1_500,
        Some(Wakeup {
            woken_ns: 900,
            on_cpu_ns: 1_200,
        }),
    );
    h.write(0, a.len(), 3_000);
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    let c = h.finish();
    let (_, b) = h.order("A");
    assert_eq!(b.sched_delay, None);
    assert_eq!(b.app, Some(1_500));
    assert_eq!(c.sched_delay_not_waiting, 1);
    assert_eq!(h.count(Stage::SchedDelay), 0);
}

#[test]
fn sequence_numbers_wrapping_around_place_calls_exactly() {
    // The request stream wraps inside the order (and inside its second read); the response
    // stream inside the ack.
    let mut h = H::with_isns(u32::MAX - 32, u32::MAX - 3);
    let (o, a) = (order("A"), ack("A"));
    assert!(o.len() > 34, "the order's last byte lies after the wrap");
    h.seg(Direction::Request, 0, &o, 1_000);
    h.read(0, 30, 1_100);
    h.read(30, o.len() - 30, 1_600);
    h.write(0, a.len(), 2_000);
    h.seg(Direction::Response, 0, &a, 2_100);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(600), Some(400), Some(100))
    );
    exact(fr, &b);
}

#[test]
fn client_side_mirror_image() {
    let mut h = H::new();
    h.p = Pipeline::new(PipelineConfig {
        breakdown: true,
        breakdown_role: crate::Role::Client,
        interval_ns: 0,
        ..PipelineConfig::default()
    });
    let (o, a) = (order("A"), ack("A"));
    // The watched client writes the order at 800 (on the wire at 1_000), the ack reaches
    // the wire at 3_200 and the client's read returns it at 3_500.
    h.call(Direction::Request, SocketCall::Write, 0, o.len(), 800, None);
    h.call(
        Direction::Response,
        SocketCall::Read,
        0,
        a.len(),
        3_500,
        Some(Wakeup {
            woken_ns: 3_250,
            on_cpu_ns: 3_400,
        }),
    );
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(fr, 2_200);
    assert_eq!(
        b,
        OrderBreakdown {
            wire_to_read: Some(300),
            app: None,
            write_to_wire: Some(200),
            sched_delay: Some(150),
        }
    );
    assert_eq!(h.count(Stage::App), 0);
}

#[test]
fn without_breakdown_nothing_changes() {
    let mut p = Pipeline::new(PipelineConfig::default());
    let ev = SocketEvent {
        ts_ns: 1,
        flow: flow(Direction::Request),
        direction: Direction::Request,
        call: SocketCall::Read,
        seq: 1,
        len: 10,
        tid: 1,
        wakeup: None,
    };
    p.on_socket_event(&ev);
    let names: Vec<_> = p.counters().list().into_iter().map(|c| c.0).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("breakdown") || n == "sched_delay_not_waiting"),
        "{names:?}"
    );
    assert!(!p.stats().breakdown());
    assert_eq!(p.stats().shown_stages(), &Stage::ALL);
}

#[test]
fn the_call_log_is_bounded_and_counts_what_falls_out() {
    let mut h = H::new();
    for i in 0..(MAX_CALLS + 5) {
        h.read(i, 1, 1_000 + i as u64);
    }
    let c = h.finish();
    assert_eq!(c.breakdown_calls, (MAX_CALLS + 5) as u64);
    assert_eq!(c.breakdown_calls_evicted, 5);
}

/// The JSON of a run of one order, with or without `--breakdown`.
fn json_of(breakdown: bool) -> Vec<serde_json::Value> {
    let mut h = H::new();
    h.p = Pipeline::new(PipelineConfig {
        breakdown,
        interval_ns: 1_000_000,
        ..PipelineConfig::default()
    });
    let (o, a) = (order("A"), ack("A"));
    h.read(0, o.len(), 1_500);
    h.write(0, a.len(), 3_000);
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    let mut out = crate::report::json::JsonReporter::new(Vec::new());
    h.p.finish(&[], &mut out).unwrap();
    String::from_utf8(out.into_inner())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn stage_names(v: &serde_json::Value) -> Vec<String> {
    v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_json_object_carries_the_breakdown_stages_only_with_breakdown() {
    let on = json_of(true);
    let (interval, summary) = (&on[0], on.last().unwrap());
    let every: Vec<String> = Stage::shown(true, false, false)
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(stage_names(interval), every);
    assert_eq!(stage_names(summary), every);
    let app = &summary["stages"][Stage::App.index()];
    assert_eq!(
        (app["count"].as_u64(), app["max_ns"].as_u64()),
        (Some(1), Some(1_500))
    );
    let slow = &summary["slowest"]["first_response"][0];
    assert_eq!(slow["breakdown"]["wire_to_read"], 500);
    assert_eq!(slow["breakdown"]["app"], 1_500);
    assert_eq!(slow["breakdown"]["write_to_wire"], 200);
    assert!(slow["breakdown"]["sched_delay"].is_null());
    assert_eq!(summary["slowest"]["app"][0]["latency_ns"], 1_500);
    assert_eq!(summary["counters"]["breakdown_orders"], 1);
    assert_eq!(summary["sessions"][0]["breakdown"][1]["stage"], "app");

    let off = json_of(false);
    let summary = off.last().unwrap();
    let all: Vec<String> = Stage::ALL.iter().map(|s| s.name().to_string()).collect();
    assert_eq!(stage_names(&off[0]), all);
    assert_eq!(stage_names(summary), all);
    let text = off.iter().map(|v| v.to_string()).collect::<String>();
    for name in [
        "breakdown",
        "wire_to_read",
        "write_to_wire",
        "sched_delay",
        "\"app\"",
    ] {
        assert!(!text.contains(name), "{name} without --breakdown: {text}");
    }
}

#[test]
fn a_segment_completing_a_held_message_and_carrying_the_next_places_both() {
    let mut h = H::new();
    let (o1, o2) = (order("A"), order("B"));
    let mut req = o1.clone();
    req.extend_from_slice(&o2);
    // [half of A] at 1_000, [rest of A + all of B] at 1_300: B's bytes follow the ones that
    // completed A in the framer's held buffer.
    let half = o1.len() / 2;
    h.seg(Direction::Request, 0, &req[..half], 1_000);
    h.seg(Direction::Request, half, &req[half..], 1_300);
    h.read(0, o1.len(), 1_400);
    // B but its last byte, then that byte: a seq misplaced by the bytes that completed A
    // would land in the first of these.
    h.read(o1.len(), o2.len() - 1, 1_600);
    h.read(req.len() - 1, 1, 1_700);
    let (a1, a2) = (ack("A"), ack("B"));
    let mut resp = a1.clone();
    resp.extend_from_slice(&a2);
    h.write(0, resp.len(), 2_000);
    h.seg(Direction::Response, 0, &resp, 2_100);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(100), Some(600), Some(100))
    );
    exact(fr, &b);
    let (fr, b) = h.order("B");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(400), Some(300), Some(100))
    );
    exact(fr, &b);
}

#[test]
fn a_read_ending_just_before_the_last_byte_does_not_time_the_request() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    // This read stops one byte short of the order's end: the order must wait for the next.
    h.read(0, o.len() - 1, 1_200);
    h.write(0, a.len(), 3_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    assert_eq!(
        h.count(Stage::App),
        0,
        "timed by a read that did not return its last byte"
    );
    h.read(o.len() - 1, 1, 1_900);
    h.finish();
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(900), Some(1_100), Some(200))
    );
    exact(fr, &b);
}

#[test]
fn on_loopback_both_ends_calls_come_and_only_the_watched_ends_are_used() {
    for role in [crate::Role::Server, crate::Role::Client] {
        let mut h = H::new();
        h.p = Pipeline::new(PipelineConfig {
            breakdown: true,
            breakdown_role: role,
            interval_ns: 0,
            ..PipelineConfig::default()
        });
        let (o, a) = (order("A"), ack("A"));
        // The initiator writes first (its calls come first), then the acceptor reads,
        // writes, and the initiator reads.
        h.call(Direction::Request, SocketCall::Write, 0, o.len(), 800, None);
        h.seg(Direction::Request, 0, &o, 1_000);
        h.read(0, o.len(), 1_500);
        h.write(0, a.len(), 3_000);
        h.seg(Direction::Response, 0, &a, 3_200);
        h.call(
            Direction::Response,
            SocketCall::Read,
            0,
            a.len(),
            3_600,
            None,
        );
        h.finish();
        let (fr, b) = h.order("A");
        match role {
            crate::Role::Server => {
                assert_eq!(
                    (b.wire_to_read, b.app, b.write_to_wire),
                    (Some(500), Some(1_500), Some(200))
                );
                exact(fr, &b);
            }
            crate::Role::Client => {
                assert_eq!(
                    (b.write_to_wire, b.app, b.wire_to_read),
                    (Some(200), None, Some(400))
                );
            }
        }
    }
}

#[test]
fn calls_arriving_after_the_connection_closed_still_finish_its_orders() {
    let mut h = H::new();
    let (o, a) = (order("A"), ack("A"));
    h.seg(Direction::Request, 0, &o, 1_000);
    h.seg(Direction::Response, 0, &a, 3_200);
    // The connection closes (RST) before the socket-call ring is drained.
    let rst = Segment {
        ts_ns: 4_000,
        flow: flow(Direction::Request),
        direction: Direction::Request,
        seq: h.seq(Direction::Request, o.len()),
        ack: 0,
        flags: TcpFlags(TcpFlags::RST),
        payload: &[],
        missing_tail: 0,
    };
    h.read(0, 1, 900); // an unrelated earlier call makes the connection known
    h.p.on_segment(&rst);
    h.read(0, o.len(), 1_500);
    h.write(0, a.len(), 3_000);
    let c = h.finish();
    assert_eq!((c.breakdown_orders, c.breakdown_missing), (1, 0));
    let (fr, b) = h.order("A");
    assert_eq!(
        (b.wire_to_read, b.app, b.write_to_wire),
        (Some(500), Some(1_500), Some(200))
    );
    exact(fr, &b);
}

/// An HdrHistogram log of a `--breakdown` run reads back with its breakdown stages, counters
/// and the slow orders' breakdowns (`fixscope report`); one without stays without.
#[test]
fn hlog_round_trip_keeps_the_breakdown() {
    use crate::hlog::{merge, HlogWriter, Window};
    use std::io::Write;
    for breakdown in [true, false] {
        let mut h = H::new();
        h.p = Pipeline::new(PipelineConfig {
            breakdown,
            interval_ns: 1_000_000,
            ..PipelineConfig::default()
        });
        let mut w = HlogWriter::new(Vec::new());
        // The driver's clock starts the first interval.
        h.p.advance_to(500, &[], &mut w).unwrap();
        let (o, a) = (order("A"), ack("A"));
        h.read(0, o.len(), 1_500);
        h.write(0, a.len(), 3_000);
        h.seg(Direction::Request, 0, &o, 1_000);
        h.seg(Direction::Response, 0, &a, 3_200);
        h.p.finish(&[], &mut w).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&w.into_inner())
            .unwrap();
        let mut merged = merge(&[path], &Window::default()).unwrap();
        merged.stats.refresh_views();
        assert_eq!(merged.stats.breakdown(), breakdown);
        let counters = merged.counters.unwrap();
        assert_eq!(counters.breakdown.is_some(), breakdown, "{counters:?}");
        let slow = &merged.stats.slowest(Stage::FirstResponse)[0];
        if breakdown {
            assert_eq!(merged.stats.cumulative(Stage::App).max_ns(), 1_500);
            assert_eq!(counters.breakdown.unwrap().breakdown_orders, 1);
            assert_eq!(slow.breakdown.and_then(|b| b.app), Some(1_500));
        } else {
            assert_eq!(merged.stats.cumulative(Stage::App).count(), 0);
            assert_eq!(slow.breakdown, None);
        }
    }
}
