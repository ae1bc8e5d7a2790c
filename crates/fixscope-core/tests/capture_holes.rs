//! Capture holes through the whole pipeline: a segment the capture never saw (a ring
//! overflow, a drop), the segments behind it held, then the hole given up — by the hole
//! timeout, the buffer limits, the peer's ACK (once the reorder window passed), the end of
//! the capture, FIN, RST, or the connection being forgotten. Whichever way:
//! - every message after the hole carries the capture time of the segment that carried it,
//!   never the time the hole was given up (a latency too long, or too short, is a wrong
//!   number);
//! - no message is assembled from bytes on both sides of the hole: the message cut by it is
//!   dropped and counted, framing resyncs at the next `8=FIX`.

use std::cell::RefCell;
use std::rc::Rc;

use fixscope_core::reassembly::{ReassemblyLimits, REORDER_WINDOW_NS};
use fixscope_core::report::{Counters, IntervalReport, Reporter, SummaryReport};
use fixscope_core::{Direction, Endpoint, FlowKey, Pipeline, PipelineConfig, Segment, TcpFlags};
use fixscope_testkit::fix::fix_message;

const CLIENT_ISN: u32 = 1_000;
const SERVER_ISN: u32 = u32::MAX - 100; // the hole straddles the wrap-around

fn message(fields: &[(u32, &str)]) -> Vec<u8> {
    fix_message("FIX.4.4", fields)
}

fn order(clordid: &str) -> Vec<u8> {
    message(&[
        (35, "D"),
        (49, "CLIENT"),
        (56, "EXCH"),
        (11, clordid),
        (55, "X"),
    ])
}

fn ack(clordid: &str) -> Vec<u8> {
    message(&[
        (35, "8"),
        (49, "EXCH"),
        (56, "CLIENT"),
        (11, clordid),
        (150, "0"),
    ])
}

fn endpoint(addr: &str, port: u16) -> Endpoint {
    Endpoint {
        addr: addr.parse().expect("address"),
        port,
    }
}

/// The traced messages: (direction, ClOrdID, time by the timing rule).
type Trace = Rc<RefCell<Vec<(Direction, String, u64)>>>;

/// One client connection as the capture saw it.
struct Wire {
    pipeline: Pipeline,
    trace: Trace,
    client: Endpoint,
    server: Endpoint,
    /// Next sequence number of each direction (sent, whether captured or not).
    cseq: u32,
    sseq: u32,
    /// What the client acknowledges of the response stream (only what it sent ACKs for).
    client_ack: u32,
}

#[derive(Default)]
struct Summary(Option<Counters>);

impl Reporter for Summary {
    fn interval(&mut self, _: &IntervalReport<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, r: &SummaryReport<'_>) -> std::io::Result<()> {
        self.0 = Some(r.counters);
        Ok(())
    }
}

impl Wire {
    fn new(limits: ReassemblyLimits) -> Wire {
        Wire::with_config(PipelineConfig {
            reassembly: limits,
            ..PipelineConfig::default()
        })
    }

    fn with_config(config: PipelineConfig) -> Wire {
        let mut pipeline = Pipeline::new(PipelineConfig {
            interval_ns: 0,
            ..config
        });
        let trace: Trace = Rc::default();
        let t = trace.clone();
        pipeline.set_message_observer(Box::new(move |e| {
            t.borrow_mut().push((
                e.direction,
                String::from_utf8_lossy(e.key).into_owned(),
                e.ts_ns,
            ))
        }));
        Wire {
            pipeline,
            trace,
            client: endpoint("10.0.0.2", 40_000),
            server: endpoint("10.0.0.1", 9878),
            cseq: CLIENT_ISN,
            sseq: SERVER_ISN,
            client_ack: SERVER_ISN,
        }
    }

