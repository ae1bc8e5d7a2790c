//! The pipeline benchmark's workload plain and over TLS 1.3 (rustls in-process, one
//! connection per session, every segment's payload one TLS record at the same time): the
//! messages/s of each through `Pipeline::on_segment`, the TLS run with `--tls-keylog`'s
//! key log (#49's target: TLS at least 50% of plain).
//!
//! `cargo build --release -p fixscope-core --example tls_profile &&
//!  target/release/examples/tls_profile 20000 [aes128|aes256|chacha|tls12]`

#[path = "../benches/support/workload.rs"]
mod workload;

use std::collections::HashMap;
use std::sync::Arc;

use fixscope_core::tls::KeyLog;
use fixscope_core::{Direction, Pipeline, PipelineConfig};
use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};
use workload::OwnedSegment;

/// The workload's segments with each payload sent through the session's TLS connection.
fn over_tls(plain: &[OwnedSegment], suite: TlsSuite) -> (Vec<OwnedSegment>, KeyLog) {
    let ends = TlsEndpoints::new(suite);
    let mut pairs: HashMap<u16, (TlsPair, [u32; 2])> = HashMap::new();
    let mut out = Vec::new();
    for s in plain {
        let client_port = match s.direction {
            Direction::Request => s.flow.src.port,
            Direction::Response => s.flow.dst.port,
        };
        let (pair, seqs) = pairs.entry(client_port).or_insert_with(|| {
            let pair = ends.connect();
            let mut seqs = [1_000u32, 9_000_000u32];
            let back = fixscope_core::FlowKey {
                src: s.flow.dst,
                dst: s.flow.src,
            };
            let (req, resp) = match s.direction {
                Direction::Request => (s.flow, back),
                Direction::Response => (back, s.flow),
            };
            for (k, (peer, bytes)) in pair.wire.iter().enumerate() {
                let (flow, direction, i) = match peer {
                    Peer::Client => (req, Direction::Request, 0),
                    Peer::Server => (resp, Direction::Response, 1),
                };
                out.push(OwnedSegment {
                    ts_ns: s.ts_ns - 1_000 + k as u64,
                    flow,
                    direction,
                    seq: seqs[i],
                    payload: bytes.clone(),
                });
                seqs[i] = seqs[i].wrapping_add(bytes.len() as u32);
            }
            (pair, seqs)
        });
        let (peer, i) = match s.direction {
            Direction::Request => (Peer::Client, 0),
            Direction::Response => (Peer::Server, 1),
        };
        let flight = pair.send(peer, &s.payload);
        let bytes = pair.wire[flight].1.clone();
        out.push(OwnedSegment {
            ts_ns: s.ts_ns,
            flow: s.flow,
            direction: s.direction,
            seq: seqs[i],
            payload: bytes.clone(),
        });
        seqs[i] = seqs[i].wrapping_add(bytes.len() as u32);
    }
    let mut keys = KeyLog::new();
    keys.add_text(ends.key_log.text().as_bytes());
    (out, keys)
}

/// ns per message of the best of `runs` feeds, and the run's matched orders.
fn measure(segments: &[OwnedSegment], config: &PipelineConfig, messages: usize) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut matched = 0;
    for _ in 0..5 {
        let mut pipeline = Pipeline::new(config.clone());
        let start = std::time::Instant::now();
        workload::feed(&mut pipeline, segments);
        best = best.min(start.elapsed().as_nanos() as f64 / messages as f64);
        matched = pipeline.counters().correlation.matched;
    }
    (best, matched)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let orders = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let suite = match args.next().as_deref() {
        Some("aes256") => TlsSuite::Tls13Aes256Gcm,
        Some("chacha") => TlsSuite::Tls13Chacha20,
        Some("tls12") => TlsSuite::Tls12Aes128Gcm,
        _ => TlsSuite::Tls13Aes128Gcm,
    };
    let (plain, messages) = workload::workload(orders);
    let (tls, keys) = over_tls(&plain, suite);
    let (plain_ns, plain_matched) = measure(&plain, &PipelineConfig::default(), messages);
    let config = PipelineConfig {
        tls_keys: Some(Arc::new(keys.into())),
        ..PipelineConfig::default()
    };
    let (tls_ns, tls_matched) = measure(&tls, &config, messages);
    assert_eq!(plain_matched, tls_matched, "the same orders matched");
    println!(
        "{messages} messages ({suite:?}): plain {:.0} ns/message ({:.2} M msg/s), TLS {:.0} ns/message ({:.2} M msg/s): TLS at {:.0}% of plain",
        plain_ns,
        1e3 / plain_ns,
        tls_ns,
        1e3 / tls_ns,
        100.0 * plain_ns / tls_ns
    );
}
