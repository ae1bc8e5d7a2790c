//! Bad FIX on the wire, through the whole pipeline: each kind of damage is counted (or
//! skipped and counted), and the well-formed orders around it keep their exact latencies.
//!
//! Every test sends the same frame of good traffic — an order before the damage and one
//! after, each answered by an ack 30 µs later — and puts the damage between them in the
//! request stream.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use fixscope_core::correlate::CorrelatorLimits;
use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::framing::{FramingCounters, StreamFramer, MAX_BODY_LENGTH};
use fixscope_core::report::{Counters, IntervalReport, Reporter, SummaryReport};
use fixscope_core::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};
use fixscope_core::{Pipeline, PipelineConfig};

const ACK_AFTER_NS: u64 = 30_000;

fn message(msg_type: &[u8], fields: &[(u32, &str)]) -> Vec<u8> {
    let mut enc = FixEncoder::new();
    enc.start(msg_type);
    for &(t, v) in fields {
        enc.field_str(t, v);
    }
    let mut out = Vec::new();
    enc.finish(b"FIX.4.4", &mut out);
    out
}

fn order(id: &str) -> Vec<u8> {
    message(b"D", &[(11, id), (55, "AAPL"), (54, "1")])
}

fn ack(id: &str) -> Vec<u8> {
    message(b"8", &[(11, id), (150, "0"), (39, "0")])
}

/// The first response's (count, min, max) latency: exact, unlike histogram buckets.
type FirstResponse = (u64, u64, u64);

struct Collect(Rc<RefCell<Option<(Counters, FirstResponse)>>>);

impl Reporter for Collect {
    fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        // The first response's exact figures: count, min, max.
        let d = &r.stages[0].dist;
        *self.0.borrow_mut() = Some((r.counters, (d.count, d.min_ns, d.max_ns)));
        Ok(())
    }
}

/// One connection: `ORD1`, then `damage` in segments of `piece` bytes, then `ORD2`; each
/// order acked 30 µs after it. Returns the counters and the first response's (count, min,
/// max) latency.
fn run(damage: &[u8], piece: usize) -> (Counters, FirstResponse) {
    let client = Endpoint {
        addr: "10.0.0.2".parse().expect("address"),
        port: 40_000,
    };
    let server = Endpoint {
        addr: "10.0.0.1".parse().expect("address"),
        port: 9878,
    };
    let mut p = Pipeline::new(PipelineConfig {
        interval_ns: 0,
        correlation: CorrelatorLimits {
            max_pending: 1024,
            ..CorrelatorLimits::default()
        },
        ..PipelineConfig::default()
    });
    let mut seq = [1000u32, 5000u32];
    let mut send = |p: &mut Pipeline, ts_ns: u64, d: Direction, payload: &[u8]| {
        let (flow, i) = match d {
            Direction::Request => (
                FlowKey {
                    src: client,
                    dst: server,
                },
                0,
            ),
            Direction::Response => (
                FlowKey {
                    src: server,
                    dst: client,
                },
                1,
            ),
        };
        p.on_segment(&Segment {
            ts_ns,
            flow,
            direction: d,
            seq: seq[i],
            ack: 0,
            flags: TcpFlags(if payload.is_empty() { TcpFlags::SYN } else { 0 }),
            payload,
            missing_tail: 0,
        });
        seq[i] = seq[i].wrapping_add(payload.len() as u32 + payload.is_empty() as u32);
    };
    send(&mut p, 1, Direction::Request, &[]);
    send(&mut p, 1, Direction::Response, &[]);
    let t1 = 1_000_000;
    send(&mut p, t1, Direction::Request, &order("ORD1"));
    send(&mut p, t1 + ACK_AFTER_NS, Direction::Response, &ack("ORD1"));
    let mut t = t1 + 2 * ACK_AFTER_NS;
    for chunk in damage.chunks(piece) {
        t += 1;
        send(&mut p, t, Direction::Request, chunk);
    }
    let t2 = t + 1_000_000;
    send(&mut p, t2, Direction::Request, &order("ORD2"));
    send(&mut p, t2 + ACK_AFTER_NS, Direction::Response, &ack("ORD2"));
    let out = Rc::new(RefCell::new(None));
    p.finish(&[], &mut Collect(out.clone())).expect("collects");
    let result = out.take();
    result.expect("a summary")
}

/// Both orders matched with their exact latency: the damage changed no number.
fn assert_rest_exact(c: &Counters, first_response: &FirstResponse) {
    assert_eq!(c.correlation.requests, 2, "{c:?}");
    assert_eq!(c.correlation.matched, 2, "{c:?}");
    assert_eq!(first_response, &(2, ACK_AFTER_NS, ACK_AFTER_NS), "{c:?}");
}

#[test]
fn body_length_that_lands_inside_the_message_is_counted_and_skipped() {
    let mut lie = order("LIE");
    // BodyLength one short: the trailer is not where it says.
    let at = lie
        .windows(3)
        .position(|w| w == b"\x019=")
        .expect("BodyLength")
        + 3;
    lie[at + 1] -= 1;
    for piece in [1, 7, lie.len()] {
        let (c, first) = run(&lie, piece);
        assert_eq!(c.framing.bad_body_length, 1, "piece {piece}");
        assert_eq!(c.framing.messages, 4, "piece {piece}");
        assert_rest_exact(&c, &first);
    }
}