    /// Sends `payload` in direction `dir` at `ts`; the capture sees it when `captured`.
    fn send(&mut self, dir: Direction, payload: &[u8], flags: u8, ts: u64, captured: bool) {
        let (flow, seq, ack) = match dir {
            Direction::Request => (
                FlowKey {
                    src: self.client,
                    dst: self.server,
                },
                &mut self.cseq,
                self.client_ack,
            ),
            Direction::Response => (
                FlowKey {
                    src: self.server,
                    dst: self.client,
                },
                &mut self.sseq,
                self.cseq,
            ),
        };
        let seg = Segment {
            ts_ns: ts,
            flow,
            direction: dir,
            seq: *seq,
            ack,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH | flags),
            payload,
            missing_tail: 0,
        };
        *seq = seq.wrapping_add(payload.len() as u32 + (flags & TcpFlags::FIN != 0) as u32);
        if captured {
            self.pipeline.on_segment(&seg);
        }
    }

    fn request(&mut self, payload: &[u8], ts: u64) {
        self.send(Direction::Request, payload, 0, ts, true);
    }

    fn response(&mut self, payload: &[u8], ts: u64, captured: bool) {
        self.send(Direction::Response, payload, 0, ts, captured);
    }

    fn finish(&mut self) -> Counters {
        let mut summary = Summary::default();
        self.pipeline.finish(&[], &mut summary).expect("finish");
        summary.0.expect("a summary")
    }

    fn responses(&self) -> Vec<(String, u64)> {
        self.trace
            .borrow()
            .iter()
            .filter(|(d, _, _)| *d == Direction::Response)
            .map(|(_, k, ts)| (k.clone(), *ts))
            .collect()
    }
}

/// The conversation every test shares, up to the hole being given up:
/// orders O1..O6 at 1..6 µs; then the acks A1..A6 in five response segments at 100..500 µs
/// cut across message boundaries, the second one lost by the capture:
///
/// ```text
///   100 µs [A1 A2(start)]  200 µs [A2(rest) A3(start)] LOST  300 µs [A3(rest) A4]
///   400 µs [A5]            500 µs [A6]
/// ```
///
/// Returns the number of bytes of A3 after the hole (skipped while resyncing).
fn conversation_with_a_hole(w: &mut Wire) -> u64 {
    for i in 1..=6 {
        w.request(&order(&format!("O{i}")), i * 1_000);
    }
    let acks: Vec<Vec<u8>> = (1..=6).map(|i| ack(&format!("O{i}"))).collect();
    let (a2_cut, a3_cut) = (acks[1].len() / 2, acks[2].len() / 3);
    let mut s1 = acks[0].clone();
    s1.extend_from_slice(&acks[1][..a2_cut]);
    let mut lost = acks[1][a2_cut..].to_vec();
    lost.extend_from_slice(&acks[2][..a3_cut]);
    let mut s3 = acks[2][a3_cut..].to_vec();
    s3.extend_from_slice(&acks[3]);
    w.response(&s1, 100_000, true);
    // The client acknowledges what it read so far (the capture saw the ACK before the hole).
    w.client_ack = w.sseq;
    w.response(&lost, 200_000, false);
    w.response(&s3, 300_000, true);
    w.response(&acks[4], 400_000, true);
    w.response(&acks[5], 500_000, true);
    (acks[2].len() - a3_cut) as u64
}

/// A1 on time, A2 and A3 (cut by the hole) never, A4..A6 at their own capture times.
fn assert_own_times(w: &Wire, later: &[(&str, u64)]) {
    let mut want: Vec<(String, u64)> = [("O1", 100_000), ("O4", 300_000), ("O5", 400_000)]
        .iter()
        .chain([("O6", 500_000)].iter())
        .chain(later.iter())
        .map(|&(k, ts)| (k.to_string(), ts))
        .collect();
    let mut got = w.responses();
    want.sort();
    got.sort();
    assert_eq!(got, want, "responses framed (ClOrdID, capture time)");
}

fn assert_hole_counted(c: &Counters, a3_tail: u64) {
    assert_eq!(c.reassembly.gaps, 1, "one hole: {c:?}");
    assert_eq!(c.framing.gap_cut_messages, 1, "A2 cut by the hole: {c:?}");
    assert_eq!(c.framing.skipped_bytes, a3_tail, "A3's tail skipped: {c:?}");
    assert_eq!(c.framing.bad_body_length, 0, "nothing spliced: {c:?}");
    assert_eq!(c.framing.bad_checksum, 0, "nothing spliced: {c:?}");
}

#[test]
fn hole_timeout_keeps_each_message_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits {
        hole_timeout_ns: 1_000_000_000,
        ..ReassemblyLimits::default()
    });
    let a3_tail = conversation_with_a_hole(&mut w);
    assert_eq!(
        w.responses().len(),
        1,
        "held behind the hole: {:?}",
        w.responses()
    );
    // An order and its ack long after: the ack gives up the hole (timeout passed).
    w.request(&order("O7"), 2_000_000_000);
    w.response(&ack("O7"), 2_000_100_000, true);
    assert_own_times(&w, &[("O7", 2_000_100_000)]);
    let c = w.finish();
    assert_hole_counted(&c, a3_tail);
    // O4..O6 were waiting when the hole lost responses (it might have held their acks):
    // framed at their own times, but not measured; O1 (before) and O7 (after) are.
    let k = c.correlation;
    assert_eq!((k.matched, k.answered_after_capture_hole), (2, 3), "{c:?}");
}

