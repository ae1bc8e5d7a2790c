//! Properties of the whole pipeline over one TCP connection: however a FIX conversation's
//! bytes are cut into segments, however the segments sent at one instant are reordered,
//! and whatever is retransmitted, the same messages come out with the same times, and the
//! correlation gives the same latencies and counters.
//!
//! The model: requests are sent in bursts (1–3 orders at one instant), each order is
//! answered by an ack and a fill some microseconds later. Segments carry the time of the
//! burst their bytes belong to, so any cut of a burst keeps every byte's true time; a
//! reordering within a burst keeps the capture's timestamps monotonic (as a real capture's
//! are). The reference feeds one segment per message, in order.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use fixscope_core::correlate::CorrelatorLimits;
use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};
use fixscope_core::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};
use fixscope_core::{Pipeline, PipelineConfig};
use proptest::prelude::*;

/// One burst: bytes of one direction written at one instant.
#[derive(Clone, Debug)]
struct Burst {
    ts_ns: u64,
    direction: Direction,
    /// The messages of the burst, in stream order.
    messages: Vec<Vec<u8>>,
}

fn message(enc: &mut FixEncoder, msg_type: &[u8], fields: &[(u32, &str)]) -> Vec<u8> {
    enc.start(msg_type)
        .field_str(49, "CLIENT")
        .field_str(56, "EXCH");
    for &(t, v) in fields {
        enc.field_str(t, v);
    }
    let mut out = Vec::new();
    enc.finish(b"FIX.4.4", &mut out);
    out
}

/// The conversation: bursts of orders (each `(gap before it, [(ack delay, fill delay)])`),
/// every order answered by an ack and a fill; the bursts of both directions in time order
/// (requests before responses at a tie).
fn conversation(bursts: &[(u64, Vec<(u64, u64)>)]) -> Vec<Burst> {
    let mut enc = FixEncoder::new();
    let mut out = Vec::new();
    let mut responses: Vec<(u64, usize, Vec<u8>)> = Vec::new();
    let mut t = 1_000_000u64;
    let mut n = 0usize;
    for (gap, orders) in bursts {
        t += gap;
        let mut msgs = Vec::new();
        for &(ack_after, fill_after) in orders {
            let id = format!("ORD{n}");
            msgs.push(message(
                &mut enc,
                b"D",
                &[(11, &id), (55, "AAPL"), (54, "1")],
            ));
            let ack = message(&mut enc, b"8", &[(11, &id), (150, "0"), (39, "0")]);
            let fill = message(&mut enc, b"8", &[(11, &id), (150, "F"), (39, "2")]);
            responses.push((t + ack_after, 2 * n, ack));
            responses.push((t + ack_after + fill_after, 2 * n + 1, fill));
            n += 1;
        }
        out.push(Burst {
            ts_ns: t,
            direction: Direction::Request,
            messages: msgs,
        });
    }
    // The exchange writes responses in time order (ties in order of the orders).
    responses.sort_by_key(|&(ts, i, _)| (ts, i));
    for (ts, _, m) in responses {
        match out.last_mut() {
            Some(b) if b.direction == Direction::Response && b.ts_ns == ts => b.messages.push(m),
            _ => out.push(Burst {
                ts_ns: ts,
                direction: Direction::Response,
                messages: vec![m],
            }),
        }
    }
    // Stable: each direction keeps its stream order.
    out.sort_by_key(|b| (b.ts_ns, b.direction == Direction::Response));
    out
}

/// How one run cuts, shuffles and retransmits.
#[derive(Clone, Debug)]
struct Cutting {
    /// Piece lengths (bytes), used cyclically; `None`: one segment per message.
    pieces: Option<Vec<usize>>,
    /// Drawn cyclically, one per burst: permutes the burst's pieces.
    shuffle: Vec<usize>,
    /// After every n-th piece, an earlier range of that direction is sent again.
    retransmit_every: usize,
}

struct Side {
    isn: u32,
    /// Stream bytes sent so far.
    sent: Vec<u8>,
}

/// What a run produced: every request/response with its time, the latencies of every
/// stage, and the counters cutting must not change.
#[derive(Debug, PartialEq)]
struct Outcome {
    messages: Vec<(u64, Direction, Vec<u8>, Vec<u8>)>,
    histograms: Vec<Vec<(u64, u64)>>,
    counters: Vec<(String, u64)>,
}

#[derive(Default)]
struct Summary {
    histograms: Vec<Vec<(u64, u64)>>,
    counters: Vec<(String, u64)>,
}

struct Collect(Rc<RefCell<Summary>>);

impl Reporter for Collect {
    fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let mut s = self.0.borrow_mut();
        s.histograms = r
            .histograms
            .iter()
            .map(|h| {
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect()
            })
            .collect();
        // All but the counts of segments and resent bytes, which cutting changes by design.
        s.counters = r
            .counters
            .list()
            .into_iter()
            .filter(|(name, _)| {
                !matches!(
                    name.as_str(),
                    "segments" | "retransmitted_bytes" | "out_of_order_segments"
                )
            })
            .collect();
        Ok(())
    }
}