#[test]
fn body_length_claiming_more_than_follows_is_counted_and_the_rest_framed() {
    // A BodyLength of 5000 over a 30-byte body: the framer waits for 5000 bytes (a real
    // body may be that long), then finds no trailer there and re-scans what it held.
    let mut damage = b"8=FIX.4.4\x019=5000\x0135=D\x0111=LIE\x0110=000\x01".to_vec();
    damage.extend(std::iter::repeat_n(b'x', 6000));
    let (c, first) = run(&damage, 1460);
    assert_eq!(c.framing.bad_body_length, 1);
    assert!(c.framing.skipped_bytes >= 6000);
    assert_rest_exact(&c, &first);
}

#[test]
fn message_without_checksum_is_counted_and_skipped() {
    let mut m = order("NOCHECKSUM");
    m.truncate(m.len() - 7); // no "10=nnn<SOH>"
    let (c, first) = run(&m, 100);
    assert_eq!(
        c.framing.bad_body_length, 1,
        "the trailer is missing where BodyLength says"
    );
    assert_rest_exact(&c, &first);
    // Without one at the end of the stream either: nothing framed, nothing made up.
    let mut framer = StreamFramer::new();
    let mut counters = FramingCounters::default();
    let mut n = 0;
    framer.push(&m, 1, &mut counters, |_| n += 1);
    assert_eq!(n, 0);
}

#[test]
fn wrong_checksum_is_counted_and_not_delivered() {
    let mut m = order("BADSUM");
    let len = m.len();
    m[len - 2] = if m[len - 2] == b'0' { b'1' } else { b'0' };
    let (c, first) = run(&m, 1460);
    assert_eq!(c.framing.bad_checksum, 1);
    assert_rest_exact(&c, &first);
}

/// No SOH for megabytes, in each place a framer could wait for one: BeginString,
/// BodyLength, and a body. The framer never holds more than the largest body it accepts.
#[test]
fn message_that_never_ends_is_skipped_with_bounded_memory() {
    const MB: usize = 1 << 20;
    let cases: [(&str, Vec<u8>); 3] = [
        (
            "BeginString",
            [b"8=FIX".as_slice(), &vec![b'A'; 3 * MB]].concat(),
        ),
        (
            "BodyLength",
            [b"8=FIX.4.4\x019=".as_slice(), &vec![b'7'; 3 * MB]].concat(),
        ),
        (
            "body",
            [
                b"8=FIX.4.4\x019=999999\x0135=D\x0158=".as_slice(),
                &vec![b'z'; 3 * MB],
            ]
            .concat(),
        ),
    ];
    for (what, damage) in cases {
        let mut framer = StreamFramer::new();
        let mut counters = FramingCounters::default();
        let mut most_held = 0;
        for chunk in damage.chunks(1460) {
            framer.push(chunk, 1, &mut counters, |_| {
                panic!("{what}: made up a message")
            });
            most_held = most_held.max(framer.pending_bytes());
        }
        assert!(
            most_held <= MAX_BODY_LENGTH + 64,
            "{what}: held {most_held} bytes"
        );
        let (c, first) = run(&damage, 1460);
        assert!(c.framing.skipped_bytes >= 2 * MB as u64, "{what}: {c:?}");
        assert_rest_exact(&c, &first);
    }
}

/// A 10 MB tag value makes a body above the largest the framer accepts (1 MiB): the
/// message is skipped as garbage, counted in skipped_bytes, and the rest is exact.
#[test]
fn ten_megabyte_tag_value_is_skipped_and_counted() {
    let value = "v".repeat(10 << 20);
    let big = message(b"D", &[(11, "BIG"), (58, &value)]);
    let (c, first) = run(&big, 65_536);
    assert!(c.framing.skipped_bytes >= 10 << 20, "{c:?}");
    assert_eq!(c.framing.messages, 4, "{c:?}");
    assert_rest_exact(&c, &first);
}

/// A value just under the limit is a message like any other.
#[test]
fn large_tag_value_under_the_limit_is_a_message() {
    let value = "v".repeat(MAX_BODY_LENGTH - 100);
    let big = message(b"0", &[(58, &value)]);
    let (c, first) = run(&big, 65_536);
    assert_eq!(c.framing.messages, 5, "{c:?}");
    assert_eq!(c.framing.skipped_bytes, 0, "{c:?}");
    assert_rest_exact(&c, &first);
}

#[test]
fn binary_garbage_between_orders_is_skipped_and_counted() {
    // xorshift bytes, with SOHs, '8's and "8=FIX" fragments among them.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut garbage: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for at in (0..garbage.len() - 16).step_by(997) {
        garbage[at..at + 12].copy_from_slice(b"8=FIX.4.4\x019=");
    }
    for piece in [1, 536, 1460] {
        let (c, first) = run(&garbage, piece);
        assert!(c.framing.skipped_bytes > 0, "piece {piece}");
        assert_rest_exact(&c, &first);
    }
}