#[test]
fn buffer_limit_keeps_each_message_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits {
        max_buffered_segments: 2,
        ..ReassemblyLimits::default()
    });
    // The third held segment (A6 at 500 µs) forces the hole to be given up.
    let a3_tail = conversation_with_a_hole(&mut w);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn buffer_bytes_limit_keeps_each_message_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits {
        // Exceeded when A5 is held behind [A3(rest) A4] (every ack has the same length).
        max_buffered_bytes: {
            let len = ack("O1").len();
            (len - len / 3) + 2 * len - 1
        },
        ..ReassemblyLimits::default()
    });
    let a3_tail = conversation_with_a_hole(&mut w);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn acknowledged_hole_keeps_each_message_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits::default());
    let a3_tail = conversation_with_a_hole(&mut w);
    // The client read everything: its next order acknowledges the hole. The capture host
    // may have written that ACK before the segment (#47): the hole waits the reorder
    // window from the first segment held behind it (A3's rest and A4, at 300 µs).
    w.client_ack = w.sseq;
    w.request(&order("O7"), 600_000);
    w.request(&order("O8"), 300_000 + REORDER_WINDOW_NS);
    assert_eq!(w.responses().len(), 1, "held: {:?}", w.responses());
    w.request(&order("O9"), 300_001 + REORDER_WINDOW_NS);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn end_of_capture_keeps_each_message_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits::default());
    let a3_tail = conversation_with_a_hole(&mut w);
    let c = w.finish();
    assert_own_times(&w, &[]);
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn fin_after_a_hole_delivers_what_was_held_at_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits::default());
    let a3_tail = conversation_with_a_hole(&mut w);
    // Both sides close; the client's FIN does not acknowledge the hole (its ACKs of the
    // responses were lost with it).
    w.send(Direction::Response, b"", TcpFlags::FIN, 600_000, true);
    w.send(Direction::Request, b"", TcpFlags::FIN, 700_000, true);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_eq!(c.open_connections, 0, "closed: {c:?}");
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn rst_after_a_hole_delivers_what_was_held_at_its_own_time() {
    let mut w = Wire::new(ReassemblyLimits::default());
    let a3_tail = conversation_with_a_hole(&mut w);
    w.send(Direction::Request, b"", TcpFlags::RST, 700_000, true);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_eq!(c.open_connections, 0, "closed: {c:?}");
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn idle_connection_forgotten_after_a_hole_delivers_what_was_held_at_its_own_time() {
    let mut w = Wire::with_config(PipelineConfig {
        idle_connection_ns: 10_000_000_000,
        ..PipelineConfig::default()
    });
    let a3_tail = conversation_with_a_hole(&mut w);
    // Another connection, long after, sweeps the silent one away.
    let seg = Segment {
        ts_ns: 20_000_000_000,
        flow: FlowKey {
            src: endpoint("10.0.0.3", 40_001),
            dst: w.server,
        },
        direction: Direction::Request,
        seq: 1,
        ack: 0,
        flags: TcpFlags(TcpFlags::SYN),
        payload: b"",
        missing_tail: 0,
    };
    w.pipeline.on_segment(&seg);
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_eq!(c.open_connections, 1, "the silent one forgotten: {c:?}");
    assert_hole_counted(&c, a3_tail);
}

#[test]
fn connection_shed_after_a_hole_delivers_what_was_held_at_its_own_time() {
    let mut w = Wire::with_config(PipelineConfig {
        max_connections: 2,
        ..PipelineConfig::default()
    });
    let a3_tail = conversation_with_a_hole(&mut w);
    // Two newer connections: over the limit, the least recently active half goes.
    for (i, ts) in [(1u16, 600_000u64), (2, 700_000)] {
        let seg = Segment {
            ts_ns: ts,
            flow: FlowKey {
                src: endpoint("10.0.0.3", 40_000 + i),
                dst: w.server,
            },
            direction: Direction::Request,
            seq: 1,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            payload: b"",
            missing_tail: 0,
        };
        w.pipeline.on_segment(&seg);
    }
    assert_own_times(&w, &[]);
    let c = w.finish();
    assert_eq!(c.shed_connections, 2, "{c:?}");
    assert_hole_counted(&c, a3_tail);
}