fn run(bursts: &[Burst], cutting: &Cutting, isns: (u32, u32)) -> Outcome {
    let client = Endpoint {
        addr: "10.0.0.2".parse().expect("address"),
        port: 40_000,
    };
    let server = Endpoint {
        addr: "10.0.0.1".parse().expect("address"),
        port: 9878,
    };
    let flow = |d: Direction| match d {
        Direction::Request => FlowKey {
            src: client,
            dst: server,
        },
        Direction::Response => FlowKey {
            src: server,
            dst: client,
        },
    };
    let mut p = Pipeline::new(PipelineConfig {
        interval_ns: 0,
        // Smaller than the defaults (1M pending, -x 10 s): less to set up per case.
        highest_ns: 10_000_000,
        correlation: CorrelatorLimits {
            max_pending: 1024,
            ..CorrelatorLimits::default()
        },
        ..PipelineConfig::default()
    });
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = seen.clone();
    p.set_message_observer(Box::new(move |e| {
        sink.borrow_mut()
            .push((e.ts_ns, e.direction, e.msg_type.to_vec(), e.key.to_vec()))
    }));
    // Handshake: SYN, SYN-ACK.
    for (d, isn) in [(Direction::Request, isns.0), (Direction::Response, isns.1)] {
        p.on_segment(&Segment {
            ts_ns: 1,
            flow: flow(d),
            direction: d,
            seq: isn,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            payload: &[],
            missing_tail: 0,
        });
    }
    let mut req = Side {
        isn: isns.0,
        sent: Vec::new(),
    };
    let mut resp = Side {
        isn: isns.1,
        sent: Vec::new(),
    };
    let mut piece_i = 0usize;
    for (burst_i, burst) in bursts.iter().enumerate() {
        let (this, other) = match burst.direction {
            Direction::Request => (&mut req, &resp),
            Direction::Response => (&mut resp, &req),
        };
        let start = this.sent.len();
        for m in &burst.messages {
            this.sent.extend_from_slice(m);
        }
        // The burst's pieces as (stream offset, length).
        let mut pieces = Vec::new();
        let mut at = start;
        match &cutting.pieces {
            None => {
                for m in &burst.messages {
                    pieces.push((at, m.len()));
                    at += m.len();
                }
            }
            Some(lens) => {
                while at < this.sent.len() {
                    let n = lens[piece_i % lens.len()].min(this.sent.len() - at);
                    piece_i += 1;
                    pieces.push((at, n));
                    at += n;
                }
                let r = cutting.shuffle[burst_i % cutting.shuffle.len()];
                if pieces.len() > 1 {
                    // A rotation, then maybe a swap of neighbours.
                    let k = r % pieces.len();
                    pieces.rotate_left(k);
                    if r % 2 == 1 {
                        let j = r / 2 % (pieces.len() - 1);
                        pieces.swap(j, j + 1);
                    }
                }
            }
        }
        // What the peer has received of the other direction.
        let ack = other
            .isn
            .wrapping_add(1)
            .wrapping_add(other.sent.len() as u32);
        let data_seq = |at: usize| this.isn.wrapping_add(1).wrapping_add(at as u32);
        for &(at, n) in &pieces {
            p.on_segment(&Segment {
                ts_ns: burst.ts_ns,
                flow: flow(burst.direction),
                direction: burst.direction,
                seq: data_seq(at),
                ack,
                flags: TcpFlags(TcpFlags::ACK),
                payload: &this.sent[at..at + n],
                missing_tail: 0,
            });
            // A retransmission overlapping what was sent before (and maybe this piece).
            if cutting.pieces.is_some() && piece_i.is_multiple_of(cutting.retransmit_every) {
                let from = at.saturating_sub(2 * n);
                p.on_segment(&Segment {
                    ts_ns: burst.ts_ns,
                    flow: flow(burst.direction),
                    direction: burst.direction,
                    seq: data_seq(from),
                    ack,
                    flags: TcpFlags(TcpFlags::ACK),
                    payload: &this.sent[from..at + n],
                    missing_tail: 0,
                });
            }
            piece_i += 1;
        }
    }
    let summary = Rc::new(RefCell::new(Summary::default()));
    p.finish(&[], &mut Collect(summary.clone()))
        .expect("collecting cannot fail");
    let s = summary.take();
    let messages = seen.take();
    Outcome {
        messages,
        histograms: s.histograms,
        counters: s.counters,
    }
}

fn orders() -> impl Strategy<Value = Vec<(u64, Vec<(u64, u64)>)>> {
    // Up to 12 bursts of 1–3 orders, 0–50 µs apart; acks 1–200 µs, fills 0–300 µs later.
    prop::collection::vec(
        (
            0u64..50_000,
            prop::collection::vec((1u64..200_000, 0u64..300_000), 1..4),
        ),
        1..12,
    )
}

fn cutting() -> impl Strategy<Value = Cutting> {
    (
        prop::collection::vec(1usize..200, 1..16),
        prop::collection::vec(0usize..64, 1..8),
        1usize..9,
    )
        .prop_map(|(pieces, shuffle, retransmit_every)| Cutting {
            pieces: Some(pieces),
            shuffle,
            retransmit_every,
        })
}

proptest! {
    // A pipeline takes ~50 ms to set up and summarise in a debug build: 24 cases keep
    // `make test` fast; PROPTEST_CASES=5000 for a long run (docs/reliability.md).
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(24)
    ))]

    #[test]
    fn cutting_reordering_and_retransmitting_change_nothing(
        bursts in orders(),
        cut in cutting(),
        isns in (any::<u32>(), any::<u32>()),
    ) {
        let conv = conversation(&bursts);
        let per_message = Cutting { pieces: None, shuffle: vec![0], retransmit_every: 1 };
        let reference = run(&conv, &per_message, isns);
        // The reference itself is right: every message seen, every order matched.
        let n_orders: usize = bursts.iter().map(|(_, o)| o.len()).sum();
        prop_assert_eq!(reference.messages.len(), 3 * n_orders);
        let matched = reference.counters.iter().find(|(n, _)| n == "matched").map(|c| c.1);
        prop_assert_eq!(matched, Some(n_orders as u64));
        prop_assert_eq!(&reference, &run(&conv, &cut, isns));
    }
}
