//! The benchmark workload: 8 sessions of NewOrderSingle (D) orders, each acked and filled
//! by ExecutionReports (8), 200–300 bytes per message, as owned segments. Shared by the
//! criterion benchmark and `examples/pipeline_profile.rs` (`#[path]`-included by both; kept
//! in a subfolder so cargo does not take it for a bench target).

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::{Direction, Endpoint, FlowKey, Pipeline, Segment, TcpFlags};

pub struct OwnedSegment {
    pub ts_ns: u64,
    pub flow: FlowKey,
    pub direction: Direction,
    pub seq: u32,
    pub payload: Vec<u8>,
}

/// 8 sessions; each order gets an ack and a fill; some segments carry two messages.
pub fn workload(orders: usize) -> (Vec<OwnedSegment>, usize) {
    let sessions = 8;
    let server = Endpoint {
        addr: "10.1.0.1".parse().unwrap(),
        port: 9878,
    };
    let mut seqs = vec![(1_000u32, 9_000_000u32); sessions];
    let mut enc = FixEncoder::new();
    let mut segments = Vec::new();
    let mut messages = 0;
    let mut ts = 1_000_000_000u64;
    let pad = "x".repeat(60);
    for i in 0..orders {
        let s = i % sessions;
        let client = Endpoint {
            addr: "10.1.0.2".parse().unwrap(),
            port: 40000 + s as u16,
        };
        let clordid = format!("ORD-{s}-{i:012}");
        let mut order = Vec::new();
        enc.start(b"D")
            .field_str(49, &format!("CLIENT{s}"))
            .field_str(56, "EXCH")
            .field_uint(34, i as u64 + 2)
            .field_str(52, "20261122-10:00:00.000000")
            .field_str(11, &clordid)
            .field_str(1, "ACCOUNT-0001")
            .field_str(55, "AAPL")
            .field_str(54, "1")
            .field_str(60, "20261122-10:00:00.000000")
            .field_uint(38, 100)
            .field_str(40, "2")
            .field_str(44, "187.25")
            .field_str(59, "0")
            .field_str(58, &pad[..(i * 7) % 50]);
        enc.finish(b"FIX.4.4", &mut order);
        let mut reports = Vec::new();
        for (exec_type, status) in [("0", "0"), ("F", "2")] {
            enc.start(b"8")
                .field_str(49, "EXCH")
                .field_str(56, &format!("CLIENT{s}"))
                .field_uint(34, i as u64 + 2)
                .field_str(52, "20261122-10:00:00.000000")
                .field_str(37, &format!("EX{i:010}"))
                .field_str(17, &format!("E{i:010}{exec_type}"))
                .field_str(11, &clordid)
                .field_str(150, exec_type)
                .field_str(39, status)
                .field_str(55, "AAPL")
                .field_str(54, "1")
                .field_uint(38, 100)
                .field_uint(14, 100)
                .field_uint(151, 0)
                .field_str(6, "187.25")
                .field_str(32, "100")
                .field_str(31, "187.25");
            enc.finish(b"FIX.4.4", &mut reports);
        }
        let req = FlowKey {
            src: client,
            dst: server,
        };
        let resp = FlowKey {
            src: server,
            dst: client,
        };
        ts += 2_000;
        segments.push(OwnedSegment {
            ts_ns: ts,
            flow: req,
            direction: Direction::Request,
            seq: seqs[s].0,
            payload: order.clone(),
        });
        seqs[s].0 = seqs[s].0.wrapping_add(order.len() as u32);
        // Ack and fill: together in one segment every other order, apart otherwise.
        let split = if i % 2 == 0 {
            reports.len()
        } else {
            reports.len() / 2
        };
        for (k, part) in [&reports[..split], &reports[split..]]
            .into_iter()
            .enumerate()
        {
            if part.is_empty() {
                continue;
            }
            segments.push(OwnedSegment {
                ts_ns: ts + 20_000 + k as u64 * 5_000,
                flow: resp,
                direction: Direction::Response,
                seq: seqs[s].1,
                payload: part.to_vec(),
            });
            seqs[s].1 = seqs[s].1.wrapping_add(part.len() as u32);
        }
        messages += 3;
    }
    (segments, messages)
}

/// Feeds every segment to the pipeline.
pub fn feed(pipeline: &mut Pipeline, segments: &[OwnedSegment]) {
    for s in segments {
        pipeline.on_segment(&Segment {
            ts_ns: s.ts_ns,
            flow: s.flow,
            direction: s.direction,
            seq: s.seq,
            ack: 0,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            payload: &s.payload,
            missing_tail: 0,
        });
    }
}
